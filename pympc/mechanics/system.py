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

Parameters
----------
A System has named :class:`Parameter` s (from a model file's ``[parameters]``
table, or :meth:`System.add_parameter`).  Every numeric field of a body, joint
or force may be an expression of them (``Slot(..., mu="mu1")``,
``Particle(..., mass="2*m")``), and time or state functions may use them too.
:meth:`System.bind` returns the same mechanism with other parameter values,
validated again, without parsing anything; the formulations compile the bound
numbers (:meth:`System.resolved`).  Systems pickle with the standard library.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
import numbers
from dataclasses import dataclass
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar

from ..errors import ModelError
from .expressions import _CONSTS, _FUNCS, Expression, parse
from .joints import (  # noqa: F401  (the joints are part of this module's interface)
    GROUND, Checker, Distance, Gear, Joint, Prescribed, Revolute, Rolling, Slot,
)
from .tomlwriter import body_lines, dump_model

__all__ = [
    "Parameter", "Body", "RigidBody", "Particle", "Revolute", "Slot", "Rolling", "Gear", "Distance", "Prescribed",
    "Gravity", "PointForce", "Torque", "Spring", "Damper", "System", "GROUND",
]

FORCE_VARIABLES = ("t", "x", "y", "vx", "vy", "phi", "phidot")
"""Variables a force expression may use: time and the state of its point/body."""


_KIND_VARIABLES = {"num": (), "vec": (), "time": ("t",), "state": FORCE_VARIABLES, "svec": FORCE_VARIABLES}
"""Field kinds that hold numbers or expressions, and the variables their expressions may use."""


def _parse_field(v, kind, where):
    """A field value as given (number, string, Expression) → numbers stay numbers, strings become Expressions."""
    t = type(v)
    if t is float and kind == "num" or t is tuple and kind == "vec" and len(v) == 2 \
            and type(v[0]) is float and type(v[1]) is float:
        return v                                   # the common case: numbers already
    if kind in ("vec", "svec"):
        if isinstance(v, str) or not hasattr(v, "__len__") or len(v) != 2:
            raise ModelError(f"{where}: expected two values, got {v!r}")
        sub = "num" if kind == "vec" else "state"
        return tuple(_parse_field(x, sub, f"{where}[{i}]") for i, x in enumerate(v))
    if v is None or isinstance(v, Expression):
        return v
    if isinstance(v, str):
        return parse(v, None, _KIND_VARIABLES[kind], where)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v) if kind == "num" else parse(v, None, _KIND_VARIABLES[kind], where)
    try:
        return float(v) if kind == "num" else v    # numpy scalars
    except (TypeError, ValueError):
        return v                                   # left for validate() to report


def _field_parameters(v):
    if type(v) is float:
        return frozenset()
    if isinstance(v, Expression):
        return v.parameters
    if isinstance(v, tuple):
        return frozenset().union(*(_field_parameters(x) for x in v))
    return frozenset()


def _same_value(a, b):
    """The same parameter value, to the bit (a resolved field folds it in): equal, of one type and one sign."""
    return a is not None and type(a) is type(b) and a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _resolve_field(v, kind, values, memo=None):
    """A field with the parameter values folded in: a float (num), floats (vec), bound Expressions.

    ``memo`` (a dict) shares the work between fields that hold the same parsed text (``mass = "m"`` on
    every body of a chain).
    """
    if v is None or type(v) is float:
        return v
    if kind in ("vec", "svec"):
        sub = "num" if kind == "vec" else "state"
        return tuple(_resolve_field(x, sub, values, memo) for x in v)
    if isinstance(v, Expression):
        if memo is None:
            b = v.bind(values)
        else:
            b = memo.get(v.node)
            if b is None:
                b = memo[v.node] = v.bind(values)
            elif b.parameters or b.text != v.text or b.where != v.where:
                b = Expression(b.node, v.text, v.where, ())
        return b.value if kind == "num" and b.is_constant else b
    return v


@dataclass(frozen=True)
class Parameter:
    """A named parameter of a System: a number, or an expression of earlier parameters (derived).

    Attributes
    ----------
    name : str
    value : float or Expression
        The default value, or the expression a derived parameter follows.
    bounds : (float, float) or None
        Admissible range (inclusive); binding a value outside it is an error.
    description : str
    """

    name: str
    value: object
    bounds: tuple | None = None
    description: str = ""

    @property
    def derived(self):
        return isinstance(self.value, Expression)


@dataclass
class Body:
    """Common part of bodies: name, mass and initial state."""

    FIELDS: ClassVar[dict] = {"mass": "num", "position": "vec", "velocity": "vec"}
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

    TYPE: ClassVar[str] = "rigid"
    FIELDS: ClassVar[dict] = {"mass": "num", "inertia": "num", "position": "vec", "angle": "num",
                              "velocity": "vec", "angular_velocity": "num"}
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

    TYPE: ClassVar[str] = "particle"


@dataclass
class Gravity:
    """Uniform gravity ``g`` (a vector) on every body."""

    TYPE: ClassVar[str] = "gravity"
    FIELDS: ClassVar[dict] = {"g": "vec"}
    name: str
    g: tuple = (0.0, -9.81)


@dataclass
class PointForce:
    """A force ``(fx, fy)`` in world axes at ``point`` of ``body``.

    Components are expressions of ``t`` and of the point's state
    ``x, y, vx, vy`` and the body's ``phi, phidot``.
    """

    TYPE: ClassVar[str] = "force"
    FIELDS: ClassVar[dict] = {"body": "name", "value": "svec", "point": "vec"}
    name: str
    body: str
    value: tuple = (0.0, 0.0)
    point: tuple = (0.0, 0.0)


@dataclass
class Torque:
    """A torque on a rigid body, an expression of ``t`` and the body state."""

    TYPE: ClassVar[str] = "torque"
    FIELDS: ClassVar[dict] = {"body": "name", "value": "state"}
    name: str
    body: str
    value: object = 0.0


@dataclass
class Spring:
    """A linear spring between two points: force ``k (L − length)`` along the line."""

    TYPE: ClassVar[str] = "spring"
    FIELDS: ClassVar[dict] = {"body_a": "name", "body_b": "name", "k": "num", "length": "num", "point_a": "vec",
                              "point_b": "vec"}
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

    TYPE: ClassVar[str] = "damper"
    FIELDS: ClassVar[dict] = {"body_a": "name", "body_b": "name", "c": "num", "point_a": "vec", "point_b": "vec"}
    name: str
    body_a: str
    body_b: str
    c: float
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)


_FORCES = (Gravity, PointForce, Torque, Spring, Damper)


class System:
    """A planar mechanism: named parameters, bodies, joints and forces, looked up by name.

    Parameters
    ----------
    name : str
    parameters : dict, optional
        Named parameters: ``name -> number``, ``name -> "expression of earlier
        parameters"`` (derived), or ``name -> Parameter`` (with bounds).
    description : str
    formulation : {"general", "tree"}
        The formulation :func:`pympc.simulate` uses by default.
    simulation : dict
        Default simulation settings (a model file's ``[simulation]`` table);
        values may be expressions of the parameters.

    Examples
    --------
    >>> s = System("block", parameters={"mu": 0.4})
    >>> _ = s.add(Particle("block", mass=1.0))
    >>> _ = s.add(Slot("rail", slider="block", guide="ground", mu="mu"))
    >>> _ = s.add(Gravity("gravity", g=(0.0, -10.0)))
    >>> s.validate()
    >>> [j.name for j in s.slots], s.bind(mu=0.2).resolved().slots[0].mu
    (['rail'], 0.2)
    """

    def __init__(self, name="system", parameters=None, description="", formulation="general", simulation=None):
        self.name = name
        self.description = description
        self.formulation = formulation
        self._params = {}
        self._overrides = {}
        self._bodies, self._joints, self._forces = {}, {}, {}
        self._simulation = {}
        self._cache = {}
        for k, v in (parameters or {}).items():
            if isinstance(v, Parameter):
                self.add_parameter(k, v.value, v.bounds, v.description)
            else:
                self.add_parameter(k, v)
        for k, v in (simulation or {}).items():
            self._simulation[k] = self._sim_value(k, v)

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_cache"] = {}
        return d

    # ------------------------------------------------------------------ parameters
    def add_parameter(self, name, value, bounds=None, description=""):
        """Add a parameter (a number, or an expression string of earlier parameters) and return it.

        ``bounds = (low, high)`` (either may be None or ±inf) is checked on every binding.
        """
        where = f"parameter {name!r}"
        if not isinstance(name, str) or not name.isidentifier():
            raise ModelError(f"{where}: a parameter name must be an identifier")
        if name in FORCE_VARIABLES or name in _FUNCS or name in _CONSTS:
            raise ModelError(f"{where}: {name!r} is reserved (time, state variables, functions and constants "
                             f"{sorted({*FORCE_VARIABLES, *_FUNCS, *_CONSTS})}); rename it")
        if name in self._params:
            raise ModelError(f"{where}: defined twice")
        if isinstance(value, (str, Expression)):
            value = parse(value, tuple(self._params), (), where)
            if value.is_constant:
                value = value.value
        else:
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise ModelError(f"{where}: expected a number or an expression string, got {value!r}") from None
            if not math.isfinite(value):
                raise ModelError(f"{where}: must be finite, got {value}")
        if bounds is not None:
            try:
                lo, hi = (-math.inf if b is None else float(b) for b in bounds)
            except (TypeError, ValueError):
                raise ModelError(f"{where}: bounds must be (low, high), got {bounds!r}") from None
            if not lo <= hi:
                raise ModelError(f"{where}: bounds ({lo}, {hi}) are empty")
            bounds = (lo, hi)
        p = self._params[name] = Parameter(name, value, bounds, description)
        self._cache.clear()
        if not p.derived:
            self._check_bounds(name, value)
        return p

    @property
    def parameter_definitions(self):
        """Read-only mapping name → :class:`Parameter` (defaults, derived expressions, bounds)."""
        return MappingProxyType(self._params)

    @property
    def parameters(self):
        """Read-only mapping name → value (float) of every parameter as bound now."""
        vals = self._cache.get("values")
        if vals is None:
            vals = self._cache["values"] = MappingProxyType(self._values(check=True))
        return vals

    def _values(self, check):
        vals = {}
        for k, p in self._params.items():
            if k in self._overrides:
                vals[k] = self._overrides[k]
            elif p.derived:
                vals[k] = p.value.bind(vals).value
            else:
                vals[k] = p.value
            if check:
                self._check_bounds(k, vals[k])
        return vals

    def _check_bounds(self, name, v):
        b = self._params[name].bounds
        if b is not None and not b[0] <= v <= b[1]:
            raise ModelError(f"parameter {name!r} = {v:g} is outside its bounds [{b[0]:g}, {b[1]:g}]")

    def _field_uses(self):
        """``(element, field, parameter names)`` of every field of every element, then ``(None, key, names)`` of
        every simulation setting: the parameters each uses directly."""
        for table in (self._bodies, self._joints, self._forces):
            for e in table.values():
                for f in type(e).FIELDS:
                    yield e, f, _field_parameters(getattr(e, f))
        for k, v in self._simulation.items():
            yield None, k, _field_parameters(tuple(v.values()) if isinstance(v, dict) else v)

    def used_parameters(self):
        """Names of the parameters that some element or simulation setting depends on (directly or not)."""
        used = self._cache.get("used")
        if used is None:
            used = set().union(*(names for _, _, names in self._field_uses()))
            for k in reversed(list(self._params)):      # derived parameters pass their use on
                p = self._params[k]
                if k in used and p.derived:
                    used |= p.value.parameters
            used = self._cache["used"] = frozenset(used)
        return used

    def _friction_only(self):
        """Names of the parameters whose values enter nothing but the slots' friction coefficients (``mu``,
        ``mu_s`` fields of slots): no body, joint geometry, force or simulation setting uses them directly (a
        derived parameter is its own name: its value is compared on its own, see :meth:`_same_kinematics`)."""
        only = self._cache.get("friction only")
        if only is None:
            other = set().union(*(names for e, f, names in self._field_uses()
                                  if not (getattr(e, "SLOT", False) and f in ("mu", "mu_s"))))
            only = self._cache["friction only"] = frozenset(self._params) - other
        return only

    def _same_kinematics(self, other):
        """Is ``other`` this system, or a copy of it bound (:meth:`bind`) to values that differ from this
        system's, to the bit, in friction-only parameters alone (:meth:`_friction_only`)?  Then the two have the
        same elements but for the slots' μ and μ_s: the same assembly, the same modes' rows."""
        if other is self:
            return True
        if not isinstance(other, System) or other._params is not self._params \
                or other._simulation is not self._simulation or other.formulation != self.formulation:
            return False
        for kind in ("_bodies", "_joints", "_forces"):
            mine, theirs = getattr(self, kind), getattr(other, kind)
            if len(mine) != len(theirs) or any(theirs.get(k) is not e for k, e in mine.items()):
                return False
        a, b, only = self.parameters, other.parameters, self._friction_only()
        return all(k in only for k in a if not _same_value(a[k], b[k]))

    def bind(self, values=None, /, **kw):
        """The same mechanism with other parameter values (validated; nothing is parsed again).

        Parameters
        ----------
        values : dict, optional
            ``name -> number`` or ``name -> expression string`` in the model
            file's language (``"pi/6"``, ``"2*m*g"``: constants, functions and
            the other parameters' values, those given as numbers in the same
            call included); keywords work too.  Derived parameters follow the
            ones they depend on unless they are given themselves.

        Raises
        ------
        ModelError
            An unknown name (the known ones are listed), a value that is not a
            finite number or is outside the parameter's bounds, a parameter
            that nothing in the model uses (binding it would change nothing),
            or a bound model that is invalid (mass ≤ 0, μ_s < μ, ...); an
            expression that does not parse or names no parameter of the model.
        """
        if not isinstance(values, (Mapping, type(None))):
            raise ModelError(f"system {self.name!r}: parameter values must be a mapping name -> value "
                             f"(e.g. {{'mu': 0.3}}), got {type(values).__name__} {values!r}")
        return self._bind({**(values or {}), **kw}, check=True)

    def perturbed(self, values):
        """Bound to ``values`` without the admissibility checks (bounds, μ_s ≥ μ, ...).

        For finite-difference steps of sensitivities, which may step just outside
        an admissible region while the equations stay defined.
        """
        return self._bind(dict(values), check=False)

    def _bind(self, values, check):
        if not values:
            return self
        unknown = sorted(set(values) - set(self._params))
        if unknown:
            raise ModelError(f"system {self.name!r}: unknown parameter(s) {unknown}; "
                             f"known: {sorted(self._params) or 'none (add them with System.add_parameter)'}")
        clean, texts = {}, {}
        for k, v in values.items():
            if isinstance(v, str):
                texts[k] = v
                continue
            if isinstance(v, bool) or not (isinstance(v, numbers.Real) or getattr(v, "shape", None) == ()):
                raise ModelError(f"parameter {k!r}: expected a number or an expression string such as 'pi/6', "
                                 f"got {type(v).__name__} {v!r}")
            fv = float(v)
            if not math.isfinite(fv):
                raise ModelError(f"parameter {k!r}: expected a finite number, got {v!r}")
            clean[k] = fv
        if texts:     # the model file's expression language, over the values as bound with the numbers given
            env = dict(self._bind(clean, check=False).parameters)
            for k, text in texts.items():
                clean[k] = env[k] = parse(text, env, variables=(), where=f"parameter {k!r}").value
        unused = sorted(set(clean) - self.used_parameters())
        if unused and check:
            raise ModelError(f"system {self.name!r}: parameter(s) {unused} are not used by any body, joint, force "
                             "or simulation setting, so setting them would change nothing; "
                             f"parameters in use: {sorted(self.used_parameters())}")
        new = copy.copy(self)
        new._overrides = {**self._overrides, **clean}
        new._bodies, new._joints, new._forces = dict(self._bodies), dict(self._joints), dict(self._forces)
        new._cache = {"used": self.used_parameters()}
        if "names_known" in self._cache:               # the same elements and parameters: their names check out
            new._cache["names_known"] = True
        # their lines of the model file are the same: one holder for this system and all its bound copies, filled
        # by the first fingerprint() of any of them (a loop of runs with varied μ binds the copies, not the original)
        new._cache["model_body"] = self._cache.setdefault("model_body", {})
        if self._cache.get("resolved") is not None and not self._cache.get("is_resolved"):
            # resolved() takes this system's resolved elements where their parameters keep their values
            new._cache["resolve_from"] = (self.parameters, self._cache["resolved"],
                                          self._cache.setdefault("element_parameters", {}))
        if check:
            new.parameters          # noqa: B018  bounds of every (derived) value
            new.validate()
        else:
            new._cache["values"] = MappingProxyType(new._values(check=False))
            new._cache["valid"] = True
        return new

    @property
    def simulation(self):
        """Default simulation settings with the parameter values folded in."""
        vals = self.parameters
        out = {}
        for k, v in self._simulation.items():
            if isinstance(v, dict):
                out[k] = {kk: _resolve_field(x, "num", vals) for kk, x in v.items()}
            else:
                out[k] = _resolve_field(v, "num", vals)
        return out

    def _sim_value(self, key, v):
        where = f"[simulation] {key}"
        if isinstance(v, dict):
            return {k: _parse_field(x, "num", f"{where}.{k}") for k, x in v.items()}
        if isinstance(v, str) and key == "method":
            return v
        return _parse_field(v, "num", where) if isinstance(v, (str, Expression, int, float)) else v

    def fingerprint(self):
        """A short hash of the model (its elements and the parameter values as bound now)."""
        fp = self._cache.get("fingerprint")
        if fp is None:
            shared = self._cache.setdefault("model_body", {})   # (the elements' lines: shared by the bound copies)
            body = shared.get("lines")
            if body is None:
                body = shared["lines"] = tuple(body_lines(self))
            fp = self._cache["fingerprint"] = hashlib.sha256(dump_model(self, body).encode()).hexdigest()[:16]
        return fp

    def resolved(self):
        """A parameter-free copy with every numeric field a number and every function bound (cached).

        This is what the formulations compile; it is rebuilt by :meth:`bind` without parsing.
        """
        if self._cache.get("is_resolved"):
            return self
        r = self._cache.get("resolved")
        if r is None:
            vals, memo = self.parameters, {}
            # a bound copy (System.bind): the elements whose parameters kept their values are resolved already
            old_vals, old, uses = self._cache.pop("resolve_from", (None, None, {}))
            r = System(self.name, description=self.description, formulation=self.formulation)
            for kind in ("_bodies", "_joints", "_forces"):
                table, out = getattr(self, kind), getattr(r, kind)
                before = getattr(old, kind) if old is not None else {}
                for name, e in table.items():
                    prev = before.get(name)
                    if prev is not None and getattr(old, "_source_elements", {}).get(name) is e:
                        used = uses.get(id(e))
                        if used is None or used[0] is not e:
                            used = uses[id(e)] = (e, frozenset().union(*(
                                _field_parameters(getattr(e, f)) for f, k in type(e).FIELDS.items()
                                if k in _KIND_VARIABLES)))
                        if all(_same_value(vals.get(p), old_vals.get(p)) for p in used[1]):
                            out[name] = prev
                            continue
                    fields = {f: _resolve_field(getattr(e, f), k, vals, memo) for f, k in type(e).FIELDS.items()
                              if k in _KIND_VARIABLES}
                    out[name] = dataclasses.replace(e, **fields)
            r._cache["is_resolved"] = True
            r._source = self
            r._source_elements = {**self._bodies, **self._joints, **self._forces}
            self._cache["resolved"] = r
        return r

    # ------------------------------------------------------------------ elements
    def add(self, element):
        """Add a body, joint or force and return it; names are unique.

        String fields are parsed here (once): a numeric field may be an expression
        of the parameters, a time function also of ``t``, a force also of the state.
        """
        if isinstance(element, Body):
            table = self._bodies
        elif isinstance(element, Joint):
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
        for f, kind in type(element).FIELDS.items():
            if kind in _KIND_VARIABLES:
                setattr(element, f, _parse_field(getattr(element, f), kind, f"{name}.{f}"))
        table[name] = element
        self._cache.clear()
        return element

    def _view(self):
        """The elements as numbers when the parameters resolve (else as defined, for validate to report)."""
        if self._cache.get("is_resolved"):
            return self
        try:
            return self.resolved()
        except ModelError:
            return self

    def get(self, name):
        """The element called ``name`` (numeric fields as bound now; see :meth:`definition`)."""
        view = self._view()
        for table in (view._bodies, view._joints, view._forces):
            if name in table:
                return table[name]
        raise ModelError(f"System.get: no element named {name!r}")

    def definition(self, name):
        """The element called ``name`` as it was added: fields may be expressions of the parameters."""
        for table in (self._bodies, self._joints, self._forces):
            if name in table:
                return table[name]
        raise ModelError(f"System.definition: no element named {name!r}")

    @property
    def bodies(self):
        """Read-only mapping name → body, in insertion order (numeric fields as bound now)."""
        return MappingProxyType(self._view()._bodies)

    @property
    def joints(self):
        """Read-only mapping name → joint (numeric fields as bound now)."""
        return MappingProxyType(self._view()._joints)

    @property
    def forces(self):
        """Read-only mapping name → force (numeric fields as bound now)."""
        return MappingProxyType(self._view()._forces)

    @property
    def slots(self):
        """The friction slots, in order (their index is the slot index everywhere)."""
        return tuple(j for j in self._view()._joints.values() if j.SLOT)

    def __repr__(self):
        return (f"System({self.name!r}: {len(self._bodies)} bodies, {len(self._joints)} joints, "
                f"{len(self._forces)} forces, {len(self.slots)} slots, parameters "
                f"{', '.join(f'{k}={v:g}' for k, v in self.parameters.items()) or 'none'})")

    def validate(self):
        """Check the whole system (as bound now); raise one ModelError listing every problem found."""
        if self._cache.get("valid"):
            return
        problems = []
        known = set(self._params)
        if not self._cache.get("names_known"):     # (a bound copy of a system that passed: the same names)
            for table in (self._bodies, self._joints, self._forces):
                for e in table.values():
                    for f in type(e).FIELDS:
                        missing = sorted(_field_parameters(getattr(e, f)) - known)
                        if missing:
                            problems.append(f"{e.name}.{f}: unknown parameter(s) {missing} "
                                            f"(parameters: {', '.join(sorted(known)) or 'none'})")
            if problems:
                raise ModelError(f"system {self.name!r} is invalid:\n  - " + "\n  - ".join(problems))
            self._cache["names_known"] = True
        try:
            r = self.resolved()
        except ModelError as exc:
            raise ModelError(f"system {self.name!r} is invalid:\n  - {exc}") from None
        bodies = r._bodies
        check = Checker(bodies)
        check.problems = problems
        for b in bodies.values():
            check.finite(b, "mass", positive=True)
            check.vector(b, "position")
            check.vector(b, "velocity")
            if isinstance(b, RigidBody):
                check.finite(b, "inertia", nonneg=True)
                check.finite(b, "angle")
                check.finite(b, "angular_velocity")
        for j in r._joints.values():
            j.validate(check)
        for f in r._forces.values():
            if isinstance(f, Gravity):
                check.vector(f, "g")
            elif isinstance(f, PointForce):
                check.body(f, "body", allow_ground=False), check.vector(f, "point")
            elif isinstance(f, Torque):
                check.body(f, "body", allow_ground=False, rigid=True)
            elif isinstance(f, Spring):
                check.body(f, "body_a"), check.body(f, "body_b"), check.finite(f, "k", nonneg=True)
                check.finite(f, "length", nonneg=True)
            elif isinstance(f, Damper):
                check.body(f, "body_a"), check.body(f, "body_b"), check.finite(f, "c", nonneg=True)
        if not bodies:
            problems.append("the system has no bodies")
        if problems:
            raise ModelError(f"system {self.name!r} is invalid:\n  - " + "\n  - ".join(problems))
        self._cache["valid"] = True
