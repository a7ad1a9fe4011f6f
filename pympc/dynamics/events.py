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

from dataclasses import dataclass

import numpy as np

from ..complementarity import HLCP
from .modes import Mode, Motion, _biases, solve_linear

__all__ = ["EventProblem", "event_problem", "read_mode"]


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

    @property
    def nslots(self):
        return len(self.directions)

    @property
    def tol(self):
        """Below this a member of a pair counts as zero when the mode is read (scaled to the data)."""
        return 1e-9 * (1.0 + max(np.abs(self.hlcp.c).max(initial=0), 1.0))

    def split(self, x, y):
        """(λ⁺, λ⁻, a⁺, a⁻, f⁺, f⁻) from an HLCP point."""
        s, c = self.nslots, len(self.candidates)
        return x[:s], y[:s], x[s:s + c], y[s + c:], y[s:s + c], x[s + c:]

    def accelerations(self, x, y):
        lp, lm, ap, am, fp, fm = self.split(x, y)
        return self.qdd0 + self.Q @ np.concatenate([lp, lm, ap, am, fp, fm])


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
    """
    directions = np.asarray(directions, dtype=float)
    s = len(directions)
    cand = [k for k in range(s) if directions[k] == 0]
    c = len(cand)
    n = a.M.shape[0]
    nz = 2 * s + 4 * c
    Gz = np.zeros((n, nz))
    fr = -mu * directions
    Gz[:, :s] = (a.WN + fr[:, None] * a.WT).T
    Gz[:, s:2 * s] = (-a.WN + fr[:, None] * a.WT).T
    Gz[:, 2 * s + 2 * c:2 * s + 3 * c] = 0.5 * a.WT[cand].T
    Gz[:, 2 * s + 3 * c:] = -0.5 * a.WT[cand].T
    bI, bN, bT = _biases(a, stab, cand)
    # q̈ = qdd0 + Q z after eliminating the bilateral multipliers
    cols = np.hstack([a.h[:, None], Gz])
    X = _accelerations(a, cols, bI, mass_diagonal)
    qdd0, Q = X[:, 0], X[:, 1:]
    E = np.zeros((s + 2 * c, nz))
    e = np.zeros(s + 2 * c)
    E[:s] = a.WN @ Q
    e[:s] = -bN - a.WN @ qdd0
    for j, k in enumerate(cand):
        r = s + j
        E[r] = -(a.WT[k] @ Q)
        E[r, 2 * s + j] += 1.0
        E[r, 2 * s + c + j] -= 1.0
        e[r] = bT[j] + a.WT[k] @ qdd0
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
    return EventProblem(hl, cand, directions, qdd0, Q)


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
    tol = ev.tol if tol is None else tol
    lp, lm, ap, am, fp, fm = ev.split(x, y)
    s = ev.nslots
    walls, motions, degenerate = [], [], []
    for k in range(s):
        lam = lp[k] - lm[k]
        if abs(lam) <= tol:
            degenerate.append(("wall", k))
            walls.append(int(previous_walls[k]))
        else:
            walls.append(1 if lam > 0 else -1)
        motions.append(Motion(int(ev.directions[k])))
    for j, k in enumerate(ev.candidates):
        acc = ap[j] - am[j]      # a⁺ and a⁻ may both be positive when both reserves are zero (λ = 0)
        if acc > tol:
            motions[k] = Motion.FORWARD
        elif acc < -tol:
            motions[k] = Motion.BACKWARD
        else:
            motions[k] = Motion.STICK
            if fp[j] <= tol or fm[j] <= tol:
                degenerate.append(("stick", k))
    return Mode(tuple(walls), tuple(motions)), degenerate

