"""Small dense linear algebra compiled with numba, shared by the complementarity solvers and the event transition.

Gaussian elimination with partial pivoting into the right-hand side, back substitution, and the reciprocal
1-norm condition number: the operations of LAPACK's ``gesv`` and ``gecon`` on matrices of a few rows, where a
compiled loop costs less than the call into LAPACK.
"""

import numpy as np
from numba import njit

__all__ = ["lu_solve", "back_substitute", "rcond_1", "pivot_row", "subtract_row", "lq_min_norm", "LQ_RCOND"]


@njit(cache=True, nogil=True)
def lu_solve(S, R):
    """``S⁻¹ R`` into ``R`` by Gaussian elimination with partial pivoting (S is overwritten; False on an
    exactly zero pivot, as LAPACK's ``gesv`` reports it)."""
    r = S.shape[0]
    k = R.shape[1]
    for col in range(r):
        p, big = pivot_row(S, col, col)
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
                subtract_row(S, i, col, f, col + 1, r)
                subtract_row(R, i, col, f, 0, k)
    back_substitute(S, R)
    return True


@njit(cache=True, nogil=True, inline="always")
def pivot_row(S, col, first):
    """Partial pivoting's choice in column ``col`` of ``S`` from row ``first`` on: ``(p, |S[p, col]|)``, the first row
    of the largest magnitude."""
    p = first
    big = abs(S[first, col])
    for i in range(first + 1, S.shape[0]):
        if abs(S[i, col]) > big:
            big = abs(S[i, col])
            p = i
    return p, big


@njit(cache=True, nogil=True, inline="always")
def subtract_row(S, i, p, f, lo, hi):
    """``S[i, lo:hi] −= f S[p, lo:hi]``, entry by entry (an elimination step)."""
    for j in range(lo, hi):
        S[i, j] -= f * S[p, j]


@njit(cache=True, nogil=True)
def back_substitute(U, R):
    """``U⁻¹ R`` into ``R`` for an upper triangular U (its strictly lower part is not read)."""
    r = U.shape[0]
    for i in range(r - 1, -1, -1):
        for j in range(R.shape[1]):
            v = R[i, j]
            for k in range(i + 1, r):
                v -= U[i, k] * R[k, j]
            R[i, j] = v / U[i, i]


@njit(cache=True, nogil=True)
def rcond_1(C, Ci):
    """The reciprocal 1-norm condition number ``1 / (‖C‖₁ ‖C⁻¹‖₁)`` of C, given its inverse ``Ci``."""
    n = C.shape[0]
    nc = 0.0
    ni = 0.0
    for j in range(n):
        sc = 0.0
        si = 0.0
        for i in range(n):
            sc += abs(C[i, j])
            si += abs(Ci[i, j])
        nc = max(nc, sc)
        ni = max(ni, si)
    return 1.0 / (nc * ni)


LQ_RCOND = 1e-8
""":func:`lq_min_norm` answers only where the triangular factor's exact reciprocal 1-norm condition is above this:
J's 2-norm condition then below ``1e8 k`` (k rows), far from the ``1 / (ε max(k, n))`` at which LAPACK's ``gelsd``
(``rcond = ε max(k, n)``) drops a singular value, so both compute the one least-norm solution, to round-off."""


@njit(cache=True, nogil=True)
def lq_min_norm(J, r, d):
    """The least-norm ``d`` with ``J d = r`` (``k ≤ n`` rows of full rank) into ``d`` by Householder's LQ
    factorization ``J = [L 0] Q``: ``d = Qᵀ [L⁻¹ r; 0]``.  False, ``d`` untouched, where ``k > n`` or the exact
    reciprocal 1-norm condition of L is not above :data:`LQ_RCOND` (rank deficient or nearly: the caller's SVD).
    A backward stable method: it differs from LAPACK's SVD answer by round-off only (ε times J's condition)."""
    k, n = J.shape
    if k == 0 or k > n:
        return False
    H = J.copy()               # rows i..: the rows reflected so far; row i from column i + 1 on: reflector i
    vv = np.empty(k)           # vᵀv of reflector i (its first entry kept in v0)
    v0 = np.empty(k)
    for i in range(k):
        alpha = H[i, i]
        sigma = 0.0
        for j in range(i + 1, n):
            sigma += H[i, j] * H[i, j]
        norm = np.sqrt(alpha * alpha + sigma)
        beta = -norm if alpha >= 0.0 else norm
        v0[i] = alpha - beta
        vv[i] = v0[i] * v0[i] + sigma
        H[i, i] = beta
        if vv[i] == 0.0:       # a zero row: singular (L's diagonal 0), caught below
            continue
        for m in range(i + 1, k):
            p = H[m, i] * v0[i]
            for j in range(i + 1, n):
                p += H[m, j] * H[i, j]
            f = 2.0 * p / vv[i]
            H[m, i] -= f * v0[i]
            for j in range(i + 1, n):
                H[m, j] -= f * H[i, j]
    L = np.zeros((k, k))
    for i in range(k):
        for j in range(i + 1):
            L[i, j] = H[i, j]
        if L[i, i] == 0.0 or not np.isfinite(L[i, i]):
            return False
    Li = np.zeros((k, k))      # L⁻¹ by forward substitution, for the exact condition number
    for c in range(k):
        for i in range(c, k):
            v = 1.0 if i == c else 0.0
            for j in range(c, i):
                v -= L[i, j] * Li[j, c]
            Li[i, c] = v / L[i, i]
    if not rcond_1(L, Li) > LQ_RCOND:
        return False
    z = np.zeros(n)
    for i in range(k):         # L z = r
        v = r[i]
        for j in range(i):
            v -= L[i, j] * z[j]
        z[i] = v / L[i, i]
    for i in range(k - 1, -1, -1):     # d = H_0 … H_{k−1} z (each reflector symmetric)
        if vv[i] == 0.0:
            continue
        p = z[i] * v0[i]
        for j in range(i + 1, n):
            p += z[j] * H[i, j]
        f = 2.0 * p / vv[i]
        z[i] -= f * v0[i]
        for j in range(i + 1, n):
            z[j] -= f * H[i, j]
    for j in range(n):
        d[j] = z[j]
    return True


from ._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
