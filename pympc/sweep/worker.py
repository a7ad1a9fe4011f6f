"""What a Dask worker does: run a batch, one run at a time, each under its time limit.

The time limit (``[options] timeout``, ``pympc sweep --run-timeout``) is wall
time of the run, numba's compilation excluded (the first run of a fresh worker
compiles the kernels, which is not the run's time).  It is enforced from two
sides: :func:`~pympc.simulate` calls its ``progress`` callback after every
phase, which raises once the time is up; and a watchdog timer raises
:class:`RunTimeout` asynchronously in the run's thread
(``PyThreadState_SetAsyncExc``) for a run that stays in one phase or in a user
observable.  Either way the run is stored with status ``TIMEOUT`` and the batch
goes on.  (A run stuck inside one compiled call cannot be interrupted from
Python; the asynchronous exception lands when that call returns.)
"""

from __future__ import annotations

import ctypes
import threading
import time
import traceback

from .._compiling import compile_seconds, compiling
from .observables import evaluate

__all__ = ["RunTimeout", "Deadline", "run_one", "run_batch"]


class RunTimeout(BaseException):
    """Raised in a run's thread past its time limit (a BaseException: no ``except Exception`` of the run keeps it)."""


class Deadline:
    """The time limit of one run in the current thread (``with Deadline(seconds) as d:``; None: no limit).

    ``d.progress`` is the ``progress`` callback for :func:`~pympc.simulate`:
    it records the time reached and raises :class:`RunTimeout` when the time
    is up; a watchdog timer raises it asynchronously otherwise.  Leaving the
    block disarms the timer (and drops a timeout that fired but has not landed yet).
    """

    def __init__(self, seconds):
        self.seconds, self.reached, self.fired = seconds, None, False
        self._lock, self._timer, self._armed = threading.Lock(), None, False

    def elapsed(self):
        """Wall time of the run so far, numba compilation excluded."""
        return time.perf_counter() - self._start - (compile_seconds() - self._compiled)

    def __enter__(self):
        self._start, self._compiled = time.perf_counter(), compile_seconds()
        if self.seconds is not None:
            self._thread, self._armed = threading.get_ident(), True
            self._schedule(self.seconds)
        return self

    def _schedule(self, delay):
        self._timer = threading.Timer(delay, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self):
        with self._lock:
            if not self._armed:
                return
            left = self.seconds - self.elapsed()
            if left > 0 or compiling():
                self._schedule(max(left, 0.2))
                return
            self.fired = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread), ctypes.py_object(RunTimeout))

    def progress(self, t, t0, t1):
        """simulate's ``progress`` callback: remember ``t``; raise :class:`RunTimeout` past the limit."""
        self.reached = (t, t0, t1)
        if self.seconds is not None and self.elapsed() > self.seconds:
            with self._lock:
                if self._armed:
                    self.fired = True
                    raise RunTimeout

    def __exit__(self, *exc):
        if self.seconds is None:
            return False
        with self._lock:
            self._armed = False
            if self._timer is not None:
                self._timer.cancel()
            if self.fired:              # fired but maybe not landed yet: drop it (a landed one is propagating)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread), None)
        return False

    def message(self):
        """The ``message`` of a run stopped by its time limit."""
        where = ""
        if self.reached is not None:
            t, t0, t1 = self.reached
            where = f"; the simulation had reached t = {t:.6g} of [{t0:g}, {t1:g}]"
        return (f"no result within timeout = {self.seconds:g} s of wall time (numba compilation excluded){where}; "
                "raise the limit ([options] timeout, --run-timeout) and rerun with --retry-failed")


def run_one(system, params, t_span, options, observables, timeout=None):
    """Simulate one run and evaluate its observables; the ONE place a run is executed.

    ``system`` is the batch's model, read once on the worker (or the exception
    reading it raised); the run's parameters are bound to it (``simulate(...,
    params=...)``: validated, nothing parsed again).  An exception becomes a row
    with status ``FAILED``, its error and traceback; a run past ``timeout``
    seconds a row with status ``TIMEOUT``.
    """
    from ..dynamics.simulate import simulate
    from ..dynamics.trajectory import SimulationStatus
    t, cpu = time.perf_counter(), time.process_time()
    deadline = Deadline(timeout)
    try:
        try:
            with deadline:
                if isinstance(system, Exception):
                    raise system
                tr = simulate(system, t_span, params=params, progress=deadline.progress, **options)
                if tr.status == SimulationStatus.INTERRUPTED:    # Ctrl-C stops the sweep; not one run's result
                    raise KeyboardInterrupt
                row = {**evaluate(observables, tr), "error": "", "traceback": ""}
        except RunTimeout:
            msg = deadline.message()
            row = {"status": "TIMEOUT", "message": msg, "error": f"RunTimeout: {msg}", "traceback": ""}
    except Exception as exc:                              # noqa: BLE001 — recorded, the sweep goes on
        row = {"status": "FAILED", "message": f"{type(exc).__name__}: {exc}",
               "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    row["wall_time"], row["cpu_time"] = time.perf_counter() - t, time.process_time() - cpu
    return row


def run_batch(model, batch, t_span, options, observables, timeout=None):
    """Run a batch of ``(run, key, params)``; the rows of its part file."""
    from .. import __version__
    rows = []
    try:
        system = model.load()                 # once per batch: the runs bind their parameters to it
    except Exception as exc:                  # noqa: BLE001 — every run of the batch records it
        system = exc
    for run, key, params in batch:
        row = run_one(system, params, t_span, options, observables, timeout)
        rows.append({"run": run, "key": key, **params, **row, "pympc_version": __version__,
                     "model_hash": model.hash, "model": model.source})
    return rows
