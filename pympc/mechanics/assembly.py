"""Numerical assembly in absolute coordinates: point kinematics, constraints, forces.

Everything here works on the absolute coordinates of the bodies (``x, y, phi``
per rigid body, ``x, y`` per particle) and is shared by both formulations:
the general method uses it directly, the tree method composes it with the
partial velocities of its tree.

For every scalar constraint ``g(q, t) = 0`` we produce ``g``, its Jacobian
row ``J``, ``ġ = J q̇ + ∂g/∂t`` and the acceleration bias ``ŵ`` with
``g̈ = J q̈ + ŵ``.  Velocity-level (non-holonomic) rows such as rolling have
``g = 0`` and are flagged.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from . import _kernels
from .equations import Equations
from .expressions import parse
from .joints import _E, GROUND, Slot, _add
from .system import FORCE_VARIABLES, Damper, Gravity, PointForce, RigidBody, Spring, Torque

__all__ = ["Assembly", "AbsoluteModel", "SparseAssembly", "time_program", "EMPTY"]

_I2 = np.eye(2)
_Z2 = np.zeros(2)
_Z20 = np.zeros((2, 0))
EMPTY = np.zeros(0)
"""A read-only empty float array (no joint rows, no state forces); shared, never written."""
for _a in (_I2, _Z2, _Z20, EMPTY):
    _a.flags.writeable = False


_BINARY = {ast.Add: _kernels.OP_ADD, ast.Sub: _kernels.OP_SUB, ast.Mult: _kernels.OP_MUL, ast.Div: _kernels.OP_DIV,
           ast.Pow: _kernels.OP_POW}


def time_program(functions):
    """The functions of time ``[(i, j, Expression), ...]`` as one postfix program for
    :func:`_kernels.run_time_program` (which writes ``tF[i, j]``): ``(prog, consts)``, or None when an
    expression uses something the program does not have (then they are evaluated in Python).  ``consts`` ends
    with the program's stack (``max(prog[1], 1)`` entries of scratch), so the compiled evaluation allocates
    nothing.

    Examples
    --------
    >>> from pympc.mechanics.expressions import parse
    >>> prog, consts = time_program([(0, 1, parse("2*sin(3*t)", {}, ("t",)))])
    >>> tF = np.zeros((1, 2))
    >>> bool(_kernels.run_time_program(0.5, prog, consts, tF)), bool(tF[0, 1] == 2 * np.sin(1.5))
    (True, True)
    """
    prog, consts = [len(functions), 0], []

    def emit(node, code, depth):
        """Append the code of ``node``; returns the stack depth it needs."""
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            consts.append(float(node.value))
            code += [_kernels.OP_CONST, len(consts) - 1]
            return depth + 1
        if isinstance(node, ast.Name) and node.id == "t":
            code += [_kernels.OP_T, 0]
            return depth + 1
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            d = max(emit(node.left, code, depth), emit(node.right, code, depth + 1))
            code += [_BINARY[type(node.op)], 0]
            return d
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            d = emit(node.operand, code, depth)
            code += [_kernels.OP_NEG, 0]
            return d
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _kernels.FUNCTIONS
                and len(node.args) == 1):
            d = emit(node.args[0], code, depth)
            code += [_kernels.OP_NEG + 1 + _kernels.FUNCTIONS.index(node.func.id), 0]
            return d
        raise ValueError(node)

    for i, j, expr in functions:
        code = []
        try:
            prog[1] = max(prog[1], emit(expr.node, code, 0))
        except (ValueError, RecursionError):
            return None
        prog += [i, j, len(code) // 2] + code
    return np.array(prog, dtype=np.int64), np.array(consts + [0.0] * max(prog[1], 1))


def _rot(phi):
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


@dataclass
class Assembly:
    """The equations of one state, in a formulation's own coordinates.

    ``M q̈ = h + Jᵀ ν + Σ_k (WN_k λ_k + WT_k F_k)`` with the constraint rows
    ``J q̈ + w = 0`` (bilateral joints) and ``WN q̈ + bN = 0`` (slots).

    Attributes
    ----------
    t : float
    M, h : ndarray
        Mass matrix and generalized applied + velocity-dependent forces.
    g, J, w, gdot, holonomic : ndarray
        Bilateral constraints: values, Jacobian, acceleration bias, ġ, and
        which rows are position-level.
    gN, WN, bN, vN : ndarray
        Slot gaps, normal Jacobians, normal acceleration biases, normal velocities.
    WT, bT, vT : ndarray
        Slot tangential Jacobians, tangential acceleration biases, slip velocities.
    kinetic, potential, power : float
        Kinetic and potential energy, power of the non-conservative applied forces.
    """

    t: float
    M: np.ndarray
    h: np.ndarray
    g: np.ndarray
    J: np.ndarray
    w: np.ndarray
    gdot: np.ndarray
    holonomic: np.ndarray
    gN: np.ndarray
    WN: np.ndarray
    bN: np.ndarray
    vN: np.ndarray
    WT: np.ndarray
    bT: np.ndarray
    vT: np.ndarray
    kinetic: float
    potential: float
    power: float


class _CompiledAssembly(Assembly):
    """An :class:`Assembly` made by :meth:`AbsoluteModel.assembly` in one compiled call: the same attributes, the
    kinetic and potential energy computed when first read (from the call's copies of q, q̇; most readers of an
    assembly never read them), in the arithmetic of :meth:`AbsoluteModel.evaluate`."""

    def __init__(self, t, M, h, g, J, w, gdot, holonomic, gN, WN, bN, vN, WT, bT, vT, power, model, q, qd, dV):
        self.t, self.M, self.h, self.g, self.J, self.w, self.gdot, self.holonomic = t, M, h, g, J, w, gdot, holonomic
        self.gN, self.WN, self.bN, self.vN, self.WT, self.bT, self.vT = gN, WN, bN, vN, WT, bT, vT
        self.power = power
        self._energy = (model, q, qd, dV)

    @property
    def kinetic(self):
        model, _, qd, _ = self._energy
        return 0.5 * float(qd @ (model.mass * qd))

    @property
    def potential(self):
        model, q, _, dV = self._energy
        V = -float(model._gravity @ q)
        if model._pair_names:
            V += dV
        return V


class SparseAssembly:
    """An :class:`Assembly` whose slot Jacobians are kept sparse (the compiled fast path).

    Same attributes as :class:`Assembly`; the dense ``M``, ``WN`` and ``WT`` are
    built on first access, from the diagonal mass and the slot rows
    ``sidx``/``snv``/``stv``/``snnz`` (coordinates and entries of each row).
    """

    __slots__ = ("t", "h", "g", "J", "w", "gdot", "holonomic", "gN", "bN", "vN", "bT", "vT",
                 "kinetic", "potential", "power", "mass", "rows", "_dense", "_arrays")

    def __init__(self, t, mass, h, joints, holonomic, slots, rows, kinetic, potential, power):
        self.t, self.mass, self.h, self.holonomic = t, mass, h, holonomic
        self.g, self.J, self.w, self.gdot = joints
        self.gN, self.bN, self.vN, self.bT, self.vT = slots
        self.rows = rows
        self.kinetic, self.potential, self.power = kinetic, potential, power
        self._dense = None

    def _densify(self):
        if self._dense is None:
            idx, nv, tv, nnz = self.rows
            ns, n = nnz.size, self.mass.size
            WN, WT = np.zeros((ns, n)), np.zeros((ns, n))
            for k in range(ns):
                WN[k, idx[k, :nnz[k]]] = nv[k, :nnz[k]]
                WT[k, idx[k, :nnz[k]]] = tv[k, :nnz[k]]
            self._dense = (np.diag(self.mass), WN, WT)
        return self._dense

    @property
    def M(self):
        return self._densify()[0]

    @property
    def WN(self):
        return self._densify()[1]

    @property
    def WT(self):
        return self._densify()[2]


class _Pose:
    """Absolute positions and velocities of every body at one state."""

    __slots__ = ("q", "qd", "offset", "rigid", "R")

    def __init__(self, model, q, qd):
        self.q, self.qd, self.offset, self.rigid = q, qd, model.offset, model.rigid
        self.R = {}

    def frame(self, b):
        """(r, phi, v, omega, R) of body index b (-1: ground)."""
        if b < 0:
            return _Z2, 0.0, _Z2, 0.0, _I2
        o = self.offset[b]
        if self.rigid[b]:
            phi = self.q[o + 2]
            R = self.R.get(b)
            if R is None:
                R = self.R[b] = _rot(phi)
            return self.q[o:o + 2], phi, self.qd[o:o + 2], self.qd[o + 2], R
        return self.q[o:o + 2], 0.0, self.qd[o:o + 2], 0.0, _I2

    def point(self, b, s):
        """Position, velocity, Jacobian columns, 2×k Jacobian block and q̇-quadratic acceleration of a point."""
        if b < 0:
            return s, _Z2, (), _Z20, _Z2
        r, _, v, w, R = self.frame(b)
        o = self.offset[b]
        if not self.rigid[b]:
            return r + s, v, (o, o + 1), _I2, _Z2
        Rs = R @ s
        return (r + Rs, v + w * (_E @ Rs), (o, o + 1, o + 2),
                np.array([[1.0, 0.0, -Rs[1]], [0.0, 1.0, Rs[0]]]), -w * w * Rs)


def _state(t, r, v, frame):
    """The variables of a force expression (``FORCE_VARIABLES``): time, the point's state, the body's angle."""
    return {"t": t, "x": r[0], "y": r[1], "vx": v[0], "vy": v[1], "phi": frame[1], "phidot": frame[3]}


class AbsoluteModel:
    """A System compiled for fast repeated evaluation in absolute coordinates.

    Parameters
    ----------
    system : System
    exclude : collection of str
        Names of joints to leave out (the tree method's tree joints).
    """

    def __init__(self, system, exclude=()):
        system.validate()
        self.system = system
        system = self._resolved = system.resolved()    # numbers: the parameters as bound now
        names = list(system.bodies)
        self.body_index = {n: i for i, n in enumerate(names)}
        self.rigid = [isinstance(b, RigidBody) for b in system.bodies.values()]
        self.offset, o = [], 0
        for b in system.bodies.values():
            self.offset.append(o)
            o += b.ncoord
        self.n = o
        self.coordinate_names = []
        for n, b in system.bodies.items():
            self.coordinate_names += [f"{n}.x", f"{n}.y"] + ([f"{n}.phi"] if self.rigid[self.body_index[n]] else [])
        z = []
        for b in system.bodies.values():
            z += [float(b.mass)] * 2 + ([float(b.inertia)] if isinstance(b, RigidBody) else [])
        self.mass = np.array(z)
        self.slots = system.slots
        self._joints = []
        self.m = 0
        for j in system.joints.values():
            if j.name in exclude or j.SLOT:
                continue
            if len(j.holonomic_rows) != j.nrows:
                raise ModelError(f"{j.name}: joint type {type(j).__name__} has {j.nrows} rows but says whether "
                                 f"{len(j.holonomic_rows)} are position-level (holonomic_rows); fix the class")
            self._joints.append((j, self.m, j.compile(self)))
            self.m += j.nrows
        self.holonomic = np.ones(self.m, dtype=bool)
        for j, r0, _ in self._joints:
            self.holonomic[r0:r0 + j.nrows] = j.holonomic_rows
        self.rheonomic = any(not parse(f, {}, ("t",), f"{j.name}: time function").is_constant
                             for j, _, _ in self._joints for f in j.time_functions())
        """True when some constraint depends explicitly on time (driven motion)."""
        # body columns for the compiled loops (_kernels): x column, phi column (-1 for a particle)
        self._bx = np.array(self.offset, dtype=np.int64)
        self._bphi = np.array([o + 2 if r else -1 for o, r in zip(self.offset, self.rigid)], dtype=np.int64)
        self._slot_table = Slot.table(self.slots, self)
        # the joint types with a compiled kernel of their own run it in python_parts; the others evaluate in Python
        by_type = {}
        for entry in self._joints:
            by_type.setdefault(type(entry[0]), []).append(entry)
        self._batches, self._other_joints = [], []
        for cls, entries in by_type.items():
            kernel = cls.batch(entries, self)
            if kernel is None:
                self._other_joints += entries
            else:
                self._batches.append(kernel)
        self._other_joints.sort(key=lambda e: e[1])
        self._J0 = np.zeros((0, self.n))
        self._J0.flags.writeable = False
        self._no_rows, self._no_jacobian = np.zeros(0), np.zeros((0, self.n))     # (evaluate, without joints)
        self._pair_names, self._pair_table = self._compile_pairs(
            [f for f in system.forces.values() if isinstance(f, (Spring, Damper))])
        forces = [(f, self._compile_force(f)) for f in system.forces.values() if isinstance(f, (PointForce, Torque))]
        # point forces of time alone (the common drive F(t)) go to a compiled loop; the others stay here
        timed = [(f, d) for f, d in forces if isinstance(f, PointForce) and not any(
            c.depends_on(v) for c in d[2] for v in FORCE_VARIABLES if v != "t")]
        self._forces = [(f, d) for f, d in forces if all(f is not g for g, _ in timed)]
        self._tbody = np.array([d[0] for _, d in timed], dtype=np.int64)
        self._tpoint = np.array([d[1] for _, d in timed], dtype=float).reshape(-1, 2)
        self._tF = np.array([[c.value if c.is_constant else 0.0 for c in d[2]] for _, d in timed]).reshape(-1, 2)
        self._tvary = [(i, j, c) for i, (_, d) in enumerate(timed) for j, c in enumerate(d[2]) if not c.is_constant]
        self._packed = None                    # what assembly() hands to its kernel (made at its first call)
        self._tables = None                    # pack_model's tables with the mass diagonal (model_tables)
        self._joint_packed = None              # (pack_joints' tables or None,) once made (joint_tables)
        self._time = None                      # (time_program of _tvary,) once made (time_tables)
        self._gravity = np.zeros(self.n)       # uniform gravity: a constant generalized force, V = −Q_g·q
        for f in system.forces.values():
            if isinstance(f, Gravity):
                gv = np.asarray(f.g, dtype=float)
                for i, b in enumerate(system.bodies.values()):
                    self._gravity[self.offset[i]:self.offset[i] + 2] += float(b.mass) * gv

    # ------------------------------------------------------------------ compile
    @property
    def equations(self):
        """The :class:`~pympc.mechanics.equations.Equations` of the model as bound (for joints that derive their
        rows from their residuals)."""
        eq = getattr(self, "_equations", None)
        if eq is None:
            eq = self._equations = Equations(self._resolved)
        return eq

    def body(self, name):
        """The index of body ``name`` (-1 for the ground)."""
        return -1 if name == GROUND else self.body_index[name]


    def _compile_pairs(self, forces):
        arr = lambda key: np.array([np.asarray(getattr(f, key), float) for f in forces]).reshape(-1, 2)  # noqa: E731
        spring = [isinstance(f, Spring) for f in forces]
        return ([f.name for f in forces],
                (np.array([self.body(f.body_a) for f in forces], dtype=np.int64),
                 np.array([self.body(f.body_b) for f in forces], dtype=np.int64),
                 arr("point_a"), arr("point_b"), np.array(spring, dtype=np.bool_),
                 np.array([float(f.k) if sp else 0.0 for f, sp in zip(forces, spring)]),
                 np.array([float(f.length) if sp else 0.0 for f, sp in zip(forces, spring)]),
                 np.array([0.0 if sp else float(f.c) for f, sp in zip(forces, spring)])))

    def _compile_force(self, f):
        if isinstance(f, PointForce):
            comps = [parse(c, {}, FORCE_VARIABLES, f"{f.name}.value[{i}]") for i, c in enumerate(f.value)]
            if len(comps) != 2:
                raise ModelError(f"{f.name}.value: a force has two components")
            constant = np.array([c.value for c in comps]) if all(c.is_constant for c in comps) else None
            return self.body(f.body), np.asarray(f.point, dtype=float), comps, constant
        return self.body(f.body), parse(f.value, {}, FORCE_VARIABLES, f"{f.name}.value")

    # ------------------------------------------------------------------ state
    def initial_state(self):
        """Absolute (q, q̇) from the bodies' initial positions and velocities."""
        q, qd = np.zeros(self.n), np.zeros(self.n)
        for i, b in enumerate(self._resolved.bodies.values()):
            o = self.offset[i]
            q[o:o + 2], qd[o:o + 2] = np.asarray(b.position, float), np.asarray(b.velocity, float)
            if self.rigid[i]:
                q[o + 2], qd[o + 2] = float(b.angle), float(b.angular_velocity)
        return q, qd

    # ------------------------------------------------------------------ evaluate
    def evaluate(self, q, qd, t):
        """Constraints, slots, applied forces and energies at absolute (q, q̇, t)."""
        n, m = self.n, self.m
        pose = _Pose(self, q, qd) if m or self._forces else None
        if m:
            g, J, w, gd = self._joint_rows(q, qd, t, pose)
        else:              # no joint rows: empty arrays made once (writable, as the kernels are compiled for them)
            g = w = gd = self._no_rows
            J = self._no_jacobian
        slots = _kernels.slot_rows(q, qd, self._bx, self._bphi, *self._slot_table, n)
        Q = self._gravity.copy()
        V = -float(self._gravity @ q)
        P = 0.0
        if self._pair_names:
            dV, dP, bad = _kernels.pair_forces(q, qd, self._bx, self._bphi, *self._pair_table, Q)
            if bad >= 0:
                raise ModelError(f"{self._pair_names[bad]}: spring of positive rest length has zero length; "
                                 "its direction is undefined")
            V += dV
            P += dP
        P += self._applied(q, qd, t, pose, Q)
        return (g, J, w, gd), slots, Q, 0.5 * float(qd @ (self.mass * qd)), V, P

    def assembly(self, q, qd, t, M, holonomic):
        """:meth:`evaluate` as an :class:`Assembly` of the general method (mass matrix ``M``, rows ``holonomic``) in
        one compiled call (:func:`_kernels.general_assembly`: the same numbers), for a model whose joints are all
        of types with a kernel :func:`_kernels.general_assembly` runs (pins: ``Revolute.batch``'s) and whose forces
        of the state are constant torques, or none; None where that call does not apply or does not decide (the
        caller evaluates)."""
        packed = self._packed
        if packed is None:
            packed = self._packed = self._pack_assembly()
        if not packed or type(q) is not np.ndarray or type(qd) is not np.ndarray:
            return None
        sf, si, prog, consts, tF0, iw, size, n, ns, jf, ji, m = packed
        buf = np.empty(size)
        code, dV, P = _kernels.general_assembly(q, qd, t, sf, si, prog, consts, tF0, iw, buf, jf, ji)
        if code != -1:
            return None
        o = n + 5 * ns
        WN, WT = buf[o:o + ns * n].reshape(ns, n), buf[o + ns * n:o + 2 * ns * n].reshape(ns, n)
        o += 2 * ns * n
        if m:
            j = o + 2 * n
            g, gd, w, J = buf[j:j + m], buf[j + m:j + 2 * m], buf[j + 2 * m:j + 3 * m], \
                buf[j + 3 * m:j + 3 * m + m * n].reshape(m, n)
        else:
            g = gd = w = self._no_rows
            J = self._no_jacobian
        return _CompiledAssembly(t, M, buf[:n], g, J, w, gd, holonomic, buf[n:n + ns], WN,
                                 buf[n + ns:n + 2 * ns], buf[n + 2 * ns:n + 3 * ns], WT, buf[n + 3 * ns:n + 4 * ns],
                                 buf[n + 4 * ns:o - 2 * ns * n], P, self, buf[o:o + n], buf[o + n:o + 2 * n], dV)

    def _pack_assembly(self):
        """What :meth:`assembly` hands to its kernel (made once), or () where it does not apply: joints other than
        pins (:func:`_kernels.revolute_rows`, by ``Revolute.batch``), forces of the state other than constant torques
        on rigid bodies, or point forces of time that are no time program."""
        tp = self.time_tables()
        joints = self.joint_tables()
        if joints is None or tp is None:
            return ()
        jf, ji = joints
        sf, si = self.model_tables()
        ns, nt = len(self.slots), self._tbody.size
        size, isize = _kernels.assembly_layout(self.n, ns, nt, self.m)
        return (sf, si, tp[0], tp[1], np.ascontiguousarray(self._tF, dtype=float).reshape(nt, 2),
                np.zeros(isize, np.int64), size, self.n, ns, jf, ji, self.m)

    def joint_tables(self):
        """``(jf, ji)``: the joints and forces of the state as the compiled calls read them (:func:`_kernels.pack_joints`:
        the pins' arguments of :func:`_kernels.revolute_rows`, made by ``Revolute.batch``, and the constant torques'
        angle columns and values), made once per model (never written: the
        kernels take them as they take every table, writable); None where a joint is not a pin, a row is
        not position-level, or a force of the state is not a constant torque on a rigid body (then they are
        evaluated in Python: :meth:`python_parts`)."""
        if self._joint_packed is None:
            self._joint_packed = (self._pack_joints(),)
        return self._joint_packed[0]

    def _pack_joints(self):
        pins = [args for kernel, args in self._batches if kernel is _kernels.revolute_rows]
        if self._other_joints or len(pins) != len(self._batches) or not self.holonomic.all():
            return None
        torques = []
        for f, data in self._forces:
            if not isinstance(f, Torque) or not data[1].is_constant or data[0] < 0 or self._bphi[data[0]] < 0:
                return None
            torques.append((int(self._bphi[data[0]]), data[1].value))
        jf, ji = _kernels.pack_joints(self.m, pins[0] if pins else None, torques)
        return jf, ji

    def model_tables(self):
        """``(sf, si)``: the static tables of :func:`_kernels.pack_model` with the mass diagonal last (what
        :meth:`assembly` hands to its kernel), made once per model and read only: the compiled mode solve
        (:class:`~pympc.dynamics.modes.CompiledModes`) takes ``si`` and a copy of ``sf`` with ``1/m`` last
        instead of packing the model again."""
        tables = self._tables
        if tables is None:
            tables = self._tables = _kernels.pack_model(self._slot_table, self._pair_table, self._bx, self._bphi,
                                                        self._tbody, self._tpoint, self._gravity, self.mass)
        return tables

    def time_tables(self):
        """``time_program`` of the point forces of time alone (``(prog, consts)``, or None where it does not apply),
        made once per model: ``prog`` is read only and shared, ``consts`` a copy for each caller (its end is the
        program's stack, which every kernel that runs it writes)."""
        if self._time is None:
            self._time = (time_program(self._tvary),)
        tp = self._time[0]
        return None if tp is None else (tp[0], tp[1].copy())

    def _applied(self, q, qd, t, pose, Q):
        """Add the point forces and torques to Q; returns their power."""
        P = 0.0
        if self._tbody.size:
            F = self._tF if not self._tvary else self._time_forces(t)
            P += _kernels.apply_point_forces(q, qd, self._bx, self._bphi, self._tbody, self._tpoint, F, Q)
        for f, data in self._forces:
            P += self._force(f, data, pose or _Pose(self, q, qd), t, Q)
        return P

    def _time_forces(self, t):
        """The point forces of time alone at ``t`` (a new array)."""
        F = self._tF.copy()
        for i, j, c in self._tvary:
            F[i, j] = c(t=t)
        return F

    def joint_bodies(self):
        """For every joint row, the indices of the bodies whose coordinates it may involve."""
        rows = [()] * self.m
        for j, r0, _ in self._joints:
            bodies = tuple(self.body(nm) for nm in j.bodies() if nm != GROUND)
            for r in range(r0, r0 + j.nrows):
                rows[r] = bodies
        return rows

    def python_parts(self, q, qd, t, stab, time_forces=True):
        """What the compiled mode solve (:func:`_kernels.general_mode`) takes from Python (for a model whose
        :meth:`joint_tables` are None: pins and constant torques alone are evaluated with the solve,
        :func:`_kernels.joint_mode`).

        Returns ``((g, J, w, gd), bI, F, Qx, Px)``: the joint rows and their
        acceleration bias with the Baumgarte terms of ``stab``, the values of the
        point forces of time alone (None unless ``time_forces``: the compiled
        :func:`time_program` gives them), and the generalized forces and power of
        the forces that depend on the state (``Qx`` empty when there are none).
        """
        m = self.m
        pose = None
        if m:
            if self._other_joints:
                pose = _Pose(self, q, qd)
            g, J, w, gd = self._joint_rows(q, qd, t, pose)
            al, be = stab.alpha, stab.beta
            bI = w + 2 * al * gd + be * be * np.where(self.holonomic, g, 0.0)
        else:
            g = w = gd = bI = EMPTY
            J = self._J0
        F = self._tF if time_forces else None
        if self._tvary and time_forces:
            F = self._time_forces(t)
        Qx, Px = EMPTY, 0.0
        if self._forces:
            Qx = np.zeros(self.n)
            pose = pose or _Pose(self, q, qd)
            for f, data in self._forces:
                Px += self._force(f, data, pose, t, Qx)
        return (g, J, w, gd), bI, F, Qx, Px

    def _joint_rows(self, q, qd, t, pose):
        """``(g, J, w, gd)`` of every joint at (q, q̇, t): the joint types with a compiled kernel of their own by it
        (:meth:`~pympc.mechanics.joints.Joint.batch`), the others in Python on ``pose``."""
        m, n = self.m, self.n
        g, J, w, gd = np.zeros(m), np.zeros((m, n)), np.zeros(m), np.zeros(m)
        if self._batches:        # contiguous: one compiled specialization of each kernel, whoever calls
            qc = q if q.flags.c_contiguous else np.ascontiguousarray(q)
            qdc = qd if qd.flags.c_contiguous else np.ascontiguousarray(qd)
        for kernel, args in self._batches:
            kernel(qc, qdc, self._bx, self._bphi, *args, g, J, w, gd)
        for j, r0, data in self._other_joints:
            j.evaluate(data, pose, t, g[r0:], J[r0:], w[r0:], gd[r0:])
        return g, J, w, gd

    def _force(self, f, data, pose, t, Q):
        """Point forces and torques (expressions of time and state); returns their power."""
        if isinstance(f, PointForce):
            b, s, comps, F = data
            r, v, cols, JP, _ = pose.point(b, s)
            if F is None:
                env = _state(t, r, v, pose.frame(b))
                F = np.array([comps[0](**env), comps[1](**env)])
            _add(Q, cols, F @ JP)
            return float(F @ v)
        b, expr = data
        frame = pose.frame(b)
        tau = expr(**_state(t, frame[0], frame[2], frame))
        Q[self.offset[b] + 2] += tau
        return float(tau * frame[3])
