"""Compile pympc's numba kernels for the common jobs and leave them in the on-disk cache.

``pip install .`` runs this once (``setup.py``'s build step, into the package it installs), so that a
first run loads the kernels instead of compiling them for a minute.  ``python -m pympc._warmup`` does the
same for an installed package whose cache directory was not written then (a build that could not import
numba, a read-only site-packages with the cache going to the user-wide directory).

The jobs go through the same entry points as the command line (``pympc simulate``) and the library
(:func:`pympc.solve`, sensitivities), on small generated mechanisms: one slot with stick-slip, a chain of
two slots (also in tree coordinates: a dense mass matrix), a crank pinned to the ground (a revolute joint)
driving a slider, so that every kernel is compiled with the argument types a run gives it.  A job that fails is reported and the others go on: the
cache holds what compiled, and anything missing is compiled on first use as without it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

__all__ = ["warm"]

_CRANK = {
    "model": {"name": "warmup_crank", "formulation": "general"},
    "parameters": {"m1": 1.0, "l1": 0.2, "m2": 1.5, "mu": 0.2, "mu_s": 0.25, "M0": 4.0, "g": 9.81},
    "bodies": [
        {"name": "crank", "type": "rigid", "mass": "m1", "inertia": "m1*l1**2/12", "position": [0, "l1/2"],
         "angle": "pi/2"},
        {"name": "slider", "type": "particle", "mass": "m2", "position": [0, "l1"]},
    ],
    "joints": [
        {"name": "O", "type": "revolute", "body_a": "ground", "body_b": "crank", "point_b": ["-l1/2", 0]},
        {"name": "A", "type": "revolute", "body_a": "crank", "point_a": ["l1/2", 0], "body_b": "slider"},
    ],
    "forces": [
        {"name": "gravity", "type": "gravity", "g": [0, "-g"]},
        {"name": "drive", "type": "torque", "body": "crank", "value": "M0*sin(3*t)"},
    ],
    "simulation": {"t_end": 1.0},
}

_CRANK_SLOT = {
    "model": {"name": "warmup_slider_crank", "formulation": "general"},
    "parameters": {"m1": 1.0, "l1": 0.2, "m2": 2.0, "l2": 0.6, "m3": 1.5, "mu": 0.2, "mu_s": 0.25, "M0": 4.0,
                   "g": 9.81, "xs": "sqrt(l2**2 - l1**2)", "beta": "atan(l1/xs)"},
    "bodies": [
        _CRANK["bodies"][0],
        {"name": "rod", "type": "rigid", "mass": "m2", "inertia": "m2*l2**2/12", "position": ["xs/2", "l1/2"],
         "angle": "-beta"},
        {"name": "slider", "type": "particle", "mass": "m3", "position": ["xs", 0]},
    ],
    "joints": [
        _CRANK["joints"][0],
        {"name": "A", "type": "revolute", "body_a": "crank", "point_a": ["l1/2", 0], "body_b": "rod",
         "point_b": ["-l2/2", 0]},
        {"name": "B", "type": "revolute", "body_a": "rod", "point_a": ["l2/2", 0], "body_b": "slider"},
        {"name": "slot", "type": "slot", "slider": "slider", "guide": "ground", "direction": [1, 0], "mu": "mu",
         "mu_s": "mu_s"},
    ],
    "forces": [_CRANK["forces"][0], {"name": "motor", "type": "torque", "body": "crank", "value": "M0"}],
    "simulation": {"t_end": 0.3},
}
"""The crank driving the slider along a slot by a constant torque: pins and constant torques are evaluated with
the mode solve and the assembly (``AbsoluteModel.joint_tables``), not in Python."""


def _jobs(tmp):
    """(name, callable) of the warm-up jobs, writing into the directory ``tmp``."""
    from .cli import main
    from .mechanics.generators import slider_chain
    from .mechanics.modelfile import build_model, save_model

    def cli(system, *extra):
        path = os.path.join(tmp, f"{system.name}.toml")
        save_model(system, path)

        def run():
            status = main(["simulate", path, "--no-plots", "--overwrite", "--out", os.path.join(tmp, system.name),
                           *extra])
            if status:
                raise RuntimeError(f"pympc simulate exited with status {status}")
        return run

    def lcps():
        import numpy as np

        from .complementarity import HLCP, LCP, enumerate_solutions
        from .complementarity.solve import solve
        rng = np.random.default_rng(0)
        for n in (2, 5):
            G = rng.standard_normal((n, n))
            lcp = LCP(G @ G.T + np.eye(n), rng.standard_normal(n))
            lcp.is_solution(solve(lcp).z)         # the check of the cross-check's other solvers (pympc crosscheck)
            solve(LCP(G @ G.T + np.eye(n), rng.standard_normal(n)), max_pivots=1000)   # the option path (pympc solve)
            h = HLCP(np.eye(n) + 0.1 * G, -np.eye(n), rng.standard_normal(n))
            solve(h)                          # one compiled call (solve_hlcp_default)
            solve(h, max_pivots=1000)         # the general path's calls (taken where that one does not verify)
            solve(HLCP(np.eye(n), -(G @ G.T + np.eye(n)), rng.standard_normal(n)))       # the diagonal fast path
            enumerate_solutions(h)            # the whole set (pympc classify, a sweep's start HLCP, crosscheck)

    def sensitivities():
        from .dynamics import simulate
        simulate(slider_chain(2, mu_s=0.4), (0.0, 1.0), sensitivities=["mu"])

    return [
        ("one slot, stick-slip", cli(slider_chain(1, mu_s=0.4, force=8.0, omega=1.0, t_end=8.0))),
        ("two slots", cli(slider_chain(2, t_end=1.0))),
        ("a crank on a revolute joint", cli(build_model(_CRANK, source="<warm-up crank>"))),
        ("a crank driving a slot by a constant torque", cli(build_model(_CRANK_SLOT, source="<warm-up crank>"))),
        ("two slots in tree coordinates", cli(slider_chain(2, t_end=1.0), "--formulation", "tree")),
        ("LCPs and HLCPs", lcps),
        ("sensitivities", sensitivities),
    ]


def warm(stream=None):
    """Run the warm-up jobs (compiling and caching every kernel they use); returns the names of those that failed.

    Parameters
    ----------
    stream : file, optional
        Where to say what runs and what it cost (default ``sys.stderr``).
    """
    stream = sys.stderr if stream is None else stream
    failed = []
    with tempfile.TemporaryDirectory(prefix="pympc-warmup-") as tmp:
        import contextlib
        import io
        for name, job in _jobs(tmp):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    job()
            except Exception as exc:       # the cache keeps what compiled; the rest compiles on first use
                failed.append(name)
                print(f"pympc warm-up: {name} failed ({type(exc).__name__}: {exc})", file=stream)
                continue
            print(f"pympc warm-up: {name}: {time.process_time() - c0:.1f} s CPU, {time.perf_counter() - t0:.1f} s",
                  file=stream)
    return failed


if __name__ == "__main__":
    sys.exit(1 if warm() else 0)
