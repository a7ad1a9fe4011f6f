"""Every modelling feature a pympc solver does not handle is refused by the solver's own check, or honoured
(issue 25): variable domains, strict bounds, objectives, nonlinear rows, bounds and component types, for
``pympc.lemke``, ``pympc.milp`` and ``pympc.ipopt`` through both of Pyomo's factories."""

import pyomo.environ as pyo
from pyomo.common.collections import ComponentMap
import pytest
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import SolutionStatus
from pyomo.mpec import Complementarity, complements

import pympc
from pympc.errors import ProblemError

SOLVERS = ["pympc.lemke", "pympc.milp", "pympc.ipopt"]
LINEAR = ["pympc.lemke", "pympc.milp"]
DISCRETE = [pyo.Integers, pyo.Binary, pyo.NonNegativeIntegers, pyo.PositiveIntegers, pyo.NonPositiveIntegers,
            pyo.Boolean, "set"]
EXACT = (4 / 3, 7 / 3)   # the solution of LCP([[2, 1], [1, 2]], [-5, -6])


def lcp(domain=pyo.Reals):
    m = pyo.ConcreteModel()
    m.z = pyo.Var([0, 1], domain=domain, initialize=1.0)
    m.c0 = Complementarity(expr=complements(m.z[0] >= 0, 2 * m.z[0] + m.z[1] - 5 >= 0))
    m.c1 = Complementarity(expr=complements(m.z[1] >= 0, m.z[0] + 2 * m.z[1] - 6 >= 0))
    return m


def solve(name, m, legacy=False):
    if legacy:
        return pyo.SolverFactory(name).solve(m)
    return SolverFactory(name).solve(m, raise_exception_on_nonoptimal_result=False)


def assert_exact(m):
    assert (m.z[0].value, m.z[1].value) == pytest.approx(EXACT, abs=1e-9)


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("domain", DISCRETE, ids=lambda d: getattr(d, "name", d))
@pytest.mark.parametrize("name", SOLVERS)
def test_discrete_domains_are_refused_by_every_solver(name, domain, legacy):
    # the class: integrality that a continuous solver would ignore (the issue: "optimal" at a non-integer point)
    if domain == "set":
        domain = pyo.Set(initialize=[0.0, 4 / 3, 2.5])
    m = lcp()
    m.z.domain = domain
    with pytest.raises(ProblemError, match=rf"^{name}: variable z\[0\] has domain .* discrete values"):
        solve(name, m, legacy)
    assert m.z[0].value == 1.0 and m.z[1].value == 1.0   # nothing loaded


@pytest.mark.parametrize("name", SOLVERS)
def test_a_fixed_integer_variable_is_no_decision_and_the_answer_is_exact(name):
    m = lcp()
    m.k = pyo.Var(domain=pyo.Integers)
    m.k.fix(5)
    m.c0.deactivate()
    m.c0b = Complementarity(expr=complements(m.z[0] >= 0, 2 * m.z[0] + m.z[1] - m.k >= 0))
    assert solve(name, m).solution_status == SolutionStatus.optimal
    assert_exact(m)


def test_an_integer_nlp_is_refused_by_ipopt():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.Integers, initialize=0.0)
    m.o = pyo.Objective(expr=(m.x - 0.5) ** 2)
    with pytest.raises(ProblemError, match=r"pympc.ipopt: variable x has domain Integers"):
        solve("pympc.ipopt", m)


@pytest.mark.parametrize("domain", [pyo.PositiveReals, pyo.NegativeReals])
@pytest.mark.parametrize("name", LINEAR)
def test_strict_bounds_are_refused_by_the_linear_solvers(name, domain):
    m = lcp(domain)
    with pytest.raises(ProblemError, match=rf"{name}: variable z\[0\] has domain {domain.name}, whose .* strict"):
        solve(name, m)


def test_strict_bounds_are_checked_on_ipopts_answer():
    # inside the open domain: the answer is exact and optimal
    m = lcp(pyo.PositiveReals)
    assert solve("pympc.ipopt", m).solution_status == SolutionStatus.optimal
    assert_exact(m)
    # min x over x > 0 has no minimizer: whatever IPOPT returns at the bound is not called optimal in the domain
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.PositiveReals, initialize=1.0)
    m.o = pyo.Objective(expr=m.x)
    res = solve("pympc.ipopt", m)
    assert res.solution_status != SolutionStatus.optimal or m.x.value > 0
    from pympc.mpec.checks import domain_violations
    assert [v.name for v, _ in domain_violations(ComponentMap([(m.x, 0.0)]))] == ["x"]
    assert domain_violations(ComponentMap([(m.x, 1e-300)])) == []


@pytest.mark.parametrize("name", LINEAR)
def test_objectives_rows_and_bounds_the_linear_solvers_cannot_honour(name):
    m = lcp()
    m.o = pyo.Objective(expr=m.z[0] + m.z[1])        # an objective where none is expected
    with pytest.raises(ProblemError, match="objective o is not constant"):
        solve(name, m)
    m.o.deactivate()
    m.k = pyo.Objective(expr=3.0)                      # a constant one changes nothing
    assert solve(name, m).solution_status == SolutionStatus.optimal
    assert_exact(m)
    m = lcp()
    m.c1.deactivate()
    m.c2 = Complementarity(expr=complements(m.z[1] >= 0, m.z[0] * m.z[1] + 2 * m.z[1] - 6 >= 0))   # nonlinear side
    with pytest.raises(ProblemError, match=r"complementarity c2 \(second side\) is not linear"):
        solve(name, m)
    m = lcp()
    m.w = pyo.Var()
    m.e = pyo.Constraint(expr=m.w ** 2 == m.z[0])                                                  # nonlinear row
    with pytest.raises(ProblemError, match="constraint e is not linear"):
        solve(name, m)
    m = lcp()
    m.g = pyo.Constraint(expr=m.z[0] <= 10)                                                        # an inequality
    with pytest.raises(ProblemError, match="constraint g is an inequality"):
        solve(name, m)
    m = lcp()
    m.z[1].setub(2.0)                                                                              # a bound
    with pytest.raises(ProblemError, match=r"variable z\[1\] has bounds"):
        solve(name, m)


def test_ipopt_honours_what_the_linear_solvers_refuse():
    # a nonlinear complementarity side, bounds and an objective: min (z0 - 1)^2 + (z1 - 2)^2 over 0 <= z0 <= 1,
    # 0 <= z1 ⊥ z1^2 - z0 >= 0.  Either z1 = 0 (then z0 = 0, f = 5) or z1 = sqrt(z0), where f decreases up to
    # the bound z0 = 1: the answer is (1, 1), f = 1
    m = lcp()
    m.c0.deactivate()
    m.c1.deactivate()
    m.c = Complementarity(expr=complements(m.z[1] >= 0, m.z[1] ** 2 - m.z[0] >= 0))
    m.z[0].setlb(0.0)
    m.z[0].setub(1.0)
    m.o = pyo.Objective(expr=(m.z[0] - 1) ** 2 + (m.z[1] - 2) ** 2)
    res = solve("pympc.ipopt", m)
    assert res.solution_status == SolutionStatus.optimal, res.extra_info.message
    assert (m.z[0].value, m.z[1].value) == pytest.approx((1.0, 1.0), abs=1e-7)


def test_two_objectives_are_refused_by_ipopt():
    m = lcp()
    m.o1 = pyo.Objective(expr=m.z[0])
    m.o2 = pyo.Objective(expr=m.z[1])
    with pytest.raises(ProblemError, match="2 active objectives"):
        solve("pympc.ipopt", m)


def _disjunction(m):
    from pyomo.gdp import Disjunction
    m.d = Disjunction(expr=[[m.z[0] <= 1], [m.z[0] >= 2]])


def _logical(m):
    m.b = pyo.BooleanVar()
    m.lc = pyo.LogicalConstraint(expr=m.b.implies(m.b))


def _sos(m):
    m.s = pyo.SOSConstraint(var=m.z, sos=1)


def _dae(m):
    from pyomo.dae import ContinuousSet, DerivativeVar
    m.t = ContinuousSet(bounds=(0, 1))
    m.p = pyo.Var(m.t)
    m.dp = DerivativeVar(m.p, wrt=m.t)


@pytest.mark.parametrize("add, kind", [(_disjunction, "Disjunction"), (_logical, "BooleanVar|LogicalConstraint"),
                                       (_sos, "SOSConstraint"), (_dae, "ContinuousSet|DerivativeVar")])
@pytest.mark.parametrize("name", SOLVERS)
def test_component_types_a_solver_does_not_handle_are_refused(name, add, kind):
    m = lcp()
    add(m)
    with pytest.raises(ProblemError, match=rf"^{name}: component \w+ is a ({kind}), which {name} does not handle"):
        solve(name, m)


@pytest.mark.parametrize("name", SOLVERS)
def test_a_deactivated_block_with_such_components_is_ignored(name):
    m = lcp()
    m.side = pyo.Block()
    m.side.z = pyo.Var([0], domain=pyo.Integers)
    _disjunction(m.side)
    m.side.c = pyo.Constraint(expr=m.side.z[0] == m.z[0])
    m.side.deactivate()
    assert solve(name, m).solution_status == SolutionStatus.optimal
    assert_exact(m)


def test_from_pyomo_names_its_caller():
    from pympc.mpec import from_pyomo

    with pytest.raises(ProblemError, match=r"^pympc.mpec.from_pyomo: variable z\[0\] has domain Binary"):
        from_pyomo(lcp(pyo.Binary))
    assert pympc.PympcError in ProblemError.__mro__


@pytest.mark.parametrize("name", LINEAR)
def test_deep_linear_rows_are_read_without_recursion(name):
    # a linear side nested 20000 deep (0.5 (0.5 (... + z) + z)): Pyomo's recursive repn raised RecursionError
    m = lcp()
    e = 0
    for k in range(20_000):
        e = 0.5 * (e + m.z[k % 2] * 1e-4)
    m.c0.deactivate()
    m.c0b = Complementarity(expr=complements(m.z[0] >= 0, 2 * m.z[0] + m.z[1] - 5 + e - e >= 0))
    assert solve(name, m).solution_status == SolutionStatus.optimal
    assert_exact(m)


@pytest.mark.parametrize("limit", [float("nan"), -1.0, 0.0, "60", True])
def test_a_time_limit_that_is_not_a_positive_number_is_refused_by_name(limit):
    """NaN is no limit nowhere: every entry point that takes a time limit refuses it by name."""
    import pympc
    from pympc.errors import OptionError
    p = pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
    for call, name in ((lambda: pympc.crosscheck(p, time_limit=limit), "time_limit"),
                       (lambda: pympc.solve(p, method="milp", time_limit=limit), "time_limit"),
                       (lambda: pympc.solve(p, fallback_time_limit=limit), "fallback_time_limit")):
        with pytest.raises(OptionError, match=f"^{name} must be a number of seconds > 0"):
            call()
