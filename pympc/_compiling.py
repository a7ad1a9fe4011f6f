"""How long this process has spent compiling numba kernels, and a hook for when it starts.

numba broadcasts ``"numba:compile"`` only for a real compilation (a signature not
found in the on-disk cache), so the first run after installing — or in a fresh
cache directory — is the one that sees it.  Used by the command line (a notice
on the terminal: never a silent minute).  ``"numba:compiler_lock"`` spans every
preparation of a kernel for a new signature, a cache load included: sweep
workers leave it out of a run's time limit and never interrupt it (an
exception raised asynchronously inside LLVM's callbacks can crash the process).
"""

from __future__ import annotations

import threading
import time

__all__ = ["compile_seconds", "compiling", "kernel_seconds", "preparing_kernels", "on_first_compile",
           "cache_by_content", "kernels_stamp", "KERNEL_FILES", "expected_compile_seconds", "FULL_COMPILE_SECONDS"]

_EVENTS = ("numba:compile", "numba:compiler_lock")
_state = {"installed": False, "started": False, **{name: {"depth": 0, "since": 0.0, "total": 0.0} for name in _EVENTS}}
_lock = threading.Lock()
_first = []


def _install():
    """Listen to numba's compile and compiler-lock events (once per process)."""
    with _lock:
        if _state["installed"]:
            return
        _state["installed"] = True
    from numba.core import event

    class _Watch(event.Listener):
        def __init__(self, name):
            self.name = name

        def on_start(self, ev):
            with _lock:
                watch = _state[self.name]
                if watch["depth"] == 0:
                    watch["since"] = time.perf_counter()
                watch["depth"] += 1
                callbacks = [] if _state["started"] or self.name != "numba:compile" else list(_first)
                _state["started"] |= self.name == "numba:compile"
            for callback in callbacks:
                callback()

        def on_end(self, ev):
            with _lock:
                watch = _state[self.name]
                watch["depth"] -= 1
                if watch["depth"] == 0:
                    watch["total"] += time.perf_counter() - watch["since"]
    for name in _EVENTS:              # (install_listener is a context manager: it would unregister)
        event.register(name, _Watch(name))


def _seconds(name):
    _install()
    with _lock:
        watch = _state[name]
        return watch["total"] + (time.perf_counter() - watch["since"] if watch["depth"] else 0.0)


def _under_way(name):
    _install()
    with _lock:
        return _state[name]["depth"] > 0


def compile_seconds():
    """Seconds this process has spent compiling numba functions since the watch began (an ongoing compilation
    included)."""
    return _seconds("numba:compile")


def compiling():
    """Whether a numba compilation is under way in this process."""
    return _under_way("numba:compile")


def kernel_seconds():
    """Seconds this process has spent preparing numba kernels for new signatures since the watch began: compiling,
    loading from the on-disk cache, and waiting for numba's compiler lock (an ongoing one included)."""
    return _seconds("numba:compiler_lock")


def preparing_kernels():
    """Whether a thread of this process holds (or waits for) numba's compiler lock: a compilation or a cache load."""
    return _under_way("numba:compiler_lock")


def on_first_compile(callback):
    """Call ``callback()`` when this process starts its first numba compilation (at once if it has already)."""
    _install()
    with _lock:
        started = _state["started"]
        if not started:
            _first.append(callback)
    if started:
        callback()


# ---------------------------------------------------------------- the on-disk cache of the kernels
# numba keys a cached kernel by its own source file only: a kernel that calls (and so contains the code of) a kernel
# of another file is reused after that file changed.  pympc's kernels call across files, so every kernel's cache
# entry is keyed here by the contents of all kernel files together (and the versions of Python, NumPy, numba and
# llvmlite): any change anywhere recompiles, never a stale caller.  The directories are numba's (NUMBA_CACHE_DIR,
# else the package's __pycache__ when writable — where ``pip install .`` puts the kernels it compiled — else the
# user-wide cache); a kernel missing there is read from the package's __pycache__ when it holds it (a read-only
# install, NUMBA_CACHE_DIR set).  An unreadable or damaged entry is compiled again, never an error.

KERNEL_FILES = ("_linalg.py", "complementarity/_kernel.py", "mechanics/_kernels.py",
                "mechanics/_tree_kernels.py", "dynamics/_dop853.py",
                "dynamics/_event_kernels.py", "dynamics/_event_sets.py", "dynamics/_event_solve.py", "dynamics/_flat.py",
                "dynamics/_mode_solve.py", "dynamics/_transition.py", "dynamics/_variational.py")
"""The modules (relative to the package) whose numba kernels are cached by :func:`cache_by_content`."""

_stamp = {}


def kernels_stamp(root=None):
    """A digest of the sources of every kernel module (:data:`KERNEL_FILES` under ``root``, default this package)
    and of the versions of Python, NumPy, numba and llvmlite: the key of every kernel's cache entries."""
    import os

    root = os.path.dirname(os.path.abspath(__file__)) if root is None else os.fspath(root)
    if root not in _stamp:
        import hashlib
        import sys

        import llvmlite
        import numba
        import numpy

        h = hashlib.sha256()
        for name in KERNEL_FILES:
            h.update(name.encode())
            with open(os.path.join(root, name), "rb") as f:
                h.update(f.read())
        h.update(f"{sys.version}|{numpy.__version__}|{numba.__version__}|{llvmlite.__version__}".encode())
        _stamp[root] = h.hexdigest()
    return _stamp[root]


def _cache_classes():
    """numba's cache, with :func:`kernels_stamp` in the locators' source stamp and a damaged entry a miss."""
    from numba.core import caching

    def stamped(base):
        def get_source_stamp(self):       # the kernel's own file too (a module outside KERNEL_FILES)
            return kernels_stamp(), base.get_source_stamp(self)
        return type(base.__name__, (base,), {"get_source_stamp": get_source_stamp})

    class _Impl(caching.CompileResultCacheImpl):
        _locator_classes = [stamped(caching.UserProvidedCacheLocator), stamped(caching.InTreeCacheLocator),
                            stamped(caching.UserWideCacheLocator)]

    class _Cache(caching.FunctionCache):
        _impl_class = _Impl

        def __init__(self, py_func):
            import inspect
            import os
            super().__init__(py_func)
            shipped = os.path.join(os.path.dirname(os.path.abspath(inspect.getfile(py_func))), "__pycache__")
            self._shipped = None      # the package's own cache, read when the kernels are cached elsewhere
            if os.path.isdir(shipped) and os.path.realpath(shipped) != os.path.realpath(self._cache_path):
                self._shipped = caching.IndexDataCacheFile(shipped, self._impl.filename_base,
                                                           self._cache_file._source_stamp)

        def _load_overload(self, sig, target_context):
            data = super()._load_overload(sig, target_context)
            if data is None and self._shipped is not None and self._enabled:
                data = self._shipped.load(self._index_key(sig, target_context.codegen()))
                if data is not None:
                    data = self._impl.rebuild(target_context, data)
            return data

        def load_overload(self, sig, target_context):
            try:
                return super().load_overload(sig, target_context)
            except Exception:          # a truncated or foreign file: compile (and overwrite it)
                return None

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
            except Exception:          # a damaged index: start it again; a cache that cannot be written is no error
                try:
                    self._cache_file.flush()
                    super().save_overload(sig, data)
                except Exception:
                    pass

    return _Cache


def cache_by_content(namespace):
    """Give every cached numba kernel defined in the module ``namespace`` (its ``globals()``) the cache keyed by
    :func:`kernels_stamp`; call at the end of a kernel module."""
    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    if "_Cache" not in _state:
        _state["_Cache"] = _cache_classes()
    cache = _state["_Cache"]
    module = namespace["__name__"]
    for obj in list(namespace.values()):
        if isinstance(obj, Dispatcher) and obj.py_func.__module__ == module and not isinstance(obj._cache, NullCache):
            obj._cache = cache(obj.py_func)
            if obj.targetoptions.get("inline", "never") == "never":
                _kernels.append(obj)


_kernels = []
FULL_COMPILE_SECONDS = 85.0
"""CPU seconds to compile the kernels of a simulation with an empty cache (``benchmarks/cold_start.py`` on the
2-core machine of the README's table): the scale of the estimate in the command line's notice."""


_SIMULATION_KERNELS = 64       # the (non-inlined) kernels a simulation's modules define


def expected_compile_seconds():
    """About how long the compilation just starting will take: :data:`FULL_COMPILE_SECONDS` times the share, in
    the kernels of a simulation, of the (non-inlined) kernels imported so far that the on-disk cache holds no
    entry of for the current sources (at least 5 s: a new path's kernels)."""
    import pickle

    missing = 0
    for kernel in _kernels:
        try:
            with open(kernel._cache._cache_file._index_path, "rb") as f:
                pickle.load(f)                                  # numba's version
                stamp, overloads = pickle.loads(f.read())
            missing += stamp != kernels_stamp() or not overloads
        except Exception:
            missing += 1
    return max(5.0, FULL_COMPILE_SECONDS * min(missing / _SIMULATION_KERNELS, 1.0))
