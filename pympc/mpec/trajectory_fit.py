"""Building, solving and reading the whole-trajectory MPEC of several experiments (the Pyomo side of
``estimate(..., method="mpec")``; :mod:`pympc.identify.mpec_route` stays Pyomo-free)."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.factory import SolverFactory

from . import solvers  # noqa: F401  (importing pympc.mpec registers pympc.ipopt)
from .trajectory import STATIC_PENALTY, add_experiment, add_parameters, finish, residuals

__all__ = ["experiments_model", "solve_model", "stick_ratios", "set_theta", "modes", "fix_modes", "unfix_modes", "walk_modes"]


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


def set_theta(m, theta):
    """Set the fitted parameters of ``m`` from ``{user name: value}`` (μ_s through its excess over μ)."""
    statics = dict((s, k) for k, s in m.pairs)
    for n, v in theta.items():
        if n in statics:
            m.excess[n].set_value(max(0.0, float(v) - float(theta[statics[n]])))
        elif n in m.fitted:
            m.fitted[n].set_value(float(v))


def modes(m, tol=1e-9):
    """``{(experiment, pair key): True when the pair's first side is the zero one}`` at the current point."""
    out = {}
    for k, b in m.experiment.items():
        for key, (a, c) in b.sides.items():
            va, vc = pyo.value(a), pyo.value(c)
            out[k, key] = bool(va <= max(vc, tol))
    return out


def fix_modes(m, chosen):
    """Replace every complementarity pair by its branch in ``chosen`` (see :func:`modes`): the zero side
    ``== 0`` (a variable is fixed at 0), the other ``>= 0`` (a row of its own, the bound of a variable side
    lifted, so that its multiplier tells whether it blocks); a plain NLP.  With the breakaway law configured
    (:func:`pympc.mpec.trajectory.configure`) the reserves of a slot that stays stuck are no rows (its slip
    and w± are zero; whether it stays stuck is the time stepping's decision, re-run by :func:`walk_modes`),
    and a breakaway step's slip has its sign's other part at zero and is free.  ``unfix_modes`` puts the pairs
    back.

    Returns ``{(experiment, key): the "other >= 0" row}``.
    """
    unfix_modes(m)
    rows, lifted, fixed = {}, [], []

    def is_var(x):
        return getattr(x, "is_variable_type", lambda: False)()

    def lift(v):
        if is_var(v) and v.lb == 0:
            lifted.append((v, v.domain))
            v.domain = pyo.Reals

    def zero(x, b):
        # a variable side is fixed at zero (IPOPT drops it) rather than held by a row against its own bound
        # (x ≥ 0 and x = 0 leave the interior point method no interior)
        if is_var(x):
            if not x.fixed:
                x.fix(0.0)
                fixed.append(x)
        else:
            b.mode.add(x == 0)
    for k, b in m.experiment.items():
        b.mode = pyo.ConstraintList()
        b.pairs.deactivate()
        soft = getattr(b, "soft", {})
        for key, (a, c) in b.sides.items():
            first, other = (a, c) if chosen[k, key] else (c, a)
            if key in soft:           # a stuck slot's reserves: decided by the time stepping, not rows
                for x in soft[key]:
                    zero(x, b)
                continue
            zero(first, b)
            rows[k, key] = b.mode.add(other >= 0)
            lift(other)
        for first, other, unused in getattr(b, "loose", []):     # a breakaway step's slip: its sign fixed, free
            for x in [first] + unused:
                zero(x, b)
            lift(other)
    m._lifted, m._fixed = lifted, fixed
    return rows


def unfix_modes(m):
    for v, domain in getattr(m, "_lifted", []):
        v.domain = domain
    for v in getattr(m, "_fixed", []):
        v.unfix()
    m._lifted, m._fixed = [], []
    for b in m.experiment.values():
        if b.component("mode") is not None:
            b.del_component("mode")
        b.pairs.activate()


def _data_fit(m):
    return float(sum(0.5 * sum(pyo.value(r) ** 2 for r in b.residual.values()) for b in m.experiment.values()))


def walk_modes(m, trajectories, theta, max_walks=12, tol=1e-9, solver_options=None):
    """Least squares over the time stepping by a walk over its mode sequences (a local MPEC solution).

    From ``theta``: the time stepping at ``theta`` (``trajectories(theta)``: one warm-start dict per
    experiment, e.g. :func:`pympc.mpec.stepping.time_stepping`) gives the mode of every pair; the NLP with
    those modes fixed (:func:`fix_modes`) is solved by ``pympc.ipopt``; the time stepping is run again at its
    answer, and so on until the modes of the time stepping at the answer are the modes that were fixed.
    There the point is exactly complementary and feasible, and a minimum of the least squares over every
    parameter value whose time stepping has these modes.  A pair left with both sides zero (the answer on
    the border of that set) is then tried on its other branch; the walk goes on if that fits better.

    The time stepping's breakaway steps are part of the modes: each warm start configures them
    (:func:`pympc.mpec.trajectory.configure`), the NLP moves θ (the stuck fraction of a breakaway step)
    freely, and when θ leaves [0, 1] at its answer the time stepping there breaks away in another step and
    the walk goes on with that pattern.  The trajectory is continuous across such a change, so μ_s is
    fitted like any other parameter.

    Returns
    -------
    dict
        ``theta``, ``converged`` (modes consistent, not improvable by a flip), ``walks`` (list of
        (theta, data fit, changed pairs)), ``fit``, ``seconds``.
    """
    import time

    clock = time.perf_counter()
    theta = dict(theta)
    walks, converged, chosen = [], False, None
    # IPOPT relaxes inequality bounds by 1e-8 unless told not to: the "other >= 0" rows must hold exactly
    opts = {"raise_exception_on_nonoptimal_result": False, "load_solutions": False,
            "solver_options": {"bound_relax_factor": 0.0, **(solver_options or {})}}
    blocking, solution, tried = [], None, set()
    for _ in range(max_walks):
        set_theta(m, theta)
        for b, ws in zip(m.experiment.values(), trajectories(theta)):
            b.warm(ws)
        now = modes(m, tol)
        if chosen is not None and now == chosen:
            if solution is not None:
                for v, x in solution:      # the NLP's answer (exact rows), not the simulation's
                    v.set_value(x, skip_validation=True)
            flipped = {key: (not v if key in blocking else v) for key, v in now.items()}
            if not blocking or tuple(sorted(blocking, key=str)) in tried or not _try(m, flipped, opts, walks):
                converged = True
                break
            tried.add(tuple(sorted(blocking, key=str)))
            theta = {n: float(pyo.value(v)) for n, v in m.theta.items()}
            chosen = None
            continue
        changed = len(now) if chosen is None else sum(now.get(key) != chosen.get(key) for key in set(now) | set(chosen))
        chosen = now
        ok, blocking = _solve_fixed(m, chosen, opts, tol)
        if ok:
            solution = _values(m)
        theta = {n: float(pyo.value(v)) for n, v in m.theta.items()}
        walks.append((dict(theta), _data_fit(m), changed))
        if not ok:
            break
    unfix_modes(m)
    return {"theta": theta, "converged": converged, "walks": walks, "fit": _data_fit(m),
            "seconds": time.perf_counter() - clock}


def _solve_fixed(m, chosen, opts, tol):
    """Solve the NLP of the modes ``chosen``; (solved, the pairs whose other side is zero and blocks: a
    multiplier not zero)."""
    rows = fix_modes(m, chosen)
    res = SolverFactory("pympc.ipopt").solve(m, **opts)
    ok = res.solution_status.name == "optimal"
    blocking = []
    if ok:
        res.solution_loader.load_vars()
        duals = res.solution_loader.get_duals(list(rows.values()))
        # active and binding: an interior point leaves an active row at ~1e-9..1e-6 with a multiplier
        # orders of magnitude above it; an inactive row has body >> multiplier (their product is the barrier)
        blocking = [key for key, row in rows.items()
                    if abs(pyo.value(row.body)) <= 1e-5 and abs(duals[row]) > 1e3 * abs(pyo.value(row.body))]
        # a slip part is the first side of two pairs when μ_s > μ: leaving a branch flips both
        first = {id(m.experiment[key[0]].sides[key[1]][0]) for key in blocking}
        blocking = [key for key in rows if id(m.experiment[key[0]].sides[key[1]][0]) in first]
    unfix_modes(m)
    return ok, blocking


def _values(m):
    return [(v, v.value) for v in m.component_data_objects(pyo.Var, descend_into=True)]


def _try(m, chosen, opts, walks):
    """Solve with the modes ``chosen`` from the current point; keep the answer if it fits better."""
    before = _data_fit(m)
    saved = _values(m)
    ok, _ = _solve_fixed(m, chosen, opts, 1e-9)
    if ok and _data_fit(m) < before * (1 - 1e-6):
        walks.append(({n: float(pyo.value(v)) for n, v in m.theta.items()}, _data_fit(m), "flip"))
        return True
    for v, x in saved:
        v.set_value(x, skip_validation=True)
    return False
