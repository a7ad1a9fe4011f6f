"""Compiled solution sets of small event HLCPs (:meth:`pympc.dynamics.events.EventProblem.solution_set`): the
points :func:`pympc.enumerate_solutions` lists, in one call where its batched path (:func:`small_solution_set`, below
``enumeration.WALK_POINTS_FROM`` pairs) or its walk over nonsingular supports (:func:`walked_solution_set`, up to
``enumeration.BATCHED_PAIRS``) decides them; what they do not decide is the enumeration's.  Called from the fused
event call (:func:`pympc.dynamics._event_solve.solved_event`) and from ``EventProblem.solution_set``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._linalg import lu_solve
from ..complementarity._kernel import (F_INT_nptype, HLCP_DEFAULT_KERNEL, _dgesv, batched_leaves, equilibrate_hlcp,
                                      range_part, relative_residual)
from ..complementarity.problems import NOISE   # (a constant of the noise rule, read at compile time)

__all__ = ["small_solution_set", "walked_solution_set", "WALKED_KERNEL", "EQUILIBRATION_SWEEPS", "NONE_RCOND",
           "NEAR_EMPTY_RCOND"]


@njit(cache=True, nogil=True, inline="always")
def _python_max(t):
    """``max(t)`` of a 3-tuple as Python's builtin takes it: the first entry, replaced by a later one only where
    ``later > current`` (so a NaN after the first entry is passed over, as there)."""
    m = t[0]
    if t[1] > m:
        m = t[1]
    if t[2] > m:
        m = t[2]
    return m


EQUILIBRATION_SWEEPS = 20
"""The Ruiz sweeps of :meth:`pympc.HLCP.equilibrated` (the enumeration's scaling)."""


NONE_RCOND = 1e-8
""":func:`small_solution_set` decides "no solution" only when every support whose point had the wrong sign has a
reciprocal condition number of at least this (the sign of its LU point then beyond round-off's reach); else the
enumeration, which asks Lemke and the exact search before it says NONE.  On 6000 random and badly scaled
problems of 1–6 pairs whose supports all were refused, the least such value was 2.6e-7 and no other route found
a solution of any of them."""


NEAR_EMPTY_RCOND = 1e-16
""":func:`near_supports_empty` decides a nearly singular support (:func:`batched_leaves`' status −1) only where its
exact reciprocal 1-norm condition is at most this: singular to working precision, far below the 1e-11 of LAPACK's
estimate in :func:`~pympc.complementarity.enumeration.nearly_singular_empty` (an estimate never below the exact
value of its own factors, round-off's alike here) and below its 1e-14 (no LU point to look at), and with its
2-norm condition beyond the ``1 / (n ε)`` at which ``lstsq`` drops a singular value (``κ₂ ≥ κ₁ / n``)."""


@njit(cache=True, nogil=True)
def near_supports_empty(As, Bs, cs, xs, rc, st, tol):
    """Decide, in place, the nearly singular supports (``st[k] == −1``) of an equilibrated HLCP ``(As, Bs, cs)``
    empty (−2) where :func:`~pympc.complementarity.enumeration.nearly_singular_empty` surely finds them so, with
    ``rc`` and ``st`` :func:`batched_leaves`' answer; those left −1 are the caller's (that NumPy test).

    Decided: a reciprocal condition ``rc[k]`` at most :data:`NEAR_EMPTY_RCOND` (LAPACK's estimate then at most
    1e-14: no LU point either), its LU point (:func:`~pympc._linalg.lu_solve`) finite and of the wrong sign
    beyond round-off (an entry below ``−tol (1 + max|v|)``: no point that ``_checked`` could take, whatever
    factors), and ``c`` farther than twice the range test's ``1e3 tol (1 + max|c|)`` from the range of its ``n −
    1`` columns the Gram–Schmidt keeps (:func:`~pympc.complementarity._kernel.range_part`, rank exactly ``n −
    1``; ``lstsq``'s residual then that one, to round-off)."""
    n = cs.shape[0]
    cmax = 0.0
    for i in range(n):
        cmax = max(cmax, abs(cs[i]))
    bound = 2e3 * tol * (1.0 + cmax)
    C = np.empty((n, n))
    W = np.empty((n, n))
    v = np.empty((n, 1))
    for k in range(st.shape[0]):
        if st[k] != -1 or not rc[k] <= NEAR_EMPTY_RCOND:
            continue
        for i in range(n):
            v[i, 0] = cs[i]
            for j in range(n):
                C[i, j] = As[i, j] if xs[k, j] else Bs[i, j]
        W[:, :] = C
        if not lu_solve(W, v):
            continue
        big = 0.0
        low = 0.0
        finite = True
        for i in range(n):
            finite = finite and np.isfinite(v[i, 0])
            big = max(big, abs(v[i, 0]))
            low = min(low, v[i, 0])
        if not finite or low >= -tol * (1.0 + big):
            continue
        res, rank = range_part(C, cs)
        if rank == n - 1 and res > bound:
            st[k] = -2


@njit(cache=True, nogil=True)
def small_solution_set(A, B, c, a_diagonal, xs, tol):
    """The points of :func:`pympc.enumerate_solutions` of a small HLCP in one call, where its batched path
    decides them; ``(decided, P, near)``, the rows of ``P`` the points ``(x, y)`` in its order, ``near`` the
    supports the caller must still find empty (see below).

    The same steps and arithmetic as ``enumeration._enumerate`` with ``_batched_leaves``: the problem equilibrated
    (:meth:`~pympc.HLCP.equilibrated`), every support ``xs[k]`` solved (:func:`batched_leaves`), the verified
    points in the walk's order (a point whose relative residual fails taken as ``support_solution``'s second try
    or the noise rule of :meth:`~pympc.HLCP.is_solution` takes it, status 2) less those within ``1e3 tol (1 +
    max|u|)`` of one listed, each verified in the original problem as ``is_solution`` verifies it within ``1e3
    tol`` and scaled back.  The nearly singular supports (status −1) are decided empty here where
    :func:`near_supports_empty` proves the enumeration's test of them would; the others are left to LAPACK's
    estimate and a least-squares residual, as there: they are ``near``, and the set is the enumeration's when
    :func:`~pympc.complementarity.enumeration.nearly_singular_empty` finds them empty (the caller asks).  Not
    decided (False), the enumeration itself runs: a support the batched path hands to the walk (status −3), a
    point whose verification in the original problem fails (a rejection), or no point where a support is nearly
    singular or one's point was refused for its sign with a reciprocal condition below :data:`NONE_RCOND` (the
    enumeration then checks "no solution" by Lemke and the exact search).
    """
    n = c.shape[0]
    As, Bs, cs, dx, dy = equilibrate_hlcp(A, B, c, a_diagonal, EQUILIBRATION_SWEEPS)
    rc, U, st = batched_leaves(As, Bs, cs, xs, tol, 1e3 * tol)
    N = xs.shape[0]
    near = 0
    noisy = False
    for k in range(N):
        if st[k] == -3:
            return _declined(n)
        near += st[k] == -1
        noisy = noisy or st[k] == 2
    if near:         # (still counted: no point listed and a support nearly singular, the enumeration decides)
        near_supports_empty(As, Bs, cs, xs, rc, st, tol)
    scales = _noise_scales(As, Bs, cs) if noisy else _no_scales()
    pts = np.empty((N, 2 * n))
    u = np.empty(2 * n)
    m = 0
    for k in range(N):
        if st[k] == 1:
            u[:] = U[k]
        elif st[k] == 2:       # enumeration._batched_leaves: support_solution's two tries, with the noise rule
            u[:] = U[k]
            if not _forgiven(As, Bs, cs, scales, u, tol):
                big = 0.0
                for j in range(2 * n):
                    big = max(big, abs(u[j]))
                if not _second_try(As, Bs, cs, scales, u, tol * big, tol):
                    continue
        else:
            continue
        m = _listed_once(pts, m, u, tol)
    return _set_answer(A, B, c, cs, dx, dy, pts, m, near, rc, st, tol)


@njit(cache=True, nogil=True, inline="always")
def _declined(n):
    """The answer of a compiled solution set of ``n`` pairs that does not decide: ``(False, P, near)`` with
    nothing in ``P`` (``2n`` columns) and ``near`` (the caller's enumeration runs)."""
    return False, np.zeros((0, 2 * n)), np.zeros(0, np.int64)


@njit(cache=True, nogil=True)
def _noise_scales(As, Bs, cs):
    """The equilibrated problem's own equilibration (:func:`equilibrate_hlcp` of ``(As, Bs, cs)``): the units of
    the noise rule of :meth:`~pympc.HLCP.is_solution` (:func:`_forgiven`), made only where a point needs it."""
    return equilibrate_hlcp(As, Bs, cs, _is_diagonal(As), EQUILIBRATION_SWEEPS)


@njit(cache=True, nogil=True, inline="always")
def _no_scales():
    """Empty arrays of the types of :func:`_noise_scales`' answer, where no point needs the noise rule."""
    return np.empty((0, 0)), np.empty((0, 0)), np.empty(0), np.empty(0), np.empty(0)


@njit(cache=True, nogil=True)
def _none_decided(rc, st):
    """May a compiled solution set with no point say "no solution"?  Only if every support refused for its sign
    (``st[k] >= 0``: :func:`batched_leaves`' status 0, or a visited support whose point had the wrong sign) has
    a reciprocal condition ``rc[k]`` of at least :data:`NONE_RCOND`."""
    for k in range(st.shape[0]):
        if st[k] >= 0 and not rc[k] >= NONE_RCOND:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _listed_once(pts, m, u, tol):
    """The walk's ``add`` of an accepted point ``u``: appended as row ``m`` of ``pts`` unless within ``1e3 tol (1 +
    max|u|)`` of one listed; returns the number of rows listed."""
    big = 0.0
    for j in range(u.shape[0]):
        big = max(big, abs(u[j]))
    if _listed(pts, m, u, 1e3 * tol * (1.0 + big)):
        return m
    pts[m] = u
    return m + 1


@njit(cache=True, nogil=True, inline="always")
def _set_answer(A, B, c, cs, dx, dy, pts, m, near, rc, st, tol):
    """A compiled set's answer from its ``m`` listed points (see :func:`small_solution_set`): declined where none
    was listed and a support is nearly singular (``near``) or "no solution" is not decided (:func:`_none_decided`),
    else the points verified in the original problem and scaled back (:func:`_verified_back`)."""
    if m == 0 and (near or not _none_decided(rc, st)):
        return _declined(c.shape[0])
    ok, P = _verified_back(A, B, c, cs, dx, dy, pts[:m], tol)
    return ok, P, np.flatnonzero(st == -1)


@njit(cache=True, nogil=True)
def _listed(pts, m, u, lim):
    """Is ``u`` within ``lim`` (largest difference) of one of the first ``m`` rows of ``pts``?  (the walk's
    ``add``: the points in its order, the later of two equal ones dropped)"""
    for p in range(m):
        d = 0.0
        for j in range(u.shape[0]):
            d = max(d, abs(pts[p, j] - u[j]))
        if d <= lim:
            return True
    return False


@njit(cache=True, nogil=True)
def _is_diagonal(A):
    """``HLCP._a_diagonal`` of a problem with this A: every entry off the diagonal zero."""
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if i != j and A[i, j] != 0.0:
                return False
    return True


@njit(cache=True, nogil=True)
def _noise_cleaned(A, B, c, cs, dx, dy, x, y, tol):
    """The noise rule of :meth:`~pympc.HLCP.is_solution` (its second test, the same arithmetic): ``(x, y)`` with
    its entries at most ``NOISE (1 + max|x', y', c'|)`` in the units of the equilibrated problem (``x' = x /
    dx``, ``y' = y / dy``, ``cs`` = c': :func:`equilibrate_hlcp` of ``(A, B, c)``) zeroed has its relative
    residual within ``tol``.  (A point with an entry that is not finite fails, as there.)"""
    n = c.shape[0]
    mx = 0.0
    my = 0.0
    mc = 0.0
    for j in range(n):
        mx = _np_max(mx, abs(x[j] / dx[j]))
        my = _np_max(my, abs(y[j] / dy[j]))
        mc = _np_max(mc, abs(cs[j]))
    floor = NOISE * (1.0 + _python_max((mx, my, mc)))
    xc = np.empty(n)
    yc = np.empty(n)
    for j in range(n):
        xc[j] = 0.0 if abs(x[j] / dx[j]) <= floor else x[j]
        yc[j] = 0.0 if abs(y[j] / dy[j]) <= floor else y[j]
    return _python_max(relative_residual(A, B, c, xc, yc)) <= tol


@njit(cache=True, nogil=True, inline="always")
def _np_max(m, v):
    """One step of ``ndarray.max``: a NaN stays."""
    return v if (v > m or v != v) and m == m else m


@njit(cache=True, nogil=True)
def _forgiven(As, Bs, cs, scales, u, tol):
    """``HLCP(As, Bs, cs).is_solution(u[:n], u[n:], tol)`` for a point whose relative residual failed: the noise
    rule, ``scales`` the problem's own :func:`equilibrate_hlcp` (its units)."""
    n = cs.shape[0]
    return _noise_cleaned(As, Bs, cs, scales[2], scales[3], scales[4], u[:n], u[n:], tol)


@njit(cache=True, nogil=True)
def _second_try(As, Bs, cs, scales, u, floor, tol):
    """``support_solution``'s second try of a point the first failed: ``u``'s entries at most ``floor`` zeroed
    (in place), and the point verified by its relative residual or else the noise rule (:func:`_forgiven`)."""
    n = cs.shape[0]
    for j in range(2 * n):
        if u[j] <= floor:
            u[j] = 0.0
    return _python_max(relative_residual(As, Bs, cs, u[:n], u[n:])) <= tol or _forgiven(As, Bs, cs, scales, u, tol)


@njit(cache=True, nogil=True)
def _verified_back(A, B, c, cs, dx, dy, pts, tol):
    """The rows ``(x', y')`` of ``pts`` (points of the equilibrated problem, ``(A', B', c', dx, dy)`` with ``cs``
    = c') as points ``(dx x', dy y')`` of ``HLCP(A, B, c)``, each verified as :meth:`~pympc.HLCP.is_solution`
    verifies it within ``1e3 tol`` (its relative residual, else the noise rule): ``(True, P)``, or ``(False,
    empty)`` when one fails (a rejection: the caller's)."""
    n = c.shape[0]
    m = pts.shape[0]
    out = np.empty((m, 2 * n))
    x = np.empty(n)
    y = np.empty(n)
    for p in range(m):
        for j in range(n):
            x[j] = pts[p, j] * dx[j]
            y[j] = pts[p, n + j] * dy[j]
        if not (_python_max(relative_residual(A, B, c, x, y)) <= 1e3 * tol
                or _noise_cleaned(A, B, c, cs, dx, dy, x, y, 1e3 * tol)):
            return False, np.zeros((0, 2 * n))
        for j in range(n):
            out[p, j] = x[j]
            out[p, n + j] = y[j]
    return True, out


WALKED_KERNEL = HLCP_DEFAULT_KERNEL
"""Whether :func:`walked_solution_set` can run here (numba's private wrapper of LAPACK's dgesv found)."""
_D = ord("d")


@njit(cache=True, nogil=True)
def walked_solution_set(A, B, c, a_diagonal, xs, tol):
    """The points of :func:`pympc.enumerate_solutions` of an HLCP of
    :data:`~pympc.complementarity.enumeration.WALK_POINTS_FROM` to
    :data:`~pympc.complementarity.enumeration.BATCHED_PAIRS` pairs in one call, where its visit of the leaves
    solves nonsingular supports only; ``(decided, P, near)`` as :func:`small_solution_set` (``near``: the
    nearly singular supports, status −1, that :func:`near_supports_empty` does not decide and the walk finds
    empty by LAPACK's estimate and a least-squares residual where the caller's
    :func:`~pympc.complementarity.enumeration.nearly_singular_empty` does).

    The same steps and arithmetic as ``enumeration._enumerate`` there: the problem equilibrated, the supports
    to visit those :func:`batched_leaves` does not prove empty (its status neither 0 nor −2), in the walk's
    order; on each, ``support_solution``: LAPACK's LU solve of ``C_α v = c`` (dgesv, the bits of the walk's
    dgetrf and dgetrs), the point refused for an entry below ``−tol (1 + max|u|)``, clipped at 0 and accepted
    when its relative residual is within ``tol`` (else as the second try, entries below ``tol max|u|`` zeroed,
    or the noise rule of :meth:`~pympc.HLCP.is_solution` accepts it, or not at all); listed unless within ``1e3
    tol (1 + max|u|)`` of one listed; each listed point verified in the original problem as ``is_solution``
    verifies it within ``1e3 tol`` and scaled back.  A visited support has an exact reciprocal condition above
    1e-10 (status 1 or 2), so LAPACK's estimate (never below it) is above the walk's 1e-11 and the walk solves
    it by LU as here.  Not decided (False), the enumeration itself runs: a visited support exactly singular
    with ``c`` near its range (status −3: the walk's LPs), a point that is not finite, a failed verification in
    the original problem, or no point where a support is nearly singular or one refused for its sign has a
    reciprocal condition below :data:`NONE_RCOND` (the enumeration then checks "no solution" by Lemke and the
    exact search).
    """
    n = c.shape[0]
    As, Bs, cs, dx, dy = equilibrate_hlcp(A, B, c, a_diagonal, EQUILIBRATION_SWEEPS)
    rc, _, st = batched_leaves(As, Bs, cs, xs, tol, 1e3 * tol)
    N = xs.shape[0]
    near = 0
    for k in range(N):
        if st[k] == -3:
            return _declined(n)
        near += st[k] == -1
    if near:
        near_supports_empty(As, Bs, cs, xs, rc, st, tol)
    pts = np.empty((N, 2 * n))
    m = 0
    u = np.empty(2 * n)
    piv = np.empty(n, F_INT_nptype)
    noisy = False
    scales = _no_scales()        # (made for the noise rule when a point needs it)
    for k in range(N):
        if st[k] == 0 or st[k] == -2 or st[k] == -1:      # (−1: the caller's, see above)
            continue
        lu = np.empty((n, n)).T              # dgesv factorizes a Fortran-ordered copy of C_α in place
        for i in range(n):
            for j in range(n):
                lu[i, j] = As[i, j] if xs[k, j] else Bs[i, j]
        v = cs.copy()                         # and overwrites the right-hand side with the solution
        if _dgesv(_D, n, 1, lu.ctypes, n, piv.ctypes, v.ctypes, n) != 0:
            return _declined(n)
        for j in range(2 * n):
            u[j] = 0.0
        for j in range(n):
            if not np.isfinite(v[j]):
                return _declined(n)
            u[j if xs[k, j] else n + j] = v[j]
        big = 0.0
        low = np.inf
        for j in range(2 * n):
            big = max(big, abs(u[j]))
            low = min(low, u[j])
        if low < -tol * (1.0 + big):        # the wrong sign
            continue
        floor = tol * big                  # support_solution's second try: entries below tol max|u| zeroed
        for j in range(2 * n):
            if not u[j] > 0.0:             # np.maximum(u, 0): −0 too becomes +0
                u[j] = 0.0
        if not _python_max(relative_residual(As, Bs, cs, u[:n], u[n:])) <= tol:
            if not noisy:
                scales = _noise_scales(As, Bs, cs)
                noisy = True
            if not _forgiven(As, Bs, cs, scales, u, tol) and not _second_try(As, Bs, cs, scales, u, floor, tol):
                continue
        m = _listed_once(pts, m, u, tol)
    return _set_answer(A, B, c, cs, dx, dy, pts, m, near, rc, st, tol)


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
