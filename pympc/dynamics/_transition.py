"""Compiled pieces of a transition for small systems: the dense event HLCP in one call.

:func:`dense_event` builds what :func:`pympc.dynamics.events.event_problem`
builds with NumPy on its dense path (the biases with the Baumgarte terms, the
force columns of every pair, the accelerations ``q̈ = qdd0 + Q z`` under the
bilateral constraints, the rows of the HLCP and their scaling), without the
two dozen small NumPy calls and temporaries that made a 3-pair event HLCP cost
~100 µs.  The linear algebra is written out (Cholesky of a dense mass matrix,
Gaussian elimination with partial pivoting of ``J M⁻¹ Jᵀ``): the systems are a
few rows; the results equal the NumPy build's to round-off.  Anything the
kernel cannot decide (a mass matrix that is not positive definite, a singular
``J M⁻¹ Jᵀ``, a non-finite entry) is reported by a code, and the caller takes
the NumPy path, which raises or falls back exactly as before.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["dense_event", "EVENT_OK", "EVENT_NOT_SPD", "EVENT_SINGULAR", "EVENT_NOT_FINITE"]

EVENT_OK, EVENT_NOT_SPD, EVENT_SINGULAR, EVENT_NOT_FINITE = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _cholesky_solve(M, R):
    """``M⁻¹ R`` into ``R`` for a symmetric positive definite M (False if it is not, numerically)."""
    n = M.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        d = M[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0:
            return False
        L[j, j] = np.sqrt(d)
        for i in range(j + 1, n):
            v = M[i, j]
            for k in range(j):
                v -= L[i, k] * L[j, k]
            L[i, j] = v / L[j, j]
    for col in range(R.shape[1]):
        for i in range(n):
            v = R[i, col]
            for k in range(i):
                v -= L[i, k] * R[k, col]
            R[i, col] = v / L[i, i]
    _back_substitute(L.T, R)
    return True


@njit(cache=True, nogil=True)
def _dot(u, X, col):
    """``u · X[:, col]``."""
    v = 0.0
    for i in range(u.shape[0]):
        v += u[i] * X[i, col]
    return v


@njit(cache=True, nogil=True)
def _back_substitute(U, R):
    """``U⁻¹ R`` into ``R`` for an upper triangular U (its strictly lower part is not read)."""
    r = U.shape[0]
    for i in range(r - 1, -1, -1):
        for j in range(R.shape[1]):
            v = R[i, j]
            for k in range(i + 1, r):
                v -= U[i, k] * R[k, j]
            R[i, j] = v / U[i, i]


@njit(cache=True, nogil=True)
def _lu_solve(S, R):
    """``S⁻¹ R`` into ``R`` by Gaussian elimination with partial pivoting (S is overwritten; False on an
    exactly zero pivot, as LAPACK's ``gesv`` reports it)."""
    r = S.shape[0]
    k = R.shape[1]
    for col in range(r):
        p = col
        big = abs(S[col, col])
        for i in range(col + 1, r):
            if abs(S[i, col]) > big:
                big = abs(S[i, col])
                p = i
        if big == 0.0:
            return False
        if p != col:
            for j in range(r):
                S[col, j], S[p, j] = S[p, j], S[col, j]
            for j in range(k):
                R[col, j], R[p, j] = R[p, j], R[col, j]
        for i in range(col + 1, r):
            f = S[i, col] / S[col, col]
            if f != 0.0:
                for j in range(col + 1, r):
                    S[i, j] -= f * S[col, j]
                for j in range(k):
                    R[i, j] -= f * R[col, j]
    _back_substitute(S, R)
    return True


@njit(cache=True, nogil=True)
def dense_event(M, md, J, WN, WT, h, w, gdot, g, holonomic, bN, vN, gN, bT, vT, alpha, beta, dirs, mu, mu_s, cand):
    """The dense event HLCP of one assembly (see :func:`pympc.dynamics.events.event_problem`).

    Parameters
    ----------
    M : ndarray (n, n)
        Mass matrix (used only when ``md`` is empty).
    md : ndarray (n,) or (0,)
        The mass matrix's diagonal when it is diagonal (all entries > 0); empty otherwise.
    J, WN, WT, h, w, gdot, g, holonomic, bN, vN, gN, bT, vT : ndarray
        The assembly's arrays (bilateral rows, slot rows, forces, biases, velocities).
    alpha, beta : float
        Baumgarte parameters.
    dirs : ndarray of float
        Slip direction of every slot, 0 for the stick candidates.
    mu, mu_s : ndarray
        Kinetic and static coefficients.
    cand : ndarray of int64
        The stick candidates (the slots with ``dirs == 0``, ascending).

    Returns
    -------
    code, A, B, c, qdd0, Q
        ``code`` is :data:`EVENT_OK` or why the kernel declined (then the arrays are not meaningful);
        ``(A, B, c)`` the row-scaled HLCP, ``q̈ = qdd0 + Q z`` with ``z = (λ⁺, λ⁻, a⁺, a⁻, f⁺, f⁻)``.
    """
    n = h.shape[0]
    s = dirs.shape[0]
    c = cand.shape[0]
    r = J.shape[0]
    nz = 2 * s + 4 * c
    m = s + 2 * c
    empty = np.zeros((0, 0))
    # generalized-force columns: 0 the applied forces, then one per member of z
    X = np.zeros((n, nz + 1))
    for i in range(n):
        X[i, 0] = h[i]
    for k in range(s):
        fr = -mu[k] * dirs[k]
        for i in range(n):
            X[i, 1 + k] = WN[k, i] + fr * WT[k, i]
            X[i, 1 + s + k] = -WN[k, i] + fr * WT[k, i]
    for j in range(c):
        k = cand[j]
        for i in range(n):
            X[i, 1 + 2 * s + 2 * c + j] = 0.5 * WT[k, i]
            X[i, 1 + 2 * s + 3 * c + j] = -0.5 * WT[k, i]
    # M⁻¹ of the columns and of Jᵀ
    XJ = np.empty((n, r))
    for i in range(n):
        for a in range(r):
            XJ[i, a] = J[a, i]
    if md.shape[0]:
        for i in range(n):
            for col in range(nz + 1):
                X[i, col] = X[i, col] / md[i]
            for a in range(r):
                XJ[i, a] = XJ[i, a] / md[i]
    else:
        if not _cholesky_solve(M, X):
            return EVENT_NOT_SPD, empty, empty, np.zeros(0), np.zeros(0), empty
        if r and not _cholesky_solve(M, XJ):
            return EVENT_NOT_SPD, empty, empty, np.zeros(0), np.zeros(0), empty
    al2, be2 = 2 * alpha, beta * beta
    if r:   # the bilateral multipliers: (J M⁻¹ Jᵀ) ν = −b − J M⁻¹ cols, b = (bI, 0, …)
        S = np.empty((r, r))
        R = np.empty((r, nz + 1))
        for a in range(r):
            for b in range(r):
                S[a, b] = _dot(J[a], XJ, b)
            bI = w[a] + al2 * gdot[a] + be2 * (g[a] if holonomic[a] else 0.0)
            for col in range(nz + 1):
                R[a, col] = (-bI if col == 0 else -0.0) - _dot(J[a], X, col)
        if not _lu_solve(S, R):
            return EVENT_SINGULAR, empty, empty, np.zeros(0), np.zeros(0), empty
        for i in range(n):
            for col in range(nz + 1):
                X[i, col] = X[i, col] + _dot(XJ[i], R, col)
    qdd0 = np.empty(n)
    Q = np.empty((n, nz))
    for i in range(n):
        qdd0[i] = X[i, 0]
        for col in range(nz):
            Q[i, col] = X[i, 1 + col]
    # rows: WN q̈ + b̂N = 0 (one per slot), −(WT q̈ + b̂T) + a⁺ − a⁻ = 0 and f⁺ + f⁻ − 2 μ_s (λ⁺ + λ⁻) = 0 per candidate
    E = np.zeros((m, nz))
    e = np.zeros(m)
    for k in range(s):
        for col in range(nz):
            E[k, col] = _dot(WN[k], Q, col)
        e[k] = -(bN[k] + al2 * vN[k] + be2 * gN[k]) - _dot(WN[k], X, 0)
    for j in range(c):
        k = cand[j]
        row = s + j
        for col in range(nz):
            E[row, col] = -_dot(WT[k], Q, col)
        e[row] = (bT[k] + al2 * vT[k]) + _dot(WT[k], X, 0)
        E[row, 2 * s + j] += 1.0
        E[row, 2 * s + c + j] -= 1.0
        row = s + c + j
        E[row, 2 * s + 2 * c + j] = 1.0
        E[row, 2 * s + 3 * c + j] = 1.0
        E[row, k] = -2.0 * mu_s[k]
        E[row, s + k] = -2.0 * mu_s[k]
    # x = (λ⁺, a⁺, f⁻), y = (λ⁻, f⁺, a⁻); every row scaled by its largest entry
    A = np.empty((m, m))
    B = np.empty((m, m))
    cv = np.empty(m)
    finite = True
    for i in range(m):
        for j in range(s):
            A[i, j] = E[i, j]
            B[i, j] = E[i, s + j]
        for j in range(c):
            A[i, s + j] = E[i, 2 * s + j]
            A[i, s + c + j] = E[i, 2 * s + 3 * c + j]
            B[i, s + j] = E[i, 2 * s + 2 * c + j]
            B[i, s + c + j] = E[i, 2 * s + c + j]
        sc = 0.0
        for j in range(m):
            sc = max(sc, abs(A[i, j]), abs(B[i, j]))
        if sc == 0.0:
            sc = 1.0
        for j in range(m):
            A[i, j] = A[i, j] / sc
            B[i, j] = B[i, j] / sc
            finite = finite and np.isfinite(A[i, j]) and np.isfinite(B[i, j])
        cv[i] = e[i] / sc
        finite = finite and np.isfinite(cv[i])
    if not finite:
        return EVENT_NOT_FINITE, empty, empty, np.zeros(0), np.zeros(0), empty
    return EVENT_OK, A, B, cv, qdd0, Q
