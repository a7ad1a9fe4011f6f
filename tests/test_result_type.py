"""One result type for every complementarity method: an LCP's z, w are the HLCP's y, x themselves."""

import numpy as np
import pytest

import pympc
from pympc import HLCP, LCP, SetKind, Status
from pympc.complementarity.results import Result
from pympc.complementarity.solve import METHODS

from conftest import DATA, random_p_matrix


def _problems(rng):
    n = 4
    p = LCP(random_p_matrix(rng, n, "spd"), rng.uniform(-1, 1, n))
    A = rng.normal(size=(n, n)) + 3 * np.eye(n)
    h = HLCP(A, -A @ random_p_matrix(rng, n, "spd"), rng.uniform(-1, 1, n))
    return p, h


def test_old_names_are_the_one_class():
    assert pympc.LCPResult is Result and pympc.HLCPResult is Result and pympc.Result is Result
    p = LCP([[2.0]], [-4.0])
    z, w = np.array([2.0]), np.array([0.0])
    r = pympc.LCPResult(p, Status.SOLVED, "by hand", z, w)   # the old signature: the LCP's own (z, w)
    assert r.z is z and r.w is w and r.y is z and r.x is w and r.is_solution()


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_returns_the_one_type_with_views(method, rng):
    p, h = _problems(rng)
    r = pympc.solve(p, method=method)
    assert type(r) is Result and r.success, (method, r.message)
    # z, w are y, x: the same memory, so a write through one is seen through the other
    assert np.shares_memory(r.z, r.y) and np.shares_memory(r.w, r.x)
    assert r.hlcp.is_solution(r.x, r.y) and p.is_solution(r.z, r.w)
    before = r.y.copy()
    r.z[0] += 1.0
    assert r.y[0] == before[0] + 1.0
    assert not r.is_solution()
    rh = pympc.solve(h, method=method)
    assert type(rh) is Result and rh.success and h.is_solution(rh.x, rh.y), (method, rh.message)
    assert rh.hlcp is h
    with pytest.raises(AttributeError, match="HLCP"):
        rh.z


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_one_type_on_an_infeasible_problem(method):
    p = LCP([[0.0, 0.0], [0.0, 1.0]], [-1.0, 1.0])   # w_0 = -1 for every z: no solution
    r = pympc.solve(p, method=method)
    assert type(r) is Result and not r.success
    assert np.shares_memory(r.z, r.y) and np.shares_memory(r.w, r.x)
    if method != "ipopt":
        assert r.status == Status.INFEASIBLE


def test_lemke_fallback_result_is_the_one_type():
    p = pympc.read_siconos(DATA / "lcp_CPS_3.dat")   # Lemke ends on a ray; enumeration decides
    r = pympc.solve(p)
    assert type(r) is Result and r.method == "enumerate" and type(r.info["lemke"]) is Result
    assert r.success and np.shares_memory(r.z, r.y) and p.is_solution(r.z, r.w)


@pytest.mark.parametrize("kind", ["LCP", "HLCP"])
def test_crosscheck_runs_over_the_whole_registry(kind, rng):
    p, h = _problems(rng)
    prob = p if kind == "LCP" else h
    rep = pympc.crosscheck(prob, solvers=tuple(METHODS))
    assert [a.solver for a in rep.answers] == list(METHODS)
    assert rep.agree and all(a.success for a in rep.answers), rep.table()
    hl = prob.to_hlcp() if kind == "LCP" else prob
    for a in rep.answers:
        assert hl.is_solution(a.x, a.y, 1e-8)


def test_crosscheck_over_the_registry_agrees_on_no_solution_and_on_several():
    none = pympc.crosscheck(LCP([[0.0, 0.0], [0.0, 1.0]], [-1.0, 1.0]), solvers=tuple(METHODS))
    assert none.agree and not any(a.success for a in none.answers) and none.solution_set.kind == SetKind.NONE
    two = pympc.crosscheck(LCP([[-1.0]], [1.0]), solvers=tuple(METHODS))   # z = 0 and z = 1
    assert two.agree and two.solution_set.kind == SetKind.FINITE, two.table()
    assert all(a.success for a in two.answers)
