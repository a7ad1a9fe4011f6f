"""Entries below the window of magnitudes (``problems.MAGNITUDES``) that are round-off next to the largest entry
of their row and of their column are accepted as the zeros they stand for (the 2000-slot chain's event LCP had
an entry of 4.9e-151 among entries of order 1); tiny entries that carry their row or their column, and every
entry above the window, are still refused."""

import numpy as np
import pytest

import pympc
from pympc import HLCP, LCP, ProblemError
from pympc.complementarity.problems import MAGNITUDES, ROUND_OFF


def _p_matrix(n, seed):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, n))
    return G @ G.T + n * np.eye(n), rng.uniform(-1.0, 1.0, n)


@pytest.mark.parametrize("tiny", [4.9e-151, -1e-200, 1e-300, 5e-324])
def test_a_round_off_entry_of_M_is_accepted_and_solves_as_the_zero_it_stands_for(tiny):
    M, q = _p_matrix(6, 1)
    M[0, 4] = tiny
    zeroed = M.copy()
    zeroed[0, 4] = 0.0
    r, r0 = pympc.solve(LCP(M, q)), pympc.solve(LCP(zeroed, q))
    assert r.success and r0.success
    # oracle: M is a P-matrix (positive definite up to the tiny entry), so the solution is unique; the problem
    # with the entry set to zero has a solution that also solves this one, and it is the one returned
    assert LCP(M, q).is_solution(r0.z, tol=1e-12)
    np.testing.assert_allclose(r.z, r0.z, rtol=1e-12, atol=1e-300)


def test_round_off_entries_of_q_B_and_c_are_accepted():
    M, q = _p_matrix(5, 2)
    q[3] = 4.9e-151 * np.sign(q[3])
    assert pympc.solve(LCP(M, q)).success
    B = -M.copy()
    B[2, 0] = -1e-160
    c = q.copy()
    c[1] = 1e-170
    r = pympc.solve(HLCP(np.eye(5), B, c))
    assert r.success and HLCP(np.eye(5), B, c).is_solution(r.x, r.y)


@pytest.mark.parametrize("make, name, why", [
    # the tiny entry is the largest of its column (variable z_2 is multiplied by nothing else)
    (lambda: LCP([[1.0, 1e-151], [0.0, 1e-151]], [-1.0, -1.0]), "M", "carries its column"),
    # the largest of its row (the row's equation has no other term of M)
    (lambda: LCP([[1e-151, 0.0], [1.0, 1.0]], [-1.0, -1.0]), "M", "carries its row"),
    # below the window but not below round-off of its row's largest (1e-140)
    (lambda: LCP([[1e-140, 1e-151], [1.0, 1.0]], [-1.0, -1.0]), "M", "not round-off of its row"),
    # a right-hand side whose entries are all tiny is the data's scale, not round-off
    (lambda: LCP(np.eye(2), [-1e-151, 1e-160]), "q", "the vector's scale"),
    # a right-hand side entry that is not round-off of its row of M (whose largest entry is 1e-149)
    (lambda: LCP([[1e-149, 0.0], [0.0, 1.0]], [-1e-151, -1.0]), "q", "not round-off of its row"),
    (lambda: HLCP([[1.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, -1e-151]], [1.0, 1.0]), "B", "carries its column"),
    # above the window: always refused, whatever its neighbours
    (lambda: LCP([[1e151, 1.0], [1.0, 1.0]], [-1.0, -1.0]), "M", "too large"),
])
def test_tiny_entries_that_are_the_data_are_still_refused(make, name, why):
    with pytest.raises(ProblemError, match=rf"^{name} has an entry of magnitude .*round-off only when .* Rescale"):
        make()


def test_the_round_off_rule_is_relative_to_both_the_row_and_the_column():
    low = MAGNITUDES[0]
    e = 0.5 * low
    # e is round-off next to 1 in row 0 and in column 1: accepted
    LCP([[1.0, e], [0.0, 1.0]], [-1.0, -1.0])
    # the same entry next to a row maximum of e / ROUND_OFF exactly: still round-off (<=); just above: refused
    big = e / ROUND_OFF
    LCP([[big, e], [0.0, big]], [-1.0, -1.0])
    with pytest.raises(ProblemError):
        LCP([[0.5 * big, e], [0.0, 1.0]], [-1.0, -1.0])
