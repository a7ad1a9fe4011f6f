"""HiGHS through highspy's public class: quiet when asked, its banner and log back when verbose."""

import highspy
import pytest
import numpy as np
from conftest import run_python

from pympc.complementarity._highs import QuietHighs


def test_quiet_then_verbose_in_a_fresh_process():
    code = """
import pympc
from pympc.complementarity import milp
p = pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])
assert milp(p).success
print("quiet done", flush=True)
assert milp(p, verbose=True).success
"""
    out = run_python("-c", code, timeout=300)
    assert out.returncode == 0, out.stderr
    quiet, verbose = out.stdout.split("quiet done\n")
    assert quiet == ""
    assert "Running HiGHS" in verbose and "Model status" in verbose   # the banner obeys output_flag, not lost


def test_quiet_highs_is_a_public_highs_with_callbacks_enabled():
    h = QuietHighs()
    assert isinstance(h, highspy.Highs)
    assert h.getOptionValue("output_flag")[1] is False
    seen = []
    h.cbLogging.subscribe(lambda e: seen.append(e))    # a callback of the public class still works
    h.setOptionValue("output_flag", True)
    h.setOptionValue("log_to_console", False)
    h.addVars(2, np.zeros(2), np.ones(2))
    h.changeColsCost(2, np.arange(2, dtype=np.int32), np.array([1.0, -1.0]))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    np.testing.assert_allclose(h.getSolution().col_value, [0.0, 1.0])
    assert seen


# every path on which pympc calls HiGHS, each in a fresh process (HiGHS prints its banner once per process):
# nothing on standard output, and the answer checked
_P = "pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0])"                            # monotone: the QP
_N = "pympc.LCP([[0.0, 1.0, -1.0], [-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]], [-1.0, 0.5, 0.2])"   # not monotone
PATHS = {
    "milp_qp": f"from pympc.complementarity import milp\nr = milp({_P})\nok = r.success",
    "milp_search": f"from pympc.complementarity import milp\nr = milp({_N}, formulation='auto')\n"
                   "ok = r.info['formulation'] == 'search' and r.status.name in ('SOLVED', 'INFEASIBLE')",
    "milp_bigm": f"from pympc.complementarity import milp\nr = milp({_P}, formulation='bigm')\nok = r.success",
    "milp_all_solutions": "from pympc.complementarity import milp\n"
                          "r = milp(pympc.LCP([[-1.0]], [1.0]), all_solutions=True)\nok = len(r.info['solutions']) == 2",
    "solve_method_milp": f"r = pympc.solve({_P}, method='milp')\nok = r.success",
    "solve_lemke_fallback": "r = pympc.solve(pympc.LCP([[-1.0, 0.0], [0.0, -1.0]], [1.0, 1.0]))\nok = r.success",
    "crosscheck": f"rep = pympc.crosscheck({_P}, solvers=('milp', 'lemke'))\nok = rep.agree",
    "solverfactory_new": "from pyomo.contrib.solver.common.factory import SolverFactory\nfrom pympc.mpec import to_pyomo\n"
                         f"r = SolverFactory('pympc.milp').solve(to_pyomo({_P}))\nok = r.solution_status.name == 'optimal'",
    "solverfactory_legacy": "import pyomo.environ as pyo\nfrom pympc.mpec import to_pyomo\n"
                            f"r = pyo.SolverFactory('pympc.milp').solve(to_pyomo({_P}))\n"
                            "ok = pyo.check_optimal_termination(r)",
}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_highs_path_is_silent_on_stdout(path):
    code = "import pympc\n" + PATHS[path] + "\nimport sys\nsys.stderr.write('ok=%s' % ok)\n"
    out = run_python("-c", code, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stderr.endswith("ok=True"), out.stderr
    assert out.stdout == "", out.stdout
