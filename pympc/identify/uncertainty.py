"""How sure an estimate is: covariance, Wald intervals, profiles, identifiability.

* Covariance σ²(JᵀJ)⁻¹ from the weighted Jacobian at the optimum, with σ² = 1
  when every noise level is known and SSE/(n − p) otherwise; computed by an SVD of
  the column-scaled Jacobian, so a flat direction gives infinite variances, not
  round-off.
* Wald intervals θ̂ ± q·se (normal quantile with known noise, Student t with n − p
  degrees of freedom otherwise).
* Profile likelihood: the parameter is held at values stepping out from θ̂, the
  others refitted; the interval is where (SSE(c) − SSE*)/σ² stays below the χ²₁
  quantile (a crossing is bisected while the deviance jumps past twice the
  threshold — an event appearing — then interpolated linearly); classified ``bounded`` (crossed on both sides), ``one-sided`` (on one)
  or ``flat`` (on neither).
* Identifiability: small singular values (flat directions and the parameters in
  them), strongly correlated pairs, parameters at a bound, and the friction
  information of stick phases (a slot that sticks but never breaks away proves
  only μ_s ≥ max|F|/|λ|; a slot that never slips says nothing about μ).
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.optimize import least_squares

from ..errors import PympcError

__all__ = ["covariance", "wald", "identifiability", "stick_information", "profile_parameter", "informative_values",
           "FLAT_TOL", "CORRELATION_TOL"]

FLAT_TOL = 1e-6
"""Singular values of the column-scaled Jacobian below this fraction of the largest are flat directions."""
CORRELATION_TOL = 0.95
"""Pairs with |correlation| above this are reported."""


def _svd(J, theta):
    """Singular values (p of them: zeros where n < p) and right singular vectors of the column-scaled J."""
    scale = np.maximum(np.abs(theta), 1e-8)
    p = J.shape[1]
    if J.shape[0] == 0:
        return np.zeros(p), np.eye(p), scale
    U, s, Vt = np.linalg.svd(J * scale, full_matrices=True)
    return np.concatenate([s, np.zeros(p - s.size)]), Vt, scale


def informative_values(J):
    """How many residuals depend on the parameters: rows of J not zero (above 1e-9 of the largest row norm)."""
    J = np.asarray(J, float)
    if J.size == 0 or not np.all(np.isfinite(J)):
        return int(J.shape[0]) if J.ndim == 2 else 0
    norms = np.linalg.norm(J, axis=1)
    top = norms.max(initial=0.0)
    return int(np.sum(norms > 1e-9 * top)) if top > 0 else 0


def covariance(J, sse, n, theta, known_noise):
    """(covariance, σ², flat) of the estimate from the weighted Jacobian J = ∂r/∂θ (n × p).

    ``flat`` lists the rows of Vᵀ (directions in scaled parameters) whose singular
    value is below :data:`FLAT_TOL` of the largest; parameters with a visible component
    in one of them get an infinite variance.
    """
    p = J.shape[1]
    dof = n - p
    s2 = 1.0 if known_noise else (sse / dof if dof > 0 else np.nan)
    s, Vt, scale = _svd(J, theta)
    smax = s.max(initial=0.0)
    good = s > FLAT_TOL * smax if smax > 0 else np.zeros_like(s, dtype=bool)
    inv = np.where(good, 1.0 / np.where(good, s, 1.0) ** 2, 0.0)
    cov = s2 * (Vt.T * inv) @ Vt * np.outer(scale, scale)
    flat = [Vt[k] for k in range(len(s)) if not good[k]]
    if smax == 0:
        flat = list(np.eye(p))
    for v in flat:
        hit = np.abs(v) > 0.1
        cov[hit, :] = np.nan
        cov[:, hit] = np.nan
        cov[hit, hit] = np.inf
    return cov, s2, s / smax if smax > 0 else s, flat


def wald(theta, cov, n, known_noise, confidence=0.95):
    """Standard errors and (lower, upper) Wald intervals."""
    se = np.sqrt(np.diag(cov))
    q = stats.norm.ppf(0.5 + confidence / 2) if known_noise or n <= len(theta) else \
        stats.t.ppf(0.5 + confidence / 2, n - len(theta))
    return se, theta - q * se, theta + q * se


def identifiability(names, theta, cov, flat, svals, active):
    """The identifiability report (a dict of plain lists, JSON-ready).

    ``active`` marks the parameters whose fit coordinate ended at a bound (for a
    reparametrized μ_s that is μ_s − μ at 0, i.e. μ_s = μ).
    """
    rep = {"singular_values": [float(v) for v in svals], "flat_directions": [], "correlated": [],
           "at_bound": [], "not_identifiable": {}}
    for v in flat:
        comp = {n: float(c) for n, c in zip(names, v) if abs(c) > 0.1}
        rep["flat_directions"].append(comp)
        for n in comp:
            rep["not_identifiable"][n] = ("no information in the data (zero sensitivity)" if len(comp) == 1 else
                                          "flat direction: only the combination " +
                                          " + ".join(f"{c:.3g}·{k}" for k, c in comp.items()) + " is determined")
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.diag(cov))
        corr = cov / np.outer(sd, sd)
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if np.isfinite(corr[i, j]) and abs(corr[i, j]) > CORRELATION_TOL:
                rep["correlated"].append([names[i], names[j], float(corr[i, j])])
    for k, n in enumerate(names):
        if active[k]:
            rep["at_bound"].append([n, active[k], float(theta[k])])
    return rep, corr


def stick_information(problem, trajectories, names, z=None):
    """What stick phases say about the friction coefficients being fitted.

    Returns
    -------
    dict
        name → {"kind": "lower bound" | "upper bound" | "none", "bound": float, "reason": str}:

        * a static coefficient of a slot that sticks but never breaks away in any
          experiment is bounded below by max|F|/|λ| over its stick samples (the
          simulated states at the data times);
        * a static coefficient of a slot that never sticks but slips through velocity
          reversals is bounded above: a larger μ_s would have made it stick at a
          reversal.  The bound is the smallest μ_s at which the simulation at the
          estimate (``z``; the other parameters held) sticks, found by bisection
          (:func:`static_upper_bound`); without ``z``, or when even the box's upper
          bound does not stick, or without reversals, the coefficient is not informed;
        * a kinetic coefficient of a slot that never slips is not informed at all.
    """
    out = {}
    per_slot = {}
    for e, tr in zip(problem.experiments, trajectories):
        for slot, mu, mus in e.friction_pairs:
            if slot not in tr.slot_names:
                continue
            k = tr.slot_names.index(slot)
            info = per_slot.setdefault(slot, {"mu": mu, "mu_s": mus, "slip": False, "stick": False,
                                             "breakaway": False, "ratio": 0.0, "reversals": 0})
            m = tr.motions[:, k]
            info["slip"] |= bool(np.any(m != 0))
            stick = m == 0
            info["stick"] |= _sticks(tr, k)
            if stick.any():
                lam, F = np.abs(tr.normal_force[stick, k]), np.abs(tr.friction_force[stick, k])
                ok = lam > 1e-12 * max(1.0, lam.max(initial=0))
                if ok.any():
                    info["ratio"] = max(info["ratio"], float((F[ok] / lam[ok]).max()))
            info["breakaway"] |= any(ev.kind.name == "BREAKAWAY" and ev.slot == k for ev in tr.events)
            info["reversals"] += sum(ev.kind.name == "SLIP_STOP" and ev.slot == k for ev in tr.events)
    for slot, info in per_slot.items():
        if info["mu"] in names and not info["slip"]:
            out[info["mu"]] = {"kind": "none", "bound": np.nan,
                               "reason": f"slot {slot!r} never slips: the motion does not depend on its kinetic coefficient"}
        static = info["mu_s"] or info["mu"]
        if static in names and info["stick"] and not info["breakaway"] and not (static == info["mu"] and info["slip"]):
            out[static] = {"kind": "lower bound", "bound": info["ratio"],
                           "reason": f"bounded below: slot {slot!r} sticks but never breaks away, so the data prove "
                                     f"only {static} ≥ max|F|/|λ| = {info['ratio']:.6g}"}
        elif info["mu_s"] in names and not info["stick"]:
            name = info["mu_s"]
            bound = static_upper_bound(problem, z, name, slot) if z is not None and info["reversals"] else None
            if bound is not None:
                out[name] = {"kind": "upper bound", "bound": bound,
                             "reason": f"bounded above: slot {slot!r} never sticks though its slip velocity reverses "
                                       f"{info['reversals']} time(s); with {name} ≥ {bound:.6g} it would stick at a "
                                       f"reversal, so the data prove {name} < {bound:.6g}"}
            else:
                out[name] = {"kind": "none", "bound": np.nan,
                             "reason": f"slot {slot!r} never sticks" +
                                       (" and never reverses" if not info["reversals"] else
                                        ", not even with the static coefficient at its upper bound") +
                                       ": the motion does not depend on its static coefficient"}
    return out


def _sticks(tr, k):
    """Does slot ``k`` stick anywhere in trajectory ``tr`` (at a sample or in a mode between events)?"""
    return bool(np.any(tr.motions[:, k] == 0)) or any(
        ev.mode_after is not None and int(ev.mode_after.motions[k]) == 0 for ev in tr.events)


def static_upper_bound(problem, z, name, slot, rtol=1e-4):
    """The smallest static coefficient ``name`` at which slot ``slot`` sticks, the others at ``z``; None if none.

    Bisection between the estimate (which never sticks) and the upper bound of
    ``name``'s box: sticking is monotone in μ_s (the trajectory is unchanged until
    the first reversal whose stick ratio |F|/|λ| is within reach).  A simulation that
    fails ends the bisection (the bound found so far is still proven).
    """
    from .experiment import simulate_experiment

    par = problem.par
    k = par.names.index(name)
    values = par.values(z)
    lo = float(values[name])
    hi = float(par.theta_hi[k])
    if not np.isfinite(hi) or hi <= lo:
        return None

    def sticks(c):
        vals = {**values, name: c}
        for e in problem.experiments:
            tr = simulate_experiment(e, vals)
            problem.simulations += 1
            if slot in tr.slot_names and _sticks(tr, tr.slot_names.index(slot)):
                return True
        return False

    try:
        if not sticks(hi):
            return None
        while hi - lo > rtol * max(abs(hi), 1e-3):
            mid = 0.5 * (lo + hi)
            if sticks(mid):
                hi = mid
            else:
                lo = mid
    except PympcError:
        pass
    return float(hi)


def profile_parameter(make_problem, par, theta_hat, sse_hat, s2, k, se, ls_options, confidence=0.95, max_steps=6,
                      refine=5):
    """Profile likelihood of parameter ``k`` (index in ``par.names``).

    ``make_problem(specs, fixed)`` builds a ShootingProblem for the other
    parameters with ``fixed`` held.  Returns a JSON-ready dict: ``values``,
    ``deviance`` ((SSE − SSE*)/σ²), ``threshold``, ``interval`` (inf or the box
    bound on an open side), ``kind`` (bounded / one-sided / flat), ``sides``.
    """
    name = par.names[k]
    thr = float(stats.chi2.ppf(confidence, 1))
    lo, hi = par.theta_lo[k], par.theta_hi[k]
    width = hi - lo if np.isfinite(hi - lo) else max(1.0, abs(theta_hat[k]))
    h0 = se if np.isfinite(se) and se > 0 else 0.05 * width
    h0 = min(max(h0, 1e-6 * width), 0.25 * width)
    points = [(float(theta_hat[k]), 0.0)]
    sides, ends = {}, {}
    start0 = dict(zip(par.names, map(float, theta_hat)))
    for sign, edge in ((-1, lo), (1, hi)):
        start, c, h = dict(start0), float(theta_hat[k]), h0
        prev_c, prev_d = c, 0.0
        sides[sign], ends[sign] = "open", edge
        for _ in range(max_steps):
            c_new = c + sign * h
            at_edge = (c_new <= lo) if sign < 0 else (c_new >= hi)
            c_new = min(max(c_new, lo), hi)
            if c_new == c:          # already at the box bound
                sides[sign] = "bound"
                break
            c = c_new
            d, start = _profile_point(make_problem, par, name, c, start, sse_hat, s2, ls_options)
            points.append((c, d))
            if not np.isfinite(d) or d >= thr:
                # bisect while the profile jumps (an event appears or goes) or the simulation fails
                a, da, b, db = prev_c, prev_d, c, d
                for _ in range(refine):
                    if np.isfinite(db) and db <= 2 * thr:
                        break
                    mid = 0.5 * (a + b)
                    dm, start = _profile_point(make_problem, par, name, mid, start, sse_hat, s2, ls_options)
                    points.append((mid, dm))
                    if not np.isfinite(dm) or dm >= thr:
                        b, db = mid, dm
                    else:
                        a, da = mid, dm
                if np.isfinite(db):
                    ends[sign] = a + (thr - da) / (db - da) * (b - a) if db > da else b
                    sides[sign] = "crossed"
                else:
                    ends[sign] = a
                    sides[sign] = "failed"
                break
            prev_c, prev_d = c, d
            if at_edge:
                sides[sign] = "bound"
                ends[sign] = edge
                break
            if d < thr / 4:
                h *= 2
        else:
            ends[sign] = -np.inf if sign < 0 else np.inf
    crossed = [s for s in sides.values() if s == "crossed"]
    kind = {2: "bounded", 1: "one-sided", 0: "flat"}[len(crossed)]
    points.sort()
    return {"name": name, "values": [p[0] for p in points], "deviance": [p[1] for p in points],
            "threshold": thr, "interval": [float(ends[-1]), float(ends[1])], "kind": kind,
            "sides": {"lower": sides[-1], "upper": sides[1]}}


def _profile_point(make_problem, par, name, value, start, sse_hat, s2, ls_options):
    specs, fixed = par.without(name, value, start)
    try:
        if not specs:
            prob = make_problem(specs, fixed)
            r = prob.residual(np.zeros(0))
            sse, new = float(r @ r), start
        else:
            prob = make_problem(specs, fixed)
            res = least_squares(prob.residual, prob.par.z0, jac=prob.jacobian, bounds=(prob.par.lo, prob.par.hi),
                                method="trf", x_scale="jac", **ls_options)
            sse = 2 * float(res.cost)
            new = {**start, **dict(zip(prob.par.names, map(float, prob.par.theta(res.x))))}
    except (PympcError, ValueError, np.linalg.LinAlgError):
        return np.inf, start
    return (sse - sse_hat) / s2 if np.isfinite(sse) else np.inf, new
