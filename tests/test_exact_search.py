"""The exact default of pympc's MILP method: convex QP for monotone problems, support search otherwise;
checked against complete enumeration and the big-M MILP on random small problems."""

import numpy as np
import pytest

import pympc
from pympc import HLCP, LCP, SetKind
from pympc.complementarity import milp


def random_integer_problem(rng, n, kind):
    if kind == "lcp":
        return LCP(rng.integers(-3, 4, (n, n)).astype(float), rng.integers(-3, 4, n).astype(float))
    return HLCP(rng.integers(-3, 4, (n, n)).astype(float), rng.integers(-3, 4, (n, n)).astype(float),
                rng.integers(-3, 4, n).astype(float))


@pytest.mark.parametrize("kind", ["lcp", "hlcp"])
def test_search_decides_exactly_what_enumeration_decides(rng, kind):
    decided = {"qp": 0, "search": 0}
    for _ in range(150):
        n = int(rng.integers(1, 6))
        p = random_integer_problem(rng, n, kind)
        s = pympc.enumerate_solutions(p)
        r = milp(p)
        assert r.info["exact"]
        assert r.status.name in ("SOLVED", "INFEASIBLE"), r.message
        assert r.success == (s.kind != SetKind.NONE), (r.message, s.kind)
        if r.success:
            assert r.is_solution()
        decided[r.info["formulation"]] += 1
    assert decided["search"] > 50


def test_monotone_problems_of_any_scale_by_one_qp(rng):
    for scale in (1e-6, 1.0, 1e6):
        for n in (5, 30):
            G = rng.standard_normal((n, n))
            p = LCP(G @ G.T + 0.1 * n * np.eye(n), scale * rng.uniform(-1, 1, n))
            r = milp(p)
            assert r.success and r.info["formulation"] == "qp", r.message
            np.testing.assert_allclose(r.z, pympc.solve(p).z, atol=1e-9 * (1 + np.abs(r.z).max()))


def test_search_time_limit_is_undecided_never_a_claim(rng):
    n = 40
    M = rng.integers(-3, 4, (n, n)).astype(float)
    p = LCP(M, rng.integers(-3, 4, n).astype(float))
    r = milp(p, time_limit=1e-9)
    assert r.status.name == "UNDECIDED" and not r.success


def test_a_solution_with_an_entry_at_the_round_off_threshold_is_found_not_refuted():
    """A breakaway HLCP of the friction oscillator: its solution has y3 ≈ 1e-8, exactly at the size the
    support re-solve used to zero as round-off; the search then claimed INFEASIBLE (a false proof)."""
    import pympc
    h = pympc.HLCP([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5], [-0.8, 0.0, 1.0]],
                   [[-1.0, 0.0, 0.0], [0.0, -0.5, -1.0], [-0.8, 1.0, 0.0]], [9.8, -3.92000001, 0.0])
    assert pympc.enumerate_solutions(h).kind.name == "UNIQUE"
    r = pympc.solve(h, method="milp")
    assert r.success and h.is_solution(r.x, r.y)
    assert abs(r.y[2] - 1e-8) < 1e-12
