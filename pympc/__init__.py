"""pympc: planar multibody dynamics with friction in translational joints.

Complementarity problems (LCP/HLCP) and their native pivoting solver, Pyomo
MPEC models and solver plugins (``pympc.mpec``), planar mechanisms
(``pympc.mechanics``) and the event-driven simulator (``pympc.dynamics``).

Importing pympc imports none of them: each name is imported when it is first
used (PEP 562), so that ``import pympc`` costs next to nothing and a user who
only simulates never imports Pyomo.  The solvers ``pympc.lemke``,
``pympc.milp`` and ``pympc.ipopt`` are registered with Pyomo's
``SolverFactory`` (legacy and ``pyomo.contrib.solver``) as soon as both pympc
and ``pyomo.environ`` are imported, in either order (see :mod:`pympc._pyomo_hook`).
"""

from importlib import import_module as _import_module

from ._pyomo_hook import register_with_pyomo as _register_with_pyomo

__version__ = "0.1.0"

_WHERE = {
    "complementarity": ("LCP", "HLCP", "Classification", "HLCPResult", "LCPResult", "Result", "Residual", "SetKind", "SolutionSet",
                        "Status", "classify", "enumerate_solutions", "is_p_matrix", "lemke", "load_problem",
                        "read_problem", "read_siconos", "solve"),
    "errors": ("ModelError", "OptionError", "ProblemError", "PympcError", "SimulationError", "SolverError",
               "SolverNotFound"),
    "mpec": ("crosscheck",),
    "mechanics": ("GeneralMethod", "System", "TreeMethod", "load_model"),
    "dynamics": ("Event", "SimulationStatus", "Trajectory", "simulate"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "LCP", "HLCP", "solve", "crosscheck", "lemke", "enumerate_solutions", "classify", "is_p_matrix",
    "read_siconos", "read_problem", "load_problem",
    "Status", "Result", "LCPResult", "HLCPResult", "Residual", "SetKind", "SolutionSet", "Classification",
    "System", "GeneralMethod", "TreeMethod", "load_model", "simulate", "Trajectory", "Event", "SimulationStatus",
    "PympcError", "ProblemError", "OptionError", "SolverError", "SolverNotFound", "ModelError", "SimulationError",
]


def __getattr__(name):
    module = _MODULE_OF.get(name)
    if module is None:
        if name in _SUBPACKAGES:
            return _import_module(f"{__name__}.{name}")
        raise AttributeError(f"module 'pympc' has no attribute {name!r}")
    value = getattr(_import_module(f"{__name__}.{module}"), name)
    globals()[name] = value   # the next access is a plain attribute
    return value


_SUBPACKAGES = ("complementarity", "mechanics", "dynamics", "mpec", "errors", "cli")


def __dir__():
    """The public names (``__all__``, the subpackages, ``__version__``) and the module's dunders."""
    mine = {k for k in globals() if not k.startswith("_") or (k.startswith("__") and k.endswith("__"))}
    return sorted(mine | set(__all__) | set(_SUBPACKAGES))


_register_with_pyomo()
