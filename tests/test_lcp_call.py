"""The one compiled call behind ``pympc.solve`` on an LCP (``_kernel.solve_lcp``): the same answer, status
and classification as Lemke's method composed from its parts, and a verification that still refuses a point.

Oracles: the pieces the call fuses (``equilibrate_lcp``, ``lemke_kernel``, ``lcp_relative_residual``, still in
the package for the HLCP paths), a NumPy transcription of the componentwise relative residual, and Ruiz's power
of two computed by ``log2`` and ``round``.
"""

import numpy as np
import pytest

import pympc
from pympc import LCP, Status
from pympc.complementarity import _kernel as K


def _instances(seed, count=240):
    """LCPs of every kind the solver meets: SPD, indefinite, badly scaled, degenerate integers (ties,
    repeated columns), sparse with zero rows and columns, nonnegative, near-identity (balanced: no scaling);
    q of either sign."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        n = int(rng.integers(1, 26))
        kind = k % 7
        G = rng.standard_normal((n, n))
        if kind == 0:
            M = G @ G.T + 0.1 * n * np.eye(n)
        elif kind == 1:
            M = G
        elif kind == 2:
            M = (G @ G.T + np.eye(n)) * 10.0 ** rng.uniform(-6, 6, n)[:, None] * 10.0 ** rng.uniform(-6, 6, n)
        elif kind == 3:
            M = rng.integers(-2, 3, (n, n)).astype(float)
            if n > 1:
                M[:, 1] = M[:, 0]
        elif kind == 4:
            M = G * (rng.uniform(0, 1, (n, n)) < 0.2)
        elif kind == 5:
            M = rng.uniform(0, 1, (n, n))
        else:
            M = np.eye(n) + 0.01 * G
        q = rng.integers(-2, 2, n).astype(float) if kind == 3 else rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-3, 3)
        if kind == 6:
            q = rng.uniform(-1, 1, n)   # balanced data: the scaling settles at the first sweep
        yield LCP(M, q)


def _reference(p, tol=1e-9):
    """Lemke from its parts: equilibrate, pivot, map back, residual on the original data; and whether the
    point passes as it is (the case the compiled call returns at once)."""
    M, q, n = p.M, p.q, p.n
    Ms, qs, r, s = K.equilibrate_lcp(M, q, 20)
    code, pivots, zs, ws, el, ll = K.lemke_kernel(Ms, qs, np.ones(n), 1000 + 100 * n, 1e-10, 1e-12)
    z, w = zs * s, ws / r
    res = K.lcp_relative_residual(M, q, z, w)
    clean = code == K.KERNEL_SOLVED and max(res) <= tol and z.min() >= 0 and w.min() >= 0
    return code, pivots, z, w, (el, ll), (r, s), res, clean


def numpy_relative_residual(M, q, z, w):
    """The componentwise relative residual of LCP(M, q) at (z, w), transcribed from its definition."""
    P = np.abs(M * z)                              # |M_ij z_j|
    t = np.abs(w) + np.abs(q) + P.sum(axis=1)
    e = w - q - M @ z
    eq = max([0.0] + [abs(e[i]) / t[i] if t[i] > 0 else np.inf for i in range(len(q)) if e[i] != 0])
    umax = max(np.abs(z).max(), np.abs(w).max())
    ww = np.where(t > 0, np.abs(w) / np.where(t > 0, t, 1), 0.0)
    wz = np.array([max([0.0] + [P[i, j] / t[i] for i in range(len(q)) if M[i, j] != 0 and t[i] > 0])
                   if (M[:, j] != 0).any() else abs(z[j]) / (1 + umax) for j in range(len(q))])
    neg = max([0.0] + list(ww[w < 0]) + list(wz[z < 0]))
    both = (w != 0) & (z != 0)
    comp = max([0.0] + list(np.minimum(ww, wz)[both]))
    return eq, neg, comp


def test_solve_is_lemke_composed_from_its_parts_bit_for_bit():
    statuses = set()
    clean_cases = 0
    for p in _instances(11):
        code, pivots, z, w, log, scaling, res, clean = _reference(p)
        r = pympc.solve(p, fallback=False)
        statuses.add(r.status)
        if clean:
            clean_cases += 1
            assert r.status == Status.SOLVED and r.message == "solution found and verified"
            assert np.array_equal(r.z, z) and np.array_equal(r.w, w) and r.pivots == pivots
            assert all(np.array_equal(a, b) and a.dtype == np.int64 for a, b in zip(r.info["log"], log))
            assert all(np.array_equal(a, b) for a, b in zip(r.info["scaling"], scaling))
        elif code != K.KERNEL_SOLVED:   # a ray or a pivot limit: never a solution
            assert r.status != Status.SOLVED and r.pivots == pivots
        else:   # a complementary basis whose point failed: only a cleaned point that passes is SOLVED
            assert r.status in (Status.SOLVED, Status.NUMERICAL_FAILURE)
            if r.status == Status.SOLVED:
                assert max(numpy_relative_residual(p.M, p.q, r.z, r.w)) <= 1e-9 * 1.01
    assert clean_cases > 100 and (Status.RAY_TERMINATION in statuses or Status.INFEASIBLE in statuses)


@pytest.mark.parametrize("seed", [3, 4])
def test_the_compiled_verification_refuses_a_point_just_above_its_tolerance(seed):
    """The verdict follows the residual: at a tolerance just below the point's residual the call says the
    point is not clean, and ``pympc.solve`` (no fallback) returns no SOLVED point that fails that tolerance."""
    tried = 0
    for p in _instances(seed, 120):
        code, pivots, z, w, log, scaling, res, clean = _reference(p)
        worst = max(res)
        if not clean or worst == 0.0:
            continue
        tried += 1
        for tol, expected in ((worst, True), (worst * (1 - 1e-6), False)):
            got = K.solve_lcp(p.M, p.q, np.empty(0), 1000 + 100 * p.n, 1e-10, 1e-12, 20, tol)
            assert got[2] is expected
            r = pympc.solve(p, tol=tol, certify=False)
            if expected:
                assert r.success and np.array_equal(r.z, z)
            elif r.success:    # only a point re-solved by the verification's cleaning, and it must pass
                assert max(r.relative_residual()) <= tol     # the acceptance measure itself
                # and by the definition (NumPy sums in another order: a rounding's worth of slack)
                assert max(numpy_relative_residual(p.M, p.q, r.z, r.w)) <= tol + 1e-15
                assert not np.array_equal(r.z, z) or not np.array_equal(r.w, w)
            else:
                assert r.status == Status.NUMERICAL_FAILURE and "fails verification" in r.message
    assert tried > 40


def test_relative_residual_matches_its_definition_on_dense_and_lemke_points():
    """Skipping the zero terms and the weights no member needs changes nothing: dense points with negative
    entries and pairs with both members nonzero, and Lemke's own points."""
    rng = np.random.default_rng(5)
    for p in _instances(6, 80):
        n = p.n
        points = [(rng.standard_normal(n), rng.standard_normal(n)),
                  (np.where(rng.random(n) < 0.5, 0.0, rng.random(n)), np.where(rng.random(n) < 0.5, 0.0, rng.random(n)))]
        r = pympc.solve(p)
        points.append((r.z, r.w))
        for z, w in points:
            got = K.lcp_relative_residual(p.M, p.q, z, w)
            np.testing.assert_allclose(got, numpy_relative_residual(p.M, p.q, z, w), rtol=1e-12, atol=1e-15)
            h = p.to_hlcp()
            np.testing.assert_allclose(K.relative_residual(h.A, h.B, h.c, w, z), got, rtol=1e-12, atol=1e-15)


def test_ruiz_power_of_two_from_the_bits_equals_log2_and_round():
    rng = np.random.default_rng(8)
    p2 = 2.0 ** np.arange(-1070, 1020)
    v = np.concatenate([np.exp(rng.uniform(-690, 690, 20000)), p2, np.nextafter(p2, 0), np.nextafter(p2, np.inf),
                        p2 * (1 + 1e-11), p2 * (1 - 1e-11), p2 * np.sqrt(2), [5e-324, 1e-310, 0.0]])
    # all of v (some norms the bits do not settle: norm by norm), and the norms the bits settle (one pass)
    for norms in (v, np.concatenate([np.exp(rng.uniform(-690, 690, 20000)), p2[10:-10] * np.sqrt(2)])):
        N = norms.size
        W = np.concatenate([np.ones(N + 1), norms, [0.0]])     # [r | s | rn | cn]: rows of norms v, one zero column
        K._ruiz_step(1, W, W.view(np.int64), N, 1, False)
        with np.errstate(divide="ignore"):
            expected = np.where(norms > 0, 2.0 ** np.round(-0.5 * np.log2(norms)), 1.0)
        assert np.array_equal(W[:N], expected) and W[N] == 1.0


def test_info_is_made_when_read_and_behaves_as_a_dict():
    p = LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    r = pympc.solve(p)
    assert r.success and "_info_from" in r.__dict__
    info = r.info
    assert r.info is info and set(info) == {"log", "scaling"} and "_info_from" not in r.__dict__
    assert dict(info) == info and info["log"][0].dtype == np.int64
    r.info["extra"] = 1
    assert r.info["extra"] == 1
    r.info = {"replaced": True}
    assert r.info == {"replaced": True}
    assert "SOLVED" in repr(r) and r.is_solution()


def test_the_short_path_of_solve_keeps_the_registry_and_the_fallback():
    """``pympc.solve(lcp)`` goes straight to the compiled call only while ``METHODS["lemke"]`` is pympc's own;
    a ray still ends in the exact decision."""
    from pympc.complementarity.solve import METHODS
    p = LCP([[2.0]], [-4.0])
    own = METHODS["lemke"]
    try:
        calls = []
        METHODS.register("lemke", lambda problem, **options: calls.append(1) or own(problem))
        assert pympc.solve(p).success and calls == [1]
    finally:
        METHODS.register("lemke", own)
    r = pympc.solve(LCP([[-1.0, 0.0], [0.0, -1.0]], [-1.0, -1.0]))     # w = -z - 1 < 0: no solution
    assert r.status == Status.INFEASIBLE and "enumeration" in r.message


def test_an_lcp_of_narrow_spread_stops_at_its_first_balanced_sweep_and_badly_scaled_data_do_not():
    """``ruiz_scaling(..., early=True)`` (an LCP's equilibration): data whose row and column norms span at most
    ``RUIZ_EARLY_SPREAD`` stop as soon as every norm is within [1/8, 8] (random SPD: fewer sweeps than
    Ruiz's fixed point, a different scaling); wider data reach the fixed point, the scaling without ``early``
    bit for bit; either way the compiled call takes the scaling of ``equilibrate_lcp``."""
    rng = np.random.default_rng(12)
    stopped_early = 0
    for k in range(40):
        n = int(rng.integers(2, 40))
        G = rng.standard_normal((n, n))
        M = G @ G.T + 0.1 * n * np.eye(n)
        if k % 2:
            M = M * 10.0 ** rng.uniform(-4, 4, n)[:, None] * 10.0 ** rng.uniform(-4, 4, n)
        q = rng.uniform(-1, 1, n)
        X = np.column_stack([M, q])
        norms = np.concatenate([np.abs(X).max(axis=1), np.abs(M).max(axis=0)])   # as sweep 0 measures them
        narrow = norms.max() <= K.RUIZ_EARLY_SPREAD * norms.min()
        r, s = K.ruiz_scaling(X, 20, True, True)
        r0, s0 = K.ruiz_scaling(X, 20, True)
        Ms = np.abs(r[:, None] * M * s[:n])
        if narrow:
            assert (Ms.max(axis=1) <= 8).all()     # (a row's norm counted q's entry too: no lower bound on M's part)
            assert ((0.125 <= Ms.max(axis=0)) & (Ms.max(axis=0) <= 8)).all()
            stopped_early += not (np.array_equal(r, r0) and np.array_equal(s, s0))
        else:
            assert np.array_equal(r, r0) and np.array_equal(s, s0)
        got = pympc.solve(LCP(M, q), fallback=False)
        assert np.array_equal(got.info["scaling"][0], K.equilibrate_lcp(M, q, 20)[2])
    assert stopped_early >= 10
