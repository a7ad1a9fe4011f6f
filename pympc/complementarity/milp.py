"""The exact cross-check: an HLCP as a big-M MILP solved by HiGHS.

``A x + B y = c``, ``0 <= x <= U_x b``, ``0 <= y <= U_y (1 - b)``, ``b`` binary.

How big-M is chosen (the first rule that applies):

1. the LP maximum of ``sum(x + y)`` over the polyhedron
   ``{A x + B y = c, x, y >= 0}`` when that LP is bounded: it bounds every
   member of every solution;
2. a monotone bound: if ``A`` is invertible and ``M = -A⁻¹B`` has a positive
   definite symmetric part (smallest eigenvalue ``μ``), then every solution
   has ``x = M y + q`` (``q = A⁻¹c``) and ``yᵀx = 0``, so
   ``μ |y|² <= yᵀ M y = -yᵀq`` gives ``|y|₂ <= |q|₂/μ`` and
   ``x_i <= |M_i|₂ |q|₂/μ + |q_i|``; the same with the roles of ``x`` and
   ``y`` exchanged when ``B`` is invertible.  This covers LCPs with positive
   definite (not necessarily symmetric) M;
3. otherwise no finite bound is proved: ``big_m`` (or ``1e3 (1 + |c|)``) is
   used and the answer is marked ``exact=False`` (an infeasible MILP then
   proves nothing).

Under rules 1 and 2 the MILP is *exact*: infeasible iff the HLCP has no
solution (the bounds carry a relative margin of 1e-6 for round-off).
HiGHS's ``mip_feasibility_tolerance`` is tightened to 1e-9 and every MILP
point is re-solved on its support (``x_i`` or ``y_i`` forced to zero by the
binary) and verified on the original problem before it is reported.
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionError, SolverNotFound
from .problems import HLCP, LCP
from .results import HLCPResult, LCPResult, Status

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
    """Valid big-Ms ``(U_x, U_y)`` for every solution (see the module), or None; and whether the LP is infeasible."""
    from scipy.optimize import linprog

    n = hlcp.n
    res = linprog(-np.ones(2 * n), A_eq=np.hstack([hlcp.A, hlcp.B]), b_eq=hlcp.c, bounds=(0, None), method="highs")
    if res.status == 2:
        return None, True  # the relaxation is infeasible: so is the HLCP
    if res.status == 0:
        U = np.full(n, max(1.0, -res.fun) * (1.0 + 1e-6) + 1e-6)
        return (U, U), False
    for P, Q, x_first in ((hlcp.A, hlcp.B, True), (hlcp.B, hlcp.A, False)):
        bound = _monotone_bound(P, Q, hlcp.c)
        if bound is not None:
            U_out, U_in = bound          # the side solved for (P's), the other side
            return ((U_out, U_in) if x_first else (U_in, U_out)), False
    return None, False


def _monotone_bound(P, Q, c):
    """Bounds on ``u = M v + q`` and ``v`` over the solutions of ``P u + Q v = c``, ``u ⊥ v``, when ``M = -P⁻¹Q``
    has a positive definite symmetric part; None otherwise."""
    try:
        if np.linalg.cond(P) > 1e12:
            return None
        M, q = -np.linalg.solve(P, Q), np.linalg.solve(P, c)
    except np.linalg.LinAlgError:
        return None
    mu = float(np.linalg.eigvalsh(0.5 * (M + M.T)).min())
    if mu <= 1e-9 * max(1.0, float(np.abs(M).max())):
        return None
    r = float(np.linalg.norm(q)) / mu
    margin = lambda u: u * (1.0 + 1e-6) + 1e-9  # noqa: E731
    return margin(np.linalg.norm(M, axis=1) * r + np.abs(q)), margin(np.full(len(q), r))


def _polish(hlcp, b, tol):
    """Re-solve on the support of binary vector b; a verified (x, y) or None."""
    from scipy.optimize import linprog

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
        valid, ``info["big_m"]`` is ``(U_x, U_y)`` (None when the LP relaxation
        is infeasible); with ``all_solutions=True``, ``info["solutions"]`` lists one
        verified point per support found.

    Examples
    --------
    >>> import pympc
    >>> from pympc.complementarity import milp
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
        U = (np.full(n, float(options.get("big_m") or 1e3 * (1.0 + np.abs(hlcp.c).max()))),) * 2
    Ux, Uy = U
    verbose = bool(options.get("verbose", False))
    h = _highs(highspy, verbose)
    h.setOptionValue("mip_feasibility_tolerance", 1e-9)
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    if options.get("time_limit") is not None:
        h.setOptionValue("time_limit", float(options["time_limit"]))
    inf = highspy.kHighsInf
    h.addVars(2 * n, np.zeros(2 * n), np.full(2 * n, inf))
    h.addVars(n, np.zeros(n), np.ones(n))
    h.changeColsIntegrality(n, np.arange(2 * n, 3 * n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger))
    AB = np.hstack([hlcp.A, hlcp.B, np.zeros((n, n))])
    link_x = np.hstack([np.eye(n), np.zeros((n, n)), -np.diag(Ux)])  # x - U_x b <= 0
    link_y = np.hstack([np.zeros((n, n)), np.eye(n), np.diag(Uy)])   # y + U_y b <= U_y
    rows = np.vstack([AB, link_x, link_y])
    lower = np.concatenate([hlcp.c, np.full(2 * n, -inf)])
    upper = np.concatenate([hlcp.c, np.zeros(n), Uy])
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
    info = {"exact": exact, "big_m": (Ux, Uy), "solutions": list(found), "supports": supports,
            "highs_status": h.modelStatusToString(status)}
    if found:
        x, y = found[0]
        more = f"; {len(found)} distinct solution(s) over {supports} support(s)" if want_all else ""
        return result(Status.SOLVED, f"MILP solution verified after re-solving on its support{more}", x, y, info)
    if supports == 0 and status == highspy.HighsModelStatus.kInfeasible:
        if exact:
            return result(Status.INFEASIBLE, "MILP infeasible with a valid big-M: the problem has no solution",
                          zeros, zeros, info)
        return result(Status.UNDECIDED, f"MILP infeasible, but big-M = {Ux[0]:g} is not proved valid (unbounded LP "
                      "relaxation, no monotone bound): no conclusion", zeros, zeros, info)
    if supports:
        return result(Status.NUMERICAL_FAILURE, "HiGHS returned points that fail verification on their support",
                      zeros, zeros, info)
    return result(Status.UNDECIDED, f"HiGHS ended with status {h.modelStatusToString(status)}", zeros, zeros, info)


def _highs(highspy, verbose):
    """A HiGHS instance whose banner and log are governed by its own options (``output_flag``, ``log_to_console``).

    ``highspy.Highs()`` calls a HiGHS method (enabling callbacks) before any
    option can be set, which prints HiGHS's banner once per process; the
    binding's own class ``highspy._core._Highs`` takes the options first.
    """
    core = getattr(getattr(highspy, "_core", None), "_Highs", None)
    h = core() if core is not None else highspy.Highs()
    h.setOptionValue("output_flag", bool(verbose))
    h.setOptionValue("log_to_console", bool(verbose))
    return h


def _add_dense_rows(h, rows, lower, upper):
    nz = rows != 0.0
    starts = np.concatenate([[0], np.cumsum(nz.sum(axis=1))[:-1]]).astype(np.int32)
    idx = np.nonzero(nz)[1].astype(np.int32)
    vals = rows[nz]
    h.addRows(rows.shape[0], lower, upper, int(nz.sum()), starts, idx, vals)
