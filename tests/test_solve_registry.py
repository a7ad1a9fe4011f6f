"""pympc.solve: one registry of methods, each verified; Lemke's rays decided exactly where affordable."""

import numpy as np
import pytest

import pympc
from pympc import HLCP, LCP, SetKind, Status
from pympc.complementarity.solve import METHODS

from conftest import DATA, random_p_matrix


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_solves_and_verifies(method, rng):
    for _ in range(3):
        n = int(rng.integers(2, 7))
        p = LCP(random_p_matrix(rng, n, "spd"), rng.uniform(-1, 1, n))
        ref = pympc.solve(p, method="lemke").z
        for prob in (p, p.to_hlcp()):
            r = pympc.solve(prob, method=method)
            assert r.success and r.is_solution(), (method, r.message)
            z = r.z if isinstance(prob, LCP) else r.y
            np.testing.assert_allclose(z, ref, atol=1e-8)


def test_ray_on_a_bimatrix_game_is_decided_by_enumeration():
    p = pympc.read_siconos(DATA / "lcp_CPS_3.dat")
    assert pympc.solve(p, fallback=False).status == Status.RAY_TERMINATION
    r = pympc.solve(p)
    assert r.success and r.is_solution() and r.info["found_by"] == "enumerate" and r.method == "enumerate"
    assert r.info["lemke"].status == Status.RAY_TERMINATION
    s = pympc.enumerate_solutions(p)
    assert s.kind == SetKind.FINITE and any(np.allclose(r.z, z, atol=1e-9) for z, _ in s.points)


def test_random_small_integer_problems_lemke_fails_are_decided(rng):
    """Random small integer LCPs/HLCPs: wherever Lemke alone ends without an answer, solve's answer is the truth."""
    rescued = 0
    for k in range(300):
        n = int(rng.integers(2, 6))
        if k % 2:
            p = LCP(rng.integers(-3, 4, (n, n)).astype(float), rng.integers(-3, 4, n).astype(float))
        else:
            p = HLCP(rng.integers(-3, 4, (n, n)).astype(float), rng.integers(-3, 4, (n, n)).astype(float),
                     rng.integers(-3, 4, n).astype(float))
        alone = pympc.solve(p, fallback=False, certify=False)
        if alone.success:
            continue
        r = pympc.solve(p)
        exists = pympc.enumerate_solutions(p).kind != SetKind.NONE
        assert r.success == exists and r.status in (Status.SOLVED, Status.INFEASIBLE), r.message
        if r.success:
            assert r.is_solution() and r.info["found_by"] in ("enumerate", "milp")
            rescued += 1
    assert rescued >= 10


def test_beyond_enumeration_the_exact_method_decides(monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules["pympc.complementarity.solve"], "ENUMERATION_LIMIT", 2)
    game = pympc.read_siconos(DATA / "lcp_CPS_3.dat")
    M = np.block([[game.M, np.zeros((4, 6))], [np.zeros((6, 4)), np.eye(6)]])   # 10 pairs: Lemke does not certify
    p = LCP(M, np.concatenate([game.q, np.ones(6)]))
    assert pympc.solve(p, fallback=False).status == Status.RAY_TERMINATION
    r = pympc.solve(p)
    assert r.success and r.is_solution() and r.info["found_by"] == "milp"


def test_unknown_method():
    with pytest.raises(pympc.SolverNotFound, match="available"):
        pympc.solve(LCP([[1.0]], [-1.0]), method="cplex")
