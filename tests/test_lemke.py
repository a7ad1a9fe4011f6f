"""The native Lemke solver: correctness against enumeration, honesty of its statuses."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pympc
from pympc import HLCP, LCP, OptionError, SetKind, SolverNotFound, Status

from conftest import random_p_matrix


def hand_verify(p, z, w, tol=1e-8):
    """Independent check, not using pympc's own residual."""
    M, q = p.M, p.q
    s = 1 + np.abs(q).max() + np.abs(z).max()
    return (z.min() >= -tol * s and w.min() >= -tol * s and np.abs(w - M @ z - q).max() <= tol * s
            and np.abs(z * w).max() <= tol * s * s)


@pytest.mark.parametrize("kind", ["spd", "pd_skew", "triangular"])
def test_p_matrix_lcps_have_the_enumerated_unique_solution(kind):
    rng = np.random.default_rng(hash(kind) % 2**32)
    for _ in range(60):
        n = int(rng.integers(1, 7))
        p = LCP(random_p_matrix(rng, n, kind), rng.uniform(-2, 2, n))
        r = pympc.solve(p)
        assert r.status == Status.SOLVED
        assert hand_verify(p, r.z, r.w)
        s = pympc.enumerate_solutions(p)
        assert s.kind == SetKind.UNIQUE
        np.testing.assert_allclose(r.z, s.points[0][0], atol=1e-8)
        assert pympc.classify(p).p_matrix is True


def test_hlcp_from_lcp_by_random_transformation_has_same_solution(rng):
    for _ in range(200):
        n = int(rng.integers(1, 9))
        M = random_p_matrix(rng, n, "pd_skew")
        q = rng.uniform(-2, 2, n)
        T = rng.standard_normal((n, n)) + 2 * np.eye(n)
        h = HLCP(T, -T @ M, T @ q)
        rl, rh = pympc.solve(LCP(M, q)), pympc.solve(h)
        assert rl.success and rh.success
        np.testing.assert_allclose(rh.y, rl.z, atol=1e-7 * (1 + np.abs(rl.z).max()))
        np.testing.assert_allclose(rh.x, rl.w, atol=1e-7 * (1 + np.abs(rl.w).max()))
        assert pympc.classify(h).column_w is True


def test_diagonal_a_fast_path_agrees_with_the_lcp(rng):
    """HLCP(D, -D M, D q) with D diagonal (incl. D = I and negative entries) is solved without a factorization."""
    for _ in range(200):
        n = int(rng.integers(1, 12))
        M = random_p_matrix(rng, n, "spd")
        q = rng.uniform(-2, 2, n)
        D = np.diag(rng.choice([-1.0, 1.0], n) * rng.uniform(0.1, 10.0, n)) if rng.random() < 0.7 else np.eye(n)
        h = HLCP(D, -D @ M, D @ q)
        assert h._a_diagonal
        rl, rh = pympc.solve(LCP(M, q)), pympc.solve(h)
        assert rl.success and rh.success and rh.is_solution()
        np.testing.assert_allclose(rh.y, rl.z, atol=1e-8 * (1 + np.abs(rl.z).max()))
    # a diagonal A with a zero entry is singular: the pivoted basis search takes over
    h = HLCP(np.diag([1.0, 0.0]), [[-2.0, 0.0], [-1.0, -1.0]], [-1.0, -1.0])
    r = pympc.solve(h)
    assert r.success and h.is_solution(r.x, r.y)


def test_classify_hlcp_agrees_with_column_representative_determinants(rng):
    import itertools

    for _ in range(40):
        n = int(rng.integers(1, 5))
        A = rng.standard_normal((n, n))
        B = rng.standard_normal((n, n))
        if rng.random() < 0.5:  # make about half of them W-property pairs
            M = random_p_matrix(rng, n, "pd_skew")
            B = -A @ M
        h = HLCP(A, B, rng.standard_normal(n))
        dets = [np.linalg.det(np.where(np.array(b)[None, :], A, -B)) for b in itertools.product([True, False], repeat=n)]
        brute = all(d > 1e-12 for d in dets) or all(d < -1e-12 for d in dets)
        assert pympc.classify(h).column_w is brute


def _random_degenerate(rng, n):
    M = rng.integers(-2, 3, (n, n)).astype(float)
    if rng.random() < 0.5:
        j = int(rng.integers(n))
        M[:, (j + 1) % n] = M[:, j]  # repeated columns
    q = rng.integers(-2, 3, n).astype(float)  # zeros and ties
    return LCP(M, q)


def test_no_unverified_solved_over_thousands_of_instances():
    rng = np.random.default_rng(7)
    counts = {s: 0 for s in Status}
    for k in range(3000):
        n = int(rng.integers(1, 6))
        p = _random_degenerate(rng, n) if k % 2 else LCP(rng.standard_normal((n, n)), rng.standard_normal(n))
        r = pympc.solve(p)
        counts[r.status] += 1
        if r.status == Status.SOLVED:
            assert hand_verify(p, r.z, r.w), (p.M, p.q, r.z)
        if k % 10 == 0:  # the judge: enumeration of all supports
            s = pympc.enumerate_solutions(p)
            if r.status == Status.INFEASIBLE:
                assert s.kind == SetKind.NONE
            if s.kind == SetKind.NONE:
                assert r.status == Status.INFEASIBLE
    assert counts[Status.SOLVED] > 1000 and counts[Status.INFEASIBLE] > 10
    assert counts[Status.NUMERICAL_FAILURE] == 0


def test_infeasible_is_only_reported_when_proved():
    # row 1: w1 = -z1 - z2 - 1 < 0 for all z >= 0
    p = LCP([[-1.0, -1.0], [0.0, 1.0]], [-1.0, 1.0])
    r = pympc.solve(p)
    assert r.status == Status.INFEASIBLE
    assert r.info["certificate"].kind == SetKind.NONE
    r = pympc.solve(p, certify=False)
    assert r.status == Status.RAY_TERMINATION
    assert not r.success


def test_ray_with_existing_solutions_says_so():
    # Lemke with d = e fails on this bimatrix-game LCP, but solutions exist
    M = np.array([[0, 0, 10, 30], [0, 0, 20, 15], [10, 30, 0, 0], [20, 15, 0, 0]], float)
    r = pympc.solve(LCP(M, -np.ones(4)), fallback=False)   # Lemke's own answer (fallback: test_solve_registry.py)
    assert r.status == Status.RAY_TERMINATION
    assert "enumeration finds solutions" in r.message


def test_degenerate_ties_terminate(rng):
    # q with ties and zeros on a P-matrix: the lexicographic rule must not cycle
    for _ in range(100):
        n = int(rng.integers(2, 8))
        M = random_p_matrix(rng, n, "triangular")
        q = -np.ones(n) * rng.integers(0, 2, n)
        r = pympc.solve(LCP(M, q))
        assert r.status == Status.SOLVED


def test_continuum_lcp_solution_is_in_the_set():
    p = LCP([[1.0, 1.0], [1.0, 1.0]], [-2.0, -2.0])
    r = pympc.solve(p)
    assert r.success and r.z.sum() == pytest.approx(2.0)
    assert pympc.enumerate_solutions(p).kind == SetKind.CONTINUUM


def test_covering_vector_and_pivot_limit():
    p = LCP(np.triu(2 * np.ones((6, 6)), 1) + np.eye(6), -np.array([126, 124, 120, 112, 96, 64.0]))
    r = pympc.solve(p, max_pivots=10)
    assert r.status == Status.PIVOT_LIMIT and not r.success
    r = pympc.solve(p, covering_vector=np.arange(1, 7.0))
    assert r.success
    with pytest.raises(OptionError, match="strictly positive"):
        pympc.solve(p, covering_vector=-np.ones(6))


def test_unknown_options_and_methods_raise():
    p = LCP([[1.0]], [-1.0])
    with pytest.raises(OptionError, match="unknown option"):
        pympc.solve(p, tolerance=1e-3)
    with pytest.raises(SolverNotFound, match="unknown method"):
        pympc.solve(p, method="newton")


def test_verbose_prints_pivot_log(capsys):
    pympc.solve(LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]), verbose=True)
    out = capsys.readouterr().out
    assert "z0 enters" in out and "z0 leaves" in out


def test_result_residual_and_is_solution():
    p = LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    r = pympc.solve(p)
    res = r.residual()
    assert max(res) < 1e-12 and r.is_solution()
    r.z = r.z + 0.1  # a user-spoiled point no longer verifies
    assert not r.is_solution()


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_property_hlcp_solved_means_verified(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    if rng.random() < 0.3:
        A[:, 0] = 0.0  # singular A: the pivoted basis search
    h = HLCP(A, rng.standard_normal((n, n)), rng.standard_normal(n))
    r = pympc.solve(h)
    s = pympc.enumerate_solutions(h)
    if r.success:
        x, y = r.x, r.y
        assert np.abs(h.A @ x + h.B @ y - h.c).max() <= 1e-8 * (1 + np.abs(x).max() + np.abs(y).max())
        assert min(x.min(), y.min()) >= -1e-9 and np.abs(x * y).max() <= 1e-9 * (1 + np.abs(x).max() + np.abs(y).max()) ** 2
        assert s.kind != SetKind.NONE
    if r.status == Status.INFEASIBLE:
        assert s.kind == SetKind.NONE


@pytest.mark.parametrize("option, value", [
    ("max_pivots", 2.5), ("max_pivots", "10"), ("max_pivots", True), ("max_pivots", 0), ("max_pivots", -3),
    ("tol", -1e-9), ("tol", float("nan")), ("tol", 0.0), ("tol", "1e-9"), ("tol", float("inf")),
    ("piv_tol", -1.0), ("piv_tol", float("nan")), ("piv_tol", None),
    ("verbose", "yes"), ("certify", 1), ("covering_vector", [1.0, float("nan")]), ("covering_vector", [1.0]),
])
def test_bad_option_values_name_the_option(option, value):
    p = LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    for problem in (p, p.to_hlcp()):
        with pytest.raises(OptionError, match=option):
            pympc.solve(problem, **{option: value})


def test_good_option_values_are_taken():
    p = LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    for opts in ({"max_pivots": np.int64(50)}, {"tol": 1e-6, "piv_tol": 0.0}, {"certify": False}, {"verbose": False}):
        assert pympc.solve(p, **opts).success


@pytest.mark.parametrize("thing", [np.eye(2), [[1.0]], (np.eye(2), np.ones(2)), "p.npz", None])
def test_solving_something_that_is_not_a_problem_says_to_wrap_it(thing):
    with pytest.raises(pympc.ProblemError, match=r"pympc\.LCP\(M, q\) or pympc\.HLCP\(A, B, c\)"):
        pympc.solve(thing)


def test_statuses_print_their_names():
    from pympc.dynamics import SimulationStatus
    assert str(Status.SOLVED) == "SOLVED" and f"{Status.INFEASIBLE}" == "INFEASIBLE"
    assert f"{Status.SOLVED:>8s}|" == "  SOLVED|" and f"{Status.RAY_TERMINATION:d}" == "1"
    assert str(SimulationStatus.SUCCESS) == "SUCCESS" and str(SetKind.UNIQUE) == "UNIQUE"
    assert Status.SOLVED == 0  # still an int


def test_results_print_a_short_summary():
    n = 1000
    r = pympc.solve(LCP(np.eye(n) * 2.0, -np.ones(n)))
    for text in (repr(r), str(r)):
        assert len(text) < 300 and "SOLVED" in text and f"n={n}" in text and f"pivots={r.pivots}" in text
        assert "relative residual" in text
    h = pympc.solve(HLCP([[1.0]], [[-2.0]], [-1.0]))
    assert repr(h).startswith("<HLCPResult SOLVED: n=1,")
    h.x = "spoiled"  # a summary never raises
    assert "n/a" in repr(h)
