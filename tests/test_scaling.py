"""Badly scaled problems: tolerances follow the scales of rows and columns (issue 12, item 2).

Every scaled problem here is a diagonal scaling of a well-scaled one whose
solution set is known (a P-matrix: one solution) or decided by enumeration of
the well-scaled original; the scaled problem must give the same answer,
mapped through the scaling.
"""

import numpy as np
import pytest
from conftest import random_p_matrix, run_python
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pympc
from pympc import HLCP, LCP, SetKind, Status

SCALES = [1e-12, 1e-9, 1e-5, 1e-2, 1.0, 1e2, 1e5, 1e9, 1e12]


def _row_errors(A, B, c, x, y):
    """Independent oracle: |A x + B y - c|_i over the size of the row's terms."""
    terms = np.abs(A) @ np.abs(x) + np.abs(B) @ np.abs(y) + np.abs(c)
    r = np.abs(A @ x + B @ y - c)
    return np.where(r == 0, 0.0, r / np.where(terms > 0, terms, 1.0))


@pytest.mark.parametrize("s", SCALES)
def test_issue_example_lcp_and_hlcp(s):
    # LCP([[s, 0], [0, 1/s]], [-s, -1]) has the unique solution z = [1, s]
    p = LCP([[s, 0.0], [0.0, 1.0 / s]], [-s, -1.0])
    r = pympc.solve(p)
    assert r.status == Status.SOLVED, r.message
    np.testing.assert_allclose(r.z, [1.0, s], rtol=1e-12)
    np.testing.assert_allclose(r.w, p.M @ r.z + p.q, atol=1e-12 * max(1.0, s))
    assert _row_errors(np.eye(2), -p.M, p.q, r.w, r.z).max() <= 1e-12
    sols = pympc.enumerate_solutions(p)
    assert sols.kind == SetKind.UNIQUE
    np.testing.assert_allclose(sols.points[0][0], [1.0, s], rtol=1e-9)
    assert pympc.classify(p).p_matrix is True
    # the HLCP form (non-diagonal A under row and column scalings: test_scale_sweep_hlcp)
    h = p.to_hlcp()
    rh = pympc.solve(h)
    assert rh.status == Status.SOLVED, rh.message
    np.testing.assert_allclose(rh.y, [1.0, s], rtol=1e-9)
    assert pympc.enumerate_solutions(h).kind == SetKind.UNIQUE
    assert pympc.classify(h).p_matrix is True
    # mixing rows of sizes s and 1/s loses the small one in rounding: whatever is returned must
    # still solve the problem up to a relative change of each row (a backward-stable answer)
    T = np.array([[1.0, 1.0], [0.0, 1.0]])
    h = HLCP(T, -T @ p.M, T @ p.q)
    rh = pympc.solve(h)
    assert rh.status == Status.SOLVED and _row_errors(h.A, h.B, h.c, rh.x, rh.y).max() <= 1e-9


@pytest.mark.parametrize("s", [1e9, 1e12])
def test_a_point_that_breaks_a_row_never_verifies(s):
    # the answer main once called SOLVED at s = 1e12: w = M z + q = [0, -1] breaks row 2
    p = LCP([[s, 0.0], [0.0, 1.0 / s]], [-s, -1.0])
    assert not p.is_solution([1.0, 0.0])
    assert p.relative_residual([1.0, 0.0], [0.0, 0.0]).equation == pytest.approx(1.0)
    assert not p.to_hlcp().is_solution([0.0, 0.0], [1.0, 0.0])
    # the same with a huge right-hand side in another row (a normwise test accepts it)
    p = LCP(np.eye(2), [-s, -1.0])
    assert not p.is_solution([s, 0.0]) and p.is_solution([s, 1.0])


def _scaled_p_lcp(rng, n, k):
    """A P-matrix LCP with a known solution, rows and columns scaled by 10^U(-k, k)."""
    M0 = random_p_matrix(rng, n, ["spd", "pd_skew", "triangular"][rng.integers(3)])
    z0 = np.where(rng.random(n) < 0.5, rng.uniform(0.5, 2.0, n), 0.0)
    w0 = np.where(z0 > 0, 0.0, rng.uniform(0.5, 2.0, n))
    q0 = w0 - M0 @ z0
    R = 10.0 ** rng.uniform(-k, k, n)
    D = 10.0 ** rng.uniform(-k, k, n)
    return M0, q0, z0, w0, R, D


@pytest.mark.parametrize("k", [0, 3, 6, 9, 12])
def test_scale_sweep_p_matrix_lcp(rng, k):
    for _ in range(15):
        n = int(rng.integers(2, 7))
        M0, q0, z0, w0, R, D = _scaled_p_lcp(rng, n, k)
        p = LCP(R[:, None] * M0 * D, R * q0)
        r = pympc.solve(p)
        assert r.status == Status.SOLVED, (k, r.message)
        np.testing.assert_allclose(D * r.z, z0, atol=1e-8)   # the known solution, mapped through the scaling
        np.testing.assert_allclose(r.w / R, w0, atol=1e-8)
        assert _row_errors(np.eye(n), -p.M, p.q, r.w, r.z).max() <= 1e-9
        assert pympc.classify(p).p_matrix is True
        if n <= 4:
            s = pympc.enumerate_solutions(p)
            assert s.kind == SetKind.UNIQUE, k
            np.testing.assert_allclose(D * s.points[0][0], z0, atol=1e-7)


@pytest.mark.parametrize("k", [0, 3, 6, 9, 12])
def test_scale_sweep_hlcp(rng, k):
    for _ in range(15):
        n = int(rng.integers(2, 7))
        M0, q0, z0, w0, R, Dy = _scaled_p_lcp(rng, n, k)
        A0 = rng.standard_normal((n, n)) + 3 * np.eye(n)   # HLCP(A0, -A0 M0, A0 q0): x = w, y = z
        Dx = 10.0 ** rng.uniform(-k, k, n)
        h = HLCP(R[:, None] * A0 * Dx, -R[:, None] * (A0 @ M0) * Dy, R * (A0 @ q0))
        r = pympc.solve(h)
        assert r.status == Status.SOLVED, (k, r.message)
        np.testing.assert_allclose(Dx * r.x, w0, atol=1e-7)
        np.testing.assert_allclose(Dy * r.y, z0, atol=1e-7)
        assert _row_errors(h.A, h.B, h.c, r.x, r.y).max() <= 1e-9
        assert pympc.classify(h).p_matrix is True
        if n <= 4:
            assert pympc.enumerate_solutions(h).kind == SetKind.UNIQUE


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(0, 12), st.booleans(), st.integers(0, 2**32 - 1))
@example(4, 12, False, 2635897453)   # a degenerate vertex whose basic variable held -2.4e-6 (-7e-17 equilibrated)
def test_property_solved_verifies_in_the_unscaled_problem(n, k, hlcp, seed):
    # any problem (small integers: rays, several solutions, none), rows and columns scaled;
    # the well-scaled original decides by enumeration whether a solution exists
    rng = np.random.default_rng(seed)
    R, Dx, Dy = (10.0 ** rng.uniform(-k, k, n) for _ in range(3))
    A0 = np.eye(n) if not hlcp else rng.integers(-3, 4, (n, n)).astype(float)
    B0 = rng.integers(-3, 4, (n, n)).astype(float)
    c0 = rng.integers(-3, 4, n).astype(float)
    base = HLCP(A0, B0, c0)
    h = HLCP(R[:, None] * A0 * Dx, R[:, None] * B0 * Dy, R * c0)
    r = pympc.solve(h)
    if r.success:
        assert _row_errors(h.A, h.B, h.c, r.x, r.y).max() <= 1e-8
        assert min(r.x.min(), r.y.min()) >= 0.0
        # complementarity in the unscaled problem: the lighter member of each pair carries nothing
        assert base.is_solution(Dx * r.x, Dy * r.y, 1e-8)
        assert pympc.enumerate_solutions(base).kind != SetKind.NONE
    if r.status == Status.INFEASIBLE:
        assert pympc.enumerate_solutions(base).kind == SetKind.NONE


def test_rounding_noise_is_forgiven_but_a_real_error_is_not():
    # a degenerate event HLCP: rows 1 and 3 have all terms zero at the solution x = [0, 2, 0], y = 0
    h = HLCP([[1, 0, 0], [0, 0.2, 1], [-0.4, 0, 1]], [[-1, 0, 0], [0, -1, -0.2], [-0.4, 1, 0]], [0, 0.4, 0])
    x, y = np.array([0.0, 2.0, 0.0]), np.zeros(3)
    assert h.is_solution(x, y)
    noise = np.array([4.5e-19, 0.0, -2.0e-16]), np.array([8.8e-17, 1.9e-17, 2.1e-17])
    assert h.relative_residual(x + noise[0], y + noise[1]).equation > 0.5   # relative to all-zero rows
    assert h.is_solution(x + noise[0], y + noise[1])                         # yet it is noise
    assert not h.is_solution(x + [0.0, 0.0, 1e-6], y)                        # an error is not
    assert not h.is_solution(x + [0.0, 1e-6, 0.0], y)
    assert not h.is_solution(x + [np.nan, 0.0, 0.0], y) and not h.is_solution(x, y + [0.0, np.inf, 0.0])


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_property_lcp_residual_is_the_hlcp_one(n, seed):
    # the LCP's own (row-major) residual kernel against the HLCP(I, -M, q) one, zeros included
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n)) * (rng.random((n, n)) < 0.6)
    q = rng.standard_normal(n) * (rng.random(n) < 0.7)
    z = rng.standard_normal(n) * (rng.random(n) < 0.5)
    w = rng.standard_normal(n) * (rng.random(n) < 0.5)
    p = LCP(M, q)
    np.testing.assert_allclose(p.relative_residual(z, w), p.to_hlcp().relative_residual(w, z), rtol=1e-12, atol=0)


@pytest.mark.parametrize("s", [1e-12, 1e-7, 1.0, 1e7, 1e12])
def test_one_pair_edge_cases_at_every_scale(s):
    # B = 0 (no matrix to balance the right-hand side against): x = c / a, y free only at 0
    r = pympc.solve(HLCP([[s]], [[0.0]], [s]))
    assert r.status == Status.SOLVED and r.x == pytest.approx([1.0]) and r.y[0] == 0.0
    assert pympc.solve(HLCP([[s]], [[0.0]], [-s])).status == Status.INFEASIBLE
    # A = 0, a uniformly tiny or huge B: the basis is y, y = c / b
    r = pympc.solve(HLCP([[0.0]], [[s]], [2.0 * s]))
    assert r.status == Status.SOLVED and r.y == pytest.approx([2.0])


# -- issue 25: magnitudes no double can carry, and HiGHS's range ----------------------------------------------

@pytest.mark.parametrize("make, name", [
    (lambda e: LCP([[e, 0.0], [0.0, 1.0]], [-1.0, -1.0]), "M"),
    (lambda e: LCP(np.eye(2), [-1.0, -e]), "q"),
    (lambda e: HLCP([[e, 0.0], [0.0, 1.0]], -np.eye(2), [1.0, 1.0]), "A"),
    (lambda e: HLCP(np.eye(2), [[-1.0, 0.0], [0.0, -e]], [1.0, 1.0]), "B"),
    (lambda e: HLCP(np.eye(2), -np.eye(2), [e, 1.0]), "c"),
])
@pytest.mark.parametrize("e", [1e300, 1e-300, -1e200, 1e151, 1e-151])
def test_magnitudes_outside_the_window_are_a_problem_error_naming_the_argument(make, name, e):
    # the class: entries whose products or ratios leave the doubles (the issue's LCP [[1e300, 0], [0, 1e-300]]
    # printed LAPACK's DLASCL lines and raised LinAlgError, or was called unsolvable)
    with pytest.raises(pympc.ProblemError, match=rf"^{name} has an entry of magnitude .* Rescale"):
        make(e)


def test_the_issue_lcp_is_refused_at_construction_without_lapack_output():
    code = ("import pympc\ntry:\n    pympc.solve(pympc.LCP([[1e300, 0], [0, 1e-300]], [-1, -1]))\n"
            "except pympc.ProblemError as e:\n    print('refused:', str(e)[:20])\n")
    out = run_python("-c", code, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "refused: M has an entry of ma\n" and "DLASCL" not in out.stderr


@pytest.mark.parametrize("k", [0, 3, 6, 9, 12, 20, 50, 100, 149])
@pytest.mark.parametrize("signs", [(-1, -1), (1, -1), (-1, 1), (-1e0, "s")])
@pytest.mark.parametrize("formulation", ["auto", "bigm"])
def test_milp_never_calls_a_p_matrix_problem_unsolvable(k, signs, formulation):
    # LCP(diag(s, 1/s), q) has the unique solution z_i = max(0, -q_i / M_ii) for every q (a P-matrix): the
    # exact MILP must give it (verified) or say it cannot decide; "no solution" would be a false proof
    # (before: from s = 1e9 on, HiGHS dropped the entry 1/s and the MILP answered INFEASIBLE)
    from pympc.complementarity import milp

    s = 10.0 ** k
    q = np.array([signs[0], -s if signs[1] == "s" else signs[1]], float)
    M = np.diag([s, 1.0 / s])
    r = milp(LCP(M, q), formulation=formulation)
    assert r.status in (Status.SOLVED, Status.UNDECIDED), (r.status, r.message)
    if r.status == Status.SOLVED:
        np.testing.assert_allclose(r.z, np.maximum(0.0, -q / np.diag(M)), rtol=1e-9, atol=0)
    else:
        assert r.message and not r.success


def test_milp_proves_infeasibility_of_a_well_scaled_problem_after_equilibration():
    # equilibration does not cost the proofs: LCP(diag(s, 1/s) with a row that has no solution) stays INFEASIBLE
    # when the data's spread after scaling is small; HLCP x - y = -1 with x = y... (A = [[1, -1]]-type) is empty
    from pympc.complementarity import milp
    from pympc.complementarity.milp import equilibrate

    for s in (1.0, 1e6, 1e40):
        p = HLCP([[s, 0.0], [0.0, 1.0]], [[s, 0.0], [0.0, 1.0]], [-s, 1.0])   # s (x1 + y1) = -s: x1 + y1 = -1
        scaled, dx, dy, spread = equilibrate(p)
        assert spread <= 4.0
        np.testing.assert_array_equal(np.log2(dx) % 1, 0)   # powers of two: the scaling is exact
        r = milp(p)
        assert r.status == Status.INFEASIBLE, r.message
