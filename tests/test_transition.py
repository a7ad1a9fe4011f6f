"""The fast paths of a transition (issue 17): they build and decide what the NumPy paths do.

Oracles: the NumPy build of the event HLCP (``events._numpy_event_problem``) on random assemblies (diagonal and
dense mass matrices, bilateral joints, stick candidates) and on the shipped models; the validating HLCP
constructor; the simulations themselves (same events, to the bit or to round-off).
"""

import numpy as np
import pytest
from conftest import MODELS

import pympc
from pympc.complementarity import HLCP, enumerate_solutions
from pympc.dynamics import Baumgarte, events as events_module
from pympc.dynamics.events import _numpy_event_problem, event_problem
from pympc.errors import ProblemError
from pympc.mechanics import GeneralMethod, TreeMethod
from pympc.mechanics.assembly import Assembly


def random_assembly(rng, n, r, s, diagonal):
    """An assembly of random data: n coordinates, r bilateral rows (some not holonomic), s slots."""
    if diagonal:
        md = rng.uniform(0.5, 3.0, n)
        M = np.diag(md)
    else:
        G = rng.standard_normal((n, n))
        M, md = G @ G.T + n * np.eye(n), None
    v = lambda *shape: rng.standard_normal(shape)  # noqa: E731
    a = Assembly(0.0, M, v(n), v(r), v(r, n), v(r), v(r), rng.random(r) < 0.7, v(s), v(s, n), v(s), v(s),
                 v(s, n), v(s), v(s), 0.0, 0.0, 0.0)
    return a, md


def assert_same_problem(ev, ref, rtol=1e-12):
    for key in ("A", "B", "c"):
        got, want = getattr(ev.hlcp, key), getattr(ref.hlcp, key)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, np.abs(want).max()))
    for got, want in ((ev.qdd0, ref.qdd0), (ev.Q, ref.Q)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * max(1.0, np.abs(want).max()))
    assert ev.candidates == ref.candidates and all(type(k) is int for k in ev.candidates)
    np.testing.assert_array_equal(ev.directions, ref.directions)
    assert ev.hlcp._a_diagonal == ref.hlcp._a_diagonal
    assert not ev.hlcp.A.flags.writeable and not ev.hlcp.c.flags.writeable


@pytest.mark.parametrize("diagonal", [True, False])
def test_compiled_event_hlcp_is_the_numpy_one_on_random_systems(rng, diagonal):
    stab = Baumgarte(7.0, 4.0)
    for trial in range(40):
        # more coordinates than rows: where the joints and the slots lock everything, a slot's row of the
        # HLCP is all cancellation, and its scaling to 1 magnifies rounding noise (either build's)
        r, s = int(rng.integers(0, 4)), int(rng.integers(1, 5))
        n = r + s + int(rng.integers(1, 5))
        a, md = random_assembly(rng, n, r, s, diagonal)
        dirs = rng.integers(-1, 2, s)
        dirs[rng.integers(0, s)] = 0                       # at least one stick candidate
        if trial % 4 == 0:
            dirs[:] = rng.choice([-1, 1], s)                # and sometimes none
        mu, mu_s = rng.uniform(0.1, 0.6, s), rng.uniform(0.6, 0.9, s)
        ev = event_problem(a, dirs, mu, mu_s, stab, md)
        ref = _numpy_event_problem(a, np.asarray(dirs, float), mu, mu_s, stab, md, False)
        assert_same_problem(ev, ref)
        # the problem the simulator sees solves alike
        r1, r2 = ev.solve(), pympc.solve(ref.hlcp)
        assert r1.status == r2.status
        if r1.success:
            np.testing.assert_allclose(np.concatenate([r1.x, r1.y]), np.concatenate([r2.x, r2.y]),
                                       atol=1e-9 * (1 + np.abs(r2.x).max() + np.abs(r2.y).max()))


@pytest.mark.parametrize("model", ["slider_crank.toml", "cross_slide.toml", "friction_oscillator.toml"])
@pytest.mark.parametrize("formulation", [GeneralMethod, TreeMethod])
def test_compiled_event_hlcp_is_the_numpy_one_on_the_models(model, formulation, rng):
    form = formulation(pympc.load_model(MODELS / model))
    q, qd = form.initial_state()
    a = form.assemble(q, qd + 0.1 * rng.standard_normal(q.size), 0.37)
    s = len(form.slots)
    mu, mu_s = np.full(s, 0.3), np.full(s, 0.45)
    for dirs in (np.zeros(s, int), np.ones(s, int), -np.ones(s, int)):
        ev = event_problem(a, dirs, mu, mu_s, Baumgarte(), form.mass_diagonal)
        assert_same_problem(ev, _numpy_event_problem(a, dirs.astype(float), mu, mu_s, Baumgarte(),
                                                     form.mass_diagonal, False))


def test_what_the_compiled_build_declines_is_decided_by_the_numpy_build(rng):
    # a zero mass on a coordinate that a joint fixes: M is singular, the saddle-point system is not
    a, _ = random_assembly(rng, 3, 1, 1, True)
    a.M = np.diag([1.0, 2.0, 0.0])
    a.J = np.array([[0.0, 0.0, 1.0]])
    dirs, mu = np.array([0]), np.array([0.3])
    ev = event_problem(a, dirs, mu, mu, Baumgarte(), None)
    assert_same_problem(ev, _numpy_event_problem(a, dirs.astype(float), mu, mu, Baumgarte(), None, False))
    # redundant bilateral rows: the NumPy build's error, as before
    a, md = random_assembly(rng, 4, 2, 1, True)
    a.J = np.array([[0.0, 2.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0]])     # J M⁻¹ Jᵀ exactly singular
    with pytest.raises(np.linalg.LinAlgError):
        event_problem(a, dirs, mu, mu, Baumgarte(), md)
    # a non-finite force: the HLCP's own message
    a, md = random_assembly(rng, 4, 1, 1, True)
    a.h[2] = np.nan
    with pytest.raises(ProblemError, match="non-finite"):
        event_problem(a, dirs, mu, mu, Baumgarte(), md)


def test_large_systems_keep_the_numpy_build(rng, monkeypatch):
    a, md = random_assembly(rng, 6, 1, 2, True)
    calls = []
    monkeypatch.setattr(events_module, "_numpy_event_problem",
                        lambda *args: calls.append(1) or _numpy_event_problem(*args))
    event_problem(a, [0, 1], np.full(2, 0.3), np.full(2, 0.4), Baumgarte(), md)
    assert not calls
    monkeypatch.setattr(events_module, "COMPILED_UP_TO", 5)
    event_problem(a, [0, 1], np.full(2, 0.3), np.full(2, 0.4), Baumgarte(), md)
    assert calls


def test_trusted_constructor_gives_the_validated_problem(rng):
    for n in (1, 3, 5):
        A, B, c = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
        for AA in (A, np.diag(np.diag(A))):
            ref = HLCP(AA, B, c)
            got = HLCP._trusted(AA.copy(), B.copy(), c.copy())
            for key in ("A", "B", "c"):
                np.testing.assert_array_equal(getattr(got, key), getattr(ref, key))
                assert not getattr(got, key).flags.writeable
            assert got._a_diagonal == ref._a_diagonal and got.n == ref.n
            r1, r2 = pympc.solve(got), pympc.solve(ref)
            assert r1.status == r2.status
            np.testing.assert_array_equal(r1.x, r2.x)
            s1, s2 = enumerate_solutions(got), enumerate_solutions(ref)
            assert s1.kind == s2.kind and len(s1.points) == len(s2.points)
    with pytest.raises(ProblemError):      # user input is still validated
        HLCP([[np.nan]], [[1.0]], [1.0])


def test_small_least_norm_is_lstsq_and_declines_ill_conditioned_rows(rng):
    from pympc.dynamics._transition import small_min_norm
    from pympc.dynamics.modes import min_norm
    for k in range(1, 5):
        for n in range(k, k + 4):
            J, r = rng.standard_normal((k, n)), rng.standard_normal(k)
            d = np.empty(n)
            assert small_min_norm(J, r, d)
            np.testing.assert_allclose(d, np.linalg.lstsq(J, r, rcond=None)[0], rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(min_norm(J, r), d, rtol=0, atol=0)
    J = np.array([[1.0, 0.0, 0.0], [1.0, 1e-3, 0.0]])             # J Jᵀ has condition ~4e6: lstsq's answer
    r = np.array([1.0, 2.0])
    assert not small_min_norm(J, r, np.empty(3))
    np.testing.assert_allclose(min_norm(J, r), np.linalg.lstsq(J, r, rcond=None)[0], rtol=1e-12)
    assert not small_min_norm(rng.standard_normal((5, 6)), rng.standard_normal(5), np.empty(6))   # too many rows


def test_compiled_velocity_projection_and_position_error(rng):
    from pympc.dynamics._transition import (VELOCITY_DECLINED, VELOCITY_PROJECTED, VELOCITY_SAME,
                                            position_error, project_velocity)
    from pympc.dynamics.modes import SPARSE_FROM, min_norm
    seen = set()
    for _ in range(40):
        r, s = int(rng.integers(0, 4)), int(rng.integers(1, 4))
        n = max(1, r + s + int(rng.integers(-1, 4)))
        a, _ = random_assembly(rng, n, r, s, True)
        stick = np.flatnonzero(rng.random(s) < 0.5)
        qd = rng.standard_normal(n)
        code, qdp = project_velocity(a.J, a.WN, a.WT, stick, a.gdot, a.vN, a.vT, qd, SPARSE_FROM)
        Jv = np.vstack([a.J, a.WN, a.WT[stick]])
        rv = np.concatenate([a.gdot, a.vN, a.vT[stick]])
        seen.add((code, Jv.shape[0] > 4))
        # every dense row count is projected: min_norm's answer, bit for bit (its small path, the LQ, lstsq's gelsd)
        assert code == VELOCITY_PROJECTED
        np.testing.assert_array_equal(qdp, qd - min_norm(Jv, rv))
        if Jv.shape[0] > n:
            np.testing.assert_array_equal(qdp, qd - np.linalg.lstsq(Jv, rv, rcond=None)[0])
        elif Jv.shape[0] > 4:            # the LQ: lstsq's answer to round-off
            ref = qd - np.linalg.lstsq(Jv, rv, rcond=None)[0]
            np.testing.assert_allclose(qdp, ref, rtol=0, atol=1e-13 * np.linalg.cond(Jv) * (1 + np.abs(ref).max()))
        # rows in min_norm's sparse range (here from 2 rows) are the caller's
        code, same = project_velocity(a.J, a.WN, a.WT, stick, a.gdot, a.vN, a.vT, qd, 2)
        if 2 <= Jv.shape[0] <= n:
            assert code == VELOCITY_DECLINED and same is qd
        # nothing to remove: the very same array back
        code, same = project_velocity(a.J, a.WN, a.WT, stick, 0 * a.gdot, 0 * a.vN, 0 * a.vT, qd, SPARSE_FROM)
        assert code == VELOCITY_SAME and same is qd
        q = rng.standard_normal(n)
        err, bound = position_error(a.g, a.holonomic, a.gN, q)
        assert err == np.abs(np.concatenate([a.g[a.holonomic], a.gN])).max()
        assert bound == 1e-13 * (1 + np.abs(q).max())
    assert seen == {(VELOCITY_PROJECTED, False), (VELOCITY_PROJECTED, True)}
    a, _ = random_assembly(rng, 6, 2, 3, True)             # a velocity that is not finite: NumPy's error, not numba's
    code, _ = project_velocity(a.J, a.WN, a.WT, np.arange(3), a.gdot, np.array([np.nan, 0, 0]), a.vT, np.zeros(6),
                               SPARSE_FROM)
    assert code == VELOCITY_DECLINED


def test_compiled_least_norm_is_lstsq_bit_for_bit(rng):
    """dense_min_norm (numba's binding of LAPACK's gelsd) returns np.linalg.lstsq's bits where its LQ declines
    (more rows than columns, dependent rows) and lstsq's answer to round-off where the LQ takes it (full rank, well
    conditioned): full rank, dependent rows, zero columns, scales far from 1; min_norm of one right-hand side is
    it."""
    from pympc._linalg import lq_min_norm
    from pympc.dynamics._transition import dense_min_norm
    from pympc.dynamics.modes import SPARSE_FROM, min_norm
    cases = lq = 0
    for _ in range(600):
        k, n = int(rng.integers(1, 12)), int(rng.integers(1, 14))
        J, r = rng.standard_normal((k, n)), rng.standard_normal(k)
        kind = rng.integers(0, 4)
        if kind == 1 and k > 1:
            J[-1] = J[0] * 3.0                                  # dependent rows (rank-deficient J)
        elif kind == 2:
            J[:, rng.integers(0, n, max(1, n // 3))] = 0.0      # zero columns (bodies no row touches)
        elif kind == 3:
            J *= 10.0 ** rng.integers(-8, 8)
        d = np.full(n, np.nan)
        assert dense_min_norm(J, r, d, SPARSE_FROM)
        ref = np.linalg.lstsq(J, r, rcond=None)[0]
        small = np.allclose(d, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
        if k > 4 and lq_min_norm(J, r, np.empty(n)):           # the LQ: lstsq's answer to round-off
            assert np.abs(d - ref).max() <= 1e-14 * np.linalg.cond(J) * np.abs(ref).max()
            lq += 1
        elif k > 4 or k > n or not small:
            np.testing.assert_array_equal(d, ref)                # gelsd's answer: the same bits
            cases += 1
        np.testing.assert_array_equal(min_norm(J, r), d)
    assert cases > 150 and lq > 60
    J, r = rng.standard_normal((3, 5)), rng.standard_normal(3)
    d = np.zeros(5)
    assert not dense_min_norm(J, r, d, 3) and not d.any()       # the sparse range: the caller's
    assert not dense_min_norm(np.zeros((0, 5)), np.zeros(0), d, SPARSE_FROM)
    J[1, 2] = np.inf
    assert not dense_min_norm(J, r, d, SPARSE_FROM) and not d.any()


def test_lq_least_norm_is_the_least_norm_solution_and_declines_rank_deficient_rows(rng):
    """lq_min_norm against two oracles: J d = r with d in J's row space (the least-norm solution's definition)
    and LAPACK's SVD answer (np.linalg.lstsq) within a few ε times J's condition; it declines J of more rows than
    columns, of dependent rows and of condition beyond LQ_RCOND."""
    from pympc._linalg import lq_min_norm
    taken = 0
    for _ in range(400):
        n = int(rng.integers(1, 14))
        k = int(rng.integers(1, n + 1))
        J = rng.standard_normal((k, n)) * 10.0 ** rng.integers(-4, 4, (k, 1))
        if rng.random() < 0.3:
            J[rng.random((k, n)) < 0.4] = 0.0
        r = rng.standard_normal(k)
        d = np.full(n, np.nan)
        if not lq_min_norm(J, r, d):
            assert np.isnan(d).all() and np.linalg.cond(J) > 1e6
            continue
        taken += 1
        kappa = np.linalg.cond(J)
        ref = np.linalg.lstsq(J, r, rcond=None)[0]
        assert np.abs(d - ref).max() <= 50 * 2.2e-16 * kappa * np.abs(ref).max()
        assert np.abs(J @ d - r).max() <= 1e-12 * kappa * (1 + np.abs(r).max())
        y = np.linalg.lstsq(J.T, d, rcond=None)[0]                 # d = Jᵀ y: in the row space
        assert np.abs(J.T @ y - d).max() <= 1e-12 * kappa * np.abs(d).max()
    assert taken > 300
    J = rng.standard_normal((4, 6))
    for bad in (rng.standard_normal((5, 4)), np.vstack([J, J[1] * 3.0]), np.vstack([J[:3], J[3] * 1e-12]),
                np.vstack([J[:3], J[0] + 1e-10 * J[3]])):
        assert not lq_min_norm(bad, np.ones(bad.shape[0]), np.empty(bad.shape[1]))


def test_compiled_position_step_is_the_numpy_step(rng):
    from pympc.dynamics._transition import position_step
    from pympc.dynamics.modes import SPARSE_FROM, min_norm
    for _ in range(60):
        r, s = int(rng.integers(0, 5)), int(rng.integers(1, 6))
        n = max(1, r + s + int(rng.integers(-1, 4)))
        a, _ = random_assembly(rng, n, r, s, bool(rng.integers(0, 2)))
        q = rng.standard_normal(n)
        done, qn = position_step(a.g, a.holonomic, a.gN, a.J, a.WN, q, SPARSE_FROM)
        assert done
        g = np.concatenate([a.g[a.holonomic], a.gN])
        Jh = np.vstack([a.J[a.holonomic], a.WN])
        np.testing.assert_array_equal(qn, q - min_norm(Jh, g))
        if Jh.shape[0] > 4:           # gelsd's bits (more rows than columns), or its answer to round-off (the LQ)
            ref = q - np.linalg.lstsq(Jh, g, rcond=None)[0]
            tol = 0.0 if Jh.shape[0] > n else 1e-13 * np.linalg.cond(Jh) * (1 + np.abs(ref).max())
            np.testing.assert_allclose(qn, ref, rtol=0, atol=tol)
        done, same = position_step(a.g, a.holonomic, a.gN, a.J, a.WN, q, 1)     # the sparse range: declined
        assert (not done and same is q) or Jh.shape[0] > n


def test_compiled_mode_check_is_the_numpy_test(rng):
    from pympc.dynamics._transition import check_mode

    def numpy_check(lam, h, qdd, F, aT, w, m, mu_s, cand):       # the test _Run.verify made with NumPy
        fs = 1e-7 * max(1.0, float(np.abs(lam).max()), float(np.abs(h).max()))
        acc = 1e-7 * max(1.0, float(np.abs(qdd).max()))
        if np.any(w * lam < -fs):
            return 1
        if np.any((mu_s * np.abs(lam) - np.abs(F))[m == 0] < -fs):
            return 2
        return 3 if any(m[k] != 0 and m[k] * aT[k] < -acc for k in cand) else 0

    codes = set()
    for _ in range(400):
        s, n = int(rng.integers(1, 4)), int(rng.integers(2, 6))
        lam, F, aT = rng.standard_normal(s), 0.5 * rng.standard_normal(s), rng.standard_normal(s)
        h, qdd = rng.standard_normal(n), rng.standard_normal(n)
        w, m = rng.choice([-1.0, 1.0], s), rng.integers(-1, 2, s).astype(float)
        w = np.where(rng.random(s) < 0.6, np.sign(lam), w)          # mostly consistent walls
        mu_s = rng.uniform(0.2, 1.0, s)
        cand = np.flatnonzero(rng.random(s) < 0.5)
        code, _, hmax = check_mode(lam, h, qdd, F, aT, w, m, mu_s, cand)
        assert code == numpy_check(lam, h, qdd, F, aT, w, m, mu_s, cand)
        assert hmax == np.abs(h).max(initial=0)
        codes.add(code)
    assert codes == {0, 1, 2, 3}
    lam = np.array([np.nan])
    assert check_mode(lam, np.zeros(2), np.zeros(2), np.zeros(1), np.zeros(1), np.ones(1), np.zeros(1),
                      np.ones(1), np.zeros(0, np.int64))[0] == 4
    for h in ([np.nan, 5.0], [5.0, np.nan], [-np.inf, 1.0], []):      # max|h| as NumPy takes it: NaN propagates
        hmax = check_mode(np.ones(1), np.array(h), np.zeros(2), np.zeros(1), np.zeros(1), np.ones(1), np.zeros(1),
                          np.ones(1), np.zeros(0, np.int64))[2]
        assert np.array_equal(hmax, np.abs(np.array(h)).max(initial=0), equal_nan=True)


def test_range_residual_is_what_lstsq_leaves(rng):
    from pympc.complementarity._kernel import range_residual
    for _ in range(50):
        n = int(rng.integers(1, 7))
        rank = int(rng.integers(0, n))
        C = rng.standard_normal((n, rank)) @ rng.standard_normal((rank, n))     # singular
        if rank and rng.random() < 0.5:
            C[:, -1] = -C[:, 0]                                                  # opposite columns, as a⁺/a⁻
        for c in (rng.standard_normal(n), C @ rng.standard_normal(n)):         # off and in the range
            want = np.abs(C @ np.linalg.lstsq(C, c, rcond=None)[0] - c).max()
            assert abs(range_residual(C, c) - want) <= 1e-12 * (1 + np.abs(c).max())


def test_range_residual_column_norms_are_the_former_temporaries_bit_for_bit(rng):
    """range_residual's column norms without temporaries (a loop) = ``np.sqrt(np.sum(V[:, j] ** 2))`` of the former
    kernel, bit for bit (so the residual is the former's): random, rank-deficient, with a zero column, integer and
    badly scaled matrices of 1–8 columns (the oracle: the former kernel's expression, compiled here)."""
    from numba import njit

    from pympc.complementarity import _kernel

    @njit
    def former_norm(V, j):
        return np.sqrt(np.sum(V[:, j] ** 2))

    @njit
    def new_norm(V, j):
        return _kernel._column_norm(V, j)

    checked = 0
    for t in range(3000):
        n = int(rng.integers(1, 9))
        C = rng.standard_normal((n, n)) * 10.0 ** rng.integers(-8, 8, (1, n))
        if t % 4 == 1:
            C[:, int(rng.integers(0, n))] = 0.0
        elif t % 4 == 2 and n > 1:
            C[:, 0] = 3.0 * C[:, -1]
        elif t % 4 == 3:
            C = rng.integers(-2, 3, (n, n)).astype(float)
        for j in range(n):
            assert np.float64(former_norm(C, j)).tobytes() == np.float64(new_norm(C, j)).tobytes()
        checked += n
    assert checked > 10000


def test_lemkes_short_path_answers_as_the_general_path(rng, monkeypatch):
    import importlib

    from conftest import random_p_matrix

    from pympc.complementarity import lemke
    lemke_module = importlib.import_module("pympc.complementarity.lemke")     # the module (the package exports lemke)
    problems = []
    for n in (1, 2, 3, 5, 8):
        for kind in ("spd", "pd_skew", "tri"):
            A = random_p_matrix(rng, n, kind)
            problems.append(HLCP(A, -A @ random_p_matrix(rng, n, "spd"), rng.standard_normal(n)))
        problems.append(HLCP(rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)))
    problems.append(HLCP([[1.0, 1.0], [1.0, 1.0]], np.eye(2), [1.0, 1.0]))      # A singular: find_basis
    A = random_p_matrix(rng, 4, "spd")
    problems += [HLCP(A, -A, np.zeros(4)), HLCP(A, -A @ A, [0.0, 1.0, 0.0, -1.0])]      # degenerate
    fast = [lemke(p) for p in problems]
    mapped = lemke_module.mapped_point         # as if the point needed _verify: the general path's answer
    monkeypatch.setattr(lemke_module, "mapped_point", lambda *args: mapped(*args)[:3] + (True,))
    slow = [lemke(p) for p in problems]
    statuses = set()
    for p, r1, r2 in zip(problems, fast, slow):
        statuses.add(r1.status.name)
        assert r1.status == r2.status and r1.message == r2.message and r1.pivots == r2.pivots
        np.testing.assert_array_equal(r1.x, r2.x)
        np.testing.assert_array_equal(r1.y, r2.y)
        np.testing.assert_array_equal(r1.info["basis"], r2.info["basis"])
        assert not r1.success or p.is_solution(r1.x, r1.y)
    assert {"SOLVED", "RAY_TERMINATION"} <= statuses or {"SOLVED", "INFEASIBLE"} <= statuses


def test_slip_directions_are_the_numpy_rule(rng):
    from pympc.dynamics._transition import slip_directions
    for _ in range(50):
        vT = rng.standard_normal(5) * 10.0 ** rng.integers(-12, 1, 5)
        qd = rng.standard_normal(3) * 10.0 ** rng.integers(-1, 2)
        vscale = max(1.0, float(np.abs(qd).max()))
        want = np.where(np.abs(vT) <= 1e-9 * vscale, 0, np.sign(vT)).astype(int)
        got = slip_directions(vT, qd, 1e-9)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == np.int64


def _python_read_mode(ev, x, y, previous_walls):
    """The reading of a mode as read_mode did it in Python before mode_of_point (the oracle)."""
    from pympc.dynamics import Motion
    tol, s, cand = ev.tol, ev.nslots, ev.candidates
    c = len(cand)
    x, y = list(map(float, x)), list(map(float, y))
    walls, degenerate = [], []
    for k in range(s):
        lam = x[k] - y[k]
        if abs(lam) <= tol:
            degenerate.append(("wall", k))
            walls.append(int(previous_walls[k]))
        else:
            walls.append(1 if lam > 0 else -1)
    motions = [Motion(int(d)) for d in ev.directions]
    for j, k in enumerate(cand):
        acc = x[s + j] - y[s + c + j]
        if acc > tol:
            motions[k] = Motion.FORWARD
        elif acc < -tol:
            motions[k] = Motion.BACKWARD
        else:
            motions[k] = Motion.STICK
            if y[s + j] <= tol or x[s + c + j] <= tol:
                degenerate.append(("stick", k))
    return pympc.dynamics.Mode(tuple(walls), tuple(motions)), degenerate


def test_read_mode_reads_as_python_did():
    # points with members exactly at, just inside and outside the tolerance, zeros and both signs
    rng = np.random.default_rng(3)
    stab = Baumgarte()
    for trial in range(200):
        s = int(rng.integers(1, 5))
        a, md = random_assembly(rng, s + 2, 0, s, True)
        dirs = rng.integers(-1, 2, s)
        ev = event_problem(a, dirs, rng.uniform(0.1, 0.5, s), rng.uniform(0.5, 0.9, s), stab, md)
        n, tol = ev.hlcp.n, ev.tol
        pick = np.array([0.0, tol, -tol, 0.5 * tol, 2 * tol, 1.0, -1.0, np.nextafter(tol, 1.0)])
        x, y = rng.choice(pick, n), rng.choice(pick, n)
        walls = tuple(int(w) for w in rng.choice([-1, 1], s))
        got, want = events_module.read_mode(ev, x, y, walls), _python_read_mode(ev, x, y, walls)
        assert got == want and str(got[0]) == str(want[0])
        assert all(type(m) is pympc.dynamics.Motion for m in got[0].motions)


def test_large_event_hlcps_are_kept_sparse():
    from pympc.dynamics import SparseHLCP
    from pympc.dynamics.events import STORED_DENSE_UP_TO, kept_hlcp
    from pympc.dynamics.trajectory import Event, EventKind
    rng = np.random.default_rng(0)
    n = STORED_DENSE_UP_TO + 1
    A = np.eye(n) + np.diag(rng.uniform(0.1, 0.2, n - 1), 1)
    B = -np.eye(n) + np.diag(rng.uniform(0.1, 0.2, n - 1), -1)
    c = rng.standard_normal(n)
    h = HLCP(A, B, c)
    ev = Event(0.0, EventKind.START, None, None, pympc.dynamics.Mode((), ()), h, [], np.zeros(n), np.zeros(n),
               probe={"delta": 1e-6, "hlcp": h, "x": None, "y": None, "parts": []})
    for kept in (ev.hlcp, ev.probe["hlcp"]):
        assert isinstance(kept, SparseHLCP) and isinstance(kept, HLCP) and kept.n == n
        assert kept.A_sparse.nnz == np.count_nonzero(A)           # only the nonzeros are kept
        np.testing.assert_array_equal(kept.A, A)                  # and the dense matrices come back exactly
        np.testing.assert_array_equal(kept.B, B)
        assert not kept.A.flags.writeable and kept._a_diagonal is False
    r, ref = pympc.solve(ev.hlcp), pympc.solve(h)
    assert r.success and np.array_equal(r.x, ref.x) and np.array_equal(r.y, ref.y)
    small = HLCP(A[:5, :5], B[:5, :5], c[:5])
    assert kept_hlcp(small) is small and kept_hlcp(None) is None


def test_mode_templates_are_kept_across_runs():
    # a second run of the same model builds no template: every plan is a copy (and the runs are the same to the bit)
    from pympc.dynamics import modes
    from pympc.mechanics import slider_chain
    built = []
    make = modes.CompiledModes._template

    def counting(self, mode):
        built.append(mode)
        return make(self, mode)
    modes.CompiledModes._template = counting
    modes._templates.clear()          # a cache: the first run below builds its templates whatever ran before
    try:
        runs = [pympc.simulate(slider_chain(3), (0.0, 1.0), samples=2) for _ in range(2)]
        first = len(built)
        runs.append(pympc.simulate(slider_chain(3), (0.0, 1.0), samples=2))
    finally:
        modes.CompiledModes._template = make
    assert first > 0 and len(built) == first
    for tr in runs[1:]:
        assert [(e.time, str(e.mode_after)) for e in tr.events] == [(e.time, str(e.mode_after)) for e in runs[0].events]
        np.testing.assert_array_equal(tr.q, runs[0].q)


def test_a_modes_hash_and_arrays_are_made_once_and_are_its_tuples():
    # the hash kept with a mode is the tuples' (equal modes hash equal, however made), not pickled; its walls and
    # motions as float arrays are those of the tuples, the same objects each time, and what verify checks against
    import copy
    import pickle
    from pympc.dynamics import Mode, Motion, modes
    from pympc.dynamics.evaluation import ModeEvaluator
    from pympc.mechanics import GeneralMethod
    m = modes.known_mode((1, -1, 1), (Motion.STICK, Motion.FORWARD, Motion.BACKWARD))
    other = Mode((1, -1, 1), (0, 1, -1))
    assert hash(m) == hash(((1, -1, 1), (0, 1, -1))) == hash(other) and {m: 1}[other] == 1
    assert hash(Mode((1, 1, 1), (0, 1, -1))) != hash(m)
    back = pickle.loads(pickle.dumps(m))
    assert "_hash" not in back.__dict__ and back == m and hash(back) == hash(m) and back.sticking == [0]
    assert hash(copy.deepcopy(m)) == hash(m)
    w, mo = m._arrays
    assert w.dtype == mo.dtype == np.float64 and w.flags.carray and mo.flags.carray
    np.testing.assert_array_equal(w, [1.0, -1.0, 1.0])
    np.testing.assert_array_equal(mo, [0.0, 1.0, -1.0])
    np.testing.assert_array_equal(w * mo, m._friction_sign)
    ev = ModeEvaluator(GeneralMethod(pympc.load_model(MODELS / "cross_slide.toml")), modes.Baumgarte())
    assert ev.mode_arrays(m) is m._arrays and ev.mode_arrays(m)[0] is w


def test_known_modes_are_one_object_per_mode(monkeypatch):
    # the modes a run reads are the same objects for the same walls and motions, in this run and the next
    from pympc.dynamics import Mode, Motion, modes
    m = modes.known_mode((1, -1), (Motion.STICK, Motion.FORWARD))
    assert m == Mode((1, -1), (Motion.STICK, Motion.FORWARD)) and m.sticking == [0]
    assert modes.known_mode((1, -1), (Motion.STICK, Motion.FORWARD)) is m
    assert modes.known_mode((1, 1), (Motion.STICK, Motion.FORWARD)) is not m
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    runs = [pympc.simulate(system, (0.0, 10.0), samples=2, params={"mu": mu}) for mu in (0.3, 0.25)]
    seen = {}
    for tr in runs:
        assert len(tr.events) > 4
        for e in tr.events:
            assert seen.setdefault(e.mode_after, e.mode_after) is e.mode_after
    assert len(seen) < sum(len(tr.events) for tr in runs)
    # full, the table starts again: still the modes asked for
    monkeypatch.setattr(modes, "KNOWN_MODES_KEPT", 2)
    monkeypatch.setattr(modes, "_KNOWN_MODES", {})
    got = [modes.known_mode((w,), (mo,)) for w in (1, -1) for mo in Motion]
    assert got == [Mode((w,), (mo,)) for w in (1, -1) for mo in Motion] and len(modes._KNOWN_MODES) <= 2


def test_the_arrays_of_an_assembly_are_kept_with_it(rng):
    from pympc.dynamics import _transition
    from pympc.dynamics._transition import assembly_arrays
    a, b, c = (random_assembly(rng, 3, 1, 2, True)[0] for _ in range(3))
    ka, kb = assembly_arrays(a), assembly_arrays(b)
    kc = assembly_arrays(c)
    assert assembly_arrays(a) is ka and assembly_arrays(b) is kb and assembly_arrays(c) is kc   # each its own
    for k, x in ((ka, a), (kb, b), (kc, c)):
        assert k.M is x.M and np.array_equal(k.vT, x.vT) and k.holonomic.dtype == bool
    big = random_assembly(rng, _transition.KEPT_UP_TO + 1, 1, 2, True)[0]    # a large one is not kept
    assert assembly_arrays(big) is not assembly_arrays(big)


def test_the_arrays_of_a_compiled_assembly_are_its_own():
    """AssemblyArrays takes a compiled assembly's arrays as they are: each must be what the kernels take
    (as_floats of it is itself), or the kernels would get another type than the one they were compiled for."""
    from pympc.dynamics._transition import AssemblyArrays, as_bools, as_floats
    from pympc.mechanics.assembly import _CompiledAssembly
    from pympc.mechanics import slider_chain
    for model in ("friction_oscillator", "cross_slide", "inclined_slot_spring", 5):
        form = GeneralMethod(slider_chain(model) if model == 5 else pympc.load_model(MODELS / f"{model}.toml"))
        q, qd = form.initial_state()
        a = form.assemble(q, qd, 0.3)
        assert type(a) is _CompiledAssembly
        k = AssemblyArrays(a)
        for name in AssemblyArrays.__slots__:
            v = getattr(k, name)
            assert (as_bools(v) if name == "holonomic" else as_floats(v)) is v, (model, name)
            if name not in ("M", "holonomic"):
                assert v is getattr(a, name), (model, name)


@pytest.mark.parametrize("model", ["friction_oscillator", "slider_crank"])
def test_a_mode_evaluated_on_the_callers_assembly_is_the_one_evaluated_afresh(model, rng):
    """ModeEvaluator.evaluate with the assembly the caller has (the transition's verification of a
    formulation without the compiled solve) gives what assembling again gives, to the bit; the transition's
    verification with it and without it decides the same, with the same force scale."""
    from pympc.dynamics import Mode, Motion, SimulateOptions
    from pympc.dynamics.evaluation import ModeEvaluator
    from pympc.dynamics.simulate import make_formulation
    from pympc.dynamics.transition import Transition
    system = pympc.load_model(MODELS / f"{model}.toml")
    form = make_formulation(system, "tree")
    s = len(form.slots)
    q0, qd0 = form.initial_state()
    done = 0
    for trial in range(6):
        q, qd, t = q0 + 0.05 * rng.standard_normal(q0.size), qd0 + rng.standard_normal(qd0.size), 0.1 * trial
        x = np.concatenate([q, qd])
        mode = Mode(tuple(rng.choice([-1, 1], s).tolist()), tuple(Motion(int(m)) for m in rng.integers(-1, 2, s)))
        given = form.assemble(q, qd, t)
        ev, fresh = ModeEvaluator(form, Baumgarte()), ModeEvaluator(form, Baumgarte())
        assert not ev.compiled(mode)
        try:
            want = fresh.evaluate(t, x, mode)[1]
        except pympc.SimulationError:
            continue
        a, got = ev.evaluate(t, x, mode, given)
        assert a is given
        for key in ("qdd", "lam", "F", "aT", "nu"):
            np.testing.assert_array_equal(getattr(got, key), getattr(want, key), err_msg=key)
        o = SimulateOptions().resolve(system, (0.0, 1.0))
        tr, ref = Transition(ModeEvaluator(form, Baumgarte()), o), Transition(ModeEvaluator(form, Baumgarte()), o)
        cand = np.arange(s, dtype=np.int64)
        assert tr.verify(t, q, qd, mode, cand, given) == ref.verify(t, q, qd, mode, cand)
        assert tr.force_scale == ref.force_scale
        done += 1
    assert done >= 3


def test_batched_leaves_shared_along_the_walk_are_the_one_by_one_factorizations_bit_for_bit(rng):
    """batched_leaves of every support in the walk's order (the eliminations shared along its tree, from SHARED_FROM
    pairs) = the same supports factorized one by one (the rows in another order take that path), bit for bit:
    random, integer (exact zeros, exactly singular supports near and off the range), a⁺/a⁻-like opposite columns
    and badly scaled problems of 6–8 pairs; every status occurs."""
    from pympc.complementarity._kernel import SHARED_FROM, batched_leaves
    from pympc.complementarity.enumeration import _SUPPORTS

    seen = set()
    for trial in range(150):
        n = int(rng.integers(SHARED_FROM, 9))
        A, B, c = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
        if trial % 3 == 0:
            A, B, c = (rng.integers(-2, 3, s).astype(float) for s in ((n, n), (n, n), n))
        if trial % 4 == 0:
            B[:, -1] = -A[:, -2]                      # the a⁺ and a⁻ columns of a stick candidate
        if trial % 5 == 0:
            c = 0.5 * A[:, 0] + B[:, 1]               # c in the range of singular supports
        if trial % 7 == 0:
            A *= 10.0 ** rng.integers(-8, 8, (n, 1))
            B *= 10.0 ** rng.integers(-8, 8, (1, n))
        xs = _SUPPORTS[n]
        order = rng.permutation(xs.shape[0])
        shared = batched_leaves(A, B, c, xs, 1e-9, 1e-6)
        one_by_one = batched_leaves(A, B, c, np.ascontiguousarray(xs[order]), 1e-9, 1e-6)
        for got, want in zip(shared[:2], one_by_one[:2]):
            assert got[order].tobytes() == want.tobytes()
        _same_statuses_or_opposite_columns_empty(A, B, c, xs, shared[2], one_by_one[2][np.argsort(order)])
        seen.update(shared[2].tolist())
    assert seen >= {-3, -2, -1, 0, 1}


def test_singular_supports_of_opposite_columns_decided_as_by_the_range_test(rng):
    """Supports that take a stick candidate's a⁺ (A's column p) and a⁻ (B's column q = −A's p) are singular; in the
    walk's order batched_leaves decides their status −2 from the support taking A's q instead (_outside_range)
    where that proves c beyond the threshold, else by range_residual: the statuses and every other output equal
    those of the rows in another order (range_residual on every such support; those not exactly singular, −1
    there, found empty by the enumeration's test where −2 here), on event-like problems of 3–8 pairs
    with 1–3 candidates, c at random, in the range of singular supports and near it; _outside_range is never True
    where range_residual or lstsq (an independent least-squares residual) finds c within the threshold, and decides
    most of the supports it may."""
    from pympc.complementarity._kernel import _negated_columns, _outside_range, batched_leaves, range_residual
    from pympc.complementarity.enumeration import _SUPPORTS

    decided = possible = near = 0
    statuses = set()
    for trial in range(300):
        n = int(rng.integers(3, 9))
        nc = int(rng.integers(1, max(2, n // 3 + 1)))
        s = n - 2 * nc
        A = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-3, 3, (n, 1))
        B = rng.standard_normal((n, n))
        B[rng.random((n, n)) < 0.3] = 0.0
        B[:, s + nc:] = -A[:, s:s + nc]
        xs = _SUPPORTS[n]
        k0 = int(rng.integers(len(xs)))
        C = np.where(xs[k0], A, B)
        c = rng.standard_normal(n) * 10.0 ** rng.uniform(-4, 4)
        if trial % 3 == 1:                      # in the range of a support (singular or not)
            c = C @ rng.standard_normal(n)
        elif trial % 3 == 2:                    # near it
            c = C @ rng.standard_normal(n) + rng.standard_normal(n) * 10.0 ** rng.uniform(-9, -4)
        order = rng.permutation(len(xs))
        walked = batched_leaves(A, B, c, xs, 1e-9, 1e-6)
        other = batched_leaves(A, B, c, np.ascontiguousarray(xs[order]), 1e-9, 1e-6)
        for got, want in zip(walked[:2], other[:2]):
            assert got[order].tobytes() == want.tobytes()
        near += _same_statuses_or_opposite_columns_empty(A, B, c, xs, walked[2], other[2][np.argsort(order)])
        rc, _, st = walked
        statuses.update(st.tolist())
        # _outside_range on its own: every True an exact −2
        neg = _negated_columns(A, B)
        assert (neg[s + nc:] == np.arange(s, s + nc)).all()
        Cis = np.zeros((len(xs), n, n))
        Vs = np.zeros((len(xs), n))
        inverted = np.zeros(len(xs), bool)
        for k in range(len(xs)):
            Ck = np.where(xs[k], A, B)
            if abs(np.linalg.det(Ck)) > 1e-300 and np.linalg.cond(Ck) < 1e14:
                Cis[k] = np.linalg.inv(Ck)
                Vs[k] = Cis[k] @ c
                inverted[k] = True
        cmax = np.abs(c).max()
        bound = 1e-6 * (1 + cmax)
        for k in np.flatnonzero(st <= -2):
            Ck = np.where(xs[k], A, B)
            if not any(not xs[k, q] and xs[k, neg[q]] for q in range(s + nc, n)):
                continue
            possible += 1
            if _outside_range(xs, k, neg, Cis, Vs, inverted, rc, 2 * bound, cmax):
                decided += 1
                assert st[k] == -2 and range_residual(Ck, c) > bound
                u = np.linalg.lstsq(Ck, c, rcond=None)[0]
                assert np.abs(Ck @ u - c).max() > bound
    assert statuses >= {-3, -2, 0, 1}
    assert decided > 0.8 * possible and possible > 1000 and near > 50


def _same_statuses_or_opposite_columns_empty(A, B, c, xs, walked, other):
    """batched_leaves' statuses of the walk's order ``walked`` are those of the rows in another order ``other``
    (put back in the walk's order) but where a support with opposite columns that the other order leaves −1 (not
    exactly singular) is −2 in the walk's: each of those the enumeration's own test finds empty
    (nearly_singular_empty, its LAPACK estimate and least squares).  Returns how many there were."""
    from pympc import HLCP
    from pympc.complementarity.enumeration import nearly_singular_empty
    moved = np.flatnonzero(walked != other)
    assert ((walked[moved] == -2) & (other[moved] == -1)).all()
    for k in moved:
        assert nearly_singular_empty(HLCP(A, B, c), xs[k:k + 1], 1e-9)
    return moved.size
