"""The general method: absolute coordinates of every body, all joints as constraints.

``M q̈ = h + Jᵀ ν + WNᵀ λ + WTᵀ F`` with ``M = diag(m, m, J_C, ...)`` (seed 001,
eq. 5.2.1–5.2.3) and every joint a constraint row with a Lagrange multiplier.
"""

from __future__ import annotations

import numpy as np

from .assembly import AbsoluteModel, Assembly

__all__ = ["GeneralMethod"]


class GeneralMethod:
    """Absolute coordinates + Lagrange multipliers for every joint.

    Parameters
    ----------
    system : System

    Attributes
    ----------
    n : int
        Number of coordinates (3 per rigid body, 2 per particle).
    coordinate_names : list of str
    slots : tuple of Slot
    mass_diagonal : ndarray or None
        The (diagonal) mass matrix as a vector, when all its entries are positive.
    rheonomic : bool
        Some constraint depends explicitly on time.

    Examples
    --------
    >>> from pympc.mechanics import System, Particle, Slot, Gravity
    >>> s = System("block")
    >>> _ = s.add(Particle("block", mass=2.0)); _ = s.add(Slot("rail", "block", "ground"))
    >>> _ = s.add(Gravity("g", g=(0.0, -10.0)))
    >>> f = GeneralMethod(s)
    >>> a = f.assemble(*f.initial_state(), 0.0)
    >>> a.h.tolist(), a.WN.tolist(), a.WT.tolist()
    ([0.0, -20.0], [[0.0, 1.0]], [[1.0, 0.0]])
    """

    name = "general"

    def __init__(self, system):
        self.system = system
        self._abs = AbsoluteModel(system)
        self.n = self._abs.n
        self.coordinate_names = list(self._abs.coordinate_names)
        self.absolute_names = self.coordinate_names
        self.slots = self._abs.slots
        self._M = np.diag(self._abs.mass)
        # the diagonal fast path of the dynamics layer; None when a zero inertia makes M singular
        self.mass_diagonal = self._abs.mass if np.all(self._abs.mass > 0) else None
        self.holonomic = self._abs.holonomic
        self.rheonomic = self._abs.rheonomic

    def initial_state(self):
        """(q, q̇) from the bodies' initial positions and velocities (not yet projected)."""
        return self._abs.initial_state()

    def absolute(self, q, qd):
        """Absolute coordinates and velocities (the identity here)."""
        return np.asarray(q, float), np.asarray(qd, float)

    def assemble(self, q, qd, t):
        """The :class:`Assembly` at (q, q̇, t)."""
        a = self._abs.assembly(q, qd, t, self._M, self.holonomic)     # one compiled call where it applies
        if a is not None:
            return a
        (g, J, w, gd), (gN, WN, bN, vN, WT, bT, vT), Q, T, V, P = self._abs.evaluate(q, qd, t)
        return Assembly(t, self._M, Q, g, J, w, gd, self.holonomic, gN, WN, bN, vN, WT, bT, vT, T, V, P)
