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
from .options import METHODS, resolve
from .uncertainty import covariance, identifiability, informative_values, stick_information, wald

__all__ = ["estimate", "METHODS"]


def estimate(experiments, parameters, method="shooting", *, confidence=0.95, profile=(), **options):
    """Estimate model parameters from measured experiments.

    Parameters
    ----------
    experiments : Experiment or list of Experiment
        Fitted jointly (the parameters are shared; each experiment has its own fixed values).
    parameters : str, Parameter, or list of them
        What to estimate (``"mu,mu_s"`` or ``[Parameter("mu", bounds=(0.05, 1)), ...]``).
        When the kinetic and the static coefficient of a slot are both fitted,
        the fit works in μ and Δ = μ_s − μ ≥ 0.
    method : "shooting", "mpec", "fesd", Shooting, Mpec or Fesd
        A name (every option at its default) or an options object, as in
        :func:`scipy.optimize.minimize`: :class:`~pympc.identify.Shooting` (default:
        event-driven simulations fitted by ``scipy.optimize.least_squares``, multistart,
        profiles), :class:`~pympc.identify.Mpec` (the whole trajectory as one Pyomo
        MPEC, first-order time stepping: the estimate is O(step) off the exact model's;
        one start, no profiles; the Pyomo model is ``result.model``) or
        :class:`~pympc.identify.Fesd` (the switch-detecting Radau IIA trajectory model,
        verified by simulation at the estimate; one start, no profiles; ``result.model``).
        Each class lists its options, their defaults and where the defaults come from.
        Every method ends with the same analysis: covariance and identifiability from the
        exact model's Jacobian at the estimate.
    confidence : float
        Level of the Wald and profile intervals (default 0.95); another level afterwards:
        :meth:`IdentificationResult.confidence_intervals`.
    profile : str or list of str
        Parameters to profile once the fit is done (likelihood profile, χ²₁ at
        ``confidence``): the same as calling :meth:`IdentificationResult.profile` for each
        (method ``"shooting"`` only: a profile refits by shooting).
    **options
        Deprecated (removed in the next release): the options of the method as keywords
        (``starts=8``, ``jac="fd"``, ``step=0.01``, ...).  They still work, with a
        ``DeprecationWarning`` giving the new spelling (``method=Shooting(starts=8)``);
        one of another method than ``method`` is an error naming where it belongs.

    Returns
    -------
    IdentificationResult

    Raises
    ------
    OptionError
        Unknown method, bad options (named with their class), unknown parameters, bad
        bounds or starts; an option of another method; ``profile`` with method
        ``"mpec"``; a model or output the MPEC does not cover.
    """
    opts = resolve(method, options)
    method = opts.name
    if isinstance(experiments, Experiment):
        experiments = [experiments]
    experiments = list(experiments)
    if not experiments or not all(isinstance(e, Experiment) for e in experiments):
        raise OptionError("experiments must be a pympc.identify.Experiment or a list of them")
    profile = [profile] if isinstance(profile, str) else list(profile or ())
    if method in ("mpec", "fesd") and profile:
        raise OptionError(f"profile is a question for method='shooting': method='{method}' solves once from the "
                          "initial values (a profile refits by shooting); use method=Shooting() to profile")
    confidence = as_number(confidence, "confidence")
    if not 0 < confidence < 1:
        raise OptionError(f"confidence must be in (0, 1), got {confidence}")
    known = [e.sigma is not None for e in experiments]
    if any(known) and not all(known):
        raise OptionError("noise levels are given for some experiments and not others; give them for all or none")
    known_noise = all(known)
    clock = time.perf_counter()
    par = Parametrization(parameters, experiments)
    for name in profile:
        if name not in par.names:
            raise OptionError(f"profile: {name!r} is not an estimated parameter ({par.names})")

    jac = dict(jac=opts.jac, fd_step=opts.fd_step, fd_scheme=opts.fd_scheme)
    problem = ShootingProblem(experiments, par, **jac)
    mpec_info = fesd_info = None
    if method == "fesd":
        from .fesd_fit import fit_experiments

        points = [par.z0]
        rows, results, fesd_fit = fit_experiments(experiments, par, opts)
        model, fesd_info = fesd_fit.model, fesd_fit.as_dict()
        ls_options, seed, include_initial = None, None, True
    elif method == "mpec":
        from .mpec_route import fit_mpec

        points = [par.z0]
        rows, results, mpec_fit = fit_mpec(experiments, par, step=opts.step, relaxation=opts.relaxation,
                                           static_penalty=opts.static_penalty, time_limit=opts.time_limit)
        model, mpec_info = mpec_fit.model, mpec_fit.as_dict()
        ls_options, seed, include_initial = None, None, True
    else:
        ls_options, seed, include_initial = opts.least_squares, opts.seed, opts.include_initial
        points = par.starts(opts.starts, seed=seed, include_initial=include_initial)
        rows, results = fit_starts(problem, points, ls_options)

    import pandas as pd

    table = pd.DataFrame(rows)
    finite = [k for k, r in enumerate(results) if r is not None and np.isfinite(r.cost)]
    method_info = {"method": method, "options": opts.options(), "jacobian": opts.jac, "starts": len(points),
                   "seed": seed, "include_initial": include_initial, "experiments": len(experiments),
                   "fd": {"step": problem.fd_step, "scheme": opts.fd_scheme} if opts.jac == "fd" else None,
                   "least_squares": ls_options, "reparametrized": [f"{par.names[i]}, {par.z_names()[j]}"
                                                                   for i, j in par.pairs],
                   "scipy": scipy.__version__, "pympc": __version__, "models": sorted({str(e.model) for e in experiments}),
                   "fixed": {e.name: e.fixed for e in experiments}}
    if mpec_info is not None:
        method_info["mpec"] = mpec_info
        del method_info["least_squares"]
    if fesd_info is not None:
        method_info["fesd"] = fesd_info
        del method_info["least_squares"]
    route_info = mpec_info if mpec_info is not None else fesd_info   # a route that solves once, not shooting
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
        if route_info is not None:
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
    if route_info is not None:  # a verified MPEC/FESD point is a local solution: not clearly worse than its start
        r0 = problem.residual(par.z0)
        c0 = route_info["start_cost"] = 0.5 * float(r0 @ r0)
        # clearly worse: by 5 % of the start's cost, and (known noise) by more than a 99 % likelihood-ratio margin
        slack = 0.05 * c0 + (0.5 * float(chi2.ppf(0.99, p)) if known_noise else 0.0)
        route_info["improved"] = bool(0.5 * sse <= c0 + slack)
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
        if name not in stick:   # the time-stepping law proves μ_s only from below (pympc.identify.mpec_model)
            stick[name] = {"kind": "lower bound", "bound": info["bound"],
                           "reason": f"MPEC route: its complementarity law lets a stuck slot break away before "
                                     f"μ_s|λ| is reached, so it proves only {name} ≥ {info['bound']:.4g} (the largest "
                                     f"stick ratio |F|/|λ| of the solution); use method='shooting' for a point estimate"}
    free = np.array([not a for a in active])
    gradient, newton_step = stationarity(J, r, theta, free)
    if route_info is not None and np.all(np.isfinite(J)):
        # the exact model's Gauss–Newton step from the MPEC/FESD estimate: the estimate's discretization bias
        route_info["exact_step"] = gauss_newton_step(J, r, free).tolist()

    if method == "shooting" and opts.auto_profile and np.all(np.isfinite(J)) and report["informative"] >= p:
        for k, name in enumerate(par.names):
            wide = not (np.isfinite(se[k]) and 0.5 * (wh[k] - wl[k]) <= par.theta_hi[k] - par.theta_lo[k])
            if name not in stick and name not in profile and np.isfinite(par.theta_hi[k] - par.theta_lo[k]) and \
                    (name in report["not_identifiable"] or active[k] or wide):
                profile.append(name)
                method_info.setdefault("auto_profiled", []).append(name)
    fits = []
    if sims_ok:
        preds = problem.predictions(trs)
        for e, tr, pr in zip(experiments, trs, preds):
            fits.append({"name": e.name, "t": e.t.tolist(), "outputs": list(e.outputs), "data": e.y.tolist(),
                         "predicted": pr.tolist(), "sigma": None if e.sigma is None else e.sigma.tolist(),
                         "events": [[float(ev.time), ev.kind.name, None if ev.slot is None else tr.slot_names[ev.slot]]
                                    for ev in tr.events[1:]], "status": tr.status.name})
    method_info.update(simulations=problem.simulations, seconds=time.perf_counter() - clock,
                       jacobian_fallbacks=problem.fallbacks, best_start=int(best))
    out = IdentificationResult(
        names=par.names, optimum=theta, stderr=se, wald_low=wl, wald_high=wh, covariance=cov, correlation=corr,
        bounds=np.column_stack([par.theta_lo, par.theta_hi]), cost=0.5 * sse, n=r.size, sigma2=float(s2),
        known_noise=known_noise, converged=verdict == "converged", optimality=float(res.optimality),
        message=f"best start {best}: {verdict} ({res.message})", starts=table, identifiability=report, stick=stick, profiles={}, fits=fits,
        method=method_info, confidence=confidence, gradient=gradient, newton_step=newton_step,
        simulations_ok=sims_ok)
    if route_info is not None:
        out.model = model       # the solved Pyomo model (not saved with the result)
        return out
    out.attach_refits(Refits(experiments, par, opts))
    for name in profile:        # asked for, and the automatic ones
        out.profile(name)
    method_info["seconds"] = time.perf_counter() - clock
    return out


class Refits:
    """What :meth:`IdentificationResult.profile` needs to refit a shooting estimate with a parameter held.

    The experiments, the parametrization and the :class:`~pympc.identify.Shooting`
    options of the fit (its Jacobian and ``least_squares`` tolerances, ``profile_steps``);
    kept with the result in memory, not saved with it.
    """

    def __init__(self, experiments, par, options):
        self.experiments, self.par, self.options = experiments, par, options
        self._done, self._current = 0, None

    @property
    def simulations(self):
        """Simulations run by the refits so far."""
        return self._done + (self._current.simulations if self._current is not None else 0)

    def problem(self, specs, fixed=None):
        """A :class:`ShootingProblem` for ``specs`` with ``fixed`` held (the previous one is let go)."""
        self._done = self.simulations
        o = self.options
        self._current = ShootingProblem(self.experiments, Parametrization(specs, self.experiments, fixed=fixed),
                                        jac=o.jac, fd_step=o.fd_step, fd_scheme=o.fd_scheme)
        return self._current
