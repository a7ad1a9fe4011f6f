"""Measured experiments: a model file, the parameter values held fixed, and data.

An :class:`Experiment` validates its data once (times finite, strictly increasing,
inside the span; outputs named like the columns of
:meth:`pympc.Trajectory.to_dataframe`; no NaN) and knows how to simulate itself
at given parameter values (:func:`simulate_experiment`, the one place where the
identification runs the simulator) and read the simulated outputs at its times.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..dynamics import make_formulation, simulate
from ..errors import OptionError, SimulationError
from ..mechanics import Expression, System, load_model
from .parameters import as_number

__all__ = ["Experiment", "output_names", "fittable_outputs", "friction_pairs", "simulate_experiment", "read_data", "synthetic_record",
           "trajectory_output"]

_SLOT_OUTPUTS = ("normal_force", "friction_force", "slip_velocity", "position")
_ENERGIES = ("kinetic", "potential", "dissipated", "work")


def output_names(system):
    """Names of the outputs a simulation of ``system`` has (as in ``Trajectory.to_dataframe()``).

    Coordinates and their velocities (``body.x``, ``body.x_dot``), per slot
    ``slot.normal_force``, ``slot.friction_force``, ``slot.slip_velocity``, ``slot.position`` (along the
    slot), and the energies.
    """
    form = make_formulation(system)
    names = [f"{c}{suffix}" for c in form.absolute_names for suffix in ("", "_dot")]
    names += [f"{s.name}.{q}" for s in form.slots for q in _SLOT_OUTPUTS]
    return names + list(_ENERGIES)


def fittable_outputs(system):
    """The outputs a fit can use: those with forward sensitivities (coordinates, velocities, slot forces, slip).

    The energies (kinetic, potential, dissipated, work) have none, so the default
    sensitivity Jacobian could not differentiate them.
    """
    return [o for o in output_names(system) if o not in _ENERGIES]


def friction_pairs(model):
    """The friction coefficients of each slot of a model, as parameter names.

    Parameters
    ----------
    model : System or path
        A System (its elements as defined: fields are expressions of the
        parameters) or a model file.

    Returns
    -------
    list of (slot name, kinetic parameter or None, static parameter or None)
        A slot's ``mu``/``mu_s`` counts when it is exactly one parameter of the
        model; a slot without ``mu_s`` has ``mu_s = mu`` (static parameter None).
    """
    system = model if isinstance(model, System) else load_model(model)

    def name(v):
        return v.text.strip() if isinstance(v, Expression) and v.text.strip() in v.parameters else None

    return [(sl.name, name(system.definition(sl.name).mu), name(system.definition(sl.name).mu_s))
            for sl in system.slots]


def read_data(data, time="t"):
    """A DataFrame from a DataFrame, a dict of arrays, or a ``.csv``, ``.parquet`` or ``.npz`` file."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data.copy()
    if isinstance(data, dict):
        try:
            return pd.DataFrame({k: np.asarray(v, dtype=float) for k, v in data.items()})
        except ValueError as exc:
            raise OptionError(f"data: the arrays of the dict must be numeric and of equal length ({exc})") from None
    if isinstance(data, (str, Path)):
        path = Path(data)
        if not path.is_file():
            raise OptionError(f"data file {path} does not exist")
        suffix = path.suffix.lower()
        try:
            if suffix == ".csv":
                return pd.read_csv(path, comment="#")
            if suffix in (".parquet", ".pq"):
                return pd.read_parquet(path)
            if suffix == ".npz":
                with np.load(path, allow_pickle=False) as f:
                    return pd.DataFrame({k: np.asarray(f[k], dtype=float).reshape(-1) for k in f.files})
        except (OSError, ValueError, ImportError) as exc:
            raise OptionError(f"{path}: cannot read the data ({exc})") from None
        raise OptionError(f"{path}: data files must be .csv, .parquet or .npz (got {suffix or 'no suffix'!r})")
    raise OptionError(f"data must be a pandas DataFrame, a dict of arrays or a .csv/.parquet/.npz path, "
                      f"got {type(data).__name__}")


class Experiment:
    """One measured run of a mechanism.

    Parameters
    ----------
    model : str or Path
        The TOML model file.
    data : DataFrame, dict, or path (.csv, .parquet, .npz)
        A time column (``time``, default ``"t"``) and one column per measured
        output, named like the columns of :meth:`pympc.Trajectory.to_dataframe`
        (``"mass.x"``, ``"slot.normal_force"``, ...).
    outputs : list of str, optional
        The columns to fit (default: every column but the time).
    fixed : dict, optional
        Parameter values of the model held fixed in this experiment (the known
        inputs: a push, a mass, ...); the others keep the file's values.
    noise : float or dict, optional
        Standard deviation of the measurement noise, for all outputs or per
        output.  Given for every output, residuals are weighted by 1/σ and the
        covariance uses it; not given, every output has weight 1 and σ² is
        estimated from the residuals (SSE/(n − p)).
    t_span : (float, float), optional
        Simulated span (default: the model's ``t_start``, or 0, to the last data time).
    name : str, optional
    simulate_options : dict, optional
        Passed to :func:`pympc.simulate` (``rtol``, ``formulation``, ...).

    Raises
    ------
    OptionError, ModelError
        NaN or infinite values, unsorted or repeated times, times outside the
        span, unknown output names or parameters, bad noise levels.
    """

    def __init__(self, model, data, *, outputs=None, fixed=None, noise=None, t_span=None, name=None, time="t",
                 simulate_options=None):
        if isinstance(model, System):
            raise OptionError("Experiment needs the model file path (its [parameters] name the friction pairs)")
        if not isinstance(model, (str, Path)):
            raise OptionError(f"Experiment: model must be the path of a TOML model file, got {type(model).__name__}")
        self.model = Path(model)
        if fixed is not None and not isinstance(fixed, dict):
            raise OptionError(f"Experiment: fixed must be a dict {{parameter name: number}}, got {fixed!r} "
                              f"({type(fixed).__name__})")
        self.fixed = {k: as_number(v, f"Experiment: fixed[{k!r}]") for k, v in (fixed or {}).items()}
        self.system = load_model(self.model, **self.fixed)       # unknown parameter names raise ModelError here
        self.name = name or self.model.stem
        self.simulate_options = dict(simulate_options or {})
        for key in ("t_eval", "samples", "overrides", "params", "sensitivities", "progress"):
            if key in self.simulate_options:
                raise OptionError(f"simulate_options: {key!r} is set by the identification, leave it out")
        df = read_data(data)
        where = f"experiment {self.name!r}"
        if time not in df.columns:
            raise OptionError(f"{where}: the data have no time column {time!r} (columns: {list(df.columns)})")
        if len(df) == 0:
            raise OptionError(f"{where}: the data have no rows (only a header: columns {list(df.columns)}); "
                              "give at least one sample")
        known = fittable_outputs(self.system)
        if isinstance(outputs, str):
            outputs = [o.strip() for o in outputs.split(",") if o.strip()]
        outputs = [c for c in df.columns if c != time] if outputs is None else list(outputs)
        if not outputs:
            raise OptionError(f"{where}: no output columns to fit")
        for o in outputs:
            if o not in df.columns:
                raise OptionError(f"{where}: output {o!r} is not a column of the data (columns: {list(df.columns)})")
            if o in _ENERGIES:
                raise OptionError(f"{where}: output {o!r} (an energy) cannot be fitted: it has no sensitivity to "
                                  f"the parameters; drop that column or pick outputs with --outputs / outputs=; "
                                  f"fittable outputs of model {self.model.name} are {known}")
            if o not in known:
                raise OptionError(f"{where}: {o!r} is not an output of model {self.model.name}; "
                                  f"fittable outputs are {known}")
        try:
            t = df[time].to_numpy(dtype=float)
            y = df[outputs].to_numpy(dtype=float)
        except (ValueError, TypeError) as exc:
            raise OptionError(f"{where}: the data must be numeric ({exc})") from None
        if not np.all(np.isfinite(t)):
            raise OptionError(f"{where}: time column {time!r} has NaN or infinite values (row {int(np.argmin(np.isfinite(t)))})")
        bad = ~np.isfinite(y)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise OptionError(f"{where}: output {outputs[c]!r} has {int(bad[:, c].sum())} NaN/infinite value(s) "
                              f"(first at row {r}, t = {t[r]:g}); drop those rows or fill them")
        d = np.diff(t)
        if np.any(d == 0):
            i = int(np.argmax(d == 0))
            raise OptionError(f"{where}: time {t[i]:g} appears twice (rows {i} and {i + 1}); times must be unique")
        if np.any(d < 0):
            i = int(np.argmax(d < 0))
            raise OptionError(f"{where}: times are not sorted (row {i + 1}, t = {t[i + 1]:g}, after t = {t[i]:g}); "
                              "sort the data by time")
        t0 = float(self.system.simulation.get("t_start", 0.0))
        if t_span is None:
            t_span = (t0, float(t[-1]))
        try:
            t_span = (float(t_span[0]), float(t_span[1]))
        except (TypeError, ValueError, IndexError):
            raise OptionError(f"{where}: t_span must be (t0, t1), got {t_span!r}") from None
        if t[0] < t_span[0] or t[-1] > t_span[1]:
            raise OptionError(f"{where}: data times {t[0]:g} .. {t[-1]:g} are outside the simulated span "
                              f"{t_span[0]:g} .. {t_span[1]:g}; give t_span or drop those rows")
        if not t_span[1] > t_span[0]:
            raise OptionError(f"{where}: the span {t_span} is empty")
        self.t, self.y, self.outputs, self.t_span = t, y, outputs, t_span
        self.sigma = self._noise(noise, outputs, where)

    @staticmethod
    def _noise(noise, outputs, where):
        if noise is None:
            return None
        if isinstance(noise, dict):
            unknown = set(noise) - set(outputs)
            if unknown:
                raise OptionError(f"{where}: noise given for {sorted(unknown)}, which are not fitted outputs {outputs}")
            missing = [o for o in outputs if o not in noise]
            if missing:
                raise OptionError(f"{where}: noise is given for some outputs but not for {missing}; "
                                  "give it for every output or for none (then σ is estimated)")
            sigma = np.array([as_number(noise[o], f"{where}: noise[{o!r}]") for o in outputs], dtype=float)
        else:
            sigma = np.full(len(outputs), as_number(noise, f"{where}: noise"), dtype=float)
        if not np.all(np.isfinite(sigma) & (sigma > 0)):
            raise OptionError(f"{where}: noise levels must be positive numbers, got {sigma.tolist()}")
        return sigma

    @property
    def friction_pairs(self):
        """(slot, kinetic parameter, static parameter) of each slot; see :func:`friction_pairs`."""
        return friction_pairs(self.system)

    @property
    def parameters(self):
        """The model's parameter values in this experiment (file values with ``fixed`` applied)."""
        return dict(self.system.parameters)

    @property
    def size(self):
        """Number of measured values (samples × outputs)."""
        return self.y.size

    def __repr__(self):
        return (f"Experiment({self.name!r}, model={self.model.name}, {len(self.t)} samples of {self.outputs}, "
                f"t = {self.t[0]:g} .. {self.t[-1]:g})")


def simulate_experiment(experiment, values, sensitivities=None):
    """Simulate ``experiment`` with the parameter ``values`` (dict) bound; the one place the identification simulates.

    The model was read once (``experiment.system``); the values are bound to it
    (:meth:`System.bind`, no re-parsing).  Parameters that nothing in the model uses
    have no influence: they are not bound, and get no sensitivity (a zero column).
    """
    used = experiment.system.used_parameters()
    opts = dict(experiment.simulate_options)
    if sensitivities and any(k in used for k in sensitivities):
        opts["sensitivities"] = [k for k in sensitivities if k in used]
        opts["force_sensitivities"] = any(o.rpartition(".")[2] in ("normal_force", "friction_force")
                                          for o in experiment.outputs)
    return simulate(experiment.system, experiment.t_span, params={k: v for k, v in values.items() if k in used},
                    t_eval=experiment.t, **opts)


def trajectory_output(tr, name):
    """The (N,) time history of output ``name`` of a Trajectory."""
    if hasattr(tr, "output"):
        return np.asarray(tr.output(name), dtype=float)
    base, _, quantity = name.rpartition(".")
    if quantity in _SLOT_OUTPUTS and base in tr.slot_names:
        return getattr(tr, quantity)[:, tr.slot_names.index(base)]
    if name in _ENERGIES:
        return getattr(tr, name)
    if name.endswith("_dot") and name[:-4] in tr.coordinate_names:
        return tr.qd[:, tr.coordinate_names.index(name[:-4])]
    if name in tr.coordinate_names:
        return tr.q[:, tr.coordinate_names.index(name)]
    raise SimulationError(f"the trajectory has no output {name!r}")


def synthetic_record(model, t, outputs, rel_noise, seed, **values):
    """Simulated measurements for tests and examples: outputs at times ``t`` plus Gaussian noise.

    Parameters
    ----------
    model : str or Path
        A model file, simulated with the parameter ``values`` given as keywords (``mu=0.25``;
        the others keep the file's values).
    t : array
        Sample times (the span is ``t[0] .. t[-1]``).
    outputs : list of str
    rel_noise : float
        Noise standard deviation of each output, relative to its peak |value|.
    seed : int or numpy Generator

    Returns
    -------
    (DataFrame, dict)
        The record (column ``t`` and the outputs) and the noise level of each output.
    """
    import pandas as pd

    t = np.asarray(t, dtype=float)
    tr = simulate(model, (t[0], t[-1]), t_eval=t, params=values)
    if not tr.success:
        raise SimulationError(f"{model}: the simulation for the record did not succeed: {tr.message}")
    rows = tr.sample_rows(t)
    rng = np.random.default_rng(seed)
    data, sigma = {"t": t}, {}
    for o in outputs:
        clean = trajectory_output(tr, o)[rows]
        sigma[o] = rel_noise * float(np.abs(clean).max())
        data[o] = clean + sigma[o] * rng.standard_normal(t.size)
    return pd.DataFrame(data), sigma
