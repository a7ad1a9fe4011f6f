"""Registration of pympc's solvers with Pyomo, without importing Pyomo on ``import pympc``.

Pyomo's solver factories are filled by the packages that register with them
when imported; Pyomo offers no plugin entry point for solvers.  Importing
Pyomo costs about a second, which users who only simulate should not pay.
So:

* if ``pyomo.environ`` is already imported when pympc is, the solvers are
  registered at once (``pympc.mpec.solvers``);
* otherwise a finder on ``sys.meta_path`` waits for ``pyomo.environ`` to
  finish importing, registers the solvers then, and removes itself.  It acts
  on that one module name only and touches nothing else.

Pyomo's own documentation imports ``pyomo.environ`` before using either
``SolverFactory`` (it fills both), so both orders of imports work:
``import pympc; import pyomo.environ as pyo; pyo.SolverFactory("pympc.ipopt")``
and the reverse.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

__all__ = ["register_with_pyomo"]

_TARGET = "pyomo.environ"


def _register():
    importlib.import_module("pympc.mpec.solvers")   # registers on import (once)


class _Loader(importlib.abc.Loader):
    """The real loader of ``pyomo.environ``, then pympc's registration."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            _register()
        except Exception as exc:  # noqa: BLE001 - never break the user's import of Pyomo
            warnings.warn(f"pympc could not register its solvers with Pyomo ({type(exc).__name__}: {exc}); "
                          "import pympc.mpec to see the error", RuntimeWarning, stacklevel=2)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of ``pyomo.environ`` once."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _TARGET:
            return None
        _remove()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


_FINDER = _Finder()


def _remove():
    try:
        sys.meta_path.remove(_FINDER)
    except ValueError:
        pass


def register_with_pyomo():
    """Register the solvers now if Pyomo is imported, else when ``pyomo.environ`` is."""
    if _TARGET in sys.modules:
        _register()
    elif _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
