"""HiGHS through highspy's public class: quiet when asked, its banner and log back when verbose."""

import subprocess
import sys

import highspy
import numpy as np

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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
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
