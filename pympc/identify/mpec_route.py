"""The MPEC route of :func:`~pympc.identify.estimate`: the whole trajectory as one Pyomo model.

:func:`fit_mpec` builds the model of :mod:`pympc.mpec.trajectory` for every
experiment (parameters shared) and fits it on a ladder of grids by
:func:`pympc.mpec.trajectory_fit.walk_modes` (the time stepping of
:mod:`pympc.mpec.stepping` at the current parameters fixes every pair's
branch and the steps where a stuck slot breaks away, the NLP with those
fixed is solved by ``pympc.ipopt``, repeat), μ_s included: the breakaway
inside the step makes the time stepping continuous in μ_s.  A walk that does
not verify falls back to the relaxed MPEC (continuation on the
complementarity relaxation, then the active-set polish, warm-started from a
simulation), whose closure law proves only a lower bound on a fitted μ_s
(:func:`static_bounds`).  The answer is checked: the solver's verdict, the
largest violation of the time-stepping rows and the largest complementarity
residual.  The estimate then goes through the same analysis as the shooting
route (covariance from the exact model's sensitivity Jacobian at the MPEC
estimate; data that never break away: the one-sided μ_s report of that
analysis).
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import numpy as np

from ..dynamics import simulate
from ..errors import OptionError, SimulationError
from .options import RELAXATION, STEP

__all__ = ["fit_mpec", "mpec_model", "static_bounds", "ladder", "RELAXATION", "STEP", "COARSEST"]

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


def mpec_model(experiments, par, step=STEP, z=None, static_penalty=None, warm=True):
    """The Pyomo model of the experiments with the parameters of ``par`` fitted, at internal point ``z``.

    Returns ``(model, seconds to warm-start)``.
    """
    from ..mpec.trajectory_fit import experiments_model

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
    soon as μ|Λ| < |P| (see :mod:`pympc.mpec.trajectory`), so the solution bounds
    μ_s only from below, by the largest |P|/|Λ| over its stuck steps
    (:func:`pympc.mpec.trajectory_fit.stick_ratios`).  Returns ``{name: {"bound", "steps"}}``.
    """
    from ..mpec.trajectory_fit import stick_ratios

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


def _solve(experiments, par, step, z, relaxation, static_penalty, time_limit, solver_options):
    """Build the model at internal point z (warm start: a simulation there), solve, check; returns (model, info)."""
    from ..mpec.trajectory_fit import solve_model

    clock = time.perf_counter()
    m, warm_seconds = mpec_model(experiments, par, step, z=z, static_penalty=static_penalty)
    build = time.perf_counter() - clock
    info = solve_model(m, relaxation, time_limit, solver_options)
    theta = np.array([info["theta"][n] for n in par.names], dtype=float)
    ok = (info["solution_status"] == "optimal" and info["dynamics_residual"] <= DYNAMICS_TOL
          and info["complementarity_residual"] <= COMPLEMENTARITY_TOL and bool(np.all(np.isfinite(theta))))
    info.update(theta=theta.tolist(), verified=bool(ok), relaxation=list(relaxation), static_penalty=static_penalty,
                solver="pympc.ipopt", build_seconds=build - warm_seconds, warm_start_seconds=warm_seconds)
    return m, info


def _trajectories(experiments, par):
    """``theta -> [time stepping of each experiment at theta on its MPEC grid]`` (warm starts of the walk)."""
    from ..mpec.stepping import time_stepping

    def run(theta, h):
        out = []
        for e in experiments:
            system = e.system.bind({n: v for n, v in {**par.fixed, **theta}.items() if n in e.parameters})
            out.append(time_stepping(system, float(e.t[-1]), h, t0=e.t_span[0]))
        return out
    return run


def _walk(experiments, par, step, z, static_penalty, solver_options):
    """Build the model at internal point z and fit it by :func:`pympc.mpec.trajectory_fit.walk_modes`
    (modes of the time stepping, NLP with those modes fixed, repeat); check it as :func:`_solve` does."""
    from ..mpec.trajectory import residuals
    from ..mpec.trajectory_fit import walk_modes

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
        w = {"theta": theta0, "converged": False, "walks": [], "fit": np.inf, "seconds": 0.0, "error": str(exc)}
    after = residuals(m)
    theta = np.array([w["theta"][n] for n in par.names], dtype=float)
    blocks = list(m.experiment.values())
    ok = (w["converged"] and after["dynamics"] <= DYNAMICS_TOL and after["complementarity"] <= COMPLEMENTARITY_TOL
          and bool(np.all(np.isfinite(theta))))
    info = {"theta": theta.tolist(), "verified": bool(ok), "has_point": bool(w["walks"]),
            "termination": "modes consistent" if w["converged"] else "walk not converged",
            "solution_status": "optimal" if ok else "unknown",
            "message": w.get("error", f"{len(w['walks'])} fixed-mode NLPs"), "walks": w["walks"],
            "dynamics_residual": float(after["dynamics"]), "complementarity_residual": float(after["complementarity"]),
            "objective": float(after["objective"]), "fit": float(w["fit"]), "solve_seconds": float(w["seconds"]),
            "build_seconds": build, "warm_start_seconds": 0.0, "step": [b.h for b in blocks],
            "steps": [b.steps for b in blocks], "solver": "walk_modes (pympc.ipopt)",
            "static_penalty": static_penalty, "relaxation": []}
    return m, info


def ladder(step, coarsest=COARSEST):
    """The steps of the grid continuation: ``step·2^k`` down to ``step``, starting at the largest ≤ ``coarsest``."""
    out = [float(step)]
    while out[-1] * 2 <= coarsest * (1 + 1e-9):
        out.append(out[-1] * 2)
    return out[::-1]


def fit_mpec(experiments, par, step=STEP, relaxation=RELAXATION, static_penalty=None, time_limit=None,
             solver_options=None, continuation=True, walk=None):
    """Solve the MPEC from the initial values; returns ``(rows, results, info)`` shaped like
    :func:`~pympc.identify.shooting.fit_starts` (one start) and the MPEC's facts.

    With ``continuation`` (default) the MPEC is first solved on coarser grids
    (:func:`ladder`: step doubled up to :data:`COARSEST`), each one warm-started
    from a simulation at the previous grid's estimate: a coarse grid moves the
    switching times freely, a fine one started far from the data often ends in a
    worse local solution (measured on the oscillator at h = 0.01 s).

    ``walk`` (default True) fits each grid by :func:`pympc.mpec.trajectory_fit.walk_modes`
    instead of the relaxed MPEC: the time stepping at the current parameters
    (:func:`pympc.mpec.stepping.time_stepping`: a stuck slot breaks away inside
    the step where μ_s|λ| − |F| crosses zero) fixes the branch of every pair and
    the breakaway steps, the NLP with those fixed is solved, and so on until they
    are those of the time stepping at the answer.  Measured on the oscillator
    (``tests/test_mpec_trajectory.py``, ``benchmarks/identification.py`` part 5):
    the relaxed MPEC's active-set polish stopped at points that are not even local
    minima of the least squares over the time stepping (μ = 0.3016 at h = 0.01 s
    where that minimum is 0.30002), the walk ends at that minimum; with μ and μ_s
    fitted together the gaps to shooting shrink at first order (μ_s: 1.9e-2, 9.0e-3,
    4.7e-3 at h = 0.04, 0.02, 0.01 s).  A walk that does not verify falls back to
    the relaxed MPEC (``walk=False``: the relaxed MPEC only).
    """
    if not step > 0:
        raise OptionError(f"step must be a positive time step, got {step!r}")
    clock = time.perf_counter()
    z = par.z0
    ladder_info = []
    if walk is None:
        walk = True
    for h in (ladder(step) if continuation else [float(step)]):
        m, info = (_walk(experiments, par, h, z, static_penalty, solver_options) if walk else
                   _solve(experiments, par, h, z, relaxation, static_penalty, time_limit, solver_options))
        if walk and not info["verified"]:    # the walk failed: the relaxed MPEC from the same point
            m, info = _solve(experiments, par, h, z, relaxation, static_penalty, time_limit, solver_options)
        ladder_info.append({"step": h, "theta": info["theta"], "verified": info["verified"], "solver": info["solver"],
                            "objective": info["objective"], "seconds": info["solve_seconds"] + info["build_seconds"]
                            + info["warm_start_seconds"]})
        if info["verified"]:
            z = np.clip(par.Tinv @ np.asarray(info["theta"]), par.lo, par.hi)
    info["ladder"] = ladder_info
    ok = info["verified"]
    theta = np.asarray(info["theta"], dtype=float)
    z = par.Tinv @ theta
    # the relaxed MPEC's closure law proves only μ_s ≥ its largest stick ratio; the walk's breakaway law fits μ_s
    # (data that never break away: the shooting analysis's one-sided report at the estimate)
    info["static"] = static_bounds(m, experiments, par) if "walk" not in info["solver"] else {}
    fit = info["fit"]
    status = "converged" if ok else "not converged"
    why = (f"MPEC {info['termination']}: {info['message']}; dynamics residual "
           f"{info['dynamics_residual']:.2e}, complementarity residual {info['complementarity_residual']:.2e}")
    row = {"start": 0, **{f"{n}_start": v for n, v in zip(par.names, par.theta0)},
           **{f"{n}_end": v for n, v in zip(par.names, theta)}, "cost": fit if ok else np.inf, "status": status,
           "message": why, "nfev": np.nan, "optimality": np.nan, "plateau_moves": 0,
           "simulations": len(experiments) * len(ladder_info), "seconds": time.perf_counter() - clock}
    result = SimpleNamespace(x=np.clip(z, par.lo, par.hi), cost=fit if ok else np.inf, optimality=np.nan, message=why)
    info["model"] = m
    return [row], [result if info["has_point"] else None], info
