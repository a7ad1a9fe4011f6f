"""Design specifications: the model, the parameters to estimate, the prior, the noise and the design space.

A spec is a TOML file (or the same tables as a Python dict)::

    [design]
    model = "../models/friction_oscillator.toml"   # relative to the spec file
    parameters = ["mu", "mu_s"]                    # θ: what the experiment should determine
    criterion = "D"                                # D, A, E or ME (see pympc.design.fim)
    scale = "relative"                             # criteria of diag(θ) F diag(θ); or "none"
    t_end = 10.0                                   # record length (end time; start: the model's t_start or 0)
    dt = 0.05                                      # sampling interval
    outputs = ["mass.x"]                           # measured outputs
    output_sets = {x = ["mass.x"], xF = ["mass.x", "slot.friction_force"]}   # optional, for an "outputs" axis
    draws = 8                                      # only with a prior distribution: draws averaged over
    seed = 0

    [prior]                                        # parameter values (default: the model file's)
    mu = 0.3
    mu_s = {normal = [0.4, 0.03]}                  # or {uniform = [low, high]}: a distribution (robust design)

    [prior_sd]                                     # optional prior information: adds 1/sd² to F
    mu = 0.2

    [noise]                                        # one entry per measured output
    "mass.x" = 0.002                               # absolute σ, or {relative = 0.01} (of the output's peak)

    [grid]                                         # the design space to explore: a grid ...
    F0 = {start = 2.0, stop = 20.0, num = 8}
    w = [0.5, 1.0, 2.0]
    # [sample] method = "sobol", n = 64, seed = 1, bounds = {F0 = [2, 20], w = [0.5, 3]}   ... or a sample

    [optimize]                                     # continuous design variables and their box
    variables = {F0 = [2.0, 20.0], w = [0.5, 3.0]}
    starts = 4                                     # Nelder–Mead runs, from the best of an initial Sobol sample
    initial = 16                                   # that sample's size
    maxfev = 40                                    # evaluations per run

    [options]                                      # keyword options of pympc.simulate (rtol, ...)

Design variables are model parameters (not in ``parameters``), ``t_end``, ``dt`` and
``outputs`` (a name of ``output_sets``).  The grid and sample tables are read by
the sweep's own readers (:mod:`pympc.sweep.spec`).  Everything is checked here, so
a bad spec is an :class:`~pympc.errors.OptionError` naming the file, table and key.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ModelError, OptionError
from ..identify import friction_pairs, output_names
from ..mechanics import load_model
from ..sweep.spec import _axis, _sample
from .fim import CRITERIA

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

__all__ = ["DesignSpec", "load_design", "RECORD_VARIABLES"]

RECORD_VARIABLES = ("t_end", "dt", "outputs")
"""Design variables that are not model parameters: record length, sampling interval, measured output set."""
_TOP = {"design", "prior", "prior_sd", "noise", "grid", "sample", "optimize", "options"}
_DESIGN = {"model", "parameters", "criterion", "scale", "t_end", "dt", "outputs", "output_sets", "draws", "seed"}
_OPTIMIZE = {"variables", "starts", "initial", "maxfev", "seed"}


@dataclass
class DesignSpec:
    """A validated design problem; build it with :func:`load_design` or :meth:`from_dict`.

    Attributes
    ----------
    model : Path
    names : list of str
        The parameters θ to estimate.
    prior : dict
        Every model parameter's value (file values, ``[prior]`` numbers applied; the means of distributions).
    distribution : dict
        name → (``"normal"``, mean, sd) or (``"uniform"``, low, high).
    draws, seed : int
    prior_sd : dict
    noise : dict
        output → (``"sigma"``, σ) or (``"relative"``, r).
    base : dict
        The design at which nothing varies: ``t_end``, ``dt``, ``outputs`` (a set name) and
        the model's design-variable values.
    output_sets : dict
        name → list of outputs.
    axes : list of str
        Explored design variables; ``points`` their values (dicts).
    optimize : dict
        ``variables`` (name → (low, high)), ``starts``, ``initial``, ``maxfev``, ``seed``.
    criterion, scale : str
    options : dict
        :func:`pympc.simulate` options.
    """

    model: Path
    names: list
    prior: dict
    distribution: dict
    draws: int
    seed: int
    prior_sd: dict
    noise: dict
    base: dict
    output_sets: dict
    axes: list
    points: list
    optimize: dict
    criterion: str = "D"
    scale: str = "relative"
    options: dict = field(default_factory=dict)
    name: str = "design"

    # ------------------------------------------------------------------ building
    @classmethod
    def from_dict(cls, data, base_dir=".", name="design", where="design spec"):
        """Build and validate a spec from its tables (see the module docstring)."""
        if not isinstance(data, dict) or not isinstance(data.get("design", {}), dict):
            raise OptionError(f"{where}: expected tables [design], [prior], [noise], ...; got {data!r:.80}")
        d = data.get("design", {})
        for table, got, allowed in (("", data, _TOP), ("[design]: ", d, _DESIGN)):
            if set(got) - allowed:
                raise OptionError(f"{where}: {table}unknown key(s) or table(s) {sorted(set(got) - allowed)}; "
                                  f"allowed: {sorted(allowed)}")
        model = Path(base_dir) / str(d.get("model", ""))
        if "model" not in d or not model.is_file():
            raise ModelError(f"{where}: [design] model: no model file {model if 'model' in d else ''}; give "
                             "model = \"path/to/model.toml\" (relative to the spec file)")
        system = load_model(model)
        known = dict(system.parameters)
        names = d.get("parameters")
        if isinstance(names, str):
            names = [s.strip() for s in names.split(",") if s.strip()]
        if not names or not all(isinstance(n, str) for n in names):
            raise OptionError(f"{where}: [design] parameters must list the parameters to estimate, e.g. [\"mu\", \"mu_s\"]")
        for n in names:
            if n not in known:
                raise OptionError(f"{where}: [design] parameters: {n!r} is not a parameter of model {model.name}; "
                                  f"its parameters are {sorted(known)}")
        criterion = d.get("criterion", "D")
        if criterion not in CRITERIA:
            raise OptionError(f"{where}: [design] criterion must be one of {sorted(CRITERIA)}, got {criterion!r}")
        scale = d.get("scale", "relative")
        if scale not in ("relative", "none"):
            raise OptionError(f"{where}: [design] scale must be 'relative' or 'none', got {scale!r}")
        prior, distribution = dict(known), {}
        for k, v in data.get("prior", {}).items():
            w = f"{where}: [prior] {k}"
            if k not in known:
                raise OptionError(f"{w}: not a parameter of model {model.name}; its parameters are {sorted(known)}")
            if isinstance(v, dict):
                if len(v) != 1 or next(iter(v)) not in ("normal", "uniform"):
                    raise OptionError(f"{w}: a distribution is {{normal = [mean, sd]}} or {{uniform = [low, high]}}, got {v!r}")
                kind, (a, b) = next(iter(v.items()))
                a, b = _number(a, w), _number(b, w)
                if not b > (a if kind == "uniform" else 0):
                    raise OptionError(f"{w}: {kind} needs {'high > low' if kind == 'uniform' else 'sd > 0'}, got {[a, b]}")
                distribution[k] = (kind, a, b)
                prior[k] = a if kind == "normal" else 0.5 * (a + b)
            else:
                prior[k] = _number(v, w)
        prior_sd = {}
        for k, v in data.get("prior_sd", {}).items():
            if k not in names:
                raise OptionError(f"{where}: [prior_sd] {k}: prior information is for estimated parameters {names}")
            prior_sd[k] = _number(v, f"{where}: [prior_sd] {k}")
            if not prior_sd[k] > 0:
                raise OptionError(f"{where}: [prior_sd] {k} must be > 0, got {v}")
        draws = d.get("draws", 8 if distribution else 1)
        if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
            raise OptionError(f"{where}: [design] draws must be an integer >= 1, got {draws!r}")
        outputs_known = output_names(system)
        sets = {k: list(v) for k, v in d.get("output_sets", {}).items()}
        if "outputs" in d:
            sets.setdefault("default", list(d["outputs"]))
        if not sets:
            raise OptionError(f"{where}: [design] needs outputs = [...] (the measured outputs); model outputs are "
                              f"{outputs_known}")
        for k, outs in sets.items():
            if not outs:
                raise OptionError(f"{where}: [design] output set {k!r} is empty")
            for o in outs:
                if o not in outputs_known:
                    raise OptionError(f"{where}: [design] outputs: {o!r} is not an output of model {model.name}; "
                                      f"outputs are {outputs_known}")
        noise = {}
        for o, v in data.get("noise", {}).items():
            w = f"{where}: [noise] {o!r}"
            if isinstance(v, dict):
                if set(v) not in ({"sigma"}, {"relative"}):
                    raise OptionError(f"{w}: give a number (σ), {{sigma = σ}} or {{relative = r}}, got {v!r}")
                kind, x = next(iter(v.items()))
            else:
                kind, x = "sigma", v
            x = _number(x, w)
            if not x > 0:
                raise OptionError(f"{w}: the noise level must be > 0, got {x}")
            noise[o] = (kind, x)
        missing = sorted({o for outs in sets.values() for o in outs} - set(noise))
        if missing:
            raise OptionError(f"{where}: [noise] gives no noise level for measured output(s) {missing}; "
                              "add e.g. \"mass.x\" = 0.001 (absolute σ) or {relative = 0.01}")
        t0 = float(system.simulation.get("t_start", 0.0))
        base = {"t_end": _number(d.get("t_end", system.simulation.get("t_end")), f"{where}: [design] t_end"),
                "dt": _number(d.get("dt", 0.05), f"{where}: [design] dt"),
                "outputs": "default" if "default" in sets else next(iter(sets))}
        design_vars = sorted(set(known) - set(names)) + list(RECORD_VARIABLES)

        def check_var(k, table):
            if k not in design_vars:
                what = ("an estimated parameter (it cannot also be designed)" if k in names else
                        f"not a parameter of model {model.name}")
                raise OptionError(f"{where}: {table}: design variable {k!r} is {what}; design variables are the "
                                  f"model parameters {sorted(set(known) - set(names))} and {list(RECORD_VARIABLES)}")
        if "grid" in data and "sample" in data:
            raise OptionError(f"{where}: give one of [grid] and [sample], not both")
        axes, points = [], [{}]
        if "grid" in data:
            grid = dict(data["grid"])
            values = []
            for k, v in grid.items():
                check_var(k, "[grid]")
                if k == "outputs":
                    v = [v] if isinstance(v, str) else list(v)
                    unknown = [s for s in v if s not in sets]
                    if unknown:
                        raise OptionError(f"{where}: [grid] outputs: {unknown} are not output sets {sorted(sets)}")
                    values.append(v)
                else:
                    values.append(_axis(k, v, f"{where}: [grid]"))
            axes = list(grid)
            points = [dict(zip(axes, c)) for c in itertools.product(*values)]
        elif "sample" in data:
            axes, points = _sample(dict(data["sample"]), f"{where}: [sample]")
            for k in axes:
                if k == "outputs":
                    raise OptionError(f"{where}: [sample]: outputs is not continuous; put it in a [grid]")
                check_var(k, "[sample] bounds")
        opt = dict(data.get("optimize", {}))
        bad = set(opt) - _OPTIMIZE
        if bad:
            raise OptionError(f"{where}: [optimize]: unknown key(s) {sorted(bad)}; allowed: {sorted(_OPTIMIZE)}")
        variables = {}
        for k, b in opt.get("variables", {}).items():
            check_var(k, "[optimize] variables")
            if k == "outputs":
                raise OptionError(f"{where}: [optimize] variables: outputs is not continuous; explore it in a [grid]")
            try:
                lo, hi = (float(x) for x in b)
            except (TypeError, ValueError):
                raise OptionError(f"{where}: [optimize] variables.{k} must be [low, high], got {b!r}") from None
            if not hi > lo:
                raise OptionError(f"{where}: [optimize] variables.{k}: empty range [{lo}, {hi}]")
            variables[k] = (lo, hi)
        optimize = {"variables": variables, "starts": int(opt.get("starts", 4)), "initial": int(opt.get("initial", 16)),
                    "maxfev": int(opt.get("maxfev", 40)), "seed": int(opt.get("seed", 0))}
        spec = cls(model, list(names), prior, distribution, draws, int(d.get("seed", 0)), prior_sd, noise, base, sets,
                   axes, points, optimize, criterion, scale, dict(data.get("options", {})), name)
        for p in points[:1] + [{}]:
            spec.record(p, where=where, t0=t0)     # the base design and the first point are well formed
        return spec

    # ------------------------------------------------------------------ one design point
    def record(self, point, where=None, t0=None):
        """``(values, t, outputs)`` of the design ``point`` (a dict of design variables; the rest from the base).

        Raises OptionError for an unknown design variable, a record shorter than two
        samples or fewer values than parameters.
        """
        where = where or f"design spec {self.name!r}"
        known = set(self.prior) - set(self.names)
        for k in point:
            if k not in known and k not in RECORD_VARIABLES:
                raise OptionError(f"{where}: design variable {k!r} is not a design variable of model "
                                  f"{self.model.name}; they are {sorted(known)} and {list(RECORD_VARIABLES)}")
        if t0 is None:
            t0 = float(load_model(self.model).simulation.get("t_start", 0.0))
        d = {**self.base, **point}
        t_end, dt = float(d["t_end"]), float(d["dt"])
        if not (dt > 0 and t_end > t0 + dt):
            raise OptionError(f"{where}: the record {t0:g} .. {t_end:g} with dt = {dt:g} has fewer than two samples; "
                              "give t_end > start + dt and dt > 0")
        n = int(np.floor((t_end - t0) / dt * (1 + 1e-12))) + 1
        t = t0 + dt * np.arange(n)
        outputs = self.output_sets.get(d["outputs"])
        if outputs is None:
            raise OptionError(f"{where}: outputs = {d['outputs']!r} is not an output set {sorted(self.output_sets)}")
        if n * len(outputs) < len(self.names):
            raise OptionError(f"{where}: {n * len(outputs)} measured values cannot determine {len(self.names)} parameters")
        values = {**self.prior, **{k: float(v) for k, v in point.items() if k not in RECORD_VARIABLES}}
        return values, t, list(outputs)

    def prior_draws(self):
        """The parameter dicts the information is averaged over: the prior values, or ``draws`` draws of the distribution.

        Draws are clipped to ≥ 0 for friction coefficients, and a static coefficient
        to at least its kinetic one (μ_s ≥ μ, as the model requires).
        """
        if not self.distribution:
            return [dict(self.prior)]
        rng = np.random.default_rng(self.seed)
        pairs = [(k, s) for _, k, s in friction_pairs(self.model) if k and s]
        friction = {n for p in pairs for n in p} | {k for _, k, _ in friction_pairs(self.model) if k}
        out = []
        for _ in range(self.draws):
            v = dict(self.prior)
            for k, (kind, a, b) in self.distribution.items():
                v[k] = float(rng.normal(a, b) if kind == "normal" else rng.uniform(a, b))
                if k in friction:
                    v[k] = max(v[k], 0.0)
            for k, s in pairs:
                v[s] = max(v[s], v[k])
            out.append(v)
        return out


def _number(v, where):
    if isinstance(v, bool):
        raise OptionError(f"{where}: expected a number, got {v!r}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise OptionError(f"{where}: expected a number, got {v!r}") from None
    if not np.isfinite(x):
        raise OptionError(f"{where}: expected a finite number, got {v!r}")
    return x


def load_design(path, model=None):
    """Read and validate a design spec file (TOML; see :mod:`pympc.design.spec`).

    ``model`` (a path, relative to the working directory) replaces the spec's ``[design] model``.

    Raises
    ------
    OptionError, ModelError
        Naming the file and table: unknown parameter or design variable, missing
        noise level, empty range, missing model file.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise OptionError(f"{path}: cannot read the design spec ({getattr(exc, 'strerror', None) or exc}); "
                          "check the path and the TOML syntax") from None
    if model is not None:
        data.setdefault("design", {})["model"] = str(Path(model).resolve())
    return DesignSpec.from_dict(data, base_dir=path.parent, name=path.stem, where=str(path))
