"""pympc as a Pyomo solver: both factories, Pyomo's keywords, results, loading, tee, time limits, mpec_nlp."""

import numpy as np
import pyomo.environ as pyo
import pytest
from conftest import run_python
from pyomo.contrib.solver.common.factory import SolverFactory as NewFactory
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.util import NoOptimalSolutionError, NoSolutionError
from pyomo.mpec import Complementarity, complements

import pympc
from pympc import LCP
from pympc.mpec import IpoptSolver, LemkeSolver, MILPSolver, to_pyomo

SOLVERS = {"pympc.lemke": LemkeSolver, "pympc.milp": MILPSolver, "pympc.ipopt": IpoptSolver}


def lcp_model(p=6.0):
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, 1)
    m.z = pyo.Var(m.I)
    m.p = pyo.Param(initialize=p, mutable=True)
    m.c0 = Complementarity(expr=complements(m.z[0] >= 0, 2 * m.z[0] + m.z[1] - 5 >= 0))
    m.c1 = Complementarity(expr=complements(0 <= m.z[1], m.z[0] + 2 * m.z[1] >= m.p))
    return m


def answer(p):   # the unique solution of 2 z0 + z1 = 5, z0 + 2 z1 = p while both are positive
    return np.array([(10 - p) / 3, (2 * p - 5) / 3])


def values(m):
    return np.array([m.z[i].value for i in m.I], dtype=float)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_both_factories_give_the_solver_and_it_solves(name):
    new = NewFactory(name)
    assert isinstance(new, SOLVERS[name]) and new.available() and new.name == name
    m = lcp_model()
    res = new.solve(m)
    assert res.termination_condition == TerminationCondition.convergenceCriteriaSatisfied
    assert res.solution_status == SolutionStatus.optimal
    np.testing.assert_allclose(values(m), answer(6.0), atol=1e-9)
    assert res.solver_name == name and res.timing_info.wall_time > 0
    assert res.extra_info.message
    legacy = pyo.SolverFactory(name)
    assert isinstance(legacy, SOLVERS[name]) and legacy.available()
    m = lcp_model()
    lres = legacy.solve(m)
    assert pyo.check_optimal_termination(lres)
    np.testing.assert_allclose(values(m), answer(6.0), atol=1e-9)
    assert lres.solver.message == lres.pympc.message


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_context_manager_and_a_model_solved_twice(name):
    with pyo.SolverFactory(name) as opt:
        m = lcp_model()
        assert pyo.check_optimal_termination(opt.solve(m))
        np.testing.assert_allclose(values(m), answer(6.0), atol=1e-9)
        m.p = 7.0                                   # the same model again, changed: the new answer
        assert pyo.check_optimal_termination(opt.solve(m))
        np.testing.assert_allclose(values(m), answer(7.0), atol=1e-9)
    with NewFactory(name) as opt:
        m = lcp_model(5.5)
        opt.solve(m)
        opt.solve(m)
        np.testing.assert_allclose(values(m), answer(5.5), atol=1e-9)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_load_solutions_false_then_load(name):
    m = lcp_model()
    res = pyo.SolverFactory(name).solve(m, load_solutions=False)
    assert pyo.check_optimal_termination(res)
    assert np.isnan(values(m)).all()                 # nothing loaded yet
    assert len(res.solution) == 1
    m.solutions.load_from(res)
    np.testing.assert_allclose(values(m), answer(6.0), atol=1e-9)
    m = lcp_model()
    res = NewFactory(name).solve(m, load_solutions=False)
    assert np.isnan(values(m)).all()
    got = res.solution_loader.get_vars()
    np.testing.assert_allclose([got[m.z[0]], got[m.z[1]]], answer(6.0), atol=1e-9)
    res.solution_loader.load_vars()
    np.testing.assert_allclose(values(m), answer(6.0), atol=1e-9)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_standard_keywords_are_accepted_or_refused_by_pyomo(name):
    m = lcp_model()
    res = pyo.SolverFactory(name).solve(m, symbolic_solver_labels=True, report_timing=False, timelimit=30)
    assert pyo.check_optimal_termination(res)
    res = NewFactory(name).solve(lcp_model(), symbolic_solver_labels=True, threads=1, time_limit=30.0)
    assert res.solution_status == SolutionStatus.optimal
    with pytest.raises(ValueError, match="no_such_keyword"):
        NewFactory(name).solve(lcp_model(), no_such_keyword=1)
    with pytest.raises(ValueError, match="time_limit"):
        NewFactory(name).solve(lcp_model(), time_limit=-1.0)
    with pytest.raises(NotImplementedError):         # Pyomo's wrapper: no log files
        pyo.SolverFactory(name).solve(lcp_model(), logfile="log.txt")


def test_nonoptimal_results_raise_or_not_as_configured():
    infeasible = to_pyomo(LCP([[-1.0, -1.0], [0.0, 1.0]], [-1.0, 1.0]))
    for name in ("pympc.lemke", "pympc.milp"):
        with pytest.raises(NoOptimalSolutionError, match="provenInfeasible"):
            NewFactory(name).solve(infeasible)
        with pytest.raises(NoSolutionError):
            NewFactory(name).solve(infeasible, raise_exception_on_nonoptimal_result=False)
        res = NewFactory(name).solve(infeasible, raise_exception_on_nonoptimal_result=False, load_solutions=False)
        assert res.termination_condition == TerminationCondition.provenInfeasible
        assert res.solution_status == SolutionStatus.noSolution
        legacy = pyo.SolverFactory(name).solve(infeasible)     # legacy default: no exception, nothing loaded
        assert not pyo.check_optimal_termination(legacy)
        with pytest.raises(NoOptimalSolutionError):
            pyo.SolverFactory(name).solve(infeasible, raise_exception_on_nonoptimal_result=True)


def test_tee(capfd):
    NewFactory("pympc.lemke").solve(lcp_model(), tee=True)
    assert "Lemke on an LCP" in capfd.readouterr().out   # the pivot log
    NewFactory("pympc.lemke").solve(lcp_model())
    assert capfd.readouterr().out == ""
    NewFactory("pympc.ipopt").solve(lcp_model(), tee=True)
    assert "Ipopt" in capfd.readouterr().out
    NewFactory("pympc.ipopt").solve(lcp_model())
    NewFactory("pympc.milp").solve(lcp_model())
    assert capfd.readouterr().out == ""


def test_no_banner_and_stdout_untouched_while_other_threads_print():
    """HiGHS's banner is silenced by its options; nothing swaps file descriptor 1 (another thread's output is kept)."""
    code = """
import threading, pympc
from pympc.complementarity import milp
from pyomo.contrib.solver.common.factory import SolverFactory
from pympc.mpec import to_pyomo
def talk():
    for k in range(200):
        print("thread", k, flush=True)
t = threading.Thread(target=talk); t.start()
for _ in range(5):
    milp(pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]))
    SolverFactory("pympc.ipopt").solve(to_pyomo(pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])))
t.join()
print("done", flush=True)
"""
    out = run_python("-c", code, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines.count("done") == 1 and sum(line.startswith("thread ") for line in lines) == 200
    assert "HiGHS" not in out.stdout and "Ipopt" not in out.stdout


def test_time_limit():
    rng = np.random.default_rng(3)
    n = 40
    G = rng.standard_normal((n, n))
    m = to_pyomo(LCP(G @ G.T + 0.1 * n * np.eye(n), rng.uniform(-1, 1, n)))
    res = NewFactory("pympc.ipopt").solve(m, time_limit=1e-6, raise_exception_on_nonoptimal_result=False,
                                          load_solutions=False)
    assert res.termination_condition == TerminationCondition.maxTimeLimit
    opt = pyo.SolverFactory("pympc.ipopt")
    legacy = opt.solve(m, timelimit=1e-6)
    assert legacy.solver.termination_condition == pyo.TerminationCondition.maxTimeLimit
    assert pyo.check_optimal_termination(opt.solve(m))      # the limit of one call does not outlive it


def test_mpec_nlp_with_pympc_ipopt_underneath():
    m = lcp_model()
    opt = pyo.SolverFactory("mpec_nlp")
    opt.options.solver = "pympc.ipopt"
    opt.solve(m)
    np.testing.assert_allclose(values(m), answer(6.0), atol=1e-6)   # mpec_nlp stops at relaxation 1e-7


def test_extra_info_and_duals():
    res = NewFactory("pympc.milp").solve(lcp_model())
    assert res.extra_info.exact and res.extra_info.status == "SOLVED" and max(res.extra_info.residual) <= 1e-9
    res = NewFactory("pympc.ipopt").solve(lcp_model())
    assert res.extra_info.stages and res.extra_info.complementarity <= 1e-12 and res.extra_info.infeasibility <= 1e-12
    assert {"transform", "extract", "ipopt", "total"} <= set(res.timing_info)
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=3.0)
    m.y = pyo.Var(initialize=3.0)
    m.o = pyo.Objective(expr=m.x + 2 * m.y)
    m.c = pyo.Constraint(expr=m.x + m.y >= 1)
    m.d = pyo.Constraint(expr=m.y >= 0)
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    res = NewFactory("pympc.ipopt").solve(m)
    assert res.incumbent_objective == pytest.approx(1.0, abs=1e-7)
    assert m.dual[m.c] == pytest.approx(1.0, abs=1e-6) and m.dual[m.d] == pytest.approx(1.0, abs=1e-6)
    duals = res.solution_loader.get_duals()
    assert duals[m.c] == pytest.approx(1.0, abs=1e-6)


def test_pympc_options_are_typed_config_entries():
    opt = NewFactory("pympc.ipopt")
    assert opt.config.mpec_tol == 1e-9 and opt.config.polish is True and len(opt.config.relaxation) == 3
    with pytest.raises(ValueError, match="relaxation"):
        opt.solve(lcp_model(), relaxation=(1e-6, -1.0))
    res = opt.solve(lcp_model(), relaxation=(1e-4,), solver_options={"max_iter": 200})
    assert res.solution_status == SolutionStatus.optimal and res.extra_info.stages[0][0] == pytest.approx(1e-4 * 36)
    assert NewFactory("pympc.milp").config.big_m is None
    res = NewFactory("pympc.lemke").solve(lcp_model(), max_pivots=50)
    assert res.extra_info.pivots <= 50


def test_import_pympc_imports_no_pyomo_and_registration_follows_pyomo():
    lazy = """
import sys
import pympc
assert not any(k.startswith(("pyomo", "scipy", "numba")) for k in sys.modules), "heavy modules imported"
p = pympc.LCP([[2.0]], [-4.0])
assert pympc.solve(p).success and "pyomo.environ" not in sys.modules
"""
    use = """
import pyomo.environ as pyo
from pyomo.contrib.solver.common.factory import SolverFactory
from pympc.mpec import to_pyomo
for name in ("pympc.lemke", "pympc.milp", "pympc.ipopt"):
    assert SolverFactory(name) is not None and pyo.SolverFactory(name) is not None, name
m = to_pyomo(p)
assert pyo.check_optimal_termination(pyo.SolverFactory("pympc.lemke").solve(m)) and abs(m.z[0].value - 2) < 1e-12
print("ok")
"""
    pyomo_first = "import pyomo.environ\nimport pympc\np = pympc.LCP([[2.0]], [-4.0])\n"
    for code in (lazy + use, pyomo_first + use):
        out = run_python("-c", code, timeout=300)
        assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_fixed_variables_only_and_violated_constant_rows():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=1.0)
    m.x.fix()
    m.c = pyo.Constraint(expr=m.x >= 0)
    m.o = pyo.Objective(expr=m.x)
    res = NewFactory("pympc.ipopt").solve(m)
    assert res.solution_status == SolutionStatus.optimal and res.incumbent_objective == 1.0
    m.c2 = pyo.Constraint(expr=m.x >= 2)
    res = NewFactory("pympc.ipopt").solve(m, raise_exception_on_nonoptimal_result=False, load_solutions=False)
    assert res.termination_condition == TerminationCondition.provenInfeasible
    assert res.solution_status == SolutionStatus.infeasible and "c2" in res.extra_info.message


def test_solvers_are_in_pyomos_own_listings_with_their_options():
    # issue 30 (6): once pympc is imported, `pyomo help --solvers` lists the three solvers as available, both
    # factories iterate over their names with a doc, and each CONFIG declares pympc's options
    code = ("import pympc\nfrom pyomo.scripting.driver_help import help_solvers\nhelp_solvers()\n")
    out = run_python("-c", code, timeout=300)
    assert out.returncode == 0, out.stderr
    for name in SOLVERS:
        assert f"+{name} " in out.stdout, out.stdout[-3000:]   # '+': available
    options = {"pympc.lemke": {"max_pivots", "piv_tol", "tol", "certify", "time_limit"},
               "pympc.milp": {"big_m", "tol", "all_solutions", "max_solutions", "time_limit"},
               "pympc.ipopt": {"mpec_tol", "relaxation", "polish", "kkt_tol", "time_limit", "solver_options"}}
    for name in SOLVERS:
        assert name in list(pyo.SolverFactory) and name in list(NewFactory)
        assert NewFactory.doc(name) and pyo.SolverFactory.doc(name)
        config = NewFactory(name).config
        assert options[name] <= set(config.keys()), (name, sorted(config.keys()))
        for key in options[name]:
            assert config.get(key)._description or config.get(key)._doc, (name, key)
