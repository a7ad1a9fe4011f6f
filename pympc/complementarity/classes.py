"""Matrix-class tests that decide uniqueness: P-matrices and the column W-property."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ProblemError
from ._kernel import ruiz_scaling
from .problems import HLCP, LCP

__all__ = ["Classification", "classify", "is_p_matrix"]


@dataclass(frozen=True)
class Classification:
    """What :func:`classify` proved about a problem.

    Attributes
    ----------
    n : int
    p_matrix : bool or None
        Whether M (for an HLCP: the matrix of its LCP form) is a P-matrix;
        None if not decided (too large for the exact test and no sufficient
        condition held).
    column_w : bool or None
        Whether ``(A, -B)`` has the column W-property (for an LCP, the same as ``p_matrix``).
    unique_for_every_rhs : bool or None
        True iff the problem has exactly one solution for every right-hand side.
    how : str
        How it was decided (which test, which witness).
    witness : tuple of int or None
        A principal index set with a nonpositive minor, when ``p_matrix`` is False.
    """

    n: int
    p_matrix: bool | None
    column_w: bool | None
    unique_for_every_rhs: bool | None
    how: str
    witness: tuple | None = None


def is_p_matrix(M, max_exact=16, tol=0.0):
    """Decide whether ``M`` is a P-matrix (every principal minor positive).

    The tests run on the equilibrated matrix ``diag(r) M diag(s)`` (Ruiz,
    powers of two), which has the same principal-minor signs.  Uses, in order: a nonpositive diagonal entry (not P); a positive definite
    symmetric part (P); the exact recursive test of Tsatsomeros and Li
    (``det M[α ∪ {1}] = m_11 det (M/m_11)[α]``, cost ``O(2^n)``) for
    ``n <= max_exact``.

    Returns
    -------
    (bool or None, str, tuple or None)
        The answer, how it was reached, and a witness index set when not P.

    Examples
    --------
    >>> from pympc.complementarity.classes import is_p_matrix
    >>> is_p_matrix([[1.0, 2.0], [0.0, 1.0]])[0]
    True
    >>> is_p_matrix([[1.0, 2.0], [2.0, 1.0]])[:2]
    (False, 'exact recursive principal-minor test (Tsatsomeros-Li): minor over (0, 1) is -3')
    """
    M0 = np.asarray(M, float)
    n = M0.shape[0]
    # the P-property is unchanged by positive row and column scalings: test the equilibrated
    # matrix (powers of two, exact), so that the thresholds follow the scales of rows and columns
    r, s = ruiz_scaling(np.ascontiguousarray(M0), 20, False)
    M = M0 * r[:, None] * s
    scale = max(1.0, float(np.abs(M).max()))
    thr = tol * scale
    diag = np.diag(M)
    if (diag <= thr).any():
        i = int(np.flatnonzero(diag <= thr)[0])
        return False, f"diagonal entry M[{i},{i}] = {M0[i, i]:g} is not positive", (i,)
    try:
        np.linalg.cholesky(0.5 * (M + M.T))
        return True, "symmetric part is positive definite (Cholesky)", None
    except np.linalg.LinAlgError:
        pass
    if n > max_exact:
        return None, f"n = {n} exceeds max_exact = {max_exact} and no sufficient condition held", None
    # iterative Tsatsomeros-Li; an entry is (matrix, its original indices,
    # indices already pivoted in, product of those pivots = their minor)
    stack = [(M, tuple(range(n)), (), 1.0)]
    while stack:
        A, idx, inc, factor = stack.pop()
        minor = factor * A[0, 0]
        if minor <= thr:
            wit = tuple(sorted(inc + (idx[0],)))
            minor = float(np.linalg.det(M0[np.ix_(wit, wit)]))  # reported in the caller's scale
            return False, f"exact recursive principal-minor test (Tsatsomeros-Li): minor over {wit} is {minor:.6g}", wit
        if A.shape[0] == 1:
            continue
        S = A[1:, 1:] - np.outer(A[1:, 0], A[0, 1:]) / A[0, 0]
        stack.append((A[1:, 1:], idx[1:], inc, factor))
        stack.append((S, idx[1:], inc + (idx[0],), minor))
    return True, "exact recursive principal-minor test (Tsatsomeros-Li): all 2^n - 1 minors positive", None


def classify(problem, max_exact=16):
    """Prove what can be proved about uniqueness of an LCP or HLCP.

    For an LCP: is M a P-matrix (unique solution for every q)?  For an HLCP:
    does ``(A, -B)`` have the column W-property (unique solution for every c)?
    It does iff some (then every) nonsingular complementary basis gives an
    LCP form whose matrix is a P-matrix; an HLCP with no nonsingular
    complementary basis does not have it.

    Note that the event HLCPs of stick candidates never have the column
    W-property, although their solution is usually unique: decide those by
    :func:`~pympc.enumerate_solutions`.

    Examples
    --------
    >>> import pympc
    >>> pympc.classify(pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-1.0, 0.0])).p_matrix
    True
    """
    if isinstance(problem, LCP):
        p, how, wit = is_p_matrix(problem.M, max_exact)
        return Classification(problem.n, p, p, p, how, wit)
    if not isinstance(problem, HLCP):
        raise ProblemError(f"problem must be a pympc.LCP or pympc.HLCP, got {type(problem).__name__}.")
    problem = problem.equilibrated()[0]  # same classes, thresholds that follow the row and column scales
    basis = problem.find_basis()
    if basis is None:
        return Classification(problem.n, False, False, False,
                              "no nonsingular complementary basis: every column-representative matrix is singular")
    red = problem.to_lcp(basis)
    p, how, wit = is_p_matrix(red.lcp.M, max_exact)
    kind = "A" if basis.all() else "a pivoted basis"
    return Classification(problem.n, p, p, p, f"LCP form through {kind}: {how}", wit)
