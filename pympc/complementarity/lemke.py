"""Lemke's complementary pivoting method (lexicographic) for LCPs and HLCPs."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.linalg.lapack import dgesv as _dgesv

from ..errors import OptionError, ProblemError
from ._kernel import (HLCP_DEFAULT_KERNEL, KERNEL_NUMERICAL, KERNEL_PIVOT_LIMIT, KERNEL_RAY, KERNEL_SINGULAR,
                      KERNEL_SOLVED, MAX_PIVOTS_BASE, MAX_PIVOTS_PER_PAIR, PIV_TOL, RUIZ_SWEEPS, TIE_TOL, VERIFY_TOL,
                      equilibrate_hlcp, gesv_rhs, lcp_relative_residual, mapped_point, relative_residual,
                      solve_diagonal_hlcp_kernel, solve_hlcp_default, solve_hlcp_kernel, solve_lcp, solve_lcp_default,
                      solve_lcp_form_default)
from .problems import HLCP, LCP, Residual, as_vector
from .results import Result, Status

__all__ = ["lemke", "LEMKE_OPTIONS"]

#: Options accepted by :func:`lemke` (and ``pympc.solve(..., method="lemke")``).
LEMKE_OPTIONS = {
    "covering_vector": "positive vector d of the artificial column (default: all ones)",
    "max_pivots": f"pivot limit (default {MAX_PIVOTS_BASE} + {MAX_PIVOTS_PER_PAIR} n)",
    "piv_tol": f"smallest pivot accepted, relative to the largest entry of the equilibrated data (default {PIV_TOL:g})",
    "tol": f"verification tolerance on the componentwise relative residual (default {VERIFY_TOL:g})",
    "certify": "on a ray, decide exactly by enumeration whether a solution exists (default: n <= 8)",
    "verbose": "print the pivot log (default False)",
}


def _variable_name(k, n):
    if k < n:
        return f"w{k + 1}"
    if k < 2 * n:
        return f"z{k - n + 1}"
    return "z0"


#: Sweeps of Ruiz's equilibration (it stops earlier once the powers of two settle).
_SWEEPS = RUIZ_SWEEPS


@lru_cache(maxsize=128)
def _ones(n):
    """The default covering vector e (read-only, shared)."""
    d = np.ones(n)
    d.flags.writeable = False
    return d


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v):
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _settings(n, covering_vector=None, max_pivots=None, piv_tol=PIV_TOL, tol=VERIFY_TOL, verbose=False, certify=None):
    """Validate the options of :func:`lemke`; every bad value is an :class:`OptionError` naming it."""
    if covering_vector is None:
        d = None
    else:
        try:
            d = as_vector("covering_vector", covering_vector, n)
        except ProblemError as exc:
            raise OptionError(f"option {exc}") from None
        if not (d > 0).all():
            raise OptionError("covering_vector must be strictly positive (every entry > 0).")
    if max_pivots is None:
        max_pivots = MAX_PIVOTS_BASE + MAX_PIVOTS_PER_PAIR * n
    elif not _is_int(max_pivots) or max_pivots < 1:
        raise OptionError(f"max_pivots must be a positive integer, got {max_pivots!r} ({type(max_pivots).__name__}).")
    for name, value, low in (("piv_tol", piv_tol, 0.0), ("tol", tol, 0.0)):
        if not _is_real(value) or not np.isfinite(value) or value < 0 or (name == "tol" and value == 0):
            need = "a finite number >= 0" if name == "piv_tol" else "a finite number > 0"
            raise OptionError(f"{name} must be {need}, got {value!r}.")
    if not isinstance(verbose, (bool, np.bool_)):
        raise OptionError(f"verbose must be True or False, got {verbose!r}.")
    if certify is not None and not isinstance(certify, (bool, np.bool_)):
        raise OptionError(f"certify must be True, False or None, got {certify!r}.")
    return d, int(max_pivots), float(piv_tol), float(tol), bool(verbose), (n <= 8 if certify is None else bool(certify))


def _interpret(code, pivots, res, tol, max_pivots, log, verbose, n):
    """Status and message from a kernel's code and the relative residual of its point (on the original data)."""
    if verbose:
        print(f"Lemke on an LCP of size {n}: {pivots} pivot(s)")
        for k, (e, l) in enumerate(zip(*log)):
            print(f"  pivot {k + 1:4d}: {_variable_name(e, n):>5s} enters, {_variable_name(l, n):>5s} leaves")
    if code == KERNEL_SOLVED:
        if max(res) <= tol:
            return Status.SOLVED, _VERIFIED
        return Status.NUMERICAL_FAILURE, (f"Lemke ended on a complementary basis but its point fails verification "
                                          f"(relative {Residual(*res)}, tol {tol:g})")
    if code == KERNEL_RAY:
        return Status.RAY_TERMINATION, f"secondary ray after {pivots} pivot(s): no solution found"
    if code == KERNEL_PIVOT_LIMIT:
        return Status.PIVOT_LIMIT, f"pivot limit {max_pivots} reached; raise max_pivots"
    assert code == KERNEL_NUMERICAL
    return Status.NUMERICAL_FAILURE, "the tableau became non-finite"


def _solve_hlcp(A, B, c, a_diagonal, d, max_pivots, piv_tol):
    """Lemke on the LCP form of an (equilibrated) HLCP; None if it has no nonsingular complementary basis.

    Fast paths: a diagonal ``A`` (the LCP form ``HLCP(I, −M, q)``) is divided
    out row by row in O(n²); otherwise ``A`` is factorized once by LAPACK
    ``dgesv`` (``M = -A⁻¹B``, ``q = A⁻¹c``, O(n³)).  If ``A`` is singular, the
    pivoted search of :meth:`HLCP.find_basis` chooses the basis.  ``d`` is the
    covering vector (None: all ones).
    """
    n = c.size
    dd = _ones(n) if d is None else d
    if a_diagonal:  # A diagonal (the LCP form HLCP(I, -M, q), or a scaling of it): M = -B/a, q = c/a
        out = solve_diagonal_hlcp_kernel(A, B, c, dd, max_pivots, piv_tol, TIE_TOL)
        if out[0] != KERNEL_SINGULAR:
            return np.ones(n, bool), out
    lu, _piv, sol, info = _dgesv(A, np.asfortranarray(np.column_stack([-B, c])))
    if info == 0:
        out = solve_hlcp_kernel(A, B, c, np.ones(n, np.bool_), sol, lu, dd, max_pivots, piv_tol, TIE_TOL)
        if out[0] != KERNEL_SINGULAR:
            return np.ones(n, bool), out
    h = HLCP(A, B, c)
    basis = h.find_basis()
    if basis is None:
        return None
    red = h.to_lcp(basis)
    S = np.column_stack([red.lcp.M, red.lcp.q])
    return basis, solve_hlcp_kernel(A, B, c, basis, S, np.eye(n), dd, max_pivots, piv_tol, TIE_TOL)


#: the default covering vector for :func:`solve_lcp` (empty: all ones after equilibration)
_NO_D = np.empty(0)

#: the message of a verified Lemke point
_VERIFIED = "solution found and verified"
_SOLVED = Status.SOLVED


def _log_and_scaling(out, n):
    """The pivot log ``(entering, leaving)`` and the scales ``(r, s)`` packed by :func:`solve_lcp` into ``out``."""
    k = 4 * n + 3
    m = (out.size - k) // 2
    return (out[k:k + m].astype(np.int64), out[k + m:].astype(np.int64)), (out[2 * n:3 * n], out[3 * n:4 * n])


def _lcp_info(out, problem):
    """The ``info`` of a Lemke result on an LCP (made when first read): the pivot log and the scales."""
    log, scaling = _log_and_scaling(out, problem.n)
    return {"log": log, "scaling": scaling}


def _lcp_form_info(out, problem):
    """The ``info`` of a Lemke result on an HLCP solved through its LCP form (A diagonal): log, basis, scales."""
    log, scaling = _log_and_scaling(out, problem.n)
    return {"log": log, "basis": np.ones(problem.n, bool), "scaling": scaling}


def _hlcp_info(el, ll, basis, dx, dy):
    """The ``info`` of a Lemke result on an HLCP (made when first read): the pivot log, the basis, the scales."""
    return {"log": (el, ll), "basis": basis, "scaling": (dx, dy)}


def _unpacked(M, q, code, pivots, clean, out, tol):
    """Lemke on LCP(M, q) from :func:`solve_lcp`'s answer: ``(code, pivots, z, w, log, relative residual,
    (r, s))``, where a point that is not ``clean`` after a complementary basis has gone through :func:`_verify`."""
    n = q.size
    z, w = out[:n], out[n:2 * n]
    res = tuple(out[4 * n:4 * n + 3].tolist())
    log, (r, s) = _log_and_scaling(out, n)
    if code == KERNEL_SOLVED and not clean:
        (w, z), res = _verify(lambda a, b: lcp_relative_residual(M, q, b * s, a / r),
                              lambda: (np.eye(n), -(M * r[:, None] * s), q * r), w * r, z / s, tol, True)
        z, w = z * s, w / r
    return code, pivots, z, w, log, res, (r, s)


def _verify(residual, system, u, v, tol, solved):
    """The point ``(u, v)`` of the equilibrated problem ``system() = (A', B', c')`` and its
    relative residual in the original problem (``residual(u, v)``).

    Pivoting is accurate relative to the largest entries, not to each row: a
    basic variable of a degenerate vertex holds rounding noise instead of 0, and a
    row whose terms are all small carries the noise of the large ones.  If the
    point fails the componentwise test: (1) entries below ``1e-11 (1 + max|c'|)``
    are zeroed; (2) the nonzero entries are re-solved from their equations with
    every row divided by the size of its terms (least squares and one step of
    refinement), which makes the residual small relative to each row.  A
    changed point is used only if it passes, and only if Lemke ended on a
    complementary basis (``solved``); there a basic variable that holds -noise
    is set to 0 first (a verified answer is never negative when that passes).
    """
    if solved and (u.min() < 0.0 or v.min() < 0.0):
        up, vp = np.maximum(u, 0.0), np.maximum(v, 0.0)
        res = residual(up, vp)
        if max(res) <= tol:
            return (up, vp), res
    res = residual(u, v)
    if max(res) <= tol or not solved:
        return (u, v), res
    A, B, c = system()
    thr = 1e-11 * (1.0 + float(np.abs(c).max()))
    uc = np.where(np.abs(u) <= thr, 0.0, u)
    vc = np.where(np.abs(v) <= thr, 0.0, v)
    for cand in ((uc, vc), _polish(A, B, c, uc, vc), _polish(A, B, c, u, v)):
        if cand is not None:
            res_c = residual(*cand)
            if max(res_c) <= tol:
                return cand, res_c
    return (u, v), res


def _polish(A, B, c, u, v):
    """Re-solve the nonzero entries of ``(u, v)`` from ``A u + B v = c`` with rows scaled by their terms."""
    n = c.size
    C = np.hstack([A, B])
    p = np.concatenate([u, v])
    S = np.flatnonzero(p)
    if S.size == 0:
        return None
    t = np.abs(C[:, S]) @ np.abs(p[S]) + np.abs(c)
    t[t == 0.0] = 1.0
    Cs, b = C[:, S] / t[:, None], c / t
    sol = np.linalg.lstsq(Cs, b, rcond=None)[0]
    sol += np.linalg.lstsq(Cs, b - Cs @ sol, rcond=None)[0]
    out = np.zeros(2 * n)
    out[S] = np.maximum(sol, 0.0)
    return out[:n], out[n:]


def _certify(problem, status, message, info):
    """On a ray, decide by enumeration whether the problem has a solution."""
    from .enumeration import enumerate_solutions

    sols = enumerate_solutions(problem, max_pairs=problem.n)
    info["certificate"] = sols
    if sols.kind.name == "NONE":
        return Status.INFEASIBLE, message + "; enumeration of all complementary supports proves there is no solution"
    return status, message + f"; yet enumeration finds solutions ({sols.kind.name.lower()}): Lemke's method cannot reach them from this start"


def lemke_lcp_default(problem):
    """``lemke(problem)`` for an :class:`LCP` (its type exactly) with every option at its default (what
    ``pympc.solve(lcp)`` calls): one compiled call, whose verified point is the result at once (its arrays and
    ``info`` made when first read); a point that is not clean goes the general way."""
    code, pivots, clean, out = answer = solve_lcp_default(problem.M, problem.q)
    if clean:
        return Result._packed(problem, out, pivots, _VERIFIED, _lcp_info)
    n = problem.q.shape[0]
    return _lemke_lcp_result(problem, None, MAX_PIVOTS_BASE + MAX_PIVOTS_PER_PAIR * n, PIV_TOL, VERIFY_TOL,
                             False, n <= 8, answer)


def lemke_default(problem):
    """``lemke(problem)`` with every option at its default: one compiled call for an :class:`LCP`, or an HLCP
    with a diagonal A (its LCP form), whose verified point is the result at once; anything else, or a point
    that is not clean, goes the general way."""
    if type(problem) is LCP:
        return lemke_lcp_default(problem)
    if type(problem) is HLCP:
        if problem._a_diagonal:
            code, pivots, clean, out = solve_lcp_form_default(problem.A, problem.B, problem.c)
            if clean:
                return lcp_form_result(problem, out, pivots)
        else:
            r = lemke_hlcp_default(problem)
            if r is not None:
                return r
    return _lemke_general(problem, {})


def lcp_form_result(problem, out, pivots):
    """The result of :func:`lemke` with the defaults on an HLCP with a diagonal A from a clean answer ``out``,
    ``pivots`` of :func:`~pympc.complementarity._kernel.solve_lcp_form_default` on it (what :func:`lemke_default`
    returns; a caller that made that call already, in a compiled call of its own, takes it)."""
    return Result._packed(problem, out, pivots, _VERIFIED, _lcp_form_info)


def lemke_hlcp_default(problem):
    """``lemke(problem)`` for an :class:`HLCP` (its type exactly) with a non-diagonal A (an event HLCP) and every
    option at its default, when its compiled calls end on a verified point (the result of the general path,
    made at once); None otherwise (the general path decides).  One compiled call
    (:func:`~pympc.complementarity._kernel.solve_hlcp_default`) where this numba has LAPACK's dgesv, else the
    same steps with scipy's between them."""
    if HLCP_DEFAULT_KERNEL:
        decided, code, pivots, el, ll, x, y, res, negative, dx, dy = solve_hlcp_default(problem.A, problem.B,
                                                                                        problem.c)
        return verified_hlcp_result(problem, code, pivots, el, ll, (x, y, res, negative), dx, dy) if decided else None
    c = problem.c
    scaled = equilibrate_hlcp(problem.A, problem.B, c, False, _SWEEPS)
    form, fast = _fast_hlcp(problem, scaled, MAX_PIVOTS_BASE + MAX_PIVOTS_PER_PAIR * c.shape[0], PIV_TOL)
    if fast is None:
        return None
    code, pivots, _xs, _ys, el, ll = form[1]
    return verified_hlcp_result(problem, code, pivots, el, ll, fast, scaled[3], scaled[4])


def verified_hlcp_result(problem, code, pivots, el, ll, fast, dx, dy):
    """The result of :func:`lemke` with the defaults on an HLCP with a non-diagonal A from the answer of its
    compiled calls (the kernel's ``code, pivots`` and pivot log ``el, ll``; ``fast``: :func:`mapped_point`'s
    ``(x, y, residual, negative)``; ``dx, dy``: the scales) when it is a verified point; None otherwise (the
    general path decides)."""
    if code != KERNEL_SOLVED or fast[3] or max(fast[2]) > VERIFY_TOL:
        return None
    return Result._lazy(problem, _SOLVED, _VERIFIED, fast[0], fast[1], pivots, "lemke", (_all_x_info, el, ll, dx, dy))


def _all_x_info(el, ll, dx, dy):
    """:func:`_hlcp_info` of the basis "every x basic" (the all-ones covering vector's), made when first read."""
    return _hlcp_info(el, ll, np.ones(dx.shape[0], bool), dx, dy)


def _fast_hlcp(problem, scaled, max_pivots, piv_tol):
    """``(form, fast)`` of an HLCP with a non-diagonal A, equilibrated (``scaled``), and the all-ones covering
    vector: _solve_hlcp's dgesv and Lemke (``form``: the basis "every x basic" and the kernel's answer) and the
    point mapped back and checked (``fast``: :func:`mapped_point`), in few calls; ``(None, None)`` when that
    basis is singular."""
    As, Bs, cs, dx, dy = scaled
    n = cs.shape[0]
    lu, _piv, sol, info = _dgesv(As, gesv_rhs(Bs, cs))
    if info == 0:
        out = solve_hlcp_kernel(As, Bs, cs, np.ones(n, np.bool_), sol, lu, _ones(n), max_pivots, piv_tol, TIE_TOL)
        if out[0] != KERNEL_SINGULAR:
            return (np.ones(n, bool), out), mapped_point(out[2], out[3], dx, dy, problem.A, problem.B, problem.c)
    return None, None


def _lemke_lcp_result(problem, d, max_pivots, piv_tol, tol, verbose, certify, answer=None):
    """:func:`lemke` on an LCP with validated settings: one compiled call (:func:`solve_lcp`; ``answer``, its
    answer if made already) and, when its point is verified and nothing is to be printed, the result at once
    (its ``info`` made when first read)."""
    M, q = problem.M, problem.q
    if answer is None:
        answer = solve_lcp(M, q, _NO_D if d is None else d, max_pivots, piv_tol, TIE_TOL, _SWEEPS, tol)
    code, pivots, clean, out = answer
    n = q.shape[0]
    if clean and not verbose:   # the usual case: a verified point, nothing more to decide or to print
        return Result._packed(problem, out, pivots, _VERIFIED, _lcp_info)
    code, pivots, z, w, log, res, scaling = _unpacked(M, q, code, pivots, clean, out, tol)
    status, message = _interpret(code, pivots, res, tol, max_pivots, log, verbose, n)
    info = {"log": log, "scaling": scaling}
    if status == Status.RAY_TERMINATION and certify:
        status, message = _certify(problem, status, message, info)
    return Result(problem, status, message, z, w, pivots, "lemke", info)


def lemke(problem, **options):
    """Solve an LCP or HLCP with Lemke's method (lexicographic minimum-ratio rule).

    Parameters
    ----------
    problem : LCP or HLCP
    **options
        See :data:`LEMKE_OPTIONS`.  Unknown options raise :class:`~pympc.errors.OptionError`.

    Returns
    -------
    Result
        ``status`` is ``SOLVED`` only for a verified point.

    Notes
    -----
    The problem is first equilibrated (rows and columns, and the right-hand
    side, scaled by powers of two; Ruiz's method), so that the pivot and tie
    tolerances follow the scales of the rows and columns.  An HLCP is reduced
    to an LCP through a nonsingular complementary basis found by a pivoted
    factorization (:meth:`HLCP.find_basis`).  The point is mapped back and
    verified in the original problem by its componentwise relative residual
    (:meth:`LCP.relative_residual`): each row against the size of its own
    terms, so an answer that breaks a small row is never ``SOLVED``.

    Examples
    --------
    >>> import pympc
    >>> r = pympc.lemke(pympc.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0]))
    >>> r.success, float(r.z.sum())
    (True, 1.0)
    """
    if not options:   # the usual call: the defaults, without the keyword machinery
        return lemke_default(problem)
    return _lemke_general(problem, options)


def _lemke_general(problem, options):
    """:func:`lemke` with ``options`` (a dict, maybe empty), every case."""
    if not isinstance(problem, (LCP, HLCP)):
        raise ProblemError(f"problem must be a pympc.LCP or pympc.HLCP, got {type(problem).__name__}; "
                           "wrap the data first: pympc.LCP(M, q) or pympc.HLCP(A, B, c).")
    n = problem.n
    if options:
        unknown = options.keys() - LEMKE_OPTIONS.keys()
        if unknown:
            raise OptionError(f"unknown option(s) {sorted(unknown)} for method 'lemke'; valid: {sorted(LEMKE_OPTIONS)}")
        d, max_pivots, piv_tol, tol, verbose, certify = _settings(n, **options)
    else:  # the defaults, without the keyword machinery (this call is often in a loop)
        d, max_pivots, piv_tol, tol, verbose, certify = (None, MAX_PIVOTS_BASE + MAX_PIVOTS_PER_PAIR * n, PIV_TOL,
                                                         VERIFY_TOL, False, n <= 8)
    if isinstance(problem, LCP):
        return _lemke_lcp_result(problem, d, max_pivots, piv_tol, tol, verbose, certify)
    a = np.diagonal(problem.A) if problem._a_diagonal else None
    if problem._a_diagonal and a.all():
        # the LCP form, row by row: x = w, y = z of LCP(-B/a, c/a) (relative residuals are the same)
        M, q = -problem.B / a[:, None], problem.c / a
        answer = solve_lcp(M, q, _NO_D if d is None else d, max_pivots, piv_tol, TIE_TOL, _SWEEPS, tol)
        if answer[2] and not verbose:   # a clean point: checked in this problem, it is the result at once
            out = answer[3]
            x, y = out[n:2 * n], out[:n]
            if max(relative_residual(problem.A, problem.B, problem.c, x, y)) <= tol:
                return Result._lazy(problem, Status.SOLVED, _VERIFIED, x, y, answer[1], "lemke",
                                    (_lcp_form_info, out, problem))
        code, pivots, y, x, log, _, scaling = _unpacked(M, q, *answer, tol)
        res = relative_residual(problem.A, problem.B, problem.c, x, y)
        status, message = _interpret(code, pivots, res, tol, max_pivots, log, verbose, n)
        info = {"log": log, "basis": np.ones(n, bool), "scaling": scaling}
        if status == Status.RAY_TERMINATION and certify:
            status, message = _certify(problem, status, message, info)
        return Result(problem, status, message, x, y, pivots, "lemke", info)
    # equilibrate [A | B | c]: (R A Dx) x' + (R B Dy) y' = g R c with x = Dx x' / g, y = Dy y' / g
    As, Bs, cs, dx, dy = scaled = equilibrate_hlcp(problem.A, problem.B, problem.c, problem._a_diagonal, _SWEEPS)
    form = fast = None
    if not problem._a_diagonal and d is None:
        # the usual case (an event HLCP): in few calls (the arithmetic of the general path below, which takes
        # whatever this one does not decide)
        form, fast = _fast_hlcp(problem, scaled, max_pivots, piv_tol)
    if form is None:
        form = _solve_hlcp(As, Bs, cs, problem._a_diagonal, None if d is None else d / dx, max_pivots, piv_tol)
        if form is None:
            info = {}
            status, message = Status.NO_BASIS, "no nonsingular complementary basis: Lemke's method cannot start"
            if certify:
                status, message = _certify(problem, status, message, info)
            return Result(problem, status, message, np.zeros(n), np.zeros(n), 0, "lemke", info)
    basis, (code, pivots, xs, ys, el, ll) = form
    if fast is not None and not (code == KERNEL_SOLVED and (fast[3] or max(fast[2]) > tol)):
        x, y, res = fast[:3]      # what _verify returns unchanged: a point with no negative entry that passes
        if code == KERNEL_SOLVED and not verbose:   # verified (max(res) <= tol above): the result at once
            return Result._lazy(problem, Status.SOLVED, _VERIFIED, x, y, pivots, "lemke",
                                (_hlcp_info, el, ll, basis, dx, dy))
    else:
        (x, y), res = _verify(lambda a, b: relative_residual(problem.A, problem.B, problem.c, a * dx, b * dy),
                              lambda: (As, Bs, cs), xs, ys, tol, code == KERNEL_SOLVED)
        x, y = x * dx, y * dy
    status, message = _interpret(code, pivots, res, tol, max_pivots, (el, ll), verbose, n)
    info = {"log": (el, ll), "basis": basis, "scaling": (dx, dy)}
    if status == Status.RAY_TERMINATION and certify:
        status, message = _certify(problem, status, message, info)
    return Result(problem, status, message, x, y, pivots, "lemke", info)
