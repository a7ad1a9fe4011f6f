"""Research sweeps: thousands of simulations over a parameter space on Dask, resumable, with regime maps.

>>> from pympc.sweep import load_spec, run_sweep, load_results, plot_regime    # doctest: +SKIP
>>> spec = load_spec("examples/sweep_cross_slide.toml")                       # doctest: +SKIP
>>> report = run_sweep(spec, "results/sweeps/cross_slide")                    # doctest: +SKIP
>>> df = load_results("results/sweeps/cross_slide")                           # doctest: +SKIP
>>> fig = plot_regime(df, "start_hlcp")                                       # doctest: +SKIP

:mod:`~pympc.sweep.spec` reads and checks a spec, :mod:`~pympc.sweep.engine`
runs it (a Dask ``LocalCluster`` by default, or any ``Client``),
:mod:`~pympc.sweep.worker` runs a batch on a worker (each run under its time limit),
:mod:`~pympc.sweep.store` keeps the results (a Parquet dataset, one writer at a time),
:mod:`~pympc.sweep.observables` says what is recorded per run and
:mod:`~pympc.sweep.plots` draws regime maps.
"""

from .engine import SweepReport, local_cluster, run_sweep
from .observables import BUILTIN as OBSERVABLES
from .plots import plot_regime
from .spec import ModelSource, SweepSpec, load_spec, model_hash
from .store import ResultStore, load_results

__all__ = ["load_spec", "SweepSpec", "ModelSource", "model_hash", "run_sweep", "SweepReport", "local_cluster",
           "load_results", "ResultStore", "plot_regime", "OBSERVABLES"]
