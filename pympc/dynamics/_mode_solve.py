"""The linear equations of a fixed mode with a dense mass matrix, compiled (:func:`dense_mode`).

:func:`pympc.dynamics.modes.solve_mode` on an assembly whose mass matrix is not diagonal (the tree formulation's
``A = Tᵀ Z T``) solves ``M q̈ = h + G ν``, ``C q̈ + b = 0`` through scipy's Cholesky and LAPACK's ``gesv``: a
dozen wrapped calls and temporaries for systems of a few rows, most of the cost.  :func:`dense_mode` does the
same steps in one call, with the package's compiled linear algebra (the Cholesky solve of
:mod:`pympc.dynamics._transition`, Gaussian elimination with partial pivoting of :mod:`pympc._linalg`): equal to
the NumPy path to round-off.  What it cannot decide (a mass matrix that is not positive definite, a singular
``C M⁻¹ G``, a non-finite entry or result) it reports by a code, and the caller takes the NumPy path, which
raises or falls back exactly as before.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._linalg import lu_solve
from ._transition import _cholesky_solve, _dot

__all__ = ["dense_mode", "MODE_OK", "MODE_DECLINED"]

MODE_OK, MODE_DECLINED = 0, 1


@njit(cache=True, nogil=True)
def _finite(X):
    """Are all entries of the 2-d ``X`` finite?"""
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if not np.isfinite(X[i, j]):
                return False
    return True


@njit(cache=True, nogil=True)
def dense_mode(M, J, WN, WT, h, w, gdot, g, holonomic, bN, vN, gN, bT, vT, alpha, beta, mu, fs, stick):
    """``(code, q̈, ν, F, aT)`` of one assembly in one mode (see :func:`pympc.dynamics.modes.solve_mode`).

    ``M`` the dense mass matrix (symmetric positive definite, else declined); ``J, WN, WT, h, w, gdot, g,
    holonomic, bN, vN, gN, bT, vT`` the assembly's arrays; ``alpha, beta`` the Baumgarte parameters; ``mu`` the
    kinetic coefficients, ``fs`` the slots' ``s_k σ_k`` (0 for sticking ones), ``stick`` the sticking slots (int64,
    ascending).  ``ν`` holds the bilateral multipliers, the normal forces λ and the sticking slots' friction
    forces, in this order; ``F`` every slot's friction force, ``aT = WT q̈ + bT``.  ``code`` is :data:`MODE_OK`,
    or :data:`MODE_DECLINED` (the arrays then meaningless): M not positive definite, ``C M⁻¹ G`` with an exactly
    zero pivot, or a non-finite entry in M, the columns, h or the results (what scipy's checks or LAPACK report).

    The steps of :func:`pympc.dynamics.modes.solve_linear`: ``X = M⁻¹ [h, G]`` (Cholesky), ``S = C X_G``,
    ``ν = S⁻¹ (−b − C x₀)`` (partial pivoting), ``q̈ = x₀ + X_G ν``.
    """
    n = h.shape[0]
    m = J.shape[0]
    s = WN.shape[0]
    c = stick.shape[0]
    r = m + s + c
    e1 = np.zeros(0)
    fric = np.empty(s)
    for k in range(s):
        fric[k] = -mu[k] * fs[k]
    X = np.empty((n, r + 1))           # column 0: h; then Gᵀ's rows = (J, WN + fric WT, WT_stick)
    for i in range(n):
        X[i, 0] = h[i]
        for a in range(m):
            X[i, 1 + a] = J[a, i]
        for k in range(s):
            X[i, 1 + m + k] = WN[k, i] + fric[k] * WT[k, i]
        for j in range(c):
            X[i, 1 + m + s + j] = WT[stick[j], i]
    if not (_finite(M) and _finite(X)) or not _cholesky_solve(M, X):
        return MODE_DECLINED, e1, e1, e1, e1
    al2, be2 = 2 * alpha, beta * beta
    S = np.empty((r, r))
    R = np.empty((r, 1))
    for a in range(r):                 # rows C = (J, WN, WT_stick), biases b = (bI, b̂N, b̂T)
        if a < m:
            row = J[a]
            b = w[a] + al2 * gdot[a] + be2 * (g[a] if holonomic[a] else 0.0)
        elif a < m + s:
            row = WN[a - m]
            b = bN[a - m] + al2 * vN[a - m] + be2 * gN[a - m]
        else:
            k = stick[a - m - s]
            row = WT[k]
            b = bT[k] + al2 * vT[k]
        for col in range(r):
            S[a, col] = _dot(row, X, 1 + col)
        R[a, 0] = -b - _dot(row, X, 0)
    if r and not lu_solve(S, R):
        return MODE_DECLINED, e1, e1, e1, e1
    qdd = np.empty(n)
    for i in range(n):
        v = 0.0
        for col in range(r):
            v += X[i, 1 + col] * R[col, 0]
        qdd[i] = X[i, 0] + v
    nu = np.empty(r)
    for a in range(r):
        nu[a] = R[a, 0]
    F = np.empty(s)
    for k in range(s):
        F[k] = fric[k] * nu[m + k]
    for j in range(c):
        F[stick[j]] = nu[m + s + j]
    aT = np.empty(s)
    for k in range(s):
        v = 0.0
        for i in range(n):
            v += WT[k, i] * qdd[i]
        aT[k] = v + bT[k]
    if not (_finite(qdd.reshape(1, n)) and _finite(nu.reshape(1, r)) and _finite(aT.reshape(1, s))
            and _finite(F.reshape(1, s))):
        return MODE_DECLINED, e1, e1, e1, e1
    return MODE_OK, qdd, nu, F, aT


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
