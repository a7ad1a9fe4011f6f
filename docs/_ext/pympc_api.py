"""The API pages of the subpackages, written from their ``__all__`` before Sphinx reads the sources.

``SECTIONS`` gives each subpackage a title line and its names in sections.  :func:`write_pages` writes
``docs/api/<name>.rst`` for every subpackage that exists in this checkout, with the names of its current
``__all__`` (a name listed here but not exported is left out, so a page can be prepared for a name before
it lands; a name exported but listed in no section goes to "Other names", and
``tests/test_docs_api.py`` fails until it is given a section).  Needs no Sphinx.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

# subpackage -> (the pages it links to, [(section title, [names])])
SECTIONS = {
    "complementarity": (
        "See :doc:`/theory/complementarity` for the conventions and :doc:`/guide/complementarity` for a tour.",
        [("Problems", ["LCP", "HLCP", "Reduction", "Residual", "load_problem", "read_problem", "read_siconos"]),
         ("Solving", ["solve", "lemke", "milp", "Status", "Result", "LCPResult", "HLCPResult"]),
         ("Solution sets and uniqueness", ["enumerate_solutions", "SetKind", "SolutionSet", "classify",
                                           "Classification", "is_p_matrix"])]),
    "mpec": (
        "See :doc:`/guide/pyomo` for the solvers' factory names and every option.",
        [("Models", ["to_pyomo", "from_pyomo", "PyomoHLCP", "CompiledNLP", "Presolved"]),
         ("Solvers on Pyomo's interface", ["LemkeSolver", "MILPSolver", "IpoptSolver", "pyomo_status", "milp", "ipopt_as"]),
         ("Cross-checks", ["crosscheck", "CrossCheckReport", "SolverAnswer"])]),
    "mechanics": (
        "See :doc:`/guide/models` for model files and :doc:`/theory/mechanics` for the equations.",
        [("The system and its parameters", ["System", "Parameter", "GROUND"]),
         ("Bodies", ["Body", "RigidBody", "Particle"]),
         ("Joints", ["Joint", "JOINT_TYPES", "Revolute", "Slot", "Rolling", "Gear", "Distance", "Prescribed"]),
         ("Forces", ["Gravity", "PointForce", "Torque", "Spring", "Damper"]),
         ("Formulations", ["GeneralMethod", "TreeMethod", "Assembly"]),
         ("Expressions and model files", ["Expression", "parse", "load_model", "save_model", "dump_model",
                                          "slider_chain", "write_slider_chain"])]),
    "dynamics": (
        "See :doc:`/guide/simulate` for a tour and :doc:`/theory/mechanics` for the mathematics.",
        [("Simulation and its results", ["simulate", "SimulateOptions", "Trajectory", "Event", "EventKind",
                                         "SimulationStatus", "AMBIGUITY_RULES", "make_formulation"]),
         ("Modes", ["Mode", "Motion", "Baumgarte", "ModeSolution", "solve_mode"]),
         ("The event HLCP", ["EventProblem", "event_problem", "read_mode", "SparseHLCP"])]),
    "identify": (
        "See :doc:`/guide/identification` for a tour and :doc:`/theory/identification` for the mathematics.",
        [("Estimating", ["estimate", "Experiment", "Parameter", "IdentificationResult", "METHODS", "JACOBIANS"]),
         ("Methods and their options", ["Shooting", "Mpec", "Fesd"]),
         ("The MPEC route and parmest", ["fit_mpec", "MpecFit", "MpecExperiment"]),
         ("The least squares and its coordinates", ["ShootingProblem", "Parametrization", "FRICTION_BOUNDS"]),
         ("Data", ["read_data", "output_names", "friction_pairs", "synthetic_record"])]),
    "sweep": (
        "See :doc:`/guide/sweeps` for a tour.",
        [("Specs", ["load_spec", "SweepSpec", "ModelSource", "model_hash", "OBSERVABLES"]),
         ("Running and results", ["run_sweep", "SweepReport", "local_cluster", "load_results", "ResultStore",
                                  "plot_regime"])]),
    "design": (
        "Experiment design: which record determines the friction parameters best.",
        [("Specs", ["load_design", "DesignSpec", "RECORD_VARIABLES"]),
         ("Fisher information and criteria", ["information", "Information", "SingularInformation", "criteria",
                                              "criterion", "CRITERIA", "regimes"]),
         ("Evaluating, exploring, optimizing", ["evaluate", "explore", "optimize", "OptimizationResult"]),
         ("Plots", ["plot_design_map", "plot_ellipses"])]),
}

OTHER = "Other names"


def sections_of(package):
    """``[(title, names)]`` of ``pympc.<package>`` as its page shows them: the names of its ``__all__`` only,
    and the exported names that no section lists under :data:`OTHER`."""
    module = importlib.import_module(f"pympc.{package}")
    exported = list(module.__all__)
    _, spec = SECTIONS.get(package, ("", []))
    out, seen = [], set()
    for title, names in spec:
        present = [n for n in names if n in exported]
        seen.update(names)
        if present:
            out.append((title, present))
    rest = [n for n in exported if n not in seen]
    if rest:
        out.append((OTHER, rest))
    return out


def subpackages():
    """The subpackages of this checkout that have a page: every one with an ``__all__``."""
    import pkgutil

    import pympc

    return sorted(m.name.rsplit(".", 1)[-1] for m in pkgutil.iter_modules(pympc.__path__, "pympc.")
                  if m.ispkg and hasattr(importlib.import_module(m.name), "__all__"))


def page(package):
    """The reST text of ``docs/api/<package>.rst``."""
    title = f"``pympc.{package}``"
    lines = [title, "=" * len(title), "", f".. automodule:: pympc.{package}", "   :no-members:", "",
             f".. currentmodule:: pympc.{package}", ""]
    intro = SECTIONS.get(package, ("", []))[0]
    if intro:
        lines += [intro, ""]
    for section, names in sections_of(package):
        lines += [section, "-" * len(section), "", ".. autosummary::", "   :toctree: generated", ""]
        lines += [f"   {n}" for n in names] + [""]
    return "\n".join(lines)


def write_pages(api_dir: Path):
    """Write the subpackages' pages (only when their text changes, so that Sphinx rereads only those)."""
    written = []
    for package in subpackages():
        path = api_dir / f"{package}.rst"
        text = page(package)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(package)
    return written
