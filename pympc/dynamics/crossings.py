"""Event location that does not depend on the integrator's steps.

An event function that dips below zero and recovers between two samples is
invisible to a sign test at the samples.  :func:`first_crossing` samples the
event functions on a grid no coarser than the forcing's time scale, bounds
each function between two samples by its curvature (if ``|g''| ≤ G`` on
``[a, b]`` then ``g(t) ≥ chord(t) − G (t − a)(b − t)/2`` there, :func:`may_cross`:
a function that starts a phase at zero and rises, a slip velocity after a
breakaway, is cleared at once instead of bisected down to ``dt_min``) and bisects
every interval where that bound does not exclude a zero, left to right, so the
*first* downward crossing is found.  ``G`` is taken as twice the largest second
divided difference of the samples around the interval: the grid resolves the
forcing (spacing ≤ τ/8 with τ from :func:`forcing_time_scale`), so the sampled
curvature is within a few per cent of the true one and the factor two covers
its variation across the interval.

:func:`forcing_time_scale` reads the time scale off the model's expressions:
every ``sin``, ``cos``, ``exp``, … of an argument ``u(t)`` contributes the rate
``|du/dt|`` (differentiated by the expression layer), and τ = 1 / (largest rate).
"""

from __future__ import annotations

import ast
import math

import numpy as np
from scipy.optimize import brentq

from ..errors import ModelError, SimulationError
from ._event_kernels import curvature_bounds, dop853_states
from ..mechanics.expressions import Expression, parse
from ..mechanics.system import FORCE_VARIABLES, PointForce, Torque

__all__ = ["TimeScale", "forcing_time_scale", "first_crossing", "may_cross", "DenseStates"]

_FAST = {"sin", "cos", "tan", "exp", "sinh", "cosh", "tanh"}


def _time_fields(system):
    """The fields of a system that may be functions of time, as bound: ``(value, variables)`` pairs."""
    items = []
    for f in system.forces.values():
        if isinstance(f, PointForce):
            items += [(v, FORCE_VARIABLES) for v in f.value]
        elif isinstance(f, Torque):
            items.append((f.value, FORCE_VARIABLES))
    for j in system.joints.values():
        items += [(v, ("t",)) for v in j.time_functions()]
    return items


def _expressions(system, items=None):
    """The time functions of a system (Expressions; numbers and strings as the assembly parses them)."""
    for v, variables in _time_fields(system) if items is None else items:
        try:
            yield parse(v, {}, variables)
        except ModelError:      # the assembly reports it
            continue


class TimeScale:
    """The time scale of a model's time functions, over any interval.

    Rates are ``|du/dt|`` of the argument ``u`` of every ``sin``, ``cos``, ``tan``,
    ``exp``, ``sinh``, ``cosh``, ``tanh`` in a force, torque, prescribed motion or
    rod length (differentiated by the expression layer; state variables of force
    expressions at 0).  ``tau(t0, t1)`` = 1 / (largest rate at 9 times across
    ``[t0, t1]``), ``inf`` without such functions.  Expressions that cannot be
    evaluated somewhere are skipped there.
    """

    def __init__(self, system, _fields=None):
        self._rates = []
        for e in _expressions(system, _fields):
            for node in ast.walk(e.node):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FAST
                        and node.args):
                    du = Expression(node.args[0]).diff("t")
                    if du.is_constant:
                        if du.value:
                            self._rates.append(abs(du.value))
                    else:
                        self._rates.append(du)
        self._env = {v: 0.0 for v in FORCE_VARIABLES}
        # rates that are all constants (sin(w t) with w bound): τ is one number, the same over any interval
        self._fixed = self.tau(0.0, 0.0) if all(isinstance(r, float) for r in self._rates) else None

    _last = (None, None)     # (the time fields read, their TimeScale): the latest one made by of()

    @classmethod
    def of(cls, system):
        """``TimeScale(system)``, made again only when the system's time fields (forces, torques, the joints'
        functions of time) are other objects or numbers than those of the last call: it reads nothing else
        (the bound copies of :meth:`System.bind` share the resolved elements whose parameters kept their
        values, e.g. the drive when μ changes)."""
        fields = _time_fields(system)
        last, made = cls._last
        if last is not None and len(last) == len(fields) and all(
                a[1] == b[1] and (a[0] is b[0] or (type(a[0]) is float and type(b[0]) is float and a[0] == b[0]))
                for a, b in zip(last, fields)):
            return made
        made = cls(system, fields)
        cls._last = (fields, made)
        return made

    def tau(self, t0, t1):
        rate = 0.0
        for r in self._rates:
            if isinstance(r, float):
                rate = max(rate, r)
                continue
            for t in np.linspace(t0, t1, 9):
                try:
                    v = abs(float(r(**{**self._env, "t": float(t)})))
                except (ArithmeticError, ValueError, TypeError, KeyError, RecursionError):
                    continue
                if math.isfinite(v):
                    rate = max(rate, v)
        return 1.0 / rate if rate > 0 else math.inf

    def window(self, ta, tb, cap, intervals):
        """(end, h): a window [ta, end] of at most ``intervals`` samples h ≤ min(cap, τ/8) apart, τ over the window."""
        step = lambda end: min(cap, self.tau(ta, end) / 8)  # noqa: E731
        hi = min(tb, ta + intervals * cap)            # the largest window whose own τ allows it (bisection)
        if self._fixed is not None:     # τ the same everywhere: the bisection below would end at lo, h exactly
            h = min(cap, self._fixed / 8)
            if ta + intervals * h >= hi:
                return hi, h
            return self._checked(ta, min(ta + intervals * h, tb), h, cap)
        if ta + intervals * step(hi) >= hi:
            return hi, step(hi)
        lo = ta + intervals * step(hi)                # allowed: τ over [ta, lo] ≥ τ over [ta, hi]
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if ta + intervals * step(mid) >= mid:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-3 * (lo - ta):
                break
        return self._checked(ta, min(lo, tb), step(lo), cap)

    @staticmethod
    def _checked(ta, end, h, cap):
        """``(end, h)``, unless the step is too short for any sampling to follow the forcing."""
        if h < 1e-4 * cap:      # a forcing faster than any sampling can follow: stop rather than hang or miss events
            raise SimulationError(
                f"the model's time functions vary on a time scale of {8 * h:.3g} s near t = {ta:.9g}, over 10⁴ "
                f"times shorter than the scan step {cap:.3g} s; events there cannot be located reliably "
                "(shorten t_span or check the forcing expressions)")
        return end, h


def forcing_time_scale(system, t0, t1):
    """τ = 1 / (fastest rate of an oscillating or exponential time function of the model) on [t0, t1]."""
    return TimeScale(system).tau(t0, t1)


def first_crossing(G, ta, tb, h, t_extra=(), dt_min=None):
    """The first downward zero crossing of the vector function ``G`` on ``[ta, tb]``.

    Parameters
    ----------
    G : callable
        ``G(t)`` → 1-D array of event-function values (each ≥ 0 at ``ta``); if it has
        an attribute ``many``, ``G.many(ts)`` → the values at all the times ``ts`` (rows); if it has
        an attribute ``scan``, ``G.scan(a, ga, b, gb, bound, dt_min)`` does the search of one interval
        as :func:`_scan` does (compiled), returning (t, i), (None, None), or None to leave it to :func:`_scan`.
    ta, tb : float
    h : float or callable
        Largest sampling interval (must resolve the time functions of ``G``), or
        ``h(ta, tb)`` → (end, step): a window starting at ``ta`` and its step
        (e.g. :meth:`TimeScale.window`).
    t_extra : array_like
        More sample times (e.g. the integrator's step ends).
    dt_min : float, optional
        Intervals are not bisected below this width (default ``1e-11·max(1, |tb|)``);
        a dip shorter than that which comes back up counts as a touch, not a crossing.

    Returns
    -------
    (t, i) or (None, None)
        Time and index of the first component crossing zero from above.
    """
    if dt_min is None:
        dt_min = 1e-11 * max(1.0, abs(ta), abs(tb))
    extra = np.asarray(t_extra, dtype=float).reshape(-1)
    t0 = ta
    intervals = 8
    while t0 < tb:
        # windows of 8, 16, 32, then 64 intervals: an early event does not pay for the whole span (a window's
        # step resolves the time functions over the whole window, so also over its first part)
        end, step = h(t0, tb) if callable(h) else (min(tb, t0 + 64 * h), h)
        end = min(end, t0 + intervals * step)
        intervals = min(2 * intervals, 64)
        n = max(4, int(math.ceil((end - t0) / step)))
        ts = np.arange(n + 1.0) * ((end - t0) / n) + t0     # np.linspace(t0, end, n + 1), its arithmetic
        inner = extra[(extra > t0) & (extra < end)] if extra.size else extra
        if inner.size:                      # (a linspace alone is sorted and without repeats already)
            ts = np.unique(np.concatenate([ts, inner]))
        if inner.size or (end - t0) / n <= dt_min:
            ts = ts[np.concatenate([[True], np.diff(ts) > dt_min])]
        ts[-1] = end
        many = getattr(G, "many", None)     # all samples at once, when G offers it
        vals = np.asarray(many(ts), dtype=float) if many else np.array([np.asarray(G(t), dtype=float) for t in ts])
        if vals.ndim != 2 or vals.shape[1] == 0:
            return None, None
        # |second divided differences| estimate |g''|; the bound of interval i is twice the largest estimate of
        # samples i−1 … i+2; only intervals where it does not exclude a zero are searched (one compiled pass)
        bounds = np.empty((len(ts) - 1, vals.shape[1]))
        open_ = curvature_bounds(np.ascontiguousarray(ts), np.ascontiguousarray(vals), bounds)
        scan = getattr(G, "scan", None)     # the same search compiled, when G offers it (None: not here)
        for i in np.flatnonzero(open_):
            hit = scan(ts[i], vals[i], ts[i + 1], vals[i + 1], bounds[i], dt_min) if scan is not None else None
            if hit is None:
                hit = _scan(G, ts[i], vals[i], ts[i + 1], vals[i + 1], bounds[i], dt_min)
            if hit[0] is not None:
                return hit
        t0 = end
    return None, None


def may_cross(ga, gb, G, w):
    """May functions with values ``ga`` at a, ``gb`` at b = a + w and ``|g''| ≤ G`` on [a, b] cross zero
    downwards in (a, b]?  (Arrays, elementwise.)

    Only a function that starts at or above zero may; one that ends below zero does; else the bound
    ``g(t) ≥ chord(t) − G (t − a)(b − t)/2`` — a convex quadratic — must reach zero inside (a, b).  It is
    never weaker than ``min(ga, gb) − G w²/8`` and clears a function that starts at zero with a slope
    the curvature cannot turn back within the interval.
    """
    coarse = (np.minimum(ga, gb) - G * w * w / 8 <= 0) & (ga >= 0)      # the weaker test: cheap, most say no
    if not coarse.any():
        return coarse
    Gw = G * w                                   # (w > 0: intervals of a scan have a width)
    curved = (Gw > 0) & (Gw < np.inf)
    Gc, Gwc = np.where(curved, G, 0.0), np.where(curved, Gw, 1.0)
    s = 0.5 * w - (gb - ga) / Gwc                         # where the quadratic is lowest
    low = ga + s * ((gb - ga) / w - 0.5 * Gc * w) + 0.5 * Gc * s * s
    inside = (curved & (s > 0) & (s < w) & (low <= 0)) | (Gw == np.inf)     # no bound: may
    return coarse & ((gb < 0) | inside)


def _scan(G, a, ga, b, gb, bound, dt_min):
    """First crossing in [a, b] by bisection where the curvature bound allows a zero.

    An interval is not bisected further when each function that may vanish in it
    changes sign there with a slope the bound keeps away from zero (``|gb − ga|/w >
    G w``: g' has one sign on the interval, so g has exactly one zero there): the
    zeros are found by root finding, the first one wins.
    """
    many = getattr(G, "many", None) if getattr(G, "split", SPLIT) > 2 else None
    stack = [(a, ga, b, gb)]
    while stack:
        a, ga, b, gb = stack.pop()
        w = b - a
        possible = may_cross(ga, gb, bound, w)
        if not possible.any():
            continue
        single = possible & (gb < 0) & (np.abs(gb - ga) > bound * w * w)
        if w <= dt_min or (single == possible).all():
            cross = [i for i in np.flatnonzero(possible) if gb[i] < 0]
            if cross:
                roots = [(brentq(lambda s, i=i: G(s)[i], a, b, xtol=1e-15, rtol=4 * np.finfo(float).eps), i)
                         for i in cross]
                return min(roots)
            continue
        if many is None:                  # halves, one evaluation each
            m = 0.5 * (a + b)
            gm = np.asarray(G(m), dtype=float)
            stack.append((m, gm, b, gb))      # right half after the left one
            stack.append((a, ga, m, gm))
            continue
        # SPLIT parts evaluated in one call (the same search as log2(SPLIT) levels of halving): the parts
        # the bound does not exclude are pushed, right to left, so the leftmost is examined first
        ts = np.linspace(a, b, SPLIT + 1)
        ts[-1] = b
        vals = np.empty((SPLIT + 1, ga.size))
        vals[0], vals[-1] = ga, gb
        vals[1:-1] = many(ts[1:-1])
        ww = np.diff(ts)[:, None]
        keep = may_cross(vals[:-1], vals[1:], bound, ww).any(axis=1)
        for j in np.flatnonzero(keep)[::-1]:
            stack.append((ts[j], vals[j], ts[j + 1], vals[j + 1]))
    return None, None


SPLIT = 16
"""An interval the curvature bound does not clear is cut into this many parts at once when the event functions
can be evaluated at many times in one call (``G.many``), unless ``G.split`` ≤ 2 says that a batch costs as
much per sample as single calls (then it is halved, one evaluation per half)."""


class DenseStates:
    """The states of a ``solve_ivp`` dense output at many times, as rows: ``DenseStates(sol.sol)(ts)`` (or of
    the compiled DOP853's :class:`~pympc.dynamics._dop853.Dop853Solution`, which holds the stack already).

    For DOP853 (the driver's default) all the steps' interpolants are stacked once and evaluated for all the
    times together by :func:`~pympc.dynamics._event_kernels.dop853_states`: the very operations of scipy's
    ``Dop853DenseOutput``, on the segment scipy's ``OdeSolution`` picks, so the values are the same to the bit.  Anything else (other
    methods, a descending span): ``sol(ts).T``.

    Attributes
    ----------
    stack : tuple or None
        ``(ts_sorted, t_old, h, y_old, F)`` of the DOP853 steps (None for other methods).
    """

    def __init__(self, sol):
        self.sol = sol
        ips = getattr(sol, "interpolants", None)
        self.stack = getattr(sol, "stack", None)         # the compiled DOP853's solution holds its stack
        if self.stack is None and (ips and all(type(ip).__name__ == "Dop853DenseOutput" for ip in ips)
                                   and getattr(sol, "ascending", False) and getattr(sol, "side", None) == "left"):
            self.stack = (np.asarray(sol.ts_sorted, float), np.array([ip.t_old for ip in ips]),
                           np.array([ip.h for ip in ips]), np.array([ip.y_old for ip in ips]),
                           np.array([ip.F for ip in ips]))

    def __call__(self, ts):
        ts = np.asarray(ts, dtype=float)
        if self.stack is None:
            return np.asarray(self.sol(ts)).T
        X = np.empty((ts.size, self.stack[3].shape[1]))
        dop853_states(np.ascontiguousarray(ts), *self.stack, X)
        return X
