"""Compiled (numba) kernels of event location: the event functions of a phase, their samples on a scan, the
curvature bounds of :func:`pympc.dynamics.crossings.first_crossing`, and the states of a stack of DOP853
dense-output steps.

They sit on the mode kernels of :mod:`pympc.mechanics._kernels` (``general_mode_timed``,
``general_mode_flat``) and follow their conventions (``_PLAIN``: no reference counting for kernels that
only read and write their callers' arrays, see there).
"""

import numpy as np
from numba import njit

from ..mechanics._kernels import general_mode_flat, general_mode_timed

_PLAIN = {"cache": True, "_nrt": False}
"""The options of :mod:`pympc.mechanics._kernels`' plain kernels (no NRT; no allocation, no array returned)."""

__all__ = ["event_values", "mode_event_samples", "curvature_bounds", "may_cross", "dop853_states", "flat_event_samples"]


@njit(cache=True)
def event_values(vT, lam, F, slot, cv, cl, cf, band, out):
    """The event functions of a phase, ``out[i] = cv[i] vT[k] + cl[i] λ[k] + cf[i] |F[k]| + band[i]`` with
    ``k = slot[i]`` (slip velocity, wall force, friction reserve of the slots in one loop)."""
    for i in range(slot.size):
        k = slot[i]
        out[i] = cv[i] * vT[k] + cl[i] * lam[k] + cf[i] * abs(F[k]) + band[i]
    return out


@njit(cache=True)
def mode_event_samples(ts, X, n, tF, Qx, bI, alpha, beta, sf, si, pf, pi, fb, ib, work, out, prog, consts,
                       ovT, olam, oF, slot, cv, cl, cf, band, G):
    """:func:`general_mode_timed` at every sample ``(ts[i], X[i, :n], X[i, n:2n])`` followed by
    :func:`event_values` of the slots' ``vT``, ``λ``, ``F`` (at offsets ``ovT``, ``olam``, ``oF`` of ``fb``)
    into ``G[i]``: the event functions of a phase on all the samples of a scan in one call.

    Returns the index of the first sample whose mode solve failed (singular, a force of time not finite, a
    spring of zero length: the caller repeats it alone to say why), or −1."""
    ns = oF - olam                      # λ and F are consecutive blocks of ns entries (mode_layout)
    for i in range(ts.size):
        ok, bad, T, V, P = general_mode_timed(ts[i], X[i, :n], X[i, n:2 * n], tF, Qx, bI, alpha, beta, sf, si, pf,
                                              pi, fb, ib, work, out, prog, consts)
        if not ok or bad != -1:
            return i
        event_values(fb[ovT:ovT + ns], fb[olam:olam + ns], fb[oF:oF + ns], slot, cv, cl, cf, band, G[i])
    return -1


@njit(cache=True, inline="always")
def may_cross(ga, gb, G, w):
    """May a function with ``g(a) = ga``, ``g(b) = gb`` (``b = a + w``) and ``|g''| ≤ G`` on [a, b] cross zero
    downwards in (a, b]?  (See :func:`pympc.dynamics.crossings.may_cross`, the same test on arrays.)"""
    if not ga >= 0.0:
        return False
    if gb < 0.0:
        return True
    if not G > 0.0:                 # the chord, ≥ 0 between two values ≥ 0
        return False
    s = 0.5 * w - (gb - ga) / (G * w)      # where chord − G (t − a)(b − t)/2 is lowest
    if s <= 0.0 or s >= w:          # lowest at an end: above ga, gb ≥ 0 inside
        return False
    return ga + s * ((gb - ga) / w - 0.5 * G * w) + 0.5 * G * s * s <= 0.0


@njit(cache=True)
def curvature_bounds(ts, vals, bounds):
    """The curvature bound of every sample interval of a scan (see :mod:`pympc.dynamics.crossings`) and
    whether it may hold a zero.

    ``bounds[i, j]`` = twice the largest |second divided difference| of function j at samples i−1 … i+2
    (the end samples take their neighbours' value); returns a boolean array: interval i is *open* when
    some function j may cross zero downwards in it by that bound (:func:`may_cross`).
    """
    N, m = vals.shape
    k = N - 1
    d2 = np.zeros((N, m))
    if N >= 3:
        for i in range(1, N - 1):
            h0, h1 = ts[i] - ts[i - 1], ts[i + 1] - ts[i]
            for j in range(m):
                s0 = (vals[i, j] - vals[i - 1, j]) / h0
                s1 = (vals[i + 1, j] - vals[i, j]) / h1
                d2[i, j] = abs(2.0 * (s1 - s0) / (ts[i + 1] - ts[i - 1]))
        for j in range(m):
            d2[0, j] = d2[1, j]
            d2[N - 1, j] = d2[N - 2, j]
    open_ = np.zeros(k, np.bool_)
    for i in range(k):
        w = ts[i + 1] - ts[i]
        for j in range(m):
            b = 0.0
            for r in range(i - 1, i + 3):
                if 0 <= r < N and d2[r, j] > b:
                    b = d2[r, j]
            bounds[i, j] = 2.0 * b
            if may_cross(vals[i, j], vals[i + 1, j], 2.0 * b, w):
                open_[i] = True
    return open_


@njit(**_PLAIN)
def dop853_states(ts, tsorted, t_old, h, y_old, F, X):
    """The states of a stack of DOP853 dense-output steps at the times ``ts`` into the rows of ``X``: the step
    ``searchsorted(tsorted, t) − 1`` (clipped; scipy's ``OdeSolution`` choice), then scipy's
    ``Dop853DenseOutput`` polynomial (``y = 0``; for each coefficient from the last: ``y += f``, then
    ``y *= x`` or ``y *= 1 − x`` alternately; ``y += y_old``) with ``x = (t − t_old)/h``."""
    nseg, order, ny = F.shape
    for i in range(ts.size):
        s = np.searchsorted(tsorted, ts[i]) - 1
        s = min(max(s, 0), nseg - 1)
        x = (ts[i] - t_old[s]) / h[s]
        for c in range(ny):
            y = 0.0
            for r in range(order):
                y += F[s, order - 1 - r, c]
                if r % 2 == 0:
                    y *= x
                else:
                    y *= 1 - x
            X[i, c] = y + y_old[s, c]


@njit(cache=True)
def flat_event_samples(ts, X, fl, il, ovT, olam, oF, slot, cv, cl, cf, band, G):
    """:func:`mode_event_samples` on the arrays of :func:`pack_flat` (offsets ``ovT``, ``olam``, ``oF`` in
    the mode's float buffer ``fb``)."""
    fb = fl[il[6]:il[6] + il[7]]
    ns = oF - olam
    out = np.empty(2 * il[0] + 2)
    for i in range(ts.size):
        ok, bad, T, V, P = general_mode_flat(ts[i], X[i], fl, il, out)
        if not ok or bad != -1:
            return i
        event_values(fb[ovT:ovT + ns], fb[olam:olam + ns], fb[oF:oF + ns], slot, cv, cl, cf, band, G[i])
    return -1


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
