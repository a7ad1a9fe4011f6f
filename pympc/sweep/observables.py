"""Observables: what a sweep records of each run's :class:`~pympc.dynamics.Trajectory`.

Built-in names (columns in brackets; ``<slot>`` and ``<coord>`` are the model's names):

``status``
    [status, message] — always recorded.
``events``
    [n_events, n_START, n_SLIP_STOP, n_WALL_SWITCH, n_BREAKAWAY] — events per kind
    (``n_events`` counts transitions, the start excluded).
``first:KIND``
    [first_KIND] — time of the first event of that kind after the start (NaN if none).
``stick_fraction``
    [stick.<slot>] — fraction of the simulated time each slot sticks.
``stick_phases``
    [stick_phases.<slot>] — number of stick phases of each slot (from the event list).
``dissipated``
    [dissipated] — energy dissipated by friction over the run.
``final_state``
    [t_final, final.<coord>, final.<coord>_dot].
``start_classification``
    [start_hlcp, start_solutions, start_mode] — the start event's HLCP solution set
    (``UNIQUE``, ``FINITE`` = several, ``CONTINUUM``, ``NONE``, ``not enumerated``).

A user observable is a Python function ``f(trajectory)`` returning a number, a
string, a bool or a dict of them (one column per key, prefixed by the
function's name); its column is named after the function (``__name__``), or
give ``("name", f)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OptionError

__all__ = ["BUILTIN", "DEFAULT_OBSERVABLES", "check_observables", "observable_name", "evaluate", "CATEGORICAL"]

_KINDS = ("START", "SLIP_STOP", "WALL_SWITCH", "BREAKAWAY")
DEFAULT_OBSERVABLES = ("status", "events", "stick_fraction", "dissipated", "start_classification")
CATEGORICAL = ("status", "start_hlcp", "start_mode")
"""Columns drawn with categorical colours by the regime maps."""


def _status(tr):
    return {"status": tr.status.name, "message": tr.message}


def _events(tr):
    counts = {f"n_{k}": 0 for k in _KINDS}
    for e in tr.events:
        counts[f"n_{e.kind.name}"] += 1
    return {"n_events": len(tr.events) - 1, **counts}


def _stick_fraction(tr):
    t = np.asarray(tr.t, float)
    span = t[-1] - t[0] if t.size else 0.0
    dt = np.diff(t)
    out = {}
    for k, name in enumerate(tr.slot_names):
        # motions[j] is the mode of the phase holding sample j: it holds on [t_j, t_{j+1}]
        out[f"stick.{name}"] = float(np.sum(dt * (tr.motions[:-1, k] == 0)) / span) if span > 0 else float("nan")
    return out


def _stick_phases(tr):
    out = {}
    for k, name in enumerate(tr.slot_names):
        n, before = 0, False
        for e in tr.events:
            now = len(e.mode_after.motions) > k and int(e.mode_after.motions[k]) == 0
            n += now and not before
            before = now
        out[f"stick_phases.{name}"] = n
    return out


def _dissipated(tr):
    return {"dissipated": float(tr.dissipated[-1])}


def _final_state(tr):
    out = {"t_final": float(tr.t[-1])}
    for i, c in enumerate(tr.coordinate_names):
        out[f"final.{c}"], out[f"final.{c}_dot"] = float(tr.q[-1, i]), float(tr.qd[-1, i])
    return out


def _start(tr):
    e = tr.events[0]
    return {"start_hlcp": e.classification, "start_solutions": int(e.solutions), "start_mode": str(e.mode_after)}


BUILTIN = {"status": _status, "events": _events, "stick_fraction": _stick_fraction, "stick_phases": _stick_phases,
           "dissipated": _dissipated, "final_state": _final_state, "start_classification": _start}
"""Built-in observables by name (``first:KIND`` is parametrized by an event kind)."""


def observable_name(obs):
    """The name of an observable: itself (a string), a user function's ``__name__`` or a pair's first item."""
    if isinstance(obs, str):
        return obs
    if isinstance(obs, tuple):
        return str(obs[0])
    return getattr(obs, "__name__", repr(obs))


def check_observables(observables, where="observables"):
    """Raise :class:`OptionError` for an unknown name or a user observable that is not callable."""
    names = []
    for obs in observables:
        if isinstance(obs, str):
            if obs.startswith("first:"):
                if obs[6:] not in _KINDS:
                    raise OptionError(f"{where}: {obs!r}: unknown event kind; use first:KIND with KIND in {list(_KINDS)}")
            elif obs not in BUILTIN:
                raise OptionError(f"{where}: unknown observable {obs!r}; built-in: {sorted(BUILTIN)} and first:KIND "
                                  "(user functions of the Trajectory go through the Python API)")
        elif isinstance(obs, tuple):
            if len(obs) != 2 or not isinstance(obs[0], str) or not callable(obs[1]):
                raise OptionError(f"{where}: a named observable must be (name, function), got {obs!r}")
        elif not callable(obs):
            raise OptionError(f"{where}: an observable is a name or a function of the Trajectory, got {obs!r}")
        name = observable_name(obs)
        if name in names:
            raise OptionError(f"{where}: observable {name!r} given twice")
        names.append(name)


def _scalar(v, where):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, str):
        return v
    if v is None:
        return math.nan
    if isinstance(v, np.ndarray) and v.size == 1:
        return _scalar(v.item(), where)
    raise OptionError(f"observable {where} returned {type(v).__name__}; return a number, string, bool or a dict of them")


def evaluate(observables, tr):
    """The columns of all ``observables`` for one trajectory (``status`` always included)."""
    row = _status(tr)
    for obs in observables:
        if obs == "status":
            continue
        if isinstance(obs, str):
            if obs.startswith("first:"):
                times = [e.time for e in tr.events[1:] if e.kind.name == obs[6:]]
                row[f"first_{obs[6:]}"] = float(times[0]) if times else math.nan
            else:
                row.update(BUILTIN[obs](tr))
            continue
        name, fn = obs if isinstance(obs, tuple) else (observable_name(obs), obs)
        v = fn(tr)
        if isinstance(v, dict):
            row.update({f"{name}.{k}": _scalar(x, f"{name}[{k!r}]") for k, x in v.items()})
        else:
            row[name] = _scalar(v, name)
    return row
