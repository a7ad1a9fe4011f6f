"""The compiled mode solve for a dense mass matrix (:func:`pympc.dynamics._mode_solve.dense_mode`, taken by
:func:`solve_mode`) against the NumPy/scipy/LAPACK path it stands beside (:func:`numpy_solve_mode`).

Oracles: :func:`numpy_solve_mode` on the tree formulation's own assemblies (every call of a simulation, and
every mode at those states), on random symmetric positive definite systems, and where the compiled call declines
(not positive definite, singular, non-finite) the same result or the same error; the equations themselves
(``M q̈ = h + G ν``, the constraint rows) checked by their residuals.
"""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import pympc
from pympc.dynamics import Baumgarte, Mode, Motion
from pympc.dynamics import evaluation as evaluation_module
from pympc.dynamics import modes as modes_module
from pympc.dynamics import transition as transition_module
from pympc.dynamics._mode_solve import MODE_DECLINED, MODE_OK, dense_mode
from pympc.dynamics.modes import numpy_solve_mode, solve_mode
from pympc.errors import SimulationError
from pympc.mechanics import TreeMethod, slider_chain

MODELS = Path(__file__).parents[1] / "models"


def _assert_same(s, r, scale=1.0):
    """Two :class:`ModeSolution` equal to round-off (relative to the largest entry of each and ``scale``)."""
    for name in ("qdd", "nu", "lam", "F", "aT"):
        x, y = getattr(s, name), getattr(r, name)
        assert x.shape == y.shape, name
        tol = 1e-10 * max(1.0, scale, float(np.abs(y).max(initial=0.0)))
        np.testing.assert_allclose(x, y, rtol=0, atol=tol, err_msg=name)


def _kernel_code(a, mode, mu, stab):
    return dense_mode(np.ascontiguousarray(a.M, float), *(np.ascontiguousarray(v, float) for v in (
        a.J, a.WN, a.WT, a.h, a.w, a.gdot, a.g)), np.asarray(a.holonomic, bool),
        *(np.ascontiguousarray(v, float) for v in (a.bN, a.vN, a.gN, a.bT, a.vT)), stab.alpha, stab.beta,
        np.asarray(mu, float), np.asarray(mode.motions, float) * np.asarray(mode.walls, float),
        np.array(mode.sticking, dtype=np.int64))[0]


def _all_modes(ns):
    import itertools
    for walls in itertools.product((1, -1), repeat=ns):
        for motions in itertools.product(tuple(Motion), repeat=ns):
            yield Mode(walls, motions)


@pytest.mark.parametrize("case", ["friction_oscillator", "slider_crank", "cross_slide", "chain3"])
def test_tree_assemblies_of_a_simulation(case, monkeypatch):
    """Every mode solve of a tree-formulation simulation (phases, transition check and probe), and every mode at
    a sample of those states: the compiled solve takes them and equals the NumPy path to round-off."""
    system = slider_chain(int(case[5:])) if case.startswith("chain") else pympc.load_model(MODELS / f"{case}.toml")
    seen = []
    for owner in (evaluation_module, transition_module):
        original = owner.solve_mode

        def recording(a, mode, mu, mu_s, stab, md=None, original=original):
            seen.append((a, mode, mu, mu_s, stab, md))
            return original(a, mode, mu, mu_s, stab, md)
        monkeypatch.setattr(owner, "solve_mode", recording)
    tr = pympc.simulate(system, (0.0, 1.0), formulation="tree")
    assert tr.success and len(seen) > 20
    taken, n = 0, TreeMethod(system).n
    for a, mode, mu, mu_s, stab, md in seen:
        assert md is None and a.M.shape == (n, n)
        ref = numpy_solve_mode(a, mode, mu, mu_s, stab, md)
        if _kernel_code(a, mode, mu, stab) == MODE_OK:
            taken += 1
        _assert_same(solve_mode(a, mode, mu, mu_s, stab, md), ref, float(np.abs(a.h).max(initial=0.0)))
    assert taken == len(seen)
    for a, _, mu, mu_s, stab, md in seen[::max(1, len(seen) // 5)]:
        for mode in _all_modes(len(mu)):
            try:
                ref = numpy_solve_mode(a, mode, mu, mu_s, stab, md)
            except SimulationError as exc:
                with pytest.raises(SimulationError) as got:
                    solve_mode(a, mode, mu, mu_s, stab, md)
                assert str(got.value) == str(exc)
                continue
            _assert_same(solve_mode(a, mode, mu, mu_s, stab, md), ref, float(np.abs(a.h).max(initial=0.0)))


def _random_assembly(rng, n, m, s, M=None):
    M = M if M is not None else (lambda G: G @ G.T + 0.1 * np.eye(n))(rng.standard_normal((n, n)))
    return SimpleNamespace(
        t=0.5, M=M, h=rng.standard_normal(n), J=rng.standard_normal((m, n)), w=rng.standard_normal(m),
        gdot=rng.standard_normal(m), g=rng.standard_normal(m), holonomic=rng.random(m) < 0.6,
        WN=rng.standard_normal((s, n)), bN=rng.standard_normal(s), vN=rng.standard_normal(s),
        gN=rng.standard_normal(s), WT=rng.standard_normal((s, n)), bT=rng.standard_normal(s),
        vT=rng.standard_normal(s))


def _random_mode(rng, s):
    return Mode(tuple(int(w) for w in rng.choice([-1, 1], s)), tuple(Motion(int(v)) for v in rng.choice([-1, 0, 1], s)))


def test_random_spd_systems(rng):
    """Random SPD mass matrices and rows: the compiled solve takes them, equals the NumPy path to round-off, and
    solves the equations (residuals of the dynamics and of every constraint row)."""
    stab = Baumgarte(3.0, 7.0)
    for trial in range(300):
        n = int(rng.integers(1, 12))
        m = int(rng.integers(0, max(1, n // 3) + 1))
        s = int(rng.integers(0, max(1, (n - m) // 2) + 1))
        a = _random_assembly(rng, n, m, s)
        mode = _random_mode(rng, s)
        if m + s + len(mode.sticking) > n:
            continue
        mu = rng.uniform(0.05, 0.8, s)
        assert _kernel_code(a, mode, mu, stab) == MODE_OK
        got = solve_mode(a, mode, mu, mu, stab)
        _assert_same(got, numpy_solve_mode(a, mode, mu, mu, stab), 1e3)
        # the equations: M q̈ = h + Jᵀν + Σ (WN_k λ_k + WT_k F_k); J q̈ + bI = 0, WN q̈ + b̂N = 0, sticking aT + 2α vT = 0
        res = a.M @ got.qdd - a.h - a.J.T @ got.nu - a.WN.T @ got.lam - a.WT.T @ got.F
        assert np.abs(res).max() <= 1e-8 * (1 + np.abs(a.h).max())
        bI = a.w + 2 * stab.alpha * a.gdot + stab.beta ** 2 * np.where(a.holonomic, a.g, 0.0)
        np.testing.assert_allclose(a.J @ got.qdd + bI, 0, atol=1e-8)
        np.testing.assert_allclose(a.WN @ got.qdd + a.bN + 2 * stab.alpha * a.vN + stab.beta ** 2 * a.gN, 0, atol=1e-8)
        st = mode.sticking
        np.testing.assert_allclose(got.aT[st] + 2 * stab.alpha * a.vT[st], 0, atol=1e-8)
        np.testing.assert_allclose(got.aT, a.WT @ got.qdd + a.bT, atol=1e-9)
        slip = [k for k in range(s) if k not in st]
        np.testing.assert_array_equal(got.F[slip], -mu[slip] * np.array(mode.motions, float)[slip]
                                      * np.array(mode.walls, float)[slip] * got.lam[slip])


def test_declined_cases_take_the_numpy_path(rng):
    """Where the compiled solve declines, solve_mode gives what the NumPy path gives, bit for bit, or its error."""
    stab = Baumgarte()
    mode = Mode((1,), (Motion.FORWARD,))
    mu = np.array([0.3])
    # a singular mass matrix (a zero-inertia coordinate held by a constraint): the saddle-point system
    a = _random_assembly(rng, 4, 1, 1)
    a.M[3, :] = a.M[:, 3] = 0.0
    a.J[0] = [0.0, 0.0, 0.0, 1.0]
    assert _kernel_code(a, mode, mu, stab) == MODE_DECLINED
    ref = numpy_solve_mode(a, mode, mu, mu, stab)
    got = solve_mode(a, mode, mu, mu, stab)
    for name in ("qdd", "nu", "lam", "F", "aT"):
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name))
    np.testing.assert_allclose(a.J @ got.qdd + a.w + 2 * stab.alpha * a.gdot + stab.beta ** 2 * a.g * a.holonomic, 0,
                               atol=1e-9)
    # an indefinite mass matrix: also the saddle-point system
    b = _random_assembly(rng, 3, 0, 1, M=np.diag([1.0, -2.0, 3.0]))
    assert _kernel_code(b, mode, mu, stab) == MODE_DECLINED
    np.testing.assert_array_equal(solve_mode(b, mode, mu, mu, stab).qdd, numpy_solve_mode(b, mode, mu, mu, stab).qdd)
    # redundant constraints (a repeated row): singular, the same error
    c = _random_assembly(rng, 5, 2, 1)
    c.J[1] = c.J[0]
    assert _kernel_code(c, mode, mu, stab) == MODE_DECLINED
    with pytest.raises(SimulationError) as ref_err:
        numpy_solve_mode(c, mode, mu, mu, stab)
    with pytest.raises(SimulationError) as got_err:
        solve_mode(c, mode, mu, mu, stab)
    assert str(got_err.value) == str(ref_err.value) and "singular" in str(got_err.value)
    # a non-finite force or mass matrix: scipy's error
    for field in ("h", "M"):
        d = _random_assembly(rng, 3, 1, 1)
        getattr(d, field)[1, ...] = np.nan
        assert _kernel_code(d, mode, mu, stab) == MODE_DECLINED
        with pytest.raises(ValueError) as ref_err:
            numpy_solve_mode(d, mode, mu, mu, stab)
        with pytest.raises(ValueError) as got_err:
            solve_mode(d, mode, mu, mu, stab)
        assert str(got_err.value) == str(ref_err.value)
    # a non-finite bias: no error on either path, the same non-finite results
    e = _random_assembly(rng, 3, 1, 1)
    e.bN[0] = np.inf
    assert _kernel_code(e, mode, mu, stab) == MODE_DECLINED
    np.testing.assert_array_equal(solve_mode(e, mode, mu, mu, stab).qdd, numpy_solve_mode(e, mode, mu, mu, stab).qdd)


def test_large_and_diagonal_systems_keep_the_numpy_path(rng, monkeypatch):
    """Beyond DENSE_COMPILED_UP_TO coordinates, or with a mass diagonal, solve_mode is the NumPy path itself."""
    calls = []
    monkeypatch.setattr(modes_module, "dense_mode", lambda *args: calls.append(1) or (MODE_DECLINED,) + (None,) * 4)
    stab = Baumgarte()
    n = modes_module.DENSE_COMPILED_UP_TO + 1
    a = _random_assembly(rng, n, 2, 2)
    mode, mu = _random_mode(rng, 2), np.array([0.2, 0.4])
    _assert_same(solve_mode(a, mode, mu, mu, stab), numpy_solve_mode(a, mode, mu, mu, stab))
    md = np.full(4, 2.0)
    b = _random_assembly(rng, 4, 1, 1, M=np.diag(md))
    mode1 = _random_mode(rng, 1)
    _assert_same(solve_mode(b, mode1, mu[:1], mu[:1], stab, md), numpy_solve_mode(b, mode1, mu[:1], mu[:1], stab, md))
    assert not calls
    small = _random_assembly(rng, 4, 1, 1)
    solve_mode(small, mode1, mu[:1], mu[:1], stab)
    assert calls == [1]
