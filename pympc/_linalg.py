"""Small dense linear algebra compiled with numba, shared by the complementarity solvers and the event transition.

Gaussian elimination with partial pivoting into the right-hand side, back substitution, and the reciprocal
1-norm condition number: the operations of LAPACK's ``gesv`` and ``gecon`` on matrices of a few rows, where a
compiled loop costs less than the call into LAPACK.
"""

from numba import njit

__all__ = ["lu_solve", "back_substitute", "rcond_1", "pivot_row", "subtract_row"]


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


from ._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
