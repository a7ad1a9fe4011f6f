"""Exact searches for a solution of an HLCP with HiGHS: a convex QP when the problem is monotone, else a
branch-and-bound over complementary supports with LP relaxations.

Both are exact in the sense of the big-M MILP of :mod:`pympc.complementarity.milp`
(a point is verified on its support before it is reported; "no solution" is
a proof up to HiGHS's LP tolerances), and need no big-M at all, so that badly
scaled data or an unbounded polyhedron (the event HLCPs of mechanisms, where
no big-M can be proved) do not weaken them.

* **Monotone problems** (``u = M v + q`` through a well-conditioned ``A`` or
  ``B``, with ``M + Mᵀ`` positive definite): ``min vᵀ(M v + q)`` over
  ``v >= 0, M v + q >= 0`` is a convex QP whose minimum is 0 exactly at the
  solutions; an infeasible QP proves there is none.  One QP, no search.
* **Otherwise** depth first over pairs: each node's LP is
  ``{A x + B y = c, x, y >= 0}`` with the members fixed at zero so far; an LP
  vertex that is complementary is verified on its support and returned; else
  the pair with the largest ``min(x_i, y_i)`` is branched on, the child that
  zeroes its smaller member first.  HiGHS re-solves each node from the last
  basis (dual simplex after bound changes).  An infeasible LP prunes its
  subtree; the search ends with a verified point, with every subtree pruned
  (no solution, unless Lemke's method finds a point that verifies: HiGHS's
  absolute tolerances can call a relaxation of badly scaled data infeasible),
  or at the time limit (undecided).

Measured (``benchmarks/crosscheck_speed.py``): the 71 event HLCPs of a 50-slot
chain (50–54 pairs) in milliseconds each by the search, where the big-M MILP
was undecided after 5 s; random SPD LCPs of n = 50 and 100 by one QP, where
the MILP was undecided after 20 s and the search took over 20 s on two of three.
"""

from __future__ import annotations

import time

import numpy as np

from ._kernel import HLCP_DEFAULT_KERNEL, KERNEL_SOLVED, solve_hlcp_default, solve_lcp_form_default

__all__ = ["monotone_form", "solve_monotone_qp", "branch_and_bound", "lemke_point"]


def monotone_form(hlcp):
    """``(M, q, x_first)`` of an LCP form ``u = M v + q`` with ``M + Mᵀ`` positive definite, or None.

    ``x_first``: ``u`` is ``x`` (solved through ``A``); else ``u`` is ``y`` (through ``B``).
    """
    for P, Q, x_first in ((hlcp.A, hlcp.B, True), (hlcp.B, hlcp.A, False)):
        try:
            if np.linalg.cond(P) > 1e12:
                continue
            M, q = -np.linalg.solve(P, Q), np.linalg.solve(P, hlcp.c)
        except np.linalg.LinAlgError:
            continue
        mu = float(np.linalg.eigvalsh(0.5 * (M + M.T)).min())
        if mu > 1e-9 * max(1.0, float(np.abs(M).max())):
            return M, q, x_first
    return None


def _quiet(highspy, verbose, time_limit):
    from ._highs import QuietHighs

    h = QuietHighs(verbose)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.setOptionValue("dual_feasibility_tolerance", 1e-9)
    if time_limit is not None:
        h.setOptionValue("time_limit", max(float(time_limit), 1e-6))
    return h


def solve_monotone_qp(highspy, M, q, verbose=False, time_limit=None):
    """Minimise ``vᵀ(M v + q)`` over ``v >= 0``, ``M v + q >= 0``; returns ``(v, status)``.

    ``status``: ``"optimal"`` (``v`` the minimiser, to be verified by the
    caller), ``"infeasible"`` (no ``v`` is feasible: the LCP has no solution)
    or ``"undecided"`` (time limit, numerical trouble).
    """
    from ._highs import add_dense_rows

    # the LCP is homogeneous: v solves (M, q) iff v a / b solves (M / a, q / b); HiGHS's QP works on data of size
    # one (with |q| ~ 1e-6 it reported no status or did not stop)
    a, b = max(float(np.abs(M).max()), 1e-300), max(float(np.abs(q).max()), 1e-300)
    M, q = M / a, q / b
    n = len(q)
    h = _quiet(highspy, verbose, time_limit)
    h.setOptionValue("qp_iteration_limit", 100 * n + 1000)
    inf = highspy.kHighsInf
    h.addVars(n, np.zeros(n), np.full(n, inf))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), q)
    add_dense_rows(h, M, -q, np.full(n, inf))
    H = np.tril(M + M.T)                      # Hessian of vᵀ M v, lower triangle, column-wise
    starts, index, value = [0], [], []
    for j in range(n):
        rows = np.flatnonzero(H[j:, j]) + j
        index.extend(rows.tolist())
        value.extend(H[rows, j].tolist())
        starts.append(len(index))
    h.passHessian(n, len(index), int(highspy.HessianFormat.kTriangular), np.array(starts[:-1], np.int32),
                  np.array(index, np.int32), np.array(value, float))
    h.run()
    st = h.getModelStatus()
    if st == highspy.HighsModelStatus.kOptimal:
        return np.array(h.getSolution().col_value) * (b / a), "optimal"
    if st == highspy.HighsModelStatus.kInfeasible:
        return None, "infeasible"
    return None, "undecided"


def branch_and_bound(highspy, hlcp, verify, verbose=False, time_limit=None, clock=time.perf_counter):
    """Depth-first search over complementary supports with LP relaxations (see the module).

    ``verify(choice)`` re-solves on the support ``choice`` (True: ``x_i`` may
    be positive) and returns a verified ``(x, y)`` or None.  Returns
    ``(point, status, nodes)`` with status ``"found"``, ``"exhausted"`` (no
    solution: every leaf LP-infeasible and Lemke's point, if any, fails verification; a point of Lemke's that
    verifies is returned as ``"found"``), ``"undecided"`` (a feasible leaf whose
    point did not verify: no proof either way) or ``"time"``.
    """
    from ._highs import add_dense_rows

    t0 = clock()
    n = hlcp.n
    h = _quiet(highspy, verbose, None)
    inf = highspy.kHighsInf
    h.addVars(2 * n, np.zeros(2 * n), np.full(2 * n, inf))
    # the supports with a solution do not change when c is scaled: the LPs see c of size one (HiGHS's tolerances
    # are absolute); rows are scaled to unit size too
    rows = np.hstack([hlcp.A, hlcp.B])
    c = hlcp.c / max(float(np.abs(hlcp.c).max()), 1e-300)
    r = np.maximum(np.abs(rows).max(axis=1), np.abs(c))
    r[r == 0] = 1.0
    add_dense_rows(h, rows / r[:, None], c / r, c / r)
    zero_tol = 1e-9
    cols, lower = np.arange(2 * n, dtype=np.int32), np.zeros(2 * n)
    stack, nodes = [np.zeros(2 * n, bool)], 0
    unproved = False       # a feasible leaf whose point did not verify: no proof that there is no solution
    while stack:
        if time_limit is not None and clock() - t0 > time_limit:
            return None, "time", nodes
        fixed = stack.pop()
        h.changeColsBounds(2 * n, cols, lower, np.where(fixed, 0.0, inf))
        if time_limit is not None:
            h.setOptionValue("time_limit", max(time_limit - (clock() - t0), 1e-6))
        h.run()
        nodes += 1
        st = h.getModelStatus()
        if st not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible):
            # HiGHS ended "Unknown" on nearly degenerate nodes of a chain event: that node afresh, without
            # presolve, then by the interior point method
            for option, value in (("presolve", "off"), ("solver", "ipm")):
                h.setOptionValue(option, value)
                h.clearSolver()
                h.run()
                st = h.getModelStatus()
                if st in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible):
                    break
            h.setOptionValue("presolve", "choose")
            h.setOptionValue("solver", "choose")
        if st in (highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible):
            continue           # (with a zero objective the LP cannot be unbounded)
        if st != highspy.HighsModelStatus.kOptimal:
            return None, "time", nodes   # time limit or numerical trouble: no proof either way
        u = np.array(h.getSolution().col_value)
        x, y = u[:n], u[n:]
        free = ~(fixed[:n] | fixed[n:])
        viol = np.where(free, np.minimum(x, y), -np.inf)
        i = int(np.argmax(viol))
        if not free.any() or viol[i] <= zero_tol:
            pt = verify(x > y)
            if pt is not None:
                return pt, "found", nodes
            if not free.any():
                unproved = True
                continue
        zero_x, zero_y = fixed.copy(), fixed.copy()
        zero_x[i], zero_y[n + i] = True, True
        first, second = (zero_x, zero_y) if x[i] <= y[i] else (zero_y, zero_x)
        stack.append(second)
        stack.append(first)
    if unproved:
        return None, "undecided", nodes
    # "no solution" rests on HiGHS's absolute tolerances, which can call a relaxation of badly scaled data
    # infeasible (a nearly singular support holding a solution at the scale of its terms): Lemke's point, if it
    # verifies, says the search was wrong
    pt = lemke_point(hlcp)
    return (pt, "found", nodes) if pt is not None else (None, "exhausted", nodes)


def lemke_point(hlcp, tol=1e-9):
    """The point ``(x, y)`` of Lemke's method with the default options (its one compiled call,
    :func:`~pympc.complementarity._kernel.solve_lcp_form_default` for an LCP's form,
    :func:`~pympc.complementarity._kernel.solve_hlcp_default` else) if it ends on a point that ``hlcp.is_solution``
    accepts within ``tol``; else None (also where this numba lacks that call).  The check of a "no solution"
    by the support search and the enumeration (which :func:`pympc.lemke` itself calls: hence the kernel)."""
    n = hlcp.n
    if hlcp._a_diagonal:            # an LCP's form: Lemke on LCP(−B/a, c/a), as pympc.lemke takes it
        code, _, _, out = solve_lcp_form_default(hlcp.A, hlcp.B, hlcp.c)
        x, y = (out[n:2 * n], out[:n]) if code == KERNEL_SOLVED else (None, None)
    elif HLCP_DEFAULT_KERNEL:
        decided, code, _, _, _, x, y, _, negative, _, _ = solve_hlcp_default(hlcp.A, hlcp.B, hlcp.c)
        if not decided or code != KERNEL_SOLVED or negative:
            x = None
    else:                           # pragma: no cover - depends on the numba release
        x = None
    return None if x is None or not hlcp.is_solution(x, y, tol) else (x, y)
