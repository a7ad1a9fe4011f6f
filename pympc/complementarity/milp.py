"""The exact cross-check of an HLCP with HiGHS: by default a convex QP or a search over supports
(:mod:`pympc.complementarity.search`, no big-M needed); the big-M MILP below with ``formulation="bigm"``
and for ``all_solutions``.

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

import time

import numpy as np

from ..errors import OptionError, SolverNotFound
from .problems import HLCP, LCP, MAGNITUDES
from .results import Result, Status
from .support import solve_on_support

__all__ = ["milp", "MILP_OPTIONS", "equilibrate"]

MILP_OPTIONS = {
    "formulation": "'auto' (default: a convex QP when the problem is monotone, else a branch-and-bound over supports "
                   "with LP relaxations, see pympc.complementarity.search) or 'bigm' (the big-M MILP)",
    "all_solutions": "list every complementary support with a solution, by no-good cuts of the big-M MILP (default False)",
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
    from .search import monotone_form

    form = monotone_form(hlcp)
    if form is None:
        return None, False
    M, q, x_first = form
    mu = float(np.linalg.eigvalsh(0.5 * (M + M.T)).min())
    r = float(np.linalg.norm(q)) / mu
    margin = lambda u: u * (1.0 + 1e-6) + 1e-9  # noqa: E731
    U_out, U_in = margin(np.linalg.norm(M, axis=1) * r + np.abs(q)), margin(np.full(len(q), r))  # u = M v + q, v
    return ((U_out, U_in) if x_first else (U_in, U_out)), False


def milp(problem, **options):
    """Solve an LCP/HLCP exactly with HiGHS (``highspy``): a verified point, or a proof that there is none.

    ``formulation="auto"`` (default): a monotone problem is one convex QP,
    any other a branch-and-bound over complementary supports with LP
    relaxations (:mod:`pympc.complementarity.search`); neither needs a big-M.
    ``formulation="bigm"`` (and ``all_solutions=True``): the big-M MILP of
    this module.

    Returns
    -------
    Result
        ``method="milp"``; ``info["formulation"]`` is ``"qp"``, ``"search"``
        or ``"bigm"``; ``info["exact"]`` says whether "no solution" is a proof
        (always for qp and search; for bigm, whether big-M was proved valid);
        ``info["big_m"]`` is ``(U_x, U_y)`` for bigm; with
        ``all_solutions=True``, ``info["solutions"]`` lists one verified point
        per support found.

    Examples
    --------
    >>> import pympc
    >>> from pympc.complementarity import milp
    >>> r = milp(pympc.LCP([[-1.0]], [1.0]), all_solutions=True)   # z = 0 and z = 1
    >>> r.status.name, sorted(float(z[0]) for z, w in r.info["solutions"])
    ('SOLVED', [0.0, 1.0])
    >>> milp(pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])).info["formulation"]
    'qp'
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

    def result(status, message, x, y, info):
        if is_lcp:
            info["solutions"] = [(yy, xx) for xx, yy in info.get("solutions", [])]
        return Result.from_hlcp_point(problem, status, message, x, y, 0, "milp", info)

    formulation = options.get("formulation", "auto")
    if formulation not in ("auto", "bigm"):
        raise OptionError(f"formulation must be 'auto' or 'bigm', got {formulation!r}")
    # HiGHS works on the caller's data and, where that spans more than it resolves and gave no verified point, on
    # the problem equilibrated by powers of two (exact); points are mapped back and verified again on the caller's
    # data, and "no solution" is a proof only within HiGHS's range
    from .search import monotone_form

    def attempt(scaled, dx, dy, spread, options):
        def back(status, message, x, y, info):
            info["solutions"] = [(dx * a, dy * b) for a, b in info.get("solutions", [])]
            if info.get("big_m") is not None:
                info["big_m"] = (info["big_m"][0] * dx, info["big_m"][1] * dy)
            info["spread"] = spread
            x, y = dx * x, dy * y
            if status == Status.SOLVED:
                pt = solve_on_support(hlcp, x > y, tol)
                if pt is None:
                    return result(Status.UNDECIDED, message + "; but the point does not verify on the unscaled data "
                                  "(round-off): no conclusion", x, y, info)
                x, y = pt
            elif status == Status.INFEASIBLE and spread > _HIGHS_SPREAD:
                return result(Status.UNDECIDED, f"HiGHS found no solution, but the data's nonzero magnitudes span "
                              f"{spread:.1e}, more than HiGHS resolves ({_HIGHS_SPREAD:.0e}: it drops smaller matrix "
                              "entries): no conclusion; use method='enumerate' or 'lemke'", x, y, info)
            return result(status, message, x, y, info)

        if formulation == "auto" and not options.get("all_solutions", False):
            return _exact_search(highspy, scaled, tol, options, back)
        bound = _bound(scaled)
        if bound[0] is None and not bound[1]:   # the monotone bound holds in the caller's units only
            U = _bound(hlcp)[0]
            if U is not None:
                bound = ((U[0] / dx, U[1] / dy), False)
        return _bigm(highspy, scaled, tol, options, back, bound)

    t0 = time.perf_counter()
    ones = np.ones(hlcp.n)
    spread = _spread(hlcp.A, hlcp.B, hlcp.c)
    first = attempt(hlcp, ones, ones, spread, options)
    if first.status == Status.SOLVED or spread <= _HIGHS_SPREAD or (
            formulation == "auto" and not options.get("all_solutions", False) and monotone_form(hlcp) is not None):
        return first        # (a monotone problem's QP keeps its form only unscaled: scalings break its PD part)
    scaled, dx, dy, spread_after = equilibrate(hlcp)
    if options.get("time_limit") is not None:
        left = options["time_limit"] - (time.perf_counter() - t0)
        if left <= 0:
            return first
        options = {**options, "time_limit": left}
    second = attempt(scaled, dx, dy, spread_after, options)
    return second if second.status != Status.UNDECIDED else first


#: the largest ratio of nonzero magnitudes (matrix and right-hand side, after equilibration) for which
#: HiGHS's "infeasible" is taken as a proof: it treats matrix entries below 1e-9 as zero and has
#: feasibility tolerances of 1e-9 (measured: LCP(diag(s, 1/s), q) was called infeasible from s = 1e9 on)
_HIGHS_SPREAD = 1e7


def equilibrate(hlcp, sweeps=6):
    """``(scaled, dx, dy, spread)``: ``hlcp`` with rows and columns scaled by powers of two (exactly).

    ``scaled`` is ``HLCP(R A Dx, R B Dy, R c)``; a solution ``(x', y')`` of it
    gives ``(Dx x', Dy y')`` of ``hlcp`` (complementarity survives positive
    diagonal scalings).  Rows and columns of ``[A B]`` are scaled alternately
    towards unit geometric means of their largest and smallest nonzero
    magnitudes.  ``spread`` is the ratio of the largest to the smallest
    nonzero magnitude of the scaled ``[A B c]``.
    """
    A, B, c = hlcp.A.copy(), hlcp.B.copy(), hlcp.c.copy()
    n = hlcp.n
    dx, dy = np.ones(n), np.ones(n)

    def power(mags, axis):
        big = mags.max(axis=axis)
        small = np.where(mags > 0, mags, np.inf).min(axis=axis)
        ok = big > 0
        out = np.ones(big.shape)
        out[ok] = np.exp2(-np.round(0.5 * (np.log2(big[ok]) + np.log2(small[ok]))))
        return out

    for _ in range(sweeps):
        r = power(np.abs(np.hstack([A, B])), 1)
        A, B, c = A * r[:, None], B * r[:, None], c * r
        sx, sy = power(np.abs(A), 0), power(np.abs(B), 0)
        A, B, dx, dy = A * sx, B * sy, dx * sx, dy * sy
    mags = np.abs(np.concatenate([A.ravel(), B.ravel(), c]))
    mags = mags[mags > 0]
    low, high = MAGNITUDES
    if mags.size and (mags.min() < low or mags.max() > high):   # scaled out of the doubles' window: left as it is
        return hlcp, np.ones(n), np.ones(n), _spread(hlcp.A, hlcp.B, hlcp.c)
    return HLCP(A, B, c), dx, dy, _spread(A, B, c)


def _spread(*arrays):
    """The ratio of the largest to the smallest nonzero magnitude over ``arrays`` (1 when all are zero)."""
    mags = np.abs(np.concatenate([np.ravel(a) for a in arrays]))
    mags = mags[mags > 0]
    return float(mags.max() / mags.min()) if mags.size else 1.0


def _exact_search(highspy, hlcp, tol, options, result):
    """The QP of a monotone problem, else the branch-and-bound over supports (:mod:`.search`)."""
    from .search import branch_and_bound, monotone_form, solve_monotone_qp

    t0 = time.perf_counter()
    limit = options.get("time_limit")
    verbose = bool(options.get("verbose", False))
    n = hlcp.n
    zeros = np.zeros(n)
    verify = lambda choice: solve_on_support(hlcp, choice, tol)  # noqa: E731
    form = monotone_form(hlcp)
    if form is not None:
        M, q, x_first = form
        v, status = solve_monotone_qp(highspy, M, q, verbose, limit)
        info = {"exact": True, "big_m": None, "formulation": "qp", "solutions": []}
        if status == "infeasible":
            return result(Status.INFEASIBLE, "monotone problem whose QP (v >= 0, M v + q >= 0) is infeasible: "
                          "it has no solution", zeros, zeros, info)
        if status == "optimal":
            u = M @ v + q
            pt = verify(u > v if x_first else v > u)
            if pt is not None:
                info["solutions"] = [pt]
                return result(Status.SOLVED, "monotone problem: convex QP minimum verified on its support",
                              *pt, info)
        # no verified point from the QP (round-off, time): the search decides
        if limit is not None:
            limit = max(limit - (time.perf_counter() - t0), 1e-6)
    pt, status, nodes = branch_and_bound(highspy, hlcp, verify, verbose, limit)
    info = {"exact": True, "big_m": None, "formulation": "search", "nodes": nodes,
            "solutions": [] if pt is None else [pt]}
    if status == "found":
        return result(Status.SOLVED, f"support search: verified point after {nodes} LP(s)", *pt, info)
    if status == "exhausted":
        return result(Status.INFEASIBLE, f"support search: every support is LP-infeasible ({nodes} LP(s)): "
                      "the problem has no solution", zeros, zeros, info)
    if status == "undecided":
        return result(Status.UNDECIDED, f"support search: a feasible support whose point does not verify (round-off "
                      f"at the tolerance) after {nodes} LP(s): no proof either way; try method='enumerate'",
                      zeros, zeros, info)
    info["highs_status"] = "Time limit reached"
    return result(Status.UNDECIDED, f"support search: time limit reached after {nodes} LP(s), undecided",
                  zeros, zeros, info)


def _bigm(highspy, hlcp, tol, options, result, bound=None):
    """The big-M MILP (see the module); with ``all_solutions``, every support by no-good cuts.

    ``bound``: ``(U, relaxation infeasible)`` as :func:`_bound` gives them, when already known.
    """
    from ._highs import QuietHighs, add_dense_rows

    n = hlcp.n
    U, relax_infeasible = _bound(hlcp) if bound is None else bound
    zeros = np.zeros(n)
    if relax_infeasible:
        return result(Status.INFEASIBLE, "even the LP relaxation (complementarity dropped) is infeasible",
                      zeros, zeros, {"exact": True, "big_m": None, "formulation": "bigm", "solutions": [], "supports": 0})
    exact = U is not None
    if not exact:
        U = (np.full(n, float(options.get("big_m") or 1e3 * (1.0 + np.abs(hlcp.c).max()))),) * 2
    Ux, Uy = U
    verbose = bool(options.get("verbose", False))
    h = QuietHighs(verbose)
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
    add_dense_rows(h, rows, lower, upper)
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
        pt = solve_on_support(hlcp, b > 0.5, tol)
        if pt is None:
            pt = solve_on_support(hlcp, sol[:n] > sol[n:2 * n], tol)
        if pt is not None and not any(np.allclose(pt[0], p[0], atol=1e3 * tol) and np.allclose(pt[1], p[1], atol=1e3 * tol)
                                      for p in found):
            found.append(pt)
        if not want_all or supports >= max_sol:
            break
        # no-good cut on b: sum_{b_i = 1} (1 - b_i) + sum_{b_i = 0} b_i >= 1
        cut = np.zeros(3 * n)
        cut[2 * n:] = np.where(b > 0.5, -1.0, 1.0)
        add_dense_rows(h, cut[None, :], np.array([1.0 - b.sum()]), np.array([inf]))
    info = {"exact": exact, "big_m": (Ux, Uy), "formulation": "bigm", "solutions": list(found), "supports": supports,
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
