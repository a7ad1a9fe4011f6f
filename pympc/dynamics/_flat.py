"""Compiled loops over many samples of one mode on the arrays of :func:`~pympc.mechanics._kernels.pack_flat`.

The trajectory's rows (forces, slip velocities, energies, drift at every output sample) of a mode
without Python parts: one call per phase instead of an evaluation and an assembly object per sample.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..mechanics._kernels import general_mode_flat

__all__ = ["flat_rows"]


@njit(cache=True)
def flat_rows(ts, X, ranges, fl, il, ovT, olam, oF, ogN, lam, F, vT, T, V, drift):
    """The mode solve at every sample ``(ts[i], X[i])`` for ``i`` in the ranges ``ranges[2 r] <= i < ranges[2 r + 1]``:
    the slots' ``λ``, ``F``, ``vT`` (offsets ``olam``, ``oF``, ``ovT`` of the mode's buffer) into the rows ``i`` of
    ``lam``, ``F``, ``vT``; kinetic and potential energy into ``T``, ``V``; ``drift[i]`` = max |gN| (the only
    position constraints of a model without joints; NaN if one is NaN).  Returns −1, or the first sample whose
    solve failed (the caller repeats it alone to say why)."""
    o = il[6]
    ns = oF - olam
    out = np.empty(2 * il[0] + 2)
    for r in range(ranges.size // 2):
        for i in range(ranges[2 * r], ranges[2 * r + 1]):
            ok, bad, Ti, Vi, P = general_mode_flat(ts[i], X[i], fl, il, out)
            if not ok or bad != -1:
                return i
            d = 0.0
            for k in range(ns):
                lam[i, k] = fl[o + olam + k]
                F[i, k] = fl[o + oF + k]
                vT[i, k] = fl[o + ovT + k]
                g = abs(fl[o + ogN + k])
                if math.isnan(g) or math.isnan(d):
                    d = math.nan
                elif g > d:
                    d = g
            T[i], V[i], drift[i] = Ti, Vi, d
    return -1


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
