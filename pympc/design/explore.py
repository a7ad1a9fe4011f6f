"""Evaluate designs: one point, a grid or Sobol sample on Dask, and a multistart optimizer.

* :func:`evaluate` — the information of one design (averaged over the prior draws).
* :func:`explore` — every point of the spec's ``[grid]`` or ``[sample]``: batches of
  points as Dask tasks (``client.map``; a :func:`pympc.sweep.local_cluster` by
  default, a given client or scheduler address, or ``serial=True`` in this
  process).  A point that fails is a row with its error, never the end of the
  exploration; a space where *every* point fails is a :class:`SimulationError`
  that carries the rows (``exc.results``).
* :func:`optimize` — the criterion over the continuous design variables of
  ``[optimize]``.  The criterion jumps where the event sequence changes (a
  breakaway appears or goes) and is flat-then-singular where a regime ends, so
  gradients (of the criterion, or of a smooth model of it) say nothing about the
  jumps: the optimizer is *multistart bounded Nelder–Mead* (``scipy.optimize.minimize``),
  which compares values only, started from the best points of a scrambled Sobol
  sample of the box (so every regime the sample sees can win); each start is a
  Dask task.  A failed or singular design is +inf for it.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass

import numpy as np

from ..errors import OptionError, PympcError, SimulationError
from .fim import CRITERIA, average, information, loss
from .spec import RECORD_VARIABLES, DesignSpec

__all__ = ["evaluate", "explore", "optimize", "OptimizationResult", "row_of"]


def evaluate(spec, point=None):
    """The :class:`~pympc.design.fim.Information` of the design ``point`` (dict of design variables; default: the base design).

    Averaged over the prior draws when the prior is a distribution (mean F, mean
    criteria).  Raises SimulationError when the design cannot be simulated.
    """
    if not isinstance(spec, DesignSpec):
        raise OptionError(f"spec must be a DesignSpec (pympc.design.load_design), got {type(spec).__name__}")
    point = dict(point or {})
    infos = []
    for values in spec.prior_draws():
        vals, t, outputs = spec.record(point)
        vals.update({k: v for k, v in values.items() if k in spec.distribution})
        info, _ = information(spec.model, spec.names, vals, t, outputs, spec.noise, prior_sd=spec.prior_sd,
                              scale=spec.scale, simulate_options=spec.options)
        infos.append(info)
    return infos[0] if len(infos) == 1 else average(infos, spec.scale)


def row_of(spec, point, info=None, error=None, seconds=np.nan):
    """One DataFrame row: the design variables, criteria, predicted errors, correlations, regimes, status."""
    row = {**{k: spec.base[k] for k in RECORD_VARIABLES}, **point}
    names = spec.names
    if info is None:
        row.update({k: np.nan for k in CRITERIA})
        row.update({f"se_{n}": np.nan for n in names})
        row.update(status="failed", regime="failed", not_informed="", error=error or "")
    else:
        row.update(info.values)
        row.update({f"se_{n}": float(s) for n, s in zip(names, info.stderr)})
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                row[f"corr_{names[i]}_{names[j]}"] = float(info.correlation[i, j])
        for s, r in info.regimes.items():
            row[f"regime.{s}"] = r
        row["regime"] = (next(iter(info.regimes.values())) if len(set(info.regimes.values())) == 1
                         else "; ".join(f"{s}: {r}" for s, r in info.regimes.items()))
        row.update(status="singular" if info.singular else "ok",
                   not_informed="; ".join(f"{k}: {v}" for k, v in info.not_informed.items()), error="")
    row["loss"] = loss(spec.criterion, row[spec.criterion]) if info is not None else np.inf
    row["seconds"] = seconds
    return row


def _evaluate_batch(spec, points):
    """Rows of a batch of design points (a Dask task; never raises for one point)."""
    rows = []
    for p in points:
        t = time.perf_counter()
        try:
            info = evaluate(spec, p)
            rows.append(row_of(spec, p, info, seconds=time.perf_counter() - t))
        except (PympcError, ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
            rows.append(row_of(spec, p, error=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t))
        except Exception as exc:  # noqa: BLE001 — recorded with its traceback, the exploration goes on
            rows.append(row_of(spec, p, error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}",
                               seconds=time.perf_counter() - t))
    return rows


class _Runner:
    """Maps a function over a list in this process, or on Dask (given client, scheduler address, or a local cluster)."""

    def __init__(self, client=None, scheduler=None, n_workers=None, serial=False):
        if client is not None and scheduler is not None:
            raise OptionError("give client or scheduler, not both")
        self.serial, self.client, self.own, self.cluster = serial, client, None, None
        if not serial and client is None:
            from dask.distributed import Client
            if scheduler is not None:
                self.client = self.own = Client(scheduler)
            else:
                from ..sweep import local_cluster
                self.cluster = local_cluster(n_workers)
                self.client = self.own = Client(self.cluster)

    def map(self, fn, items, *args):
        if self.serial:
            return [fn(*args, it) for it in items]
        futures = self.client.map(fn, *([a] * len(items) for a in args), items, pure=False)
        return self.client.gather(futures)

    def close(self):
        if self.own is not None:
            self.own.close()
        if self.cluster is not None:
            self.cluster.close()


def _frame(spec, rows, kind):
    import pandas as pd
    df = pd.DataFrame(rows)
    df.attrs.update(parameters=list(spec.axes) if kind == "explore" else list(spec.optimize["variables"]),
                    criterion=spec.criterion, names=list(spec.names), model=str(spec.model), kind=kind)
    return df


def explore(spec, *, client=None, scheduler=None, n_workers=None, batch_size=None, serial=False):
    """Evaluate every design point of the spec's ``[grid]`` or ``[sample]`` (on Dask unless ``serial``).

    Returns
    -------
    pandas.DataFrame
        One row per point: design variables, the criteria D, A, E, ME, ``loss``
        (the spec's criterion, to minimize), ``se_<θ>``, ``corr_<θi>_<θj>``,
        ``regime.<slot>`` and ``regime``, ``status`` (ok / singular / failed),
        ``not_informed`` (which parameter and why), ``error``.

    Raises
    ------
    SimulationError
        Every point failed (the rows are in ``exc.results``).
    """
    if not spec.axes:
        raise OptionError(f"{spec.name}: the spec has no [grid] or [sample] to explore")
    points = list(spec.points)
    runner = _Runner(client, scheduler, n_workers, serial)
    try:
        workers = 1 if serial else max(1, sum(runner.client.nthreads().values()))
        size = batch_size or max(1, min(16, -(-len(points) // (4 * workers))))
        batches = [points[i:i + size] for i in range(0, len(points), size)]
        rows = [r for b in runner.map(_evaluate_batch, batches, spec) for r in b]
    finally:
        runner.close()
    df = _frame(spec, rows, "explore")
    _all_failed(df, "explored")
    return df


def _all_failed(df, what):
    if len(df) and (df["status"] == "failed").all():
        errors = df["error"].astype(str).str.split("\n").str[0].unique()[:3]
        exc = SimulationError(f"every {what} design point ({len(df)}) failed to simulate: " + "; ".join(errors) +
                              "; change the design space (smaller forcing, shorter record) or the simulate options")
        exc.results = df
        raise exc


@dataclass
class OptimizationResult:
    """What :func:`optimize` found.

    Attributes
    ----------
    design : dict
        The best design (all record variables and the optimized ones).
    value : float
        Its criterion (the spec's).
    information : Information
    starts : DataFrame
        One row per Nelder–Mead run: start, end, criterion, evaluations, message.
    history : DataFrame
        Every design evaluated (the initial sample and the runs), as :func:`explore`'s rows.
    """

    design: dict
    value: float
    information: object
    starts: object
    history: object

    def summary(self):
        """Text: the best design and its information."""
        head = ", ".join(f"{k} = {v:.6g}" if not isinstance(v, str) else f"{k} = {v}" for k, v in self.design.items())
        return f"best design  {head}\n" + self.information.summary()


def _nelder_mead(spec, start):
    """One bounded Nelder–Mead run from ``start`` (unit-box coordinates); (row, history rows)."""
    from scipy.optimize import minimize
    names = list(spec.optimize["variables"])
    lo = np.array([spec.optimize["variables"][k][0] for k in names])
    hi = np.array([spec.optimize["variables"][k][1] for k in names])
    seen = []

    def f(u):
        p = dict(zip(names, map(float, lo + np.clip(u, 0, 1) * (hi - lo))))
        row = _evaluate_batch(spec, [p])[0]
        seen.append(row)
        return row["loss"]

    u0 = np.asarray(start, float)
    res = minimize(f, u0, method="Nelder-Mead", bounds=[(0, 1)] * len(names),
                   options={"maxfev": spec.optimize["maxfev"], "xatol": 1e-3, "fatol": 1e-6,
                            "initial_simplex": np.vstack([u0] + [np.clip(u0 + 0.1 * e * (1 - 2 * (u0 > 0.5)), 0, 1)
                                                                 for e in np.eye(len(names))])})
    end = dict(zip(names, map(float, lo + np.clip(res.x, 0, 1) * (hi - lo))))
    row = {**{f"{k}_start": float(v) for k, v in zip(names, lo + u0 * (hi - lo))},
           **{f"{k}_end": v for k, v in end.items()}, "loss": float(res.fun), "nfev": int(res.nfev),
           "message": str(res.message)}
    return row, seen


def optimize(spec, *, client=None, scheduler=None, n_workers=None, serial=False):
    """Optimize the spec's criterion over its ``[optimize]`` variables (multistart Nelder–Mead, see the module).

    Returns
    -------
    OptimizationResult

    Raises
    ------
    OptionError
        No ``[optimize] variables``.
    SimulationError
        Every design of the initial sample failed (rows in ``exc.results``).
    """
    from scipy.stats import qmc
    opt = spec.optimize
    names = list(opt["variables"])
    if not names:
        raise OptionError(f"{spec.name}: [optimize] variables is empty; give e.g. variables = {{F0 = [2, 20]}}")
    lo = np.array([opt["variables"][k][0] for k in names])
    hi = np.array([opt["variables"][k][1] for k in names])
    m = int(np.ceil(np.log2(max(opt["initial"], 2))))
    u = qmc.Sobol(len(names), scramble=True, seed=opt["seed"]).random_base2(m)[:opt["initial"]]
    runner = _Runner(client, scheduler, n_workers, serial)
    try:
        pts = [dict(zip(names, map(float, lo + x * (hi - lo)))) for x in u]
        rows = [r for b in runner.map(_evaluate_batch, [[p] for p in pts], spec) for r in b]
        _all_failed(_frame(spec, rows, "optimize"), "initial")
        order = np.argsort([r["loss"] for r in rows], kind="stable")
        starts = [u[i] for i in order[:opt["starts"]] if np.isfinite(rows[i]["loss"])]
        runs = runner.map(_nelder_mead, starts, spec)
    finally:
        runner.close()
    import pandas as pd
    history = _frame(spec, rows + [r for _, seen in runs for r in seen], "optimize")
    table = pd.DataFrame([r for r, _ in runs])
    finite = history[np.isfinite(history["loss"])]
    best = finite.loc[finite["loss"].idxmin()]
    design = {k: best[k] for k in RECORD_VARIABLES}
    design.update({k: float(best[k]) for k in names})
    info = evaluate(spec, {k: design[k] for k in names})
    return OptimizationResult(design, float(best[spec.criterion]), info, table, history)
