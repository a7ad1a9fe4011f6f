"""Shared fixtures and reference problems: every test reads its data from here."""

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# property tests draw the same examples on every run: a red CI is a bug found, never the luck of a draw
settings.register_profile("pympc", derandomize=True)
settings.load_profile("pympc")

DATA = Path(__file__).parent / "data"
SICONOS = sorted(DATA.glob("*.dat"))


def random_p_matrix(rng, n, kind):
    """A P-matrix of a few families: SPD, positive-definite-plus-skew, triangular."""
    if kind == "spd":
        G = rng.standard_normal((n, n))
        return G @ G.T + 0.1 * np.eye(n)
    if kind == "pd_skew":
        G = rng.standard_normal((n, n))
        S = rng.standard_normal((n, n))
        return G @ G.T + 0.1 * np.eye(n) + (S - S.T)
    L = np.tril(rng.standard_normal((n, n)), -1)
    return L + np.diag(rng.uniform(0.5, 2.0, n))


@pytest.fixture(scope="session")
def client():
    """One Dask cluster for the whole session, as CI runs sweeps: 2 single-threaded worker processes on the
    loopback, no dashboard, system-chosen ports (starting one costs each worker an import of pympc)."""
    pytest.importorskip("distributed")
    from dask.distributed import Client

    from pympc.sweep import local_cluster

    cluster = local_cluster(n_workers=2)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture
def rng():
    return np.random.default_rng(20261202)


ROOT = Path(__file__).parents[1]
MODELS = ROOT / "models"

# ------------------------------------------------------------------ subprocesses: the pympc this session imports
PYMPC_HOME = Path(importlib.util.find_spec("pympc").origin).resolve().parents[1]
"""The directory holding the ``pympc`` this session imports: the installed one under CI (``pip install ".[test]"``
then ``pytest``), the source tree in development (``PYTHONPATH=$PWD``).  A subprocess importing the other copy
would test other code, and compile that copy's numba kernels (a minute and more) instead of loading them."""


def python_env(*paths, **variables):
    """``os.environ`` for a subprocess: :data:`PYMPC_HOME` first on PYTHONPATH, then ``paths``, then the caller's
    PYTHONPATH; ``variables`` set (None: removed)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PYMPC_HOME), *map(str, paths), env.get("PYTHONPATH")) if p)
    for name, value in variables.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(value)
    return env


def _python_kwargs(kwargs):
    # cwd: Python puts the working directory first on sys.path for ``-c`` and ``-m`` (a repository root there would
    # shadow PYTHONPATH with its own pympc): by default the directory of this session's pympc
    return {"env": python_env(), "cwd": PYMPC_HOME, **kwargs}


def run_python(*args, **kwargs):
    """``subprocess.run([sys.executable, *args])`` importing this session's pympc (see :data:`PYMPC_HOME`); output
    captured as text unless told otherwise; ``env`` from :func:`python_env`, ``cwd`` a directory without another
    pympc."""
    return subprocess.run([sys.executable, *map(str, args)], **_python_kwargs({"capture_output": True, "text": True,
                                                                               **kwargs}))


def start_python(*args, **kwargs):
    """``subprocess.Popen([sys.executable, *args])`` importing this session's pympc (as :func:`run_python`)."""
    return subprocess.Popen([sys.executable, *map(str, args)], **_python_kwargs(kwargs))


def accelerations(form, q, qd, t=0.0, mu=None, mode=None):
    """q̈ and forces of a formulation at a state, slots bilateral (frictionless unless ``mu``), no stabilization."""
    from pympc.dynamics import Baumgarte, Mode, Motion, solve_mode

    a = form.assemble(q, qd, t)
    s = len(form.slots)
    mu = np.zeros(s) if mu is None else np.asarray(mu, float)
    if mode is None:
        mode = Mode((1,) * s, tuple(Motion(int(np.sign(v)) or 1) for v in a.vT))
    return solve_mode(a, mode, mu, mu, Baumgarte(0.0, 0.0), form.mass_diagonal), a


def cross_slide_system(th1, th2, mu1, mu2, m1, m2, push, s1, s2):
    """A crosshead (particle) in a fixed slot at angle th1 carrying a slot at th2 with a particle; both slipping."""
    from pympc.mechanics import Gravity, Particle, PointForce, Slot, System

    u1, u2 = (np.cos(th1), np.sin(th1)), (np.cos(th2), np.sin(th2))
    s = System("cross slide")
    s.add(Particle("crosshead", mass=m1, velocity=(s1 * u1[0], s1 * u1[1])))
    s.add(Particle("slider", mass=m2, velocity=(s1 * u1[0] + s2 * u2[0], s1 * u1[1] + s2 * u2[1])))
    s.add(Slot("fixed", "crosshead", "ground", direction=u1, mu=mu1))
    s.add(Slot("carried", "slider", "crosshead", direction=u2, mu=mu2))
    s.add(Gravity("gravity"))
    s.add(PointForce("push", "crosshead", value=tuple(push)))
    return s


# Event HLCPs with two solutions (different modes) and with none, found by enumeration over
# crosshead-and-slider arrangements with large friction coefficients.
TWO_SOLUTIONS = (1.6, 3.0, 1.0, 3.8, 1.3, 1.6, (26.0, -7.0), 1, 1)
NO_SOLUTION = (0.09, 2.37, 2.4, 1.65, 2.5, 1.25, (-3.7, -29.3), -1, -1)


@functools.lru_cache(maxsize=None)
def same_blas():
    """Do numba's and numpy's matrix-vector and vector products give the same bits on this machine?

    The compiled DOP853 loop does scipy's arithmetic with the same BLAS calls, but numba calls scipy's BLAS
    and numpy its own: where they differ in summation order, DOP853's step ends move by ~1e-6 relative.
    Comparisons of the compiled loop with ``solve_ivp`` ask for round-off only where this is True, and for
    the integration's accuracy always.
    """
    from numba import njit

    dots = njit(lambda K, a, x: (np.dot(K.T, a), np.dot(x, x)))
    rng = np.random.default_rng(7)
    for n, s in ((2, 12), (6, 12), (18, 16), (40, 12)):
        K, a, x = rng.standard_normal((s, n)), rng.standard_normal(s), rng.standard_normal(n)
        mv, vv = dots(K, a, x)
        if not (np.array_equal(mv, np.dot(K.T, a)) and vv == np.dot(x, x)):
            return False
    return True


def record_calls(monkeypatch, owner, name, keep=lambda out: out):
    """Wrap ``owner.name`` (monkeypatched) so that every call still runs it; returns the list that collects
    ``keep(result)`` of each call."""
    seen = []
    original = getattr(owner, name)

    def wrapped(*args, **kw):
        out = original(*args, **kw)
        seen.append(keep(out))
        return out
    monkeypatch.setattr(owner, name, wrapped)
    return seen
