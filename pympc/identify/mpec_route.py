"""The MPEC route of :func:`~pympc.identify.estimate`: the whole trajectory as one Pyomo model, in one room.

:func:`fit_mpec` is the whole orchestration: it builds the model of
:mod:`pympc.identify.mpec_model` for every experiment (parameters shared)
and fits it on a ladder of grids (:func:`ladder`) by :func:`walk_modes` (the
time stepping of :mod:`pympc.identify.mpec_stepping` at the current
parameters fixes every pair's branch and the steps where a stuck slot breaks
away, :func:`pympc.identify.mpec_branches.fix_modes` turns the MPEC into the
NLP of those branches, ``pympc.ipopt`` solves it, repeat), μ_s included: the
breakaway inside the step makes the time stepping continuous in μ_s.  A walk
that does not verify falls back to the relaxed MPEC (:func:`solve_relaxed`:
continuation on the complementarity relaxation, then the active-set polish,
warm-started from a simulation), whose closure law proves only a lower bound
on a fitted μ_s (:func:`static_bounds`).  The answer is checked (the verdict):
the solver's, the largest violation of the time-stepping rows and the largest
complementarity residual.  It returns an :class:`MpecFit`: termination
condition and solution status as two fields (Pyomo's enums of
``pyomo.contrib.solver.common.results``, as ``pympc.ipopt`` returns them),
timing, model sizes, the grid ladder, the walk, residuals.  The estimate then
goes through the same analysis as the shooting route
(:func:`~pympc.identify.estimate`: covariance from the exact model's
sensitivity Jacobian at the MPEC estimate; data that never break away: the
one-sided μ_s report of that analysis).

Pyomo is imported inside the functions only: ``import pympc.identify`` stays
Pyomo-free.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from ..dynamics import simulate
from ..errors import OptionError, SimulationError
from .options import RELAXATION, STEP

__all__ = ["fit_mpec", "MpecFit", "mpec_model", "walk_modes", "solve_relaxed", "static_bounds", "ladder", "RELAXATION",
           "STEP", "COARSEST"]

COARSEST = 0.05
"""Coarsest grid of the continuation in the step [s] (see :func:`fit_mpec`)."""

DYNAMICS_TOL, COMPLEMENTARITY_TOL = 1e-7, 1e-8


def _warm_start(experiment, values, t0, t_end, step):
    """A simulation at ``values`` sampled on the MPEC's grid (None where it fails: the model starts cold)."""
    K = max(1, int(np.ceil((t_end - t0) / step - 1e-9)))
    grid = t0 + (t_end - t0) / K * np.arange(K + 1)
    used = experiment.system.used_parameters()
    try:
        tr = simulate(experiment.system, (t0, experiment.t_span[1]),
                      params={k: v for k, v in values.items() if k in used},
                      t_eval=grid, **experiment.simulate_options)
        rows = tr.sample_rows(grid)
    except SimulationError:
        return None
    return {"q": tr.q[rows], "v": tr.qd[rows], "normal_force": tr.normal_force[rows],
            "friction_force": tr.friction_force[rows]}


@dataclass
class MpecFit:
    """What :func:`fit_mpec` found and how (a declared result, like ``pyomo.contrib.solver``'s ``Results``).

    Attributes
    ----------
    theta : dict
        The estimate, ``{parameter name: value}`` (on the finest grid of the ladder).
    verified : bool
        The verdict: the point is a solution of the MPEC (the walk's branches are those of the time stepping at
        it, or the relaxed solve is optimal), its time-stepping rows hold within ``DYNAMICS_TOL`` and its pairs
        within ``COMPLEMENTARITY_TOL``.
    termination_condition : pyomo.contrib.solver.common.results.TerminationCondition
        Why the last solve stopped (``convergenceCriteriaSatisfied``: the walk's branches are consistent or
        IPOPT converged; ``iterationLimit``: the walk's budget; ``error``: the time stepping had no solution;
        otherwise ``pympc.ipopt``'s condition).
    solution_status : pyomo.contrib.solver.common.results.SolutionStatus
        ``optimal`` only when verified; ``feasible`` (rows and pairs hold, not shown optimal), ``infeasible``
        (a point that violates them) or ``noSolution``.
    route : str
        ``"walk"`` (:func:`walk_modes`) or ``"relaxed"`` (:func:`solve_relaxed`) on the last grid.
    message : str
    dynamics_residual, complementarity_residual : float
        Largest violation of the time-stepping rows, largest ``|min(a, c)|`` over the pairs.
    objective, fit : float
        The model's objective and its data part ½ Σ r².
    step : list of float
        Step of each experiment's grid [s]; ``steps`` their numbers of steps.
    variables, constraints, complementarity_pairs : int
        Size of the model on the last grid (active constraints; pairs of every block).
    ladder : list of dict
        Per grid: ``step``, ``theta``, ``verified``, ``route``, ``objective``, ``seconds``.
    walks : list
        The walk on the last grid: ``(theta, data fit, pairs changed)`` per NLP.
    static : dict
        The relaxed route's lower bounds on μ_s (:func:`static_bounds`; empty after a walk).
    timing : dict
        Seconds: ``build``, ``warm_start``, ``solve`` (last grid) and ``total``.
    extra : dict
        The relaxed solve's ``stages`` and ``warm_start_residuals``, the options used.
    model : pyomo.environ.ConcreteModel
        The solved model (not part of :meth:`as_dict`).
    """

    theta: dict
    verified: bool
    termination_condition: object
    solution_status: object
    route: str
    message: str
    dynamics_residual: float
    complementarity_residual: float
    objective: float
    fit: float
    step: list[float]
    steps: list[int]
    variables: int
    constraints: int
    complementarity_pairs: int
    ladder: list[dict] = field(default_factory=list)
    walks: list[tuple] = field(default_factory=list)
    static: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    model: object = field(default=None, repr=False)

    @property
    def has_point(self):
        """True when the last solve left a point (even an unverified one)."""
        return self.solution_status.name != "noSolution"

    def as_dict(self):
        """The facts as plain JSON values (enums by name, no model): what ``IdentificationResult.method["mpec"]``
        stores."""
        out = {k: getattr(self, k) for k in ("verified", "route", "message", "dynamics_residual",
                                             "complementarity_residual", "objective", "fit", "step", "steps",
                                             "variables", "constraints", "complementarity_pairs", "ladder",
                                             "static", "timing")}
        out.update(theta=[float(v) for v in self.theta.values()], names=list(self.theta),
                   termination=self.termination_condition.name, solution_status=self.solution_status.name,
                   walks=[[dict(th), float(f), c] for th, f, c in self.walks], **self.extra)
        return out


def _enums():
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
    return TerminationCondition, SolutionStatus


def _sizes(m):
    import pyomo.environ as pyo
    from pyomo.mpec import Complementarity

    variables = sum(1 for v in m.component_data_objects(pyo.Var, descend_into=True) if not v.fixed)
    constraints = sum(1 for _ in m.component_data_objects(pyo.Constraint, active=True, descend_into=True))
    pairs = sum(1 for _ in m.component_data_objects(Complementarity, active=True, descend_into=True))
    return {"variables": variables, "constraints": constraints, "complementarity_pairs": pairs}


def mpec_model(experiments, par, step=STEP, z=None, static_penalty=None, warm=True):
    """The Pyomo model of the experiments with the parameters of ``par`` fitted, at internal point ``z``.

    Returns ``(model, seconds to warm-start)``.
    """
    from .mpec_model import experiments_model

    z = par.z0 if z is None else np.asarray(z, dtype=float)
    values = par.values(z)
    parts, seconds = [], 0.0
    for e in experiments:
        clock = time.perf_counter()
        ws = _warm_start(e, values, e.t_span[0], float(e.t[-1]), step) if warm else None
        seconds += time.perf_counter() - clock
        parts.append({"system": e.system.bind({n: v for n, v in values.items() if n in e.parameters}), "t": e.t,
                      "data": e.y, "outputs": e.outputs, "step": step, "t0": e.t_span[0], "sigma": e.sigma,
                      "warm_start": ws})
    fit = {n: (lo, hi) for n, lo, hi in zip(par.names, par.theta_lo, par.theta_hi)}
    return experiments_model(parts, parts[0]["system"], fit, static_penalty), seconds


def static_bounds(m, experiments, par):
    """What the MPEC says about each fitted static coefficient μ_s (> μ): the largest stick ratio |P|/|Λ|.

    The complementarity law of the time stepping lets a stuck slot break away as
    soon as μ|Λ| < |P| (see :mod:`pympc.identify.mpec_model`), so the solution bounds
    μ_s only from below, by the largest |P|/|Λ| over its stuck steps
    (:func:`pympc.identify.mpec_branches.stick_ratios`).  Returns ``{name: {"bound", "steps"}}``.
    """
    from .mpec_branches import stick_ratios

    ratios = stick_ratios(m)
    out = {}
    for k, e in enumerate(experiments):
        for j, (slot, mu, mus) in enumerate(e.friction_pairs):
            if mus is None or mus not in par.names or (k, j) not in ratios:
                continue
            ratio, steps = ratios[k, j]
            prev = out.get(mus, {"bound": np.nan, "steps": 0})
            out[mus] = {"bound": float(np.fmax(prev["bound"], ratio)), "steps": prev["steps"] + steps}
    return out


def solve_relaxed(m, relaxation=RELAXATION, time_limit=None, solver_options=None):
    """Solve the MPEC ``m`` by ``pympc.ipopt`` (continuation on the complementarity relaxation, then the
    active-set polish) and read the answer back; returns a dict of facts (``theta`` by name, residuals before
    and after, the two statuses as Pyomo enums, timing, ``fit`` = ½ Σ r² of the data part)."""
    import pyomo.environ as pyo
    from pyomo.contrib.solver.common.factory import SolverFactory

    from .. import mpec  # noqa: F401  (registers pympc.ipopt)
    from .mpec_model import residuals

    before = residuals(m)
    opts = {"relaxation": tuple(relaxation), "raise_exception_on_nonoptimal_result": False, "load_solutions": False}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    if solver_options:
        opts["solver_options"] = dict(solver_options)
    res = SolverFactory("pympc.ipopt").solve(m, **opts)
    if res.solution_status.name != "noSolution":
        res.solution_loader.load_vars()
    after = residuals(m)
    return {"theta": {n: float(pyo.value(v)) for n, v in m.theta.items()},
            "termination_condition": res.termination_condition, "solution_status": res.solution_status,
            "stages": [list(s) for s in res.extra_info.stages], "message": str(res.extra_info.message),
            "dynamics_residual": float(after["dynamics"]), "complementarity_residual": float(after["complementarity"]),
            "objective": float(after["objective"]), "warm_start_residuals": {k: float(v) for k, v in before.items()},
            "solve_seconds": float(res.timing_info.wall_time), "fit": _data_fit(m)}


def _verdict(info, theta):
    """Verified: a solution (walk consistent / IPOPT optimal), rows and pairs within tolerance, finite θ."""
    return bool(info["solved"] and info["dynamics_residual"] <= DYNAMICS_TOL
                and info["complementarity_residual"] <= COMPLEMENTARITY_TOL and np.all(np.isfinite(theta)))


def _status(info, ok):
    """The solution status of a checked point."""
    _, SS = _enums()
    if ok:
        return SS.optimal
    if not info["has_point"]:
        return SS.noSolution
    feasible = info["dynamics_residual"] <= DYNAMICS_TOL and info["complementarity_residual"] <= COMPLEMENTARITY_TOL
    return SS.feasible if feasible else SS.infeasible


def _solve(experiments, par, step, z, relaxation, static_penalty, time_limit, solver_options):
    """Build the model at internal point z (warm start: a simulation there), solve relaxed, check; (model, info)."""
    clock = time.perf_counter()
    m, warm_seconds = mpec_model(experiments, par, step, z=z, static_penalty=static_penalty)
    build = time.perf_counter() - clock
    info = solve_relaxed(m, relaxation, time_limit, solver_options)
    theta = np.array([info["theta"][n] for n in par.names], dtype=float)
    info.update(solved=info["solution_status"].name == "optimal", has_point=info["solution_status"].name != "noSolution",
                route="relaxed", walks=[], build_seconds=build - warm_seconds, warm_start_seconds=warm_seconds,
                extra={"relaxation": list(relaxation), "static_penalty": static_penalty, "stages": info.pop("stages"),
                       "warm_start_residuals": info.pop("warm_start_residuals")})
    info["verified"] = _verdict(info, theta)
    info["solution_status"] = _status(info, info["verified"])
    return m, info


def _trajectories(experiments, par):
    """``theta -> [time stepping of each experiment at theta on its MPEC grid]`` (warm starts of the walk)."""
    from .mpec_stepping import time_stepping

    def run(theta, h):
        out = []
        for e in experiments:
            system = e.system.bind({n: v for n, v in {**par.fixed, **theta}.items() if n in e.parameters})
            out.append(time_stepping(system, float(e.t[-1]), h, t0=e.t_span[0]))
        return out
    return run


def _walk(experiments, par, step, z, static_penalty, solver_options):
    """Build the model at internal point z and fit it by :func:`walk_modes`; check it as :func:`_solve` does."""
    from .mpec_model import residuals

    TC, _ = _enums()
    clock = time.perf_counter()
    # the breakaway law makes μ_s a smooth parameter of the time stepping: no lean towards the smallest μ_s
    m, _ = mpec_model(experiments, par, step, z=z, static_penalty=0.0 if static_penalty is None else static_penalty,
                      warm=False)
    build = time.perf_counter() - clock
    run = _trajectories(experiments, par)
    theta0 = dict(zip(par.names, (float(v) for v in par.theta(z))))
    try:
        w = walk_modes(m, lambda th: run(th, step), theta0, solver_options=solver_options)
    except SimulationError as exc:      # the time stepping found no step solution
        w = {"theta": theta0, "converged": False, "walks": [], "fit": np.inf, "seconds": 0.0, "error": str(exc),
             "termination_condition": TC.error}
    after = residuals(m)
    theta = np.array([w["theta"][n] for n in par.names], dtype=float)
    info = {"theta": w["theta"], "solved": w["converged"], "has_point": bool(w["walks"]), "route": "walk",
            "termination_condition": w["termination_condition"],
            "message": w.get("error", f"{len(w['walks'])} fixed-branch NLPs, branches "
                                      f"{'consistent' if w['converged'] else 'not consistent'}"),
            "walks": w["walks"], "dynamics_residual": float(after["dynamics"]),
            "complementarity_residual": float(after["complementarity"]), "objective": float(after["objective"]),
            "fit": float(w["fit"]), "solve_seconds": float(w["seconds"]), "build_seconds": build,
            "warm_start_seconds": 0.0, "extra": {"static_penalty": static_penalty, "relaxation": []}}
    info["verified"] = _verdict(info, theta)
    info["solution_status"] = _status(info, info["verified"])
    return m, info


def ladder(step, coarsest=COARSEST):
    """The steps of the grid continuation: ``step·2^k`` down to ``step``, starting at the largest ≤ ``coarsest``."""
    out = [float(step)]
    while out[-1] * 2 <= coarsest * (1 + 1e-9):
        out.append(out[-1] * 2)
    return out[::-1]


def fit_mpec(experiments, par, step=STEP, relaxation=RELAXATION, static_penalty=None, time_limit=None,
             solver_options=None, continuation=True, walk=True):
    """Fit the parameters of ``par`` to the experiments by the MPEC route; returns ``(rows, results, fit)``:
    ``rows`` and ``results`` shaped like :func:`~pympc.identify.shooting.fit_starts` (one start), ``fit`` an
    :class:`MpecFit`.

    With ``continuation`` (default) the MPEC is first solved on coarser grids
    (:func:`ladder`: step doubled up to :data:`COARSEST`), each one warm-started
    from the previous grid's estimate: a coarse grid moves the switching times
    freely, a fine one started far from the data often ends in a worse local
    solution (measured on the oscillator at h = 0.01 s).

    ``walk`` (default True) fits each grid by :func:`walk_modes` instead of the
    relaxed MPEC: the time stepping at the current parameters
    (:func:`pympc.identify.mpec_stepping.time_stepping`: a stuck slot breaks away
    inside the step where μ_s|λ| − |F| crosses zero) fixes the branch of every
    pair and the breakaway steps, the NLP with those fixed is solved, and so on
    until they are those of the time stepping at the answer.  Measured on the
    oscillator (``tests/test_mpec_trajectory.py``, ``benchmarks/identification.py``
    part 5): the relaxed MPEC's active-set polish stopped at points that are not
    even local minima of the least squares over the time stepping (μ = 0.3016 at
    h = 0.01 s where that minimum is 0.30002), the walk ends at that minimum; with
    μ and μ_s fitted together the gaps to shooting shrink at first order (μ_s:
    1.9e-2, 9.0e-3, 4.7e-3 at h = 0.04, 0.02, 0.01 s).  A walk that does not
    verify falls back to the relaxed MPEC (:func:`solve_relaxed`; ``walk=False``:
    the relaxed MPEC only).
    """
    if not step > 0:
        raise OptionError(f"step must be a positive time step, got {step!r}")
    clock = time.perf_counter()
    z = par.z0
    ladder_info = []
    for h in (ladder(step) if continuation else [float(step)]):
        m, info = (_walk(experiments, par, h, z, static_penalty, solver_options) if walk else
                   _solve(experiments, par, h, z, relaxation, static_penalty, time_limit, solver_options))
        if walk and not info["verified"]:    # the walk failed: the relaxed MPEC from the same point
            m, info = _solve(experiments, par, h, z, relaxation, static_penalty, time_limit, solver_options)
        seconds = info["solve_seconds"] + info["build_seconds"] + info["warm_start_seconds"]
        ladder_info.append({"step": h, "theta": [info["theta"][n] for n in par.names], "verified": info["verified"],
                            "route": info["route"], "objective": info["objective"], "seconds": seconds})
        if info["verified"]:
            z = np.clip(par.Tinv @ np.array([info["theta"][n] for n in par.names]), par.lo, par.hi)
    ok = info["verified"]
    theta = np.array([info["theta"][n] for n in par.names], dtype=float)
    z = par.Tinv @ theta
    blocks = list(m.experiment.values())
    # the relaxed MPEC's closure law proves only μ_s ≥ its largest stick ratio; the walk's breakaway law fits μ_s
    # (data that never break away: the shooting analysis's one-sided report at the estimate)
    fit = MpecFit(theta={n: float(v) for n, v in zip(par.names, theta)}, verified=ok,
                  termination_condition=info["termination_condition"], solution_status=info["solution_status"],
                  route=info["route"], message=info["message"], dynamics_residual=info["dynamics_residual"],
                  complementarity_residual=info["complementarity_residual"], objective=info["objective"],
                  fit=info["fit"], step=[b.h for b in blocks], steps=[b.steps for b in blocks], **_sizes(m),
                  ladder=ladder_info, walks=info["walks"],
                  static=static_bounds(m, experiments, par) if info["route"] == "relaxed" else {},
                  timing={"build": info["build_seconds"], "warm_start": info["warm_start_seconds"],
                          "solve": info["solve_seconds"], "total": time.perf_counter() - clock},
                  extra=info["extra"], model=m)
    why = (f"MPEC {fit.termination_condition.name} ({fit.route}): {fit.message}; dynamics residual "
           f"{fit.dynamics_residual:.2e}, complementarity residual {fit.complementarity_residual:.2e}")
    cost = fit.fit if ok else np.inf
    row = {"start": 0, **{f"{n}_start": v for n, v in zip(par.names, par.theta0)},
           **{f"{n}_end": v for n, v in zip(par.names, theta)}, "cost": cost,
           "status": "converged" if ok else "not converged", "message": why, "nfev": np.nan, "optimality": np.nan,
           "plateau_moves": 0, "simulations": len(experiments) * len(ladder_info), "seconds": fit.timing["total"]}
    result = SimpleNamespace(x=np.clip(z, par.lo, par.hi), cost=cost, optimality=np.nan, message=why)
    return [row], [result if fit.has_point else None], fit


def walk_modes(m, trajectories, theta, max_walks=12, tol=1e-9, solver_options=None):
    """Least squares over the time stepping by a walk over its mode sequences (a local MPEC solution).

    From ``theta``: the time stepping at ``theta`` (``trajectories(theta)``: one warm-start dict per
    experiment, e.g. :func:`pympc.identify.mpec_stepping.time_stepping`) gives the mode of every pair; the NLP with
    those modes fixed (:func:`fix_modes`) is solved by ``pympc.ipopt``; the time stepping is run again at its
    answer, and so on until the modes of the time stepping at the answer are the modes that were fixed.
    There the point is exactly complementary and feasible, and a minimum of the least squares over every
    parameter value whose time stepping has these modes.  A pair left with both sides zero (the answer on
    the border of that set) is then tried on its other branch; the walk goes on if that fits better.

    The time stepping's breakaway steps are part of the modes: each warm start configures them
    (:func:`pympc.identify.mpec_branches.configure`), the NLP moves θ (the stuck fraction of a breakaway step)
    freely, and when θ leaves [0, 1] at its answer the time stepping there breaks away in another step and
    the walk goes on with that pattern.  The trajectory is continuous across such a change, so μ_s is
    fitted like any other parameter.

    Returns
    -------
    dict
        ``theta``, ``converged`` (modes consistent, not improvable by a flip), ``termination_condition``
        (Pyomo's: ``convergenceCriteriaSatisfied`` when converged, ``iterationLimit`` after ``max_walks`` NLPs,
        else the failed NLP's), ``walks`` (list of (theta, data fit, changed pairs)), ``fit``, ``seconds``.
    """
    import pyomo.environ as pyo

    from .mpec_branches import modes, set_theta, unfix_modes

    TC, _ = _enums()
    clock = time.perf_counter()
    term = TC.iterationLimit
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
                converged, term = True, TC.convergenceCriteriaSatisfied
                break
            tried.add(tuple(sorted(blocking, key=str)))
            theta = {n: float(pyo.value(v)) for n, v in m.theta.items()}
            chosen = None
            continue
        changed = len(now) if chosen is None else sum(now.get(key) != chosen.get(key) for key in set(now) | set(chosen))
        chosen = now
        ok, blocking, why = _solve_fixed(m, chosen, opts, tol)
        if ok:
            solution = _values(m)
        theta = {n: float(pyo.value(v)) for n, v in m.theta.items()}
        walks.append((dict(theta), _data_fit(m), changed))
        if not ok:
            term = why
            break
    unfix_modes(m)
    return {"theta": theta, "converged": converged, "termination_condition": term, "walks": walks, "fit": _data_fit(m),
            "seconds": time.perf_counter() - clock}


def _solve_fixed(m, chosen, opts, tol):
    """Solve the NLP of the modes ``chosen``; (solved, the pairs whose other side is zero and blocks: a
    multiplier not zero, the solve's termination condition)."""
    import pyomo.environ as pyo
    from pyomo.contrib.solver.common.factory import SolverFactory

    from .. import mpec  # noqa: F401  (registers pympc.ipopt)
    from .mpec_branches import fix_modes, unfix_modes

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
    return ok, blocking, res.termination_condition


def _values(m):
    import pyomo.environ as pyo

    return [(v, v.value) for v in m.component_data_objects(pyo.Var, descend_into=True)]


def _try(m, chosen, opts, walks):
    """Solve with the modes ``chosen`` from the current point; keep the answer if it fits better."""
    before = _data_fit(m)
    import pyomo.environ as pyo

    saved = _values(m)
    ok, _, _ = _solve_fixed(m, chosen, opts, 1e-9)
    if ok and _data_fit(m) < before * (1 - 1e-6):
        walks.append(({n: float(pyo.value(v)) for n, v in m.theta.items()}, _data_fit(m), "flip"))
        return True
    for v, x in saved:
        v.set_value(x, skip_validation=True)
    return False


def _data_fit(m):
    import pyomo.environ as pyo

    return float(sum(0.5 * sum(pyo.value(r) ** 2 for r in b.residual.values()) for b in m.experiment.values()))
