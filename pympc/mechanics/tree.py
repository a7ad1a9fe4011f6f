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

import math

import numpy as np
import scipy.linalg

from ..errors import ModelError
from ._tree_kernels import tree_equations
from .assembly import AbsoluteModel, Assembly, _CompiledAssembly
from .joints import GROUND

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
            rigid = bool(self._abs.rigid[bi])
            j = joint[b]
            if j is None:
                k = 3 if rigid else 2
                names += [f"{b}.x", f"{b}.y"] + ([f"{b}.phi"] if rigid else [])
                self._plan.append((int(self._abs.offset[bi]), rigid, -1, "free", i, None, None))
            else:
                (body_a, point_a), (_, point_b) = j.tree_link()
                child_is_a = body_a == b
                sK = tuple(float(v) for v in np.asarray(point_a if child_is_a else point_b, float))
                sP = tuple(float(v) for v in np.asarray(point_b if child_is_a else point_a, float))
                k = 1 if rigid else 0
                names += [f"{j.name}.angle"] if rigid else []
                p = parent[b]
                self._plan.append((int(self._abs.offset[bi]), rigid, -1 if p == GROUND else pos[p], "revolute", i, sP,
                                   sK))
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
        """Absolute q, q̇, the partial-velocity matrix T (q̇ = T ẏ) and Ṫ ẏ.

        From the root outwards, each body's rows written in place: its position, angle and angular velocity in
        ``q`` and ``om``, its partial velocities ``v_K,l`` (and ``ω_K,l`` for a rigid body) in ``T``, the
        remainder of its acceleration ``Ṫ ẏ`` in ``rem``; a child of a revolute reads its parent's rows there
        (the ground: at rest, no partial velocities)."""
        na, nd = self._abs.n, self.n
        q, T, rem = np.zeros(na), np.zeros((na, nd)), np.zeros(na)
        om = [0.0] * len(self._plan)          # angular velocity of each body (0 for a particle)
        for k, (o, rigid, p, kind, i, sP, sK) in enumerate(self._plan):
            if kind == "free":
                q[o], q[o + 1] = y[i], y[i + 1]
                T[o, i] = T[o + 1, i + 1] = 1.0
                if rigid:
                    q[o + 2], om[k], T[o + 2, i + 2] = y[i + 2], yd[i + 2], 1.0
                continue
            po, prigid = self._plan[p][:2] if p >= 0 else (-1, False)
            phP, omP = (q[po + 2], om[p]) if prigid else (0.0, 0.0)
            c, s = math.cos(phP), math.sin(phP)
            ux, uy = c * sP[0] - s * sP[1], s * sP[0] + c * sP[1]        # R(φ_P) s_P
            x, yy = (q[po], q[po + 1]) if po >= 0 else (0.0, 0.0)
            ax, ay = (rem[po], rem[po + 1]) if po >= 0 else (0.0, 0.0)
            w2 = omP * omP
            ax, ay = ax - w2 * ux, ay - w2 * uy
            if po >= 0:
                T[o:o + 2] = T[po:po + 2]
            if prigid:                         # v_K,l = v_P,l + ω_P,l E R s_P (E: the quarter turn)
                TwP = T[po + 2]
                T[o] -= uy * TwP
                T[o + 1] += ux * TwP
            if rigid:
                ph = phP + y[i]
                om[k] = omK = omP + yd[i]
                q[o + 2] = ph
                if prigid:
                    T[o + 2] = T[po + 2]
                T[o + 2, i] += 1.0
                c, s = math.cos(ph), math.sin(ph)
                vx, vy = c * sK[0] - s * sK[1], s * sK[0] + c * sK[1]    # R(φ_K) s_K
                TwK = T[o + 2]
                T[o] += vy * TwK
                T[o + 1] -= vx * TwK
                w2 = omK * omK
                ax, ay = ax + w2 * vx, ay + w2 * vy
            else:
                vx, vy = sK[0], sK[1]
            q[o], q[o + 1] = x + ux - vx, yy + uy - vy
            rem[o], rem[o + 1] = ax, ay
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
        """Kane's equations ``A ÿ = f`` and the constraints, as an :class:`Assembly`.

        The absolute rows and forces at the kinematics' (q, q̇) (:meth:`AbsoluteModel.assembly
        <pympc.mechanics.assembly.AbsoluteModel.assembly>`, one compiled call, where it applies; else
        :meth:`~pympc.mechanics.assembly.AbsoluteModel.evaluate`), mapped to the tree coordinates in one compiled
        call (:func:`pympc.mechanics._tree_kernels.tree_equations`): ``A = Tᵀ Z T``, ``f = Tᵀ (Q − Z Ṫẏ)``, the rows
        ``W T`` and their biases ``b + W Ṫẏ``.  From the compiled absolute assembly, a compiled assembly as well
        (its energies, those of the absolute (q, q̇), computed when first read; every array float64 and
        C-contiguous, as the transition's kernels take them)."""
        q, qd, T, rem = self.kinematics(y, yd)
        ab = self._abs.assembly(q, qd, t, None, self.holonomic)
        if ab is None:
            (g, J, w, gd), (gN, WN, bN, vN, WT, bT, vT), Q, K, V, P = self._abs.evaluate(q, qd, t)
            A, f, JT, wT, WNT, bNT, WTT, bTT = tree_equations(T, rem, self._Z, Q, J, w, WN, bN, WT, bT)
            return Assembly(t, A, f, g, JT, wT, gd, self.holonomic, gN, WNT, bNT, vN, WTT, bTT, vT, K, V, P)
        A, f, JT, wT, WNT, bNT, WTT, bTT = tree_equations(T, rem, self._Z, ab.h, ab.J, ab.w, ab.WN, ab.bN, ab.WT,
                                                          ab.bT)
        _, aq, aqd, dV = ab._energy
        return _CompiledAssembly(t, A, f, ab.g, JT, wT, ab.gdot, self.holonomic, ab.gN, WNT, bNT, ab.vN, WTT, bTT,
                                 ab.vT, ab.power, self._abs, aq, aqd, dV)

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

