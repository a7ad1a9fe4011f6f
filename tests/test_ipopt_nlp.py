"""pympc.ipopt as a general NLP solver: Hock–Schittkowski problems, derivatives of every expression shape,
callback errors, overflow, deep expressions, time limits and the KKT check."""

import math

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from scipy.optimize import approx_fprime

import pympc  # noqa: F401  registers the solvers
from pympc.mpec import CompiledNLP
from pympc.mpec import ipopt as bridge

from hock_schittkowski import PROBLEMS


def solve(m, **kw):
    return SolverFactory("pympc.ipopt").solve(m, raise_exception_on_nonoptimal_result=False, **kw)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_hock_schittkowski(name):
    build, f_star = PROBLEMS[name]
    m = build()
    res = solve(m)
    assert res.termination_condition == TerminationCondition.convergenceCriteriaSatisfied, res.extra_info.message
    assert res.solution_status == SolutionStatus.optimal
    assert res.extra_info.kkt <= 1e-6
    f = pyo.value(m.o)
    if name == "hs055":
        # on the feasible line x1 = t: f(t) = 16/3 + t/3 + exp(t (1 - t)), t in [0, 1]; the book's start (x1 = 1)
        # lies at the local minimum t = 1 (f = 20/3, bound x1 <= 1 active, f'(1) = -2/3); the global one is t = 0
        assert min(abs(f - 19 / 3), abs(f - 20 / 3)) <= 1e-6
        t = m.x[1].value
        assert f == pytest.approx(16 / 3 + t / 3 + math.exp(t * (1 - t)), abs=1e-7)
    else:
        assert f == pytest.approx(f_star, rel=1e-6, abs=1e-6)
    assert res.incumbent_objective == pytest.approx(f, abs=1e-9)


def test_hs055_redundant_row_is_dropped_and_a_non_kkt_point_is_not_optimal(monkeypatch):
    m = PROBLEMS["hs055"][0]()
    nlp = CompiledNLP(m, drop_redundant=True)
    assert nlp.m == 5 and len(nlp.redundant) == 1 and not nlp.violated
    # without the drop, IPOPT's answer must pass the KKT check to be called optimal; a point that is not
    # stationary (IPOPT's point with its multipliers zeroed) is refused
    real = bridge.solve_nlp

    def wrong_multipliers(nlp, u0, options, *args):
        u, info = real(nlp, u0, options, *args)
        return u, {**info, "mult_g": np.zeros(nlp.m), "mult_x_L": np.zeros(nlp.n), "mult_x_U": np.zeros(nlp.n)}

    monkeypatch.setattr(bridge, "solve_nlp", wrong_multipliers)
    res = solve(PROBLEMS["hs071"][0]())   # a point that IS stationary: the least-squares multipliers show it
    assert res.solution_status == SolutionStatus.optimal and res.extra_info.kkt <= 1e-6
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 2), initialize=1.0)
    m.o = pyo.Objective(expr=(m.x - 5) ** 2)

    def not_stationary(nlp, u0, options, *args):   # IPOPT claims optimal at x = 1, where f' = -8 and no bound is active
        return np.array([1.0]), {"status": 0, "status_msg": b"optimal", "mult_g": np.zeros(0),
                                 "mult_x_L": np.zeros(1), "mult_x_U": np.zeros(1)}

    monkeypatch.setattr(bridge, "solve_nlp", not_stationary)
    res = solve(m)
    assert res.solution_status != SolutionStatus.optimal
    assert res.termination_condition == TerminationCondition.unknown
    assert "KKT" in res.extra_info.message


def test_an_exception_in_a_callback_ends_the_solve_and_is_named(monkeypatch):
    def broken(self, u, lagrange, obj_factor):
        raise ArithmeticError("hessian went wrong")

    monkeypatch.setattr(CompiledNLP, "hessian", broken)
    m = PROBLEMS["hs071"][0]()
    res = solve(m)
    assert res.termination_condition == TerminationCondition.error
    assert res.solution_status != SolutionStatus.optimal
    assert "hessian" in res.extra_info.message and "ArithmeticError: hessian went wrong" in res.extra_info.message
    legacy = pyo.SolverFactory("pympc.ipopt").solve(PROBLEMS["hs071"][0]())
    assert not pyo.check_optimal_termination(legacy) and "hessian went wrong" in legacy.solver.message


def test_overflow_gives_no_exception_and_ipopt_backtracks():
    # hs077 from far away: (x5 - 1)^6 and x3^4 x4^2 overflow Python floats in the first trial steps
    m = PROBLEMS["hs077"][0]()
    for i in m.I:
        m.x[i].set_value(1e60)
    res = solve(m)   # no OverflowError; whatever IPOPT makes of it, it is reported, not raised
    assert res.termination_condition in set(TerminationCondition)
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=800.0)
    m.o = pyo.Objective(expr=pyo.exp(m.x) + pyo.log(m.x + 1000) + (m.x - 1) ** 2)
    nlp = CompiledNLP(m)
    with np.errstate(all="ignore"):
        assert nlp.objective(np.array([800.0])) == np.inf
        assert np.isnan(nlp.objective(np.array([-2000.0]))) or nlp.objective(np.array([-2000.0])) == np.inf
    res = solve(m)   # IPOPT cannot start from a point where f is inf: an error status, not an exception
    assert res.termination_condition == TerminationCondition.error and "invalid number" in res.extra_info.message
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=-30.0)
    m.o = pyo.Objective(expr=pyo.exp(m.x) - 2 * m.x)   # f'' = e^-30: the first Newton step lands near x = 2e13
    res = solve(m)
    assert res.solution_status == SolutionStatus.optimal
    assert m.x.value == pytest.approx(math.log(2), abs=1e-6)


def _deep(kind, depth, x):
    e = x[0]
    for k in range(depth):
        if kind == "sum":        # x0 * 1e-3 + 0.999 * (x1 * 1e-3 + 0.999 * (...)): nested sums
            e = x[k % 3] * 1e-3 + 0.999 * e
        elif kind == "product":  # (((x0 (1 + 1e-5 x1)) (1 + 1e-5 x2)) ...): nested products
            e = e * (1 + 1e-5 * x[k % 3])
        else:                    # sin(sin(... + 1e-3 x1) + 1e-3 x2): nested functions
            e = pyo.sin(e) + 1e-3 * x[k % 3]
    return e


@pytest.mark.parametrize("kind", ["sum", "product", "function"])
def test_deep_and_long_expressions_compile_without_recursion_error(kind):
    # depth 10^4 (the depth of a whole-trajectory MPEC's expressions): no recursion on depth in building the
    # NLP, differentiating it or compiling its code; the derivatives of such chains are sums of thousands
    # of terms, which Python's compiler cannot take on one line either
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), initialize=0.5, bounds=(-2, 2))
    e = _deep(kind, 10_000, m.x)
    m.o = pyo.Objective(expr=(e - 0.3) ** 2 + sum((m.x[i] - 0.1 * i) ** 2 for i in range(3)))
    m.c = pyo.Constraint(expr=pyo.quicksum(m.x[k % 3] * m.x[(k + 1) % 3] for k in range(3000)) <= 1000)
    res = solve(m)
    assert res.solution_status == SolutionStatus.optimal, res.extra_info.message
    assert res.extra_info.kkt <= 1e-6
    nlp = CompiledNLP(m)
    u = np.array([m.x[i].value for i in range(3)])
    assert nlp.objective(u) == pytest.approx(pyo.value(m.o), rel=1e-12)
    fd = approx_fprime(u, nlp.objective, 1e-7)
    assert np.allclose(nlp.gradient(u), fd, rtol=1e-4, atol=1e-5)


def test_a_sum_of_many_terms_compiles_and_adds_in_order():
    # one sum node of 20000 variable terms: written 64 terms a line, added in the order of the terms
    from pympc.mpec._codegen import compile_functions

    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(20_000))
    e = sum(m.x[i] * m.x[(i + 1) % 20_000] for i in range(20_000))
    column = {id(m.x[i]): i for i in range(20_000)}
    (f,) = compile_functions([[e]], column)
    u = np.random.default_rng(1).standard_normal(20_000)
    expected = 0.0
    for i in range(20_000):
        expected = expected + u[i] * u[(i + 1) % 20_000]
    assert f(u)[0] == expected   # bit for bit: the same additions in the same order


def test_time_limit_covers_building_the_nlp():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(60), initialize=0.3)
    m.o = pyo.Objective(expr=pyo.exp(sum(pyo.sin(m.x[i]) * m.x[j] for i in range(60) for j in range(0, 60, 7))))
    res = solve(m, time_limit=1e-3, load_solutions=False)
    assert res.termination_condition == TerminationCondition.maxTimeLimit
    assert res.solution_status == SolutionStatus.noSolution
    assert "time limit" in res.extra_info.message


# -- derivatives on random expressions of every shape Pyomo builds ----------------------------------------------

def random_expression(rng, m, depth):
    """A random Pyomo expression over m.x (free), m.w (fixed), m.p (mutable Param), m.e (named Expression)."""
    if depth == 0 or rng.random() < 0.2:
        k = rng.integers(5)
        return [m.x[int(rng.integers(3))], m.w, m.p, m.e, float(rng.uniform(0.5, 2))][k]
    a = random_expression(rng, m, depth - 1)
    b = random_expression(rng, m, depth - 1)
    op = int(rng.integers(13))
    if op == 0:
        return a + b
    if op == 1:
        return a - 2.5 * b
    if op == 2:
        return a * b
    if op == 3:
        return a / (2.5 + b ** 2)
    if op == 4:
        return (1.5 + a ** 2) ** 0.5
    if op == 5:
        return a ** 3
    if op == 6:
        return -a
    if op == 7:
        return pyo.exp(0.3 * a)
    if op == 8:
        return pyo.log(1.5 + a ** 2)
    if op == 9:
        return pyo.sin(a) * pyo.cos(b) + pyo.tan(0.2 * a) + pyo.atan(b) + pyo.log10(2 + b ** 2)
    if op == 10:
        return pyo.quicksum([a, 2 * b, m.x[0], 3.0])        # a LinearExpression / sum node
    if op == 11:
        return (1.2 + pyo.sqrt(2 + a ** 2)) ** (0.5 + 0.1 * b ** 2)   # variable exponent
    return sum(c * m.x[i] for i, c in enumerate((1.5, -2.0, 0.5))) * a


def test_derivatives_match_finite_differences_on_random_expressions(rng):
    for trial in range(25):
        m = pyo.ConcreteModel()
        m.x = pyo.Var(range(3), initialize=0.0)
        m.w = pyo.Var(initialize=0.7)
        m.w.fix()
        m.p = pyo.Param(initialize=1.3, mutable=True)
        m.e = pyo.Expression(expr=m.x[1] * m.p + m.x[2] ** 2)
        m.rows = pyo.ConstraintList()
        for _ in range(3):
            m.rows.add(random_expression(rng, m, 3) + m.x[int(rng.integers(3))] <= 50)
        m.o = pyo.Objective(expr=random_expression(rng, m, 4) + 0.01 * m.x[0])
        nlp = CompiledNLP(m)
        u = rng.uniform(-1, 1, nlp.n)
        nlp.load(u)
        assert nlp.objective(u) == pytest.approx(pyo.value(m.o), rel=1e-12, abs=1e-12)
        g = nlp.constraints(u)
        for i, con in enumerate(nlp.constraints_data):
            assert g[i] - nlp.cu[i] == pytest.approx(pyo.value(con.body) - pyo.value(con.upper), rel=1e-10, abs=1e-10)
        h = 1e-6
        fd = lambda f, k: (f(u + h * np.eye(nlp.n)[k]) - f(u - h * np.eye(nlp.n)[k])) / (2 * h)  # noqa: E731
        grad = np.array([fd(nlp.objective, k) for k in range(nlp.n)])
        np.testing.assert_allclose(nlp.gradient(u), grad, rtol=1e-5, atol=1e-6)
        J = np.zeros((nlp.m, nlp.n))
        r, c = nlp.jacobianstructure()
        np.add.at(J, (r, c), nlp.jacobian(u))
        np.testing.assert_allclose(J, np.array([fd(nlp.constraints, k) for k in range(nlp.n)]).T, rtol=1e-5, atol=1e-6)
        lam = rng.standard_normal(nlp.m)
        H = np.zeros((nlp.n, nlp.n))
        r, c = nlp.hessianstructure()
        assert np.all(r >= c)
        np.add.at(H, (r, c), nlp.hessian(u, lam, 0.7))
        H = H + np.tril(H, -1).T

        def lag_grad(v):
            Jv = np.zeros((nlp.m, nlp.n))
            np.add.at(Jv, (r_j, c_j), nlp.jacobian(v))
            return 0.7 * nlp.gradient(v) + Jv.T @ lam

        r_j, c_j = nlp.jacobianstructure()
        Hfd = np.array([fd(lag_grad, k) for k in range(nlp.n)])
        np.testing.assert_allclose(H, Hfd, rtol=1e-4, atol=1e-5)


def test_a_function_pyomo_cannot_differentiate_is_a_clear_error():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=0.1)
    m.o = pyo.Objective(expr=pyo.tanh(m.x) + m.x ** 2)
    with pytest.raises(pympc.ProblemError, match="objective.*cannot differentiate"):
        solve(m)


def test_hessian_of_a_model_without_quadratic_rows_is_float(rng):
    """The accumulator of the quadratic rows' Hessian was int64 when there were none: adding the nonlinear
    parts raised inside cyipopt, which went on with unfilled values."""
    m = PROBLEMS["hs060"][0]()
    nlp = CompiledNLP(m)
    assert nlp._q[0].size == 0
    u = rng.uniform(1, 2, nlp.n)
    vals = nlp.hessian(u, np.ones(nlp.m), 1.0)
    assert vals.dtype == float and np.all(np.isfinite(vals)) and np.abs(vals).max() > 0
    approx = approx_fprime(u, nlp.objective, 1e-7)
    np.testing.assert_allclose(nlp.gradient(u), approx, rtol=1e-5)


def test_repeated_subexpressions_are_shared_with_the_same_value_and_derivatives(rng):
    """A formula that builds one subexpression afresh in every term (as HS088–HS092 do) is differentiated on
    its shared form: one node per distinct subexpression, the same value, exact derivatives."""

    from pympc.mpec._codegen import share_subexpressions

    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), initialize=0.3, bounds=(-2, 2))
    sub = lambda: pyo.exp(-(m.x[0] ** 2 + m.x[1] * m.x[2])) / (1 + m.x[2] ** 2)  # noqa: E731
    e = sum((k + 1) * sub() * sub() + pyo.sin(sub()) for k in range(60))

    def distinct(expr):
        seen, stack = set(), [expr]
        while stack:
            n = stack.pop()
            if id(n) in seen or n.__class__ in (int, float) or not n.is_expression_type():
                continue
            seen.add(id(n))
            stack.extend(n.args)
        return len(seen)

    s = share_subexpressions(e)
    assert distinct(e) > 60 * distinct(sub()) and distinct(s) < 4 * distinct(sub()) + 3 * 60
    for _ in range(5):
        for i in range(3):
            m.x[i].set_value(float(rng.uniform(-1, 1)))
        assert pyo.value(s) == pytest.approx(pyo.value(e), rel=1e-13)
    m.o = pyo.Objective(expr=e)
    nlp = CompiledNLP(m)
    u = rng.uniform(-1, 1, nlp.n)
    h = 1e-6
    fd = lambda f, k: (f(u + h * np.eye(nlp.n)[k]) - f(u - h * np.eye(nlp.n)[k])) / (2 * h)  # noqa: E731
    np.testing.assert_allclose(nlp.gradient(u), [fd(nlp.objective, k) for k in range(nlp.n)], rtol=1e-6, atol=1e-7)
    H = np.zeros((nlp.n, nlp.n))
    r, c = nlp.hessianstructure()
    np.add.at(H, (r, c), nlp.hessian(u, np.zeros(0), 1.0))
    H = H + np.tril(H, -1).T
    np.testing.assert_allclose(H, np.array([fd(nlp.gradient, k) for k in range(nlp.n)]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_redundant_equalities_are_found_among_many_rows_of_a_chain(seed):
    """Trajectory-like equalities (each row brings the next variable) with planted combinations: exactly the
    dependent rows go (as many as the rank says), a combination with a different right-hand side is
    reported violated, and the rows kept have full rank."""
    rng = np.random.default_rng(seed)
    n = 300
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(n + 2), initialize=0.0)
    m.rows = pyo.ConstraintList()
    A, b = [], []
    for k in range(n):                         # x[k+1] = a x[k] + c x[k-1] + d: one new variable a row
        a = np.zeros(n + 2)
        a[k + 1], a[k] = 1.0, -rng.uniform(0.5, 1.5)
        if k:
            a[k - 1] = -rng.uniform(-0.5, 0.5)
        A.append(a), b.append(rng.uniform(-1, 1))
    planted = rng.choice(n, size=(3, 4), replace=False)
    for i, group in enumerate(planted):        # combinations of rows far apart: redundant, the last violated
        w = rng.uniform(0.5, 2.0, 4)
        A.append(w @ np.array(A)[group]), b.append(float(w @ np.array(b)[group]) + (0.5 if i == 2 else 0.0))
    for a, rhs in zip(A, b):
        nz = np.flatnonzero(a)
        m.rows.add(sum(float(a[j]) * m.x[int(j)] for j in nz) == rhs)
    m.o = pyo.Objective(expr=sum(m.x[i] ** 2 for i in range(n + 2)))
    nlp = CompiledNLP(m, drop_redundant=True)
    rank = np.linalg.matrix_rank(np.array(A))
    assert rank == n and len(nlp.redundant) + len(nlp.violated) == len(A) - rank == 3
    assert len(nlp.violated) == 1 and len(nlp.redundant) == 2
    kept = np.zeros((nlp.m, nlp.n))
    r, c = nlp.jacobianstructure()
    np.add.at(kept, (r, c), nlp.jacobian(np.zeros(nlp.n)))
    assert np.linalg.matrix_rank(kept) == nlp.m == rank


def test_ipopt_runs_with_one_openblas_thread_and_restores_the_count(monkeypatch):
    # NumPy's OpenBLAS (the wheel's) is found; inside a solve every bundled OpenBLAS has one thread, after it the
    # count it had before (its second thread spun while MUMPS worked: twice the CPU time of a FESD fit's IPOPT)
    libs = bridge._openblas_threads()
    if not libs:                                       # pragma: no cover - a NumPy built against another BLAS
        pytest.skip("NumPy and SciPy have no bundled scipy-openblas here")
    orig = [get() for get, _ in libs]
    for _, put in libs:
        put(2)
    try:
        _solve_and_see(libs, monkeypatch)
    finally:
        for (_, put), n in zip(libs, orig):
            put(n)


def _solve_and_see(libs, monkeypatch):
    seen = []
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=3.0)
    m.obj = pyo.Objective(expr=(m.x - 1.0) ** 2)
    nlp = CompiledNLP(m)
    objective = nlp.objective

    def spy(u):
        seen.append([get() for get, _ in libs])
        return objective(u)
    monkeypatch.setattr(nlp, "objective", spy)
    u, info = bridge.solve_nlp(nlp, np.array([3.0]), {})
    assert info["status"] == 0 and abs(u[0] - 1.0) < 1e-8
    assert seen and all(s == [1] * len(libs) for s in seen)
    assert [get() for get, _ in libs] == [2] * len(libs)


def test_a_stop_test_of_the_iterates_ends_the_solve_at_that_iterate():
    """solve_nlp's ``stop(x, iteration)`` sees IPOPT's iterates; True ends the solve there (status 5, the iterate
    returned, ``info["stopped"]``).  Oracle: the iterates of the same solve run to the end (a stop that never
    answers True, the answer of the solve without one); an exception in the test is named like a callback's."""
    nlp = CompiledNLP(PROBLEMS["hs071"][0]())
    u0 = nlp.start()
    seen = {}

    def watch(x, k):
        seen[k] = x.copy()
        return False
    full, info = bridge.solve_nlp(nlp, u0, {}, stop=watch)
    plain, pinfo = bridge.solve_nlp(nlp, u0, {})
    assert info["status"] == pinfo["status"] == 0 and info["stopped"] is pinfo["stopped"] is None
    assert np.array_equal(full, plain) and len(seen) > 3 and min(seen) == 0
    u, info = bridge.solve_nlp(nlp, u0, {}, stop=lambda x, k: k == 2)
    assert info["status"] == 5 and info["stopped"] == 2
    assert np.array_equal(u, seen[2]) and not np.allclose(u, full, atol=1e-6)

    def broken(x, k):
        raise ValueError("no test today")
    u, info = bridge.solve_nlp(nlp, u0, {}, stop=broken)
    assert info["status"] == bridge.CALLBACK_ERROR
    assert b"in the stop callback" in info["status_msg"] and b"no test today" in info["status_msg"]
