"""The TOML writer of model files: :func:`dump_model` (read back by :func:`~pympc.mechanics.load_model`).

It asks every element for its model-file name (``TYPE``) and fields
(``FIELDS``), so it needs nothing from :mod:`pympc.mechanics.system`, which
hashes a System through it (:meth:`~pympc.mechanics.System.fingerprint`):
imports go one way, ``modelfile → system → tomlwriter``.
"""

from __future__ import annotations

import math

from ..errors import ModelError
from .expressions import Expression

__all__ = ["dump_model"]


def _toml_value(v):
    t = type(v)
    if t is str:
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if t is float and math.isfinite(v):
        return repr(v)
    if t is tuple and len(v) == 2:
        return f"[{_toml_value(v[0])}, {_toml_value(v[1])}]"
    if isinstance(v, Expression):
        return _toml_value(v.value) if v.is_constant else _toml_value(v.text)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        v = float(v)
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if not math.isfinite(v):
            raise ModelError(f"cannot write the non-finite number {v} to a model file")
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)) or hasattr(v, "__len__"):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise ModelError(f"cannot write {v!r} to a model file")


def dump_model(system, body=None):
    """The TOML text of a model file describing ``system`` (read back by :func:`~pympc.mechanics.load_model`).

    Expressions are written as their text, so their parameters must be in
    ``system.parameters`` (as they are for systems read from files).

    Examples
    --------
    >>> from pympc.mechanics import slider_chain
    >>> from pympc.mechanics.modelfile import build_model, tomllib
    >>> text = dump_model(slider_chain(2))
    >>> build_model(tomllib.loads(text)).slots[1].guide
    's1'
    """
    system.validate()
    out = header_lines(system) + list(body_lines(system) if body is None else body)
    return "\n".join(out) + "\n"


def body_lines(system):
    """The element tables and the ``[simulation]`` table of ``system``'s model file, as lines: what depends on
    the definitions alone, not on the parameter values bound (``dump_model(system, body)`` takes them made
    once for the bound copies of one system)."""
    out = []
    for table, elements in (("bodies", system._bodies), ("joints", system._joints), ("forces", system._forces)):
        for e in elements.values():
            out += element_lines(table, e)
    return out + simulation_lines(system)


def header_lines(system):
    """The ``[model]`` and ``[parameters]`` tables of ``system``'s model file, as lines (not validated)."""
    out = ["[model]", f"name = {_toml_value(system.name)}"]
    if system.description:
        out.append(f"description = {_toml_value(system.description)}")
    out.append(f"formulation = {_toml_value(system.formulation)}")
    bound = system.parameters
    if system.parameter_definitions:
        out += ["", "[parameters]"]
        for k, p in system.parameter_definitions.items():
            v = bound[k] if k in system._overrides else p.value
            if p.bounds is None and not p.description:
                out.append(f"{k} = {_toml_value(v)}")
            else:
                extra = {"value": v, **({"bounds": list(p.bounds)} if p.bounds else {}),
                         **({"description": p.description} if p.description else {})}
                out.append(f"{k} = {_toml_value(extra)}")
    return out


def element_lines(table, e):
    """The ``[[table]]`` entry of one body, joint or force ``e`` as lines (a blank line first): name, type and
    its ``FIELDS`` in their order, None fields left out."""
    kind = getattr(type(e), "TYPE", None)
    if kind is None:
        raise ModelError(f"{e.name}: a {type(e).__name__} has no model-file type (a TYPE class attribute); "
                         "it cannot be written to a model file")
    out = ["", f"[[{table}]]", f"name = {_toml_value(e.name)}", f"type = {_toml_value(kind)}"]
    for key in type(e).FIELDS:
        v = getattr(e, key)
        if v is not None:
            out.append(f"{key} = {_toml_value(v)}")
    return out


def simulation_lines(system):
    """The ``[simulation]`` table of ``system``'s model file as lines (a blank line first; none if empty)."""
    if not system._simulation:
        return []
    return ["", "[simulation]"] + [f"{k} = {_toml_value(v)}" for k, v in system._simulation.items()]
