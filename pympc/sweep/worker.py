"""What a Dask worker does: run a batch, one run at a time, each under its time limit.

The time limit (``[options] timeout``, ``pympc sweep --run-timeout``) is wall
time of the run, numba's preparation of kernels excluded (the first run of a
fresh worker compiles the kernels or loads them from the cache, which is not the
run's time).  It is enforced cooperatively first: :func:`~pympc.simulate` calls
its ``progress`` callback after every phase, which raises :class:`RunTimeout`
once the time is up.  Only a run that reaches no phase boundary for
:data:`GRACE` seconds past its limit (one endless phase, a user observable that
spins) is interrupted asynchronously, by a watchdog timer
(``PyThreadState_SetAsyncExc``), and never while numba prepares a kernel: an
exception landing in LLVM's callbacks there can crash the worker.  Either way
the run is stored with status ``TIMEOUT`` and the batch goes on; so is a run
that, once interrupted, ends with another exception (a library that converted
the interrupt).  A run stuck inside one compiled call cannot be interrupted from
Python; the asynchronous exception lands when that call returns.
"""

from __future__ import annotations

import ctypes
import threading
import time
import traceback

from .._compiling import kernel_seconds, preparing_kernels
from .observables import evaluate

__all__ = ["RunTimeout", "Deadline", "run_one", "run_batch", "GRACE"]

GRACE = 1.0
"""Seconds past its limit a run is given to reach its next phase boundary before it is interrupted asynchronously."""


class RunTimeout(BaseException):
    """Raised in a run's thread past its time limit (a BaseException: no ``except Exception`` of the run keeps it)."""


class Deadline:
    """The time limit of one run in the current thread (``with Deadline(seconds) as d:``; None: no limit).

    ``d.progress`` is the ``progress`` callback for :func:`~pympc.simulate`:
    it records the time reached and raises :class:`RunTimeout` when the time
    is up.  A watchdog timer raises it asynchronously in a run that has not
    reached ``progress`` ``grace`` seconds past the limit (again every
    ``grace`` seconds: an exception landing in a weakref callback is
    dropped by Python), never while numba prepares a kernel.  ``d.fired`` says
    whether it did.  Leaving the block disarms the timer (and drops a timeout
    that fired but has not landed yet).
    """

    def __init__(self, seconds, grace=GRACE):
        self.seconds, self.grace, self.reached, self.fired = seconds, grace, None, False
        self._lock, self._timer, self._armed = threading.Lock(), None, False

    def elapsed(self):
        """Wall time of the run so far, numba's preparation of kernels (compiling, loading) excluded."""
        return time.perf_counter() - self._start - (kernel_seconds() - self._prepared)

    def __enter__(self):
        self._start, self._prepared = time.perf_counter(), kernel_seconds()
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
            left = self.seconds + self.grace - self.elapsed()
            if left > 0 or preparing_kernels():
                self._schedule(max(left, 0.2))
                return
            self.fired = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread), ctypes.py_object(RunTimeout))
            self._schedule(self.grace)

    def progress(self, t, t0, t1):
        """simulate's ``progress`` callback: remember ``t``; raise :class:`RunTimeout` past the limit."""
        self.reached = (t, t0, t1)
        if self.seconds is not None and self.elapsed() > self.seconds:
            with self._lock:
                if self._armed:
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
        return (f"no result within timeout = {self.seconds:g} s of wall time (numba's compiling and cache loading "
                f"excluded){where}; raise the limit ([options] timeout, --run-timeout) and rerun with --retry-failed")


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
        error = f"{type(exc).__name__}: {exc}"
        if deadline.fired:                                # the interrupt, converted by the code it landed in
            msg = deadline.message()
            row = {"status": "TIMEOUT", "message": msg, "error": f"RunTimeout (raised as {error}): {msg}",
                   "traceback": traceback.format_exc()}
        else:
            row = {"status": "FAILED", "message": error, "error": error, "traceback": traceback.format_exc()}
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
