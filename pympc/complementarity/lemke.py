"""Lemke's complementary pivoting method (lexicographic) for LCPs and HLCPs."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.linalg.lapack import dgesv as _dgesv

from ..errors import OptionError
from ._kernel import (KERNEL_NUMERICAL, KERNEL_PIVOT_LIMIT, KERNEL_RAY, KERNEL_SINGULAR, KERNEL_SOLVED,
                      solve_diagonal_hlcp_kernel, solve_hlcp_kernel, solve_lcp_kernel)
from .problems import HLCP, LCP, Residual, as_vector, within
from .results import HLCPResult, LCPResult, Status

__all__ = ["lemke", "LEMKE_OPTIONS"]

#: Options accepted by :func:`lemke` (and ``pympc.solve(..., method="lemke")``).
LEMKE_OPTIONS = {
    "covering_vector": "positive vector d of the artificial column (default: all ones)",
    "max_pivots": "pivot limit (default 1000 + 100 n)",
    "piv_tol": "smallest pivot accepted, relative to the largest entry of the data (default 1e-10)",
    "tol": "verification tolerance, scaled by the data (default 1e-9)",
    "certify": "on a ray, decide exactly by enumeration whether a solution exists (default: n <= 8)",
    "verbose": "print the pivot log (default False)",
}


def _variable_name(k, n):
    if k < n:
        return f"w{k + 1}"
    if k < 2 * n:
        return f"z{k - n + 1}"
    return "z0"


@lru_cache(maxsize=128)
def _ones(n):
    """The default covering vector e (read-only, shared)."""
    d = np.ones(n)
    d.flags.writeable = False
    return d


def _settings(n, covering_vector=None, max_pivots=None, piv_tol=1e-10, tol=1e-9, verbose=False):
    if covering_vector is None:
        d = _ones(n)
    else:
        d = as_vector("covering_vector", covering_vector, n)
        if not (d > 0).all():
            raise OptionError("covering_vector must be strictly positive (every entry > 0).")
    if max_pivots is None:
        max_pivots = 1000 + 100 * n
    elif int(max_pivots) < 1:
        raise OptionError("max_pivots must be a positive integer.")
    return d, int(max_pivots), float(piv_tol), float(tol), bool(verbose)


def _interpret(code, pivots, res, tol, max_pivots, log, verbose, n):
    """Status and message from a kernel's code and the residual of its point."""
    if verbose:
        print(f"Lemke on an LCP of size {n}: {pivots} pivot(s)")
        for k, (e, l) in enumerate(zip(*log)):
            print(f"  pivot {k + 1:4d}: {_variable_name(e, n):>5s} enters, {_variable_name(l, n):>5s} leaves")
    if code == KERNEL_SOLVED:
        eq, neg, comp, umax, dmax = res
        if within(eq, neg, comp, tol, max(umax, dmax)):
            return Status.SOLVED, "solution found and verified"
        return Status.NUMERICAL_FAILURE, (f"Lemke ended on a complementary basis but its point fails verification "
                                          f"({Residual(eq, neg, comp)}); rescale the data")
    if code == KERNEL_RAY:
        return Status.RAY_TERMINATION, f"secondary ray after {pivots} pivot(s): no solution found"
    if code == KERNEL_PIVOT_LIMIT:
        return Status.PIVOT_LIMIT, f"pivot limit {max_pivots} reached; raise max_pivots"
    assert code == KERNEL_NUMERICAL
    return Status.NUMERICAL_FAILURE, "the tableau became non-finite"


def _solve_hlcp(problem, d, max_pivots, piv_tol):
    """Lemke on the LCP form of an HLCP; None if it has no nonsingular complementary basis.

    Fast paths: a diagonal ``A`` (the LCP form ``HLCP(I, −M, q)``) is divided
    out row by row in O(n²); otherwise ``A`` is factorized once by LAPACK
    ``dgesv`` (``M = -A⁻¹B``, ``q = A⁻¹c``, O(n³)).  If ``A`` is singular, the
    pivoted search of :meth:`HLCP.find_basis` chooses the basis.
    """
    n = problem.n
    if problem._a_diagonal:  # A diagonal (the LCP form HLCP(I, -M, q)): M = -B/a, q = c/a, no factorization
        out = solve_diagonal_hlcp_kernel(problem.A, problem.B, problem.c, d, max_pivots, piv_tol, 1e-12)
        if out[0] != KERNEL_SINGULAR:
            return np.ones(n, bool), out
    lu, _piv, sol, info = _dgesv(problem.A, problem._rhs_for_a)
    if info == 0:
        out = solve_hlcp_kernel(problem.A, problem.B, problem.c, np.ones(n, np.bool_), sol, lu, d,
                                max_pivots, piv_tol, 1e-12)
        if out[0] != KERNEL_SINGULAR:
            return np.ones(n, bool), out
    basis = problem.find_basis()
    if basis is None:
        return None
    red = problem.to_lcp(basis)
    S = np.column_stack([red.lcp.M, red.lcp.q])
    return basis, solve_hlcp_kernel(problem.A, problem.B, problem.c, basis, S, np.eye(n), d, max_pivots, piv_tol, 1e-12)


def _certify(problem, status, message, info):
    """On a ray, decide by enumeration whether the problem has a solution."""
    from .enumeration import enumerate_solutions

    sols = enumerate_solutions(problem, max_pairs=problem.n)
    info["certificate"] = sols
    if sols.kind.name == "NONE":
        return Status.INFEASIBLE, message + "; enumeration of all complementary supports proves there is no solution"
    return status, message + f"; yet enumeration finds solutions ({sols.kind.name.lower()}): Lemke's method cannot reach them from this start"


def lemke(problem, **options):
    """Solve an LCP or HLCP with Lemke's method (lexicographic minimum-ratio rule).

    Parameters
    ----------
    problem : LCP or HLCP
    **options
        See :data:`LEMKE_OPTIONS`.  Unknown options raise :class:`~pympc.errors.OptionError`.

    Returns
    -------
    LCPResult or HLCPResult
        ``status`` is ``SOLVED`` only for a verified point.

    Notes
    -----
    An HLCP is reduced to an LCP through a nonsingular complementary basis
    found by a pivoted factorization (:meth:`HLCP.find_basis`); the point is
    mapped back and verified against the original ``A x + B y = c``.

    Examples
    --------
    >>> import pympc
    >>> r = pympc.lemke(pympc.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0]))
    >>> r.success, float(r.z.sum())
    (True, 1.0)
    """
    n = problem.n
    if options:
        unknown = options.keys() - LEMKE_OPTIONS.keys()
        if unknown:
            raise OptionError(f"unknown option(s) {sorted(unknown)} for method 'lemke'; valid: {sorted(LEMKE_OPTIONS)}")
        certify = options.pop("certify", None)
        d, max_pivots, piv_tol, tol, verbose = _settings(n, **options)
    else:  # the defaults, without the keyword machinery (this call is often in a loop)
        certify = None
        d, max_pivots, piv_tol, tol, verbose = _settings(n)
    if certify is None:
        certify = n <= 8
    if isinstance(problem, LCP):
        code, pivots, z, w, el, ll, res = solve_lcp_kernel(problem.M, problem.q, d, max_pivots, piv_tol, 1e-12)
        status, message = _interpret(code, pivots, res, tol, max_pivots, (el, ll), verbose, n)
        info = {"log": (el, ll)}
        if status == Status.RAY_TERMINATION and certify:
            status, message = _certify(problem, status, message, info)
        return LCPResult(problem, status, message, z, w, pivots, "lemke", info)
    if not isinstance(problem, HLCP):
        raise OptionError(f"problem must be a pympc.LCP or pympc.HLCP, got {type(problem).__name__}.")
    form = _solve_hlcp(problem, d, max_pivots, piv_tol)
    if form is None:
        info = {}
        status, message = Status.NO_BASIS, "no nonsingular complementary basis: Lemke's method cannot start"
        if certify:
            status, message = _certify(problem, status, message, info)
        x = info.get("x", np.zeros(n))
        y = info.get("y", np.zeros(n))
        return HLCPResult(problem, status, message, x, y, 0, "lemke", info)
    basis, (code, pivots, x, y, el, ll, res) = form
    status, message = _interpret(code, pivots, res, tol, max_pivots, (el, ll), verbose, n)
    info = {"log": (el, ll), "basis": basis}
    if status == Status.RAY_TERMINATION and certify:
        status, message = _certify(problem, status, message, info)
    return HLCPResult(problem, status, message, x, y, pivots, "lemke", info)
