"""Huston's method for trees: lower body array, partial velocities, Kane's equations.

Bodies are numbered so that each comes after its parent (the lower body array
``L(K)`` gives the parent, ``L(K) = 0`` for the ground; seed 003).  Each tree
joint (a joint whose ``tree_link()`` names two points: the revolute)
contributes its own coordinates: a revolute to the parent adds the
relative angle (nothing for a particle), a body with no revolute path to the
ground is free (``x, y[, phi]``).  Positions, velocities, the partial velocities
``v_K,l = ∂v_K/∂ẏ_l`` and partial angular velocities ``ω_K,l`` are composed
recursively from the root outwards; Kane's equations ``F_l + F*_l = 0`` become
``A ÿ = f`` with ``A_lp = Σ_K (m_K v_K,l·v_K,p + J_K ω_K,l ω_K,p)``.

Every other joint (slots, loop-closing revolutes, rolling, gears, rods,
prescribed motion) is a constraint on the tree coordinates, obtained from its
absolute form through the partial velocities.  Where multipliers are not
wanted, :meth:`TreeMethod.accelerations_by_complement` eliminates them with an
orthogonal complement ``C`` (``B C = 0``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ..errors import ModelError
from .assembly import AbsoluteModel, Assembly, _rot
from .joints import _E, GROUND

__all__ = ["TreeMethod"]


class TreeMethod:
    """Independent (tree) coordinates by Huston's method.

    Parameters
    ----------
    system : System
    numbering : sequence of str, optional
        Body names in Huston order (each body after its parent).  Default:
        breadth-first from the ground, bodies in insertion order.

    Attributes
    ----------
    numbering : list of str
    lower_body_array : ndarray of int
        ``L[k-1]`` = number of the parent of body ``k`` (1-based, 0 = ground).
    tree_joints : list of str
        The revolutes that are tree joints; the others close loops.
    n : int
        Number of tree coordinates.

    Examples
    --------
    >>> from pympc.mechanics import System, RigidBody, Revolute
    >>> s = System("double pendulum")
    >>> _ = s.add(RigidBody("a", mass=1.0, inertia=0.1, position=(0.5, 0.0)))
    >>> _ = s.add(RigidBody("b", mass=1.0, inertia=0.1, position=(1.5, 0.0)))
    >>> _ = s.add(Revolute("O", "ground", "a", (0, 0), (-0.5, 0)))
    >>> _ = s.add(Revolute("A", "a", "b", (0.5, 0), (-0.5, 0)))
    >>> TreeMethod(s).lower_body_array.tolist()
    [0, 1]
    """

    name = "tree"

    def __init__(self, system, numbering=None):
        system.validate()
        self.system = system
        system = system.resolved()          # numbers: the parameters as bound now
        bodies = list(system.bodies)
        parent, joint = self._spanning_tree(system, bodies)
        order = self._order(bodies, parent, numbering)
        self.numbering = order
        num = {b: i + 1 for i, b in enumerate(order)}
        self.lower_body_array = np.array([0 if parent[b] == GROUND else num[parent[b]] for b in order])
        self.tree_joints = [joint[b].name for b in order if joint[b] is not None]
        self._abs = AbsoluteModel(system, exclude=set(self.tree_joints))
        self.slots = self._abs.slots
        self.holonomic = self._abs.holonomic
        self.rheonomic = self._abs.rheonomic
        self.absolute_names = self._abs.coordinate_names
        self.mass_diagonal = None
        self._Z = self._abs.mass
        # per body in Huston order: (abs offset, rigid, parent position in order or -1, kind, coords, sP, sK)
        self._plan, names, i = [], [], 0
        pos = {b: k for k, b in enumerate(order)}
        for b in order:
            bi = self._abs.body_index[b]
            rigid = self._abs.rigid[bi]
            j = joint[b]
            if j is None:
                k = 3 if rigid else 2
                names += [f"{b}.x", f"{b}.y"] + ([f"{b}.phi"] if rigid else [])
                self._plan.append((self._abs.offset[bi], rigid, -1, "free", i, None, None))
            else:
                (body_a, point_a), (_, point_b) = j.tree_link()
                child_is_a = body_a == b
                sK = np.asarray(point_a if child_is_a else point_b, float)
                sP = np.asarray(point_b if child_is_a else point_a, float)
                k = 1 if rigid else 0
                names += [f"{j.name}.angle"] if rigid else []
                p = parent[b]
                self._plan.append((self._abs.offset[bi], rigid, -1 if p == GROUND else pos[p], "revolute", i, sP, sK))
            i += k
        self.n = i
        self.coordinate_names = names

    @staticmethod
    def _spanning_tree(system, bodies):
        revs = [(j, j.tree_link()) for j in system.joints.values() if j.tree_link() is not None]
        parent, joint = {}, {}
        seen = {GROUND}
        frontier = [GROUND]
        pending = list(bodies)
        while pending:
            while frontier:
                node = frontier.pop(0)
                for j, ((body_a, _), (body_b, _)) in revs:
                    for a, b in ((body_a, body_b), (body_b, body_a)):
                        if a == node and b not in seen:
                            seen.add(b)
                            parent[b], joint[b] = node, j
                            frontier.append(b)
            pending = [b for b in bodies if b not in seen]
            if pending:  # a free root: no revolute path to the ground
                b = pending[0]
                seen.add(b)
                parent[b], joint[b] = GROUND, None
                frontier.append(b)
        return parent, joint

    @staticmethod
    def _order(bodies, parent, numbering):
        if numbering is None:
            order, placed = [], {GROUND}
            while len(order) < len(bodies):
                for b in bodies:
                    if b not in placed and parent[b] in placed:
                        order.append(b)
                        placed.add(b)
            return order
        numbering = list(numbering)
        if sorted(numbering) != sorted(bodies):
            raise ModelError(f"numbering: must list every body once, got {numbering} for bodies {bodies}")
        placed = {GROUND}
        for b in numbering:
            if parent[b] not in placed:
                raise ModelError(f"numbering: body {b!r} comes before its parent {parent[b]!r}; "
                                 "a lower body array needs each body after its parent")
            placed.add(b)
        return numbering

    # ------------------------------------------------------------------ kinematics
    def kinematics(self, y, yd):
        """Absolute q, q̇, the partial-velocity matrix T (q̇ = T ẏ) and Ṫ ẏ."""
        nb = len(self._plan)
        na, nd = self._abs.n, self.n
        q, T, rem = np.zeros(na), np.zeros((na, nd)), np.zeros(na)
        r = np.zeros((nb, 2))
        phi, om = np.zeros(nb), np.zeros(nb)
        Tv, Tw, ar = np.zeros((nb, 2, nd)), np.zeros((nb, nd)), np.zeros((nb, 2))
        for k, (o, rigid, p, kind, i, sP, sK) in enumerate(self._plan):
            if kind == "free":
                r[k] = y[i:i + 2]
                Tv[k, 0, i], Tv[k, 1, i + 1] = 1.0, 1.0
                if rigid:
                    phi[k], om[k], Tw[k, i + 2] = y[i + 2], yd[i + 2], 1.0
            else:
                if p >= 0:
                    rP, phP, omP, TvP, TwP, arP = r[p], phi[p], om[p], Tv[p], Tw[p], ar[p]
                else:  # the ground: at rest, no partial velocities
                    rP, phP, omP, TvP, TwP, arP = np.zeros(2), 0.0, 0.0, np.zeros((2, nd)), np.zeros(nd), np.zeros(2)
                RsP = _rot(phP) @ sP
                if rigid:
                    phi[k], om[k] = phP + y[i], omP + yd[i]
                    Tw[k] = TwP
                    Tw[k, i] += 1.0
                    RsK = _rot(phi[k]) @ sK
                else:
                    phi[k], om[k], RsK = 0.0, 0.0, None
                r[k] = rP + RsP - (RsK if rigid else sK)
                Tv[k] = TvP + np.outer(_E @ RsP, TwP)
                ar[k] = arP - omP * omP * RsP
                if rigid:
                    Tv[k] -= np.outer(_E @ RsK, Tw[k])
                    ar[k] += om[k] * om[k] * RsK
            q[o:o + 2], T[o:o + 2], rem[o:o + 2] = r[k], Tv[k], ar[k]
            if rigid:
                q[o + 2], T[o + 2] = phi[k], Tw[k]
        return q, T @ yd, T, rem

    def initial_state(self):
        """Tree (y, ẏ) from the bodies' absolute initial positions and velocities."""
        qa, qda = self._abs.initial_state()
        y = np.zeros(self.n)
        for o, rigid, p, kind, i, sP, sK in self._plan:
            if kind == "free":
                y[i:i + (3 if rigid else 2)] = qa[o:o + (3 if rigid else 2)]
            elif rigid:
                y[i] = qa[o + 2] - (qa[self._plan[p][0] + 2] if p >= 0 and self._plan[p][1] else 0.0)
        _, _, T, _ = self.kinematics(y, np.zeros(self.n))
        yd = np.linalg.lstsq(T, qda, rcond=None)[0] if self.n else np.zeros(0)
        return y, yd

    def absolute(self, y, yd):
        """Absolute coordinates and velocities of the bodies."""
        q, qd, _, _ = self.kinematics(y, yd)
        return q, qd

    def assemble(self, y, yd, t):
        """Kane's equations ``A ÿ = f`` and the constraints, as an :class:`Assembly`."""
        q, qd, T, rem = self.kinematics(y, yd)
        (g, J, w, gd), (gN, WN, bN, vN, WT, bT, vT), Q, K, V, P = self._abs.evaluate(q, qd, t)
        ZT = self._Z[:, None] * T
        A = T.T @ ZT
        f = T.T @ (Q - self._Z * rem)
        return Assembly(t, A, f, g, J @ T, w + J @ rem, gd, self.holonomic,
                        gN, WN @ T, bN + WN @ rem, vN, WT @ T, bT + WT @ rem, vT, K, V, P)

    def accelerations_by_complement(self, y, yd, t, include_slots=False):
        """ÿ without multipliers: the orthogonal complement of the constraint Jacobian.

        With ``B ÿ + b = 0`` (bilateral rows, and frictionless slot normals if
        ``include_slots``), ``ÿ = ÿ_p + C z`` where ``B C = 0``, ``ÿ_p = −B⁺ b``,
        and ``(Cᵀ A C) z = Cᵀ (f − A ÿ_p)``.
        """
        a = self.assemble(y, yd, t)
        B, b = (np.vstack([a.J, a.WN]), np.concatenate([a.w, a.bN])) if include_slots else (a.J, a.w)
        if B.shape[0] == 0:
            return np.linalg.solve(a.M, a.h)
        yp = -np.linalg.lstsq(B, b, rcond=None)[0]
        C = scipy.linalg.null_space(B)
        z = np.linalg.solve(C.T @ a.M @ C, C.T @ (a.h - a.M @ yp))
        return yp + C @ z

