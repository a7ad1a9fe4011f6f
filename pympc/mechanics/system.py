"""Bodies, joints, forces and the :class:`System` that holds them.

A System only *describes* a mechanism; the formulations
(:class:`~pympc.mechanics.GeneralMethod`, :class:`~pympc.mechanics.TreeMethod`)
turn it into equations.  Bodies and elements refer to each other by name;
``"ground"`` is always there.

Conventions
-----------
* A rigid body has coordinates ``(x, y, phi)`` of its centroid and angle; a
  particle has ``(x, y)``.  Points on a body are given in its own frame.
* A slot's guide line passes through ``origin`` (in the guide's frame) along
  ``direction`` (normalized).  Its normal ``n`` is ``direction`` turned by +90°.
  The slot's normal force is ``λ n`` on the slider (and ``−λ n`` on the guide):
  **λ > 0 when the slider bears on the wall on the −n side** (for a horizontal
  slot pointing +x, the lower wall), λ < 0 on the other wall.  The friction force
  ``F`` acts along ``direction`` on the slider and opposite on the guide; the
  slip velocity is the slider's velocity relative to the guide point under it,
  along ``direction``.
* Time functions (prescribed motion, forces) are :class:`Expression` objects
  or anything :func:`~pympc.mechanics.expressions.parse` accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ..errors import ModelError
from .expressions import Expression, parse

__all__ = [
    "Body", "RigidBody", "Particle", "Revolute", "Slot", "Rolling", "Gear", "Distance", "Prescribed",
    "Gravity", "PointForce", "Torque", "Spring", "Damper", "System", "GROUND",
]

GROUND = "ground"
FORCE_VARIABLES = ("t", "x", "y", "vx", "vy", "phi", "phidot")
"""Variables a force expression may use: time and the state of its point/body."""


def _vec(v, where):
    a = np.asarray(v, dtype=float).reshape(-1)
    if a.shape != (2,) or not np.all(np.isfinite(a)):
        raise ModelError(f"{where}: expected two finite numbers, got {v!r}")
    return a


def _expr(v, where, variables=("t",)):
    return v if isinstance(v, Expression) else parse(v, {}, variables, where)


@dataclass
class Body:
    """Common part of bodies: name, mass and initial state."""

    name: str
    mass: float
    position: tuple = (0.0, 0.0)
    velocity: tuple = (0.0, 0.0)

    @property
    def ncoord(self):
        return 2


@dataclass
class RigidBody(Body):
    """A planar rigid body: centroid ``(x, y)``, angle ``phi``, centroidal inertia.

    Examples
    --------
    >>> RigidBody("crank", mass=1.0, inertia=0.1, angle=0.5).ncoord
    3
    """

    inertia: float = 0.0
    angle: float = 0.0
    angular_velocity: float = 0.0

    @property
    def ncoord(self):
        return 3


@dataclass
class Particle(Body):
    """A point mass ``(x, y)``; it can carry a slot (its frame translates, never rotates).

    Examples
    --------
    >>> Particle("bead", mass=0.1, position=(1.0, 0.0)).ncoord
    2
    """


@dataclass
class Revolute:
    """A pin joint: point ``point_a`` of ``body_a`` coincides with ``point_b`` of ``body_b``."""

    name: str
    body_a: str
    body_b: str
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)


@dataclass
class Slot:
    """A translational joint with Coulomb friction (see the module conventions).

    ``mu`` is the kinetic coefficient, ``mu_s`` the static one (default ``mu``).
    """

    name: str
    slider: str
    guide: str
    direction: tuple = (1.0, 0.0)
    origin: tuple = (0.0, 0.0)
    point: tuple = (0.0, 0.0)
    mu: float = 0.0
    mu_s: float | None = None

    @property
    def static_mu(self):
        return self.mu if self.mu_s is None else self.mu_s


@dataclass
class Rolling:
    """A disc (a rigid body, centroid at its centre) rolling without slip on a fixed line.

    The disc lies on the +n side of the line (``n`` = ``direction`` turned +90°).
    """

    name: str
    disc: str
    radius: float
    direction: tuple = (1.0, 0.0)
    origin: tuple = (0.0, 0.0)


@dataclass
class Gear:
    """Two gears (discs centred at ``center_a``/``center_b`` of their bodies) meshing without slip.

    ``internal=True`` when gear b runs inside gear a (a ring).  The centre
    distance is kept by other joints.
    """

    name: str
    body_a: str
    radius_a: float
    body_b: str
    radius_b: float
    center_a: tuple = (0.0, 0.0)
    center_b: tuple = (0.0, 0.0)
    internal: bool = False


@dataclass
class Distance:
    """A massless rod or taut string: ``|r_a − r_b| = length(t)``."""

    name: str
    body_a: str
    body_b: str
    length: object = 1.0
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)


@dataclass
class Prescribed:
    """Rheonomic motion of one coordinate (``"x"``, ``"y"`` or ``"phi"``) of a body: q = value(t).

    A constant ``phi`` fixes a body's rotation (a translating-only slider body).
    """

    name: str
    body: str
    coordinate: str
    value: object = 0.0


@dataclass
class Gravity:
    """Uniform gravity ``g`` (a vector) on every body."""

    name: str
    g: tuple = (0.0, -9.81)


@dataclass
class PointForce:
    """A force ``(fx, fy)`` in world axes at ``point`` of ``body``.

    Components are expressions of ``t`` and of the point's state
    ``x, y, vx, vy`` and the body's ``phi, phidot``.
    """

    name: str
    body: str
    value: tuple = (0.0, 0.0)
    point: tuple = (0.0, 0.0)


@dataclass
class Torque:
    """A torque on a rigid body, an expression of ``t`` and the body state."""

    name: str
    body: str
    value: object = 0.0


@dataclass
class Spring:
    """A linear spring between two points: force ``k (L − length)`` along the line."""

    name: str
    body_a: str
    body_b: str
    k: float
    length: float = 0.0
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)


@dataclass
class Damper:
    """A linear damper between two points: force ``c dL/dt`` along the line."""

    name: str
    body_a: str
    body_b: str
    c: float
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)


_JOINTS = (Revolute, Slot, Rolling, Gear, Distance, Prescribed)
_FORCES = (Gravity, PointForce, Torque, Spring, Damper)


@dataclass
class System:
    """A planar mechanism: bodies, joints and forces, looked up by name.

    Parameters
    ----------
    name : str
    parameters : dict
        Named parameters the system was built from (kept for reporting and
        for model files' overrides).
    description : str
    formulation : {"general", "tree"}
        The formulation :func:`pympc.simulate` uses by default.
    simulation : dict
        Default simulation settings (a model file's ``[simulation]`` table).

    Examples
    --------
    >>> s = System("block")
    >>> _ = s.add(Particle("block", mass=1.0))
    >>> _ = s.add(Slot("rail", slider="block", guide="ground", mu=0.4))
    >>> _ = s.add(Gravity("gravity", g=(0.0, -10.0)))
    >>> s.validate()
    >>> [j.name for j in s.slots]
    ['rail']
    """

    name: str = "system"
    parameters: dict = field(default_factory=dict)
    description: str = ""
    formulation: str = "general"
    simulation: dict = field(default_factory=dict)

    def __post_init__(self):
        self._bodies = {}
        self._joints = {}
        self._forces = {}

    def add(self, element):
        """Add a body, joint or force and return it; names are unique."""
        if isinstance(element, Body):
            table = self._bodies
        elif isinstance(element, _JOINTS):
            table = self._joints
        elif isinstance(element, _FORCES):
            table = self._forces
        else:
            raise ModelError(f"System.add: cannot add a {type(element).__name__}; "
                             "add bodies, joints (Revolute, Slot, ...) or forces (Gravity, ...)")
        name = element.name
        if not isinstance(name, str) or not name or name == GROUND:
            raise ModelError(f"System.add: invalid name {name!r} ({GROUND!r} is reserved)")
        if name in self._bodies or name in self._joints or name in self._forces:
            raise ModelError(f"System.add: the name {name!r} is already used")
        table[name] = element
        return element

    def get(self, name):
        """The element called ``name``."""
        for table in (self._bodies, self._joints, self._forces):
            if name in table:
                return table[name]
        raise ModelError(f"System.get: no element named {name!r}")

    @property
    def bodies(self):
        """Read-only mapping name → body, in insertion order."""
        return MappingProxyType(self._bodies)

    @property
    def joints(self):
        """Read-only mapping name → joint."""
        return MappingProxyType(self._joints)

    @property
    def forces(self):
        """Read-only mapping name → force."""
        return MappingProxyType(self._forces)

    @property
    def slots(self):
        """The friction slots, in order (their index is the slot index everywhere)."""
        return tuple(j for j in self._joints.values() if isinstance(j, Slot))

    def validate(self):
        """Check the whole system; raise one ModelError listing every problem found."""
        problems = []
        bodies = self._bodies

        def body(owner, attr, allow_ground=True, rigid=False):
            b = getattr(owner, attr)
            if b == GROUND:
                if not allow_ground:
                    problems.append(f"{owner.name}.{attr}: cannot be the ground")
                return
            if b not in bodies:
                problems.append(f"{owner.name}.{attr}: unknown body {b!r} "
                                f"(bodies: {', '.join([GROUND, *bodies])})")
            elif rigid and not isinstance(bodies[b], RigidBody):
                problems.append(f"{owner.name}.{attr}: {b!r} must be a rigid body")

        def finite(owner, attr, positive=False, nonneg=False):
            v = getattr(owner, attr)
            try:
                v = float(v)
            except (TypeError, ValueError):
                problems.append(f"{owner.name}.{attr}: expected a number, got {v!r}")
                return
            if not math.isfinite(v):
                problems.append(f"{owner.name}.{attr}: must be finite, got {v}")
            elif positive and v <= 0:
                problems.append(f"{owner.name}.{attr}: must be > 0, got {v}")
            elif nonneg and v < 0:
                problems.append(f"{owner.name}.{attr}: must be >= 0, got {v}")

        def vector(owner, attr, unit=False):
            try:
                v = _vec(getattr(owner, attr), f"{owner.name}.{attr}")
            except ModelError as exc:
                problems.append(str(exc))
                return
            if unit and np.hypot(*v) < 1e-12:
                problems.append(f"{owner.name}.{attr}: zero-length direction {tuple(v)}")

        for b in bodies.values():
            finite(b, "mass", positive=True)
            vector(b, "position")
            vector(b, "velocity")
            if isinstance(b, RigidBody):
                finite(b, "inertia", nonneg=True)
                finite(b, "angle")
                finite(b, "angular_velocity")
        for j in self._joints.values():
            if isinstance(j, Revolute):
                body(j, "body_a"), body(j, "body_b"), vector(j, "point_a"), vector(j, "point_b")
                if j.body_a == j.body_b:
                    problems.append(f"{j.name}: joins {j.body_a!r} to itself")
            elif isinstance(j, Slot):
                body(j, "slider", allow_ground=False), body(j, "guide")
                vector(j, "direction", unit=True), vector(j, "origin"), vector(j, "point")
                finite(j, "mu", nonneg=True)
                if j.mu_s is not None:
                    finite(j, "mu_s", nonneg=True)
                    try:
                        if float(j.mu_s) < float(j.mu):
                            problems.append(f"{j.name}.mu_s: static coefficient {j.mu_s} is below mu = {j.mu}")
                    except (TypeError, ValueError):
                        pass
                if j.slider == j.guide:
                    problems.append(f"{j.name}: slider and guide are the same body {j.slider!r}")
            elif isinstance(j, Rolling):
                body(j, "disc", allow_ground=False, rigid=True)
                finite(j, "radius", positive=True), vector(j, "direction", unit=True), vector(j, "origin")
            elif isinstance(j, Gear):
                body(j, "body_a"), body(j, "body_b")
                finite(j, "radius_a", positive=True), finite(j, "radius_b", positive=True)
                vector(j, "center_a"), vector(j, "center_b")
                if j.body_a == j.body_b:
                    problems.append(f"{j.name}: meshes {j.body_a!r} with itself")
            elif isinstance(j, Distance):
                body(j, "body_a"), body(j, "body_b"), vector(j, "point_a"), vector(j, "point_b")
            elif isinstance(j, Prescribed):
                body(j, "body", allow_ground=False)
                if j.coordinate not in ("x", "y", "phi"):
                    problems.append(f"{j.name}.coordinate: must be 'x', 'y' or 'phi', got {j.coordinate!r}")
                elif j.coordinate == "phi" and j.body in bodies and not isinstance(bodies[j.body], RigidBody):
                    problems.append(f"{j.name}: a particle has no angle to prescribe")
        for f in self._forces.values():
            if isinstance(f, Gravity):
                vector(f, "g")
            elif isinstance(f, PointForce):
                body(f, "body", allow_ground=False), vector(f, "point")
            elif isinstance(f, Torque):
                body(f, "body", allow_ground=False, rigid=True)
            elif isinstance(f, Spring):
                body(f, "body_a"), body(f, "body_b"), finite(f, "k", nonneg=True), finite(f, "length", nonneg=True)
            elif isinstance(f, Damper):
                body(f, "body_a"), body(f, "body_b"), finite(f, "c", nonneg=True)
        if not bodies:
            problems.append("the system has no bodies")
        if problems:
            raise ModelError(f"system {self.name!r} is invalid:\n  - " + "\n  - ".join(problems))
