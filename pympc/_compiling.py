"""How long this process has spent compiling numba kernels, and a hook for when it starts.

numba broadcasts ``"numba:compile"`` only for a real compilation (a signature not
found in the on-disk cache), so the first run after installing — or in a fresh
cache directory — is the one that sees it.  Used by the command line (a notice
on the terminal: never a silent minute) and by sweep workers (a run's time
limit leaves compilation out).
"""

from __future__ import annotations

import threading
import time

__all__ = ["compile_seconds", "compiling", "on_first_compile"]

_state = {"depth": 0, "since": 0.0, "total": 0.0, "started": False, "installed": False}
_lock = threading.Lock()
_first = []


def _install():
    """Listen to numba's compile events (once per process)."""
    with _lock:
        if _state["installed"]:
            return
        _state["installed"] = True
    from numba.core import event

    class _Compiling(event.Listener):
        def on_start(self, ev):
            with _lock:
                if _state["depth"] == 0:
                    _state["since"] = time.perf_counter()
                _state["depth"] += 1
                callbacks = [] if _state["started"] else list(_first)
                _state["started"] = True
            for callback in callbacks:
                callback()

        def on_end(self, ev):
            with _lock:
                _state["depth"] -= 1
                if _state["depth"] == 0:
                    _state["total"] += time.perf_counter() - _state["since"]
    event.register("numba:compile", _Compiling())   # (install_listener is a context manager: it would unregister)


def compile_seconds():
    """Seconds this process has spent compiling numba functions since the watch began (an ongoing compilation
    included)."""
    _install()
    with _lock:
        ongoing = time.perf_counter() - _state["since"] if _state["depth"] else 0.0
        return _state["total"] + ongoing


def compiling():
    """Whether a numba compilation is under way in this process."""
    _install()
    with _lock:
        return _state["depth"] > 0


def on_first_compile(callback):
    """Call ``callback()`` when this process starts its first numba compilation (at once if it has already)."""
    _install()
    with _lock:
        started = _state["started"]
        if not started:
            _first.append(callback)
    if started:
        callback()
