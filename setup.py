"""The build step that compiles pympc's numba kernels into the package it installs.

Everything else about the package is in pyproject.toml.  After copying the sources, ``build_py`` runs
``python -m pympc._warmup`` on the copy: the kernels of the common jobs are compiled once and left in the
package's ``__pycache__`` directories, keyed by the contents of the kernel sources and the versions of Python,
NumPy, numba and llvmlite (``pympc._compiling``), so that the first run after ``pip install .`` loads them
instead of compiling for a minute.  A cache built with other versions or for another processor is never used:
those kernels compile on first use, as without it.  If the warm-up cannot run, the install goes on without it.
``PYMPC_NO_WARMUP=1`` skips it (e.g. to build a wheel for other machines), and so does an editable install.
"""

import os
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithKernels(build_py):
    """``build_py``, then the kernels compiled into the built package (see the module docstring)."""

    def run(self):
        super().run()
        if os.environ.get("PYMPC_NO_WARMUP") or self.dry_run or getattr(self, "editable_mode", False):
            return                                  # (an editable install runs the source tree: its own cache)
        # the built copy first; the rest of PYTHONPATH kept: pip's isolated build environment reaches numpy,
        # scipy and numba through it (a fresh venv has them nowhere else yet)
        path = os.pathsep.join(p for p in (os.path.abspath(self.build_lib), os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
        env.pop("NUMBA_CACHE_DIR", None)            # into the package's own __pycache__
        print("pympc: compiling the numba kernels into the package (about a minute on 2 cores)", flush=True)
        with tempfile.TemporaryDirectory() as cwd:  # not the source tree: the built copy is the one imported
            done = subprocess.run([sys.executable, "-m", "pympc._warmup"], env=env, cwd=cwd)
        if done.returncode:
            print("pympc: the kernels could not all be compiled now; what is missing compiles on first use",
                  flush=True)


setup(cmdclass={"build_py": BuildWithKernels})
