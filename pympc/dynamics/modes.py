"""Modes of the friction slots and the linear equations of a fixed mode.

With the mode fixed (which wall each slot bears on, whether it slips forward,
backward or sticks), the equations of motion are linear in the accelerations
and the forces::

    M q̈ = h + Jᵀ ν + Σ_k (WN_kᵀ − μ_k s_k σ_k WT_kᵀ) λ_k + Σ_stick WT_kᵀ F_k
    J q̈ + ŵ = 0,   WN q̈ + b̂N = 0,   WT_stick q̈ + b̂T = 0

(non-symmetric because of the friction columns); the biases include the
Baumgarte terms ``2α ġ + β² g``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.linalg
import scipy.sparse
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.linalg import lapack as _lapack
from scipy.linalg.lapack import dgesv as _dgesv

from .._enum import DocIntEnum
from ..complementarity.support import lu_rcond
from ..errors import ModelError, SimulationError
from ..mechanics import _kernels
from ..mechanics.assembly import EMPTY, SparseAssembly
from . import _event_kernels
from ._flat import flat_rows
from ._mode_solve import MODE_OK, dense_mode
from ._transition import SMALL_ROWS, as_floats, assembly_arrays, dense_min_norm

__all__ = ["Motion", "Mode", "ModeSolution", "solve_mode", "Baumgarte", "CompiledModes", "banded_solve", "min_norm",
           "csr"]

SPARSE_FROM = 32
"""Linear systems of at least this many constraint rows are solved sparse (:func:`banded_solve`); smaller
ones with LAPACK, as they are cheapest."""


class Motion(DocIntEnum):
    """What a slot's slider does relative to its guide."""

    BACKWARD = -1, "Slipping against the slot direction; friction μ_k|λ| acts forward."
    STICK = 0, "Sticking: zero slip velocity, friction force is whatever keeps it (|F| ≤ μ_s|λ|)."
    FORWARD = 1, "Slipping along the slot direction; friction μ_k|λ| acts backward."


@dataclass(frozen=True)
class Mode:
    """The discrete state of all slots: ``walls[k]`` = σ_k ∈ {+1, −1}, ``motions[k]`` ∈ Motion.

    Examples
    --------
    >>> m = Mode((1, -1), (Motion.STICK, Motion.FORWARD))
    >>> str(m)
    '[+ stick, - fwd]'
    """

    walls: tuple
    motions: tuple

    def __hash__(self):
        # the dataclass's hash, computed once (it hashes every slot's wall and motion: a mode is a key of the
        # per-mode tables, its plans, templates and arrays, looked up several times per transition)
        try:
            return self._hash
        except AttributeError:
            h = hash((self.walls, self.motions))
            object.__setattr__(self, "_hash", h)
            return h

    def __getstate__(self):
        # pickled without its hash: another process (or Python) may hash the same tuples otherwise
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    def __str__(self):
        names = {Motion.BACKWARD: "bwd", Motion.STICK: "stick", Motion.FORWARD: "fwd"}
        return "[" + ", ".join(f"{'+' if w > 0 else '-'} {names[Motion(m)]}"
                               for w, m in zip(self.walls, self.motions)) + "]"

    @cached_property
    def sticking(self):
        """Indices of the sticking slots."""
        return [k for k, m in enumerate(self.motions) if m == Motion.STICK]

    @cached_property
    def _friction_sign(self):
        """s_k σ_k of the slipping slots (0 for sticking ones), as an array."""
        walls, motions = self._arrays
        return motions * walls

    @cached_property
    def _arrays(self):
        """``(walls, motions)`` as float arrays, rows of one (what the verification of a mode reads, never writes)."""
        wm = np.array((self.walls, self.motions), dtype=float)
        return wm[0], wm[1]

    @cached_property
    def _stick(self):
        """:attr:`sticking` as an int64 array (what the compiled mode solve takes)."""
        return np.array(self.sticking, dtype=np.int64)


_KNOWN_MODES = {}

KNOWN_MODES_KEPT = 4096
"""Modes :func:`known_mode` keeps (then it starts again)."""


def known_mode(walls, motions):
    """``Mode(walls, motions)``, the same object each time for the same tuples (a :class:`Mode` is immutable): what
    it caches (:attr:`Mode.sticking`) is made once, and the caches keyed by a mode find it by identity.  Take
    ``motions`` as :class:`Motion` members (an equal tuple of ints would find a mode made with members)."""
    key = (walls, motions)
    mode = _KNOWN_MODES.get(key)
    if mode is None:
        if len(_KNOWN_MODES) >= KNOWN_MODES_KEPT:
            _KNOWN_MODES.clear()
        mode = _KNOWN_MODES[key] = Mode(walls, motions)
    return mode


@dataclass(frozen=True)
class Baumgarte:
    """Constraint stabilization ``g̈ + 2α ġ + β² g = 0`` (α, β in 1/s; 0 disables).

    Defaults α = β = 10 (critically damped, time constant 0.1 s) are a
    compromise for mechanisms of metre/second scale; drift is also removed by
    projection at every event.
    """

    alpha: float = 10.0
    beta: float = 10.0


@dataclass
class ModeSolution:
    """Accelerations and forces of one state in one mode."""

    qdd: np.ndarray
    nu: np.ndarray       # bilateral multipliers
    lam: np.ndarray      # slot normal forces λ_k
    F: np.ndarray        # slot friction forces
    aT: np.ndarray       # slot tangential (slip) accelerations


def _biases(a, stab, stick):
    al, be = stab.alpha, stab.beta
    bI = a.w + 2 * al * a.gdot + be * be * (a.g if a.holonomic.all() else np.where(a.holonomic, a.g, 0.0))
    bN = a.bN + 2 * al * a.vN + be * be * a.gN
    bT = a.bT[stick] + 2 * al * a.vT[stick]
    return bI, bN, bT


def _dense_solve(S, rhs):
    """``S⁻¹ rhs`` by LAPACK's gesv (much less call overhead than numpy for the small systems here)."""
    if S.shape[0] == 1:
        if S[0, 0] == 0.0:
            raise np.linalg.LinAlgError("singular")
        return rhs / S[0, 0]
    _, _, x, info = _dgesv(S, rhs)
    if info != 0:
        raise np.linalg.LinAlgError("singular")
    return x


def csr(A):
    """``scipy.sparse.csr_matrix(A)`` of a dense float matrix, its nonzeros found by one compiled pass."""
    A = np.ascontiguousarray(A, dtype=float)
    return scipy.sparse.csr_matrix(_kernels.dense_to_csr(A), shape=A.shape)


def banded_solve(S, rhs, symmetric=False):
    """``S⁻¹ rhs`` for a sparse square ``S`` (None if it is numerically singular).

    S is permuted symmetrically to a band by reverse Cuthill–McKee on its
    pattern and factorized by a compiled banded LU with partial pivoting
    (:func:`pympc.mechanics._kernels.banded_lu_solve`): O(n · band²) plus
    O(n · band) per right-hand side, no BLAS call.  ``symmetric``: S has a
    symmetric pattern (e.g. J Jᵀ), which is then not symmetrized first.
    """
    S = scipy.sparse.csr_matrix(S)
    n = S.shape[0]
    pattern = S if symmetric else (abs(S) + abs(S).T).tocsr()
    perm = np.asarray(reverse_cuthill_mckee(pattern, symmetric_mode=True), dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    pos[perm] = np.arange(n)
    Sp = np.zeros((n, n))
    kl, ku = _kernels.permute_into(S.data.astype(float), S.indices.astype(np.int64), S.indptr.astype(np.int64),
                                   pos, Sp)
    X = np.array(rhs, dtype=float).reshape(n, -1)[perm]
    if not _kernels.banded_lu_solve(Sp, kl, ku, X) or not np.isfinite(X).all():
        return None
    out = np.empty_like(X)
    out[perm] = X
    return out.reshape(np.shape(rhs))


def min_norm(J, r):
    """The least-norm ``d`` with ``J d = r`` (what ``lstsq`` returns for a J of full row rank).

    A J of at most four rows whose ``J Jᵀ`` has a reciprocal condition
    above 1e-4 goes through ``Jᵀ (J Jᵀ)⁻¹ r`` by LU: J is then conditioned
    well enough that the normal equations lose nothing that matters, and
    LAPACK's SVD is not called for a 1×2 system (one right-hand side: the
    exact condition number, :func:`pympc.dynamics._transition.small_min_norm`;
    several: LAPACK and its estimate).  Large J (at least :data:`SPARSE_FROM`
    rows, no more rows than columns) go through ``Jᵀ (J Jᵀ)⁻¹ r`` with J
    sparse (:func:`banded_solve`); the others, and any J whose J Jᵀ is
    singular or leaves a residual, through ``lstsq`` (LAPACK's gelsd).  One
    right-hand side takes the dense paths in one compiled call
    (:func:`pympc.dynamics._transition.dense_min_norm`: a well-conditioned J
    of no more rows than columns by Householder's LQ, the least-norm solution to
    round-off; else gelsd through numba, the bits of ``np.linalg.lstsq``).
    """
    k, n = J.shape
    if np.ndim(r) == 1:     # one right-hand side: the dense paths in one compiled call
        d = np.empty(n)
        if dense_min_norm(as_floats(J), as_floats(r), d, SPARSE_FROM):
            return d
    elif 0 < k <= SMALL_ROWS and k <= n:   # a few rows: the normal equations when J Jᵀ is well conditioned
        lu, piv, rc = lu_rcond(J @ J.T)
        if rc > 1e-4:
            # several right-hand sides (the sensitivities' columns) one by one: LAPACK's multi-column solve
            # (trsm) may wake OpenBLAS threads, which took milliseconds per 2×2 solve on the shared machine
            return J.T @ np.column_stack([_lapack.dgetrs(lu, piv, r[:, j])[0] for j in range(r.shape[1])])
    if SPARSE_FROM <= k <= n:
        Js = csr(J)
        y = banded_solve(Js @ Js.T, r, symmetric=True)
        if y is not None:
            d = Js.T @ y
            if np.abs(Js @ d - r).max() <= 1e-12 * max(1.0, float(np.abs(r).max())):
                return d
    return np.linalg.lstsq(J, r, rcond=None)[0]


def solve_linear(M, G, C, h, b, mass_diagonal=None):
    """Solve ``M q̈ = h + G ν``, ``C q̈ + b = 0`` for (q̈, ν); G is n×r, C r×n.

    ``h`` and ``b`` may also be matrices (n×k, r×k): k right-hand sides at once.
    ``mass_diagonal`` (all entries > 0) says that M is that diagonal.
    """
    n, r = G.shape
    try:
        if mass_diagonal is not None:
            X, x0 = G / mass_diagonal[:, None], h / (mass_diagonal if h.ndim == 1 else mass_diagonal[:, None])
        else:
            cho = scipy.linalg.cho_factor(M)
            X, x0 = scipy.linalg.cho_solve(cho, G), scipy.linalg.cho_solve(cho, h)
    except np.linalg.LinAlgError:  # singular mass matrix: solve the whole saddle-point system
        K = np.block([[M, -G], [C, np.zeros((r, r))]])
        sol = np.linalg.solve(K, np.concatenate([h, -b]))
        return sol[:n], sol[n:]
    if not r:
        return x0, np.zeros((0,) + h.shape[1:])
    if mass_diagonal is not None and r >= SPARSE_FROM:   # S = C M⁻¹ G is as sparse as the rows
        Cs, Xs = csr(C), csr(X)
        nu = banded_solve(Cs @ Xs, -b - Cs @ x0)
        if nu is None:
            raise np.linalg.LinAlgError("singular")
        return x0 + Xs @ nu, nu
    nu = _dense_solve(C @ X, -b - C @ x0)
    return x0 + X @ nu, nu


DENSE_COMPILED_UP_TO = 64
"""Assemblies with a dense mass matrix of at most this many coordinates are solved in one compiled call
(:func:`pympc.dynamics._mode_solve.dense_mode`); larger ones by LAPACK (:func:`solve_linear`)."""


def solve_mode(a, mode, mu, mu_s, stab, mass_diagonal=None):
    """Accelerations and forces of assembly ``a`` in ``mode`` (a :class:`ModeSolution`).

    A dense mass matrix (``mass_diagonal`` None) of at most :data:`DENSE_COMPILED_UP_TO` coordinates: one
    compiled call (:func:`pympc.dynamics._mode_solve.dense_mode`, the steps of :func:`solve_linear` without
    scipy's wrappers; the same results to round-off).  Where it declines (a mass matrix that is not positive
    definite, a singular reduced system, a non-finite entry) and otherwise: :func:`numpy_solve_mode`.

    Raises
    ------
    SimulationError
        If the mode's equations are singular (redundant constraints or a
        mass matrix that is singular on the free motions).
    """
    if mass_diagonal is None and a.M.shape[0] <= DENSE_COMPILED_UP_TO:
        stick = getattr(mode, "_stick", None)
        fs = getattr(mode, "_friction_sign", None)
        if stick is None or fs is None:   # any object with walls and motions (e.g. regularized friction factors)
            stick = np.array(mode.sticking, dtype=np.int64)
            fs = np.asarray(mode.motions, float) * np.asarray(mode.walls, float)
        k = assembly_arrays(a)
        code, qdd, nu, F, aT = dense_mode(k.M, k.J, k.WN, k.WT, k.h, k.w, k.gdot, k.g, k.holonomic, k.bN, k.vN,
                                          k.gN, k.bT, k.vT, float(stab.alpha), float(stab.beta), as_floats(mu),
                                          as_floats(fs), stick)
        if code == MODE_OK:
            m = k.J.shape[0]
            return ModeSolution(qdd, nu[:m], nu[m:m + len(mu)], F, aT)
    return numpy_solve_mode(a, mode, mu, mu_s, stab, mass_diagonal)


def numpy_solve_mode(a, mode, mu, mu_s, stab, mass_diagonal=None):
    """:func:`solve_mode` by NumPy, scipy and LAPACK (:func:`solve_linear`): every assembly, the reference of the
    compiled path and where it declines."""
    s = len(mu)
    stick = mode.sticking
    fs = getattr(mode, "_friction_sign", None)
    if fs is None:  # any object with walls and motions (e.g. regularized friction factors)
        fs = np.asarray(mode.motions, float) * np.asarray(mode.walls, float)
    fric = -mu * fs                   # friction per unit λ of sliding slots (0 for sticking)
    slots = a.WN + fric[:, None] * a.WT
    if stick:
        G = np.vstack([a.J, slots, a.WT[stick]]).T
        C = np.vstack([a.J, a.WN, a.WT[stick]])
    elif a.J.shape[0]:
        G, C = np.vstack([a.J, slots]).T, np.vstack([a.J, a.WN])
    else:
        G, C = slots.T, a.WN
    bI, bN, bT = _biases(a, stab, stick)
    try:
        qdd, nu = solve_linear(a.M, G, C, a.h, np.concatenate([bI, bN, bT]), mass_diagonal)
    except np.linalg.LinAlgError:
        raise SimulationError(
            f"the equations of mode {mode} are singular at t = {a.t:g}: redundant constraints, or a body "
            "whose mass matrix is singular on its free motions (zero inertia with a free rotation?)"
        ) from None
    m = a.J.shape[0]
    lam = nu[m:m + s]
    F = fric * lam
    F[stick] = nu[m + s:]
    return ModeSolution(qdd, nu[:m], lam, F, a.WT @ qdd + a.bT)


def _singular(mode, t):
    return SimulationError(
        f"the equations of mode {mode} are singular at t = {t:g}: redundant constraints, or a body "
        "whose mass matrix is singular on its free motions (zero inertia with a free rotation?)")


def _kernel_array(a):
    """``a`` as the compiled mode solve takes every array: C-contiguous and writable.  The solve is compiled
    once per array type; :func:`pympc.mechanics._kernels.general_mode_flat` passes such arrays, so the
    evaluations from Python share its compiled code (a read-only or strided argument would compile the
    whole solve again, about 10 s on a first run)."""
    return a if a.flags.c_contiguous and a.flags.writeable else np.array(a, dtype=float)


class _Plan:
    """The rows of one mode, their band order, and the buffers of its compiled solve with views into them."""

    __slots__ = ("fric", "jidx", "jv", "jnnz", "fb", "ib", "view", "pf", "pi", "prefix", "offs", "fl", "il", "at_fric")


class _Template:
    """What a mode's :class:`_Plan` is made of that does not change within or across runs of one model: its rows'
    band order, the buffers' layout and the packed arrays as first made (never evaluated in: every plan gets
    copies, see :meth:`CompiledModes.plan`), with the friction columns left out (zeros in ``fl`` from ``at_fric``):
    the templates of one structure serve every value of μ, and a template serves every mode with its sticking slots
    (what else tells modes apart, the walls and slip directions, is in the friction columns as well)."""

    __slots__ = ("stick", "perm", "kl", "ku", "layout", "size", "fl", "il", "offsets", "at_fric", "offs", "prefix",
                 "read", "spans", "cuts", "read_fl")


READ_VIEWS = ("qdd", "lam", "F", "aT", "Q", "vT")
"""The pieces of a mode's buffer read through its plan's ``view`` (:meth:`ModeEvaluator.solved
<pympc.dynamics.evaluation.ModeEvaluator.solved>`, :meth:`CompiledModes.slot_values`): a plan makes views of
these only (the others are read by offset, :attr:`_Plan.offs`)."""


PLANS_KEPT = 512
"""The mode templates (one per set of sticking slots) kept per model (:meth:`CompiledModes.plan`); beyond it the
oldest are dropped."""

MODELS_KEPT = 8
"""The models whose mode templates are kept (the most recent; a sweep of one structure with varied parameters is
a new model per run, a repeated run or a batch of runs of one model is one)."""

CACHED_UP_TO = 64
"""Models of at most this many slots keep their mode templates across runs (larger ones spend far longer in
everything else, and their buffers are large)."""

_templates = {}          # model key → {sticking slots: _Template} (insertion order: the oldest model first)

class CompiledModes:
    """Assembly and mode solve in one compiled call (general method, positive diagonal mass).

    The per-mode work — which rows there are, the friction columns, a band
    order of the Schur complement ``C M⁻¹ Gᵀ``, the buffers — is decided once
    per mode and kept; every evaluation is then one compiled call
    (:func:`pympc.mechanics._kernels.general_mode`) plus the joints' rows and
    the forces that depend on the state, which stay in Python, except pins and
    constant torques (``AbsoluteModel.joint_tables``): those are evaluated in the
    same call (:func:`pympc.mechanics._kernels.joint_mode`).  Results are
    those of :func:`solve_mode` on :meth:`GeneralMethod.assemble`, to round-off.

    Parameters
    ----------
    form : GeneralMethod
    mu, mu_s : ndarray
    stab : Baumgarte
    """

    def __init__(self, form, mu, mu_s, stab):
        self.form, self.mu, self.mu_s, self.stab = form, mu, mu_s, stab
        self._neg_mu = -mu       # friction per unit λ of a slot slipping forward on the + wall (the plans write it)
        ab = self._abs = form._abs
        self.mass = ab.mass
        self.minv = 1.0 / ab.mass
        self.n, self.m, self.ns = ab.n, ab.m, len(mu)
        self._work = np.zeros(ab.n)
        empty = np.zeros(0)      # writable: the kernels get one array type everywhere (see _kernel_array)
        self._none = ((EMPTY, ab._J0, EMPTY, EMPTY), empty, empty, 0.0)
        sl = ab._slot_table
        self._slot_bodies = [tuple(int(b) for b in (sl[0][k], sl[1][k]) if b >= 0) for k in range(self.ns)]
        self._joint_bodies = ab.joint_bodies()
        # the model's packed tables (made once per model, shared with its compiled assembly) with 1/m last
        sf, self._si = ab.model_tables()
        self._sf = sf.copy()
        self._sf[sf.size - ab.n:] = self.minv
        # the point forces of time alone: a compiled program (None: evaluated in Python); joints and forces of
        # the state: Python (without them nothing but the compiled call is left)
        tp = ab.time_tables()
        self._tprog, self._tconst = tp if tp is not None else (np.zeros(2, np.int64), np.zeros(1))
        self._tF = ab._tF.copy()
        self._glue = bool(self.m or ab._forces or tp is None)
        # pins and constant torques (AbsoluteModel.joint_tables): evaluated with the solve (compute: joint_mode)
        self._joints = ab.joint_tables() if self._glue and tp is not None else None
        if self._joints is not None:
            self._jw = np.zeros(_kernels.joint_layout(self.n, self.m))
        self._plans = {}
        self._templates = self._kept_templates()
        self._recent = (None, None)   # (mode, plan) of the last compute
        self._last = None        # (plan, joints, T, V, P) of the last compute

    def _kept_templates(self):
        """The mode templates kept for this model (a dict to add to), None for a model too large to keep them.

        The key holds everything :meth:`_template` reads, bit for bit: the sizes, the bodies of the rows, the
        packed model, the forces of time and the stabilization.  Not the friction coefficients: a template holds
        none (every plan packs this model's, :meth:`plan`), so runs with varied μ share the templates."""
        if self.ns > CACHED_UP_TO:
            return None
        f = lambda v: (v.dtype.str, v.shape, v.tobytes())      # noqa: E731
        key = (self.n, self.m, self.ns, self._glue, tuple(self._joint_bodies), tuple(self._slot_bodies),
               f(np.array([self.stab.alpha, self.stab.beta], float)), f(self._sf),
               f(self._si), f(self._tF), f(self._tconst), f(self._tprog))
        kept = _templates.pop(key, None)
        if kept is None:
            kept = {}
            while len(_templates) >= MODELS_KEPT:
                _templates.pop(next(iter(_templates), None), None)
        _templates[key] = kept               # the most recent last
        return kept

    @property
    def batched(self):
        """Are evaluations at many samples one compiled call (:meth:`event_samples`; no Python parts)?"""
        return not self._glue

    @staticmethod
    def applies(form):
        """Can this path evaluate ``form``?"""
        return getattr(form, "name", None) == "general" and form.mass_diagonal is not None

    def plan(self, mode):
        """The row plan of ``mode`` (made on first use): a copy of the :class:`_Template` of its sticking slots, kept
        across runs of the same model (:data:`CACHED_UP_TO`) and shared by the modes that stick in the same slots, so
        that a plan of a mode whose sticking slots were seen before costs its copies only."""
        p = self._plans.get(mode)
        if p is not None:
            return p
        kept = self._templates
        key = tuple(mode.sticking)      # a template is that of the mode's sticking slots (walls, slip directions and
        t = kept.get(key) if kept is not None else None      # μ are in the friction columns every plan writes)
        if t is None:
            t = self._template(mode)
            if kept is not None:
                if len(kept) >= PLANS_KEPT:
                    kept.pop(next(iter(kept), None), None)
                kept[key] = t
        p = _Plan()
        p.at_fric, p.prefix, p.offs = t.at_fric, t.prefix, t.offs
        if t.fl is None:
            p.fric = self._neg_mu * mode._friction_sign     # this run's friction coefficients (not in the template)
            p.pf, p.pi, (p.jidx, p.jv, p.jnnz) = _kernels.pack_mode(p.fric, t.stick, t.perm, t.kl, t.ku, self.m)
            p.fb, p.ib = np.zeros(t.size), np.zeros(7 * self.ns + 7 * t.perm.size, np.int64)
            p.fl = p.il = None
            fb = p.fb
            p.view = {k: fb[o] for k, o in t.read}
        else:
            fl, il = p.fl, p.il = t.fl.copy(), t.il.copy()
            fric, pf, pi, fb, ib = t.cuts     # slices of fl and il (_template)
            # this run's friction coefficients (not in the template) into the packed friction columns (pack_mode:
            # pf starts with them), p.fric a view of them
            p.fric = np.multiply(self._neg_mu, mode._friction_sign, out=fl[fric])
            p.pf, p.pi, p.fb, p.ib = fl[pf], il[pi], fl[fb], il[ib]    # pack_mode's pf, pi and the buffers
            p.jidx = p.jv = p.jnnz = None    # no joint rows to fill (compute fills them only with Python parts)
            p.view = {k: fl[o] for k, o in t.read_fl}
        self._plans[mode] = p
        return p

    def set_mu(self, mu):
        """Evaluate with the kinetic coefficients ``mu`` from now on: every plan made gets its friction columns
        again (the rows, their order and the buffers stay)."""
        self.mu, self._neg_mu = mu, -mu
        ns = self.ns
        for mode, p in self._plans.items():
            p.fric = self._neg_mu * mode._friction_sign
            p.pf[:ns] = p.fric
            if p.fl is not None:
                p.fl[p.at_fric:p.at_fric + ns] = p.fric

    def _template(self, mode):
        """The :class:`_Template` of ``mode`` (of its sticking slots alone): its rows and their band order, the layout
        of its buffers and, for a model without Python parts, the two packed arrays of
        :func:`pympc.mechanics._kernels.pack_flat`."""
        t = _Template()
        stick = mode.sticking
        t.stick = np.array(stick, dtype=np.int64)
        bodies = self._joint_bodies + self._slot_bodies + [self._slot_bodies[k] for k in stick]
        R = len(bodies)
        rows, cols = [], []
        for r, bs in enumerate(bodies):
            rows += [r] * len(bs)
            cols += list(bs)
        if R <= 8:                          # a few rows: the band is the whole matrix, no ordering to find
            t.perm, t.kl, t.ku = np.arange(R, dtype=np.int64), max(R - 1, 0), max(R - 1, 0)
        else:
            inc = scipy.sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(R, max(1, self.n)))
            adj = (inc @ inc.T).tocsr()        # rows that share a body
            t.perm = np.asarray(reverse_cuthill_mckee(adj, symmetric_mode=True), dtype=np.int64)
            pos = np.empty(R, dtype=np.int64)
            pos[t.perm] = np.arange(R)
            coo = adj.tocoo()
            d = pos[coo.col] - pos[coo.row]
            t.ku, t.kl = int(max(d.max(), 0)), int(max(-d.min(), 0))
        t.layout, t.size = layout, _ = _kernels.mode_layout(self.n, self.m, self.ns, R, 2 * t.kl + t.ku + 1)
        t.prefix = layout["stv"][0] + layout["stv"][1]       # the results come first in the buffer
        t.offs = tuple(slice(o, o + sz) for o, sz in layout.values())[:13]
        t.read = tuple((k, slice(layout[k][0], layout[k][0] + layout[k][1])) for k in READ_VIEWS)
        t.fl = t.il = t.at_fric = t.spans = t.cuts = t.read_fl = None
        if not self._glue:         # everything in two arrays: the evaluation is a call of five arguments
            # (the friction columns as zeros: every plan writes its own, at the offset of pf in fl)
            pf, pi, _ = _kernels.pack_mode(np.zeros(self.ns), t.stick, t.perm, t.kl, t.ku, self.m)
            t.fl, t.il, t.offsets = _kernels.pack_flat(
                self.stab.alpha, self.stab.beta, self._sf, pf, t.size, self.n, self._tF, self._tconst, self._si, pi,
                7 * self.ns + 7 * R, self._tprog)
            t.at_fric = 2 + self._sf.size        # pack_flat: (alpha, beta), sf, then pf
            il = t.il
            t.spans = (int(il[4]), int(il[5])), (int(il[16]), int(il[17]))     # pf in fl, pi in il (pack_flat)
            (of, nf), (oi, ni), (ofb, oib) = t.spans[0], t.spans[1], t.offsets
            # what a plan cuts out of its copies: the friction columns, pf, pi, the buffers (fb, ib), its views
            t.cuts = (slice(t.at_fric, t.at_fric + self.ns), slice(of, of + nf), slice(oi, oi + ni),
                      slice(ofb, ofb + t.size), slice(oib, oib + 7 * self.ns + 7 * R))
            t.read_fl = tuple((k, slice(ofb + o.start, ofb + o.stop)) for k, o in t.read)
        return t

    def compute(self, t, q, qd, mode, out=None):
        """One compiled evaluation at (q, q̇, t) in ``mode``; returns the state derivative
        ``(q̇, q̈, friction dissipation rate, power put in)`` (a new array, or ``out`` filled)."""
        ab = self._abs
        p = self._recent[1] if mode is self._recent[0] else self.plan(mode)    # hashing a Mode is O(slots)
        self._recent = (mode, p)
        tF = self._tF
        if self._joints is not None:     # pins and constant torques: with the solve, in one compiled call
            if out is None:
                out = np.empty(2 * self.n + 2)
            q, qd = _kernel_array(q), _kernel_array(qd)
            ok, bad, T, V, P = _kernels.joint_mode(t, q, qd, tF, self._jw, self.stab.alpha, self.stab.beta, self._sf,
                                                   self._si, p.pf, p.pi, p.fb, p.ib, self._work, out, self._tprog,
                                                   self._tconst, *self._joints)
            self._check(t, mode, ok, bad)
            self._last = (t, p, None, T, V, P)
            return out
        if self._glue:
            joints, bI, F, Qx, Px = ab.python_parts(q, qd, t, self.stab, time_forces=self._tprog[0] == 0)
            tF = tF if F is None else F
            if self.m:     # a joint row involves at most two bodies: at most 6 coordinates
                _kernels.dense_rows(joints[1], p.jidx, p.jv, p.jnnz)
        else:
            joints, bI, Qx, Px = self._none
        if out is None:
            out = np.empty(2 * self.n + 2)
        if p.fl is not None:          # no Python parts: the call of five arguments (the same solve), unless it fails
            ok, bad, T, V, P = _kernels.general_mode_flat(t, np.concatenate((q, qd)), p.fl, p.il, out)
            if ok and bad == -1:
                self._last = (t, p, joints, T, V, P + Px)
                return out
        q, qd, tF, Qx, bI = (_kernel_array(v) for v in (q, qd, tF, Qx, bI))
        ok, bad, T, V, P = _kernels.general_mode_timed(t, q, qd, tF, Qx, bI, self.stab.alpha, self.stab.beta,
                                                       self._sf, self._si, p.pf, p.pi, p.fb, p.ib, self._work, out,
                                                       self._tprog, self._tconst)
        self._check(t, mode, ok, bad)
        if Px:
            out[2 * self.n + 1] += Px
        self._last = (t, p, joints, T, V, P + Px)
        return out

    def _check(self, t, mode, ok, bad):
        """Raise what a failed compiled evaluation at ``t`` means (``ok``, ``bad`` as the mode kernels return)."""
        if bad == -2:      # a time function is not finite: the expression layer says which and why
            for i, j, c in self._abs._tvary:
                c(t=t)
            raise ModelError(f"a force of time is not finite at t = {t:g}")
        if bad >= 0:
            raise ModelError(f"{self._abs._pair_names[bad]}: spring of positive rest length has zero length; "
                             "its direction is undefined")
        if not ok:
            raise _singular(mode, t)

    def compute_state(self, t, x, mode, out):
        """:meth:`compute` at the state ``x = (q, q̇, …)``, into ``out``: for a model without Python parts one
        compiled call of five arguments (:func:`pympc.mechanics._kernels.general_mode_flat`)."""
        p = self._recent[1] if mode is self._recent[0] else self.plan(mode)
        if p.fl is None:
            return self.compute(t, x[:self.n], x[self.n:2 * self.n], mode, out)
        self._recent = (mode, p)
        ok, bad, T, V, P = _kernels.general_mode_flat(t, x, p.fl, p.il, out)
        if not ok or bad != -1:          # repeated by the general call, which says why
            self.compute(t, x[:self.n], x[self.n:2 * self.n], mode, out)
            raise _singular(mode, t)        # pragma: no cover  (compute raises)
        self._last = (t, p, self._none[0], T, V, P)
        return out

    def flat(self, mode):
        """``(fl, il, (ovT, olam, oF))``: the arrays of :func:`pympc.mechanics._kernels.general_mode_flat` for
        ``mode`` and the offsets of the slots' ``vT``, ``λ``, ``F`` in its buffer; None for a model with Python
        parts (joints, forces of the state)."""
        p = self._recent[1] if mode is self._recent[0] else self.plan(mode)
        self._recent = (mode, p)
        if p.fl is None:
            return None
        return p.fl, p.il, (p.offs[10].start, p.offs[2].start, p.offs[3].start)

    def rows(self, ts, X, mode, ranges=None, out=None):
        """``(λ, F, vT, T, V, drift)`` at the samples ``(ts[i], X[i])`` in ``mode`` (rows; drift = max |gN|)
        in one compiled call (:func:`pympc.dynamics._flat.flat_rows`); None for a model with Python parts,
        or where a sample's solve fails (the caller evaluates sample by sample and says why).  With ``ranges``
        (an int64 array of (start, end) pairs) and ``out`` (those six arrays, as long as ``ts``): the rows ``i``
        in the ranges only, written into ``out``, which is returned."""
        flat = self.flat(mode)
        if flat is None:
            return None
        fl, il, (ovT, olam, oF) = flat
        if out is None:
            k, ns = len(ts), self.ns
            out = np.empty((k, ns)), np.empty((k, ns)), np.empty((k, ns)), np.empty(k), np.empty(k), np.empty(k)
            ranges = np.array([0, k], dtype=np.int64)
        ogN = self._recent[1].offs[6].start
        bad = flat_rows(np.ascontiguousarray(ts, dtype=float), np.ascontiguousarray(X, dtype=float), ranges, fl, il,
                        ovT, olam, oF, ogN, *out)
        self._last = None
        return None if bad >= 0 else out

    def event_samples(self, ts, X, mode, table, dense=None):
        """The event functions of a phase at many samples in one compiled call, or None where it does not apply.

        ``X[i]`` is the state at ``ts[i]`` (rows); ``table = (slot, cv, cl, cf, band)`` defines the functions
        as in :func:`pympc.dynamics._event_kernels.event_values`; with ``dense`` = ``(tsorted, t_old, h, y_old, F)``
        (:class:`~pympc.dynamics.crossings.DenseStates`) X is not given but computed from those DOP853 steps
        (:func:`pympc.dynamics._event_kernels.dop853_states`).  Only without Python parts (no joints, no forces
        of the state, forces of time compiled): None otherwise, and the caller evaluates sample by sample.
        The mode's buffers hold the last sample afterwards (:meth:`result` is not valid until the next
        :meth:`compute`).  A sample whose solve fails is repeated by :meth:`compute`, which raises.
        """
        if self._glue:
            return None
        p = self._recent[1] if mode is self._recent[0] else self.plan(mode)
        self._recent = (mode, p)
        ts = np.ascontiguousarray(ts, dtype=float)
        if dense is not None:         # the states from a stack of DOP853 steps (crossings.DenseStates), compiled
            X = np.empty((ts.size, dense[3].shape[1]))
            _event_kernels.dop853_states(ts, *dense, X)
        X = np.ascontiguousarray(X, dtype=float)
        slot, cv, cl, cf, band = table
        G = np.empty((ts.size, slot.size))
        off = p.offs
        Z = self._none[1]
        if p.fl is not None:
            bad = _event_kernels.flat_event_samples(ts, X, p.fl, p.il, off[10].start, off[2].start, off[3].start,
                                              slot, cv, cl, cf, band, G)
        else:
            bad = _event_kernels.mode_event_samples(ts, X, self.n, self._tF, Z, Z, self.stab.alpha, self.stab.beta,
                                              self._sf, self._si, p.pf, p.pi, p.fb, p.ib, self._work,
                                              np.empty(2 * self.n + 2), self._tprog, self._tconst,
                                              off[10].start, off[2].start, off[3].start, slot, cv, cl, cf, band, G)
        self._last = None
        if bad >= 0:
            n = self.n
            self.compute(ts[bad], X[bad, :n], X[bad, n:2 * n], mode)     # raises, saying why
            raise SimulationError(f"the compiled evaluation failed at t = {ts[bad]:g}")  # pragma: no cover
        return G

    def slot_values(self):
        """``(vT, λ, F)`` of the last :meth:`compute`: the slots' slip velocities, normal and friction forces,
        as views of the mode's buffers (valid until the next evaluation; no assembly is built)."""
        v = self._last[1].view
        return v["vT"], v["lam"], v["F"]

    def result(self):
        """``(assembly, ModeSolution)`` of the last :meth:`compute` (views of one copy: they stay valid)."""
        t, p, joints, T, V, P = self._last
        m, ns = self.m, self.ns
        if joints is None:               # joint_mode's rows (in its scratch): a copy
            n = self.n
            jw = self._jw[:3 * m + m * n].copy()
            joints = (jw[:m], jw[3 * m:].reshape(m, n), jw[2 * m:3 * m], jw[m:2 * m])
        fb = p.fb[:p.prefix].copy()
        ib = p.ib[:7 * ns].copy()
        qdd, nu, lam, F, aT, Q, gN, bN, vN, bT, vT, snv, stv = [fb[o] for o in p.offs]
        a = SparseAssembly(t, self.mass, Q, joints, self._abs.holonomic, (gN, bN, vN, bT, vT),
                           (ib[:6 * ns].reshape(ns, 6), snv.reshape(ns, 6), stv.reshape(ns, 6), ib[6 * ns:]),
                           T, V, P)
        return a, ModeSolution(qdd, nu[:m], lam, F, aT)

    def evaluate(self, t, q, qd, mode):
        """``(assembly, ModeSolution)`` at (q, q̇, t) in ``mode``."""
        self.compute(t, q, qd, mode)
        return self.result()
