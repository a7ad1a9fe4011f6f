"""One verdict per estimated parameter, from one rule; the table, the JSON and the exit status all read it.

The rule, in order (the first that applies decides):

1. **What stick phases prove** (:func:`~pympc.identify.uncertainty.stick_information`,
   computed from the simulation at the estimate): a kinetic coefficient of a slot
   that never slips, or a static one of a slot that never sticks nor reverses →
   ``not identifiable``; a static coefficient that is bounded only from one side
   (the slot sticks but never breaks away: μ_s ≥ X; it slips through velocity
   reversals without sticking: μ_s < X) → ``one-sided`` with that bound.
2. **Data**: fewer informative values (residuals whose Jacobian row is not zero) than
   parameters → ``not identifiable``.
3. **Profile likelihood**, where it was computed (asked for, ``result.profile(name)``, or
   automatically for a parameter that rules 4–6 would not call identified:
   ``Shooting(auto_profile=True)``, the default): bounded → ``identified`` with the
   profile interval; one-sided → ``one-sided`` (bounded below/above by the side that
   crossed); flat → ``not identifiable``.
4. **Rank**: a parameter in a flat direction of the weighted Jacobian →
   ``not identifiable``.
5. **Conditioning**: a Wald half-width wider than the parameter's box (its width, or
   |θ̂| when the box is unbounded) → ``not identifiable`` (the linearization says
   the data hardly constrain it).
6. At a bound of its box → ``at bound`` (a point estimate; the interval is cut at the bound).
7. Otherwise ``identified`` with the Wald interval.

Then the noise: when noise levels were stated and the weighted residuals are larger than
they allow (SSE above the 99.9 % quantile of χ² on n − p degrees of freedom), every
verdict that rests on σ (3–7) becomes ``unreliable``: the estimate is shown, no interval
is.  Residuals clearly smaller than stated (below the 0.1 % quantile) only make the
intervals conservative; the noise check says so and passes.

Only ``identified`` and ``at bound`` give a point estimate with an interval.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["verdict", "noise_test", "POINT", "STATUSES", "NOISE_RANGE"]

POINT = ("identified", "at bound")
"""Verdicts with a point estimate and an interval."""
STATUSES = ("identified", "at bound", "one-sided", "unreliable", "not identifiable")
"""Every verdict a parameter can get."""
NOISE_RANGE = (0.001, 0.999)
"""Quantiles of χ²(n − p) between which the weighted SSE must lie for the stated noise to stand."""


def noise_test(sse, n, p, known_noise):
    """``(passed, detail)``: do the weighted residuals agree with the stated noise (χ² on n − p degrees of freedom)?

    Passed trivially (and said so) when the noise is estimated or there are no degrees of freedom.
    """
    dof = n - p
    if not known_noise:
        return True, "σ estimated from the residuals (no noise stated)"
    if dof <= 0:
        return True, f"not testable: {n} value(s) for {p} parameter(s), no degrees of freedom"
    lo, hi = stats.chi2.ppf(NOISE_RANGE, dof)
    ratio = np.sqrt(sse / dof) if sse >= 0 else np.nan
    where = f"weighted SSE {sse:.4g} vs χ²({dof}) {100 * (NOISE_RANGE[1] - NOISE_RANGE[0]):.1f}% range [{lo:.4g}, {hi:.4g}]"
    if sse > hi or not np.isfinite(sse):
        return False, (f"{where}: the residuals do NOT match the stated noise, they are {ratio:.3g} times larger "
                       "(noise understated or model wrong): intervals from it would be too narrow")
    if sse < lo:
        return True, (f"{where}: the residuals are {ratio:.3g} times the stated noise, smaller than it: "
                      "the intervals are conservative (too wide)")
    return True, f"{where}: the residuals match the stated noise (RMS of residual/σ = {ratio:.3g})"


def verdict(r, k):
    """The verdict on parameter ``k`` of IdentificationResult ``r``: a dict.

    Keys: ``status`` (one of :data:`STATUSES`), ``reason``, ``estimate`` (NaN without a
    point estimate), ``low``/``high`` (the interval printed: profile, or Wald cut to the
    box; NaN where none is trustworthy), ``interval`` (``"profile"``, ``"wald"`` or
    ``""``), ``side`` and ``bound`` (for ``one-sided``: ``"below"``/``"above"`` and X),
    ``wald_low``/``wald_high`` (the Wald interval cut to the box where it is trustworthy, else NaN).
    """
    name = r.names[k]
    theta = float(r.optimum[k])
    lo_box, hi_box = (float(v) for v in r.bounds[k])
    nan = float("nan")
    out = {"status": "", "reason": "", "estimate": nan, "low": nan, "high": nan, "interval": "", "side": "",
           "bound": nan, "wald_low": nan, "wald_high": nan}

    def done(status, reason, **kw):
        out.update(status=status, reason=reason, **kw)
        return out

    rep = r.identifiability
    s = r.stick.get(name)
    if s is not None:
        if s["kind"] == "lower bound":
            return done("one-sided", s["reason"], side="below", bound=float(s["bound"]), low=float(s["bound"]),
                        high=hi_box)
        if s["kind"] == "upper bound":
            return done("one-sided", s["reason"], side="above", bound=float(s["bound"]), low=lo_box,
                        high=float(s["bound"]))
        return done("not identifiable", s["reason"])
    informative = rep.get("informative")
    if informative is not None and informative < r.p:
        return done("not identifiable", f"only {informative} informative value(s) (residuals that depend on the "
                                        f"parameters) for {r.p} parameter(s)")
    if not np.isfinite(theta):
        return done("not identifiable", rep.get("not_identifiable", {}).get(name, "no estimate"))
    noise_ok, noise_detail = noise_test(r.sse, r.n, r.p, r.known_noise)

    def sigma_based(status, reason, **kw):
        if not noise_ok:
            return done("unreliable", "the residuals contradict the stated noise, so no interval holds: "
                                      f"{noise_detail}; state the noise level the data have (or none, to estimate "
                                      "it)", estimate=theta)
        return done(status, reason, **kw)

    se = float(r.stderr[k])
    half = 0.5 * (float(r.wald_high[k]) - float(r.wald_low[k]))
    width = hi_box - lo_box if np.isfinite(hi_box - lo_box) else abs(theta)
    wald_ok = bool(np.isfinite(se) and half <= width) and name not in rep.get("not_identifiable", {})
    wald = dict(wald_low=max(float(r.wald_low[k]), lo_box), wald_high=min(float(r.wald_high[k]), hi_box)) \
        if wald_ok else {}
    prof = r.profiles.get(name)
    if prof is not None:
        a, b = prof["interval"]
        auto = " (profiled automatically: the Jacobian alone could not decide)" \
            if name in (r.method or {}).get("auto_profiled", ()) else ""
        if prof["kind"] == "bounded":
            return sigma_based("identified", "profile likelihood bounded on both sides" + auto, estimate=theta, low=a,
                               high=b, interval="profile", **wald)
        if prof["kind"] == "one-sided":
            side = "below" if prof["sides"]["lower"] == "crossed" else "above"
            bound = a if side == "below" else b
            return sigma_based("one-sided", f"profile likelihood crosses its threshold only {side} the estimate: "
                                            f"the data prove {name} {'≥' if side == 'below' else '≤'} {bound:.6g}"
                                            + auto,
                               side=side, bound=bound, low=a if side == "below" else lo_box,
                               high=b if side == "above" else hi_box)
        return sigma_based("not identifiable", "profile likelihood is flat on both sides within the bounds" + auto)
    why = rep.get("not_identifiable", {}).get(name)
    if why is not None:
        return done("not identifiable", why)
    if not wald_ok:
        sv = rep.get("singular_values") or [nan]
        return done("not identifiable", f"ill-conditioned: the data determine it only to ±{half:.3g}, wider than "
                                        + (f"its bounds [{lo_box:g}, {hi_box:g}]" if np.isfinite(hi_box - lo_box)
                                           else f"|{name}| = {abs(theta):.3g}")
                                        + f" (smallest relative singular value {min(sv):.2g}); profile it or add data")
    low, high = wald["wald_low"], wald["wald_high"]
    for n, side, v in rep.get("at_bound", []):
        if n == name:
            return sigma_based("at bound", f"at its {side} bound ({v:g}); the interval is cut there",
                               estimate=theta, low=low, high=high, interval="wald", **wald)
    return sigma_based("identified", "", estimate=theta, low=low, high=high, interval="wald", **wald)
