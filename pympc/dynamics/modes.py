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
from scipy.linalg.lapack import dgesv as _dgesv

from ..complementarity.results import _DocIntEnum
from ..errors import SimulationError

__all__ = ["Motion", "Mode", "ModeSolution", "solve_mode", "Baumgarte"]


class Motion(_DocIntEnum):
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
        return np.asarray(self.motions, float) * np.asarray(self.walls, float)


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
    nu = _dense_solve(C @ X, -b - C @ x0)
    return x0 + X @ nu, nu


def solve_mode(a, mode, mu, mu_s, stab, mass_diagonal=None):
    """Accelerations and forces of assembly ``a`` in ``mode`` (a :class:`ModeSolution`).

    Raises
    ------
    SimulationError
        If the mode's equations are singular (redundant constraints or a
        mass matrix that is singular on the free motions).
    """
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
