"""Pyomo integration: models, the SolverFactory plugins, the IPOPT bridge, MILP, cross-checks."""

import itertools

import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.mpec import Complementarity, complements
from pyomo.opt import TerminationCondition
from scipy.optimize import approx_fprime

import pympc
from pympc import LCP, HLCP, ProblemError, SetKind, Status
from pympc.mpec import CompiledNLP, from_pyomo, milp, to_pyomo

from conftest import DATA, SICONOS, random_p_matrix


def user_lcp_model():
    """An LCP written the way a Pyomo user writes it (bounds in the complementarity, '0 <=', constants moved)."""
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, 1)
    m.z = pyo.Var(m.I)
    m.p = pyo.Param(initialize=6.0, mutable=True)
    m.c0 = Complementarity(expr=complements(m.z[0] >= 0, 2 * m.z[0] + m.z[1] - 5 >= 0))
    m.c1 = Complementarity(expr=complements(0 <= m.z[1], m.z[0] + 2 * m.z[1] >= m.p))
    return m


@pytest.mark.parametrize("solver", ["pympc.lemke", "pympc.milp", "pympc.ipopt"])
def test_plugins_solve_a_hand_written_model(solver):
    m = user_lcp_model()
    res = pyo.SolverFactory(solver).solve(m)
    assert pyo.check_optimal_termination(res)
    assert m.z[0].value == pytest.approx(4 / 3, abs=1e-9)
    assert m.z[1].value == pytest.approx(7 / 3, abs=1e-9)
    # the caller's model is not transformed
    assert m.component("mpec_bound") is None
    assert all(c.active for c in m.component_data_objects(Complementarity))


def test_hand_written_hlcp_model_with_equalities():
    # x - 2 y = -1, 0 <= x ⊥ y >= 0  ->  x = 0, y = 1/2; plus a free variable defined by an equality
    m = pyo.ConcreteModel()
    m.x, m.y, m.s = pyo.Var(), pyo.Var(), pyo.Var()
    m.eq = pyo.Constraint(expr=m.x - 2 * m.y == -1)
    m.def_s = pyo.Constraint(expr=m.s == m.x + m.y)
    m.cc = Complementarity(expr=complements(m.x >= 0, m.y >= 0))
    read = from_pyomo(m)
    assert read.problem.n == 1
    res = pyo.SolverFactory("pympc.lemke").solve(m)
    assert res.solver.termination_condition == TerminationCondition.optimal
    assert (m.x.value, m.y.value, m.s.value) == pytest.approx((0.0, 0.5, 0.5), abs=1e-12)


def test_round_trip_problem_model_problem(rng):
    for _ in range(20):
        n = int(rng.integers(1, 7))
        p = LCP(random_p_matrix(rng, n, "pd_skew"), rng.uniform(-2, 2, n))
        for prob in (p, p.to_hlcp()):
            read = from_pyomo(to_pyomo(prob))
            r = pympc.solve(read.problem)
            assert r.success
            u = read.values(r.x, r.y)
            z = u if isinstance(prob, LCP) else u[1::2]  # HLCP model variables are discovered as x0, y0, x1, y1, ...
            np.testing.assert_allclose(z, pympc.solve(p).z, atol=1e-8)


def test_ray_is_not_optimal_and_infeasible_is_infeasible():
    from pympc.mpec import pyomo_status

    # (from_pyomo's HLCP of a model is not the LCP it was written from, so Lemke's path differs:
    # test the map itself, then a proved infeasibility through the plugin)
    for status in Status:
        term = pyomo_status(status)[1]
        assert (term == TerminationCondition.optimal) == (status == Status.SOLVED)
    assert pyomo_status(Status.RAY_TERMINATION)[1] == TerminationCondition.other
    res = pyo.SolverFactory("pympc.lemke").solve(to_pyomo(LCP([[-1.0, -1.0], [0.0, 1.0]], [-1.0, 1.0])))
    assert res.solver.termination_condition == TerminationCondition.infeasible


@pytest.mark.parametrize("q0", [2.0, -1.0])
def test_zero_rows_make_valid_models_for_every_solver(q0):
    """A zero row of M makes w_0 = q_0 a constant side: solvable when q_0 > 0, infeasible when q_0 < 0."""
    p = LCP([[0.0, 0.0], [1.0, 2.0]], [q0, -2.0])
    feasible = q0 >= 0
    for name in ("pympc.lemke", "pympc.milp", "pympc.ipopt"):
        m = to_pyomo(p)
        res = pyo.SolverFactory(name).solve(m)
        assert pyo.check_optimal_termination(res) == feasible, (name, res.solver.message)
        if feasible:
            z = np.array([m.z[i].value for i in range(2)])
            assert p.is_solution(z), name
    # an all-zero row of [A B] is the constant row 0 == c_0: IPOPT's route proves infeasibility without a solve
    m = to_pyomo(HLCP(np.array([[0.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 0.0], [1.0, 1.0]]), np.array([1.0, 1.0])))
    res = pyo.SolverFactory("pympc.ipopt").solve(m)
    assert res.solver.termination_condition == TerminationCondition.infeasible
    assert "eq[0]" in res.solver.message


def test_tee_prints_pivot_log(capsys):
    pyo.SolverFactory("pympc.lemke").solve(to_pyomo(LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]).to_hlcp()), tee=True)
    assert "enters" in capsys.readouterr().out


def test_from_pyomo_errors_name_the_component():
    m = user_lcp_model()
    m.bad = Complementarity(expr=complements(m.z[0] >= 0, m.z[0] * m.z[1] >= 1))
    with pytest.raises(ProblemError, match="bad.*not linear"):
        from_pyomo(m)
    m = user_lcp_model()
    m.ineq = pyo.Constraint(expr=m.z[0] <= 3)
    with pytest.raises(ProblemError, match="ineq is an inequality"):
        from_pyomo(m)
    m = user_lcp_model()
    m.r = Complementarity(expr=complements(pyo.inequality(0, m.z[0], 1), m.z[1] >= 0))
    with pytest.raises(ProblemError, match="ranged"):
        from_pyomo(m)
    m = user_lcp_model()
    m.z[1].setub(4.0)
    with pytest.raises(ProblemError, match=r"z\[1\] has bounds"):
        from_pyomo(m)
    m = user_lcp_model()
    m.o = pyo.Objective(expr=m.z[0])
    with pytest.raises(ProblemError, match="objective o is not constant"):
        from_pyomo(m)
    m = user_lcp_model()
    m.free = pyo.Var()
    m.e = pyo.Constraint(expr=m.free + m.z[0] == 1)
    m.e2 = pyo.Constraint(expr=m.free - m.z[0] == 1)
    with pytest.raises(ProblemError, match="not determined"):
        from_pyomo(m)
    with pytest.raises(ProblemError, match="no active Complementarity"):
        from_pyomo(pyo.ConcreteModel())


def hs71():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4), bounds=(1, 5), initialize={0: 1, 1: 5, 2: 5, 3: 1})
    m.o = pyo.Objective(expr=m.x[0] * m.x[3] * (m.x[0] + m.x[1] + m.x[2]) + m.x[2])
    m.c1 = pyo.Constraint(expr=m.x[0] * m.x[1] * m.x[2] * m.x[3] >= 25)
    m.c2 = pyo.Constraint(expr=sum(m.x[i] ** 2 for i in range(4)) == 40)
    return m


def test_ipopt_hock_schittkowski_71():
    m = hs71()
    res = pyo.SolverFactory("pympc.ipopt").solve(m)
    assert pyo.check_optimal_termination(res)
    assert pyo.value(m.o) == pytest.approx(17.0140173, abs=1e-6)
    np.testing.assert_allclose([m.x[i].value for i in range(4)], [1.0, 4.7429994, 3.8211503, 1.3794082], atol=1e-6)


def test_ipopt_rosenbrock_on_the_unit_disk():
    m = pyo.ConcreteModel()
    m.x, m.y = pyo.Var(initialize=-1.0), pyo.Var(initialize=0.5)
    m.o = pyo.Objective(expr=(1 - m.x) ** 2 + 100 * (m.y - m.x ** 2) ** 2)
    m.disk = pyo.Constraint(expr=m.x ** 2 + m.y ** 2 <= 1)
    res = pyo.SolverFactory("pympc.ipopt").solve(m, options={"tol": 1e-10})
    assert pyo.check_optimal_termination(res)
    assert (m.x.value, m.y.value) == pytest.approx((0.7864, 0.6177), abs=1e-4)
    assert m.x.value ** 2 + m.y.value ** 2 == pytest.approx(1.0, abs=1e-8)  # active constraint


def test_ipopt_maximisation_and_bad_options():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 2))
    m.o = pyo.Objective(expr=pyo.sin(m.x) + 0.1 * m.x, sense=pyo.maximize)
    assert pyo.check_optimal_termination(pyo.SolverFactory("pympc.ipopt").solve(m))
    assert m.x.value == pytest.approx(np.arccos(-0.1), abs=1e-7)
    from pympc.mpec import IpoptSolver

    with pytest.raises(ValueError, match="bogus"):          # Pyomo's own refusal of an unknown option
        IpoptSolver(bogus=1)
    with pytest.raises(pympc.OptionError, match="no_such_option"):
        pyo.SolverFactory("pympc.ipopt").solve(m, options={"no_such_option": 1})
    for bad in (0, -1.0, "soon"):                            # a standard keyword: Pyomo's own error
        with pytest.raises(ValueError, match="time_limit"):
            pyo.SolverFactory("pympc.ipopt").solve(m, timelimit=bad)


def test_ipopt_time_limit_is_the_budget_of_the_whole_mpec_solve(rng, monkeypatch):
    """Every IPOPT call of the continuation gets what is left of timelimit, not timelimit again."""
    from pympc.mpec import ipopt as bridge

    given, real = [], bridge.solve_nlp

    def recording(nlp, u0, options, *args):
        given.append(options["max_wall_time"])
        return real(nlp, u0, options, *args)

    monkeypatch.setattr(bridge, "solve_nlp", recording)
    monkeypatch.setattr(bridge, "_linear_polish", lambda *args, **kw: None)   # the polish goes through IPOPT too
    p = LCP(random_p_matrix(rng, 6, "spd"), rng.uniform(-1, 1, 6))
    res = pyo.SolverFactory("pympc.ipopt").solve(to_pyomo(p), timelimit=50.0)
    assert pyo.check_optimal_termination(res) and len(given) >= 2
    assert given[0] < 50.0 and all(b < a for a, b in zip(given, given[1:]))
    out = pyo.SolverFactory("pympc.ipopt").solve(to_pyomo(p), timelimit=1e-9)
    assert out.solver.termination_condition == TerminationCondition.maxTimeLimit
    assert "wall time" in out.solver.message
    assert not pyo.check_optimal_termination(out)


def test_nlp_derivatives_match_finite_differences(rng):
    m = hs71()
    m.c3 = pyo.Constraint(expr=pyo.exp(0.1 * m.x[0]) * pyo.log(m.x[1]) + m.x[2] * m.x[3] + 3 * m.x[0] <= 50)
    nlp = CompiledNLP(m)
    for _ in range(5):
        u = rng.uniform(1, 5, nlp.n)
        np.testing.assert_allclose(nlp.gradient(u), approx_fprime(u, nlp.objective, 1e-7), rtol=1e-5, atol=1e-5)
        J = np.zeros((nlp.m, nlp.n))
        r, c = nlp.jacobianstructure()
        np.add.at(J, (r, c), nlp.jacobian(u))
        Jfd = np.array([approx_fprime(u, lambda v, i=i: nlp.constraints(v)[i], 1e-7) for i in range(nlp.m)])
        np.testing.assert_allclose(J, Jfd, rtol=1e-5, atol=1e-5)
        lam = rng.standard_normal(nlp.m)
        H = np.zeros((nlp.n, nlp.n))
        r, c = nlp.hessianstructure()
        assert np.all(r >= c)  # lower triangle
        np.add.at(H, (r, c), nlp.hessian(u, lam, 0.7))
        H = H + np.tril(H, -1).T
        lag_grad = lambda v: 0.7 * nlp.gradient(v) + J_of(nlp, v).T @ lam  # noqa: E731
        Hfd = np.array([approx_fprime(u, lambda v, i=i: lag_grad(v)[i], 1e-6) for i in range(nlp.n)])
        np.testing.assert_allclose(H, Hfd, rtol=1e-4, atol=1e-4)


def J_of(nlp, u):
    J = np.zeros((nlp.m, nlp.n))
    r, c = nlp.jacobianstructure()
    np.add.at(J, (r, c), nlp.jacobian(u))
    return J


def test_nlp_rows_agree_with_pyomo_on_every_expression_shape(rng):
    """Linear nodes, Param and fixed-variable coefficients, products of linear factors (shared and not),
    monomials, squares and nonlinear factors: the NLP's rows and derivatives equal Pyomo's own evaluation."""
    m = pyo.ConcreteModel()
    m.x, m.y, m.z = (pyo.Var(initialize=0.0) for _ in range(3))
    m.w = pyo.Var(initialize=1.5)
    m.w.fix()
    m.p = pyo.Param(initialize=2.5, mutable=True)
    e = m.x + m.y
    m.rows = pyo.ConstraintList()
    for expr in (m.p * m.x + 2 * m.y - 3 == 0, m.x + m.p * m.w * m.y + m.w >= 1,
                 (m.x + 2 * m.y - 1) * (3 * m.z + m.p) <= 5, (m.x - m.y) * m.z >= -10, 4 * m.x <= 7,
                 m.x * m.y + m.z >= 0, pyo.exp(m.x) * (m.y + 1) <= 30, m.x + m.x - 2 * m.y + m.y == 0.5,
                 e * e <= 9, (m.w * m.x + 1) * (m.p - m.y) >= -4, m.z * m.x <= 2,
                 (m.x + 2 * m.y - 1) * (3 * m.z - m.x + 0.5) <= 8, m.x + 3 * m.w + m.w - m.p * m.z >= -2,
                 (m.y - m.w) * (m.x + 2 * m.w) <= 6):
        m.rows.add(expr)
    m.o = pyo.Objective(expr=(m.x - 1) * (m.y - 2) + m.z ** 2 + m.p * m.x)
    nlp = CompiledNLP(m)
    assert nlp.n == 3 and nlp.m == len(m.rows)
    for _ in range(4):
        u = rng.uniform(-1, 1, nlp.n)
        nlp.load(u)
        g = nlp.constraints(u)
        for i, con in enumerate(nlp.constraints_data):
            lower, upper = pyo.value(con.lower), pyo.value(con.upper)
            if lower is not None:
                assert g[i] - nlp.cl[i] == pytest.approx(pyo.value(con.body) - lower, abs=1e-12)
            else:
                assert g[i] - nlp.cu[i] == pytest.approx(pyo.value(con.body) - upper, abs=1e-12)
        assert nlp.objective(u) == pytest.approx(pyo.value(m.o), abs=1e-12)
        Jfd = np.array([approx_fprime(u, lambda v, i=i: nlp.constraints(v)[i], 1e-7) for i in range(nlp.m)])
        np.testing.assert_allclose(J_of(nlp, u), Jfd, rtol=1e-5, atol=1e-5)
        lam = rng.standard_normal(nlp.m)
        H = np.zeros((nlp.n, nlp.n))
        r, c = nlp.hessianstructure()
        np.add.at(H, (r, c), nlp.hessian(u, lam, 0.7))
        H = H + np.tril(H, -1).T
        lag_grad = lambda v: 0.7 * nlp.gradient(v) + J_of(nlp, v).T @ lam  # noqa: E731
        Hfd = np.array([approx_fprime(u, lambda v, i=i: lag_grad(v)[i], 1e-6) for i in range(nlp.n)])
        np.testing.assert_allclose(H, Hfd, rtol=1e-4, atol=1e-4)


def test_ipopt_mpec_is_exactly_complementary_after_polish(rng):
    n = 20
    p = LCP(random_p_matrix(rng, n, "spd"), rng.uniform(-1, 1, n))
    m = to_pyomo(p)
    res = pyo.SolverFactory("pympc.ipopt").solve(m)
    assert pyo.check_optimal_termination(res)
    z = np.array([m.z[i].value for i in range(n)])
    w = p.M @ z + p.q
    assert np.abs(z * w).max() <= 1e-12
    np.testing.assert_allclose(z, pympc.solve(p).z, atol=1e-10)


def _box_mcp_by_faces(M, q, lo, hi):
    """All solutions of lo <= x <= hi ⊥ M x + q, by enumerating the 3^n faces (lower, upper, free)."""
    n = len(q)
    sols = []
    for faces in itertools.product(range(3), repeat=n):
        x = np.where(np.array(faces) == 0, lo, hi).astype(float)
        free = [i for i in range(n) if faces[i] == 2]
        if free:
            fixed = [i for i in range(n) if faces[i] != 2]
            x[free] = np.linalg.solve(M[np.ix_(free, free)], -(q[free] + M[np.ix_(free, fixed)] @ x[fixed]))
        F = M @ x + q
        ok = all((faces[i] == 0 and F[i] >= -1e-12) or (faces[i] == 1 and F[i] <= 1e-12)
                 or (faces[i] == 2 and lo[i] - 1e-12 <= x[i] <= hi[i] + 1e-12) for i in range(n))
        if ok:
            sols.append(x)
    return sols


def test_ipopt_box_mcp_is_exact_and_its_residual_is_honest(rng):
    """Box pairs (lb <= v <= ub ⊥ free expression) are polished and counted in the residual too."""
    for trial in range(6):
        n = 3
        M = random_p_matrix(rng, n, "spd")
        q = rng.uniform(-3, 3, n)
        lo, hi = np.zeros(n), np.ones(n)
        (expect,) = _box_mcp_by_faces(M, q, lo, hi)   # a P-matrix: exactly one solution
        m = pyo.ConcreteModel()
        m.I = pyo.RangeSet(0, n - 1)
        m.x = pyo.Var(m.I, initialize=0.5)
        m.c = Complementarity(m.I, rule=lambda m, i: complements(
            pyo.inequality(lo[i], m.x[i], hi[i]), sum(M[i, j] * m.x[j] for j in range(n)) + q[i]))
        res = pyo.SolverFactory("pympc.ipopt").solve(m)
        assert pyo.check_optimal_termination(res), res.solver.message
        x = np.array([m.x[i].value for i in range(n)])
        np.testing.assert_allclose(x, expect, atol=1e-10)
        assert res.pympc.complementarity <= 1e-12


def test_milp_lists_all_solutions_and_is_exact_when_bounded():
    p = LCP([[-1.0]], [1.0])  # z = 0 (w = 1) and z = 1 (w = 0)
    r = milp(p, all_solutions=True)
    assert sorted(float(z[0]) for z, _ in r.info["solutions"]) == [0.0, 1.0]
    h = HLCP([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], [1.0, 2.0])  # x + y = c: bounded polyhedron
    r = milp(h, all_solutions=True)
    assert r.info["exact"] and len(r.info["solutions"]) == 4
    s = pympc.enumerate_solutions(h)
    assert len(s.points) == 4


@pytest.mark.parametrize("path", [p for p in SICONOS if p.stem not in ("lcp_tobenna",)], ids=lambda p: p.stem)
def test_milp_agrees_with_enumeration_on_siconos(path):
    p = pympc.read_siconos(path)
    r = milp(p)
    if p.n <= 12:
        s = pympc.enumerate_solutions(p)
        assert (s.kind == SetKind.NONE) == (not r.success)
    if r.success:
        assert p.is_solution(r.z, r.w)


def test_crosscheck_agrees_on_p_matrix_problems(rng):
    for _ in range(5):
        n = int(rng.integers(2, 8))
        rep = pympc.crosscheck(LCP(random_p_matrix(rng, n, "spd"), rng.uniform(-1, 1, n)))
        assert rep.agree, rep.table()
        assert [a.success for a in rep.answers] == [True, True, True]


@pytest.mark.parametrize("name", ["lcp_CPS_2", "lcp_CPS_4", "lcp_deudeu", "lcp_ortiz", "lcp_trivial", "lcp_exp_murty"])
def test_crosscheck_agrees_on_siconos_unique_instances(name):
    rep = pympc.crosscheck(pympc.read_siconos(DATA / f"{name}.dat"))
    assert rep.agree, rep.table()


def test_crosscheck_explains_disagreement_on_problem_with_several_solutions():
    # bimatrix game: three equilibria; Lemke ends on a ray, the others find equilibria
    rep = pympc.crosscheck(pympc.read_siconos(DATA / "lcp_CPS_3.dat"))
    assert not rep.agree
    assert "lemke failed (RAY_TERMINATION) although solutions exist" in rep.explanation
    assert rep.solution_set.kind == SetKind.FINITE
    # two solutions: every answer must lie in the enumerated set, and they may differ
    rep = pympc.crosscheck(LCP([[-1.0]], [1.0]), solvers=("lemke", "milp"))
    assert "solution set: finite" in rep.explanation or rep.explanation.startswith("2 solver")
    assert rep.agree
    assert "AGREE" in rep.table()


def test_crosscheck_unknown_solver():
    with pytest.raises(pympc.SolverNotFound):
        pympc.crosscheck(LCP([[1.0]], [-1.0]), solvers=("cplex",))


def test_milp_big_m_is_proved_for_positive_definite_problems(rng):
    """An LCP with positive definite (non-symmetric) M, and an HLCP whose B⁻¹A is: the LP relaxation is unbounded,
    but the monotone bound makes the MILP exact, and every solution lies inside the bounds."""
    n = 6
    for _ in range(5):
        S = random_p_matrix(rng, n, "spd")
        K = rng.standard_normal((n, n))
        M = S + (K - K.T)                        # positive definite symmetric part
        p = LCP(M, rng.uniform(-2, 2, n))
        r = milp(p, formulation="bigm")
        assert r.success and r.info["exact"]
        s = pympc.solve(p)
        Ux, Uy = r.info["big_m"]                 # the HLCP of an LCP is (x, y) = (w, z)
        assert np.all(s.w <= Ux) and np.all(s.z <= Uy)
        np.testing.assert_allclose(r.z, s.z, atol=1e-8)
        # the same problem as an HLCP with the roles exchanged and a dense invertible mixing: B x + A y = c
        T = rng.standard_normal((n, n)) + 3 * np.eye(n)
        h = HLCP(T @ M, -T, T @ p.q)             # T(M x - y) = -T q  <=>  y = M x + q: x is z, y is w
        rh = milp(h, formulation="bigm")
        assert rh.success and rh.info["exact"]
        Ux, Uy = rh.info["big_m"]
        assert np.all(s.z <= Ux) and np.all(s.w <= Uy)
    # unbounded relaxation and not monotone either way: no finite bound is proved, and the flag says so
    r = milp(LCP([[0.0, 1.0], [1.0, 0.0]], [-1.0, -1.0]), formulation="bigm")
    assert r.success and not r.info["exact"]
    r = milp(LCP([[0.0, 1.0], [1.0, 0.0]], [-1.0, -1.0]))      # the default search needs no big-M: exact
    assert r.success and r.info["exact"] and r.info["formulation"] == "search"


def test_crosscheck_time_limit_leaves_an_undecided_milp_out_and_says_so():
    """A MILP that runs out of time is reported UNDECIDED and not counted as a disagreement; never a hang."""
    rng = np.random.default_rng(1050)
    n = 50
    G = rng.standard_normal((n, n))
    p = LCP(G @ G.T + 0.1 * n * np.eye(n), rng.uniform(-1, 1, n))   # the benchmark's n = 50: > 20 s for HiGHS
    rep = pympc.crosscheck(p, solvers=("lemke", "milp"), time_limit=1e-9)
    status = {a.solver: a.status for a in rep.answers}
    assert status == {"lemke": "SOLVED", "milp": "UNDECIDED"}
    assert rep.agree and "milp undecided" in rep.explanation
    only = pympc.crosscheck(p, solvers=("milp",), time_limit=1e-9)
    assert not only.agree and "no solver decided" in only.explanation


@pytest.mark.parametrize("size", [1e-8, 1e-4, 1.0, 1e4, 1e7])
def test_ipopt_answer_of_any_size_is_exact_and_accepted(rng, size):
    """The same LCP (and its HLCP) scaled so that its solution has size ``size``: round-off of 1e-16 |w| opposite
    z = 1e7 is a product of 1e-2, yet the answer is exact; IPOPT, given the problem's scale, solves every size
    and the relative residual accepts the answer, which is Lemke's."""
    M = random_p_matrix(rng, 12, "tri")
    q = rng.uniform(-1, 1, 12)
    p = LCP(M, q * size / (1 + np.abs(pympc.solve(LCP(M, q)).z).max()))
    for prob, var in ((p, "z"), (p.to_hlcp(), "y")):
        m = to_pyomo(prob)
        res = pyo.SolverFactory("pympc.ipopt").solve(m)
        assert pyo.check_optimal_termination(res), res.solver.message
        got, ref = np.array([m.component(var)[i].value for i in range(12)]), getattr(pympc.solve(prob), var)
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-11 * (1 + np.abs(ref).max()))
        assert res.pympc.complementarity <= 1e-13


def test_ipopt_is_exact_on_every_kind_of_p_matrix_problem(rng):
    """SPD, PD-plus-skew and triangular P-matrix LCPs, and HLCPs behind a dense mixing: IPOPT's answer is the
    unique solution (Lemke's), complementary to round-off."""
    solver = pyo.SolverFactory("pympc.ipopt")
    for k in range(30):
        n = int(rng.integers(2, 26))
        p = LCP(random_p_matrix(rng, n, ("spd", "pd_skew", "tri")[k % 3]), rng.uniform(-1, 1, n))
        m = to_pyomo(p)
        assert pyo.check_optimal_termination(solver.solve(m))
        z = np.array([m.z[i].value for i in range(n)])
        w = p.M @ z + p.q
        ref = pympc.solve(p).z
        np.testing.assert_allclose(z, ref, atol=1e-9 * (1 + np.abs(ref).max()))
        assert np.abs(z * w).max() <= 1e-13 * (1 + np.abs(z).max()) * (1 + np.abs(w).max())
    for _ in range(8):
        n = int(rng.integers(2, 12))
        M, q = random_p_matrix(rng, n, "pd_skew"), rng.uniform(-1, 1, n)
        T = rng.standard_normal((n, n)) + 3 * np.eye(n)
        h = HLCP(T @ M, -T, T @ q)
        m = to_pyomo(h)
        assert pyo.check_optimal_termination(solver.solve(m))
        x, y = (np.array([v[i].value for i in range(n)]) for v in (m.x, m.y))
        assert h.is_solution(x, y) and np.abs(x * y).max() <= 1e-13 * (1 + np.abs(x).max()) * (1 + np.abs(y).max())


@pytest.mark.parametrize("M, q", [([[0.01]], [1e-10]),
                                  ([[0.01, 0.0, 0.0], [0.5, 2.0, 0.3], [0.0, -0.3, 1.0]], [1e-10, -1.0, 0.5])])
def test_ipopt_polish_mends_a_wrong_guess_on_a_nearly_degenerate_pair(M, q):
    """z_0 = 0, w_0 = 1e-10: the relaxed point cannot tell which side is zero and the smaller factor is the wrong
    one; the polish flips that pair instead of returning z_0 = -1e-8 as 'locally optimal'."""
    p = LCP(M, q)
    m = to_pyomo(p)
    res = pyo.SolverFactory("pympc.ipopt").solve(m)
    assert pyo.check_optimal_termination(res)
    z = np.array([m.z[i].value for i in range(p.n)])
    assert p.residual(z).negativity <= 1e-15 and p.residual(z).complementarity <= 1e-15
    np.testing.assert_allclose(z, pympc.solve(p).z, atol=1e-14)


def test_ipopt_mpec_answer_that_breaks_a_link_is_not_optimal(monkeypatch):
    """Without the direct polish, IPOPT's polish of that pair ends 'acceptable' with v == z broken by 1e-8: that
    point is refused; the relaxed point is reported with its true residual, which is not within the default
    mpec_tol; a looser mpec_tol accepts an answer within it."""
    from pympc.mpec import ipopt as bridge

    monkeypatch.setattr(bridge, "_linear_polish", lambda *args, **kw: None)
    m = to_pyomo(LCP([[0.01]], [1e-10]))
    res = pyo.SolverFactory("pympc.ipopt").solve(m)
    assert res.pympc.stages[-1] == ("polish", 1)            # IPOPT's polish: 'acceptable' only
    z = m.z[0].value
    assert z >= 0 and res.pympc.infeasibility <= 1e-12
    assert res.pympc.complementarity == pytest.approx(min(z, 0.01 * z + 1e-10) / (1 + max(z, 0.01 * z + 1e-10)))
    assert not pyo.check_optimal_termination(res) and "complementarity residual" in res.solver.message
    loose = to_pyomo(LCP([[0.01]], [1e-10]))
    res = pyo.SolverFactory("pympc.ipopt").solve(loose, options={"mpec_tol": 1e-6})
    assert res.solver.termination_condition == TerminationCondition.locallyOptimal   # IPOPT's 'acceptable'
    assert abs(loose.z[0].value) <= 1e-6
    assert res.pympc.complementarity <= 1e-6 and res.pympc.infeasibility <= 1e-6


def test_ipopt_solves_a_degenerate_event_hlcp_exactly():
    """The start of models/rotating_rod_bead.toml: x1 = y1 = 0 and x3 = y3 = 0 at the solution (a continuum of
    solutions around it).  Fixing one side of each pair leaves a singular system; the polish fixes both sides of
    the pairs that are both near zero and finds the exact point, where the relaxed one is 7e-7 off."""
    h = HLCP([[1, 0, 0], [0, 0.2, 1], [-0.4, 0, 1]], [[-1, 0, 0], [0, -1, -0.2], [-0.4, 1, 0]], [0, 0.4, 0])
    m = to_pyomo(h)
    res = pyo.SolverFactory("pympc.ipopt").solve(m)
    assert pyo.check_optimal_termination(res) and res.pympc.complementarity <= 1e-15
    x, y = (np.array([v[i].value for i in range(3)]) for v in (m.x, m.y))
    np.testing.assert_allclose(x, [0, 2, 0], atol=1e-14)
    np.testing.assert_allclose(y, 0, atol=1e-14)
    assert pympc.crosscheck(h).agree
