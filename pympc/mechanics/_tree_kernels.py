"""The tree method's equations from the absolute ones, compiled (:func:`tree_equations`).

:meth:`pympc.mechanics.tree.TreeMethod.assemble` maps the absolute model's rows and forces to the tree
coordinates through the partial velocities ``T`` (``q̇ = T ẏ``) and the remainder ``Ṫ ẏ`` of its kinematics
(:meth:`~pympc.mechanics.tree.TreeMethod.kinematics`, where they are made): eight products and sums of small
matrices, one NumPy call and temporary each, in one call here (the same sums, to round-off).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["tree_equations"]


@njit(cache=True, nogil=True, inline="always")
def _rows(W, b, T, rem, WT, bT):
    """``W T`` into ``WT`` and ``b + W rem`` into ``bT``."""
    na, nd = T.shape
    for k in range(W.shape[0]):
        v = 0.0
        for i in range(na):
            v += W[k, i] * rem[i]
        bT[k] = b[k] + v
        for j in range(nd):
            v = 0.0
            for i in range(na):
                v += W[k, i] * T[i, j]
            WT[k, j] = v


@njit(cache=True, nogil=True)
def tree_equations(T, rem, Z, Q, J, w, WN, bN, WT, bT):
    """Kane's equations and the constraint rows in tree coordinates: ``(A, f, J T, w + J rem, WN T, bN + WN rem,
    WT T, bT + WT rem)`` with ``A = Tᵀ diag(Z) T`` and ``f = Tᵀ (Q − Z rem)`` (``Z`` the absolute mass diagonal,
    ``Q`` the absolute generalized forces, ``rem = Ṫ ẏ``), each a new C-contiguous array."""
    na, nd = T.shape
    A = np.empty((nd, nd))
    f = np.empty(nd)
    for j in range(nd):
        for p in range(j, nd):
            v = 0.0
            for i in range(na):
                v += T[i, j] * (Z[i] * T[i, p])
            A[j, p] = v
            A[p, j] = v
        v = 0.0
        for i in range(na):
            v += T[i, j] * (Q[i] - Z[i] * rem[i])
        f[j] = v
    JT, wT = np.empty((J.shape[0], nd)), np.empty(J.shape[0])
    _rows(J, w, T, rem, JT, wT)
    WNT, bNT = np.empty((WN.shape[0], nd)), np.empty(WN.shape[0])
    _rows(WN, bN, T, rem, WNT, bNT)
    WTT, bTT = np.empty((WT.shape[0], nd)), np.empty(WT.shape[0])
    _rows(WT, bT, T, rem, WTT, bTT)
    return A, f, JT, wT, WNT, bNT, WTT, bTT


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
