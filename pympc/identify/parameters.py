"""What is estimated: :class:`Parameter` specifications and the internal coordinates of a fit.

The user names model parameters (``mu``, ``mu_s``, ``K``, ...).  When both the
kinetic and the static coefficient of one slot are fitted, the fit works in
(μ, Δ) with μ_s = μ + Δ and Δ ≥ 0 (:class:`Parametrization`), so the model's
μ_s ≥ μ holds at every trial point; estimates, intervals and covariances are
reported for μ and μ_s again (the map is linear, θ = T z).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np
from scipy.stats import qmc

from ..errors import OptionError

__all__ = ["Parameter", "Parametrization", "FRICTION_BOUNDS", "as_number", "declared_bounds"]

FRICTION_BOUNDS = (0.0, 2.0)
"""Default bounds of a friction coefficient that has none (other parameters default to unbounded)."""


@dataclass
class Parameter:
    """A parameter to estimate.

    Parameters
    ----------
    name : str
        A parameter of the model file(s).
    initial : float, optional
        Start value (default: the model's value in the first experiment).
    bounds : (float, float), optional
        Box (default: the model's bounds if it declares them; (0, 2) for a
        friction coefficient; unbounded otherwise).  ``None`` on either side means unbounded.
    excess : (float, float), optional
        Only for a static coefficient fitted together with its kinetic one:
        bounds of μ_s − μ (default: from the two boxes, at least 0).
    """

    name: str
    initial: float | None = None
    bounds: tuple | None = None
    excess: tuple | None = None


def as_number(value, what, finite=True):
    """``value`` as a float when it is a real number (not a bool, not a string); OptionError naming ``what`` otherwise.

    ``finite=False`` lets ±inf through (an open side of a box); NaN is always refused.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise OptionError(f"{what} must be a number, got {value!r} ({type(value).__name__})"
                          + ("; write it as a number, not a string" if isinstance(value, str) else ""))
    v = float(value)
    if np.isnan(v) or (finite and not np.isfinite(v)):
        raise OptionError(f"{what} must be a finite number, got {v}")
    return v


def declared_bounds(system, name):
    """The bounds the model file declares for parameter ``name`` (``(low, high)``), or None."""
    definition = system.parameter_definitions.get(name)
    return None if definition is None else definition.bounds


def _as_parameters(parameters, allow_empty=False):
    if isinstance(parameters, str):
        parameters = [p for p in (s.strip() for s in parameters.split(",")) if p]
    if isinstance(parameters, (Parameter, dict)):
        parameters = [parameters]
    if not isinstance(parameters, (list, tuple)):
        raise OptionError(f"parameters must be a comma-separated string of names, a Parameter, or a list of names "
                          f"and Parameters (e.g. \"mu,mu_s\" or [Parameter(\"mu\", 0.2, (0, 1))]), "
                          f"got {parameters!r} ({type(parameters).__name__})")
    out = []
    for p in parameters:
        if isinstance(p, str):
            p = Parameter(p)
        elif isinstance(p, dict):
            try:
                p = Parameter(**p)
            except TypeError as exc:
                raise OptionError(f"a parameter given as a dict takes name, initial, bounds, excess ({exc})") from None
        if not isinstance(p, Parameter):
            raise OptionError(f"parameters must be names or pympc.identify.Parameter, got {p!r}")
        if not isinstance(p.name, str) or not p.name:
            raise OptionError(f"a Parameter's name must be a non-empty string, got {p.name!r}")
        if p.initial is not None:
            as_number(p.initial, f"parameter {p.name!r}: initial")
        out.append(p)
    names = [p.name for p in out]
    if not out and not allow_empty:
        raise OptionError("no parameters to estimate")
    if len(set(names)) != len(names):
        raise OptionError(f"a parameter is named twice in {names}")
    return out


def _bounds(b, where):
    if b is None:
        b = (None, None)
    if isinstance(b, (str, bytes)) or not hasattr(b, "__len__") or len(b) != 2:
        raise OptionError(f"{where}: bounds must be a pair (low, high) of numbers (None for an open side), got {b!r}")
    lo = -np.inf if b[0] is None else as_number(b[0], f"{where}: lower bound", finite=False)
    hi = np.inf if b[1] is None else as_number(b[1], f"{where}: upper bound", finite=False)
    if not lo < hi:
        raise OptionError(f"{where}: bounds ({lo}, {hi}) are empty; give lower < upper")
    return lo, hi


class Parametrization:
    """The map between the user's parameters θ and the fit's coordinates z (θ = T z).

    Parameters
    ----------
    parameters : list of Parameter or str
    experiments : list of Experiment
        Used for model values (initial values), declared bounds, and the slots'
        (μ, μ_s) parameter pairs.
    fixed : dict, optional
        Extra values held fixed in every experiment (used by profiles).
    """

    def __init__(self, parameters, experiments, fixed=None):
        self.fixed = dict(fixed or {})
        specs = _as_parameters(parameters, allow_empty=bool(self.fixed))
        first = experiments[0]
        for e in experiments:
            for p in specs:
                if p.name not in e.parameters:
                    raise OptionError(f"parameter {p.name!r} is not in model {e.model.name} (experiment {e.name!r}); "
                                      f"its parameters are {sorted(e.parameters)}")
                if p.name in e.fixed:
                    raise OptionError(f"parameter {p.name!r} is fitted and also fixed in experiment {e.name!r}; "
                                      "remove it from that experiment's fixed values")
        self.names = [p.name for p in specs]
        self.specs = specs
        kinetic = {}
        static_of = {}
        for e in experiments:
            for slot, mu, mus in e.friction_pairs:
                if mu is not None:
                    kinetic[mu] = slot
                if mu is not None and mus is not None:
                    static_of[mu] = mus
        self.friction = {n for n in self.names if n in kinetic or n in static_of.values()}
        self.pairs = [(self.names.index(k), self.names.index(s)) for k, s in static_of.items()
                      if k in self.names and s in self.names and k != s]    # μ_s = μ (one parameter): no pair
        theta0, lo, hi = [], [], []
        values = {**first.parameters, **self.fixed}
        for p in specs:
            declared = declared_bounds(first.system, p.name)
            default = declared or (FRICTION_BOUNDS if p.name in self.friction else None)
            a, b = _bounds(p.bounds if p.bounds is not None else default, f"parameter {p.name!r}")
            if p.bounds is not None and declared is not None and (a < declared[0] or b > declared[1]):
                raise OptionError(f"parameter {p.name!r}: bounds [{a:g}, {b:g}] reach outside the bounds "
                                  f"[{declared[0]:g}, {declared[1]:g}] that model {first.model.name} declares for it "
                                  "(the model refuses such values); give bounds inside them")
            x0 = float(values[p.name]) if p.initial is None else as_number(p.initial, f"parameter {p.name!r}: initial")
            if not a <= x0 <= b:
                raise OptionError(f"parameter {p.name!r}: the start {x0:g} is outside its bounds [{a:g}, {b:g}]; "
                                  "give an initial value inside the bounds or widen them")
            theta0.append(x0), lo.append(a), hi.append(b)
        # one coefficient of a pair fitted, the other held: keep μ ≤ μ_s
        for k, s in static_of.items():
            if k in self.names and s not in self.names and s in values:
                i = self.names.index(k)
                hi[i] = min(hi[i], float(values[s]))
            if s in self.names and k not in self.names and k in values:
                i = self.names.index(s)
                lo[i] = max(lo[i], float(values[k]))
        self.theta_lo, self.theta_hi = np.array(lo), np.array(hi)
        p = len(specs)
        self.T = np.eye(p)
        zlo, zhi = self.theta_lo.copy(), self.theta_hi.copy()
        for i, j in self.pairs:
            self.T[j, i] = 1.0
            spec = specs[j]
            if spec.excess is not None:
                zlo[j], zhi[j] = _bounds(spec.excess, f"parameter {spec.name!r}: excess")
                if zlo[j] < 0:
                    raise OptionError(f"parameter {spec.name!r}: excess bounds must be >= 0 (μ_s ≥ μ), got {spec.excess}")
            else:
                zlo[j] = max(0.0, self.theta_lo[j] - self.theta_hi[i])
                zhi[j] = max(self.theta_hi[j] - self.theta_lo[i], zlo[j] + 1e-12)
        self.Tinv = np.linalg.inv(self.T)
        self.lo, self.hi = zlo, zhi
        self.theta0 = np.array(theta0)
        self.z0 = self.Tinv @ self.theta0
        for i, j in self.pairs:
            if not zlo[j] <= self.z0[j] <= zhi[j]:
                raise OptionError(f"the start {self.names[j]} - {self.names[i]} = {self.z0[j]:g} is outside "
                                  f"[{zlo[j]:g}, {zhi[j]:g}] (μ_s must be ≥ μ); change the initial values or bounds")

    @property
    def size(self):
        return len(self.names)

    def theta(self, z):
        """User parameter values (array) at internal coordinates z."""
        return self.T @ np.asarray(z, dtype=float)

    def values(self, z):
        """``{name: value}`` to bind, at internal coordinates z (fixed values included)."""
        return {**self.fixed, **{n: float(v) for n, v in zip(self.names, self.theta(z))}}

    def z_names(self):
        """Names of the internal coordinates (``mu_s - mu`` for a reparametrized static coefficient)."""
        out = list(self.names)
        for i, j in self.pairs:
            out[j] = f"{self.names[j]} - {self.names[i]}"
        return out

    def starts(self, n, seed=0, include_initial=True):
        """``n`` start points z: the initial values first (if ``include_initial``), then a scrambled Sobol sample.

        The sample covers the user parameters' boxes (declared or given bounds) and keeps μ_s ≥ μ
        for a reparametrized pair: μ is drawn in its box, then μ_s in the part of its own box at or
        above μ (and within the ``excess`` bounds), so every start is a value the model accepts.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise OptionError(f"starts must be an integer >= 1, got {n!r}")
        n = int(n)
        if n < 1:
            raise OptionError(f"starts must be >= 1, got {n}")
        k = n - 1 if include_initial else n
        pts = [self.z0.copy()] if include_initial else []
        if k > 0:
            if not (np.all(np.isfinite(self.theta_lo)) and np.all(np.isfinite(self.theta_hi))):
                raise OptionError(f"a multistart needs finite bounds for every parameter; bounds are "
                                  f"{dict(zip(self.names, zip(self.theta_lo.tolist(), self.theta_hi.tolist())))}; "
                                  "give them (Parameter(..., bounds=(lo, hi)), --bounds NAME=LO:HI) or use one start")
            m = int(np.ceil(np.log2(max(k, 1))))
            u = qmc.Sobol(self.size, scramble=True, seed=seed).random_base2(m)[:k] if self.size else np.zeros((k, 0))
            for row in u:
                theta = self.theta_lo + row * (self.theta_hi - self.theta_lo)
                for i, j in self.pairs:
                    mu = min(theta[i], self.theta_hi[j] - self.lo[j])        # room for μ_s ≥ μ + excess low
                    a = max(self.theta_lo[j], mu + self.lo[j])
                    b = min(self.theta_hi[j], mu + self.hi[j])
                    theta[i], theta[j] = mu, a + row[j] * max(b - a, 0.0)
                pts.append(self.Tinv @ theta)
        return [np.clip(p, self.lo, self.hi) for p in pts]

    def without(self, name, value, start):
        """Specifications and fixed values with ``name`` held at ``value`` (for a profile).

        ``start`` maps the other names to their start values (clipped into their boxes here).
        """
        start, fixed = dict(start), {**self.fixed, name: float(value)}
        for i, j in self.pairs:   # the partner keeps μ ≤ μ_s; held too when that leaves it no room
            if self.names[j] == name:
                start[self.names[i]] = min(start[self.names[i]], value)
                if value <= self.theta_lo[i]:
                    fixed[self.names[i]] = float(self.theta_lo[i])
            if self.names[i] == name:
                start[self.names[j]] = max(start[self.names[j]], value)
                if value >= self.theta_hi[j]:
                    fixed[self.names[j]] = float(self.theta_hi[j])
        rest = []
        for k, p in enumerate(self.specs):
            if p.name not in fixed:
                lo, hi = self.theta_lo[k], self.theta_hi[k]
                bounds = (None if np.isinf(lo) else lo, None if np.isinf(hi) else hi)
                rest.append(Parameter(p.name, initial=float(start[p.name]), bounds=bounds))
        return rest, fixed
