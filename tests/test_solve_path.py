"""``pympc.solve``'s one path (issue 28, 2a): what the old short path did for the default call, and the checks of
the general path, on every call; the default kernels give what the option-taking path gives, to the bit."""

import numpy as np
import pytest

import pympc
from pympc import HLCP, LCP, OptionError, ProblemError, SolverNotFound, Status
from pympc.complementarity.solve import METHODS


def _lcp(n, seed):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, n))
    return LCP(G @ G.T + 0.1 * n * np.eye(n), rng.uniform(-1.0, 1.0, n))


def test_names_callables_and_bad_methods():
    p = _lcp(4, 0)
    assert pympc.solve(p, method=np.str_("lemke")).success            # a str subclass names a method too
    assert pympc.solve(p, method=pympc.lemke).success
    for bad in ("nope", ["lemke"], 3):
        with pytest.raises(SolverNotFound):
            pympc.solve(p, method=bad)
    with pytest.raises(ProblemError):
        pympc.solve("not a problem")


@pytest.mark.parametrize("value", [-1.0, 0, float("nan"), "10", True])
def test_a_bad_fallback_time_limit_is_refused_on_every_call(value):
    with pytest.raises(OptionError, match="fallback_time_limit"):
        pympc.solve(_lcp(3, 1), fallback_time_limit=value)


def test_good_fallback_time_limits_pass():
    for value in (None, 5, 2.5, float("inf")):
        assert pympc.solve(_lcp(3, 1), fallback_time_limit=value).success


def test_a_replaced_lemke_is_the_one_solve_calls():
    calls = []
    original = METHODS["lemke"]

    def wrapped(problem, **options):
        calls.append(options)
        return original(problem, **options)

    METHODS.register("lemke", wrapped)
    try:
        assert pympc.solve(_lcp(3, 2)).success and calls == [{}]
    finally:
        METHODS.register("lemke", original)


def test_the_fallback_decides_a_ray():
    # LCP(-1, -1): w = -z - 1 >= 0 has no z >= 0; Lemke ends on a ray, enumeration proves there is no solution
    assert pympc.solve(LCP([[-1.0]], [-1.0])).status == Status.INFEASIBLE
    # 10 pairs (above Lemke's own certificate, n <= 8): the fallback's enumeration decides
    r = pympc.solve(LCP(-np.eye(10), -np.ones(10)))
    assert r.status == Status.INFEASIBLE and r.method == "enumerate" and r.info["lemke"].method == "lemke"
    assert pympc.solve(LCP([[-1.0]], [-1.0]), certify=False).status == Status.RAY_TERMINATION


@pytest.mark.parametrize("seed", range(6))
def test_default_kernels_give_the_option_path_to_the_bit(seed):
    # the two-argument kernels (LCP, and an HLCP with a diagonal A) against the general path, which an option
    # (at its default value) selects
    p = _lcp(3 + 4 * seed, seed)
    a = np.random.default_rng(seed).uniform(0.5, 2.0, p.n)
    for prob in (p, HLCP(np.diag(a), -a[:, None] * p.M, a * p.q)):
        fast, general = pympc.lemke(prob), pympc.lemke(prob, tol=1e-9)
        assert fast.status == general.status == Status.SOLVED
        assert fast.pivots == general.pivots
        assert fast.x.tobytes() == general.x.tobytes() and fast.y.tobytes() == general.y.tobytes()
        for k in (0, 1):
            np.testing.assert_array_equal(fast.info["log"][k], general.info["log"][k])
        assert prob.is_solution(*((fast.z, fast.w) if isinstance(prob, LCP) else (fast.x, fast.y)))


def test_a_long_pivot_log_grows_and_is_complete():
    # the log starts with room for 4n + 16 pivots and doubles: a problem taking more pivots keeps them all
    n = 8
    M = np.tril(np.full((n, n), 2.0), -1) + np.eye(n)    # Murty's problem: 2^n pivots from q = -e
    r = pympc.lemke(LCP(M, -np.ones(n)))
    entering, leaving = r.info["log"]
    assert r.success and r.pivots == len(entering) == len(leaving) == 2 ** n
    assert leaving[-1] == 2 * n                            # the last pivot is z0 leaving
    # and the pivot limit still cuts it at max_pivots + 1
    cut = pympc.lemke(LCP(M, -np.ones(n)), max_pivots=100)
    assert cut.status == Status.PIVOT_LIMIT and len(cut.info["log"][0]) == 101
