"""The sweep engine: batches of runs on a Dask distributed cluster, results stored as they finish.

The client (this process) splits the pending runs into batches, submits one
Dask task per batch and writes each finished batch as one Parquet part file
(atomically, see :mod:`pympc.sweep.store`): the store needs no shared file
system, and a worker killed mid-batch loses that batch only (Dask reruns it on
another worker; if that fails too, the batch is reported lost and a rerun does
it).  A run that raises is recorded with its error and traceback; it never
stops the sweep.  Ctrl-C (KeyboardInterrupt) cancels the tasks, shuts down the
cluster pympc started and propagates: what was stored stays, and the same call
(or ``pympc sweep --resume``) continues.
"""

from __future__ import annotations

import collections
import hashlib
import json
import math
import numbers
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field

from ..errors import OptionError
from .spec import SweepSpec
from .store import ResultStore
from .worker import run_batch

__all__ = ["run_sweep", "SweepReport", "local_cluster", "ANSWERS"]

ANSWERS = ("SUCCESS", "PARADOX", "ZENO")
"""Statuses that answer the sweep's question about the mechanism: it moved to the end, it jams or the event
HLCP is ambiguous (a Painlevé-type paradox), or its events accumulate.  Any other stored status is a run that
did not answer (it raised, ran out of time or of events, or the simulation failed numerically)."""


_TICK = 1.0             # s between the event-loop ticks of a local cluster's servers without dashboard (Dask: 0.02)
_QUIET_WORKERS = {"distributed": {"worker": {"profile": {"enabled": False}, "memory": {"monitor-interval": "1s"}},
                                  "admin": {"tick": {"interval": f"{_TICK}s"}, "system-monitor": {"interval": "5s"}}}}


def local_cluster(n_workers=None, dashboard=False):
    """A :class:`dask.distributed.LocalCluster` for sweeps: one single-threaded worker process per core,
    on the loopback address, ports chosen by the system, dashboard only if asked (then on a free port;
    without it, the workers' profiler and monitors that feed it are off or slow)."""
    import importlib.util
    import logging

    from dask.distributed import LocalCluster
    if dashboard and importlib.util.find_spec("bokeh") is None:
        raise OptionError("the Dask dashboard needs bokeh: pip install 'bokeh>=3.1' (or run without --dashboard)")
    import dask
    n = n_workers or os.cpu_count() or 1
    # without a dashboard, the workers' housekeeping that feeds it runs seldom or not at all: the profiler (a
    # stack sample of the running task every 10 ms), the event-loop tick (every 20 ms), the system monitor
    # (500 ms), the memory monitor (100 ms; it pauses a worker past 80 % of its memory, its nanny still stops it
    # past 95 % every 100 ms).  Measured: 2 % of an idle worker's CPU -> 0.3 %, and the runs of a task took
    # 5-10 % more CPU with them (the profiler interrupts the task's thread).
    # This config goes to these workers alone (their nannies pass it on); this process's config is untouched.
    config = dask.config.merge(dask.config.config, {} if dashboard else _QUIET_WORKERS)
    # the scheduler's HTTP server (health, metrics; the dashboard if asked) runs in any case: on the loopback
    # address at a port the system chooses, not on 0.0.0.0 or a fixed 8787
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1", scheduler_port=0,
                           dashboard_address=None, silence_logs=logging.ERROR, config=config,
                           scheduler_kwargs={"dashboard": bool(dashboard), "dashboard_address": "127.0.0.1:0"})
    if not dashboard:       # the same tick for the scheduler and the nannies, which run in this process (1 % of a core)
        for server in (cluster.scheduler, *cluster.workers.values()):
            tick = getattr(server, "periodic_callbacks", {}).get("tick")
            if tick is not None:
                tick.callback_time = 1000.0 * _TICK
    return cluster


@dataclass
class SweepReport:
    """What a sweep did.

    Attributes
    ----------
    store : Path
    total : int
        Runs in the spec (distinct keys).
    skipped : int
        Already in the store (finished earlier).
    ran : int
        Run and stored now.
    failed : int
        Runs of this sweep, now or earlier, stored without an answer: any status
        but those of :data:`ANSWERS` (``FAILED``: the run raised; ``TIMEOUT``: past
        its time limit; the simulation's ``ERROR``, ``MODE_FAILURE``,
        ``EVENT_LIMIT``, ...).  A ``PARADOX`` or ``ZENO`` run is the simulation's
        answer about the mechanism (a regime the sweep maps), counted in
        ``counts`` and listed in ``failures`` but not failed.
    lost : int
        Runs of batches whose worker died (again) or whose task failed; not stored, a rerun does them.
    counts : dict
        Status → number of runs, over the whole sweep as stored.
    failures : list of dict
        ``run``, parameters, ``status`` and ``error`` (or message) of every stored run whose status is not
        ``SUCCESS``.
    notes : list of str
        What opening the store repaired (a stale lock, damaged or unfinished parts set aside); also printed
        to stderr when the sweep starts.
    wall_time : float
    dashboard : str or None
    """

    store: object
    total: int
    skipped: int = 0
    ran: int = 0
    failed: int = 0
    lost: int = 0
    counts: dict = field(default_factory=dict)
    failures: list = field(default_factory=list)
    lost_errors: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    wall_time: float = 0.0
    dashboard: str | None = None

    @property
    def complete(self):
        """Every run of the spec is stored (whatever its status)."""
        return self.lost == 0 and sum(self.counts.values()) == self.total

    @property
    def ok(self):
        """Complete and every run answered (a status of :data:`ANSWERS`; ``pympc sweep`` exits 0 exactly then)."""
        return self.complete and self.failed == 0

    def summary(self):
        """The end-of-sweep text: counts per status and the first runs that did not succeed."""
        lines = [f"sweep     {self.total} runs: {self.ran} run now, {self.skipped} already stored, "
                 f"{self.failed} failed, {len(self.failures) - self.failed} other outcomes, {self.lost} lost ({self.wall_time:.1f} s) -> {self.store}"]
        lines.append("status    " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items(), key=lambda kv: -kv[1])))
        for f in self.failures[:20]:
            params = ", ".join(f"{k}={v:g}" for k, v in f["params"].items())
            text = [t.strip() for t in (f["error"] or "").strip().splitlines()]
            first = " ".join(text[:2]) if text and text[0].endswith(":") else (text[0] if text else "")
            lines.append(f"{f['status']:<9s} run {f['run']} ({params}): {first[:200]}")
        if len(self.failures) > 20:
            lines.append(f"          ... and {len(self.failures) - 20} more (load_results(store), columns "
                         "'status', 'message', 'error')")
        for e in self.lost_errors[:5]:
            lines.append(f"lost      {e}")
        if self.lost:
            lines.append("          rerun the same sweep (or --resume) to do the lost runs")
        return "\n".join(lines)


class _Bar:
    """Runs done/failed/remaining and the time left, redrawn on a terminal only."""

    def __init__(self, total, already, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total, self.already, self.start = total, already, time.perf_counter()

    def __call__(self, done, failed, remaining):
        if not self.tty:
            return
        elapsed = time.perf_counter() - self.start
        now = done - self.already
        eta = f"{remaining * elapsed / now:.0f} s" if now > 0 else "?"
        frac = done / self.total if self.total else 1.0
        self.stream.write(f"\r[{'#' * int(30 * frac):30s}] {done}/{self.total} done, {failed} failed, "
                          f"{remaining} remaining, ETA {eta}   ")
        self.stream.flush()

    def close(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


_TASK_SECONDS = (0.3, 3.0)
"""Work per Dask task in seconds, once a run's time is known: at least 0.3 s of CPU, so that a task's own cost
(scheduling, transfers, one part file: about 10 ms of CPU) stays a few per cent of it; at most 3 s of wall time,
so that a killed worker loses little, the progress moves and the workers finish together."""


class _Sizer:
    """How many runs the next task gets: ``size`` if given, else guided — half the unsubmitted runs' share per
    worker (few tasks carry the work, the last ones are small so that the workers finish together) —
    held to :data:`_TASK_SECONDS` by the measured time of a run (mean CPU and wall time of the runs of the last
    finished batches); before any batch finished, at most ``first`` runs (a run's time is not known yet)."""

    def __init__(self, workers, size=None, first=4, window=None):
        self.workers, self.size, self.first = workers, size, first
        self.recent = collections.deque(maxlen=window or 2 * workers)   # (runs, CPU s, wall s) of finished batches

    def observe(self, rows):
        if rows:
            self.recent.append((len(rows), sum(r["cpu_time"] for r in rows), sum(r["wall_time"] for r in rows)))

    def __call__(self, remaining):
        if self.size:
            return min(self.size, remaining)
        k = math.ceil(remaining / (2 * self.workers))
        if self.recent:
            n, cpu, wall = (sum(x) for x in zip(*self.recent))
            lo = math.ceil(_TASK_SECONDS[0] * n / max(cpu, 1e-9))
            hi = max(1, math.floor(_TASK_SECONDS[1] * n / max(wall, 1e-9)))
            k = min(max(k, lo), hi)
        else:
            k = min(k, self.first)
        return max(1, min(k, remaining))


def _check_count(name, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
        raise OptionError(f"{name} must be an integer >= 1, got {value!r}")


def _check_timeout(value, name="timeout"):
    """A per-run time limit: None or a finite number of seconds > 0 (returned as float)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < math.inf:
        raise OptionError(f"{name} must be a number of seconds > 0, got {value!r}")
    return float(value)


_IDENTITY = ("model_hash", "kind", "axes", "fixed", "t_span", "options", "observables", "values", "runs",
             "pympc_version")


def _manifest(spec, keys):
    from .. import __version__
    values = ({a: sorted({r[a] for r in spec.runs}) for a in spec.axes} if spec.kind == "grid"
              else {"sample": len(spec.runs)})
    return {"format": 2, "name": spec.name, "model": spec.model.source, "model_hash": spec.model.hash,
            "kind": spec.kind, "axes": spec.axes, "fixed": spec.fixed, "t_span": spec.t_span,
            "options": {k: repr(v) for k, v in spec.options.items()}, "observables": spec.observable_names(),
            "values": values, "runs": len(keys), "pympc_version": __version__,
            "fingerprint": hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()}


def _check_identity(store, old, new, keys):
    """Refuse a store that belongs to another spec (a store of an older pympc, without fingerprint: by its keys)."""
    if not old:                         # no manifest (deleted?): the stored runs must be runs of this spec
        same = store.finished() <= keys
    elif "fingerprint" in old:
        same = old["fingerprint"] == new["fingerprint"]
    else:
        same = all(old.get(k) == new[k] for k in ("model_hash", "kind", "axes", "fixed", "t_span", "options",
                                                   "observables") if k in old)
        same = same and store.finished() <= keys
    if same:
        return
    differ = [k for k in _IDENTITY if k in old and old.get(k) != new[k]] or ["run parameters"]
    shown = "; ".join(f"{k}: stored {_short(old.get(k))}, now {_short(new.get(k))}" for k in differ
                      if k != "run parameters")
    raise OptionError(f"{store.path} holds the results of another sweep spec (its {', '.join(differ)} differ"
                      f"{': ' + shown if shown else ''}); a store belongs to one spec: give another store "
                      "directory (--store), or delete this one to start over")


def _short(v, n=120):
    text = json.dumps(v)
    return text if len(text) <= n else text[:n] + "..."


def run_sweep(spec, store=None, *, client=None, scheduler=None, n_workers=None, batch_size=None, resume=False,
              retry_failed=False, dashboard=False, progress=None, timeout=None):
    """Run a sweep on Dask; store each finished batch; skip runs already stored.

    Parameters
    ----------
    spec : SweepSpec
        From :func:`~pympc.sweep.load_spec` or :meth:`SweepSpec.from_dict`.
    store : str or Path, optional
        Results directory (default: the spec's ``store``, else ``results/sweeps/<spec name>``).
        A store belongs to one spec: a store of another spec is refused, and so
        is a store another sweep is writing (its host and pid are named).
    client : dask.distributed.Client, optional
        Run on this client's cluster (not closed here).
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); default: a
        :func:`local_cluster` started for this sweep and shut down after it.
    n_workers : int, optional
        Worker processes of the local cluster (default: one per core).
    batch_size : int, optional
        Runs per task (default: the spec's, else chosen as the sweep goes from the measured time of
        a run: 0.3 s of CPU to 3 s of wall time per task, large tasks first and smaller ones at the
        end so that the workers finish together).
    resume : bool
        Require an existing store of this sweep to continue (finished runs are
        skipped in any case: a rerun is a resume).
    retry_failed : bool
        Run again the runs stored as ``FAILED`` or ``TIMEOUT`` (their new row replaces the old one).
    dashboard : bool
        Start the local cluster's dashboard (on a free port; its address is in the report).
    progress : callable, optional
        Called as ``progress(done, failed, remaining)`` after every batch;
        default: a bar on stderr when it is a terminal.
    timeout : float, optional
        Wall-time limit of one run in seconds (default: the spec's ``[options]
        timeout``, else none); a run past it is stored with status ``TIMEOUT``.

    Returns
    -------
    SweepReport
    """
    if not isinstance(spec, SweepSpec):
        raise OptionError(f"spec must be a SweepSpec (from pympc.sweep.load_spec), got {type(spec).__name__}")
    if client is not None and scheduler is not None:
        raise OptionError("give client or scheduler, not both")
    if scheduler is not None and not isinstance(scheduler, str):
        raise OptionError(f"scheduler must be an address such as 'tcp://host:8786', got {scheduler!r}")
    _check_count("n_workers", n_workers)
    _check_count("batch_size", batch_size)
    timeout = _check_timeout(timeout) if timeout is not None else spec.timeout
    if progress is not None and not callable(progress):
        raise OptionError(f"progress must be a function progress(done, failed, remaining), got {progress!r}")
    store = ResultStore(store or spec.store or os.path.join("results", "sweeps", spec.name))
    if resume and not store.manifest():
        raise OptionError(f"--resume: {store.path} holds no sweep to resume; run without --resume to start it")
    t0 = time.perf_counter()
    runs, seen = [], set()
    for i, params in enumerate(spec.runs):
        k = spec.key(params)
        if k not in seen:                     # the same values twice: one run
            seen.add(k)
            runs.append((i, k, params))
    new = json.loads(json.dumps(_manifest(spec, seen)))
    with store.writer() as notes:
        for n in notes:
            print(f"pympc: {store.path}: {n}", file=sys.stderr, flush=True)
        _check_identity(store, store.manifest(), new, seen)
        done_keys = store.finished(include_failed=not retry_failed)
        pending = [r for r in runs if r[1] not in done_keys]
        report = SweepReport(store.path, len(runs), skipped=len(runs) - len(pending), notes=list(notes))
        store.write_manifest(new)
        if pending:
            _execute(spec, store, pending, report, client, scheduler, n_workers, batch_size, dashboard, progress,
                     timeout)
        _tally(store, runs, spec.axes, report)
    report.wall_time = time.perf_counter() - t0
    return report


class _CtrlC:
    """While a sweep runs in the main thread, Ctrl-C sets a flag that the loop turns into KeyboardInterrupt at a
    safe point (not inside Dask's event-loop calls); a second Ctrl-C interrupts at once.  Restored on exit."""

    def __enter__(self):
        self.flag, self.prev = threading.Event(), None
        if threading.current_thread() is threading.main_thread():
            self.prev = signal.signal(signal.SIGINT, self._handler)
        return self

    def _handler(self, signum, frame):
        if self.flag.is_set():
            raise KeyboardInterrupt
        self.flag.set()

    def check(self):
        if self.flag.is_set():
            raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.prev is not None:
            signal.signal(signal.SIGINT, self.prev)


def _execute(spec, store, pending, report, client, scheduler, n_workers, batch_size, dashboard, progress, timeout):
    from dask.distributed import Client, as_completed
    cluster = own = None
    bar = _Bar(report.total, report.skipped) if progress is None else None
    tick = progress or bar
    futures = {}
    with _CtrlC() as ctrl_c:
        try:
            if client is None:
                if scheduler is not None:
                    client = own = Client(scheduler)
                else:
                    cluster = local_cluster(n_workers, dashboard)
                    client = own = Client(cluster)
                    if dashboard:
                        report.dashboard = cluster.dashboard_link
                        print(f"dashboard {report.dashboard} (open while the sweep runs)", file=sys.stderr, flush=True)
            ctrl_c.check()
            workers = max(1, sum(client.nthreads().values()))          # parallel slots now on the cluster
            size = _Sizer(workers, batch_size or spec.batch_size)
            queue = collections.deque(pending)
            finished = as_completed()

            def submit():
                """Keep two tasks per slot in flight (the next one waits on the worker), sized by what finished."""
                while queue and len(futures) < 2 * workers:
                    batch = [queue.popleft() for _ in range(size(len(queue)))]
                    f = client.submit(run_batch, spec.model, batch, spec.t_span, spec.options, spec.observables,
                                      timeout, pure=False)
                    futures[f] = batch
                    finished.add(f)
            submit()
            done, failed = report.skipped, 0
            while futures:
                ctrl_c.check()
                ready = finished.next_batch(block=False)
                if not ready:
                    time.sleep(0.02)
                for f in ready:
                    batch, rows = futures.pop(f), None
                    try:
                        rows = f.result()
                    except Exception as exc:      # noqa: BLE001 — a worker died twice, or the task could not run
                        report.lost += len(batch)
                        report.lost_errors.append(f"runs {batch[0][0]}..{batch[-1][0]}: {type(exc).__name__}: {exc}")
                    size.observe(rows)
                    submit()                      # before the store write: the slot has its next task meanwhile
                    if rows is not None:
                        store.write_part(rows)
                        report.ran += len(rows)
                        failed += sum(r["status"] not in ANSWERS for r in rows)
                        done += len(rows)
                    tick(done, failed, report.total - done - report.lost)
        except BaseException:
            if futures and client is not None:
                client.cancel(list(futures))
            raise
        finally:
            if bar is not None:
                bar.close()
            if own is not None:
                own.close()
            if cluster is not None:
                cluster.close()


def _tally(store, runs, axes, report):
    """Counts per status and the runs that did not succeed, of this sweep's runs as stored."""
    keys = {k: (i, p) for i, k, p in runs}
    latest = store.latest(("status", "error", "message"))
    counts, failures = {}, []
    for k, r in latest.items():
        if k not in keys:
            continue
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        if r["status"] != "SUCCESS":
            i, p = keys[k]
            failures.append({"run": i, "params": {a: p[a] for a in axes}, "status": r["status"],
                             "error": r["error"] or r["message"] or ""})
    report.counts, report.failures = counts, sorted(failures, key=lambda f: f["run"])
    report.failed = sum(f["status"] not in ANSWERS for f in failures)
