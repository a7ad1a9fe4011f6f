"""Event location that does not depend on the integrator's steps.

An event function that dips below zero and recovers between two samples is
invisible to a sign test at the samples.  :func:`first_crossing` samples the
event functions on a grid no coarser than the forcing's time scale, bounds
each function between two samples by its curvature (if ``|g''| ≤ G`` on
``[a, b]`` then ``g ≥ min(g(a), g(b)) − G (b − a)²/8`` there) and bisects
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

from ..mechanics.expressions import Expression
from ..mechanics.system import FORCE_VARIABLES, Distance, PointForce, Prescribed, Torque

__all__ = ["forcing_time_scale", "first_crossing"]

_FAST = {"sin", "cos", "tan", "exp", "sinh", "cosh", "tanh"}


def _expressions(system):
    for f in system.forces.values():
        if isinstance(f, PointForce):
            yield from f.value
        elif isinstance(f, Torque):
            yield f.value
    for j in system.joints.values():
        if isinstance(j, Prescribed):
            yield j.value
        elif isinstance(j, Distance):
            yield j.length


def forcing_time_scale(system, t0, t1):
    """τ = 1 / (fastest rate of an oscillating or exponential time function of the model); inf if none.

    Rates are ``|du/dt|`` of the argument ``u`` of every ``sin``, ``cos``, ``tan``,
    ``exp``, ``sinh``, ``cosh``, ``tanh`` in a force, torque, prescribed motion or rod
    length, evaluated at 9 times across ``[t0, t1]`` (state variables of force
    expressions at 0).  Expressions that cannot be evaluated there are skipped.
    """
    rate = 0.0
    times = np.linspace(t0, t1, 9)
    env0 = {v: 0.0 for v in FORCE_VARIABLES}
    for e in _expressions(system):
        if not isinstance(e, Expression) or e.is_constant:
            continue
        for node in ast.walk(e.node):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FAST
                    and node.args):
                continue
            try:
                du = Expression(node.args[0]).diff("t")
                for t in times:
                    r = abs(float(du(**{**env0, "t": float(t)})))
                    if math.isfinite(r):
                        rate = max(rate, r)
            except (ArithmeticError, ValueError, TypeError, KeyError, RecursionError):
                continue
    return 1.0 / rate if rate > 0 else math.inf


def first_crossing(G, ta, tb, h, t_extra=(), dt_min=None):
    """The first downward zero crossing of the vector function ``G`` on ``[ta, tb]``.

    Parameters
    ----------
    G : callable
        ``G(t)`` → 1-D array of event-function values (each ≥ 0 at ``ta``).
    ta, tb : float
    h : float
        Largest sampling interval (should resolve the time functions of ``G``).
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
    n = max(8, int(math.ceil((tb - ta) / h)))
    ts = np.linspace(ta, tb, n + 1)
    extra = np.asarray(t_extra, dtype=float).reshape(-1)
    ts = np.unique(np.concatenate([ts, extra[(extra > ta) & (extra < tb)]]))
    ts = ts[np.concatenate([[True], np.diff(ts) > dt_min])]
    ts[-1] = tb
    # evaluated block by block (an early event does not pay for the whole span); each block carries
    # one sample either side for the curvature stencils
    block = 64
    for lo in range(0, len(ts) - 1, block):
        i0, i1 = max(0, lo - 2), min(len(ts), lo + block + 3)
        tt = ts[i0:i1]
        vals = np.array([np.asarray(G(t), dtype=float) for t in tt])
        if vals.ndim != 2 or vals.shape[1] == 0:
            return None, None
        d2 = np.zeros_like(vals)           # |second divided differences|: estimates of |g''|
        if len(tt) >= 3:
            s1 = np.diff(vals, axis=0) / np.diff(tt)[:, None]
            d2[1:-1] = np.abs(2 * np.diff(s1, axis=0) / (tt[2:] - tt[:-2])[:, None])
            d2[0], d2[-1] = d2[1], d2[-2]
        for i in range(lo, min(lo + block, len(ts) - 1)):
            j = i - i0
            bound = 2.0 * d2[max(0, j - 1):j + 3].max(axis=0)
            hit = _scan(G, tt[j], vals[j], tt[j + 1], vals[j + 1], bound, dt_min)
            if hit[0] is not None:
                return hit
    return None, None


def _scan(G, a, ga, b, gb, bound, dt_min):
    """First crossing in [a, b] by bisection where the curvature bound allows a zero."""
    stack = [(a, ga, b, gb)]
    while stack:
        a, ga, b, gb = stack.pop()
        w = b - a
        possible = (np.minimum(ga, gb) - bound * w * w / 8 <= 0) & (ga >= 0)
        if not possible.any():
            continue
        if w <= dt_min:
            cross = [i for i in np.flatnonzero(possible) if gb[i] < 0]
            if cross:
                roots = [(brentq(lambda s, i=i: G(s)[i], a, b, xtol=1e-15, rtol=4 * np.finfo(float).eps), i)
                         for i in cross]
                return min(roots)
            continue
        m = 0.5 * (a + b)
        gm = np.asarray(G(m), dtype=float)
        stack.append((m, gm, b, gb))      # right half after the left one
        stack.append((a, ga, m, gm))
    return None, None
