"""Joints: one class per joint type, owning its equations.

A joint type is a dataclass subclass of :class:`Joint` with a ``TYPE`` name
(what a model file's ``type = "..."`` says; defining the class registers it in
:data:`JOINT_TYPES`, also from outside the package) and ``FIELDS`` (name →
kind, as in the model file).  It owns:

* its number of rows (:attr:`Joint.nrows`) and which are position-level
  (:attr:`Joint.holonomic_rows`; velocity-level rows such as rolling have g = 0);
* its numeric rows (:meth:`Joint.compile` once, then :meth:`Joint.evaluate`:
  g, the Jacobian row J, ġ = J q̇ + ∂g/∂t and the acceleration bias w with
  g̈ = J q̈ + w), used by both formulations;
* optionally a compiled kernel for all joints of its type (:meth:`Joint.batch`),
  which the compiled mode solve calls instead of :meth:`Joint.evaluate`;
* its position-level residuals for the whole-trajectory MPEC
  (:meth:`Joint.residuals`, written once for any arithmetic), or None when its
  rows are velocity-level;
* the validation of its fields (:meth:`Joint.validate`), the bodies it involves
  and its functions of time;
* whether it can be a tree joint of the tree method (:meth:`Joint.tree_link`).

Assembly, the tree method, the model file and the MPEC ask the joint; none of
them dispatches on its type.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ModelError
from .expressions import parse
from .symbolic import OPS, DerivedRows, Sym

__all__ = ["GROUND", "JOINT_TYPES", "Joint", "Checker", "Revolute", "Slot", "Rolling", "Gear", "Distance",
           "Prescribed"]

GROUND = "ground"
JOINT_TYPES = {}
"""Joint classes by their model-file ``type`` name (filled by :meth:`Joint.__init_subclass__`)."""

_E = np.array([[0.0, -1.0], [1.0, 0.0]])
for _a in (_E,):
    _a.flags.writeable = False


def _vec(v, where):
    if type(v) is tuple and len(v) == 2 and type(v[0]) is float and type(v[1]) is float:
        if math.isfinite(v[0]) and math.isfinite(v[1]):      # the common case, without numpy's overhead
            return v
    a = np.asarray(v, dtype=float).reshape(-1)
    if a.shape != (2,) or not np.all(np.isfinite(a)):
        raise ModelError(f"{where}: expected two finite numbers, got {v!r}")
    return a


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.hypot(*v)


def _add(row, cols, vals):
    for c, v in zip(cols, vals):
        row[c] += v


class Checker:
    """Collects the problems of elements checked against the bodies of a (resolved) system.

    Parameters
    ----------
    bodies : mapping
        Body name → body (its ``ncoord`` is 3 for a rigid body).

    Attributes
    ----------
    problems : list of str
    """

    def __init__(self, bodies):
        self.bodies = bodies
        self.problems = []

    def add(self, message):
        """Record one problem (``"element.field: what is wrong"``)."""
        self.problems.append(message)

    def body(self, owner, attr, allow_ground=True, rigid=False):
        """``owner.attr`` names a body (or the ground, if allowed), a rigid one if ``rigid``."""
        b = getattr(owner, attr)
        if b == GROUND:
            if not allow_ground:
                self.add(f"{owner.name}.{attr}: cannot be the ground")
            return
        if b not in self.bodies:
            self.add(f"{owner.name}.{attr}: unknown body {b!r} (bodies: {', '.join([GROUND, *self.bodies])})")
        elif rigid and self.bodies[b].ncoord != 3:
            self.add(f"{owner.name}.{attr}: {b!r} must be a rigid body")

    def finite(self, owner, attr, positive=False, nonneg=False):
        """``owner.attr`` is a finite number (> 0 if ``positive``, >= 0 if ``nonneg``)."""
        v = getattr(owner, attr)
        try:
            v = float(v)
        except (TypeError, ValueError):
            self.add(f"{owner.name}.{attr}: expected a number, got {v!r}")
            return
        if not math.isfinite(v):
            self.add(f"{owner.name}.{attr}: must be finite, got {v}")
        elif positive and v <= 0:
            self.add(f"{owner.name}.{attr}: must be > 0, got {v}")
        elif nonneg and v < 0:
            self.add(f"{owner.name}.{attr}: must be >= 0, got {v}")

    def vector(self, owner, attr, unit=False):
        """``owner.attr`` is two finite numbers (not zero if ``unit``: a direction)."""
        try:
            v = _vec(getattr(owner, attr), f"{owner.name}.{attr}")
        except ModelError as exc:
            self.add(str(exc))
            return
        if unit and math.hypot(*v) < 1e-12:
            self.add(f"{owner.name}.{attr}: zero-length direction {tuple(v)}")


@dataclass
class Joint:
    """Base of every joint type; see the module docstring for the contract.

    A subclass is a dataclass with the field ``name`` first, a ``TYPE`` (its
    model-file name; giving one registers the class) and ``FIELDS`` (field →
    kind: ``"name"`` a body, ``"num"``, ``"vec"``, ``"time"`` a function of
    ``t``, ``"str"``, ``"bool"``; numbers may be expressions of the parameters).
    It implements :meth:`compile` and :meth:`evaluate`; the rest has defaults.

    Examples
    --------
    >>> JOINT_TYPES["revolute"] is Revolute, Revolute("O", "ground", "a").nrows
    (True, 2)
    """

    TYPE: ClassVar[str | None] = None
    FIELDS: ClassVar[dict] = {}
    ROWS: ClassVar[int] = 1
    """Number of bilateral rows (class default of :attr:`nrows`)."""
    REQUIRED: ClassVar[tuple | None] = None
    """Keys a model file must give (default: the fields without a default value)."""
    SLOT: ClassVar[bool] = False
    """True for the friction slot (unilateral rows handled by the event HLCP, no bilateral rows)."""
    residuals: ClassVar = None
    """``residuals(self, eq, q, t, env, ops=math)`` → the position-level rows g(q, t) as a list, written once for
    any arithmetic (``eq``: an :class:`~pympc.mechanics.equations.Equations`, whose ``point`` and ``value`` give
    body points and fields; floats with ``math``, Pyomo with ``pyomo.environ``, symbols with
    :data:`~pympc.mechanics.symbolic.OPS`).  None for a joint with velocity-level rows (rolling, gear): the MPEC
    refuses it, and it needs its own :meth:`compile` and :meth:`evaluate`."""
    name: str

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        t = cls.__dict__.get("TYPE")
        if t is None:
            return
        if not isinstance(t, str) or not t.isidentifier():
            raise ModelError(f"joint class {cls.__qualname__}: TYPE must be an identifier string, got {t!r}")
        old = JOINT_TYPES.get(t)
        if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
            raise ModelError(f"joint class {cls.__module__}.{cls.__qualname__}: type {t!r} is already the joint "
                             f"{old.__module__}.{old.__qualname__}; choose another TYPE")
        JOINT_TYPES[t] = cls

    @classmethod
    def required_keys(cls):
        """The keys a model file must give for this joint type."""
        if cls.REQUIRED is not None:
            return tuple(cls.REQUIRED)
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "name" and f.name in cls.FIELDS
                     and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)

    # ------------------------------------------------------------------ structure
    @property
    def nrows(self):
        """Number of bilateral constraint rows."""
        return 0 if self.SLOT else self.ROWS

    @property
    def holonomic_rows(self):
        """Per row, True when it is position-level (False: a velocity-level row, g = 0)."""
        return (True,) * self.nrows

    def bodies(self):
        """Names of the bodies the rows involve (the ``"name"`` fields; may include the ground)."""
        return tuple(getattr(self, f) for f, kind in self.FIELDS.items() if kind == "name")

    def time_functions(self):
        """The fields that are functions of time (numbers or Expressions)."""
        return tuple(getattr(self, f) for f, kind in self.FIELDS.items() if kind == "time")

    def tree_link(self):
        """``((body_a, point_a), (body_b, point_b))`` if the joint can be a tree joint (a pin), else None."""
        return None

    def validate(self, check):
        """Report problems of the fields (as numbers) to ``check`` (a :class:`Checker`).

        The default: every body name known, every number finite, every vector two finite numbers.
        """
        for f, kind in self.FIELDS.items():
            if kind == "name":
                check.body(self, f)
            elif kind == "num" and getattr(self, f) is not None:
                check.finite(self, f)
            elif kind == "vec":
                check.vector(self, f)

    # ------------------------------------------------------------------ numeric rows
    def compile(self, model):
        """The joint's numbers for :meth:`evaluate`, once per compiled model.

        ``model`` (an :class:`~pympc.mechanics.assembly.AbsoluteModel`) gives ``model.body(name)`` (index, -1
        for the ground), ``model.offset``, ``model.rigid`` and ``model.equations`` (its
        :class:`~pympc.mechanics.equations.Equations`).  The default derives the rows from :meth:`residuals`
        by symbolic differentiation (:class:`~pympc.mechanics.symbolic.DerivedRows`): a joint whose rows are
        all position-level needs nothing but its residuals.
        """
        if self.residuals is None or not all(self.holonomic_rows):
            raise NotImplementedError(f"joint type {type(self).__name__}: velocity-level rows (or no residuals) "
                                      "need their own compile() and evaluate()")
        eq = model.equations
        q = [Sym.var(f"q{c}") for c in range(eq.n)]
        rows = self.residuals(eq, q, Sym.var("t"), eq.parameters(), OPS)
        if len(rows) != self.nrows:
            raise ModelError(f"{self.name}: joint type {type(self).__name__} has {self.nrows} rows (ROWS) but "
                             f"residuals() gives {len(rows)}; fix the class")
        return DerivedRows(rows, eq.n, self.name)

    def evaluate(self, data, pose, t, g, J, w, gd):
        """Write the rows at one state: ``g``, ``J`` (rows × n), ``w`` (g̈ = J q̈ + w) and ``gd`` (ġ), each
        starting at this joint's first row.  ``pose.point(b, s)`` gives ``(r, v, columns, 2×k Jacobian block,
        q̇-quadratic acceleration)`` of a body point, ``pose.frame(b)`` ``(r, phi, v, omega, R)``.  The default
        evaluates the rows the default :meth:`compile` derived from :meth:`residuals`."""
        data.evaluate(pose.q, pose.qd, t, g, J, w, gd)

    @classmethod
    def batch(cls, entries, model):
        """A compiled kernel for all joints of this type: ``(kernel, args)`` called as
        ``kernel(q, qd, bx, bphi, *args, g, J, w, gd)``, or None (then :meth:`evaluate` runs per joint).
        ``entries`` are ``(joint, first row, compiled data)``."""
        return None


def _point_pair(pose, data):
    ba, sa, bb, sb = data[:4]
    return pose.point(ba, sa), pose.point(bb, sb)


@dataclass
class Revolute(Joint):
    """A pin joint: point ``point_a`` of ``body_a`` coincides with ``point_b`` of ``body_b``."""

    TYPE: ClassVar[str] = "revolute"
    FIELDS: ClassVar[dict] = {"body_a": "name", "body_b": "name", "point_a": "vec", "point_b": "vec"}
    ROWS: ClassVar[int] = 2
    body_a: str
    body_b: str
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)

    def tree_link(self):
        """A pin can be a tree joint: ``((body_a, point_a), (body_b, point_b))``."""
        return (self.body_a, self.point_a), (self.body_b, self.point_b)

    def validate(self, check):
        """Known bodies, finite points, not a body with itself."""
        check.body(self, "body_a"), check.body(self, "body_b"), check.vector(self, "point_a")
        check.vector(self, "point_b")
        if self.body_a == self.body_b:
            check.add(f"{self.name}: joins {self.body_a!r} to itself")

    def compile(self, model):
        """Body indices and points."""
        return (model.body(self.body_a), np.asarray(self.point_a, float), model.body(self.body_b),
                np.asarray(self.point_b, float))

    def evaluate(self, data, pose, t, g, J, w, gd):
        """r_a − r_b (two rows)."""
        (ra, va, ca, Ja, aa), (rb, vb, cb, Jb, ab) = _point_pair(pose, data)
        for i in range(2):
            g[i] = ra[i] - rb[i]
            gd[i] = va[i] - vb[i]
            w[i] = aa[i] - ab[i]
            _add(J[i], ca, Ja[i])
            _add(J[i], cb, -Jb[i])

    @classmethod
    def batch(cls, entries, model):
        """The compiled loop :func:`~pympc.mechanics._kernels.revolute_rows` over every pin."""
        from . import _kernels
        return _kernels.revolute_rows, (np.array([r0 for _, r0, _ in entries], dtype=np.int64),
                                        np.array([d[0] for _, _, d in entries], dtype=np.int64),
                                        np.array([d[1] for _, _, d in entries], dtype=float).reshape(-1, 2),
                                        np.array([d[2] for _, _, d in entries], dtype=np.int64),
                                        np.array([d[3] for _, _, d in entries], dtype=float).reshape(-1, 2))

    def residuals(self, eq, q, t, env, ops=math):
        """r_a − r_b with any arithmetic (see :class:`~pympc.mechanics.equations.Equations`)."""
        ra = eq.point(q, self.body_a, self.point_a, env, ops)
        rb = eq.point(q, self.body_b, self.point_b, env, ops)
        return [ra[0] - rb[0], ra[1] - rb[1]]


@dataclass
class Slot(Joint):
    """A translational joint with Coulomb friction (see the conventions of :mod:`pympc.mechanics.system`).

    ``mu`` is the kinetic coefficient, ``mu_s`` the static one (default ``mu``).  Its rows are the
    unilateral normal and tangential ones of the event HLCP (the slot table of the assembly), not
    bilateral rows.
    """

    TYPE: ClassVar[str] = "slot"
    FIELDS: ClassVar[dict] = {"slider": "name", "guide": "name", "direction": "vec", "origin": "vec", "point": "vec",
                              "mu": "num", "mu_s": "num"}
    SLOT: ClassVar[bool] = True
    slider: str
    guide: str
    direction: tuple = (1.0, 0.0)
    origin: tuple = (0.0, 0.0)
    point: tuple = (0.0, 0.0)
    mu: float = 0.0
    mu_s: float | None = None

    @property
    def static_mu(self):
        """The static coefficient (``mu_s``, or ``mu`` when not given)."""
        return self.mu if self.mu_s is None else self.mu_s

    def validate(self, check):
        """A slider that is a body, a guide, a direction, μ ≥ 0 and μ_s ≥ μ."""
        check.body(self, "slider", allow_ground=False), check.body(self, "guide")
        check.vector(self, "direction", unit=True), check.vector(self, "origin"), check.vector(self, "point")
        check.finite(self, "mu", nonneg=True)
        if self.mu_s is not None:
            check.finite(self, "mu_s", nonneg=True)
            try:
                if float(self.mu_s) < float(self.mu):
                    check.add(f"{self.name}.mu_s: static coefficient {self.mu_s} is below mu = {self.mu}")
            except (TypeError, ValueError):
                pass
        if self.slider == self.guide:
            check.add(f"{self.name}: slider and guide are the same body {self.slider!r}")

    @staticmethod
    def table(slots, model):
        """The slots as the arrays of the compiled slot kernels (:func:`~pympc.mechanics._kernels.slot_into`:
        gap, normal and tangent rows, slip velocity): slider and guide indices, points, origins, unit directions."""
        arr = lambda key: np.array([np.asarray(getattr(sl, key), float) for sl in slots]).reshape(-1, 2)  # noqa: E731
        d = arr("direction")
        return (np.array([model.body(sl.slider) for sl in slots], dtype=np.int64),
                np.array([model.body(sl.guide) for sl in slots], dtype=np.int64),
                arr("point"), arr("origin"), d / np.hypot(d[:, 0], d[:, 1])[:, None])

    def frame(self, eq, q, env, ops=math):
        """(slider point P, guide line origin A, direction u, normal n) in world axes, with any arithmetic
        (see :class:`~pympc.mechanics.equations.Equations`)."""
        gb = eq.body(self.guide)
        d = eq._vec(self.direction, env, ops)
        norm = ops.sqrt(d[0] * d[0] + d[1] * d[1])
        u = eq.rotated(q, gb, (d[0] / norm, d[1] / norm), ops)
        return (eq.point(q, self.slider, self.point, env, ops), eq.point(q, self.guide, self.origin, env, ops),
                u, (-u[1], u[0]))


@dataclass
class Rolling(Joint):
    """A disc (a rigid body, centroid at its centre) rolling without slip on a fixed line.

    The disc lies on the +n side of the line (``n`` = ``direction`` turned +90°).
    """

    TYPE: ClassVar[str] = "rolling"
    FIELDS: ClassVar[dict] = {"disc": "name", "radius": "num", "direction": "vec", "origin": "vec"}
    ROWS: ClassVar[int] = 2
    disc: str
    radius: float
    direction: tuple = (1.0, 0.0)
    origin: tuple = (0.0, 0.0)

    @property
    def holonomic_rows(self):
        """Contact (position level), then no slip (velocity level)."""
        return (True, False)

    def validate(self, check):
        """A rigid disc, radius > 0, a direction."""
        check.body(self, "disc", allow_ground=False, rigid=True)
        check.finite(self, "radius", positive=True), check.vector(self, "direction", unit=True)
        check.vector(self, "origin")

    def compile(self, model):
        """Disc index, radius, unit direction, origin."""
        return model.body(self.disc), float(self.radius), _unit(self.direction), np.asarray(self.origin, float)

    def evaluate(self, data, pose, t, g, J, w, gd):
        """n·(r − A) − R = 0 and the no-slip row u·v + R ω = 0."""
        b, R, u, A = data
        r, _, v, om, _ = pose.frame(b)
        nn = _E @ u
        o = pose.offset[b]
        g[0], gd[0] = nn @ (r - A) - R, nn @ v
        J[0, o:o + 2] = nn
        gd[1] = u @ v + R * om
        J[1, o:o + 2] = u
        J[1, o + 2] = R


@dataclass
class Gear(Joint):
    """Two gears (discs centred at ``center_a``/``center_b`` of their bodies) meshing without slip.

    ``internal=True`` when gear b runs inside gear a (a ring).  The centre
    distance is kept by other joints.
    """

    TYPE: ClassVar[str] = "gear"
    FIELDS: ClassVar[dict] = {"body_a": "name", "radius_a": "num", "body_b": "name", "radius_b": "num",
                              "center_a": "vec", "center_b": "vec", "internal": "bool"}
    body_a: str
    radius_a: float
    body_b: str
    radius_b: float
    center_a: tuple = (0.0, 0.0)
    center_b: tuple = (0.0, 0.0)
    internal: bool = False

    @property
    def holonomic_rows(self):
        """One velocity-level row."""
        return (False,)

    def validate(self, check):
        """Known bodies, radii > 0, finite centres, not a body with itself."""
        check.body(self, "body_a"), check.body(self, "body_b")
        check.finite(self, "radius_a", positive=True), check.finite(self, "radius_b", positive=True)
        check.vector(self, "center_a"), check.vector(self, "center_b")
        if self.body_a == self.body_b:
            check.add(f"{self.name}: meshes {self.body_a!r} with itself")

    def compile(self, model):
        """Body indices, radii, centres, and the sign of b's rolling (−1 inside a ring)."""
        v = lambda a: np.asarray(a, dtype=float)  # noqa: E731
        return (model.body(self.body_a), float(self.radius_a), v(self.center_a),
                model.body(self.body_b), float(self.radius_b), v(self.center_b), -1.0 if self.internal else 1.0)

    def evaluate(self, data, pose, t, g, J, w, gd):
        """No slip at the pitch point: t·(v_a − v_b) + R_a ω_a ± R_b ω_b = 0."""
        ba, Ra, sa, bb, Rb, sb, sign = data
        ra, va, ca, Ja, aa = pose.point(ba, sa)
        rb, vb, cb, Jb, ab = pose.point(bb, sb)
        D = np.hypot(*(rb - ra))
        if D < 1e-12:
            raise ModelError(f"{self.name}: the gear centres coincide; the mesh direction is undefined")
        e = (rb - ra) / D
        tt = _E @ e
        edot = (vb - va - e * (e @ (vb - va))) / D
        _add(J[0], ca, tt @ Ja)
        _add(J[0], cb, -(tt @ Jb))
        wa = pose.frame(ba)[3]
        wb = pose.frame(bb)[3]
        if ba >= 0 and pose.rigid[ba]:
            J[0, pose.offset[ba] + 2] += Ra
        if bb >= 0 and pose.rigid[bb]:
            J[0, pose.offset[bb] + 2] += sign * Rb
        gd[0] = tt @ (va - vb) + Ra * wa + sign * Rb * wb
        w[0] = (_E @ edot) @ (va - vb) + tt @ (aa - ab)


@dataclass
class Distance(Joint):
    """A massless rod or taut string: ``|r_a − r_b| = length(t)``."""

    TYPE: ClassVar[str] = "distance"
    FIELDS: ClassVar[dict] = {"body_a": "name", "body_b": "name", "length": "time", "point_a": "vec", "point_b": "vec"}
    REQUIRED: ClassVar[tuple] = ("body_a", "body_b", "length")
    body_a: str
    body_b: str
    length: object = 1.0
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)

    def validate(self, check):
        """Known bodies, finite points."""
        check.body(self, "body_a"), check.body(self, "body_b"), check.vector(self, "point_a")
        check.vector(self, "point_b")

    def compile(self, model):
        """Bodies, points, and L(t), L', L''."""
        L = parse(self.length, {}, ("t",), f"{self.name}.length")
        dL = L.diff("t")
        return (model.body(self.body_a), np.asarray(self.point_a, float), model.body(self.body_b),
                np.asarray(self.point_b, float), L, dL, dL.diff("t"))

    def evaluate(self, data, pose, t, g, J, w, gd):
        """½(|r_a − r_b|² − L(t)²)."""
        (ra, va, ca, Ja, aa), (rb, vb, cb, Jb, ab) = _point_pair(pose, data)
        L, dL, ddL = data[4:]
        d, dd = ra - rb, va - vb
        Lt, dLt, ddLt = L(t=t), dL(t=t), ddL(t=t)
        g[0] = 0.5 * (d @ d - Lt * Lt)
        gd[0] = d @ dd - Lt * dLt
        w[0] = dd @ dd + d @ (aa - ab) - dLt * dLt - Lt * ddLt
        _add(J[0], ca, d @ Ja)
        _add(J[0], cb, -(d @ Jb))

    def residuals(self, eq, q, t, env, ops=math):
        """½(|r_a − r_b|² − L²) with any arithmetic."""
        ra = eq.point(q, self.body_a, self.point_a, env, ops)
        rb = eq.point(q, self.body_b, self.point_b, env, ops)
        L = eq.value(self.length, env, ops, {"t": t})
        return [0.5 * ((ra[0] - rb[0]) ** 2 + (ra[1] - rb[1]) ** 2 - L * L)]


@dataclass
class Prescribed(Joint):
    """Rheonomic motion of one coordinate (``"x"``, ``"y"`` or ``"phi"``) of a body: q = value(t).

    A constant ``phi`` fixes a body's rotation (a translating-only slider body).
    """

    TYPE: ClassVar[str] = "prescribed"
    FIELDS: ClassVar[dict] = {"body": "name", "coordinate": "str", "value": "time"}
    REQUIRED: ClassVar[tuple] = ("body", "coordinate", "value")
    body: str
    coordinate: str
    value: object = 0.0

    def validate(self, check):
        """A body, a coordinate it has."""
        check.body(self, "body", allow_ground=False)
        if self.coordinate not in ("x", "y", "phi"):
            check.add(f"{self.name}.coordinate: must be 'x', 'y' or 'phi', got {self.coordinate!r}")
        elif self.coordinate == "phi" and self.body in check.bodies and check.bodies[self.body].ncoord != 3:
            check.add(f"{self.name}: a particle has no angle to prescribe")

    def compile(self, model):
        """The coordinate's column and f(t), f', f''."""
        f = parse(self.value, {}, ("t",), f"{self.name}.value")
        df = f.diff("t")
        return model.offset[model.body(self.body)] + ("x", "y", "phi").index(self.coordinate), f, df, df.diff("t")

    def evaluate(self, data, pose, t, g, J, w, gd):
        """q_c − f(t)."""
        c, f, df, ddf = data
        g[0] = pose.q[c] - f(t=t)
        gd[0] = pose.qd[c] - df(t=t)
        w[0] = -ddf(t=t)
        J[0, c] = 1.0

    def residuals(self, eq, q, t, env, ops=math):
        """q_c − f(t) with any arithmetic."""
        c = eq.offset[eq.body(self.body)] + ("x", "y", "phi").index(self.coordinate)
        return [q[c] - eq.value(self.value, env, ops, {"t": t})]
