"""The mechanics' equations at position level, generic over the arithmetic.

One definition of the point kinematics, the joint constraints, the slot
coordinates and the applied forces, written once for any arithmetic: the
functions take an ``ops`` namespace for the elementary functions (``math``
for floats, ``pyomo.environ`` for Pyomo expressions) and an ``env`` mapping
parameter names to numbers or to Pyomo objects.  Fields of the elements that
are expressions of the parameters are rebuilt with :meth:`Expression.build`
(no second parser), so a fitted parameter appears as the Pyomo variable it is
mapped to.  This module never imports Pyomo (the whole-trajectory MPEC,
:mod:`pympc.identify.mpec_model`, passes it in).

Coordinates are the absolute ones of :class:`~pympc.mechanics.GeneralMethod`
(``x, y, phi`` per rigid body, ``x, y`` per particle, in insertion order).
The velocity-level rows (Jacobians) are not written here a second time: the
numeric oracle differences these functions, the Pyomo model differentiates
them symbolically; the generalized forces use :meth:`Equations.point_columns`,
the derivative of the same point position ``r + R(phi) s``.

Each joint writes its own residuals (:meth:`~pympc.mechanics.joints.Joint.residuals`,
called with this object for the point kinematics); a joint type without them
(:class:`Rolling` and :class:`Gear`: velocity-level, non-holonomic rows) is not
covered, and :meth:`Equations.check_supported` raises a ModelError naming it.
"""

from __future__ import annotations

import math

from ..errors import ModelError
from .expressions import Expression, _names
from .joints import GROUND
from .system import Damper, Gravity, PointForce, RigidBody, Spring, Torque

__all__ = ["Equations"]


class Equations:
    """Position-level equations of a System, evaluated with any arithmetic.

    Parameters
    ----------
    system : System
        Its elements as defined (fields may be expressions of the parameters).

    Attributes
    ----------
    n : int
        Number of absolute coordinates.
    coordinate_names : list of str
    slots : list of Slot
        The slot definitions, in the slot order of the formulations.
    """

    def __init__(self, system):
        self.system = system
        names = list(system.bodies)
        self.bodies = [system.definition(n) for n in names]
        self.index = {n: i for i, n in enumerate(names)}
        self.rigid = [isinstance(b, RigidBody) for b in self.bodies]
        self.offset, o = [], 0
        for b in self.bodies:
            self.offset.append(o)
            o += b.ncoord
        self.n = o
        self.coordinate_names = []
        for b, r in zip(self.bodies, self.rigid):
            self.coordinate_names += [f"{b.name}.x", f"{b.name}.y"] + ([f"{b.name}.phi"] if r else [])
        self.joints = [system.definition(n) for n in system.joints if not system.joints[n].SLOT]
        self.slots = [system.definition(s.name) for s in system.slots]
        self.forces = [system.definition(n) for n in system.forces]
        # per force (by id) whose value holds expressions: the names they use (its state is made of those alone)
        self._uses = {id(f): set().union(*(_names(x.node, variables=True) for x in _fields(f) if isinstance(x, Expression)))
                      for f in self.forces if isinstance(f, (PointForce, Torque))}

    def check_supported(self):
        """Raise a ModelError naming the joints these equations do not cover (rolling, gears)."""
        bad = [f"{j.name} ({j.TYPE})" for j in self.joints if j.residuals is None]
        if bad:
            raise ModelError(f"{self.system.name}: joint(s) {bad} have no position-level residuals (velocity-level "
                             "rows such as rolling and gears) and are not covered by the MPEC route; use the "
                             "shooting route")

    # ------------------------------------------------------------------ values
    @staticmethod
    def value(field, env, ops=math, variables=None):
        """A field as a number or as an expression of ``env`` (parameters) and ``variables`` (t, state)."""
        if isinstance(field, Expression):
            return field.build({**env, **(variables or {})}, ops)
        return field

    def parameters(self, env_overrides=None, ops=math):
        """``{name: value}`` of every parameter, ``env_overrides`` (e.g. Pyomo variables) in place; derived
        parameters rebuilt from them."""
        out = {}
        over = dict(env_overrides or {})
        values = self.system.parameters
        for k, p in self.system.parameter_definitions.items():
            if k in over:
                out[k] = over[k]
            elif p.derived:
                out[k] = p.value.build(out, ops)
            else:
                out[k] = values[k]
        return out

    def mass(self, env, ops=math):
        """The diagonal of the mass matrix (m, m[, I] per body)."""
        out = []
        for b, r in zip(self.bodies, self.rigid):
            m = self.value(b.mass, env, ops)
            out += [m, m] + ([self.value(b.inertia, env, ops)] if r else [])
        return out

    # ------------------------------------------------------------------ kinematics
    def body(self, name):
        """The index of body ``name`` (-1 for the ground)."""
        return -1 if name == GROUND else self.index[name]


    def _vec(self, v, env, ops):
        return self.value(v[0], env, ops), self.value(v[1], env, ops)

    def rotated(self, q, b, s, ops=math):
        """``R(phi_b) s``: a body-fixed vector in world axes."""
        if b < 0 or not self.rigid[b]:
            return s
        phi = q[self.offset[b] + 2]
        c, sn = ops.cos(phi), ops.sin(phi)
        return c * s[0] - sn * s[1], sn * s[0] + c * s[1]

    def point(self, q, body, s, env, ops=math):
        """World position ``r_b + R(phi_b) s`` of the point ``s`` (body frame) of body ``body`` (a name)."""
        b = self.body(body)
        s = self._vec(s, env, ops)
        if b < 0:
            return s
        o = self.offset[b]
        p = self.rotated(q, b, s, ops)
        return q[o] + p[0], q[o + 1] + p[1]

    def point_columns(self, q, body, s, env, ops=math):
        """``[(column, (∂x/∂q_c, ∂y/∂q_c))]``: the derivative of :meth:`point` (rotation column ``E R s``)."""
        b = self.body(body)
        if b < 0:
            return []
        o = self.offset[b]
        cols = [(o, (1.0, 0.0)), (o + 1, (0.0, 1.0))]
        if self.rigid[b]:
            px, py = self.rotated(q, b, self._vec(s, env, ops), ops)
            cols.append((o + 2, (-py, px)))
        return cols

    def point_velocity(self, q, v, body, s, env, ops=math):
        """World velocity of a body point: Σ columns · v."""
        vx = vy = 0.0
        for c, (ax, ay) in self.point_columns(q, body, s, env, ops):
            vx, vy = vx + ax * v[c], vy + ay * v[c]
        return vx, vy

    # ------------------------------------------------------------------ constraints
    def joint_residuals(self, q, t, env, ops=math):
        """The bilateral constraints g(q, t), each joint's :meth:`~pympc.mechanics.joints.Joint.residuals`
        (Revolute: 2 rows, Distance: ½(|d|² − L²), Prescribed: q_c − f(t)), in the row order of the numeric
        assembly."""
        self.check_supported()
        out = []
        for j in self.joints:
            out += j.residuals(self, q, t, env, ops)
        return out

    def slot_frame(self, q, slot, env, ops=math):
        """(slider point P, guide line origin A, direction u, normal n) of a slot, in world axes (its
        :meth:`~pympc.mechanics.joints.Slot.frame`)."""
        return slot.frame(self, q, env, ops)

    def slot_coordinates(self, q, env, ops=math):
        """Per slot, (normal gap gN = n·(P − A), tangential coordinate s = u·(P − A)).

        ∂gN/∂q and ∂s/∂q are the rows WN and WT of the numeric assembly, and the
        slip velocity is ``WT q̇`` (the guide's rotation included).
        """
        out = []
        for sl in self.slots:
            P, A, u, nn = self.slot_frame(q, sl, env, ops)
            dx, dy = P[0] - A[0], P[1] - A[1]
            out.append((nn[0] * dx + nn[1] * dy, u[0] * dx + u[1] * dy))
        return out

    # ------------------------------------------------------------------ forces
    def _apply(self, Q, q, body, s, F, env, ops, sign=1.0):
        for c, (ax, ay) in self.point_columns(q, body, s, env, ops):
            # a column's coefficient that is the number 0 (a particle's x column moves no y): its term left out,
            # not written F·0 (the same number for a finite force; in a Pyomo row, nodes that multiply by zero)
            if _zero(ay):
                if not _zero(ax):
                    Q[c] = Q[c] + sign * (F[0] * ax)
            elif _zero(ax):
                Q[c] = Q[c] + sign * (F[1] * ay)
            else:
                Q[c] = Q[c] + sign * (F[0] * ax + F[1] * ay)

    def applied_forces(self, q, v, t, env, ops=math, memo=None):
        """The generalized applied force Q(q, v, t) (gravity, springs, dampers, point forces, torques).

        ``memo`` (a dict, optional): kept by a caller that calls this many times with one ``env`` (the rows of
        a trajectory), it holds the terms of parameters alone (gravity's ``m g``, a spring's ``k`` and ``−k``,
        a damper's ``c``), built at the first call and the same objects after: the same expressions, built
        once.  ``env`` must not change while its memo is used."""
        Q = [0.0] * self.n
        zero = (0.0, 0.0)
        held = self._held(env, ops, memo)
        for f in self.forces:
            if isinstance(f, Gravity):
                for o, mg in held[id(f)]:
                    Q[o], Q[o + 1] = (Q[o] if mg[0] is None else Q[o] + mg[0]), (Q[o + 1] if mg[1] is None
                                                                                 else Q[o + 1] + mg[1])
            elif isinstance(f, (Spring, Damper)):
                ra = self.point(q, f.body_a, f.point_a, env, ops)
                rb = self.point(q, f.body_b, f.point_b, env, ops)
                d = (ra[0] - rb[0], ra[1] - rb[1])
                L0 = held[id(f)][1] if isinstance(f, Spring) else None
                # a spring of rest length 0 pulls with −k d: |d|² not needed (not built)
                L2 = None if isinstance(L0, float) and L0 == 0.0 else d[0] * d[0] + d[1] * d[1]
                if isinstance(f, Spring):
                    k, L0, minus_k = held[id(f)]
                    mag = minus_k if L2 is None else -k * (ops.sqrt(L2) - L0) / ops.sqrt(L2)
                else:
                    if isinstance(L2, float) and L2 < 1e-24:
                        continue                       # as the numeric assembly: no direction, no force
                    va = self.point_velocity(q, v, f.body_a, f.point_a, env, ops)
                    vb = self.point_velocity(q, v, f.body_b, f.point_b, env, ops)
                    mag = -held[id(f)] * (d[0] * (va[0] - vb[0]) + d[1] * (va[1] - vb[1])) / L2
                F = (mag * d[0], mag * d[1])
                self._apply(Q, q, f.body_a, f.point_a, F, env, ops)
                self._apply(Q, q, f.body_b, f.point_b, F, env, ops, -1.0)
            elif isinstance(f, PointForce):
                state = None                           # made once, for the components that are expressions
                F = []
                for x in f.value:
                    if isinstance(x, Expression) and state is None:
                        state = self._state(q, v, t, f.body, f.point, env, ops, self._uses[id(f)])
                    F.append(self.value(x, env, ops, state))
                self._apply(Q, q, f.body, f.point, F, env, ops)
            elif isinstance(f, Torque):
                b = self.body(f.body)
                c = self.offset[b] + 2
                state = (self._state(q, v, t, f.body, zero, env, ops, self._uses[id(f)])
                         if isinstance(f.value, Expression) else None)
                Q[c] = Q[c] + self.value(f.value, env, ops, state)
        return Q

    def _held(self, env, ops, memo):
        """Per force (by id), its terms of parameters alone (see :meth:`applied_forces`), from ``memo`` when
        given and filled."""
        if memo:
            return memo
        held = {} if memo is None else memo
        for f in self.forces:
            if isinstance(f, Gravity):
                g = self._vec(f.g, env, ops)
                terms = []
                for body, o in zip(self.bodies, self.offset):
                    m = self.value(body.mass, env, ops)
                    terms.append((o, tuple(None if _zero(gc) else m * gc for gc in g)))   # None: no term (g_c = 0)
                held[id(f)] = terms
            elif isinstance(f, Spring):
                k, L0 = self.value(f.k, env, ops), self.value(f.length, env, ops)
                held[id(f)] = (k, L0, -k)
            elif isinstance(f, Damper):
                held[id(f)] = self.value(f.c, env, ops)
        return held

    def _state(self, q, v, t, body, s, env, ops, uses=None):
        """The variables of a force expression: time, the point's position and velocity, the body's angle and rate;
        with ``uses`` (the names the expression uses) the position and velocity only when it uses them (``F0*sin(w*t)``:
        no point and velocity built at every stage of a trajectory's rows)."""
        out = {"t": t}
        if uses is None or "x" in uses or "y" in uses:
            out["x"], out["y"] = self.point(q, body, s, env, ops)
        if uses is None or "vx" in uses or "vy" in uses:
            out["vx"], out["vy"] = self.point_velocity(q, v, body, s, env, ops)
        b = self.body(body)
        rigid = b >= 0 and self.rigid[b]
        out["phi"] = q[self.offset[b] + 2] if rigid else 0.0
        out["phidot"] = v[self.offset[b] + 2] if rigid else 0.0
        return out


def _zero(x):
    """Is ``x`` the number 0 (an int or float, not an expression)?"""
    return isinstance(x, (int, float)) and x == 0


def _fields(force):
    """The value fields of a point force (its components) or a torque."""
    return list(force.value) if isinstance(force, PointForce) else [force.value]
