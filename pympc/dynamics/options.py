"""The options of :func:`pympc.simulate` as one validated object, :class:`SimulateOptions`.

The keywords of ``simulate`` become a ``SimulateOptions`` (checked once, when it is made); a run then
resolves it against the model (:meth:`SimulateOptions.resolve`: the ``[simulation]`` table's values for
what was not given, the time span, the derived step caps).  It pickles with the standard library, so a
sweep validates it before it sends the runs out, and the runs receive the same object.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ..errors import OptionError
from .crossings import TimeScale
from .modes import Baumgarte

__all__ = ["SimulateOptions", "AMBIGUITY_RULES", "CROSSCHECK_SOLVERS", "METHODS", "MODEL_DEFAULTS"]

AMBIGUITY_RULES = {
    "stop": "stop with status PARADOX (default)",
    "lemke": "take the solution Lemke's method reaches from the covering vector e",
    "min_force": "take the enumerated solution with the smallest total normal force Σ|λ|",
}
"""Rules ``on_ambiguous`` may select when an event HLCP has several solutions with different modes."""

CROSSCHECK_SOLVERS = {None: (), "ipopt": ("ipopt",), "milp": ("milp",), "all": ("ipopt", "milp")}
"""The values of ``crosscheck`` and the solvers each runs besides Lemke."""

METHODS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")
"""scipy's ``solve_ivp`` methods by name (``method`` may also be an ``OdeSolver`` class)."""

MODEL_DEFAULTS = dict(t_start=0.0, t_end=None, method="DOP853", rtol=1e-10, atol=1e-12, max_events=2000,
                      min_event_spacing=1e-9, max_step=None, baumgarte=None, samples=501, zeno_window=None)
"""Defaults of the options a model's ``[simulation]`` table may also set (``zeno_window`` aside)."""

_FLOATS = ("rtol", "atol", "min_event_spacing", "max_step", "zeno_window")
_POSITIVE = ("rtol", "max_step", "zeno_window")


@dataclass(frozen=True)
class SimulateOptions:
    """How :func:`pympc.simulate` runs: the keywords of ``simulate`` (see there), checked when made.

    ``None`` means the model's ``[simulation]`` value, else the package default (:data:`MODEL_DEFAULTS`).
    Values are normalized: numbers to float or int, ``baumgarte`` to a :class:`Baumgarte`, ``t_eval`` to a
    tuple of floats.  Bad values raise :class:`~pympc.errors.OptionError` naming the option.

    Examples
    --------
    >>> o = SimulateOptions(rtol=1e-8, on_ambiguous="min_force")
    >>> o.rtol, o.zeno_events
    (1e-08, 20)
    >>> import pickle; pickle.loads(pickle.dumps(o)) == o
    True
    """

    formulation: object = None
    method: object = None
    rtol: float | None = None
    atol: float | None = None
    max_step: float | None = None
    max_events: int | None = None
    min_event_spacing: float | None = None
    zeno_events: int = 20
    zeno_window: float | None = None
    baumgarte: Baumgarte | None = None
    samples: int | None = None
    t_eval: tuple | None = None
    crosscheck: str | None = None
    on_ambiguous: str = "stop"
    enumerate_pairs: int = 8
    velocity_tol: float = 1e-8
    probe_delta: float = 1e-6
    project_initial: bool = False
    initial_tol: float = 1e-6

    def __post_init__(self):
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        if self.on_ambiguous not in AMBIGUITY_RULES:
            raise OptionError(f"on_ambiguous must be one of {sorted(AMBIGUITY_RULES)}, got {self.on_ambiguous!r}")
        if self.crosscheck not in CROSSCHECK_SOLVERS:
            raise OptionError(f"crosscheck must be one of {list(CROSSCHECK_SOLVERS)}, got {self.crosscheck!r}")
        f = self.formulation
        if not (f is None or f in ("general", "tree") or (hasattr(f, "assemble") and hasattr(f, "slots"))):
            raise OptionError(f"formulation must be 'general', 'tree' or a formulation object, got {f!r}")
        for key in _FLOATS:
            v = getattr(self, key)
            if v is None:
                continue
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise OptionError(f"{key} must be a number, got {v!r}") from None
            positive = key in _POSITIVE
            if not v >= 0 or (positive and v == 0) or v == np.inf:
                raise OptionError(f"{key} must be a finite number {'> 0' if positive else '>= 0'}, got {v}")
            put(key, v)
        for key, least in (("max_events", 0), ("samples", 2)):
            v = getattr(self, key)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or v != int(v) \
                    or v < least:
                raise OptionError(f"{key} must be an integer >= {least}, got {v!r}")
            put(key, int(v))
        if isinstance(self.method, str) and self.method not in METHODS:
            raise OptionError(f"method must be one of scipy's solve_ivp methods {sorted(METHODS)}, "
                              f"got {self.method!r}")
        if self.method is not None and not isinstance(self.method, (str, type)):
            raise OptionError(f"method must be a solve_ivp method name or an OdeSolver class, got {self.method!r}")
        z = self.zeno_events
        if isinstance(z, bool) or not isinstance(z, (int, np.integer)) or z < 2:
            raise OptionError(f"zeno_events must be an integer >= 2, got {z!r}")
        put("zeno_events", int(z))
        tol = self.initial_tol
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < np.inf:
            raise OptionError(f"initial_tol must be a finite number >= 0, got {tol!r}")
        put("initial_tol", float(tol))
        b = self.baumgarte
        if isinstance(b, dict):
            try:
                b = Baumgarte(**b)
            except TypeError:
                raise OptionError(f"baumgarte must be a Baumgarte or a table {{alpha = ..., beta = ...}}, "
                                  f"got {b!r}") from None
        if b is not None and not isinstance(b, Baumgarte):
            raise OptionError(f"baumgarte must be a Baumgarte or a dict with alpha, beta, got {b!r}")
        put("baumgarte", b)
        for key in ("enumerate_pairs", "velocity_tol", "probe_delta"):
            try:
                put(key, (int if key == "enumerate_pairs" else float)(getattr(self, key)))
            except (TypeError, ValueError):
                raise OptionError(f"{key} must be a number, got {getattr(self, key)!r}") from None
        put("project_initial", bool(self.project_initial))
        if self.t_eval is not None:
            put("t_eval", tuple(float(t) for t in _checked_times(self.t_eval)))

    @classmethod
    def keywords(cls):
        """The names of the options (keywords of :func:`pympc.simulate` that become a ``SimulateOptions``)."""
        return tuple(f.name for f in fields(cls))

    def updated(self, **changes):
        """A copy with ``changes`` (checked like the constructor's arguments); ``None`` values are left out
        (none left: this object itself, already checked)."""
        changes = {k: v for k, v in changes.items() if v is not None}
        return replace(self, **changes) if changes else self

    def resolve(self, system, t_span=None):
        """The settings of one run of ``system`` on ``t_span`` (a dict; internal to the simulator).

        The model's ``[simulation]`` values fill what was not given (checked the same way), then the
        package defaults; the time span (``t_span`` or the table's ``t_start``/``t_end``) is checked,
        and so is ``t_eval`` against it.  Derived: ``stick_max_step`` (1/200 of the span unless
        ``max_step`` is given), ``scan_step``, the forcing's :class:`TimeScale` and the default
        ``zeno_window``.
        """
        table = dict(system.simulation)
        mine = self.updated(**{k: v for k, v in table.items() if k in MODEL_DEFAULTS and k not in
                               ("t_start", "t_end") and getattr(self, k) is None})
        o = dict(MODEL_DEFAULTS)
        o.update({k: v for k, v in table.items() if k in ("t_start", "t_end")})
        o.update({k: getattr(mine, k) for k in MODEL_DEFAULTS if k not in ("t_start", "t_end")
                  and getattr(mine, k) is not None})
        if t_span is not None:
            try:
                o["t_start"], o["t_end"] = (float(t_span[0]), float(t_span[1]))
            except (TypeError, ValueError, IndexError):
                raise OptionError(f"t_span must be (t0, t1), got {t_span!r}") from None
        if o["t_end"] is None:
            raise OptionError("t_span is needed (or t_end in the model's [simulation] table)")
        if not o["t_end"] > o["t_start"]:
            raise OptionError(f"t_span: t1 = {o['t_end']} must be after t0 = {o['t_start']}")
        o["baumgarte"] = o["baumgarte"] or Baumgarte()
        span = o["t_end"] - o["t_start"]
        if o["max_step"] is None:
            # a sticking phase is trivial for the integrator (its error estimate cannot see a forcing
            # that will break the stick): phases with a sticking slot get at most this step
            o["stick_max_step"] = span / 200
            o["max_step"] = np.inf
        else:
            o["stick_max_step"] = o["max_step"]
        # events are searched between samples at most this far apart, curvature-bounded in between
        # (dynamics/crossings.py): fine enough to resolve the forcing whatever the steps
        o["timescale"] = TimeScale.of(system)
        o["scan_step"] = min(o["stick_max_step"], span / 200)        # a cap; τ/8 of each window below it
        tau = o["timescale"].tau(o["t_start"], o["t_end"])
        if o["zeno_window"] is None:
            # chattering: zeno_events transitions within a small fraction of the span or of the forcing's time scale
            o["zeno_window"] = min(span * 1e-3, tau / 10)
        o.update(on_ambiguous=self.on_ambiguous, crosscheck=CROSSCHECK_SOLVERS[self.crosscheck],
                 enumerate_pairs=self.enumerate_pairs, velocity_tol=self.velocity_tol, probe_delta=self.probe_delta,
                 initial_tol=self.initial_tol, zeno_events=self.zeno_events)
        t0, t1 = o["t_start"], o["t_end"]
        if self.t_eval is not None:
            grid = np.asarray(self.t_eval, dtype=float)
            slack = 1e-12 * max(1.0, abs(t0), abs(t1))     # round-off of a computed grid (np.arange) is not an error
            if grid[0] < t0 - slack or grid[-1] > t1 + slack:
                raise OptionError(f"t_eval runs from {grid[0]:g} to {grid[-1]:g} s, outside the span {t0:g} .. "
                                  f"{t1:g} s; give times inside the span (or widen t_span)")
            o["grid"] = np.clip(grid, t0, t1)
        else:
            o["grid"] = np.linspace(t0, t1, int(o["samples"]))
        return o


def _checked_times(t_eval):
    """``t_eval`` as a float array: finite, strictly increasing (an OptionError saying which, otherwise)."""
    try:
        grid = np.asarray(t_eval, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise OptionError(f"t_eval must be a sequence of times in s, got {type(t_eval).__name__}") from None
    if grid.size == 0 or not np.all(np.isfinite(grid)):
        raise OptionError("t_eval must be a non-empty sequence of finite times")
    if np.any(np.diff(grid) <= 0):
        i = int(np.argmax(np.diff(grid) <= 0))
        raise OptionError(f"t_eval must be strictly increasing: t_eval[{i + 1}] = {grid[i + 1]:g} follows {grid[i]:g}")
    return grid
