"""Building, solving and reading the whole-trajectory MPEC of several experiments (the Pyomo side of
``estimate(..., method="mpec")``; :mod:`pympc.identify.mpec_route` stays Pyomo-free)."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.factory import SolverFactory

from . import solvers  # noqa: F401  (importing pympc.mpec registers pympc.ipopt)
from .trajectory import STATIC_PENALTY, add_experiment, add_parameters, finish, residuals

__all__ = ["experiments_model", "solve_model", "stick_ratios"]


def experiments_model(parts, system, fit, static_penalty=None):
    """One ConcreteModel with a block per experiment, the parameters shared.

    Parameters
    ----------
    parts : list of dict
        Keyword arguments of :func:`~pympc.mpec.trajectory.add_experiment` per experiment
        (``system``, ``t``, ``data``, ``outputs``, ``step``, ``t0``, ``sigma``, ``warm_start``).
    system : System
        Gives the start values of the fitted parameters.
    fit : dict
        ``{name: (lower, upper)}``.
    static_penalty : float, optional
    """
    m = pyo.ConcreteModel(name="pympc identification MPEC")
    add_parameters(m, system, fit)
    m.experiment = pyo.Block(range(len(parts)))
    for k, part in enumerate(parts):
        part = dict(part)
        add_experiment(m, m.experiment[k], part.pop("system"), part.pop("t"), part.pop("data"), part.pop("outputs"),
                       **part)
    finish(m, STATIC_PENALTY if static_penalty is None else static_penalty)
    return m


def solve_model(m, relaxation, time_limit=None, solver_options=None):
    """Solve with ``pympc.ipopt`` and read the answer back; returns a dict of facts (``theta`` by name,
    residuals before and after, statuses, timing, ``fit`` = ½ Σ r² of the data part)."""
    before = residuals(m)
    opts = {"relaxation": tuple(relaxation), "raise_exception_on_nonoptimal_result": False, "load_solutions": False}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    if solver_options:
        opts["solver_options"] = dict(solver_options)
    res = SolverFactory("pympc.ipopt").solve(m, **opts)
    has = res.solution_status.name != "noSolution"
    if has:
        res.solution_loader.load_vars()
    after = residuals(m)
    blocks = list(m.experiment.values())
    return {"theta": {n: float(pyo.value(v)) for n, v in m.theta.items()}, "has_point": has,
            "termination": res.termination_condition.name, "solution_status": res.solution_status.name,
            "stages": [list(s) for s in res.extra_info.stages], "message": str(res.extra_info.message),
            "dynamics_residual": float(after["dynamics"]), "complementarity_residual": float(after["complementarity"]),
            "objective": after["objective"], "warm_start_residuals": {k: float(v) for k, v in before.items()},
            "solve_seconds": float(res.timing_info.wall_time),
            "variables": int(res.extra_info.number_of_variables),
            "constraints": int(res.extra_info.number_of_constraints),
            "step": [b.h for b in blocks], "steps": [b.steps for b in blocks],
            "fit": float(sum(0.5 * sum(pyo.value(r) ** 2 for r in b.residual.values()) for b in blocks))}


def stick_ratios(m, tol=1e-9):
    """``{(experiment, slot): (largest |P|/|Λ| over the stuck steps, number of stuck steps)}`` of a solution.

    A step is stuck when both slip parts are below ``tol`` × the largest slip and
    |Λ| above ``tol`` × the largest; NaN when no step is stuck.
    """
    out = {}
    for k, b in m.experiment.items():
        for j in sorted({key[1] for key in b.P}):
            keys = [key for key in b.P if key[1] == j]
            s = np.array([pyo.value(b.sp[key]) + pyo.value(b.sm[key]) for key in keys])
            lam = np.array([pyo.value(b.lp[key]) + pyo.value(b.lm[key]) for key in keys])
            P = np.array([abs(pyo.value(b.P[key])) for key in keys])
            stuck = (s <= tol * max(1.0, s.max(initial=0.0))) & (lam > tol * max(1.0, lam.max(initial=0.0)))
            out[k, j] = (float((P[stuck] / lam[stuck]).max()) if stuck.any() else np.nan, int(stuck.sum()))
    return out
