"""The exact cross-check: an HLCP as a big-M MILP solved by HiGHS.

``A x + B y = c``, ``0 <= x <= U b``, ``0 <= y <= U (1 - b)``, ``b`` binary.

How big-M is chosen: ``U`` is the LP maximum of ``sum(x + y)`` over the
polyhedron ``{A x + B y = c, x, y >= 0}``, which bounds every member of every
solution, so the MILP is then *exact*: infeasible iff the HLCP has no
solution.  When that LP is unbounded no finite ``U`` is valid for all
solutions; ``big_m`` (or ``10 (1 + |c|)`` scaled by the data) is used and the
answer is marked ``exact=False`` (an infeasible MILP then proves nothing).

HiGHS's ``mip_feasibility_tolerance`` is tightened to 1e-9 and every MILP
point is re-solved on its support (``x_i`` or ``y_i`` forced to zero by the
binary) and verified on the original problem before it is reported.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

from ..complementarity import HLCP, LCP, HLCPResult, LCPResult, Status
from ..errors import OptionError, SolverNotFound
from ._quiet import c_stdout_silenced

__all__ = ["milp", "MILP_OPTIONS"]

MILP_OPTIONS = {
    "all_solutions": "list every complementary support with a solution, by no-good cuts (default False)",
    "max_solutions": "stop after this many supports when all_solutions (default 64)",
    "big_m": "big-M to use when no valid bound can be computed (default: from the data)",
    "time_limit": "HiGHS time limit in seconds (default none)",
    "tol": "verification tolerance (default 1e-9)",
    "verbose": "show HiGHS output (default False)",
}


def _bound(hlcp):
    """A valid big-M: max sum(x + y) over the LP relaxation; None if unbounded."""
    n = hlcp.n
    res = linprog(-np.ones(2 * n), A_eq=np.hstack([hlcp.A, hlcp.B]), b_eq=hlcp.c, bounds=(0, None), method="highs")
    if res.status == 2:
        return 0.0, True  # the relaxation is infeasible: so is the HLCP
    if res.status != 0:
        return None, False
    return max(1.0, -res.fun) * (1.0 + 1e-6) + 1e-6, False


def _polish(hlcp, b, tol):
    """Re-solve on the support of binary vector b; a verified (x, y) or None."""
    n = hlcp.n
    choice = b > 0.5
    pt = hlcp.support_point(choice, rcond=1e-12)
    if pt is not None:
        x, y = pt
        x[np.abs(x) <= tol] = 0.0
        y[np.abs(y) <= tol] = 0.0
    else:
        fixed = np.concatenate([~choice, choice])
        res = linprog(np.zeros(2 * n), A_eq=np.hstack([hlcp.A, hlcp.B]), b_eq=hlcp.c,
                      bounds=[(0.0, 0.0) if f else (0.0, None) for f in fixed], method="highs")
        if res.status != 0:
            return None
        x, y = res.x[:n], res.x[n:]
    return (x, y) if hlcp.is_solution(x, y, tol) else None


def milp(problem, **options):
    """Solve an LCP/HLCP exactly as a big-M MILP with HiGHS (``highspy``).

    Returns
    -------
    LCPResult or HLCPResult
        ``method="milp"``; ``info["exact"]`` says whether big-M was proved
        valid; with ``all_solutions=True``, ``info["solutions"]`` lists one
        verified point per support found.

    Examples
    --------
    >>> import pympc
    >>> from pympc.mpec import milp
    >>> r = milp(pympc.LCP([[-1.0]], [1.0]), all_solutions=True)   # z = 0 and z = 1
    >>> r.status.name, sorted(float(z[0]) for z, w in r.info["solutions"])
    ('SOLVED', [0.0, 1.0])
    """
    unknown = options.keys() - MILP_OPTIONS.keys()
    if unknown:
        raise OptionError(f"unknown option(s) {sorted(unknown)} for method 'milp'; valid: {sorted(MILP_OPTIONS)}")
    try:
        import highspy
    except ImportError:  # pragma: no cover - highspy is a dependency
        raise SolverNotFound("highspy is not installed: pip install highspy") from None
    tol = float(options.get("tol", 1e-9))
    is_lcp = isinstance(problem, LCP)
    if not is_lcp and not isinstance(problem, HLCP):
        raise OptionError(f"problem must be a pympc.LCP or pympc.HLCP, got {type(problem).__name__}.")
    hlcp = problem.to_hlcp() if is_lcp else problem
    n = hlcp.n

    def result(status, message, x, y, info):
        if is_lcp:
            info["solutions"] = [(yy, xx) for xx, yy in info.get("solutions", [])]
            return LCPResult(problem, status, message, y, x, 0, "milp", info)
        return HLCPResult(problem, status, message, x, y, 0, "milp", info)

    U, relax_infeasible = _bound(hlcp)
    zeros = np.zeros(n)
    if relax_infeasible:
        return result(Status.INFEASIBLE, "even the LP relaxation (complementarity dropped) is infeasible",
                      zeros, zeros, {"exact": True, "big_m": None, "solutions": [], "supports": 0})
    exact = U is not None
    if not exact:
        U = float(options.get("big_m") or 1e3 * (1.0 + np.abs(hlcp.c).max()))
    verbose = bool(options.get("verbose", False))
    with c_stdout_silenced(not verbose):
        h = highspy.Highs()
    h.setOptionValue("output_flag", verbose)
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    if options.get("time_limit") is not None:
        h.setOptionValue("time_limit", float(options["time_limit"]))
    inf = highspy.kHighsInf
    h.addVars(2 * n, np.zeros(2 * n), np.full(2 * n, inf))
    h.addVars(n, np.zeros(n), np.ones(n))
    h.changeColsIntegrality(n, np.arange(2 * n, 3 * n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger))
    AB = np.hstack([hlcp.A, hlcp.B, np.zeros((n, n))])
    link_x = np.hstack([np.eye(n), np.zeros((n, n)), -U * np.eye(n)])  # x - U b <= 0
    link_y = np.hstack([np.zeros((n, n)), np.eye(n), U * np.eye(n)])   # y + U b <= U
    rows = np.vstack([AB, link_x, link_y])
    lower = np.concatenate([hlcp.c, np.full(2 * n, -inf)])
    upper = np.concatenate([hlcp.c, np.zeros(n), np.full(n, U)])
    _add_dense_rows(h, rows, lower, upper)
    want_all = bool(options.get("all_solutions", False))
    max_sol = int(options.get("max_solutions", 64))
    found, supports = [], 0
    while True:
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            break
        sol = np.array(h.getSolution().col_value)
        b = np.round(sol[2 * n:])
        supports += 1
        # the support from the binaries, else from which member of each pair is larger
        pt = _polish(hlcp, b, tol)
        if pt is None:
            pt = _polish(hlcp, (sol[:n] > sol[n:2 * n]).astype(float), tol)
        if pt is not None and not any(np.allclose(pt[0], p[0], atol=1e3 * tol) and np.allclose(pt[1], p[1], atol=1e3 * tol)
                                      for p in found):
            found.append(pt)
        if not want_all or supports >= max_sol:
            break
        # no-good cut on b: sum_{b_i = 1} (1 - b_i) + sum_{b_i = 0} b_i >= 1
        cut = np.zeros(3 * n)
        cut[2 * n:] = np.where(b > 0.5, -1.0, 1.0)
        _add_dense_rows(h, cut[None, :], np.array([1.0 - b.sum()]), np.array([inf]))
    info = {"exact": exact, "big_m": U, "solutions": list(found), "supports": supports,
            "highs_status": h.modelStatusToString(status)}
    if found:
        x, y = found[0]
        more = f"; {len(found)} distinct solution(s) over {supports} support(s)" if want_all else ""
        return result(Status.SOLVED, f"MILP solution verified after re-solving on its support{more}", x, y, info)
    if supports == 0 and status == highspy.HighsModelStatus.kInfeasible:
        if exact:
            return result(Status.INFEASIBLE, "MILP infeasible with a valid big-M: the problem has no solution",
                          zeros, zeros, info)
        return result(Status.UNDECIDED, f"MILP infeasible, but big-M = {U:g} is not proved valid (unbounded LP "
                      "relaxation): no conclusion", zeros, zeros, info)
    if supports:
        return result(Status.NUMERICAL_FAILURE, "HiGHS returned points that fail verification on their support",
                      zeros, zeros, info)
    return result(Status.UNDECIDED, f"HiGHS ended with status {h.modelStatusToString(status)}", zeros, zeros, info)


def _add_dense_rows(h, rows, lower, upper):
    nz = rows != 0.0
    starts = np.concatenate([[0], np.cumsum(nz.sum(axis=1))[:-1]]).astype(np.int32)
    idx = np.nonzero(nz)[1].astype(np.int32)
    vals = rows[nz]
    h.addRows(rows.shape[0], lower, upper, int(nz.sum()), starts, idx, vals)
