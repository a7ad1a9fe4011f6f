"""TOML model files: ``pympc.load_model(path, **overrides)``.

The schema (documented with examples in ``models/README.md``)::

    [model]        name, description, formulation = "general" | "tree"
    [parameters]   NAME = number or expression of earlier parameters, or
                   NAME = {value = ..., bounds = [low, high], description = "..."}
    [[bodies]]     name, type = "rigid" | "particle", mass, inertia, position, angle,
                   velocity, angular_velocity
    [[joints]]     type = "revolute" | "slot" | "rolling" | "gear" | "distance" | "prescribed"
                   (or the TYPE of any other registered Joint class, :mod:`pympc.mechanics.joints`)
    [[forces]]     type = "gravity" | "force" | "torque" | "spring" | "damper"
    [simulation]   t_end, method, rtol, atol, max_events, ... (defaults for pympc.simulate)

Every number may be an expression string of the parameters (``"m1*g"``); time
functions (prescribed values, rod lengths) may use ``t``; forces and torques
may use ``t, x, y, vx, vy, phi, phidot`` (the state of their point and body);
a parameter may not have one of these names.  Expressions are parsed by
:mod:`pympc.mechanics.expressions` (an ast whitelist; nothing is evaluated) and
keep their parameters symbolic: overrides bind new values to the System
(:meth:`~pympc.mechanics.System.bind`), the same path ``pympc.simulate(...,
params=...)`` takes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ..errors import ModelError
from .expressions import parse
from .joints import JOINT_TYPES
from .system import FORCE_VARIABLES, Damper, Gravity, Particle, PointForce, RigidBody, Spring, System, Torque
from .tomlwriter import dump_model

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["load_model", "build_model", "dump_model", "save_model", "SIMULATION_KEYS"]

_TOP = {"model", "parameters", "bodies", "joints", "forces", "simulation"}
_MODEL_KEYS = {"name", "description", "formulation"}
SIMULATION_KEYS = {"t_end", "t_start", "method", "rtol", "atol", "max_events", "min_event_spacing",
                   "max_step", "baumgarte", "samples"}
"""Keys allowed in a model file's ``[simulation]`` table (arguments of pympc.simulate)."""

# per type: (class, {key: kind}); the kinds are the element classes' own FIELDS: "num" number, "vec"
# 2-vector, "name" body name, "time" expression of t, "state" expression of t and state, "svec"
# 2-vector of state expressions, "str", "bool" (every number may be an expression of the parameters)
# (joints: every registered joint class, JOINT_TYPES, at the time a file is read: a class defined anywhere counts)
_BODY = {cls.TYPE: (cls, cls.FIELDS) for cls in (RigidBody, Particle)}
_FORCE = {cls.TYPE: (cls, cls.FIELDS) for cls in (Gravity, PointForce, Torque, Spring, Damper)}
_REQUIRED = {"mass", "body", "body_a", "body_b", "value", "k", "c", "length"}
"""Keys a body or force must give (a joint class says its own: ``required_keys()``)."""


def _joint_kinds():
    return {name: (cls, cls.FIELDS) for name, cls in JOINT_TYPES.items()}


def load_model(path, **overrides):
    """Read a TOML model file into a :class:`~pympc.mechanics.System`.

    Parameters
    ----------
    path : str or Path
    **overrides : float or str
        New values of parameters named in the file's ``[parameters]`` table
        (expressions that depend on them follow): numbers, or strings in the
        file's expression language (``alpha="pi/6"``); bound with
        :meth:`System.bind`, so an unknown name or one that nothing uses is an error.

    Returns
    -------
    System
        With ``parameters`` (the values used), ``formulation`` and ``simulation``.

    Raises
    ------
    ModelError
        Naming the file, table and key: malformed TOML, unknown tables or keys,
        unknown body names, bad values (μ < 0, zero-length directions, m ≤ 0, ...).

    Examples
    --------
    >>> import pympc, pathlib
    >>> path = pathlib.Path(pympc.__file__).parents[1] / "models" / "cross_slide.toml"
    >>> s = pympc.load_model(path, P=10.0)          # doctest: +SKIP
    >>> s.parameters["P"]                            # doctest: +SKIP
    10.0
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the model file ({exc.strerror}); check the path") from None
    except UnicodeDecodeError as exc:
        raise ModelError(f"{path}: not a text model file (byte {exc.start} is not UTF-8); "
                         "a model file is TOML text in UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelError(f"{path}: not valid TOML: {exc}") from None
    return build_model(data, str(path), **overrides)


def build_model(data, source="<model>", **overrides):
    """Build a System from a model file's parsed TOML ``data`` (see :func:`load_model`)."""
    err = lambda msg: ModelError(f"{source}: {msg}")  # noqa: E731
    unknown = set(data) - _TOP
    if unknown:
        raise err(f"unknown table(s) {sorted(unknown)}; allowed: {sorted(_TOP)}")
    model = _table(data, "model", source)
    bad = set(model) - _MODEL_KEYS
    if bad:
        raise err(f"[model]: unknown key(s) {sorted(bad)}; allowed: {sorted(_MODEL_KEYS)}")
    formulation = model.get("formulation", "general")
    if formulation not in ("general", "tree"):
        raise err(f"[model], key 'formulation': must be 'general' or 'tree', got {formulation!r}")
    system = System(str(model.get("name", Path(source).stem)), description=str(model.get("description", "")),
                    formulation=formulation)
    _parameters(system, _table(data, "parameters", source), source)
    params = tuple(system.parameter_definitions)
    sim = _table(data, "simulation", source)
    bad = set(sim) - SIMULATION_KEYS
    if bad:
        raise err(f"[simulation]: unknown key(s) {sorted(bad)}; allowed: {sorted(SIMULATION_KEYS)}")
    for k, v in sim.items():
        system._simulation[k] = _simulation_value(k, v, params, f"{source}: [simulation], key {k!r}")
    where_of = {}
    for table, kinds in (("bodies", _BODY), ("joints", _joint_kinds()), ("forces", _FORCE)):
        entries = data.get(table, [])
        if not isinstance(entries, list):
            raise err(f"'{table}' must be an array of tables ([[{table}]])")
        for i, entry in enumerate(entries):
            where = f"[[{table}]] #{i + 1}"
            if not isinstance(entry, dict):
                raise err(f"{where}: expected a table")
            kind = entry.get("type", "rigid" if table == "bodies" else None)
            if kind not in kinds:
                raise err(f"{where}, key 'type': {kind!r} is not one of {sorted(kinds)}")
            name = entry.get("name", f"{kind}{i + 1}" if table != "bodies" else None)
            if not isinstance(name, str) or not name:
                raise err(f"{where}, key 'name': every body needs a name")
            where = f"[[{table}]] #{i + 1} ({name!r})"
            cls, keys = kinds[kind]
            bad = set(entry) - set(keys) - {"type", "name"}
            if bad:
                raise err(f"{where}: unknown key(s) {sorted(bad)}; allowed for type {kind!r}: "
                          f"{sorted(keys)}")
            required = cls.required_keys() if table == "joints" else [
                k for k in keys if k in _REQUIRED and not (kind == "spring" and k == "length")]
            missing = sorted(k for k in required if k not in entry)
            if missing:
                raise err(f"{where}: missing key(s) {missing}")
            kwargs = {k: _convert(entry[k], kinds_, params, f"{source}: {where}, key {k!r}")
                      for k, kinds_ in keys.items() if k in entry}
            try:
                system.add(cls(name=name, **kwargs))
            except ModelError as exc:
                raise err(f"{where}: {exc}") from None
            where_of[name] = where
    try:
        system.validate()
    except ModelError as exc:
        lines = str(exc).splitlines()[1:]
        out = []
        for line in lines:
            m = re.match(r"\s*- ([^.:]+)\.?([A-Za-z_]*):(.*)", line)
            if m and m.group(1) in where_of:
                key = f", key {m.group(2)!r}" if m.group(2) else ""
                out.append(f"{where_of[m.group(1)]}{key}:{m.group(3)}")
            else:
                out.append(line.strip().lstrip("- "))
        raise err("invalid model:\n  - " + "\n  - ".join(out)) from None
    if overrides:
        try:
            system = system.bind(overrides)
        except ModelError as exc:
            raise err(f"overrides: {exc}") from None
    return system


def _simulation_value(key, v, params, where):
    if key == "method":
        if not isinstance(v, str):
            raise ModelError(f"{where}: expected the name of a solve_ivp method, got {v!r}")
        return v
    if key == "baumgarte":
        if not isinstance(v, dict) or set(v) - {"alpha", "beta"}:
            raise ModelError(f"{where}: expected a table {{alpha = ..., beta = ...}}, got {v!r}")
        return {k: _convert(x, "num", params, f"{where}.{k}") for k, x in v.items()}
    return _convert(v, "num", params, where)


def _table(data, name, source):
    t = data.get(name, {})
    if not isinstance(t, dict):
        raise ModelError(f"{source}: '{name}' must be a table ([{name}])")
    return t


def _parameters(system, table, source):
    for k, v in table.items():
        where = f"{source}: [parameters], key {k!r}"
        bounds = description = None
        if isinstance(v, dict):
            bad = set(v) - {"value", "bounds", "description"}
            if bad or "value" not in v:
                raise ModelError(f"{where}: a parameter table has 'value' and optionally 'bounds' and 'description'"
                                 f"{f'; unknown key(s) {sorted(bad)}' if bad else ''}")
            bounds, description, v = v.get("bounds"), v.get("description", ""), v["value"]
            if bounds is not None and (not isinstance(bounds, list) or len(bounds) != 2):
                raise ModelError(f"{where}: bounds must be [low, high], got {bounds!r}")
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise ModelError(f"{where}: expected a number or an expression string, got {v!r}")
        try:
            system.add_parameter(k, v, bounds, description or "")
        except ModelError as exc:
            msg = str(exc).split(": ", 1)[-1] if str(exc).startswith("parameter ") else str(exc)
            raise ModelError(f"{where}: {msg}") from None


def _convert(v, kind, params, where):
    if kind in ("vec", "svec"):  # two components, each a number ("vec") or a state expression ("svec")
        if not isinstance(v, list) or len(v) != 2:
            raise ModelError(f"{where}: expected a list of two values, got {v!r}")
        return tuple(_convert(x, "num" if kind == "vec" else "state", params, f"{where}[{i}]") for i, x in enumerate(v))
    if kind == "name" or kind == "str":
        if not isinstance(v, str):
            raise ModelError(f"{where}: expected a string, got {v!r}")
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            raise ModelError(f"{where}: expected true or false, got {v!r}")
        return v
    e = parse(v, params, () if kind == "num" else ("t",) if kind == "time" else FORCE_VARIABLES, where)
    return e.value if kind == "num" and e.is_constant else e


def save_model(system, path):
    """Write ``system`` as a TOML model file (see :func:`dump_model`)."""
    Path(path).write_text(dump_model(system), encoding="utf-8")
