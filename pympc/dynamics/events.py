"""The event HLCP: which wall, and stick or slip, at a transition (DESIGN.md §3).

Every slot's normal force is split ``λ = λ⁺ − λ⁻`` with ``0 ≤ λ⁺ ⊥ λ⁻ ≥ 0``
(so ``|λ| = λ⁺ + λ⁻``).  A slot that slides with direction ``s`` has friction
``−μ s (λ⁺ + λ⁻)``.  A *stick candidate* (zero slip velocity) has a tangential
acceleration ``a = a⁺ − a⁻`` and friction reserves
``f⁺ = μ_s|λ| + F``, ``f⁻ = μ_s|λ| − F`` with ``0 ≤ a⁺ ⊥ f⁺ ≥ 0`` and
``0 ≤ a⁻ ⊥ f⁻ ≥ 0`` (slipping forward saturates the friction backward).
Eliminating the accelerations and the bilateral multipliers from the
dynamics, the constraints, ``a = WT q̈ + b̂T`` and ``f⁺ + f⁻ = 2 μ_s |λ|`` leaves
an HLCP in ``x = (λ⁺, a⁺, f⁻)``, ``y = (λ⁻, f⁺, a⁻)`` with one pair per slot
and two per stick candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse

from ..complementarity import HLCP, LCP, SetKind, SolutionSet, enumerate_solutions, solve
from ..complementarity._kernel import HLCP_DEFAULT_KERNEL
from ..complementarity.enumeration import _SUPPORTS, BATCHED_PAIRS, WALK_POINTS_FROM, nearly_singular_empty
from ..complementarity.lemke import lcp_form_result, lemke_hlcp_default, verified_hlcp_result
from ..complementarity.problems import within
from ..complementarity.results import Result, Status
from ..complementarity.solve import lemke_by_default
from ._event_solve import solved_event
from ._event_sets import WALKED_KERNEL, small_solution_set, walked_solution_set
from ._transition import EVENT_OK, as_floats, assembly_arrays, dense_event, mode_of_point
from .modes import Motion, _biases, banded_solve, csr, known_mode, solve_linear

__all__ = ["EventProblem", "event_problem", "solved_event_problem", "read_mode", "SparseHLCP", "kept_hlcp"]


@dataclass
class EventProblem:
    """An event HLCP and how to read it.

    Attributes
    ----------
    hlcp : HLCP
    candidates : list of int
        The slots that are stick candidates (pairs ``s + j`` and ``s + c + j``).
    directions : ndarray
        Slip direction of every slot (0 for candidates).
    qdd0, Q : ndarray
        ``q̈ = qdd0 + Q z`` with ``z = (λ⁺, λ⁻, a⁺, a⁻, f⁺, f⁻)``.
    """

    hlcp: HLCP
    candidates: list
    directions: np.ndarray
    qdd0: np.ndarray
    Q: np.ndarray
    sparse: tuple = field(default=None, repr=False)   # (A, B) as scipy.sparse matrices, when built sparse

    @property
    def nslots(self):
        return len(self.directions)

    @property
    def tol(self):
        """Below this a member of a pair counts as zero when the mode is read (scaled to the data)."""
        tol = self.__dict__.get("_tol")
        if tol is None:       # the largest |c| (c is finite: a validated HLCP)
            tol = self._tol = 1e-9 * (1.0 + max(max(map(abs, self.hlcp.c.tolist()), default=0.0), 1.0))
        return tol

    @property
    def _cand(self):
        """The stick candidates as an int64 array (the kernels' form; the compiled build's own)."""
        cand = self.__dict__.get("_cand_array")
        if cand is None:
            cand = self._cand_array = np.array(self.candidates, dtype=np.int64)
        return cand

    def kept(self):
        """The event HLCP as an :class:`~pympc.dynamics.Event` keeps it (:func:`kept_hlcp`; the sparse copies
        of a problem built sparse are reused)."""
        h = self.hlcp
        if h.n <= STORED_DENSE_UP_TO:
            return h
        if self.sparse is not None:
            return SparseHLCP(self.sparse[0], self.sparse[1], h.c, h.name, h.__dict__.get("_a_diag"))
        return kept_hlcp(h)

    def split(self, x, y):
        """(λ⁺, λ⁻, a⁺, a⁻, f⁺, f⁻) from an HLCP point."""
        s, c = self.nslots, len(self.candidates)
        return x[:s], y[:s], x[s:s + c], y[s + c:], y[s:s + c], x[s + c:]

    def accelerations(self, x, y):
        lp, lm, ap, am, fp, fm = self.split(x, y)
        return self.qdd0 + self.Q @ np.concatenate([lp, lm, ap, am, fp, fm])

    def reduced(self):
        """The LCP ``(M, q) = (−A⁻¹B, A⁻¹c)`` of the event HLCP through the basis "every x basic".

        A is factorized in a band order of its sparsity pattern (reverse
        Cuthill–McKee) by a compiled banded LU: O(n · band · n) for the n + 1
        right-hand sides instead of a dense O(n³) and no BLAS call.  None when
        A is singular or the problem was not built sparse.
        """
        if self.sparse is None:
            return None
        n = self.hlcp.n
        S = banded_solve(self.sparse[0], np.column_stack([-self.hlcp.B, self.hlcp.c]))
        if S is None:
            return None
        M = drop_below_rounding(S[:, :n])
        return LCP(M, S[:, n])

    def solution_set(self, max_pairs):
        """:func:`pympc.enumerate_solutions` of the event HLCP (``max_pairs`` at least its pairs): below
        :data:`~pympc.complementarity.enumeration.WALK_POINTS_FROM` pairs by one compiled call
        (:func:`~pympc.dynamics._event_sets.small_solution_set`, the same points) where it decides them, and up
        to :data:`~pympc.complementarity.enumeration.BATCHED_PAIRS` by another
        (:func:`~pympc.dynamics._event_sets.walked_solution_set`, the walk's points, bit for bit) where it does."""
        kept = self.__dict__.get("_set")     # made with the problem (solved_event_problem); False: declined
        if kept is not None and kept is not False:
            return kept
        h = self.hlcp
        n = h.n
        if kept is None and _compiled_set(n):
            solved = small_solution_set if n < WALK_POINTS_FROM else walked_solution_set
            decided, P, near = solved(h.A, h.B, h.c, h._a_diagonal, _SUPPORTS[n], 1e-9)
            if _taken(h, decided, near, P):
                return _solution_set(P, n)
        return enumerate_solutions(h, max_pairs=max_pairs)

    def solve(self):
        """Solve the event HLCP with Lemke's method (a :class:`~pympc.complementarity.Result`).

        Large problems built sparse go through :meth:`reduced` and Lemke on that
        LCP (the very LCP :func:`pympc.lemke` would form through a dense
        factorization); the point is verified against this HLCP.  Anything
        else — a singular A, a ray, a point that fails verification — is
        :func:`pympc.solve` on the HLCP itself, which decides and reports.
        """
        h = self.hlcp
        if h.n < REDUCE_FROM and not h._a_diagonal and lemke_by_default():
            # the usual case: Lemke's usual path (one compiled call), its verified point the result at once (the
            # result solve(h) gives); anything else goes through solve(h) below
            r = lemke_hlcp_default(h)
            if r is not None:
                return r
        red = self.reduced() if h.n >= REDUCE_FROM else None
        if red is not None:
            r = solve(red)
            if r.success:
                A, B = self.sparse
                x, y = r.w, r.z
                c = self.hlcp.c
                eq = float(np.abs(A @ x + B @ y - c).max(initial=0))
                neg = float(max(0.0, -min(x.min(initial=0), y.min(initial=0))))
                comp = float(np.abs(x * y).max(initial=0))
                scale = max(float(np.abs(x).max(initial=0)), float(np.abs(y).max(initial=0)),
                            float(np.abs(c).max(initial=0)))
                if within(eq, neg, comp, 1e-9, scale):
                    return Result(self.hlcp, Status.SOLVED, "solution found and verified (sparse reduction)",
                                      x, y, r.pivots, "lemke", {"log": r.info["log"], "basis": np.ones(x.size, bool)})
        return solve(self.hlcp)


def _compiled_set(n):
    """Is the solution set of an event HLCP of ``n`` pairs one compiled call (where it decides)?"""
    return n < WALK_POINTS_FROM or (n <= BATCHED_PAIRS and WALKED_KERNEL)


def _taken(h, decided, near, P):
    """Is a compiled solution set of ``h`` (points the rows of ``P``) the enumeration's?  Decided, and its nearly
    singular supports ``near`` (if any: those the kernel's :func:`~pympc.dynamics._event_sets.near_supports_empty`
    left) empty by the enumeration's own test, their LU points among its points
    (:func:`~pympc.complementarity.enumeration.nearly_singular_empty`)."""
    if not decided or not near.size:
        return decided
    he, dx, dy = h.equilibrated()
    return nearly_singular_empty(he, _SUPPORTS[h.n][near], 1e-9, P / np.concatenate([dx, dy]))


def _solution_set(P, n):
    """The :class:`~pympc.complementarity.SolutionSet` of a compiled set's points (the rows of ``P``)."""
    m = P.shape[0]
    kind = SetKind.NONE if m == 0 else SetKind.UNIQUE if m == 1 else SetKind.FINITE
    return SolutionSet(kind, [(P[i, :n], P[i, n:]) for i in range(m)])


STORED_DENSE_UP_TO = 256
"""Events keep event HLCPs of at most this many pairs as they are (dense, 1 MB at this size); larger ones as
:class:`SparseHLCP` (a 2000-slot chain's dense pair of matrices is 61 MB per event)."""


class SparseHLCP(HLCP):
    """An HLCP kept with ``A`` and ``B`` as ``scipy.sparse`` CSR matrices (``A_sparse``, ``B_sparse``): how an
    :class:`~pympc.dynamics.Event` keeps an event HLCP of more than :data:`STORED_DENSE_UP_TO` pairs.

    It is an :class:`~pympc.HLCP` in every use: ``A`` and ``B`` are the dense (read-only) matrices, made anew
    at each access and not kept, so that a trajectory of many large events holds only their nonzeros; ``n``,
    ``c`` and the sparse matrices cost nothing to read.
    """

    def __init__(self, A, B, c, name=None, a_diagonal=None):
        self.A_sparse, self.B_sparse = scipy.sparse.csr_matrix(A), scipy.sparse.csr_matrix(B)
        self.c, self.name = c, name
        if a_diagonal is not None:
            self._a_diag = bool(a_diagonal)

    @property
    def A(self):
        return _read_only(self.A_sparse.toarray())

    @property
    def B(self):
        return _read_only(self.B_sparse.toarray())


def _read_only(M):
    M.flags.writeable = False
    return M


def kept_hlcp(hlcp):
    """``hlcp`` as an :class:`~pympc.dynamics.Event` keeps it: itself (None, a :class:`SparseHLCP`, or at most
    :data:`STORED_DENSE_UP_TO` pairs), else a :class:`SparseHLCP` of it."""
    if hlcp is None or isinstance(hlcp, SparseHLCP) or hlcp.n <= STORED_DENSE_UP_TO:
        return hlcp
    return SparseHLCP(csr(hlcp.A), csr(hlcp.B), hlcp.c, hlcp.name, hlcp.__dict__.get("_a_diag"))


def drop_below_rounding(M):
    """``M`` (a solve's result, modified in place) with every entry at most ``ε min(r_i, c_j)`` set to zero,
    ``r_i`` and ``c_j`` the largest magnitudes of its row and its column.

    Why: each column of ``A⁻¹(−B)`` comes out of the LU solve with a normwise error of at least ``ε`` times
    its largest entry (the solve is backward stable, its forward error is that times a condition number ≥ 1),
    so an entry below ``ε c_j`` cannot be told from zero in this arithmetic; below ``ε r_i`` too, its term in
    row i is below the rounding of that row's largest term (for unknowns of one scale).  Such entries are the
    LU's round-off where the exact entry is zero, and the far tail of ``A⁻¹``'s exponential decay along a long
    chain (a 2000-slot chain gave 4.9e-151 among entries of order 1, which the LCP refuses as out of range).
    Zeroing them changes the problem by less than the solve's own error; entries of a row or column that is
    all tiny keep their relative sizes (the scales are per row and per column).
    """
    big = np.abs(M)
    r = big.max(axis=1, initial=0.0)
    c = big.max(axis=0, initial=0.0)
    M[big <= np.finfo(float).eps * np.minimum(r[:, None], c[None, :])] = 0.0
    return M

SPARSE_FROM = 32
"""Event HLCPs of at least this many slots are built with sparse products (the same problem, to round-off)."""

REDUCE_FROM = 64
"""Event HLCPs of at least this many pairs, built sparse, are reduced by the banded LU (:meth:`EventProblem.solve`);
below it LAPACK's dense factorization inside :func:`pympc.solve` is cheaper than the sparse bookkeeping (and
OpenBLAS's threads, which make a dense n = 100 factorization cost 100× its single-threaded time on a loaded
machine, do not start yet)."""


def event_problem(a, directions, mu, mu_s, stab, mass_diagonal=None):
    """Build the event HLCP of assembly ``a``.

    Parameters
    ----------
    a : Assembly
    directions : sequence of int
        Slip direction ±1 of each sliding slot, 0 for the stick candidates.
    mu, mu_s : ndarray
        Kinetic and static coefficients of every slot.
    stab : Baumgarte
    mass_diagonal : ndarray, optional
        The (diagonal) mass matrix as a vector.  With it, no bilateral joints and
        at least :data:`SPARSE_FROM` slots, the products of the slot Jacobians are
        formed sparse (a slot couples only the bodies it joins) and the problem
        keeps sparse copies of A and B for :meth:`EventProblem.solve`.
    """
    directions = as_floats(np.asarray(directions, dtype=float))
    s = len(directions)
    use_sparse = mass_diagonal is not None and a.J.shape[0] == 0 and s >= SPARSE_FROM
    if not use_sparse and a.M.shape[0] <= COMPILED_UP_TO and a.J.shape[0] <= COMPILED_UP_TO:
        ev = _compiled_event_problem(a, directions, mu, mu_s, stab, mass_diagonal)
        if ev is not None:
            return ev
    return _numpy_event_problem(a, directions, mu, mu_s, stab, mass_diagonal, use_sparse)


def solved_event_problem(a, directions, mu, mu_s, stab, mass_diagonal, previous_walls, enumerate_pairs):
    """``(ev, ev.solve())`` of ``ev = event_problem(a, directions, mu, mu_s, stab, mass_diagonal)``, and what a
    transition reads of them made with them: the mode Lemke's point selects (:func:`read_mode` of that point
    and ``previous_walls``, the same object, takes it) and, for at most ``enumerate_pairs`` pairs, the solution
    set (:meth:`EventProblem.solution_set` takes it).

    Where :func:`event_problem` builds by its compiled call and :meth:`EventProblem.solve` takes Lemke's compiled
    default call, all of it is one compiled call (:func:`~pympc.dynamics._event_solve.solved_event`: the same
    kernels); whatever one of them declines goes the way it goes without it (the NumPy build, the general
    solve, the enumeration), as do larger systems.
    """
    directions = _float_directions(directions)
    s = directions.shape[0]
    cand = (directions == 0.0).nonzero()[0]            # the stick candidates, ascending (int64; flatnonzero's)
    n = s + 2 * cand.shape[0]
    if (HLCP_DEFAULT_KERNEL and n < REDUCE_FROM and a.M.shape[0] <= COMPILED_UP_TO and a.J.shape[0] <= COMPILED_UP_TO
            and not (mass_diagonal is not None and a.J.shape[0] == 0 and s >= SPARSE_FROM) and lemke_by_default()):
        enumerated = n <= enumerate_pairs and _compiled_set(n)
        md = _NO_DIAGONAL if mass_diagonal is None else as_floats(mass_diagonal)
        k = assembly_arrays(a)
        code, built, lemke, read, (decided, P, near) = solved_event(
            k.M, md, k.J, k.WN, k.WT, k.h, k.w, k.gdot, k.g, k.holonomic, k.bN, k.vN, k.gN, k.bT, k.vT,
            float(stab.alpha), float(stab.beta), directions, as_floats(mu), as_floats(mu_s), cand,
            np.asarray(previous_walls, dtype=np.int64), _SUPPORTS[n] if enumerated else _NO_SUPPORTS)
        if code == EVENT_OK:
            A, B, c, qdd0, Q, diagonal, tol = built
            ev = EventProblem(HLCP._trusted(A, B, c, a_diagonal=diagonal), cand.tolist(), directions, qdd0, Q)
            ev._cand_array, ev._tol = cand, tol
            if enumerated:
                ev._set = _solution_set(P, n) if _taken(ev.hlcp, decided, near, P) else False
            ok, lcode, pivots, el, ll, point, residual, negative = lemke
            if ok:
                res = verified_hlcp_result(ev.hlcp, lcode, pivots, el, ll, (point[:n], point[n:2 * n], residual,
                                                                             negative), point[2 * n:3 * n], point[3 * n:])
            else:       # A diagonal: solve()'s result where the LCP form's call was clean (lemke_default's; point its out)
                res = lcp_form_result(ev.hlcp, point, pivots) if read.size else None
            if res is None:           # a singular basis, a point that does not verify: the general path
                return ev, ev.solve()
            ev._read = (res.x, res.y, previous_walls, read)
            return ev, res
    ev = event_problem(a, directions, mu, mu_s, stab, mass_diagonal)
    return ev, ev.solve()


_NO_SUPPORTS = np.zeros((0, 0), dtype=bool)


def _float_directions(directions):
    """The slip directions as the kernels take them (float64): an int64 array (a transition's, from
    :func:`~pympc.dynamics._transition.slip_directions`) by one conversion, anything else as before."""
    if type(directions) is np.ndarray and directions.dtype == np.int64:
        return directions.astype(np.float64)
    return as_floats(np.asarray(directions, dtype=float))


COMPILED_UP_TO = 64
"""Dense event HLCPs of systems with at most this many coordinates and bilateral rows are built by one compiled
call (:func:`pympc.dynamics._transition.dense_event`); larger ones with NumPy (its products call BLAS)."""


def _compiled_event_problem(a, directions, mu, mu_s, stab, mass_diagonal):
    """The dense event HLCP by :func:`~pympc.dynamics._transition.dense_event`, or None where it declines (a mass
    matrix that is not positive definite, singular bilateral rows, a non-finite entry): the NumPy build decides."""
    cl = [k for k, d in enumerate(directions.tolist()) if d == 0.0]     # the stick candidates, ascending
    cand = np.array(cl, dtype=np.int64)
    md = _NO_DIAGONAL if mass_diagonal is None else as_floats(mass_diagonal)
    k = assembly_arrays(a)
    code, A, B, c, qdd0, Q, diagonal = dense_event(
        k.M, md, k.J, k.WN, k.WT, k.h, k.w, k.gdot, k.g, k.holonomic, k.bN, k.vN, k.gN, k.bT, k.vT, float(stab.alpha),
        float(stab.beta), directions, as_floats(mu), as_floats(mu_s), cand)
    if code != EVENT_OK:
        return None
    ev = EventProblem(HLCP._trusted(A, B, c, a_diagonal=diagonal), cl, directions, qdd0, Q)
    ev._cand_array = cand
    return ev


_NO_DIAGONAL = np.zeros(0)


def _numpy_event_problem(a, directions, mu, mu_s, stab, mass_diagonal, use_sparse):
    """:func:`event_problem` with NumPy: the sparse products of a long joint-free chain, the dense build of a large
    system, and every case the compiled build declines."""
    s = len(directions)
    cand = [k for k in range(s) if directions[k] == 0]
    c = len(cand)
    n = a.M.shape[0]
    nz = 2 * s + 4 * c
    fr = -mu * directions
    bI, bN, bT = _biases(a, stab, cand)
    if use_sparse:
        E, qdd0, Q = _sparse_products(a, cand, fr, mass_diagonal)
        e = np.zeros(s + 2 * c)
        L = csr(np.vstack([a.WN, a.WT[cand]]))
        v = L @ qdd0
        e[:s] = -bN - v[:s]
        e[s:s + c] = bT + v[s:]
    else:
        Gz = np.zeros((n, nz))
        Gz[:, :s] = (a.WN + fr[:, None] * a.WT).T
        Gz[:, s:2 * s] = (-a.WN + fr[:, None] * a.WT).T
        Gz[:, 2 * s + 2 * c:2 * s + 3 * c] = 0.5 * a.WT[cand].T
        Gz[:, 2 * s + 3 * c:] = -0.5 * a.WT[cand].T
        # q̈ = qdd0 + Q z after eliminating the bilateral multipliers
        cols = np.hstack([a.h[:, None], Gz])
        X = _accelerations(a, cols, bI, mass_diagonal)
        qdd0, Q = X[:, 0], X[:, 1:]
        E = np.zeros((s + 2 * c, nz))
        e = np.zeros(s + 2 * c)
        E[:s] = a.WN @ Q
        e[:s] = -bN - a.WN @ qdd0
        for j, k in enumerate(cand):
            E[s + j] = -(a.WT[k] @ Q)
            e[s + j] = bT[j] + a.WT[k] @ qdd0
    for j, k in enumerate(cand):
        r = s + j
        E[r, 2 * s + j] += 1.0
        E[r, 2 * s + c + j] -= 1.0
        r = s + c + j
        E[r, 2 * s + 2 * c + j] = 1.0
        E[r, 2 * s + 3 * c + j] = 1.0
        E[r, k] = E[r, s + k] = -2.0 * mu_s[k]
    xcols = list(range(s)) + list(range(2 * s, 2 * s + c)) + list(range(2 * s + 3 * c, nz))
    ycols = list(range(s, 2 * s)) + list(range(2 * s + 2 * c, 2 * s + 3 * c)) + list(range(2 * s + c, 2 * s + 2 * c))
    A, B = E[:, xcols], E[:, ycols]
    scale = np.maximum(np.abs(A).max(axis=1, initial=0), np.abs(B).max(axis=1, initial=0))
    scale[scale == 0] = 1.0
    hl = HLCP(A / scale[:, None], B / scale[:, None], e / scale)
    if not use_sparse:
        return EventProblem(hl, cand, directions, qdd0, Q)
    return EventProblem(hl, cand, directions, qdd0, Q, (csr(hl.A), csr(hl.B)))


def _sparse_products(a, cand, fr, mass_diagonal):
    """``E`` (without its unit and saturation entries), ``qdd0`` and ``Q`` of a joint-free system with a diagonal
    mass matrix: every block of ``E`` is a block of ``[WN; WT_cand] M⁻¹ [WN; WT]ᵀ``, one sparse product."""
    s, c = len(fr), len(cand)
    mi = 1.0 / mass_diagonal
    WN, WT = a.WN, a.WT
    WTc = WT[cand]
    P = (csr(np.vstack([WN, WTc]) * mi) @ csr(np.vstack([WN, WT])).T).toarray()
    PN, PC = P[:s], P[s:]                     # rows: WN M⁻¹ [WNᵀ WTᵀ], WT_cand M⁻¹ [WNᵀ WTᵀ]
    E = np.zeros((s + 2 * c, 2 * s + 4 * c))
    for rows, sign, Pr in ((slice(0, s), 1.0, PN), (slice(s, s + c), -1.0, PC)):
        PrN, PrT = Pr[:, :s], Pr[:, s:]
        E[rows, :s] = sign * (PrN + PrT * fr)
        E[rows, s:2 * s] = sign * (-PrN + PrT * fr)
        E[rows, 2 * s + 2 * c:2 * s + 3 * c] = sign * 0.5 * PrT[:, cand]
        E[rows, 2 * s + 3 * c:] = -sign * 0.5 * PrT[:, cand]
    Q = np.zeros((len(mi), 2 * s + 4 * c))
    Q[:, :s] = mi[:, None] * (WN + fr[:, None] * WT).T
    Q[:, s:2 * s] = mi[:, None] * (-WN + fr[:, None] * WT).T
    Q[:, 2 * s + 2 * c:2 * s + 3 * c] = 0.5 * mi[:, None] * WTc.T
    Q[:, 2 * s + 3 * c:] = -0.5 * mi[:, None] * WTc.T
    return E, a.h * mi, Q


def _accelerations(a, cols, bI, mass_diagonal):
    """q̈ for the generalized-force columns ``cols`` under the bilateral constraints.

    Column 0 carries the bias ``bI``; the others are homogeneous.
    """
    b = np.zeros((a.J.shape[0], cols.shape[1]))
    b[:, 0] = bI
    return solve_linear(a.M, a.J.T, a.J, cols, b, mass_diagonal)[0]


def read_mode(ev, x, y, previous_walls, tol=None):
    """The mode an HLCP point selects, and which of its parts are degenerate.

    ``tol``: below it a member of a pair counts as zero (default ``ev.tol``).

    Returns
    -------
    mode : Mode
    degenerate : list of (str, int)
        ``("wall", k)`` when λ_k ≈ 0 (either wall), ``("stick", k)`` when a
        stick candidate sits on the stick/slip boundary (zero acceleration and
        zero reserve on one side).
    """
    s = ev.nslots
    kept = ev.__dict__.get("_read")      # Lemke's point's, read with the problem (solved_event_problem)
    if kept is not None and tol is None and kept[0] is x and kept[1] is y and kept[2] is previous_walls:
        read = kept[3].tolist()          # walls, motions, degenerate: mode_of_point's, concatenated
        walls, motions, deg = read[:s], read[s:2 * s], read[2 * s:]
    else:
        tol = ev.tol if tol is None else tol
        walls, motions, deg = (v.tolist() for v in mode_of_point(
            as_floats(x), as_floats(y), ev._cand, as_floats(ev.directions),
            np.asarray(previous_walls, dtype=np.int64), float(tol)))
    degenerate = [("wall", d) if d < s else ("stick", d - s) for d in deg]
    return known_mode(tuple(walls), tuple([_MOTIONS[m + 1] for m in motions])), degenerate


_MOTIONS = (Motion.BACKWARD, Motion.STICK, Motion.FORWARD)
