"""``estimate(experiments, parameters, method="shooting", ...)``: the entry point of the identification."""

from __future__ import annotations

import time

import numpy as np
import scipy
from scipy.stats import chi2

from .. import __version__
from ..errors import OptionError, PympcError
from .experiment import Experiment
from .parameters import Parametrization
from .result import IdentificationResult
from .shooting import ShootingProblem, fit_starts, gauss_newton_step, stationarity
from .parameters import as_number
from .uncertainty import covariance, identifiability, informative_values, profile_parameter, stick_information, wald

__all__ = ["estimate", "METHODS"]

METHODS = {
    "shooting": "simulate event by event and fit with scipy.optimize.least_squares (default)",
    "mpec": "the whole trajectory as one Pyomo MPEC (first-order time stepping), solved by pympc.ipopt",
}


def estimate(experiments, parameters, method="shooting", *, jac="sensitivity", starts=1, include_initial=True, seed=0,
             profile=(), confidence=0.95, fd_step=None, fd_scheme="forward", max_nfev=60, ftol=1e-8, xtol=1e-8,
             gtol=1e-8, profile_steps=6, step=None, relaxation=None, static_penalty=None, time_limit=None,
             auto_profile=True):
    """Estimate model parameters from measured experiments.

    Parameters
    ----------
    experiments : Experiment or list of Experiment
        Fitted jointly (the parameters are shared; each experiment has its own fixed values).
    parameters : str, Parameter, or list of them
        What to estimate (``"mu,mu_s"`` or ``[Parameter("mu", bounds=(0.05, 1)), ...]``).
        When the kinetic and the static coefficient of a slot are both fitted,
        the fit works in μ and Δ = μ_s − μ ≥ 0.
    method : {"shooting", "mpec"}
        ``"mpec"``: the whole trajectory as one Pyomo MPEC (:mod:`pympc.mpec.trajectory`,
        first-order time stepping of step ``step``: the estimate is O(h) off the exact
        model's, measured with μ fitted and with μ and μ_s together, see that module), fitted
        once from the initial values (a walk over the pairs' branches and breakaway steps,
        :func:`pympc.mpec.trajectory_fit.walk_modes`; the relaxed MPEC solved by
        ``pympc.ipopt`` if the walk does not verify) and checked
        (dynamics and complementarity residuals, in ``result.method["mpec"]``); the
        Pyomo model is ``result.model``.  Its covariance and identifiability come from the
        exact model's sensitivity Jacobian at the MPEC estimate (as in the shooting route);
        ``starts`` must be 1 and ``profile`` empty.
    jac : {"sensitivity", "fd"}
        The Jacobian: the simulator's forward sensitivities through events
        (default; ``simulate(..., sensitivities=...)``; where one is undefined —
        a grazing or degenerate event — that Jacobian falls back to finite
        differences and the fallback is counted), or finite differences of the simulator.
    starts : int
        Number of starts: the initial values (if ``include_initial``) and a
        scrambled Sobol sample over the bounds (``scipy.stats.qmc.Sobol``, ``seed``).
        Each start ends ``converged`` (a stationary point), ``stalled`` (stopped
        elsewhere, e.g. on a kink), ``flat`` (on a plateau: the outputs do not
        change with the parameters there; such a start is first moved half way
        to the centre of the box, up to 4 times), ``not converged`` or ``failed``.
    profile : list of str
        Parameters to profile (likelihood profile, χ²₁ at ``confidence``).
    confidence : float
        Level of the Wald and profile intervals (default 0.95).
    fd_step, fd_scheme
        Relative step and scheme (``"forward"``/``"central"``) of ``jac="fd"``.
    max_nfev, ftol, xtol, gtol
        Passed to :func:`scipy.optimize.least_squares` (per start).
    profile_steps : int
        At most this many refits per side of a profile.
    auto_profile : bool
        Also profile (shooting route) every parameter that the Jacobian cannot decide
        — in a flat direction, at a bound, or with a Wald interval wider than its box —
        unless what stick phases prove decides it or there are fewer informative values
        than parameters; the profile then gives its verdict
        (:mod:`pympc.identify.verdict`), so the verdict does not depend on whether a
        profile was asked for.  Listed in ``result.method["auto_profiled"]``.
    step, relaxation, static_penalty, time_limit
        Only for ``method="mpec"``: the time step (default
        :data:`pympc.identify.mpec_route.STEP`), the relaxation schedule
        (default :data:`~pympc.identify.mpec_route.RELAXATION`), the weight of
        μ_s − μ in the objective (:data:`pympc.mpec.trajectory.STATIC_PENALTY`) and
        the solver's time limit in seconds.

    Returns
    -------
    IdentificationResult

    Raises
    ------
    OptionError
        Unknown method, Jacobian or parameters, bad bounds or starts; ``method="mpec"``
        with several starts, profiles, or a model or output it does not cover.
    """
    if method not in METHODS:
        raise OptionError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    if isinstance(experiments, Experiment):
        experiments = [experiments]
    experiments = list(experiments)
    if not experiments or not all(isinstance(e, Experiment) for e in experiments):
        raise OptionError("experiments must be a pympc.identify.Experiment or a list of them")
    mpec_options = dict(step=step, relaxation=relaxation, static_penalty=static_penalty, time_limit=time_limit)
    if method == "shooting" and any(v is not None for v in mpec_options.values()):
        raise OptionError(f"{sorted(k for k, v in mpec_options.items() if v is not None)} are options of method='mpec'")
    if method == "mpec" and (starts != 1 or profile):
        raise OptionError("method='mpec' solves once from the initial values: give starts=1 and no profile "
                          "(use method='shooting' for a multistart or profiles)")
    confidence = as_number(confidence, "confidence")
    if not 0 < confidence < 1:
        raise OptionError(f"confidence must be in (0, 1), got {confidence}")
    if time_limit is not None and not as_number(time_limit, "time_limit", finite=False) > 0:
        raise OptionError(f"time_limit must be a positive number of seconds (None for no limit), got {time_limit}")
    if time_limit is not None and np.isinf(time_limit):
        time_limit = None
    known = [e.sigma is not None for e in experiments]
    if any(known) and not all(known):
        raise OptionError("noise levels are given for some experiments and not others; give them for all or none")
    known_noise = all(known)
    clock = time.perf_counter()
    par = Parametrization(parameters, experiments)
    profile = [profile] if isinstance(profile, str) else list(profile or ())
    for name in profile:
        if name not in par.names:
            raise OptionError(f"profile: {name!r} is not an estimated parameter ({par.names})")

    made = []

    def make_problem(specs, fixed=None):
        made.append(ShootingProblem(experiments, Parametrization(specs, experiments, fixed=fixed), jac=jac,
                                    fd_step=fd_step, fd_scheme=fd_scheme))
        return made[-1]

    problem = ShootingProblem(experiments, par, jac=jac, fd_step=fd_step, fd_scheme=fd_scheme)
    ls_options = dict(max_nfev=max_nfev, ftol=ftol, xtol=xtol, gtol=gtol)
    points = par.starts(starts, seed=seed, include_initial=include_initial)
    mpec_info = None
    if method == "mpec":
        from .mpec_route import RELAXATION, STEP, fit_mpec

        rows, results, mpec_info = fit_mpec(experiments, par, step=STEP if step is None else step,
                                            relaxation=RELAXATION if relaxation is None else relaxation,
                                            static_penalty=static_penalty, time_limit=time_limit)
        model = mpec_info.pop("model")
    else:
        rows, results = fit_starts(problem, points, ls_options)

    import pandas as pd

    table = pd.DataFrame(rows)
    finite = [k for k, r in enumerate(results) if r is not None and np.isfinite(r.cost)]
    method_info = {"method": method, "jacobian": jac, "starts": len(points), "seed": seed,
                   "include_initial": include_initial, "experiments": len(experiments),
                   "fd": {"step": problem.fd_step, "scheme": fd_scheme} if jac == "fd" else None,
                   "least_squares": ls_options, "reparametrized": [f"{par.names[i]}, {par.z_names()[j]}"
                                                                   for i, j in par.pairs],
                   "scipy": scipy.__version__, "pympc": __version__, "models": sorted({str(e.model) for e in experiments}),
                   "fixed": {e.name: e.fixed for e in experiments}}
    if mpec_info is not None:
        method_info["mpec"] = mpec_info
        del method_info["least_squares"]
    p = par.size
    if not finite:
        table["at_best"] = False
        method_info.update(simulations=problem.simulations, seconds=time.perf_counter() - clock)
        nan = np.full(p, np.nan)
        out = IdentificationResult(
            names=par.names, optimum=nan, stderr=nan, wald_low=nan, wald_high=nan, covariance=np.full((p, p), np.nan),
            correlation=np.full((p, p), np.nan), bounds=np.column_stack([par.theta_lo, par.theta_hi]), cost=np.inf,
            n=problem.size, sigma2=np.nan, known_noise=known_noise, converged=False, optimality=np.nan,
            message="every start failed: " + "; ".join(table["message"].astype(str).unique()[:3]), starts=table,
            identifiability={"singular_values": [], "flat_directions": [], "correlated": [], "at_bound": [],
                             "not_identifiable": {n: "every start failed" for n in par.names}},
            stick={}, profiles={}, fits=[], method=method_info, confidence=confidence, gradient=np.nan,
            simulations_ok=False)
        if mpec_info is not None:
            out.model = model
        return out
    best = min(finite, key=lambda k: results[k].cost)
    res = results[best]
    verdict = table.loc[best, "status"]
    z = res.x
    theta = par.theta(z)
    costs = table["cost"].to_numpy(dtype=float)
    ends = table[[f"{n}_end" for n in par.names]].to_numpy(dtype=float)
    tol = 1e-4 * np.maximum(1.0, np.abs(theta))
    table["at_best"] = (costs <= res.cost * (1 + 1e-6) + 1e-12) & np.all(np.abs(ends - theta) <= tol, axis=1)

    # the analysis at the optimum: residuals, Jacobian in user parameters, covariance
    r = problem.residual(z)
    trs = problem.trajectories(z)
    sims_ok = bool(np.all(np.isfinite(r)))
    try:
        Jz = problem.jacobian(z)
    except PympcError:
        Jz = np.full((r.size, p), np.nan)
    J = Jz @ par.Tinv                      # ∂r/∂θ
    sse = float(r @ r)
    if mpec_info is not None:   # a verified MPEC point is a local solution: it must not fit clearly worse than its start
        r0 = problem.residual(par.z0)
        c0 = mpec_info["start_cost"] = 0.5 * float(r0 @ r0)
        # clearly worse: by 5 % of the start's cost, and (known noise) by more than a 99 % likelihood-ratio margin
        slack = 0.05 * c0 + (0.5 * float(chi2.ppf(0.99, p)) if known_noise else 0.0)
        mpec_info["improved"] = bool(0.5 * sse <= c0 + slack)
    if np.all(np.isfinite(J)):
        cov, s2, svals, flat = covariance(J, sse, r.size, theta, known_noise)
    else:
        cov, s2, svals, flat = np.full((p, p), np.nan), np.nan, np.full(p, np.nan), []
    se, wl, wh = wald(theta, cov, r.size, known_noise, confidence)
    span = np.maximum(par.hi - par.lo, 1e-300)
    active = []
    for k in range(p):
        side = ""
        if z[k] - par.lo[k] <= 1e-6 * min(span[k], max(1.0, abs(z[k]))):
            side = "lower"
        elif par.hi[k] - z[k] <= 1e-6 * min(span[k], max(1.0, abs(z[k]))):
            side = "upper"
        if side and k in [j for _, j in par.pairs]:
            side += " (μ_s − μ)" if side == "lower" else ""
        active.append(side)
    report, corr = identifiability(par.names, theta, cov, flat, svals, active)
    report["informative"] = informative_values(J) if np.all(np.isfinite(J)) else None
    stick = stick_information(problem, trs, par.names, z) if sims_ok else {}
    for name, info in (mpec_info or {}).get("static", {}).items():
        if name not in stick:   # the time-stepping law proves μ_s only from below (pympc.mpec.trajectory)
            stick[name] = {"kind": "lower bound", "bound": info["bound"],
                           "reason": f"MPEC route: its complementarity law lets a stuck slot break away before "
                                     f"μ_s|λ| is reached, so it proves only {name} ≥ {info['bound']:.4g} (the largest "
                                     f"stick ratio |F|/|λ| of the solution); use method='shooting' for a point estimate"}
    free = np.array([not a for a in active])
    gradient, newton_step = stationarity(J, r, theta, free)
    if mpec_info is not None and np.all(np.isfinite(J)):
        # the exact model's Gauss–Newton step from the MPEC estimate: the estimate's discretization bias
        mpec_info["exact_step"] = gauss_newton_step(J, r, free).tolist()

    if auto_profile and mpec_info is None and np.all(np.isfinite(J)) and report["informative"] >= p:
        for k, name in enumerate(par.names):
            wide = not (np.isfinite(se[k]) and 0.5 * (wh[k] - wl[k]) <= par.theta_hi[k] - par.theta_lo[k])
            if name not in stick and name not in profile and np.isfinite(par.theta_hi[k] - par.theta_lo[k]) and \
                    (name in report["not_identifiable"] or active[k] or wide):
                profile.append(name)
                method_info.setdefault("auto_profiled", []).append(name)
    profiles = {}
    for name in profile:
        k = par.names.index(name)
        profiles[name] = profile_parameter(make_problem, par, theta, sse, s2 if np.isfinite(s2) else 1.0, k, se[k],
                                           ls_options, confidence, profile_steps)
    fits = []
    if sims_ok:
        preds = problem.predictions(trs)
        for e, tr, pr in zip(experiments, trs, preds):
            fits.append({"name": e.name, "t": e.t.tolist(), "outputs": list(e.outputs), "data": e.y.tolist(),
                         "predicted": pr.tolist(), "sigma": None if e.sigma is None else e.sigma.tolist(),
                         "events": [[float(ev.time), ev.kind.name, None if ev.slot is None else tr.slot_names[ev.slot]]
                                    for ev in tr.events[1:]], "status": tr.status.name})
    method_info.update(simulations=problem.simulations + sum(m.simulations for m in made),
                       seconds=time.perf_counter() - clock, jacobian_fallbacks=problem.fallbacks, best_start=int(best))
    out = IdentificationResult(
        names=par.names, optimum=theta, stderr=se, wald_low=wl, wald_high=wh, covariance=cov, correlation=corr,
        bounds=np.column_stack([par.theta_lo, par.theta_hi]), cost=0.5 * sse, n=r.size, sigma2=float(s2),
        known_noise=known_noise, converged=verdict == "converged", optimality=float(res.optimality),
        message=f"best start {best}: {verdict} ({res.message})", starts=table, identifiability=report, stick=stick, profiles=profiles, fits=fits,
        method=method_info, confidence=confidence, gradient=gradient, newton_step=newton_step,
        simulations_ok=sims_ok)
    if mpec_info is not None:
        out.model = model       # the solved Pyomo model (not saved with the result)
    return out
