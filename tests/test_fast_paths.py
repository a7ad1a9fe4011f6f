"""The fast paths against the plain ones they replace: compiled mode solve, sparse event HLCP, banded solves.

Oracles: :func:`solve_mode` on :meth:`GeneralMethod.assemble` (dense LAPACK), the dense event HLCP and
``pympc.solve`` on it, ``numpy.linalg.solve`` and ``lstsq``.
"""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse

import pympc
from pympc.dynamics import Baumgarte, Mode, Motion, SimulateOptions, event_problem, solve_mode
from pympc.dynamics import events as events_module
from pympc.dynamics.evaluation import ModeEvaluator
from pympc.dynamics.locate import EventLocator
from pympc.dynamics.modes import READ_VIEWS, CompiledModes, banded_solve, min_norm, solve_linear
from pympc.dynamics.stepper import PhaseStepper
from pympc.mechanics import GeneralMethod, Particle, RigidBody, Slot, System, slider_chain
from pympc.mechanics.assembly import _Pose

MODELS = Path(__file__).parents[1] / "models"


def _random_mode(rng, ns):
    return Mode(tuple(int(w) for w in rng.choice([-1, 1], ns)),
                tuple(Motion(int(v)) for v in rng.choice([-1, 0, 1], ns)))


@pytest.mark.parametrize("model", ["friction_oscillator", "cross_slide", "slider_crank", "chain5", "chain40"])
def test_compiled_mode_solve_equals_the_dense_one(model, rng):
    system = slider_chain(int(model[5:])) if model.startswith("chain") else pympc.load_model(MODELS / f"{model}.toml")
    form = GeneralMethod(system)
    mu = np.array([float(s.mu) for s in form.slots])
    mus = np.array([float(s.static_mu) for s in form.slots])
    stab = Baumgarte()
    fast = CompiledModes(form, mu, mus, stab)
    for _ in range(10):
        q, qd = form.initial_state()
        q = q + 0.1 * rng.standard_normal(q.size)
        qd = qd + rng.standard_normal(q.size)
        t = float(rng.uniform(0, 3))
        mode = _random_mode(rng, len(mu))
        a = form.assemble(q, qd, t)
        ref = solve_mode(a, mode, mu, mus, stab, form.mass_diagonal)
        b, got = fast.evaluate(t, q, qd, mode)
        for key in ("qdd", "nu", "lam", "F", "aT"):
            r, g = getattr(ref, key), getattr(got, key)
            np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-11 * (1 + np.abs(r).max(initial=0)), err_msg=key)
        for key in ("M", "h", "g", "J", "w", "gdot", "gN", "WN", "bN", "vN", "WT", "bT", "vT"):
            np.testing.assert_allclose(getattr(b, key), getattr(a, key), rtol=1e-13, atol=1e-12, err_msg=key)
        for key in ("kinetic", "potential", "power"):
            assert getattr(b, key) == pytest.approx(getattr(a, key), rel=1e-13, abs=1e-12)


def test_span_is_the_slice_it_replaces():
    """``_kernels._span(a, s, n)`` (the mode solve's views) is ``a[s:s + n]``: the same entries, written through to
    ``a``, for a contiguous array and a strided one (every other entry), empty spans included."""
    from numba import njit

    from pympc.mechanics._kernels import _span

    @njit
    def spans(a, s, n):
        v = _span(a, s, n)
        w = a[s:s + n]
        same = v.size == w.size
        for i in range(v.size):
            same = same and v[i] == w[i]
        if v.size:
            v[v.size - 1] = -1.0                # a view: the write shows in a
        return same

    for a in (np.arange(12.0), np.arange(24.0)[::2]):
        for s, n in ((0, 12), (3, 4), (11, 1), (5, 0), (12, 0)):
            b = a.copy() if a.flags.c_contiguous else np.arange(24.0)[::2]
            assert spans(b, s, n)
            expect = a.copy()
            if n:
                expect[s + n - 1] = -1.0
            assert np.array_equal(b, expect)


def test_results_of_the_compiled_path_stay_valid_after_the_next_call():
    form = GeneralMethod(slider_chain(3))
    mu = np.full(3, 0.3)
    fast = CompiledModes(form, mu, mu, Baumgarte())
    q, qd = form.initial_state()
    mode = Mode((1, 1, 1), (Motion.FORWARD, Motion.STICK, Motion.BACKWARD))
    a1, s1 = fast.evaluate(0.0, q, qd, mode)
    kept = s1.qdd.copy(), a1.vT.copy()
    fast.evaluate(0.5, q + 0.1, -qd, mode)
    np.testing.assert_array_equal(s1.qdd, kept[0])
    np.testing.assert_array_equal(a1.vT, kept[1])


def test_a_singular_mode_is_reported_by_the_compiled_path():
    # a particle in two identical slots: the normal rows are equal, the mode's equations singular
    s = System("twice")
    s.add(Particle("p", mass=1.0))
    s.add(Slot("a", "p", "ground", mu=0.3))
    s.add(Slot("b", "p", "ground", mu=0.3))
    form = GeneralMethod(s)
    fast = CompiledModes(form, np.full(2, 0.3), np.full(2, 0.3), Baumgarte())
    with pytest.raises(pympc.SimulationError, match="singular"):
        fast.evaluate(0.0, *form.initial_state(), Mode((1, 1), (Motion.STICK, Motion.FORWARD)))


def test_a_rigid_body_slider_in_the_compiled_path(rng):
    # a rigid slider (phi column in the slot rows) guided by a moving rigid guide
    s = System("rigid")
    s.add(RigidBody("g", mass=2.0, inertia=0.3, position=(0.0, 0.0), angle=0.2, angular_velocity=0.5))
    s.add(RigidBody("b", mass=1.0, inertia=0.1, position=(0.3, 0.1), angle=-0.4, velocity=(0.2, 0.0)))
    s.add(Slot("s", "b", "g", direction=(1.0, 0.2), point=(0.05, 0.02), mu=0.4))
    form = GeneralMethod(s)
    mu = np.array([0.4])
    fast = CompiledModes(form, mu, mu, Baumgarte())
    q, qd = form.initial_state()
    for mode in (Mode((1,), (Motion.STICK,)), Mode((-1,), (Motion.FORWARD,))):
        a = form.assemble(q, qd, 0.0)
        ref = solve_mode(a, mode, mu, mu, Baumgarte(), form.mass_diagonal)
        _, got = fast.evaluate(0.0, q, qd, mode)
        np.testing.assert_allclose(got.qdd, ref.qdd, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.lam, ref.lam, rtol=1e-12, atol=1e-12)


def test_sparse_event_hlcp_is_the_dense_one_and_solves_alike(monkeypatch):
    form = GeneralMethod(slider_chain(60))
    q, qd = form.initial_state()
    a = form.assemble(q, qd, 0.0)
    mu = np.full(60, 0.3)
    dirs = np.sign(a.vT).astype(int)
    dirs[[3, 17, 40]] = 0                             # stick candidates too
    sparse = event_problem(a, dirs, mu, 1.5 * mu, Baumgarte(), form.mass_diagonal)
    assert sparse.sparse is not None
    monkeypatch.setattr(events_module, "SPARSE_FROM", 10 ** 9)
    dense = event_problem(a, dirs, mu, 1.5 * mu, Baumgarte(), form.mass_diagonal)
    assert dense.sparse is None
    for key in ("A", "B", "c"):
        np.testing.assert_allclose(getattr(sparse.hlcp, key), getattr(dense.hlcp, key), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sparse.Q, dense.Q, rtol=1e-13, atol=1e-13)
    r1, r2 = sparse.solve(), pympc.solve(dense.hlcp)
    assert r1.success and r2.success and "sparse" in r1.message
    assert r1.is_solution() and sparse.hlcp.is_solution(r1.x, r1.y)
    np.testing.assert_allclose(r1.x, r2.x, atol=1e-9)
    np.testing.assert_allclose(r1.y, r2.y, atol=1e-9)
    red = sparse.reduced()                            # the LCP of the basis "every x basic"
    M, qv = np.linalg.solve(sparse.hlcp.A, -sparse.hlcp.B), np.linalg.solve(sparse.hlcp.A, sparse.hlcp.c)
    np.testing.assert_allclose(red.M, M, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(red.q, qv, rtol=1e-10, atol=1e-10)


def test_round_off_fill_in_of_the_reduction_is_dropped_and_nothing_else():
    """drop_below_rounding on A⁻¹(A M) with a known M of exact zeros: the LU's round-off at the zeros (present
    in the raw solve) is removed, no entry of M's pattern is touched; a long chain's reduced LCP, whose far
    entries fell below 1e-150 and were refused, builds with every entry zero or within range."""
    from pympc.dynamics.events import drop_below_rounding
    rng = np.random.default_rng(1)
    n = 60
    A = 4 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    M = rng.standard_normal((n, n)) * (rng.random((n, n)) < 0.3)
    raw = banded_solve(scipy.sparse.csr_matrix(A), A @ M)
    zero = M == 0
    assert np.count_nonzero(raw[zero]) > 100                # fill-in: round-off where M is exactly zero
    kept = drop_below_rounding(raw.copy())
    assert np.count_nonzero(kept[zero]) <= 0.01 * np.count_nonzero(raw[zero])
    assert np.array_equal(kept[~zero], raw[~zero])          # the entries of M's pattern, bit for bit
    # a 400-slot chain: A⁻¹ decays along the chain below 1e-150 of its largest entries
    form = GeneralMethod(slider_chain(400))
    q, qd = form.initial_state()
    a = form.assemble(q, qd, 0.0)
    mu = np.full(400, 0.3)
    ev = event_problem(a, np.sign(a.vT).astype(int), mu, mu, Baumgarte(), form.mass_diagonal)
    red = ev.reduced()
    nonzero = np.abs(red.M[red.M != 0])
    assert nonzero.min() >= 1e-150 and np.count_nonzero(red.M == 0) > 0
    assert ev.solve().success


def test_banded_solve_and_least_norm_match_lapack(rng):
    n = 80
    S = scipy.sparse.random(n, n, density=0.03, random_state=1) + scipy.sparse.diags(rng.uniform(1, 2, n))
    perm = rng.permutation(n)                         # an unordered pattern: the RCM order must find the band
    S = scipy.sparse.csr_matrix(S)[perm][:, perm]
    X = rng.standard_normal((n, 3))
    np.testing.assert_allclose(banded_solve(S, X), np.linalg.solve(S.toarray(), X), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(banded_solve(S, X[:, 0]), np.linalg.solve(S.toarray(), X[:, 0]), rtol=1e-9, atol=1e-10)
    assert banded_solve(scipy.sparse.csr_matrix((3, 3)), np.ones(3)) is None        # singular
    J = scipy.sparse.random(40, 90, density=0.05, random_state=2).toarray() + np.eye(40, 90)
    r = rng.standard_normal(40)
    np.testing.assert_allclose(min_norm(J, r), np.linalg.lstsq(J, r, rcond=None)[0], rtol=1e-9, atol=1e-11)
    J[5] = J[6]                                       # rank deficient: lstsq decides
    np.testing.assert_allclose(min_norm(J, r), np.linalg.lstsq(J, r, rcond=None)[0], rtol=1e-9, atol=1e-11)


def test_sparse_solve_linear_equals_the_dense_one(rng):
    form = GeneralMethod(slider_chain(50))
    q, qd = form.initial_state()
    a = form.assemble(q, qd, 0.0)
    G, C = a.WN.T, a.WN
    b = rng.standard_normal(50)
    x1, n1 = solve_linear(a.M, G, C, a.h, b, form.mass_diagonal)   # 50 rows: the sparse banded path
    x2, n2 = solve_linear(a.M, G, C, a.h, b, None)                 # Cholesky and LAPACK
    np.testing.assert_allclose(x1, x2, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(n1, n2, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- compiled time forces, event vector, scan
TIME_FUNCTIONS = ["F0*sin(w*t)", "-2.5*cos(3*t) + t**2 - t**3/7", "exp(-t/2)*tanh(4*t - 1)", "sqrt(1 + t)*log(2 + t)",
                  "atan(t) - asin(t/10) + acos(-t/10)", "sinh(t/3) + cosh(t/4) - abs(sin(t) - 0.3)",
                  "(1 + t)**(-1.5) / (2 + tan(t/5))", "(-2)**3 * t - (-t)**2", "pi*e*t"]


@pytest.mark.parametrize("text", TIME_FUNCTIONS)
def test_the_compiled_time_program_equals_the_expression(text, rng):
    from pympc.mechanics import _kernels
    from pympc.mechanics.assembly import time_program
    from pympc.mechanics.expressions import parse
    e = parse(text, {"F0": 10.0, "w": 1.3}, ("t",))
    compiled = time_program([(1, 0, e), (0, 1, e.diff("t"))])
    if compiled is None:            # allowed: then the Python path evaluates it; the common forms must compile
        assert "pi" in text
        return
    prog, consts = compiled
    tF = np.zeros((2, 2))
    for t in np.concatenate([[0.0, 1.0], rng.uniform(0, 9, 20)]):
        assert _kernels.run_time_program(t, prog, consts, tF)
        assert tF[1, 0] == pytest.approx(e(t=t), rel=4e-16, abs=1e-300)
        assert tF[0, 1] == pytest.approx(e.diff("t")(t=t), rel=4e-15, abs=1e-15)


def test_a_time_force_that_cannot_be_evaluated_is_a_model_error_on_the_compiled_path():
    from pympc.mechanics import PointForce
    s = System("bad force")
    s.add(Particle("p", mass=1.0))
    s.add(Slot("slot", "p", "ground", mu=0.3))
    s.add(PointForce("push", "p", value=("log(1 - t)", "-10")))
    form = GeneralMethod(s)
    fast = CompiledModes(form, np.array([0.3]), np.array([0.3]), Baumgarte())
    assert not fast._glue                    # the whole right-hand side is the compiled call
    q, qd = form.initial_state()
    mode = Mode((1,), (Motion.FORWARD,))
    a = form.assemble(q, qd, 0.5)
    ref = solve_mode(a, mode, np.array([0.3]), np.array([0.3]), Baumgarte(), form.mass_diagonal)
    np.testing.assert_allclose(fast.evaluate(0.5, q, qd, mode)[1].qdd, ref.qdd, rtol=1e-14)
    with pytest.raises(pympc.ModelError, match=r"push\.value\[0\].*log\(1 - t\)"):
        fast.compute(1.5, q, qd, mode)


def _parts(system, form):
    """The parts of a run of ``system`` on (0, 1) by ``form``: its evaluator (``run.ev``, and its ``form``, ``n``, ``mu``,
    ``_fast``, ``rhs``), event locator (``run.locator``) and phase stepper (``run.stepper``)."""
    o = SimulateOptions().resolve(system, (0.0, 1.0))
    ev = ModeEvaluator(form, Baumgarte())
    locator = EventLocator(ev, o)
    return SimpleNamespace(ev=ev, form=ev.form, n=ev.n, mu=ev.mu, mu_s=ev.mu_s, _fast=ev._fast, rhs=ev.rhs, locator=locator,
                           stepper=PhaseStepper(ev, locator, o))


def test_the_compiled_event_vector_equals_the_event_functions(rng):
    system = slider_chain(6)
    form = GeneralMethod(system)
    run = _parts(system, form)
    q, qd = form.initial_state()
    for _ in range(5):
        mode = _random_mode(rng, 6)
        funcs = run.locator.functions(mode, 7.0)
        x = np.concatenate([q + 0.05 * rng.standard_normal(q.size), qd + rng.standard_normal(q.size), [0.0, 0.0]])
        t = float(rng.uniform(0, 1))
        got = funcs.vector(t, x)
        ref = np.array([f(t, x) for f in funcs])            # the per-slot functions, on the assembly path
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
        a = form.assemble(x[:q.size], x[q.size:2 * q.size], t)    # and against the dense mode solve
        s = solve_mode(a, mode, run.mu, run.mu_s, Baumgarte(), form.mass_diagonal)
        wall = [k for k, f in enumerate(funcs) if f.kind.name == "WALL_SWITCH"]
        band = max(1e-12, 10 * run.locator.opts["rtol"]) * 7.0
        np.testing.assert_allclose(got[wall] - band, np.asarray(mode.walls) * s.lam, rtol=1e-10, atol=1e-10)


def test_first_crossing_roots_without_bisecting_to_the_floor():
    from pympc.dynamics.crossings import first_crossing
    calls = [0]

    def g(t):
        calls[0] += 1
        return np.array([np.cos(t) - 0.5, 2.0 - t, 1e-3 - np.exp(-((t - 0.7) / 1e-3) ** 2) + 0.0 * t])
    # the dip at 0.7 comes first (found by bisection), the monotone crossing at π/3 ≈ 1.047 after it
    t, i = first_crossing(g, 0.0, 3.0, 0.01)
    assert i == 2 and t == pytest.approx(0.7 - 1e-3 * math.sqrt(math.log(1e3)), abs=1e-12)
    g2 = lambda t: g(t)[:2]  # noqa: E731
    calls[0] = 0
    t, i = first_crossing(g2, 0.0, 3.0, 0.05)
    assert i == 0 and t == pytest.approx(math.pi / 3, abs=1e-14)
    # 25 samples up to the crossing and a root finding; bisecting to dt_min first would add some 30 calls
    assert calls[0] < 50
    g2.many = lambda ts: np.array([g2(s) for s in ts])    # the batched samples give the same answer
    assert first_crossing(g2, 0.0, 3.0, 0.05) == (t, i)
    # and the dip, found by cutting the open intervals into parts evaluated in one call each
    g3 = lambda t: g(t)  # noqa: E731
    g3.many = lambda ts: np.array([g(s) for s in ts])
    t3, i3 = first_crossing(g3, 0.0, 3.0, 0.01)
    assert i3 == 2 and t3 == pytest.approx(0.7 - 1e-3 * math.sqrt(math.log(1e3)), abs=1e-12)


def test_compiled_dense_to_csr_stores_what_scipy_stores(rng):
    from pympc.dynamics.modes import csr
    A = rng.standard_normal((30, 50)) * (rng.uniform(size=(30, 50)) < 0.1)
    A[3, 4], A[5] = -0.0, 0.0                           # a negative zero and an empty row are not stored
    got, ref = csr(A), scipy.sparse.csr_matrix(A)
    np.testing.assert_array_equal(got.indptr, ref.indptr)
    np.testing.assert_array_equal(got.indices, ref.indices)
    np.testing.assert_array_equal(got.data, ref.data)
    assert csr(np.zeros((0, 4))).shape == (0, 4)
    S = csr(A @ A.T)                                     # a symmetric pattern needs no symmetrization
    r = rng.standard_normal(30)
    np.testing.assert_allclose(banded_solve(S + scipy.sparse.eye(30), r, symmetric=True),
                               np.linalg.solve(A @ A.T + np.eye(30), r), rtol=1e-10, atol=1e-12)


def test_compiled_revolute_rows_equal_the_python_ones(rng):
    from pympc.mechanics import Revolute
    s = System("linkage")
    s.add(RigidBody("crank", mass=1.0, inertia=0.1, position=(0.1, 0.2), angle=0.7, angular_velocity=1.3))
    s.add(RigidBody("rod", mass=0.5, inertia=0.05, position=(0.5, 0.1), angle=-0.3, angular_velocity=-0.4))
    s.add(Particle("pin", mass=0.2, position=(0.9, 0.0), velocity=(0.3, 0.1)))
    s.add(Revolute("base", "crank", "ground", point_a=(-0.1, 0.0), point_b=(0.0, 0.2)))
    s.add(Revolute("knee", "crank", "rod", point_a=(0.1, 0.05), point_b=(-0.25, 0.0)))
    s.add(Revolute("wrist", "pin", "rod", point_a=(0.0, 0.0), point_b=(0.3, -0.02)))
    s.add(Slot("guide", "pin", "ground", mu=0.2))
    form = GeneralMethod(s)
    ab = form._abs
    (kernel, args), = ab._batches                     # the pins' own compiled kernel, nothing left in Python
    assert args[0].size == 3 and not ab._other_joints
    for _ in range(5):
        q, qd = form.initial_state()
        q, qd = q + 0.2 * rng.standard_normal(q.size), qd + rng.standard_normal(q.size)
        (g, J, w, gd), *_ = ab.python_parts(q, qd, 0.0, Baumgarte())
        g0, J0, w0, gd0 = np.zeros(6), np.zeros((6, q.size)), np.zeros(6), np.zeros(6)     # the Python rows
        pose = _Pose(ab, q, qd)
        for j, r0, data in ab._joints:
            j.evaluate(data, pose, 0.0, g0[r0:], J0[r0:], w0[r0:], gd0[r0:])
        for got, ref in ((g, g0), (J, J0), (w, w0), (gd, gd0)):
            np.testing.assert_allclose(got, ref, rtol=1e-14, atol=1e-15)
        # the assembly's rows are the kernel's too (AbsoluteModel.evaluate runs the batches)
        for got, ref in zip(ab.evaluate(q, qd, 0.0)[0], (g, J, w, gd)):
            np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("model", ["friction_oscillator", "chain5"])
def test_compiled_event_samples_equal_the_event_vector(model, rng):
    """All samples of a scan in one compiled call = the event vector sample by sample (and no stale cache)."""
    system = slider_chain(5) if model == "chain5" else pympc.load_model(MODELS / f"{model}.toml")
    form = GeneralMethod(system)
    run = _parts(system, form)
    q, qd = form.initial_state()
    ns = len(run.mu)
    for _ in range(5):
        mode = _random_mode(rng, ns)
        funcs = run.locator.functions(mode, 7.0)
        ts = np.sort(rng.uniform(0, 3, 9))
        X = np.column_stack([q + 0.05 * rng.standard_normal((9, q.size)), qd + rng.standard_normal((9, q.size)),
                             np.zeros((9, 2))])
        assert run._fast.event_samples(ts, X, mode, (np.zeros(0, np.int64),) + (np.zeros(0),) * 4) is not None
        ref = np.array([funcs.vector(t, x) for t, x in zip(ts, X)])
        before = funcs.vector(ts[0], X[0]).copy()        # cached evaluation of sample 0 ...
        got = funcs.vector.many(ts, X)
        np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(funcs.vector(ts[0], X[0]), before)   # ... recomputed, not read stale


def test_compiled_event_samples_report_a_singular_mode():
    s = System("two slots on one particle")
    s.add(Particle("p", mass=1.0))
    s.add(Slot("a", "p", "ground", direction=(1.0, 0.0), mu=0.3))
    s.add(Slot("b", "p", "ground", direction=(1.0, 0.0), mu=0.3))   # the same constraint twice: singular
    form = GeneralMethod(s)
    fast = CompiledModes(form, np.array([0.3, 0.3]), np.array([0.3, 0.3]), Baumgarte())
    q, qd = form.initial_state()
    X = np.tile(np.concatenate([q, qd, [0.0, 0.0]]), (3, 1))
    table = (np.array([0], np.int64), np.ones(1), np.zeros(1), np.zeros(1), np.zeros(1))
    with pytest.raises(pympc.errors.SimulationError, match="singular"):
        fast.event_samples(np.array([0.0, 0.1, 0.2]), X, Mode((1, 1), (Motion.STICK, Motion.STICK)), table)


def _solution_sets_agree(h):
    """The batched leaves of :func:`pympc.enumerate_solutions` give what its walk gives (False: not taken)."""
    from pympc.complementarity.enumeration import _batched_leaves, _enumerate
    if _batched_leaves(h.equilibrated()[0], 1e-9) is None:
        return False
    small = pympc.enumerate_solutions(h)
    ref = _enumerate(h, lambda x, y: (x, y), 1e-9, batched=False)
    assert small.kind == ref.kind
    key = lambda pts: [np.concatenate(p).round(7).tolist() for p in pts]  # noqa: E731
    assert key(small.points) == key(ref.points)            # the same points, in the same order
    for x, y in small.points:
        assert h.is_solution(x, y)
    return True


def _random_hlcps(rng, count, max_n):
    """``count`` HLCPs of 1 to ``max_n`` pairs: odd ones Gaussian, even ones integer (degenerate: ties, zero rows,
    several or no solutions, singular supports)."""
    out = []
    for trial in range(count):
        n = int(rng.integers(1, max_n + 1))
        if trial % 2:
            A, B, c = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
        else:
            A, B = rng.integers(-2, 3, (n, n)).astype(float), rng.integers(-2, 3, (n, n)).astype(float)
            c = rng.integers(-1, 2, n).astype(float)
        out.append(pympc.HLCP(A, B, c))
    return out


def test_small_event_hlcp_solution_sets_equal_the_enumeration(rng):
    """The batched small-HLCP path = the enumeration's walk: random, integer (degenerate: ties, zero rows,
    several or no solutions, singular supports) and event HLCPs of the oscillator's stick candidate."""
    direct = degenerate = 0
    for trial, h in enumerate(_random_hlcps(rng, 300, 4)):
        if _solution_sets_agree(h):
            direct += 1
            degenerate += trial % 2 == 0
    assert direct > 200 and degenerate > 80      # the direct path is taken, also on the integer problems
    # event HLCPs of a particle in a slot: a stick candidate has singular supports (a⁺ and a⁻ together)
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    form = GeneralMethod(system)
    mu, mus = np.array([0.3]), np.array([0.4])
    kinds = set()
    for t in np.linspace(0.0, 6.0, 25):
        q, qd = form.initial_state()
        a = form.assemble(q + rng.standard_normal(q.size) * [0.3, 0.0], qd, float(t))
        for d in (0, 1, -1):
            ev = event_problem(a, [d], mu, mus, Baumgarte(), form.mass_diagonal)
            assert _solution_sets_agree(ev.hlcp)
            kinds.add(pympc.enumerate_solutions(ev.hlcp).kind.name)
    assert "UNIQUE" in kinds
    # a continuum (a singular support holding a segment) goes to the enumeration, which reports it
    h = pympc.HLCP(np.eye(2), -np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([1.0, -1.0]))
    from pympc.complementarity.enumeration import _batched_leaves
    assert _batched_leaves(h.equilibrated()[0], 1e-9) is None
    assert pympc.enumerate_solutions(h).kind.name == "CONTINUUM"


def _oscillator_event_hlcps(rng):
    """The event HLCPs of the friction oscillator at 20 times and random positions, each slip direction."""
    form = GeneralMethod(pympc.load_model(MODELS / "friction_oscillator.toml"))
    q, qd = form.initial_state()
    out = []
    for t in np.linspace(0.0, 6.0, 20):
        a = form.assemble(q + rng.standard_normal(q.size) * [0.3, 0.0], qd, float(t))
        out += [event_problem(a, [d], np.array([0.3]), np.array([0.4]), Baumgarte(), form.mass_diagonal).hlcp
                for d in (0, 1, -1)]
    return out


def test_the_compiled_solution_set_of_an_event_hlcp_is_the_enumerations_bit_for_bit(rng):
    """EventProblem.solution_set (one compiled call where it decides) = pympc.enumerate_solutions: the same kind
    and the same points, exactly, on random and integer HLCPs of 1–6 pairs (several or no solutions, singular
    supports: declined) and on event HLCPs of the oscillator; the compiled call decides most of them."""
    from pympc.complementarity.enumeration import _SUPPORTS
    from pympc.dynamics._event_sets import small_solution_set
    from pympc.dynamics.events import EventProblem
    problems = _random_hlcps(rng, 300, 6) + _oscillator_event_hlcps(rng)
    decided, kinds = 0, set()
    for h in problems:
        ref = pympc.enumerate_solutions(h)
        _assert_same_set(EventProblem(h, [], np.zeros(0), None, None).solution_set(16), ref)
        decided += small_solution_set(h.A, h.B, h.c, h._a_diagonal, _SUPPORTS[h.n], 1e-9)[0]
        kinds.add(ref.kind.name)
    assert decided > 0.6 * len(problems) and decided < len(problems)
    assert kinds == {"NONE", "UNIQUE", "FINITE", "CONTINUUM"}


def test_visited_leaves_give_the_walks_solution_set_bit_for_bit(rng):
    """From WALK_POINTS_FROM pairs, and below it where the batched points are not taken (an ill-conditioned or
    singular support), the batched call picks the leaves and the walk's own leaf examines them: the same kind
    and the same points as the walk, exactly (random problems, integer ones with singular supports, several or
    no solutions, LCPs with a negative definite M: many solutions, and a continuum)."""
    from pympc.complementarity.enumeration import BATCHED_PAIRS, WALK_POINTS_FROM, _batched_leaves, _enumerate
    assert WALK_POINTS_FROM <= BATCHED_PAIRS
    visited = 0
    for h in _random_hlcps(rng, 400, WALK_POINTS_FROM - 1):
        if _batched_leaves(h.equilibrated()[0], 1e-9) is None:      # below WALK_POINTS_FROM: leaves visited
            visited += 1
            fast = pympc.enumerate_solutions(h)
            ref = _enumerate(h, lambda x, y: (x, y), 1e-9, batched=False)
            assert fast.kind == ref.kind and len(fast.points) == len(ref.points)
            for (x, y), (rx, ry) in zip(fast.points, ref.points):
                assert np.array_equal(x, rx) and np.array_equal(y, ry)
    assert visited > 10
    several, kinds = 0, set()
    for trial in range(63):
        n = int(rng.integers(WALK_POINTS_FROM, BATCHED_PAIRS + 1))
        if trial >= 60:         # a segment of solutions (pairs 0, 1) beside pairs with one solution each
            A, B = np.eye(n), -np.eye(n)
            B[:2, :2] = -np.array([[1.0, -1.0], [-1.0, 1.0]])
            c = np.ones(n)
            c[1] = -1.0
            A[2:] += rng.standard_normal((n - 2, n)) * 0.1
        elif trial % 3 == 0:
            A, B, c = rng.standard_normal((n, n)) + 2 * np.eye(n), rng.standard_normal((n, n)), rng.standard_normal(n)
        elif trial % 3 == 1:
            A, B = np.eye(n), -(rng.standard_normal((n, n)) * 0.1 - np.eye(n))       # w = M z + q, M ≈ −I
            c = rng.uniform(0.5, 1.5, n) * np.where(rng.random(n) < 0.5, 1.0, -1.0)
        else:
            A, B = rng.integers(-2, 3, (n, n)).astype(float), rng.integers(-2, 3, (n, n)).astype(float)
            c = rng.integers(-1, 2, n).astype(float)
        h = pympc.HLCP(A, B, c)
        fast = pympc.enumerate_solutions(h)
        ref = _enumerate(h, lambda x, y: (x, y), 1e-9, batched=False)
        assert fast.kind == ref.kind and len(fast.points) == len(ref.points)
        for (x, y), (rx, ry) in zip(fast.points, ref.points):
            assert np.array_equal(x, rx) and np.array_equal(y, ry)
        several += len(fast.points) > 1
        kinds.add(fast.kind.name)
    assert several > 3 and kinds == {"NONE", "UNIQUE", "FINITE", "CONTINUUM"}


@pytest.mark.parametrize("model", ["friction_oscillator", "chain5", "cross_slide", "slider_crank"])
def test_the_five_argument_evaluation_equals_the_packed_one(model, rng):
    """CompiledModes.compute_state (everything in two arrays; the Python parts' models fall back) = compute."""
    system = slider_chain(5) if model == "chain5" else pympc.load_model(MODELS / f"{model}.toml")
    form = GeneralMethod(system)
    mu = np.array([float(s.mu) for s in form.slots])
    fast = CompiledModes(form, mu, mu + 0.1, Baumgarte())
    q, qd = form.initial_state()
    for _ in range(6):
        mode = _random_mode(rng, mu.size)
        x = np.concatenate([q + 0.05 * rng.standard_normal(q.size), qd + rng.standard_normal(q.size), [0.0, 0.0]])
        t = float(rng.uniform(0, 3))
        got = fast.compute_state(t, x, mode, np.empty(2 * q.size + 2)).copy()
        vT, lam, F = (v.copy() for v in fast.slot_values())
        ref = fast.compute(t, x[:q.size], x[q.size:2 * q.size], mode)
        np.testing.assert_array_equal(got, ref)
        for a, b in zip((vT, lam, F), fast.slot_values()):
            np.testing.assert_array_equal(a, b)
        assert (fast.plan(mode).fl is None) == (model == "slider_crank")   # joints: Python parts


@pytest.mark.parametrize("model", ["chain5", "cross_slide", "slider_crank"])
def test_a_plan_holds_the_tables_pack_model_and_pack_mode_make(model, rng):
    """The model's tables packed once (shared by the compiled assembly; 1/m last for the mode solve) and a plan's
    pf, pi (views of the flat arrays where there are no Python parts) are what pack_model and pack_mode make; its
    views are the pieces of its buffer; new friction reaches pf and the flat array alike."""
    from pympc.mechanics import _kernels
    from pympc.mechanics.assembly import time_program
    system = slider_chain(5) if model == "chain5" else pympc.load_model(MODELS / f"{model}.toml")
    form = GeneralMethod(system)
    ab = form._abs
    mu = np.array([float(s.mu) for s in form.slots])
    fast = CompiledModes(form, mu, mu + 0.1, Baumgarte())
    sf, si = _kernels.pack_model(ab._slot_table, ab._pair_table, ab._bx, ab._bphi, ab._tbody, ab._tpoint,
                                 ab._gravity, 1.0 / ab.mass)
    assert np.array_equal(fast._sf, sf) and np.array_equal(fast._si, si)
    assert np.array_equal(ab.model_tables()[0][:-ab.n], sf[:-ab.n]) and np.array_equal(ab.model_tables()[0][-ab.n:],
                                                                                         ab.mass)
    prog, consts = time_program(ab._tvary)
    tp = ab.time_tables()
    assert np.array_equal(tp[0], prog) and np.array_equal(tp[1], consts) and tp[1] is not ab.time_tables()[1]
    for _ in range(5):
        mode = _random_mode(rng, mu.size)
        p = fast.plan(mode)
        t = fast._templates[tuple(mode.sticking)]
        pf, pi, _ = _kernels.pack_mode(-mu * mode._friction_sign, t.stick, t.perm, t.kl, t.ku, fast.m)
        assert np.array_equal(p.pf, pf) and np.array_equal(p.pi, pi)
        assert (p.fl is None) == (model == "slider_crank")
        for k in READ_VIEWS:
            o, size = t.layout[k]
            assert p.view[k].size == size and np.shares_memory(p.view[k], p.fb[o:o + size])
    fast.set_mu(mu + 0.25)
    for mode, p in fast._plans.items():
        assert np.array_equal(p.pf[:mu.size], -(mu + 0.25) * mode._friction_sign)
        if p.fl is not None:
            assert np.array_equal(p.fl[p.at_fric:p.at_fric + mu.size], p.pf[:mu.size])


@pytest.mark.parametrize("model", ["chain5", "cross_slide", "slider_crank"])
def test_modes_that_stick_in_the_same_slots_share_a_template(model, rng, monkeypatch):
    """One template per set of sticking slots (walls and slip directions differ in the friction columns alone): the
    plans of modes that share one evaluate, bit for bit, as plans of templates made for each mode, and as the dense
    solve to round-off; the plans' arrays are their own (a mode's evaluation leaves another's buffers as they were)."""
    from pympc.dynamics import modes
    system = slider_chain(5) if model == "chain5" else pympc.load_model(MODELS / f"{model}.toml")
    form = GeneralMethod(system)
    mu = np.array([float(s.mu) for s in form.slots])
    monkeypatch.setattr(modes, "_templates", {})
    shared = CompiledModes(form, mu, mu + 0.1, Baumgarte())
    own = CompiledModes(form, mu, mu + 0.1, Baumgarte())
    own._templates = None                      # no templates kept: every plan is made from a template of its own
    built = []
    make = CompiledModes._template
    monkeypatch.setattr(CompiledModes, "_template", lambda self, mode: built.append(self) or make(self, mode))
    ns = mu.size
    stick = tuple(int(k) for k in rng.choice(ns, min(ns - 1, 2), replace=False))
    seen = set()
    while len(seen) < min(6, 2 ** ns):         # modes that stick in the same slots, the others in every direction
        seen.add(Mode(tuple(int(w) for w in rng.choice([-1, 1], ns)),
                      tuple(Motion.STICK if k in stick else Motion(int(rng.choice([-1, 1]))) for k in range(ns))))
    q, qd = form.initial_state()
    x = [(float(rng.uniform(0, 2)), q + 0.05 * rng.standard_normal(q.size), qd + rng.standard_normal(q.size))
         for _ in range(3)]
    results = {}
    for mode in seen:
        for t, qq, qqd in x:
            got = shared.compute(t, qq, qqd, mode).copy()
            np.testing.assert_array_equal(got, own.compute(t, qq, qqd, mode))
            a, sol = shared.result()
            ref = solve_mode(form.assemble(qq, qqd, t), mode, mu, mu + 0.1, Baumgarte())
            np.testing.assert_allclose(sol.qdd, ref.qdd, rtol=1e-9, atol=1e-9 * (1 + np.abs(ref.qdd).max()))
            results[mode, t] = got
    assert sum(b is shared for b in built) == 1 and sum(b is own for b in built) == len(seen)
    plans = [shared.plan(m) for m in seen]
    for i, p in enumerate(plans):
        for o in plans[i + 1:]:
            assert not np.shares_memory(p.fb, o.fb) and not np.shares_memory(p.ib, o.ib)
            assert p.fl is None or not (np.shares_memory(p.fl, o.fl) or np.shares_memory(p.il, o.il))
    t, qq, qqd = x[0]
    first = next(iter(seen))
    before = shared.plan(first).fb.copy()
    for mode in seen:
        if mode != first:
            shared.compute(t, qq, qqd, mode)
    np.testing.assert_array_equal(shared.plan(first).fb, before)


def test_least_norm_of_a_few_rows_matches_lstsq(rng):
    """min_norm's normal-equation path for J of at most four rows = lstsq; ill-conditioned J go to lstsq."""
    for k, n in [(1, 2), (2, 3), (3, 6), (4, 4), (4, 9), (2, 2), (1, 1)]:
        J, r = rng.standard_normal((k, n)), rng.standard_normal(k)
        np.testing.assert_allclose(min_norm(J, r), np.linalg.lstsq(J, r, rcond=None)[0], rtol=1e-12, atol=1e-14)
    J = np.array([[1.0, 0.0, 0.0], [1.0, 1e-9, 0.0]])      # nearly dependent rows
    r = np.array([1e-10, 2e-10])
    np.testing.assert_allclose(min_norm(J, r), np.linalg.lstsq(J, r, rcond=None)[0], rtol=1e-12, atol=0)
    J = np.array([[1.0, 2.0], [2.0, 4.0]])                   # dependent rows: lstsq's answer
    np.testing.assert_allclose(min_norm(J, np.array([1.0, 2.0])), np.linalg.lstsq(J, [1.0, 2.0], rcond=None)[0])


@pytest.mark.parametrize("method", ["DOP853", "RK45"])
def test_dense_states_are_scipys_dense_output(method):
    """DenseStates(sol.sol)(ts) = sol.sol(ts).T to the bit (DOP853 stacked; other methods through scipy)."""
    from scipy.integrate import solve_ivp
    from pympc.dynamics.crossings import DenseStates
    sol = solve_ivp(lambda t, y: [y[1], -y[0] + np.sin(3 * t)], (0.0, 7.0), [1.0, 0.0], method=method,
                    dense_output=True, rtol=1e-10)
    ts = np.concatenate([np.linspace(0.0, 7.0, 333), sol.t, [0.0, 7.0, 3.3]])     # step ends and both ends too
    got = DenseStates(sol.sol)(ts)
    assert got.shape == (ts.size, 2)
    np.testing.assert_array_equal(got, sol.sol(ts).T)


def test_event_samples_from_the_dense_output_equal_the_sampled_states(rng):
    """The compiled DOP853 states + event functions (vector.dense) = the event vector at scipy's dense output."""
    from scipy.integrate import solve_ivp
    from pympc.dynamics import _event_kernels
    from pympc.dynamics.crossings import DenseStates
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    form = GeneralMethod(system)
    run = _parts(system, form)
    mode = Mode((1,), (Motion.FORWARD,))
    q, qd = form.initial_state()
    sol = solve_ivp(run.rhs, (0.0, 0.4), np.concatenate([q, qd + [0.5, 0.0], [0.0, 0.0]]), method="DOP853",
                    args=(mode,), dense_output=True, rtol=1e-10, atol=1e-12)
    states = DenseStates(sol.sol)
    ts = np.sort(np.concatenate([rng.uniform(0.0, 0.4, 30), sol.t]))
    X = np.empty((ts.size, sol.y.shape[0]))
    _event_kernels.dop853_states(ts, *states.stack, X)
    np.testing.assert_allclose(X, sol.sol(ts).T, rtol=1e-14, atol=1e-15)
    funcs = run.locator.functions(mode, 10.0)
    got = funcs.vector.dense(ts, states)
    ref = np.array([funcs.vector(t, sol.sol(t)) for t in ts])
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13)


def test_kernels_without_reference_counting_return_no_arrays():
    """A kernel compiled without NRT (``_kernels._PLAIN``) must not return an array: a caller with NRT would
    release it (memory corruption, not an error). Checked on every signature compiled by a simulation."""
    from numba.core import types

    from pympc.dynamics import _event_kernels
    from pympc.mechanics import _kernels
    pympc.simulate(pympc.load_model(Path(__file__).parents[1] / "models" / "friction_oscillator.toml"), (0.0, 2.0))
    plain = [f for module in (_kernels, _event_kernels) for f in vars(module).values()
             if getattr(f, "targetoptions", {}).get("_nrt") is False]
    assert len(plain) >= 10
    assert _event_kernels.dop853_states in plain          # the dense-output kernel moved to dynamics keeps _PLAIN

    def has_array(t):
        return isinstance(t, types.Array) or (isinstance(t, types.BaseTuple) and any(has_array(e) for e in t))

    compiled = [(f.py_func.__name__, s.return_type) for f in plain for s in f.nopython_signatures]
    assert compiled, "no kernel without NRT was compiled"
    assert [name for name, rt in compiled if has_array(rt)] == []


def _same_result(r, ref):
    """Two Lemke results alike to the bit: status, message, method, pivots, point, pivot log, basis, scales."""
    assert (r.status, r.message, r.method, r.pivots) == (ref.status, ref.message, ref.method, ref.pivots)
    assert np.array_equal(r.x, ref.x) and np.array_equal(r.y, ref.y)
    assert r.info.keys() == ref.info.keys()
    for key in ("log", "basis", "scaling"):
        if key in ref.info:
            for u, v in zip(np.atleast_1d(r.info[key]) if key == "basis" else r.info[key],
                            np.atleast_1d(ref.info[key]) if key == "basis" else ref.info[key]):
                assert np.array_equal(u, v)


def test_the_compiled_hlcp_lemke_gives_the_stepwise_result_bit_for_bit(rng, monkeypatch):
    """EventProblem.solve and pympc.solve on an HLCP with a non-diagonal A (Lemke's usual path in one compiled
    call, solve_hlcp_default, where it ends on a verified point) = the same steps with scipy's dgesv between
    compiled calls (HLCP_DEFAULT_KERNEL off): the same status, message, point, pivots and info, exactly, on
    random and integer HLCPs of 1–8 pairs (rays, singular bases, failed verification: declined, the general path
    decides) and on event HLCPs of the oscillator; the compiled call decides many of them, not all.  A 'lemke'
    replaced in the registry is what EventProblem.solve calls."""
    lemke_module = __import__("importlib").import_module("pympc.complementarity.lemke")
    from pympc.complementarity._kernel import solve_hlcp_default
    from pympc.complementarity.lemke import verified_hlcp_result
    from pympc.dynamics.events import EventProblem
    assert lemke_module.HLCP_DEFAULT_KERNEL       # this numba has the LAPACK wrapper (else the test says nothing)
    problems = [h for h in _random_hlcps(rng, 400, 8) if not h._a_diagonal] + _oscillator_event_hlcps(rng)
    decided, statuses = 0, set()
    for h in problems:
        with monkeypatch.context() as m:
            m.setattr(lemke_module, "HLCP_DEFAULT_KERNEL", False)
            ref = pympc.solve(h)
        for r in (EventProblem(h, [], np.zeros(0), None, None).solve(), pympc.solve(h)):
            _same_result(r, ref)
        statuses.add(ref.status.name)
        answer = solve_hlcp_default(h.A, h.B, h.c)
        decided += answer[0] and verified_hlcp_result(h, *answer[1:5], answer[5:9], *answer[9:]) is not None
    assert decided > 0.3 * len(problems) and decided < len(problems)
    assert {"SOLVED", "INFEASIBLE"} <= statuses
    solve_module = __import__("importlib").import_module("pympc.complementarity.solve")
    seen = []
    monkeypatch.setitem(solve_module.METHODS._entries, "lemke", lambda p: seen.append(p) or pympc.lemke(p))
    EventProblem(problems[-1], [], np.zeros(0), None, None).solve()
    assert seen == [problems[-1]]


def _assert_same_set(fast, ref):
    """The same kind and the same points, exactly."""
    assert fast.kind == ref.kind and len(fast.points) == len(ref.points)
    for (x, y), (rx, ry) in zip(fast.points, ref.points):
        assert np.array_equal(x, rx) and np.array_equal(y, ry)


def _walked_hlcps(rng, count):
    """HLCPs of WALK_POINTS_FROM to BATCHED_PAIRS pairs: random (one point or none), LCPs with M ≈ −I (many
    points), integer ones (ties, zero entries, singular supports), and a segment of solutions beside them."""
    from pympc.complementarity.enumeration import BATCHED_PAIRS, WALK_POINTS_FROM
    out = []
    for trial in range(count):
        n = int(rng.integers(WALK_POINTS_FROM, BATCHED_PAIRS + 1))
        kind = trial % 5
        if kind == 0:
            A, B, c = rng.standard_normal((n, n)) + 2 * np.eye(n), rng.standard_normal((n, n)), rng.standard_normal(n)
        elif kind == 1:
            A, B = np.eye(n), -(rng.standard_normal((n, n)) * 0.1 - np.eye(n))
            c = rng.uniform(0.5, 1.5, n) * np.where(rng.random(n) < 0.5, 1.0, -1.0)
        elif kind == 2:
            A, B = rng.integers(-2, 3, (n, n)).astype(float), rng.integers(-2, 3, (n, n)).astype(float)
            c = rng.integers(-1, 2, n).astype(float)
        elif kind == 3:        # a well-conditioned problem scaled far from 1, with a degenerate pair (c_i = 0)
            A, B = np.eye(n) + 0.2 * rng.standard_normal((n, n)), -np.eye(n) + 0.2 * rng.standard_normal((n, n))
            c = rng.standard_normal(n)
            c[int(rng.integers(0, n))] = 0.0
            A, B, c = (v * 10.0 ** rng.integers(-6, 6) for v in (A, B, c))
        else:                  # a segment of solutions (pairs 0, 1) beside pairs with one solution each
            A, B = np.eye(n), -np.eye(n)
            B[:2, :2] = -np.array([[1.0, -1.0], [-1.0, 1.0]])
            c = np.ones(n)
            c[1] = -1.0
            A[2:] += rng.standard_normal((n - 2, n)) * 0.1
        out.append(pympc.HLCP(A, B, c))
    return out


def _chain_event_hlcps(rng):
    """Event HLCPs of slider chains of 5 and 6 slots with one stick candidate (7 and 8 pairs) at random states."""
    out = []
    for slots in (5, 6):
        form = GeneralMethod(slider_chain(slots))
        mu = np.array([float(s.mu) for s in form.slots])
        q, qd = form.initial_state()
        for _ in range(15):
            a = form.assemble(q + 0.05 * rng.standard_normal(q.size), qd + rng.standard_normal(q.size), 0.3)
            dirs = np.where(rng.random(slots) < 0.5, 1, -1)
            dirs[int(rng.integers(0, slots))] = 0
            out.append(event_problem(a, dirs, mu, mu + 0.1, Baumgarte(), form.mass_diagonal).hlcp)
    return out


def _simulated_event_hlcps():
    """The event HLCPs whose solution sets the slider chains' runs of 2 to 5 slots (2 s) enumerate."""
    seen = []
    solution_set = events_module.EventProblem.solution_set

    def recording(self, max_pairs):
        seen.append(self.hlcp)
        return solution_set(self, max_pairs)
    events_module.EventProblem.solution_set = recording
    try:
        for slots in (2, 3, 4, 5):
            pympc.simulate(slider_chain(slots), (0.0, 2.0), samples=2)
    finally:
        events_module.EventProblem.solution_set = solution_set
    return seen


def test_the_compiled_solution_sets_forgive_noise_and_leave_nearly_singular_supports_as_the_enumeration_does():
    """A support point whose relative residual fails and that support_solution's second try or the noise rule
    of HLCP.is_solution accepts (batched_leaves' status 2, and visited leaves alike), and nearly singular
    supports (status −1, decided in the kernel by near_supports_empty or left to nearly_singular_empty: LAPACK's
    estimate and the least-squares residual, or decided −2 by batched_leaves where a stick candidate's opposite
    columns make them singular): the
    compiled solution sets decide them as the enumeration does — the same kind and the same points, exactly —
    on the event HLCPs of the slider chains' runs, where both occur (a row whose terms are all zero but
    round-off; the stick candidate's two rows)."""
    from pympc.complementarity._kernel import batched_leaves, equilibrate_hlcp
    from pympc.complementarity.enumeration import _SUPPORTS, WALK_POINTS_FROM
    from pympc.dynamics._event_sets import near_supports_empty, small_solution_set, walked_solution_set
    from pympc.dynamics.events import EventProblem
    noisy = decided = singular = 0
    problems = _simulated_event_hlcps()
    for h in problems:
        ref = pympc.enumerate_solutions(h)
        _assert_same_set(EventProblem(h, [], np.zeros(0), None, None).solution_set(16), ref)
        solved = small_solution_set if h.n < WALK_POINTS_FROM else walked_solution_set
        ok, P, near = solved(h.A, h.B, h.c, h._a_diagonal, _SUPPORTS[h.n], 1e-9)
        scaled = equilibrate_hlcp(h.A, h.B, h.c, h._a_diagonal, 20)[:3]
        rc, _, st = batched_leaves(*scaled, _SUPPORTS[h.n], 1e-9, 1e-6)
        left = st.copy()       # the nearly singular supports the kernel does not decide itself: the caller's
        near_supports_empty(*scaled, _SUPPORTS[h.n], rc, left, 1e-9)
        assert np.array_equal(near, np.flatnonzero(left == -1)) or not ok
        # the rows backwards (not the walk's order): the nearly singular supports with opposite columns that the
        # walk's order decides −2 by _outside_range are −1 there
        backwards = batched_leaves(*scaled, np.ascontiguousarray(_SUPPORTS[h.n][::-1]), 1e-9, 1e-6)[2][::-1]
        if events_module._taken(h, ok, near, P):
            decided += 1
            noisy += bool((st == 2).any())
            singular += bool(near.size or (backwards == -1).any())
            assert P.shape[0] == len(ref.points)
            for i, (x, y) in enumerate(ref.points):
                assert np.array_equal(P[i, :h.n], x) and np.array_equal(P[i, h.n:], y)
    assert noisy >= 3 and singular >= 2 and decided > 0.8 * len(problems)


def test_the_event_hlcp_solved_in_one_call_is_the_one_built_solved_and_read_step_by_step(rng):
    """solved_event_problem (build, Lemke, the mode of its point and the solution set in one compiled call) =
    event_problem, then EventProblem.solve, read_mode of Lemke's point and EventProblem.solution_set, each on
    its own path: the same HLCP, point, mode and set, exactly, at random states of the oscillator, the cross
    slide and chains of 2 to 6 slots (stick candidates or not, several walls before)."""
    from pympc.dynamics.events import solved_event_problem
    cases = [(pympc.load_model(MODELS / "friction_oscillator.toml"), 1), (pympc.load_model(MODELS / "cross_slide.toml"), 2)]
    cases += [(slider_chain(k), k) for k in (2, 3, 5, 6)] + [(pympc.load_model(MODELS / "slider_crank.toml"), 1)]
    checked = with_set = diagonal = 0
    for system, slots in cases:
        form = GeneralMethod(system)
        mu = np.array([float(s.mu) for s in form.slots])
        q, qd = form.initial_state()
        for _ in range(12):
            a = form.assemble(q + 0.05 * rng.standard_normal(q.size), qd + rng.standard_normal(q.size), 0.3)
            dirs = np.where(rng.random(slots) < 0.5, 1, -1)
            dirs[rng.random(slots) < 0.3] = 0
            walls = tuple(int(w) for w in np.where(rng.random(slots) < 0.5, 1, -1))
            ev, res = solved_event_problem(a, dirs, mu, mu + 0.1, Baumgarte(), form.mass_diagonal, walls, 8)
            ref = event_problem(a, dirs, mu, mu + 0.1, Baumgarte(), form.mass_diagonal)
            rres = ref.solve()
            for name in ("A", "B", "c"):
                assert np.array_equal(getattr(ev.hlcp, name), getattr(ref.hlcp, name))
            assert np.array_equal(ev.Q, ref.Q) and np.array_equal(ev.qdd0, ref.qdd0) and ev.tol == ref.tol
            assert res.status == rres.status and res.pivots == rres.pivots
            assert (res.message, res.method) == (rres.message, rres.method)
            assert np.array_equal(res.x, rres.x) and np.array_equal(res.y, rres.y)
            if res.success:
                assert events_module.read_mode(ev, res.x, res.y, walls) == events_module.read_mode(ref, rres.x, rres.y, walls)
            # a diagonal A (one slot slipping): Lemke's LCP form solved and its point read in the same call
            diagonal += ev.hlcp._a_diagonal and "_read" in ev.__dict__
            if ref.hlcp.n <= 8:
                with_set += "_set" in ev.__dict__ and ev._set is not False
                _assert_same_set(ev.solution_set(8), ref.solution_set(8))
            checked += 1
    assert checked == 84 and with_set > 30 and diagonal >= 5


def test_the_compiled_walk_of_an_event_hlcp_is_the_enumerations_bit_for_bit(rng):
    """From WALK_POINTS_FROM to BATCHED_PAIRS pairs EventProblem.solution_set takes the walk's leaves in one
    compiled call (walked_solution_set, LAPACK's LU through numba) where it decides them: the same kind and the
    same points as pympc.enumerate_solutions, exactly, on random, degenerate and nonunique problems and on event
    HLCPs of slider chains; it decides most, declines the singular ones (a continuum), several-point sets
    included."""
    from pympc.complementarity.enumeration import _SUPPORTS
    from pympc.dynamics._event_sets import WALKED_KERNEL, walked_solution_set
    from pympc.dynamics.events import EventProblem
    if not WALKED_KERNEL:      # pragma: no cover - depends on the numba release
        pytest.skip("numba's LAPACK wrapper not found: the enumeration decides")
    problems = _walked_hlcps(rng, 200) + _chain_event_hlcps(rng)
    decided, kinds, several = 0, set(), 0
    for h in problems:
        ref = pympc.enumerate_solutions(h)
        _assert_same_set(EventProblem(h, [], np.zeros(0), None, None).solution_set(16), ref)
        ok, P, near = walked_solution_set(h.A, h.B, h.c, h._a_diagonal, _SUPPORTS[h.n], 1e-9)
        if events_module._taken(h, ok, near, P):
            decided += 1
            kinds.add(ref.kind.name)
            several += len(ref.points) > 1
            assert P.shape[0] == len(ref.points)
        else:
            assert P.shape[0] == 0
    assert 0.5 * len(problems) < decided < len(problems)
    assert {"NONE", "UNIQUE", "FINITE"} <= kinds and "CONTINUUM" not in kinds and several > 10


def _crank(torques):
    """The slider-crank model with the constant torques ``torques`` (expressions) on its crank instead of its motor."""
    import tomllib

    from pympc.mechanics.modelfile import build_model
    data = tomllib.loads((MODELS / "slider_crank.toml").read_text())
    data["forces"] = [f for f in data["forces"] if f["type"] != "torque"] + [
        {"name": f"motor{i}", "type": "torque", "body": "crank", "value": v} for i, v in enumerate(torques)]
    return build_model(data, source="<crank>")


@pytest.mark.parametrize("torques", [("M0",), ("M0", "-1.5"), ()])
def test_pins_and_constant_torques_in_the_compiled_solve_equal_the_python_parts(torques, rng):
    """The slider-crank's pins and constant torques evaluated with the mode solve (``joint_mode``) = the same solve
    with them from ``AbsoluteModel.python_parts``, bit for bit: the state derivative, the assembly's rows and forces
    and the mode solution, in every mode; two torques on one body sum as Python sums them."""
    system = _crank(torques)
    form = GeneralMethod(system)
    mu = np.array([float(s.mu) for s in form.slots])
    mus = np.array([float(s.static_mu) for s in form.slots])
    fast, plain = CompiledModes(form, mu, mus, Baumgarte()), CompiledModes(form, mu, mus, Baumgarte())
    assert fast._joints is not None and fast._glue
    plain._joints = None                              # the Python parts and the general compiled call
    q0, qd0 = form.initial_state()
    for _ in range(6):
        q, qd = q0 + 0.05 * rng.standard_normal(q0.size), qd0 + rng.standard_normal(q0.size)
        t = float(rng.uniform(0, 2))
        mode = _random_mode(rng, len(mu))
        a = fast.compute(t, q, qd, mode)
        b = plain.compute(t, q, qd, mode)
        np.testing.assert_array_equal(a, b)
        (fa, sa), (fb, sb) = fast.result(), plain.result()
        for k in ("h", "g", "J", "w", "gdot", "gN", "bN", "vN", "bT", "vT", "M", "WN", "WT"):
            np.testing.assert_array_equal(getattr(fa, k), getattr(fb, k), err_msg=k)
        assert (fa.kinetic, fa.potential, fa.power) == (fb.kinetic, fb.potential, fb.power)
        for x, y in zip((sa.qdd, sa.nu, sa.lam, sa.F, sa.aT), (sb.qdd, sb.nu, sb.lam, sb.F, sb.aT)):
            np.testing.assert_array_equal(x, y)
        fast.compute(t, q + 1.0, qd, mode)             # the result read before stays valid (a copy)
        np.testing.assert_array_equal(fa.J, fb.J)
    # and the torques act: the crank's generalized force is gravity's plus their sum
    c = form._abs.coordinate_names.index("crank.phi")
    assert fa.h[c] == sum((float(v) if v != "M0" else 4.0) for v in torques)


def test_a_torque_of_the_state_stays_in_python():
    """A torque that is not constant is evaluated in Python (no compiled tables), and so is the whole model."""
    system = _crank(("M0*sin(phi)",))
    form = GeneralMethod(system)
    mu = np.array([float(s.mu) for s in form.slots])
    assert form._abs.joint_tables() is None
    assert CompiledModes(form, mu, mu, Baumgarte())._joints is None
