"""Work handed to forked helper processes: started early, given its input later, its result (or error) returned.

The command line uses it to write the figures of ``pympc simulate`` beside the simulation: the helper is
forked once the simulation's modules are imported, imports matplotlib while the parent loads its kernels and
simulates, and then draws the figures in two processes (the helper and one fork of it), while the parent
writes its own files.  The parent waits for every result before it reports a file as written; an exception
raised in a helper is raised again in the parent (with the helper's traceback as a note), and a helper that
dies without a result is an error naming its exit status.

Forking is used only where it is safe and pays: on Linux, with at least two usable cores, and from a process
running a single thread (a fork copies only the calling thread: a lock held by another thread would stay
locked in the child).  Elsewhere :func:`start` returns None and the caller does the work itself.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import threading
import traceback

__all__ = ["start", "Helper"]


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def start(prepare=None):
    """A :class:`Helper` forked now that runs ``prepare()`` at once (imports, say), or None where forking is not
    safe or does not pay (not Linux, one core, other threads running)."""
    if not sys.platform.startswith("linux") or _usable_cores() < 2 or threading.active_count() > 1:
        return None
    return Helper(prepare)


def _send(fd, obj):
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(struct.pack("!Q", len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd):
    """The next object sent on ``fd``, or None at the end of the stream."""
    def exactly(n):
        parts = []
        while n:
            part = os.read(fd, min(n, 1 << 20))
            if not part:
                return None
            parts.append(part)
            n -= len(part)
        return b"".join(parts)
    head = exactly(8)
    if head is None:
        return None
    data = exactly(struct.unpack("!Q", head)[0])
    return None if data is None else pickle.loads(data)


def _outcome(fn, args):
    """("ok", result) or ("error", exception, traceback text); an exception that does not pickle is sent as a
    RuntimeError carrying its text."""
    try:
        return ("ok", fn(*args))
    except BaseException as exc:           # noqa: BLE001 - every failure goes back to the parent
        text = traceback.format_exc()
        try:
            pickle.dumps(exc)
        except Exception:
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        return ("error", exc, text)


def _fork(child):
    """Fork; the child runs ``child()`` and ends (never returning, never running the parent's exit handlers).
    Returns the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            child()
            status = 0
        except BaseException:              # noqa: BLE001 - a helper's own failure: its exit status says so
            pass
        finally:
            os._exit(status)
    return pid


def _wait(pid):
    """The exit status of the process ``pid`` (waited for)."""
    while True:
        try:
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        except InterruptedError:
            continue
        except ChildProcessError:
            return None


class Helper:
    """A forked process that runs ``prepare()`` now and ``fn(*job)`` for each job of :meth:`submit` later.

    The first job runs in the helper, each further job in a fork of the helper (made after ``prepare``, so it
    shares what ``prepare`` imported).  :meth:`result` returns the jobs' results in order, or raises the first
    job's exception; :meth:`close` ends a helper that was never given work.
    """

    def __init__(self, prepare=None):
        to_r, self._to = os.pipe()
        self._back, back_w = os.pipe()

        def child():
            os.close(self._to)
            os.close(self._back)
            ready = _outcome(prepare, ()) if prepare is not None else ("ok", None)
            task = _receive(to_r)
            if task is None:                   # the parent ended (or closed) without work for it
                return
            fn, jobs = task
            if ready[0] == "error":            # the work would fail the same way: say why
                _send(back_w, [ready])
                return
            forks = []
            for job in jobs[1:]:
                r, w = os.pipe()
                forks.append((_fork(lambda job=job, r=r, w=w: (os.close(r), _send(w, _outcome(fn, job)))), r))
                os.close(w)
            outcomes = [_outcome(fn, jobs[0])]
            for pid, r in forks:
                got = _receive(r)
                os.close(r)
                status = _wait(pid)
                outcomes.append(got if got is not None else
                                ("error", RuntimeError(f"a helper process ended without a result (exit status "
                                                       f"{status})"), ""))
            _send(back_w, outcomes)

        self.pid = _fork(child)
        os.close(to_r)
        os.close(back_w)
        self._submitted = self._collected = False

    def submit(self, fn, jobs):
        """Run ``fn(*job)`` for every job of ``jobs`` (a list of argument tuples; ``fn`` and the arguments are
        pickled): the first in the helper, the others in forks of it."""
        if self._submitted:
            raise RuntimeError("a Helper takes one submit")
        self._submitted = True
        _send(self._to, (fn, list(jobs)))
        os.close(self._to)
        self._to = None

    def result(self):
        """The results of the submitted jobs, in order (waits for them); raises a job's exception."""
        outcomes = _receive(self._back)
        self._collected = True
        status = self.close()
        if outcomes is None:
            raise RuntimeError(f"the helper process (pid {self.pid}) ended without a result (exit status {status})")
        results = []
        for outcome in outcomes:
            if outcome[0] == "error":
                exc, text = outcome[1], outcome[2]
                if text:
                    exc.add_note(f"(raised in a helper process)\n{text.rstrip()}")
                raise exc
            results.append(outcome[1])
        return results

    def close(self):
        """Wait for the helper and return its exit status; a helper whose result was not asked for (the caller
        failed before) is ended first, so that the caller's error is not held up by it."""
        for name in ("_to", "_back"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)
        if self.pid is None:
            return self._status
        if not self._collected:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self._status, self.pid = _wait(self.pid), None
        return self._status
