"""Compiled pieces of a transition (:mod:`pympc.dynamics.transition`) for small systems: the dense event HLCP
in one call, the projection onto the constraints and the consistency test of a mode without NumPy temporaries.

:func:`dense_event` builds what :func:`pympc.dynamics.events.event_problem`
builds with NumPy on its dense path (the biases with the Baumgarte terms, the
force columns of every pair, the accelerations ``q̈ = qdd0 + Q z`` under the
bilateral constraints, the rows of the HLCP and their scaling), without the
two dozen small NumPy calls and temporaries that made a 3-pair event HLCP cost
~100 µs.  The linear algebra is written out (Cholesky of a dense mass matrix,
Gaussian elimination with partial pivoting of ``J M⁻¹ Jᵀ``): the systems are a
few rows; the results equal the NumPy build's to round-off.  Anything the
kernel cannot decide (a mass matrix that is not positive definite, a singular
``J M⁻¹ Jᵀ``, a non-finite entry) is reported by a code, and the caller takes
the NumPy path, which raises or falls back exactly as before.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._linalg import back_substitute, lq_min_norm, lu_solve, rcond_1
from ..mechanics.assembly import _CompiledAssembly

__all__ = ["as_floats", "as_bools", "assembly_arrays", "AssemblyArrays", "dense_event", "settle", "position_error",
           "small_min_norm", "project_velocity", "check_mode", "slip_directions", "velocity_rows", "mode_of_point",
           "dense_min_norm", "position_step"]

EVENT_OK, EVENT_NOT_SPD, EVENT_SINGULAR, EVENT_NOT_FINITE = 0, 1, 2, 3


_F8, _B1 = np.dtype(np.float64), np.dtype(np.bool_)


def as_floats(v):
    """``v`` as the compiled build takes every array: float64, C-contiguous, aligned, writable (one compiled
    version).  (``flags.carray`` is the three flags at once; a dtype of the machine's byte order is the
    singleton ``np.dtype(np.float64)`` (an identity test), but arrays returned by a kernel loaded from numba's
    on-disk cache carry an unpickled copy of it: equal, not identical — the comparison follows, cheaper than a
    copy of each.)"""
    if type(v) is np.ndarray and (v.dtype is _F8 or v.dtype == _F8) and v.flags.carray:
        return v
    return np.array(v, dtype=float)


class AssemblyArrays:
    """The arrays of one assembly as the kernels take them (:func:`as_floats`, :func:`as_bools` of each), made
    once: a transition hands one assembly to several kernels (projection, slip directions, event HLCP)."""

    __slots__ = ("M", "J", "WN", "WT", "h", "w", "gdot", "g", "holonomic", "bN", "vN", "gN", "bT", "vT")

    def __init__(self, a):
        if type(a) is _CompiledAssembly:
            # every array but the mass matrix and the rows' kinds is a view of the float64 buffer its kernel filled,
            # or the model's empty rows (float64, C-contiguous: as_floats would return each itself, after 3 tests)
            self.J, self.WN, self.WT, self.h, self.w = a.J, a.WN, a.WT, a.h, a.w
            self.gdot, self.g, self.bN, self.vN, self.gN, self.bT, self.vT = a.gdot, a.g, a.bN, a.vN, a.gN, a.bT, a.vT
        else:
            f = as_floats
            self.J, self.WN, self.WT, self.h, self.w = f(a.J), f(a.WN), f(a.WT), f(a.h), f(a.w)
            self.gdot, self.g, self.bN, self.vN, self.gN = f(a.gdot), f(a.g), f(a.bN), f(a.vN), f(a.gN)
            self.bT, self.vT = f(a.bT), f(a.vT)
        self.M, self.holonomic = as_floats(a.M), as_bools(a.holonomic)


def assembly_arrays(a):
    """:class:`AssemblyArrays` of assembly ``a``, kept on the assembly itself when it is small (at most
    :data:`KEPT_UP_TO` coordinates: a few kB, living as long as the assembly): a transition asks for those of
    its event's assembly several times, with its look-ahead probe's in between."""
    arrays = getattr(a, "_arrays", None)
    if arrays is None:
        arrays = AssemblyArrays(a)
        if a.M.shape[0] <= KEPT_UP_TO:
            a._arrays = arrays
    return arrays


KEPT_UP_TO = 64
"""Assemblies of at most this many coordinates have their :class:`AssemblyArrays` kept (:func:`assembly_arrays`)."""


def as_bools(v):
    """``v`` as a bool array the kernels take (as :func:`as_floats`)."""
    if type(v) is np.ndarray and (v.dtype is _B1 or v.dtype == _B1) and v.flags.carray:
        return v
    return np.array(v, dtype=bool)


@njit(cache=True, nogil=True)
def _cholesky_solve(M, R):
    """``M⁻¹ R`` into ``R`` for a symmetric positive definite M (False if it is not, numerically)."""
    n = M.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        d = M[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0:
            return False
        L[j, j] = np.sqrt(d)
        for i in range(j + 1, n):
            v = M[i, j]
            for k in range(j):
                v -= L[i, k] * L[j, k]
            L[i, j] = v / L[j, j]
    for col in range(R.shape[1]):
        for i in range(n):
            v = R[i, col]
            for k in range(i):
                v -= L[i, k] * R[k, col]
            R[i, col] = v / L[i, i]
    back_substitute(L.T, R)
    return True


@njit(cache=True, nogil=True)
def _dot(u, X, col):
    """``u · X[:, col]``."""
    v = 0.0
    for i in range(u.shape[0]):
        v += u[i] * X[i, col]
    return v


@njit(cache=True, nogil=True)
def dense_event(M, md, J, WN, WT, h, w, gdot, g, holonomic, bN, vN, gN, bT, vT, alpha, beta, dirs, mu, mu_s, cand):
    """The dense event HLCP of one assembly (see :func:`pympc.dynamics.events.event_problem`).

    Parameters
    ----------
    M : ndarray (n, n)
        Mass matrix (used only when ``md`` is empty).
    md : ndarray (n,) or (0,)
        The mass matrix's diagonal when it is diagonal (all entries > 0); empty otherwise.
    J, WN, WT, h, w, gdot, g, holonomic, bN, vN, gN, bT, vT : ndarray
        The assembly's arrays (bilateral rows, slot rows, forces, biases, velocities).
    alpha, beta : float
        Baumgarte parameters.
    dirs : ndarray of float
        Slip direction of every slot, 0 for the stick candidates.
    mu, mu_s : ndarray
        Kinetic and static coefficients.
    cand : ndarray of int64
        The stick candidates (the slots with ``dirs == 0``, ascending).

    Returns
    -------
    code, A, B, c, qdd0, Q, diagonal
        ``code`` is :data:`EVENT_OK` or why the kernel declined (then the arrays are not meaningful);
        ``(A, B, c)`` the row-scaled HLCP, ``q̈ = qdd0 + Q z`` with ``z = (λ⁺, λ⁻, a⁺, a⁻, f⁺, f⁻)``;
        ``diagonal`` whether A is diagonal.
    """
    n = h.shape[0]
    s = dirs.shape[0]
    c = cand.shape[0]
    r = J.shape[0]
    nz = 2 * s + 4 * c
    m = s + 2 * c
    empty = np.zeros((0, 0))
    # generalized-force columns: 0 the applied forces, then one per member of z
    X = np.zeros((n, nz + 1))
    for i in range(n):
        X[i, 0] = h[i]
    for k in range(s):
        fr = -mu[k] * dirs[k]
        for i in range(n):
            X[i, 1 + k] = WN[k, i] + fr * WT[k, i]
            X[i, 1 + s + k] = -WN[k, i] + fr * WT[k, i]
    for j in range(c):
        k = cand[j]
        for i in range(n):
            X[i, 1 + 2 * s + 2 * c + j] = 0.5 * WT[k, i]
            X[i, 1 + 2 * s + 3 * c + j] = -0.5 * WT[k, i]
    # M⁻¹ of the columns and of Jᵀ
    XJ = np.empty((n, r))
    for i in range(n):
        for a in range(r):
            XJ[i, a] = J[a, i]
    if md.shape[0]:
        for i in range(n):
            for col in range(nz + 1):
                X[i, col] = X[i, col] / md[i]
            for a in range(r):
                XJ[i, a] = XJ[i, a] / md[i]
    else:
        if not _cholesky_solve(M, X):
            return EVENT_NOT_SPD, empty, empty, np.zeros(0), np.zeros(0), empty, False
        if r and not _cholesky_solve(M, XJ):
            return EVENT_NOT_SPD, empty, empty, np.zeros(0), np.zeros(0), empty, False
    al2, be2 = 2 * alpha, beta * beta
    if r:   # the bilateral multipliers: (J M⁻¹ Jᵀ) ν = −b − J M⁻¹ cols, b = (bI, 0, …)
        S = np.empty((r, r))
        R = np.empty((r, nz + 1))
        for a in range(r):
            for b in range(r):
                S[a, b] = _dot(J[a], XJ, b)
            bI = w[a] + al2 * gdot[a] + be2 * (g[a] if holonomic[a] else 0.0)
            for col in range(nz + 1):
                R[a, col] = (-bI if col == 0 else -0.0) - _dot(J[a], X, col)
        if not lu_solve(S, R):
            return EVENT_SINGULAR, empty, empty, np.zeros(0), np.zeros(0), empty, False
        for i in range(n):
            for col in range(nz + 1):
                X[i, col] = X[i, col] + _dot(XJ[i], R, col)
    qdd0 = np.empty(n)
    Q = np.empty((n, nz))
    for i in range(n):
        qdd0[i] = X[i, 0]
        for col in range(nz):
            Q[i, col] = X[i, 1 + col]
    # rows: WN q̈ + b̂N = 0 (one per slot); per candidate −(WT q̈ + b̂T) + a⁺ − a⁻ = 0
    # and f⁺ + f⁻ − 2 μ_s (λ⁺ + λ⁻) = 0
    E = np.zeros((m, nz))
    e = np.zeros(m)
    for k in range(s):
        for col in range(nz):
            E[k, col] = _dot(WN[k], Q, col)
        e[k] = -(bN[k] + al2 * vN[k] + be2 * gN[k]) - _dot(WN[k], X, 0)
    for j in range(c):
        k = cand[j]
        row = s + j
        for col in range(nz):
            E[row, col] = -_dot(WT[k], Q, col)
        e[row] = (bT[k] + al2 * vT[k]) + _dot(WT[k], X, 0)
        E[row, 2 * s + j] += 1.0
        E[row, 2 * s + c + j] -= 1.0
        row = s + c + j
        E[row, 2 * s + 2 * c + j] = 1.0
        E[row, 2 * s + 3 * c + j] = 1.0
        E[row, k] = -2.0 * mu_s[k]
        E[row, s + k] = -2.0 * mu_s[k]
    # x = (λ⁺, a⁺, f⁻), y = (λ⁻, f⁺, a⁻); every row scaled by its largest entry
    A = np.empty((m, m))
    B = np.empty((m, m))
    cv = np.empty(m)
    finite = True
    for i in range(m):
        for j in range(s):
            A[i, j] = E[i, j]
            B[i, j] = E[i, s + j]
        for j in range(c):
            A[i, s + j] = E[i, 2 * s + j]
            A[i, s + c + j] = E[i, 2 * s + 3 * c + j]
            B[i, s + j] = E[i, 2 * s + 2 * c + j]
            B[i, s + c + j] = E[i, 2 * s + c + j]
        sc = 0.0
        for j in range(m):
            sc = max(sc, abs(A[i, j]), abs(B[i, j]))
        if sc == 0.0:
            sc = 1.0
        for j in range(m):
            A[i, j] = A[i, j] / sc
            B[i, j] = B[i, j] / sc
            finite = finite and np.isfinite(A[i, j]) and np.isfinite(B[i, j])
        cv[i] = e[i] / sc
        finite = finite and np.isfinite(cv[i])
    if not finite:
        return EVENT_NOT_FINITE, empty, empty, np.zeros(0), np.zeros(0), empty, False
    diagonal = True
    for i in range(m):
        for j in range(m):
            if i != j and A[i, j] != 0.0:
                diagonal = False
    return EVENT_OK, A, B, cv, qdd0, Q, diagonal


@njit(cache=True, nogil=True)
def position_error(g, holonomic, gN, q):
    """``(max |g|, bound)`` over the position-level bilateral rows and the slot gaps, and the bound
    ``1e-13 (1 + max |q|)`` below which the projection calls them satisfied."""
    err = 0.0
    for i in range(g.shape[0]):
        if holonomic[i]:
            err = max(err, abs(g[i]))
    for i in range(gN.shape[0]):
        err = max(err, abs(gN[i]))
    big = 0.0
    for i in range(q.shape[0]):
        big = max(big, abs(q[i]))
    return err, 1e-13 * (1.0 + big)


VELOCITY_SAME, VELOCITY_PROJECTED, VELOCITY_DECLINED = 0, 1, 2
SMALL_ROWS = 4
"""Least-norm corrections of at most this many rows go through the normal equations in the kernels."""


@njit(cache=True, nogil=True)
def small_min_norm(J, r, d):
    """The least-norm ``d`` with ``J d = r`` by ``Jᵀ (J Jᵀ)⁻¹ r`` for a J of at most :data:`SMALL_ROWS` rows
    (no more than columns) whose ``J Jᵀ`` has an exact reciprocal 1-norm condition above 1e-4 (then the
    normal equations lose nothing that matters); False, ``d`` untouched, otherwise."""
    k, n = J.shape
    if k == 0 or k > SMALL_ROWS or k > n:
        return False
    S = np.empty((k, k))
    for a in range(k):
        for b in range(k):
            v = 0.0
            for i in range(n):
                v += J[a, i] * J[b, i]
            S[a, b] = v
    # the inverse, for the exact condition number (k ≤ 4: cheaper than an estimate's bookkeeping)
    Si = np.eye(k)
    W = S.copy()
    if not lu_solve(W, Si):
        return False
    if not rcond_1(S, Si) > 1e-4:
        return False
    y = r.copy()
    W = S.copy()
    Y = y.reshape((k, 1))
    lu_solve(W, Y)
    for i in range(n):
        v = 0.0
        for a in range(k):
            v += J[a, i] * Y[a, 0]
        d[i] = v
    return True


@njit(cache=True, nogil=True)
def _stack(a, b, c, idx, out):
    """``out = [a; b; c[idx]]`` for matrices (rows), element by element."""
    m, s, w = a.shape[0], b.shape[0], out.shape[1]
    for i in range(m):
        for j in range(w):
            out[i, j] = a[i, j]
    for i in range(s):
        for j in range(w):
            out[m + i, j] = b[i, j]
    for i in range(idx.shape[0]):
        for j in range(w):
            out[m + s + i, j] = c[idx[i], j]


@njit(cache=True, nogil=True)
def _finite_rows(J, r):
    """Are every entry of ``J`` and of ``r`` finite?"""
    for i in range(J.shape[0]):
        for j in range(J.shape[1]):
            if not np.isfinite(J[i, j]):
                return False
    return _all_finite(r)


_EPS = float(np.finfo(float).eps)


@njit(cache=True, nogil=True)
def dense_min_norm(J, r, d, sparse_from):
    """:func:`pympc.dynamics.modes.min_norm` of one right-hand side on its dense paths, into ``d``, in one call:
    :func:`small_min_norm` where it applies, else Householder's LQ (:func:`~pympc._linalg.lq_min_norm`) where J
    has no more rows than columns and is well conditioned (the least-norm solution LAPACK's SVD computes, to
    round-off), else LAPACK's ``gelsd`` as ``np.linalg.lstsq(J, r, rcond=None)`` calls it (numba's binding of the
    same routine, ``rcond = ε max(k, n)``: the same bits, checked by the tests).  False (``d`` untouched) where
    min_norm takes another path: no rows, a J whose rows are in its sparse range (``sparse_from ≤ k ≤ n``), or an
    entry that is not finite (NumPy's error, not numba's)."""
    k, n = J.shape
    if k == 0 or (sparse_from <= k and k <= n):
        return False
    if small_min_norm(J, r, d):
        return True
    if not _finite_rows(J, r):
        return False
    if lq_min_norm(J, r, d):
        return True
    x = np.linalg.lstsq(J, r, rcond=_EPS * max(k, n))[0]
    for i in range(n):
        d[i] = x[i]
    return True


@njit(cache=True, nogil=True)
def project_velocity(J, WN, WT, stick, gdot, vN, vT, qd, sparse_from):
    """q̇ projected onto the velocity constraints of the joints, the slots and the sticking slots.

    Returns ``(code, q̇')``: :data:`VELOCITY_SAME` (every row already exactly satisfied: ``q̇`` itself, as
    the least-norm correction of a zero residual is zero), :data:`VELOCITY_PROJECTED` (``q̇ − d`` with
    :func:`dense_min_norm`'s ``d``) or :data:`VELOCITY_DECLINED` (the caller projects with
    :func:`pympc.dynamics.modes.min_norm`: the rows in its sparse range ``sparse_from``, or not finite).
    """
    n = qd.shape[0]
    k = J.shape[0] + WN.shape[0] + stick.shape[0]
    r = np.empty((k, 1))
    _stack(gdot.reshape((-1, 1)), vN.reshape((-1, 1)), vT.reshape((-1, 1)), stick, r)
    r = r.reshape(k)
    zero = True
    for i in range(k):
        if r[i] != 0.0:
            zero = False
    if zero:
        return VELOCITY_SAME, qd
    R = np.empty((k, n))
    _stack(J, WN, WT, stick, R)
    done, out = _corrected(R, r, qd, sparse_from)
    return (VELOCITY_PROJECTED if done else VELOCITY_DECLINED), out


@njit(cache=True, nogil=True)
def _corrected(R, r, v, sparse_from):
    """``(True, v − d)``, ``d`` :func:`dense_min_norm`'s least-norm ``R d = r``; ``(False, v)`` where it declines."""
    n = v.shape[0]
    d = np.empty(n)
    if not dense_min_norm(R, r, d, sparse_from):
        return False, v
    out = np.empty(n)
    for i in range(n):
        out[i] = v[i] - d[i]
    return True, out


@njit(cache=True, nogil=True)
def position_step(g, holonomic, gN, J, WN, q, sparse_from):
    """One Newton step of the position projection: ``(True, q − d)``, ``d`` :func:`dense_min_norm`'s correction of
    the rows ``[J[holonomic]; WN]`` for the residual ``[g[holonomic]; gN]``; ``(False, q)`` where it declines
    (the caller's :func:`pympc.dynamics.modes.min_norm` then)."""
    n = q.shape[0]
    h = 0
    for i in range(g.shape[0]):
        if holonomic[i]:
            h += 1
    k = h + gN.shape[0]
    Jh = np.empty((k, n))
    r = np.empty(k)
    m = 0
    for i in range(g.shape[0]):
        if holonomic[i]:
            for j in range(n):
                Jh[m, j] = J[i, j]
            r[m] = g[i]
            m += 1
    for i in range(gN.shape[0]):
        for j in range(n):
            Jh[h + i, j] = WN[i, j]
        r[h + i] = gN[i]
    return _corrected(Jh, r, q, sparse_from)


@njit(cache=True, nogil=True)
def velocity_rows(J, WN, WT, stick, gdot, vN, vT):
    """The rows and residuals :func:`project_velocity` declined to project: ``([J; WN; WT[stick]],
    [ġ; vN; vT[stick]])`` (the caller's least-norm correction), in one call."""
    k = J.shape[0] + WN.shape[0] + stick.shape[0]
    R = np.empty((k, J.shape[1]))
    _stack(J, WN, WT, stick, R)
    r = np.empty((k, 1))
    _stack(gdot.reshape((-1, 1)), vN.reshape((-1, 1)), vT.reshape((-1, 1)), stick, r)
    return R, r.reshape(k)


@njit(cache=True, nogil=True)
def mode_of_point(x, y, cand, directions, previous_walls, tol):
    """The mode an event HLCP's point ``(x, y)`` selects (see :func:`pympc.dynamics.events.read_mode`, the same
    tests in the same arithmetic): ``(walls, motions, degenerate)``, ``degenerate`` holding ``k`` for a wall
    part of slot ``k`` and ``s + k`` for a stick part, in the order read_mode lists them."""
    s = directions.shape[0]
    c = cand.shape[0]
    walls = np.empty(s, np.int64)
    motions = np.empty(s, np.int64)
    deg = np.empty(s + c, np.int64)
    m = 0
    for k in range(s):
        lam = x[k] - y[k]                        # λ⁺ − λ⁻
        if abs(lam) <= tol:
            deg[m] = k
            m += 1
            walls[k] = previous_walls[k]
        else:
            walls[k] = 1 if lam > 0 else -1
        motions[k] = int(directions[k])
    for j in range(c):
        k = cand[j]
        acc = x[s + j] - y[s + c + j]
        if acc > tol:
            motions[k] = 1
        elif acc < -tol:
            motions[k] = -1
        else:
            motions[k] = 0
            if y[s + j] <= tol or x[s + c + j] <= tol:
                deg[m] = s + k
                m += 1
    return walls, motions, deg[:m]


VELOCITY_NOT_TRIED = 3


@njit(cache=True, nogil=True)
def settle(g, holonomic, gN, q, J, WN, WT, stick, gdot, vN, vT, qd, sparse_from):
    """:func:`position_error` and, when the positions are within its bound, :func:`project_velocity` in one call:
    ``(err, bound, code, q̇')``, ``code`` :data:`VELOCITY_NOT_TRIED` when they are not."""
    err, bound = position_error(g, holonomic, gN, q)
    if not err <= bound:
        return err, bound, VELOCITY_NOT_TRIED, qd
    code, out = project_velocity(J, WN, WT, stick, gdot, vN, vT, qd, sparse_from)
    return err, bound, code, out


@njit(cache=True, nogil=True)
def _all_finite(v):
    for x in v:
        if not np.isfinite(x):
            return False
    return True


@njit(cache=True, nogil=True)
def check_mode(lam, h, qdd, F, aT, walls, motions, mu_s, cand):
    """The consistency test of a mode's forces and accelerations (see ``Transition.verify``).

    Returns ``(code, k, hmax)``: ``code`` 0 consistent; 1 a normal force on the wrong wall; 2 a sticking slot
    needs more static friction than μ_s|λ|; 3 candidate ``k`` starts slipping against its acceleration; 4 a
    force or an acceleration is not finite.  ``hmax``: ``np.abs(h).max(initial=0)`` (NaN if h holds one).
    """
    hmax = 0.0
    for v in h:
        if abs(v) > hmax or v != v:         # a NaN stays (NumPy's max propagates it)
            hmax = abs(v) if hmax == hmax else hmax
    code, k = _check_mode(lam, h, qdd, F, aT, walls, motions, mu_s, cand)
    return code, k, hmax


@njit(cache=True, nogil=True)
def _check_mode(lam, h, qdd, F, aT, walls, motions, mu_s, cand):
    """:func:`check_mode`'s ``(code, k)``."""
    big = 1.0
    for v in lam:
        big = max(big, abs(v))
    for v in h:
        big = max(big, abs(v))
    fs = 1e-7 * big
    big = 1.0
    for v in qdd:
        big = max(big, abs(v))
    acc = 1e-7 * big
    if not (_all_finite(lam) and _all_finite(F) and _all_finite(qdd)):
        return 4, -1
    for k in range(lam.shape[0]):
        if walls[k] * lam[k] < -fs:
            return 1, k
    for k in range(lam.shape[0]):
        if motions[k] == 0 and mu_s[k] * abs(lam[k]) - abs(F[k]) < -fs:
            return 2, k
    for k in cand:
        if motions[k] != 0 and motions[k] * aT[k] < -acc:
            return 3, k
    return 0, -1


@njit(cache=True, nogil=True)
def slip_directions(vT, qd, velocity_tol):
    """The slip direction of every slot at an event: 0 where ``|v_T| ≤ velocity_tol · max(1, max |q̇|)`` (a stick
    candidate), else the sign of ``v_T``."""
    big = 1.0
    for v in qd:
        big = max(big, abs(v))
    bound = velocity_tol * big
    dirs = np.zeros(vT.shape[0], np.int64)
    for k in range(vT.shape[0]):
        if not abs(vT[k]) <= bound:
            dirs[k] = 1 if vT[k] > 0.0 else -1
    return dirs


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
