"""Cross-check speed: the stages of the Pyomo routes, side by side, on random SPD LCPs.

For n = 5, 20, 50, 100 and several random LCPs per size, each solved once from
a fresh ``to_pyomo`` model (a cold start from z = 0, as a user's first solve),
prints the medians over the problems of: building the model, the whole
``SolverFactory('pympc.ipopt').solve`` and its parts (clone and
``mpec.simple_nonlinear``; NLP extraction; pympc's derivative callbacks; Ipopt
itself, i.e. time in cyipopt's solve calls minus the callbacks, which are
timed in a second solve of the same problem), the share of
the solve spent in pympc's own code (extraction, callbacks, polish, loading:
everything but Ipopt and Pyomo's transformation) and the share of everything
but Ipopt; then the big-M MILP (HiGHS, first problem) and Lemke, and the worst
complementarity residual of the IPOPT answers.
Run: ``python benchmarks/crosscheck_speed.py [--problems K] [--sizes N ...]``
"""

import argparse
import statistics
import time

import numpy as np
from _timing import median_time
import pyomo.environ as pyo

import pympc
from pympc.mpec import PyomoNLP, milp, to_pyomo

MILP_LIMIT = 20.0  # seconds: the big-M MILP is exponential in the worst case
CALLBACKS = ("objective", "gradient", "constraints", "jacobian", "hessian")


class CallbackTimer:
    """Wraps PyomoNLP's callbacks (class level) and adds up the seconds spent in them."""

    def __init__(self):
        self.seconds = 0.0
        self._orig = {name: getattr(PyomoNLP, name) for name in CALLBACKS}

    def __enter__(self):
        for name, fn in self._orig.items():
            setattr(PyomoNLP, name, self._timed(fn))
        return self

    def __exit__(self, *exc):
        for name, fn in self._orig.items():
            setattr(PyomoNLP, name, fn)

    def _timed(self, fn):
        def wrapper(*args):
            t = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.seconds += time.perf_counter() - t
        return wrapper


def random_lcp(n, seed):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, n))
    return pympc.LCP(G @ G.T + 0.1 * n * np.eye(n), rng.uniform(-1, 1, n))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=15, help="random LCPs per size for n <= 20 (a third of it above)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 20, 50, 100])
    args = ap.parse_args()
    solver = pyo.SolverFactory("pympc.ipopt")
    solver.solve(to_pyomo(random_lcp(3, 0)))  # imports, first-call costs
    cols = ("n", "build", "transf", "extract", "callbk", "Ipopt", "solve", "pympc %", "non-Ipopt %", "milp", "lemke",
            "compl")
    print(" ".join(f"{c:>{w}}" for c, w in zip(cols, (4, 8, 8, 8, 8, 8, 8, 8, 11, 10, 8, 9))))
    for n in args.sizes:
        k = args.problems if n <= 20 else max(3, args.problems // 3)
        rows, worst = [], 0.0
        for seed in range(k):
            p = random_lcp(n, 1000 * n + seed)
            t = time.perf_counter()
            m = to_pyomo(p)
            t_build = time.perf_counter() - t
            res = solver.solve(m)
            with CallbackTimer() as cb:  # again on a fresh model, so that the timer's own cost stays out of `res`
                solver.solve(to_pyomo(p))
            tm = res.pympc.timing
            ipopt_itself = tm["ipopt"] - cb.seconds
            total = tm["total"]
            rows.append((t_build, tm["transform"], tm["extract"], cb.seconds, ipopt_itself, total,
                         100 * (total - ipopt_itself - tm["transform"]) / total, 100 * (total - ipopt_itself) / total))
            z = np.array([m.z[i].value for i in range(n)])
            worst = max(worst, float(np.abs(z * (p.M @ z + p.q)).max()), float(-min(z.min(), (p.M @ z + p.q).min())))
        med = [statistics.median(col) for col in zip(*rows)]
        p = random_lcp(n, 1000 * n)
        t0 = time.perf_counter()
        rm = milp(p, time_limit=MILP_LIMIT)
        t_milp = time.perf_counter() - t0
        milp_cell = f"{t_milp * 1e3:.1f}ms" if rm.success else f">{MILP_LIMIT:.0f}s"
        t_lemke = median_time(lambda: pympc.solve(p), 50)
        ms = [f"{x * 1e3:.1f}ms" for x in med[:6]]
        print(f"{n:>4} " + " ".join(f"{c:>8}" for c in ms) + f" {med[6]:>7.0f}% {med[7]:>10.0f}% {milp_cell:>10}"
              f" {t_lemke * 1e3:>6.3f}ms {worst:>9.1e}" + ("" if rm.success else f"  (milp {rm.status.name})"))
    print("medians over the random problems of each size, each solved once from a fresh model (cold start).\n"
          "transf: clone + mpec.simple_nonlinear (Pyomo); extract: PyomoNLP; callbk: pympc's derivative callbacks;\n"
          "Ipopt: time in cyipopt's solve calls minus the callbacks; solve: the whole SolverFactory('pympc.ipopt').solve;\n"
          "pympc %: the share of solve in pympc's own code (all but Ipopt and transf); non-Ipopt %: all but Ipopt;\n"
          "compl: the worst complementarity (or sign) residual of the IPOPT answers.")


if __name__ == "__main__":
    main()
