"""The result of an identification: estimates, intervals, checks, report; save/load; plots; and the questions
asked of it afterwards, :meth:`IdentificationResult.profile` and :meth:`IdentificationResult.confidence_intervals`."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from ..errors import OptionError
from .shooting import GRADIENT_TOL, STEP_TOL, is_stationary
from .parameters import as_number
from .uncertainty import profile_parameter, wald
from .verdict import POINT, noise_test, verdict

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
        name → profile likelihood (values, deviance, interval, kind) at level ``confidence``:
        those asked for (:meth:`profile`, ``estimate(..., profile=[...])``) and the automatic ones.
    fits : list of dict
        Per experiment: times, outputs, data, prediction at θ̂, noise, events.
    method : dict
        How the result was obtained (the method's name, its ``options`` — the fields of
        :class:`~pympc.identify.Shooting` or :class:`~pympc.identify.Mpec` —, Jacobian, starts,
        seed, tolerances, versions).
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

    _refits = None      # what a profile refits with (the shooting route, in memory; not saved)

    # ------------------------------------------------------------------ uncertainty
    def attach_refits(self, refits):
        """Keep what :meth:`profile` refits with (``estimate`` does this for a shooting estimate)."""
        self._refits = refits

    def profile(self, name, *, confidence=None, steps=None):
        """The likelihood profile of parameter ``name``: held at values stepping out from the estimate, the others
        refitted (:func:`pympc.identify.uncertainty.profile_parameter`).

        Parameters
        ----------
        name : str
            An estimated parameter.
        confidence : float, optional
            Level of the profile interval (χ²₁ quantile); default the result's ``confidence``.
        steps : int, optional
            At most this many refits per side (default the fit's ``Shooting.profile_steps``).

        Returns
        -------
        dict
            ``values``, ``deviance`` ((SSE − SSE*)/σ²), ``threshold``, ``interval``, ``kind``
            (bounded / one-sided / flat), ``sides``.  At the result's own level it is kept in
            :attr:`profiles` and the verdicts, table, summary and saved file use it; a profile
            already kept is returned without refitting.

        Raises
        ------
        OptionError
            An unknown name, a bad level or steps, an MPEC estimate (profiles refit by shooting),
            or a result loaded from a file (no experiments to refit: run ``estimate`` again).
        """
        if name not in self.names:
            raise OptionError(f"profile: {name!r} is not an estimated parameter ({self.names})")
        level = self.confidence if confidence is None else as_number(confidence, "profile: confidence")
        if not 0 < level < 1:
            raise OptionError(f"profile: confidence must be in (0, 1), got {level}")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
            raise OptionError(f"profile: steps must be an integer >= 1, got {steps!r}")
        kept = level == self.confidence
        if kept and steps is None and name in self.profiles:
            return self.profiles[name]
        refits = self._refits
        if refits is None:
            if (self.method or {}).get("method") in ("mpec", "fesd"):
                raise OptionError(f"profile: an {self.method['method'].upper()} estimate is not profiled (a profile "
                                  "refits by shooting); estimate with method='shooting' to profile")
            raise OptionError("profile: this result has no experiments to refit (it was loaded from a file, or every "
                              "start failed); run estimate again and profile that result")
        k = self.names.index(name)
        before = refits.simulations
        clock = time.perf_counter()
        out = profile_parameter(refits.problem, refits.par, np.asarray(self.optimum, float), self.sse,
                                self.sigma2 if np.isfinite(self.sigma2) else 1.0, k, float(self.stderr[k]),
                                refits.options.least_squares, level,
                                refits.options.profile_steps if steps is None else steps)
        if isinstance(self.method, dict):
            self.method["simulations"] = self.method.get("simulations", 0) + refits.simulations - before
            self.method["seconds"] = self.method.get("seconds", 0.0) + time.perf_counter() - clock
        if kept:
            self.profiles[name] = out
        return out

    def confidence_intervals(self, level=None):
        """The interval of every parameter at ``level`` (default the result's ``confidence``), as a DataFrame.

        Columns ``estimate``, ``low``, ``high``, ``interval`` (``"profile"``, ``"wald"`` or ``""``), ``status``:
        the verdicts (:mod:`pympc.identify.verdict`) at that level.  Another level than the
        result's recomputes the Wald intervals from the covariance and refits the profiles
        the result has (:meth:`profile`); NaN where a parameter has no point estimate (its
        ``status`` says why).
        """
        import pandas as pd

        r = self
        if level is not None:
            level = as_number(level, "confidence_intervals: level")
            if not 0 < level < 1:
                raise OptionError(f"confidence_intervals: level must be in (0, 1), got {level}")
            if level != self.confidence:
                _, lo, hi = wald(np.asarray(self.optimum, float), np.asarray(self.covariance, float), self.n,
                                 self.known_noise, level)
                r = replace(self, confidence=level, wald_low=lo, wald_high=hi,
                            profiles={n: self.profile(n, confidence=level) for n in self.profiles})
        rows = []
        for n in r.names:
            v = r.verdict(n)
            point = v["status"] in POINT
            rows.append({"parameter": n, "estimate": v["estimate"], "low": v["low"] if point else np.nan,
                         "high": v["high"] if point else np.nan, "interval": v["interval"] if point else "",
                         "status": v["status"]})
        return pd.DataFrame(rows).set_index("parameter")

    # ------------------------------------------------------------------ verdicts
    @property
    def p(self):
        return len(self.names)

    @property
    def sse(self):
        return 2.0 * self.cost

    def verdict(self, name):
        """The verdict on parameter ``name`` (:func:`pympc.identify.verdict.verdict`): status, reason, interval."""
        if name not in self.names:
            raise OptionError(f"{name!r} is not an estimated parameter ({self.names})")
        return verdict(self, self.names.index(name))

    def verdicts(self):
        """``{name: verdict}`` of every estimated parameter (what the table, the JSON and the exit status show)."""
        return {n: verdict(self, k) for k, n in enumerate(self.names)}

    def status_of(self, name):
        """``(status, reason)``: ``"identified"``, ``"at bound"``, ``"one-sided"``, ``"unreliable"`` or
        ``"not identifiable"`` (see :mod:`pympc.identify.verdict`)."""
        v = self.verdict(name)
        return v["status"], v["reason"]

    @property
    def estimates(self):
        """``{name: value}`` of the parameters with a point estimate (not the not-identifiable or one-sided ones)."""
        return {n: float(v) for n, v in zip(self.names, self.optimum) if self.status_of(n)[0] in POINT}

    def checks(self):
        """Self-checks: name → (passed, detail)."""
        out = {"converged": (self.converged, self.message),
               "gradient": (is_stationary(self.gradient, self.newton_step),
                            f"relative gradient |Jᵀr|/(|J||r|) = {self.gradient:.2e} (≤ {GRADIENT_TOL:g}) or "
                            f"Gauss–Newton step {self.newton_step:.1e} of the parameters (≤ {STEP_TOL:g})" +
                            (f"; first-order optimality {self.optimality:.2e}" if np.isfinite(self.optimality) else "")),
               "simulations": (self.simulations_ok, "every simulation at the optimum reached the last data time"
                               if self.simulations_ok else "a simulation at the optimum failed")}
        out["noise"] = noise_test(self.sse, self.n, self.p, self.known_noise)
        out["multistart"] = self._multistart()
        mp = self.method.get("mpec") if isinstance(self.method, dict) else None
        if mp:
            better, worse = self._against_start(mp)
            out["mpec"] = (bool(mp["verified"] and better),
                           worse + f"{mp['solution_status']} ({mp['termination']}); time-stepping rows violated by "
                           f"{mp['dynamics_residual']:.2e}, complementarity residual "
                           f"{mp['complementarity_residual']:.2e}; step {min(mp['step']):.4g} s")
            d = mp.get("exact_step")
            if d is not None:
                # the bias of the step against the statistical uncertainty (only where there is a point estimate)
                est = [k for k, n in enumerate(self.names) if np.isfinite(self.stderr[k]) and
                       self.status_of(n)[0] in POINT]
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
        fe = self.method.get("fesd") if isinstance(self.method, dict) else None
        if fe:
            better, worse = self._against_start(fe)
            out["fesd"] = (bool(fe["ok"] and better),
                           worse + f"{fe['solution_status']} ({fe['termination']}): {fe['message']}")
        bad = [n for n in self.names if self.status_of(n)[0] not in POINT]
        out["identifiable"] = (not bad, "every parameter has a point estimate and an interval" if not bad else
                               "; ".join(f"{n}: {self.status_of(n)[0]}" for n in bad))
        return out

    def _against_start(self, facts):
        """(whether a whole-trajectory route's answer fits no worse than its start, the sentence saying it does
        not, or ""), from that route's ``facts`` (``improved``, ``start_cost``)."""
        if facts.get("improved", True):
            return True, ""
        return False, (f"the local solution fits clearly WORSE than the start (exact-model cost {self.cost:.4g} > "
                       f"{facts['start_cost']:.4g}); ")

    def _multistart(self):
        """(passed, detail): the best cost was reached by at least two starts (a single start: not applicable)."""
        st = self.starts
        if st is None or not len(st):
            return True, "no starts recorded"
        cost = st["cost"].to_numpy(dtype=float)
        failed = st[st["status"] == "failed"]
        why = "".join(f"; start {int(r.start)} failed: {str(r.message)[:120]}" for r in failed.itertuples())
        if len(st) == 1:
            return True, "not applicable: one start (give Shooting(starts=N) / --starts N to check that the optimum is global)"
        best = np.min(cost) if np.isfinite(cost).any() else np.inf
        reached = int(np.sum(np.isfinite(cost) & (cost <= best * (1 + 1e-6) + 1e-12 + 1e-3 * self.sigma2 *
                                                  (1.0 if np.isfinite(self.sigma2) else 0.0))))
        ok = reached >= 2
        return ok, (f"{reached} of {len(st)} starts reached the best cost {best:.6g} (within 1e-6 relative)"
                    + ("" if ok else "; fewer than 2: the best may be a lucky local minimum, add starts")
                    + f"; {len(failed)} failed" + why)

    @property
    def reliable(self):
        """The fit is sound (:attr:`ok`) and every parameter has a trustworthy point estimate: every verdict is
        ``identified`` or ``at bound``, the residuals agree with a stated noise level and, with several starts,
        at least two reached the best cost."""
        c = self.checks()
        return self.ok and all(c[k][0] for k in ("identifiable", "noise", "multistart"))

    @property
    def ok(self):
        """Converged, first-order optimal (for the MPEC route: its answer verified, and its discretization bias
        within a standard error) and simulated to the end."""
        c = self.checks()
        keys = ("mpec", "discretization") if "mpec" in c else ("gradient", "fesd")
        return all(c[k][0] for k in ("converged", "simulations") + keys if k in c)

    # ------------------------------------------------------------------ tables
    def table(self):
        """Estimates with intervals as a DataFrame (one row per parameter)."""
        import pandas as pd

        rows = []
        for k, n in enumerate(self.names):
            v = self.verdict(n)
            point = v["status"] in POINT
            prof = self.profiles.get(n)
            rows.append({"parameter": n, "estimate": v["estimate"],
                         "stderr": self.stderr[k] if point else np.nan,
                         "wald_low": v["wald_low"], "wald_high": v["wald_high"],
                         "profile_low": prof["interval"][0] if prof else np.nan,
                         "profile_high": prof["interval"][1] if prof else np.nan,
                         "lower_bound_only": v["bound"] if v["side"] == "below" else np.nan,
                         "upper_bound_only": v["bound"] if v["side"] == "above" else np.nan,
                         "status": v["status"], "note": v["reason"]})
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
        mp, fe = m.get("mpec"), m.get("fesd")
        nlp = (fe or {}).get("nlp") or [{}]
        how = (f"a Pyomo MPEC solved by pympc.ipopt (step {min(mp['step']):.4g} s, {sum(mp['steps'])} steps; "
               f"{m['jacobian']} Jacobian of the exact model at its estimate for the covariance)" if mp else
               f"the FESD trajectory model solved by pympc.ipopt ({nlp[-1].get('variables')} variables, "
               f"{fe['walks']} walk(s), {sum(x.get('iterations') or 0 for x in nlp)} IPOPT iterations; "
               f"{m['jacobian']} Jacobian of the exact model at its estimate for the covariance)" if fe else
               f"({m['jacobian']} Jacobian), scipy.optimize.least_squares (trf, bounds), {m['starts']} start(s) "
               f"(seed {m['seed']})")
        lines = [f"identification by {m['method']} {how}, {m['experiments']} experiment(s), "
                 f"n = {self.n} values, p = {self.p}",
                 f"cost ½Σr² = {self.cost:.6g}; σ² {'known (weights 1/σ)' if self.known_noise else 'estimated'} "
                 f"= {self.sigma2:.4g}; {m.get('simulations', '?')} simulations in {m.get('seconds', np.nan):.1f} s"]
        if m.get("reparametrized"):
            lines.append("fitted internally as " + ", ".join(m["reparametrized"]) + " (≥ 0)")
        lines.append("")
        head = f"{'parameter':12s} {'estimate':>12s} {'stderr':>10s}  {pct}% interval                  status"
        lines.append(head)
        for n in self.names:
            v = self.verdict(n)
            k = self.names.index(n)
            est = f"{v['estimate']:12.6g}" if np.isfinite(v["estimate"]) else f"{'—':>12s}"
            se = f"{self.stderr[k]:10.3g}" if v["status"] in POINT else f"{'':10s}"
            if v["status"] in POINT:
                iv = f"[{v['low']:10.6g}, {v['high']:10.6g}] {v['interval']:7s}"
            elif v["side"]:
                iv = f"{'≥' if v['side'] == 'below' else '<'} {v['bound']:.6g} (bounded {v['side']})"
                iv = f"{iv:34s}"
            else:
                iv = f"{'no interval':34s}"
            lines.append(f"{n:12s} {est} {se}  {iv} {v['status']}" + (f": {v['reason']}" if v["reason"] and
                                                                       v["status"] not in POINT else ""))
            prof = self.profiles.get(n)
            if prof is not None:
                lines.append(f"{'':12s} profile likelihood [{prof['interval'][0]:.6g}, {prof['interval'][1]:.6g}] "
                             f"{prof['kind']} (sides: {prof['sides']['lower']}, {prof['sides']['upper']})")
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
        d["verdicts"] = self.verdicts()          # what the table and the exit status read (recomputed on load)
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
        d.pop("verdicts", None)
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
