"""The point of an HLCP on a given complementary support, verified: the one place pympc's exact methods get it."""

from __future__ import annotations

import numpy as np

__all__ = ["solve_on_support"]


def solve_on_support(hlcp, choice, tol=1e-9):
    """The solution of ``hlcp`` with support ``choice``, verified, or None.

    ``choice[i]`` True: ``x_i`` may be positive and ``y_i = 0``; False: the
    reverse.  A nonsingular support matrix gives the point by one LU solve
    (round-off below ``tol`` times the point's size set to zero); a singular
    one by an LP over ``{A x + B y = c, x, y >= 0}`` with the other members
    fixed at zero.  The point is returned only if
    :meth:`~pympc.HLCP.is_solution` accepts it within ``tol``.
    """
    n = hlcp.n
    choice = np.asarray(choice, bool)
    pt = hlcp.support_point(choice, rcond=1e-12)
    if pt is not None:
        x, y = pt
        if hlcp.is_solution(x, y, tol):
            return x, y
        small = tol * max(float(np.abs(x).max()), float(np.abs(y).max()))   # round-off, relative to the point
        x, y = np.where(np.abs(x) <= small, 0.0, x), np.where(np.abs(y) <= small, 0.0, y)
    else:
        from scipy.optimize import linprog

        fixed = np.concatenate([~choice, choice])
        res = linprog(np.zeros(2 * n), A_eq=np.hstack([hlcp.A, hlcp.B]), b_eq=hlcp.c,
                      bounds=[(0.0, 0.0) if f else (0.0, None) for f in fixed], method="highs")
        if res.status != 0:
            return None
        x, y = res.x[:n], res.x[n:]
    return (x, y) if hlcp.is_solution(x, y, tol) else None
