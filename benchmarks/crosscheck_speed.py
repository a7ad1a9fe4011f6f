"""Cross-check speed: the stages of the Pyomo routes, side by side, on random SPD LCPs.

For n = 5, 20, 50, 100 prints the median time of: building the Pyomo model
(``to_pyomo``), the ``mpec.simple_nonlinear`` transformation of a clone, the
NLP extraction (``PyomoNLP``), the whole ``SolverFactory('pympc.ipopt').solve``,
the bridge's own share of it (everything but time inside Ipopt's callbacks and
solve), the big-M MILP (HiGHS) and Lemke, plus the complementarity residual of
the IPOPT answer.  Run: ``python benchmarks/crosscheck_speed.py``
"""

import time

import numpy as np
from _timing import median_time
import pyomo.environ as pyo

import pympc
from pympc.mpec import PyomoNLP, milp, to_pyomo
from pympc.mpec import ipopt as bridge


MILP_LIMIT = 20.0  # seconds: the big-M MILP is exponential in the worst case


def main():
    print(f"{'n':>4} {'build':>8} {'transf':>8} {'extract':>8} {'ipopt':>9} {'in Ipopt':>9} {'bridge %':>8} "
          f"{'milp':>9} {'lemke':>8} {'compl':>9}")
    for n in (5, 20, 50, 100):
        rng = np.random.default_rng(n)
        G = rng.standard_normal((n, n))
        p = pympc.LCP(G @ G.T + 0.1 * n * np.eye(n), rng.uniform(-1, 1, n))
        reps = 7 if n <= 20 else 3
        m = to_pyomo(p)
        t_build = median_time(lambda: to_pyomo(p), reps)

        def transformed():
            c = m.clone()
            pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(c)
            return c

        t_transf = median_time(transformed, reps)
        tm = transformed()
        t_extract = median_time(lambda: PyomoNLP(tm), reps)
        solver = pyo.SolverFactory("pympc.ipopt")
        solver.solve(m)
        # time spent inside Ipopt itself (its solve call, callbacks excluded is not separable: count solve_nlp)
        inner = []
        orig = bridge.solve_nlp

        def timed(*a, **k):
            t = time.perf_counter()
            out = orig(*a, **k)
            inner.append(time.perf_counter() - t)
            return out

        bridge.solve_nlp = timed
        totals = []
        for _ in range(reps):
            inner.clear()
            t = time.perf_counter()
            solver.solve(m)
            totals.append((time.perf_counter() - t, sum(inner)))
        bridge.solve_nlp = orig
        totals.sort()
        t_ipopt, t_inner = totals[len(totals) // 2]
        z = np.array([m.z[i].value for i in range(n)])
        compl = float(np.abs(z * (p.M @ z + p.q)).max())
        t0 = time.perf_counter()
        rm = milp(p, time_limit=MILP_LIMIT)
        t_milp = time.perf_counter() - t0
        milp_note = "" if rm.success else f"  (milp: {rm.status.name}, HiGHS {rm.info.get('highs_status')})"
        pympc.solve(p)
        t_lemke = median_time(lambda: pympc.solve(p), 50)
        share = 100 * (t_ipopt - t_inner) / t_ipopt
        print(f"{n:>4} {t_build * 1e3:>6.1f}ms {t_transf * 1e3:>6.1f}ms {t_extract * 1e3:>6.1f}ms {t_ipopt * 1e3:>7.1f}ms "
              f"{t_inner * 1e3:>7.1f}ms {share:>7.0f}% {t_milp * 1e3:>7.1f}ms {t_lemke * 1e3:>6.3f}ms {compl:>9.1e}{milp_note}")
    print("'in Ipopt': time inside cyipopt's solve calls (Ipopt plus pympc's derivative callbacks);\n"
          "'bridge %': the rest of SolverFactory('pympc.ipopt').solve (clone, transformation, extraction, polish set-up)")


if __name__ == "__main__":
    main()
