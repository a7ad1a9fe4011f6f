"""The result of an identification: estimates, intervals, checks, report; save/load; plots."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats

from ..errors import OptionError
from .shooting import GRADIENT_TOL, STEP_TOL, is_stationary

__all__ = ["IdentificationResult"]

_ARRAYS = ("optimum", "stderr", "wald_low", "wald_high", "covariance", "correlation", "bounds")


@dataclass
class IdentificationResult:
    """What :func:`~pympc.identify.estimate` found, and how sure it is.

    Attributes
    ----------
    names : list of str
        The estimated parameters, as the user named them.
    optimum : ndarray
        Where the best start ended (the least-squares optimum θ̂).
    stderr, wald_low, wald_high : ndarray
        Standard errors and Wald intervals at level ``confidence`` (inf where not identifiable).
    covariance, correlation : ndarray
    bounds : ndarray, shape (p, 2)
    cost : float
        ½ Σ r² of the weighted residuals at θ̂.
    n : int
        Number of measured values.
    sigma2 : float
        The residual variance used (1 with known noise, SSE/(n − p) otherwise).
    known_noise : bool
    converged : bool
        The best start's ``least_squares`` ended on a convergence criterion.
    optimality : float
        Its first-order optimality (gradient norm, bound-scaled).
    message : str
    starts : DataFrame
        One row per start: start and end values, cost, status, message, evaluations, time.
    identifiability : dict
        Singular values, flat directions, correlated pairs, parameters at a bound, not identifiable ones.
    stick : dict
        What stick phases allow to say about friction coefficients (see
        :func:`~pympc.identify.uncertainty.stick_information`).
    profiles : dict
        name → profile likelihood (values, deviance, interval, kind).
    fits : list of dict
        Per experiment: times, outputs, data, prediction at θ̂, noise, events.
    method : dict
        How the result was obtained (estimator, Jacobian, starts, seed, tolerances, versions).
    gradient, newton_step : float
        Stationarity at θ̂ (:func:`~pympc.identify.shooting.stationarity`): the relative
        gradient |Jᵀr|/(|J||r|) and the largest Gauss–Newton step relative to θ̂.
    """

    names: list
    optimum: np.ndarray
    stderr: np.ndarray
    wald_low: np.ndarray
    wald_high: np.ndarray
    covariance: np.ndarray
    correlation: np.ndarray
    bounds: np.ndarray
    cost: float
    n: int
    sigma2: float
    known_noise: bool
    converged: bool
    optimality: float
    message: str
    starts: object
    identifiability: dict
    stick: dict
    profiles: dict
    fits: list
    method: dict
    confidence: float = 0.95
    gradient: float = np.nan
    newton_step: float = np.nan
    simulations_ok: bool = True
    extra: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ verdicts
    @property
    def p(self):
        return len(self.names)

    @property
    def sse(self):
        return 2.0 * self.cost

    def status_of(self, name):
        """``"identified"``, ``"at bound"``, ``"one-sided"`` or ``"not identifiable"`` (with the reason)."""
        if name in self.stick:
            s = self.stick[name]
            return ("one-sided", s["reason"]) if s["kind"] == "lower bound" else ("not identifiable", s["reason"])
        if name in self.identifiability["not_identifiable"]:
            return "not identifiable", self.identifiability["not_identifiable"][name]
        for n, side, v in self.identifiability["at_bound"]:
            if n == name:
                return "at bound", f"at its {side} bound ({v:g}); the Wald interval ignores the bound"
        prof = self.profiles.get(name)
        if prof is not None and prof["kind"] != "bounded":
            return prof["kind"], f"profile likelihood is {prof['kind']} (sides: {prof['sides']})"
        return "identified", ""

    @property
    def estimates(self):
        """``{name: value}`` of the parameters with a point estimate (not the not-identifiable or one-sided ones)."""
        return {n: float(v) for n, v in zip(self.names, self.optimum)
                if self.status_of(n)[0] in ("identified", "at bound")}

    def checks(self):
        """Self-checks: name → (passed, detail)."""
        out = {"converged": (self.converged, self.message),
               "gradient": (is_stationary(self.gradient, self.newton_step),
                            f"relative gradient |Jᵀr|/(|J||r|) = {self.gradient:.2e} (≤ {GRADIENT_TOL:g}) or "
                            f"Gauss–Newton step {self.newton_step:.1e} of the parameters (≤ {STEP_TOL:g})" +
                            (f"; first-order optimality {self.optimality:.2e}" if np.isfinite(self.optimality) else "")),
               "simulations": (self.simulations_ok, "every simulation at the optimum reached the last data time"
                               if self.simulations_ok else "a simulation at the optimum failed")}
        dof = self.n - self.p
        if self.known_noise and dof > 0:
            lo, hi = stats.chi2.ppf([0.001, 0.999], dof)
            out["noise"] = (bool(lo <= self.sse <= hi), f"weighted SSE {self.sse:.4g} vs χ²({dof}) 99.8% range "
                                                        f"[{lo:.4g}, {hi:.4g}]: the residuals "
                                                        f"{'match' if lo <= self.sse <= hi else 'do NOT match'} the stated noise")
        else:
            out["noise"] = (True, f"σ estimated from the residuals: σ̂ = {np.sqrt(self.sigma2):.4g}")
        st = self.starts
        if st is not None and len(st):
            at = int(st["at_best"].sum())
            failed = int((st["status"] == "failed").sum())
            out["multistart"] = (True, f"{at} of {len(st)} starts reached the best cost; {failed} failed")
        mp = self.method.get("mpec") if isinstance(self.method, dict) else None
        if mp:
            better = mp.get("improved", True)
            out["mpec"] = (bool(mp["verified"] and better),
                           ("" if better else f"the local solution fits clearly WORSE than the start (exact-model cost "
                                              f"{self.cost:.4g} > {mp['start_cost']:.4g}); ") +
                           f"{mp['solution_status']} ({mp['termination']}); time-stepping rows "
                                                 f"violated by {mp['dynamics_residual']:.2e}, complementarity residual "
                                                 f"{mp['complementarity_residual']:.2e}; step {min(mp['step']):.4g} s")
            d = mp.get("exact_step")
            if d is not None:
                # the bias of the step against the statistical uncertainty (only where there is a point estimate)
                est = [k for k, n in enumerate(self.names) if np.isfinite(self.stderr[k]) and
                       self.status_of(n)[0] in ("identified", "at bound")]
                within = all(abs(d[k]) <= self.stderr[k] for k in est)
                out["discretization"] = (within, "the exact model's Gauss–Newton step from the MPEC estimate (its "
                                         "discretization bias, O(step)): " +
                                         ", ".join(f"{self.names[k]} {d[k]:+.2g} ({abs(d[k]) / self.stderr[k]:.2g} "
                                                   "stderr)" for k in est) +
                                         ("" if within else "; larger than a standard error: the intervals do not "
                                          "hold at this step; halve the step or use method='shooting'"))
            out["gradient"] = (True, f"not applicable: the exact model's relative gradient at the MPEC estimate is "
                                     f"{self.gradient:.2e} (Gauss–Newton step {self.newton_step:.1e}), the MPEC's "
                                     "discretization error, O(h); the MPEC's own optimality is check mpec")
        bad = [n for n in self.names if self.status_of(n)[0] not in ("identified", "at bound")]
        out["identifiable"] = (not bad, "all parameters have a point estimate" if not bad else
                               "; ".join(f"{n}: {self.status_of(n)[0]}" for n in bad))
        return out

    @property
    def ok(self):
        """Converged, first-order optimal (for the MPEC route: its answer verified, and its discretization bias
        within a standard error) and simulated to the end."""
        c = self.checks()
        keys = ("mpec", "discretization") if "mpec" in c else ("gradient",)
        return all(c[k][0] for k in ("converged", "simulations") + keys if k in c)

    # ------------------------------------------------------------------ tables
    def table(self):
        """Estimates with intervals as a DataFrame (one row per parameter)."""
        import pandas as pd

        rows = []
        for k, n in enumerate(self.names):
            status, why = self.status_of(n)
            point = status in ("identified", "at bound")
            prof = self.profiles.get(n)
            rows.append({"parameter": n, "estimate": self.optimum[k] if point else np.nan,
                         "stderr": self.stderr[k] if point else np.nan,
                         "wald_low": self.wald_low[k] if point else np.nan,
                         "wald_high": self.wald_high[k] if point else np.nan,
                         "profile_low": prof["interval"][0] if prof else np.nan,
                         "profile_high": prof["interval"][1] if prof else np.nan,
                         "lower_bound_only": self.stick[n]["bound"] if n in self.stick else np.nan,
                         "status": status, "note": why})
        return pd.DataFrame(rows).set_index("parameter")

    def residuals(self):
        """Residuals per experiment and output: n, RMS, largest |r|, RMS/σ."""
        import pandas as pd

        rows = []
        for f in self.fits:
            pred, data = np.asarray(f["predicted"]), np.asarray(f["data"])
            for j, o in enumerate(f["outputs"]):
                r = pred[:, j] - data[:, j]
                rms = float(np.sqrt(np.mean(r ** 2)))
                sig = f["sigma"][j] if f["sigma"] is not None else np.nan
                rows.append({"experiment": f["name"], "output": o, "n": len(r), "rms": rms,
                             "max_abs": float(np.abs(r).max()), "rms_over_sigma": rms / sig})
        return pd.DataFrame(rows)

    def summary(self):
        """How the result was obtained, the estimates, the checks and the identifiability report."""
        m = self.method
        pct = int(round(100 * self.confidence))
        mp = m.get("mpec")
        how = (f"a Pyomo MPEC solved by pympc.ipopt (step {min(mp['step']):.4g} s, {sum(mp['steps'])} steps; "
               f"{m['jacobian']} Jacobian of the exact model at its estimate for the covariance)" if mp else
               f"({m['jacobian']} Jacobian), scipy.optimize.least_squares (trf, bounds), {m['starts']} start(s) "
               f"(seed {m['seed']})")
        lines = [f"identification by {m['method']} {how}, {m['experiments']} experiment(s), "
                 f"n = {self.n} values, p = {self.p}",
                 f"cost ½Σr² = {self.cost:.6g}; σ² {'known (weights 1/σ)' if self.known_noise else 'estimated'} "
                 f"= {self.sigma2:.4g}; {m.get('simulations', '?')} simulations in {m.get('seconds', np.nan):.1f} s"]
        if m.get("reparametrized"):
            lines.append("fitted internally as " + ", ".join(m["reparametrized"]) + " (≥ 0)")
        lines.append("")
        head = f"{'parameter':12s} {'estimate':>12s} {'stderr':>10s}  {pct}% Wald interval          {'profile':28s} status"
        lines.append(head)
        for n, row in self.table().iterrows():
            prof = self.profiles.get(n)
            ptxt = (f"[{row.profile_low:.5g}, {row.profile_high:.5g}] {prof['kind']}" if prof else "")
            if row.status in ("identified", "at bound"):
                lines.append(f"{n:12s} {row.estimate:12.6g} {row.stderr:10.3g}  [{row.wald_low:10.6g}, "
                             f"{row.wald_high:10.6g}]  {ptxt:28s} {row.status}")
            else:
                lines.append(f"{n:12s} {'—':>12s} {'':10s}  {'':26s} {ptxt:28s} {row.status}: {row.note}")
        lines.append("")
        for k, (ok, detail) in self.checks().items():
            lines.append(f"check {k:14s} {'ok  ' if ok else 'FAIL'} {detail}")
        rep = self.identifiability
        lines.append("singular values (relative, scaled Jacobian): " + ", ".join(f"{v:.3g}" for v in rep["singular_values"]))
        for a, b, r in rep["correlated"]:
            lines.append(f"strongly correlated: {a} and {b} (ρ = {r:+.3f})")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()

    def __repr__(self):
        est = ", ".join(f"{n}={v:.6g}" for n, v in self.estimates.items())
        return f"IdentificationResult({est}; cost={self.cost:.4g}, {'ok' if self.ok else 'NOT ok'})"

    # ------------------------------------------------------------------ save / load
    def save(self, path):
        """Write the result as JSON (arrays as lists; the starts table as records)."""
        d = asdict(self)
        for k in _ARRAYS:
            d[k] = np.asarray(getattr(self, k), dtype=float).tolist()
        d["starts"] = None if self.starts is None else self.starts.to_dict(orient="split")
        Path(path).write_text(json.dumps(_clean(d), indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path):
        """Read a result written by :meth:`save`."""
        import pandas as pd

        try:
            d = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise OptionError(f"{path}: not a pympc identification result ({exc})") from None
        d = _unclean(d)
        for k in _ARRAYS:
            d[k] = np.asarray(d[k], dtype=float)
        if d["starts"] is not None:
            st = d["starts"]
            d["starts"] = pd.DataFrame(st["data"], columns=st["columns"], index=st["index"])
        try:
            return cls(**d)
        except TypeError as exc:
            raise OptionError(f"{path}: not a pympc identification result ({exc})") from None

    # ------------------------------------------------------------------ plots
    def plot_fit(self, **kw):
        """Fit vs data per output, event times marked (a matplotlib Figure)."""
        from .plots import plot_fit
        return plot_fit(self, **kw)

    def plot_residuals(self, **kw):
        """Residuals per output over time (a matplotlib Figure)."""
        from .plots import plot_residuals
        return plot_residuals(self, **kw)

    def plot_profiles(self, **kw):
        """Profile likelihoods with the χ²₁ threshold (a matplotlib Figure)."""
        from .plots import plot_profiles
        return plot_profiles(self, **kw)

    def plot_region(self, a=None, b=None, **kw):
        """The pairwise Wald confidence region of ``a`` and ``b`` with the multistart end points."""
        from .plots import plot_region
        return plot_region(self, a, b, **kw)

    def write_plots(self, out_dir):
        """Write every plot as PNG into ``out_dir``; returns the paths."""
        from .plots import write_plots
        return write_plots(self, out_dir)


def _clean(v):
    """JSON-ready: non-finite floats as strings, numpy scalars as Python numbers."""
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, np.ndarray):
        return _clean(v.tolist())
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        v = float(v)
        return v if np.isfinite(v) else {"__float__": repr(v)}
    return v


def _unclean(v):
    if isinstance(v, dict):
        if set(v) == {"__float__"}:
            return float(v["__float__"])
        return {k: _unclean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_unclean(x) for x in v]
    return v
