"""Sweep specifications: the model, the parameter values (grid or sample), the options and the observables.

A spec is a TOML file (or the same tables as a Python dict)::

    [sweep]
    model = "../models/cross_slide.toml"      # relative to the spec file
    t_span = [0.0, 0.5]
    observables = ["status", "start_classification", "events"]
    batch_size = 16                           # optional: runs per Dask task
    store = "results/sweeps/cross_slide"      # optional: results directory (relative to the working directory)

    [parameters]                              # fixed overrides for every run
    P = 40.0

    [grid]                                    # the Cartesian product of these values
    mu1 = {start = 0.3, stop = 8.0, num = 12, log = true}
    mu2 = [0.1, 0.5, 1.0]
    # or {start, stop, step} (stop included when on the step), {start, stop, num}

    [sample]                                  # instead of [grid]: a quasi-random sample
    method = "sobol"                          # or "lhs" (scipy.stats.qmc), with a seed
    n = 64
    seed = 1
    bounds = {F0 = [1.0, 20.0], mu_s = {low = 0.1, high = 1.0, log = true}}

    [options]                                 # keyword options of pympc.simulate
    on_ambiguous = "stop"
    samples = 101
    timeout = 60.0                            # optional: wall-time limit of one run in s (status TIMEOUT past it)

Everything is checked when the spec is built — the model file parses, every
parameter exists in it, every range is non-empty, every observable and option
is known, every value has its type — so a bad spec is a clear
:class:`~pympc.errors.OptionError` or :class:`~pympc.errors.ModelError` naming
the file, table and key before anything runs.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ModelError, OptionError
from .observables import DEFAULT_OBSERVABLES, check_observables

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = ["SweepSpec", "ModelSource", "load_spec", "model_hash"]

_SWEEP_KEYS = {"model", "t_span", "observables", "batch_size", "store"}
_TOP = {"sweep", "parameters", "grid", "sample", "options"}
_NOT_OPTIONS = {"system", "t_span", "progress", "overrides", "params", "options"}


def model_hash(text):
    """The SHA-256 (hex) of a model file's text: part of every run key."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ModelSource:
    """A model file's text, name and hash: what travels to the workers (a few kB, no parsing there twice)."""

    text: str
    source: str
    hash: str

    @classmethod
    def read(cls, path):
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelError(f"{path}: cannot read the model file ({exc.strerror}); check the sweep's model path") from None
        return cls(text, str(path), model_hash(text))

    def load(self, **overrides):
        """The System with these parameter values (the model file's parameters overridden)."""
        from ..mechanics.modelfile import build_model
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as exc:
            raise ModelError(f"{self.source}: not valid TOML: {exc}") from None
        return build_model(data, self.source, **overrides)


def _number(v):
    """A list entry that must be a number (not a string, not a bool)."""
    if isinstance(v, (str, bool)) or not isinstance(v, (int, float, np.number)):
        raise TypeError(v)
    return float(v)


def _axis(name, v, where, number=_number):
    """The values of one grid axis: a list, {start, stop, num[, log]} or {start, stop, step}.

    ``number`` turns a list entry into a float (:func:`_expression_number` lets it be an expression).
    """
    if isinstance(v, (int, float, str)) and not isinstance(v, bool):
        v = [v]
    if isinstance(v, (list, tuple, np.ndarray)):        # tuples and arrays from the Python API
        try:
            values = np.array([number(x) for x in np.asarray(v, dtype=object).ravel()])
        except (TypeError, ValueError):
            raise OptionError(f"{where}: {name} must be a list of numbers, got {v!r}") from None
    elif isinstance(v, dict):
        allowed = {"start", "stop", "num", "step", "log"}
        if set(v) - allowed or not {"start", "stop"} <= set(v) or ("num" in v) == ("step" in v):
            raise OptionError(f"{where}: {name} must be a list or a table {{start, stop, num[, log]}} or "
                              f"{{start, stop, step}}; got keys {sorted(v)}")
        try:
            a, b = float(v["start"]), float(v["stop"])
        except (TypeError, ValueError):
            raise OptionError(f"{where}: {name}: start and stop must be numbers, got {v!r}") from None
        if "num" in v:
            num = v["num"]
            if isinstance(num, bool) or not isinstance(num, int) or num < 1:
                raise OptionError(f"{where}: {name}: num must be an integer >= 1, got {num!r}")
            if not isinstance(v.get("log", False), bool):
                raise OptionError(f"{where}: {name}: log must be true or false, got {v['log']!r}")
            if v.get("log", False):
                if not (a > 0 and b > 0):
                    raise OptionError(f"{where}: {name}: a log range needs start > 0 and stop > 0, got {a}, {b}")
                values = np.geomspace(a, b, num)
            else:
                values = np.linspace(a, b, num)
        else:
            if v.get("log", False):
                raise OptionError(f"{where}: {name}: log = true goes with num, not step")
            step = v["step"]
            if isinstance(step, bool) or not isinstance(step, (int, float)) or not step > 0:
                raise OptionError(f"{where}: {name}: step must be a number > 0, got {step!r}")
            count = math.floor((b - a) / step * (1 + 1e-12) + 1e-9) + 1 if b >= a else 0
            values = a + step * np.arange(count)
    else:
        raise OptionError(f"{where}: {name} must be a list of values or a range table, got {v!r}")
    if values.size == 0:
        raise OptionError(f"{where}: {name} has no values (empty range {v!r}); give stop >= start or a non-empty list")
    if not np.all(np.isfinite(values)):
        raise OptionError(f"{where}: {name} has non-finite values {values.tolist()}")
    return [float(x) for x in values]


def _expression_number(system, where):
    """A number, or an expression string of the model file's language over the model's parameter values."""
    from ..mechanics.expressions import parse
    values = dict(system.parameters)

    def number(v):
        return parse(v, values, variables=(), where=where).value if isinstance(v, str) else _number(v)
    return number


def _sample(table, where):
    allowed = {"method", "n", "seed", "bounds", "scramble"}
    bad = set(table) - allowed
    if bad:
        raise OptionError(f"{where}: unknown key(s) {sorted(bad)}; allowed: {sorted(allowed)}")
    for key, types, what in (("method", str, "'sobol' or 'lhs'"), ("seed", int, "an integer"),
                             ("scramble", bool, "true or false")):
        if key in table:
            _check_type(table[key], types, what, None, f"{where} {key}")
    method = table.get("method", "sobol").lower()
    if method not in ("sobol", "lhs"):
        raise OptionError(f"{where}: method must be 'sobol' or 'lhs', got {method!r}")
    n = table.get("n")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise OptionError(f"{where}: n (number of runs) must be an integer >= 1, got {n!r}")
    bounds = table.get("bounds")
    if not isinstance(bounds, dict) or not bounds:
        raise OptionError(f"{where}: bounds must name at least one parameter: {{name = [low, high]}}")
    names, lows, highs, logs = [], [], [], []
    for name, b in bounds.items():
        log = False
        if isinstance(b, dict):
            if set(b) - {"low", "high", "log"}:
                raise OptionError(f"{where}: bounds.{name}: keys are low, high, log; got {sorted(b)}")
            if not isinstance(b.get("log", False), bool):
                raise OptionError(f"{where}: bounds.{name}: log must be true or false, got {b['log']!r}")
            log, b = b.get("log", False), [b.get("low"), b.get("high")]
        try:
            lo, hi = (float(x) for x in b)
        except (TypeError, ValueError):
            raise OptionError(f"{where}: bounds.{name} must be [low, high], got {b!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise OptionError(f"{where}: bounds.{name}: [{lo}, {hi}] is not a finite range; a sample needs finite "
                              "low and high")
        if not hi > lo:
            raise OptionError(f"{where}: bounds.{name}: empty range [{lo}, {hi}]; give high > low")
        if log and lo <= 0:
            raise OptionError(f"{where}: bounds.{name}: log bounds need low > 0, got {lo}")
        names.append(name), lows.append(lo), highs.append(hi), logs.append(log)
    from scipy.stats import qmc
    seed = table.get("seed", 0)
    d = len(names)
    engine = (qmc.Sobol(d, scramble=bool(table.get("scramble", True)), rng=seed) if method == "sobol"
              else qmc.LatinHypercube(d, rng=seed))
    u = engine.random(n)
    lo, hi, lg = np.array(lows), np.array(highs), np.array(logs)
    lo_t, hi_t = np.where(lg, np.log(np.where(lg, lo, 1)), lo), np.where(lg, np.log(np.where(lg, hi, 1)), hi)
    x = qmc.scale(u, lo_t, hi_t)
    x = np.where(lg, np.exp(x), x)
    return names, [dict(zip(names, map(float, row))) for row in x]


_NUMBER = (int, float)
_OPTION_TYPES = {"enumerate_pairs": (int, "an integer >= 0", 0), "zeno_events": (int, "an integer >= 2", 2),
                 "velocity_tol": (_NUMBER, "a number >= 0", 0), "probe_delta": (_NUMBER, "a number >= 0", 0),
                 "initial_tol": (_NUMBER, "a number >= 0", 0), "project_initial": (bool, "true or false", None),
                 "force_sensitivities": (bool, "true or false", None), "method": (str, "a string", None),
                 "formulation": (str, "a string", None), "on_ambiguous": (str, "a string", None)}


def _check_type(value, types, what, least, where):
    ok = isinstance(value, types) and (types is bool or not isinstance(value, bool))
    if not ok or (least is not None and not value >= least):
        raise OptionError(f"{where} must be {what}, got {value!r} ({type(value).__name__})")


def _check_options(options, system, t_span, where):
    """Names, types, and the values simulate checks up front (numbers, rules, formulation), before any run."""
    from ..dynamics import SimulateOptions, simulate
    from ..dynamics.simulate import make_formulation
    allowed = set(inspect.signature(simulate).parameters) - _NOT_OPTIONS
    bad = set(options) - allowed
    if bad:
        raise OptionError(f"{where}: unknown simulate option(s) {sorted(bad)}; allowed: {sorted(allowed | {'timeout'})}")
    for k, v in options.items():
        if k in _OPTION_TYPES:
            _check_type(v, _OPTION_TYPES[k][0], _OPTION_TYPES[k][1], _OPTION_TYPES[k][2], f"{where} {k}")
    for k, item, what in (("t_eval", _NUMBER, "a list of times"), ("sensitivities", str, "a list of parameter names")):
        if k in options:
            v = options[k]
            if not isinstance(v, (list, tuple)) or not all(isinstance(x, item) and not isinstance(x, bool) for x in v):
                raise OptionError(f"{where} {k} must be {what}, got {v!r}")
    if "baumgarte" in options:
        v = options["baumgarte"]
        if not isinstance(v, dict) or set(v) - {"alpha", "beta"} or not all(
                isinstance(x, _NUMBER) and not isinstance(x, bool) and x >= 0 for x in v.values()):
            raise OptionError(f"{where} baumgarte must be a table {{alpha = A, beta = B}} of numbers >= 0 (1/s), "
                              f"got {v!r}")
    try:
        opts = SimulateOptions(**{k: v for k, v in options.items() if k in SimulateOptions.keywords()})
        opts.resolve(system, t_span)
        make_formulation(system, opts.formulation)
    except OptionError as exc:
        raise OptionError(f"{where}: {exc}") from None
    return dict(options)


@dataclass
class SweepSpec:
    """A validated sweep: build it with :func:`load_spec` or :meth:`from_dict`.

    Attributes
    ----------
    model : ModelSource
    axes : list of str
        The parameters that vary (grid axes or sampled parameters), in order.
    runs : list of dict
        Parameter values of every run (fixed ``[parameters]`` included).
    t_span : tuple or None
    options : dict
        Keyword options of :func:`pympc.simulate`.
    observables : list
        Observable names (see :mod:`pympc.sweep.observables`) and user functions.
    kind : {"grid", "sample"}
    batch_size : int or None
    store : str or None
    name : str
    fixed : dict
        The ``[parameters]`` table.
    timeout : float or None
        Wall-time limit of one run in seconds (``[options] timeout``); not part of the run keys.
    """

    model: ModelSource
    axes: list
    runs: list
    t_span: tuple | None
    options: dict
    observables: list
    kind: str
    batch_size: int | None = None
    store: str | None = None
    name: str = "sweep"
    fixed: dict = field(default_factory=dict)
    timeout: float | None = None

    @classmethod
    def from_dict(cls, data, base_dir=".", name="sweep", where="sweep spec", observables=None):
        """Build and validate a spec from its tables (``observables`` may add user functions)."""
        if not isinstance(data, dict):
            raise OptionError(f"{where}: expected a table of tables, got {type(data).__name__}")
        bad = set(data) - _TOP
        if bad:
            raise OptionError(f"{where}: unknown table(s) {sorted(bad)}; allowed: {sorted(_TOP)}")
        for table, v in data.items():
            if not isinstance(v, dict):
                raise OptionError(f"{where}: [{table}] must be a table, got {v!r} ({type(v).__name__})")
        sweep = data.get("sweep", {})
        bad = set(sweep) - _SWEEP_KEYS
        if bad:
            raise OptionError(f"{where}: [sweep]: unknown key(s) {sorted(bad)}; allowed: {sorted(_SWEEP_KEYS)}")
        if "model" not in sweep:
            raise OptionError(f"{where}: [sweep] needs model = \"path/to/model.toml\" (relative to the spec file)")
        for key, types, what in (("model", (str, Path), "a path (a string)"), ("store", (str, Path), "a path (a string)"),
                                 ("observables", (list, tuple), "a list of observable names"),
                                 ("t_span", (list, tuple), "[t0, t1]")):
            if key in sweep:
                _check_type(sweep[key], types, what, None, f"{where}: [sweep] {key}")
        model_path = Path(base_dir) / sweep["model"]
        if not model_path.is_file():
            raise ModelError(f"{where}: [sweep] model: no model file {model_path}; give the path relative to the spec file")
        model = ModelSource.read(model_path)
        system = model.load()           # a model that does not build fails here, before anything runs
        known = set(system.parameters)
        fixed = data.get("parameters", {})
        if not isinstance(fixed, dict) or not all(isinstance(v, (int, float, str)) and not isinstance(v, bool)
                                                  for v in fixed.values()):
            raise OptionError(f"{where}: [parameters] must map parameter names to numbers or expressions "
                              "such as \"pi/6\"")
        fixed = {k: _expression_number(system, f"{where}: [parameters] {k}")(v) for k, v in fixed.items()}
        if ("grid" in data) == ("sample" in data):
            raise OptionError(f"{where}: give exactly one of [grid] (values per parameter) and [sample] (Sobol/LHS)")
        if "grid" in data:
            grid = data["grid"]
            if not isinstance(grid, dict) or not grid:
                raise OptionError(f"{where}: [grid] must name at least one parameter")
            axes = list(grid)
            values = [_axis(k, v, f"{where}: [grid]", _expression_number(system, f"{where}: [grid] {k}"))
                      for k, v in grid.items()]
            runs = [dict(zip(axes, combo)) for combo in itertools.product(*values)]
            kind = "grid"
        else:
            axes, runs = _sample(data["sample"], f"{where}: [sample]")
            kind = "sample"
        for names, table in ((axes, "[grid]" if kind == "grid" else "[sample] bounds"), (fixed, "[parameters]")):
            unknown = sorted(set(names) - known)
            if unknown:
                raise OptionError(f"{where}: {table}: unknown parameter(s) {unknown} of model {model.source}; "
                                  f"its parameters are {sorted(known)}")
        both = sorted(set(axes) & set(fixed))
        if both:
            raise OptionError(f"{where}: {both} both fixed in [parameters] and varied; keep one")
        runs = [{**{k: float(v) for k, v in fixed.items()}, **r} for r in runs]
        t_span = sweep.get("t_span")
        if t_span is not None:
            try:
                t_span = (float(t_span[0]), float(t_span[1]))
            except (TypeError, ValueError, IndexError):
                raise OptionError(f"{where}: [sweep] t_span must be [t0, t1], got {t_span!r}") from None
            if not t_span[1] > t_span[0]:
                raise OptionError(f"{where}: [sweep] t_span: t1 must be after t0, got {list(t_span)}")
        elif "t_end" not in system.simulation:
            raise OptionError(f"{where}: [sweep] needs t_span = [t0, t1] (the model has no [simulation] t_end)")
        options = dict(data.get("options", {}))
        timeout = options.pop("timeout", None)
        if timeout is not None:
            _check_type(timeout, _NUMBER, "a number of seconds > 0", None, f"{where}: [options] timeout")
            if not 0 < timeout < math.inf:
                raise OptionError(f"{where}: [options] timeout must be a number of seconds > 0, got {timeout!r}")
            timeout = float(timeout)
        options = _check_options(options, system, t_span, f"{where}: [options]")
        obs = list(sweep.get("observables", DEFAULT_OBSERVABLES)) + list(observables or [])
        check_observables(obs, where=f"{where}: [sweep] observables")
        clash = sorted((set(axes) | set(fixed)) & _RESERVED)
        if clash:
            raise OptionError(f"{where}: parameter name(s) {clash} clash with result columns; rename them in the model")
        batch = sweep.get("batch_size")
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int) or batch < 1):
            raise OptionError(f"{where}: [sweep] batch_size must be an integer >= 1, got {batch!r}")
        store = sweep.get("store")
        return cls(model, axes, runs, t_span, options, obs, kind, batch, store, name, dict(fixed), timeout)

    def observable_names(self):
        """The observables as names (user functions by their ``__name__``), for keys and the manifest."""
        from .observables import observable_name
        return [observable_name(o) for o in self.observables]

    def key(self, params):
        """The content-derived key of one run: model hash, parameters, time span, options, observables, version."""
        from .. import __version__
        blob = json.dumps({"model": self.model.hash, "params": sorted((k, repr(float(v))) for k, v in params.items()),
                           "t_span": self.t_span, "options": sorted((k, repr(v)) for k, v in self.options.items()),
                           "observables": self.observable_names(), "version": __version__}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


_RESERVED = {"key", "run", "status", "message", "error", "traceback", "wall_time", "cpu_time", "pympc_version",
             "model_hash",
             "model", "finished_at", "worker"}


def load_spec(path, observables=None, **tables):
    """Read and validate a sweep spec file.

    Parameters
    ----------
    path : str or Path
        A TOML file with tables ``[sweep]``, ``[parameters]``, ``[grid]`` or
        ``[sample]``, ``[options]`` (see the module docstring).
    observables : list, optional
        Extra observables: names or Python functions of the Trajectory.
    **tables
        Replace whole tables of the file, e.g. ``grid={"mu1": [0.5, 1.0]}``
        (a smaller version of a study); giving ``grid`` drops the file's
        ``[sample]`` and vice versa.

    Returns
    -------
    SweepSpec

    Raises
    ------
    OptionError, ModelError
        Naming the file and table: unknown parameter, empty range, unknown
        observable or option, missing model file.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise OptionError(f"{path}: cannot read the sweep spec ({exc.strerror}); check the path") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionError(f"{path}: not valid TOML: {exc}") from None
    for k, v in tables.items():
        if k == "grid":
            data.pop("sample", None)
        if k == "sample":
            data.pop("grid", None)
        if k == "sweep":
            v = {**data.get("sweep", {}), **v}
        data[k] = v
    return SweepSpec.from_dict(data, base_dir=path.parent, name=path.stem, where=str(path), observables=observables)
