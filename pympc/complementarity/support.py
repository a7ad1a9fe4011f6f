"""Solving on a support, the one place pympc does it.

A *support* chooses which unknowns of a linear system may be nonzero.  For an
HLCP it chooses, for each pair, ``x_i`` or ``y_i``; for IPOPT's active-set
polish it fixes variables at their bounds.  Everything below rests on
:func:`solve_columns` (``E[:, free] v = rhs``): :meth:`~pympc.HLCP.support_point`,
the verified point of an HLCP on a support (:func:`support_solution`, used by
the enumeration, the QP, the support search and the big-M MILP) and the
polish of :mod:`pympc.mpec.polish`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack as _lapack

__all__ = ["lu_rcond", "solve_columns", "lp_point", "SupportPoint", "support_solution", "solve_on_support"]


def lu_rcond(C):
    """LU factors of ``C`` and LAPACK's estimate of its reciprocal 1-norm condition number.

    Returns ``(lu, piv, rcond)``; ``rcond`` is 0 for an exactly singular matrix.
    An O(n²) estimate after the O(n³) factorization, far cheaper than an SVD.
    """
    lu, piv, info = _lapack.dgetrf(C)
    if info > 0:
        return lu, piv, 0.0
    anorm = float(np.abs(C).sum(axis=0).max())
    rcond, _ = _lapack.dgecon(lu, anorm, norm="1")
    return lu, piv, float(rcond)


def solve_columns(E, rhs, free, rcond=1e-12):
    """The ``v`` with ``E[:, free] v = rhs``, or None.

    Parameters
    ----------
    E : ndarray, shape (m, k)
    rhs : ndarray, shape (m,)
    free : ndarray of bool, shape (k,), or of int
        The columns that may be nonzero (the others are zero, or already
        moved into ``rhs`` by the caller): a mask, or their indices in the
        order of ``v`` (the order of the columns of the factorized matrix).
    rcond : float
        A square system is solved by LU and refused (None) when LAPACK's
        estimate of its reciprocal condition number is at most ``rcond``
        (0: only an exactly singular one).

    Returns
    -------
    ndarray or None
        Square: the LU solution.  More rows than columns: the least-squares
        solution if the columns are independent (the caller checks the rows).
        Fewer rows than columns: None (not determined).
    """
    C = E[:, free]
    m, k = C.shape
    if k == 0:
        return np.zeros(0)
    if m == k:
        lu, piv, rc = lu_rcond(C)
        if rc <= rcond:
            return None
        return _lapack.dgetrs(lu, piv, rhs)[0]
    if m > k:
        v, _, rank, _ = np.linalg.lstsq(C, rhs, rcond=None)
        return v if rank == k else None
    return None


def lp_point(E, rhs, fixed_zero):
    """A point of ``{u >= 0 : E u = rhs, u_j = 0 where fixed_zero}`` by HiGHS's LP (scipy), or None if empty."""
    from scipy.optimize import linprog

    bounds = [(0.0, 0.0) if f else (0.0, None) for f in fixed_zero]
    res = linprog(np.zeros(E.shape[1]), A_eq=E, b_eq=rhs, bounds=bounds, method="highs")
    return res.x if res.status == 0 else None


class SupportPoint(NamedTuple):
    """What :func:`support_solution` found on one support.

    Attributes
    ----------
    x, y : ndarray or None
        The verified point (nonnegative), or None.
    singular : bool
        The support matrix ``C_α`` is singular: the point, if any, is an LP's.
    lps : int
        LPs solved (0 or 1).
    """

    x: np.ndarray | None
    y: np.ndarray | None
    singular: bool
    lps: int


def support_solution(hlcp, choice, tol=1e-9, rcond=1e-12, lp_tol=None, lu_point=False):
    """The point of ``hlcp`` on the support ``choice``, verified, with how it was found.

    ``choice[i]`` True: ``x_i`` may be positive and ``y_i = 0``; False: the
    reverse.  A nonsingular support matrix (reciprocal condition above
    ``rcond``) gives the point by one LU solve: refused if some entry is
    negative beyond ``tol (1 + max|u|)`` (the wrong sign, not round-off), its
    round-off negatives set to zero, and accepted if
    :meth:`~pympc.HLCP.is_solution` accepts it within ``tol`` (else once more
    with its entries below ``tol max|u|`` set to zero).  A singular one: if
    ``c`` is in the range of ``C_α`` (least squares, within
    ``lp_tol (1 + max|c|)``), an LP over ``{A x + B y = c, x, y >= 0}`` with
    the other members fixed at zero; its point is verified within ``lp_tol``
    (default ``tol``; LP points carry the LP's absolute tolerances).

    ``lu_point``: a singular support found empty so (those tests work at the
    scale of ``c``) still gives its LU point if its matrix is not exactly
    singular and the point verifies as a nonsingular support's does (badly
    scaled data: a nearly singular support can hold a solution at the scale
    of its terms that the range test and the LP miss).  The enumeration's
    second look (:func:`~pympc.complementarity.enumeration.enumerate_solutions`)
    asks for it.

    Returns
    -------
    SupportPoint
    """
    n = hlcp.n
    choice = np.asarray(choice, bool)
    lp_tol = tol if lp_tol is None else lp_tol
    pt = hlcp.support_point(choice, rcond=rcond)
    if pt is not None:
        u = _checked(hlcp, pt, tol)
        return SupportPoint(None, None, False, 0) if u is None else SupportPoint(u[:n], u[n:], False, 0)
    empty = lambda lps: _lu_point(hlcp, choice, tol, lps) if lu_point else SupportPoint(None, None, True, lps)  # noqa: E731
    C = hlcp.column_matrix(choice)
    v = np.linalg.lstsq(C, hlcp.c, rcond=None)[0]
    if np.abs(C @ v - hlcp.c).max() > lp_tol * (1.0 + float(np.abs(hlcp.c).max())):
        return empty(0)   # c is not in the range of C_α (at the scale of c): no point at all, no LP needed
    fixed = np.concatenate([~choice, choice])
    u = lp_point(np.hstack([hlcp.A, hlcp.B]), hlcp.c, fixed)
    if u is None:
        return empty(1)
    u = np.where(fixed, 0.0, np.maximum(u, 0.0))
    if not hlcp.is_solution(u[:n], u[n:], lp_tol):
        return empty(1)
    return SupportPoint(u[:n], u[n:], True, 1)


def _lu_point(hlcp, choice, tol, lps, rcond=0.0):
    """A singular support that the range test or the LP found empty: its LU point if LAPACK's estimate of the
    matrix's reciprocal condition is above ``rcond`` (0: not exactly singular) and the point verifies as a
    nonsingular support's would, else no point (``lps`` LPs solved)."""
    n = hlcp.n
    pt = hlcp.support_point(choice, rcond=rcond)
    u = None if pt is None else _checked(hlcp, pt, tol)
    return SupportPoint(None, None, True, lps) if u is None else SupportPoint(u[:n], u[n:], True, lps)


def _checked(hlcp, pt, tol):
    """The support's point ``pt = (x, y)``, nonnegative, if it is a solution (see :func:`support_solution`), else
    None."""
    n = hlcp.n
    u = np.concatenate(pt)
    big = float(np.abs(u).max())
    if u.min() < -tol * (1.0 + big):
        return None
    u = np.maximum(u, 0.0)
    if not hlcp.is_solution(u[:n], u[n:], tol):
        u = np.where(u <= tol * big, 0.0, u)
        if not hlcp.is_solution(u[:n], u[n:], tol):
            return None
    return u


def solve_on_support(hlcp, choice, tol=1e-9):
    """The verified point ``(x, y)`` of ``hlcp`` on the support ``choice``, or None (see :func:`support_solution`)."""
    sp = support_solution(hlcp, choice, tol)
    return None if sp.x is None else (sp.x, sp.y)
