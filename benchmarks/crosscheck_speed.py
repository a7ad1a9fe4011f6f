"""Cross-check speed: the stages of the Pyomo routes, side by side, on random SPD LCPs; the exact method on
random LCPs and a 50-slot chain's event HLCPs; import time; the Hock–Schittkowski problems.

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
complementarity residual of the IPOPT answers.  ``SolverFactory('pympc.ipopt')`` is
``pyomo.contrib.solver``'s factory (the new interface).

Then: the exact ``milp`` method (default: convex QP / support search) against
the big-M MILP (``formulation="bigm"``) on the random LCPs and on every event
HLCP of ``slider_chain(50)`` simulated for 1 s; ``import pympc`` (fresh
interpreters, against ``python -c pass``); and ``pympc.ipopt`` on the
Hock–Schittkowski problems of ``tests/hock_schittkowski.py``.
Run: ``python benchmarks/crosscheck_speed.py [--problems K] [--sizes N ...] [--skip-chain]``
"""

import argparse
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np
from _timing import median_time
import pyomo.environ as pyo
from pyomo.contrib.solver.common.factory import SolverFactory

import pympc
from pympc.complementarity import milp
from pympc.mpec import CompiledNLP, to_pyomo

MILP_LIMIT = 20.0  # seconds: the big-M MILP is exponential in the worst case
BIGM_LIMIT = 10.0  # seconds for the big-M MILP on the chain events
CALLBACKS = ("objective", "gradient", "constraints", "jacobian", "hessian")


class CallbackTimer:
    """Wraps CompiledNLP's callbacks (class level) and adds up the seconds spent in them."""

    def __init__(self):
        self.seconds = 0.0
        self._orig = {name: getattr(CompiledNLP, name) for name in CALLBACKS}

    def __enter__(self):
        for name, fn in self._orig.items():
            setattr(CompiledNLP, name, self._timed(fn))
        return self

    def __exit__(self, *exc):
        for name, fn in self._orig.items():
            setattr(CompiledNLP, name, fn)

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
    ap.add_argument("--skip-chain", action="store_true", help="leave out the 50-slot chain (its simulation is slow)")
    args = ap.parse_args()
    solver = SolverFactory("pympc.ipopt")
    solver.solve(to_pyomo(random_lcp(3, 0)))  # imports, first-call costs
    cols = ("n", "build", "transf", "extract", "callbk", "Ipopt", "solve", "pympc %", "non-Ipopt %", "milp", "bigm",
            "lemke", "compl")
    print(" ".join(f"{c:>{w}}" for c, w in zip(cols, (4, 8, 8, 8, 8, 8, 8, 8, 11, 10, 10, 8, 9))))
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
            tm = res.timing_info
            ipopt_itself = tm["ipopt"] - cb.seconds
            total = tm["total"]
            rows.append((t_build, tm["transform"], tm["extract"], cb.seconds, ipopt_itself, total,
                         100 * (total - ipopt_itself - tm["transform"]) / total, 100 * (total - ipopt_itself) / total))
            z = np.array([m.z[i].value for i in range(n)])
            worst = max(worst, float(np.abs(z * (p.M @ z + p.q)).max()), float(-min(z.min(), (p.M @ z + p.q).min())))
        med = [statistics.median(col) for col in zip(*rows)]
        p = random_lcp(n, 1000 * n)
        cells, notes = [], ""
        for form in ("auto", "bigm"):
            t0 = time.perf_counter()
            rm = milp(p, time_limit=MILP_LIMIT, formulation=form)
            t_milp = time.perf_counter() - t0
            cells.append(f"{t_milp * 1e3:.1f}ms" if rm.success else f">{MILP_LIMIT:.0f}s")
            notes += "" if rm.success else f"  ({form} {rm.status.name})"
        t_lemke = median_time(lambda: pympc.solve(p), 50)
        ms = [f"{x * 1e3:.1f}ms" for x in med[:6]]
        print(f"{n:>4} " + " ".join(f"{c:>8}" for c in ms) + f" {med[6]:>7.0f}% {med[7]:>10.0f}% {cells[0]:>10}"
              f" {cells[1]:>10} {t_lemke * 1e3:>6.3f}ms {worst:>9.1e}" + notes)
    print("medians over the random problems of each size, each solved once from a fresh model (cold start).\n"
          "transf: clone + mpec.simple_nonlinear (Pyomo); extract: CompiledNLP; callbk: pympc's derivative callbacks;\n"
          "Ipopt: time in cyipopt's solve calls minus the callbacks; solve: the whole SolverFactory('pympc.ipopt').solve;\n"
          "pympc %: the share of solve in pympc's own code (all but Ipopt and transf); non-Ipopt %: all but Ipopt;\n"
          "milp: the exact method's default (convex QP for these monotone LCPs); bigm: the big-M MILP (both on the\n"
          "first problem of each size, time limit 20 s); compl: the worst complementarity (or sign) residual of IPOPT.")
    if not args.skip_chain:
        chain_events()
    import_time()
    hock_schittkowski()


def chain_events():
    """The exact method and the big-M MILP on every event HLCP of slider_chain(50) over 1 s."""
    from pympc.mechanics import slider_chain

    t0 = time.perf_counter()
    tr = pympc.simulate(slider_chain(50), (0.0, 1.0))
    events = [e.hlcp for e in tr.events if getattr(e, "hlcp", None) is not None]
    print(f"\nslider_chain(50), 1 s: {len(events)} event HLCPs ({min(h.n for h in events)}-{max(h.n for h in events)} "
          f"pairs), simulated in {time.perf_counter() - t0:.1f} s")
    times, forms, solved = [], set(), 0
    for h in events:
        t = time.perf_counter()
        r = milp(h, time_limit=MILP_LIMIT)
        times.append(time.perf_counter() - t)
        solved += r.success and h.is_solution(r.x, r.y)
        forms.add(r.info["formulation"])
    bigm = []
    for h in events[:: max(1, len(events) // 5)]:
        t = time.perf_counter()
        r = milp(h, time_limit=BIGM_LIMIT, formulation="bigm")
        bigm.append((time.perf_counter() - t, r.status.name))
    print(f"{'method':>10} {'solved':>8} {'median':>10} {'max':>10}")
    print(f"{'milp':>10} {solved:>5}/{len(events):<2} {statistics.median(times) * 1e3:>8.1f}ms {max(times) * 1e3:>8.1f}ms"
          f"   ({'/'.join(sorted(forms))})")
    ok = sum(st == "SOLVED" for _, st in bigm)
    print(f"{'bigm':>10} {ok:>5}/{len(bigm):<2} {statistics.median(t for t, _ in bigm) * 1e3:>8.1f}ms "
          f"{max(t for t, _ in bigm) * 1e3:>8.1f}ms   (every {max(1, len(events) // 5)}th event, limit {BIGM_LIMIT:.0f} s)")


def import_time(repeats=5):
    """``python -c 'import pympc'`` in fresh interpreters, against an empty interpreter and with Pyomo."""
    def run(code):
        ts = []
        for _ in range(repeats):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)

    base = run("pass")
    print(f"\nimport (median of {repeats} fresh interpreters)")
    for code in ("pass", "import pympc", "import pympc; pympc.LCP", "import pympc, pyomo.environ"):
        t = base if code == "pass" else run(code)
        print(f"  {code:32s} {t:6.2f} s   (+{t - base:5.2f} s over an empty interpreter)")


def hock_schittkowski():
    """pympc.ipopt (new interface) on the Hock–Schittkowski problems written down in tests/."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
    from hock_schittkowski import PROBLEMS

    solver = SolverFactory("pympc.ipopt")
    rows, failed = [], []
    for name, (build, f_star) in sorted(PROBLEMS.items()):
        m = build()
        t = time.perf_counter()
        res = solver.solve(m, raise_exception_on_nonoptimal_result=False, load_solutions=False)
        dt = time.perf_counter() - t
        if res.solution_status.name != "noSolution":
            res.solution_loader.load_vars()
        f = pyo.value(m.o)
        local = name == "hs055" and abs(f - 20 / 3) <= 1e-6   # the book's start is at this local minimum
        good = res.solution_status.name == "optimal" and (abs(f - f_star) <= 1e-6 * (1 + abs(f_star)) or local)
        rows.append((name, good, dt, f, f_star, res.termination_condition.name))
        if not good:
            failed.append(name)
    print(f"\nHock–Schittkowski ({len(rows)} problems): solved {len(rows) - len(failed)}, failed {len(failed)}"
          f"{' (' + ', '.join(failed) + ')' if failed else ''}; median {statistics.median(r[2] for r in rows) * 1e3:.0f} ms")
    for i in range(0, len(rows), 5):
        print("  " + "  ".join(f"{n} {'ok' if g else 'FAIL'} {dt * 1e3:5.0f}ms" for n, g, dt, *_ in rows[i:i + 5]))
    print("  (hs055 ends at its local minimum f = 20/3 from the book's start, a verified KKT point; f* = 19/3)")


if __name__ == "__main__":
    main()
