"""Simulation speed, side by side, one run: this tree against a checkout of another (``--base``).

Every case is run by a worker process per code tree (``PYTHONPATH`` = that
tree), one after the other in the same run, so the before/after ratios share
the machine's load.

1. ``friction_oscillator.toml`` for 30 s at the default rtol: wall time (with 2 samples, and per call
   with the default options, per event), throughput of 200 runs with varied μ (runs/s), the integrator
   that ran (compiled DOP853 or solve_ivp), right-hand side calls and µs per call
   (timed inside the real run; for the compiled loop, its time per call), event-time error
   against a semi-analytic reference (every smooth phase of this model is a
   linear ODE with a closed-form solution; only the phase ends are found by root
   finding), next to the same model with regularized friction
   (F = −μ|λ| tanh(v/ε), ε = 1e-4, scipy Radau; pympc's assembly, and a
   hand-written scalar right-hand side) and the µs of a hand-written scalar NumPy
   right-hand side of the oscillator.  The regularized run has no sharp
   breakaway; its event times are the crossings of |v| = 10 ε.
2. Chains of 10, 50, 100, 200 friction slots (``pympc.mechanics.slider_chain``)
   for 1 s (``zeno_events=40`` for a ``--base`` tree older than the per-slot Zeno
   guard, where the 200-slot chain stopped as ZENO at 0.65 s: 20 transitions of
   different slots within 1 ms): total time, events, time per event, and per event HLCP the solve
   the simulator does (this tree: the sparse reduction + Lemke,
   :meth:`EventProblem.solve`; the base: ``pympc.solve`` on the HLCP), next to
   quantecon's Lemke on the same reduced LCP (when quantecon is installed).
3. The cross slide and the slider-crank (their model files' time spans).

    python benchmarks/simulation_speed.py --base /path/to/checkout/of/bdd374b
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from _timing import median_time
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import pympc
from pympc.dynamics import Baumgarte, solve_mode
from pympc.mechanics import GeneralMethod, slider_chain

MODEL = Path(__file__).parents[1] / "models" / "friction_oscillator.toml"
THROUGHPUT_RUNS = 200


def reference_events(p, t_end):
    """Stop and breakaway times of the friction oscillator, phase by phase in closed form."""
    K, F0, g, mu, mus, m = p["K"], p["F0"], p["g"], p["mu"], p["mu_s"], p["m"]
    w0 = math.sqrt(K / m)
    c = F0 / (K - m)          # particular solution of x'' + K/m x = F0/m sin t
    t, x, v, events = 0.0, 0.0, 0.0, []
    net = lambda t, x: F0 * math.sin(t) - K * x  # noqa: E731
    while t < t_end:
        # stick at x until |net| reaches mu_s m g
        f = lambda s: abs(net(s, x)) - mus * m * g  # noqa: E731
        if f(t) < 0:
            grid = np.arange(t, t_end + 0.01, 0.01)
            vals = [f(s) for s in grid]
            k = next((i for i in range(1, len(grid)) if vals[i] >= 0), None)
            if k is None:
                break
            t = brentq(f, grid[k - 1], grid[k], xtol=1e-15)
            events.append(("BREAKAWAY", t))
        d = 1.0 if net(t, x) > 0 else -1.0
        # slip: x'' + w0² x = (F0 sin t − d μ m g)/m
        xp = lambda s: c * math.sin(s) - d * mu * m * g / K  # noqa: E731
        vp = lambda s: c * math.cos(s)  # noqa: E731
        t0, a = t, x - xp(t)
        b = (v - vp(t)) / w0
        xs = lambda s: a * math.cos(w0 * (s - t0)) + b * math.sin(w0 * (s - t0)) + xp(s)  # noqa: E731
        vs = lambda s: -a * w0 * math.sin(w0 * (s - t0)) + b * w0 * math.cos(w0 * (s - t0)) + vp(s)  # noqa: E731
        grid = np.arange(t0 + 1e-9, t_end + 0.002, 0.002)
        k = next((i for i in range(1, len(grid)) if d * vs(grid[i]) <= 0), None)
        if k is None:
            break
        t = brentq(vs, grid[k - 1], grid[k], xtol=1e-15)
        x, v = xs(t), 0.0
        events.append(("SLIP_STOP", t))
    return [e for e in events if e[1] <= t_end]


def regularized_scalar(p, eps):
    """The regularized oscillator as a hand-written scalar right-hand side (with its Jacobian)."""
    K, F0, g, mu, m = p["K"], p["F0"], p["g"], p["mu"], p["m"]

    def rhs(t, y):
        return [y[1], (F0 * math.sin(t) - K * y[0] - mu * m * g * math.tanh(y[1] / eps)) / m]

    def jac(t, y):
        return [[0.0, 1.0], [-K / m, -mu * g / eps / math.cosh(min(abs(y[1]) / eps, 300.0)) ** 2]]

    return rhs, jac, 0, [0.0, 0.0]


def regularized_model(system, eps):
    """The same System through pympc's own assembly, friction F = −μ|λ| tanh(v/ε) (Jacobian by differences)."""
    form = GeneralMethod(system)
    mu = np.array([float(sl.mu) for sl in form.slots])
    stab = Baumgarte()
    n = form.n
    walls = [np.ones(len(mu))]

    def rhs(t, x):
        q, qd = x[:n], x[n:]
        a = form.assemble(q, qd, t)
        mode = SimpleNamespace(walls=walls[0], motions=np.tanh(a.vT / eps), sticking=[])
        sol = solve_mode(a, mode, mu, mu, stab, form.mass_diagonal)
        if np.any(sol.lam * walls[0] < 0):          # the load moved to the other wall: |λ| with the new sign
            walls[0] = np.where(sol.lam < 0, -1.0, 1.0)
            mode.walls = walls[0]
            sol = solve_mode(a, mode, mu, mu, stab, form.mass_diagonal)
        return np.concatenate([qd, sol.qdd])

    q, qd = form.initial_state()
    return rhs, None, 0, np.concatenate([q, qd])


def regularized_run(rhs, jac, x0, t_end, eps, vi):
    """Radau; breakaways and stops are the times |v| rises above / falls below 10 ε."""
    def threshold(t, y):
        return abs(y[vi]) - 10 * eps

    sol = solve_ivp(rhs, (0, t_end), x0, method="Radau", jac=jac, rtol=1e-8, atol=1e-10, events=[threshold])
    return list(sol.t_events[0])


def hand_rhs(p):
    """The oscillator's right-hand side written by hand with scalars and NumPy, in a fixed slip direction."""
    K, F0, g, mu, m = p["K"], p["F0"], p["g"], p["mu"], p["m"]

    def rhs(t, y):
        return np.array([y[1], (F0 * math.sin(t) - K * y[0] - mu * m * g * (1.0 if y[1] > 0 else -1.0)) / m])

    return rhs


def _rhs_timer():
    """Count and time every call of the driver's right-hand side (the class method, wrapped)."""
    import importlib
    driver = importlib.import_module("pympc.dynamics.simulate")
    # the class that owns the right-hand side: ModeEvaluator (a tree before issue 27: the driver's _Run)
    owner = driver._Run if hasattr(driver, "_Run") else importlib.import_module("pympc.dynamics.evaluation").ModeEvaluator
    original = owner.rhs
    stats = [0, 0.0]

    def timed(self, t, x, mode):
        t0 = time.perf_counter()
        out = original(self, t, x, mode)
        stats[1] += time.perf_counter() - t0
        stats[0] += 1
        return out

    owner.rhs = timed
    try:                                # the compiled DOP853 loop (this tree): its right-hand side calls are
        stepper = importlib.import_module("pympc.dynamics._dop853")       # inside it; time the loop per call
    except ImportError:
        return stats
    phases = importlib.import_module("pympc.dynamics.stepper").PhaseStepper
    if hasattr(phases, "_compiled_window"):     # a window in one call (loop, search, samples): the loop alone here
        phases._compiled_window = lambda self, *args: None
    loop = stepper.dop853_run

    def timed_loop(*args):
        t0 = time.perf_counter()
        loop(*args)
        stats[1] += time.perf_counter() - t0
        stats[0] += int(args[-1][5])    # state[5]: the loop's right-hand side calls
    stepper.dop853_run = timed_loop
    return stats


def worker(case):
    """One case on the code tree this process imports; prints a JSON line."""
    out = {}
    if case == "oscillator":
        system = pympc.load_model(MODEL)
        ref = reference_events(system.parameters, 30.0)
        run = lambda: pympc.simulate(system, (0.0, 30.0), samples=2)  # noqa: E731
        out["wall"] = median_time(run, 5)
        out["wall_default"] = median_time(lambda: pympc.simulate(system), 7)     # the default 501 samples
        cpu = []                  # CPU time per call (a shared machine's load leaves it, not the wall time)
        for _ in range(5):
            c0 = time.process_time()
            for _ in range(5):
                pympc.simulate(system)
            cpu.append((time.process_time() - c0) / 5)
        out["cpu_default"] = min(cpu)
        mus = np.linspace(0.2, 0.39, THROUGHPUT_RUNS)       # varied μ (< μ_s = 0.4), a loop as a user writes it
        t0, c0 = time.perf_counter(), time.process_time()
        for mu in mus:
            pympc.simulate(system, params={"mu": float(mu)})
        out["runs_per_s"] = len(mus) / (time.perf_counter() - t0)
        out["runs_per_cpu_s"] = len(mus) / (time.process_time() - c0)
        stats = _rhs_timer()
        run()                           # (loads what the timed loop calls)
        per_call = []                   # the best of 5 runs (a loaded machine's wall time varies)
        for _ in range(5):
            stats[:] = [0, 0.0]
            tr = run()
            per_call.append(stats[1] / stats[0])
        got = [(e.kind.name, e.time) for e in tr.events[1:]]
        assert [k for k, _ in got] == [k for k, _ in ref], "event sequence differs from the reference"
        out.update(calls=stats[0], us_rhs=min(per_call) * 1e6, events=len(got),
                   err=max(abs(a[1] - b[1]) for a, b in zip(got, ref)),
                   integrator=tr.info.get("integrator", "solve_ivp (DOP853)"))
    elif case.startswith("chain"):
        n = int(case[5:])
        t0 = time.perf_counter()
        tr = pympc.simulate(slider_chain(n), (0.0, 1.0), samples=2, zeno_events=40)
        out["wall"] = time.perf_counter() - t0
        assert tr.success, tr.message
        out["events"] = len(tr.events) - 1
        hl = [e.hlcp for e in tr.events if e.hlcp is not None]
        out["pairs"] = [min(h.n for h in hl), max(h.n for h in hl)]
        pick = hl[::max(1, len(hl) // 15)]          # a sample of the event HLCPs, each solved 3 times
        try:                                        # as the simulator does: EventProblem.solve of a sparse build
            import scipy.sparse as sp
            from pympc.dynamics.events import SPARSE_FROM, EventProblem
            probs = [EventProblem(h, [], np.zeros(0), np.zeros(0), np.zeros((0, 0)),
                                  (sp.csr_matrix(h.A), sp.csr_matrix(h.B)) if n >= SPARSE_FROM else None)
                     for h in pick]
            solve = lambda e: e.solve()  # noqa: E731
            reduced = [EventProblem(e.hlcp, [], None, None, None, (sp.csr_matrix(e.hlcp.A),
                                    sp.csr_matrix(e.hlcp.B))).reduced() for e in probs]
        except (ImportError, TypeError):            # the base tree: no sparse path
            probs, solve, reduced = pick, pympc.solve, None
        for e in probs:
            assert solve(e).success
        out["hlcp"] = statistics.median(median_time(lambda e=e: solve(e), 3) for e in probs)
        try:
            from quantecon.optimize import lcp_lemke
        except ImportError:
            lcp_lemke = None
        if lcp_lemke is not None and reduced is not None:
            lcps = [L for L in reduced if L is not None]
            for L in lcps:
                assert lcp_lemke(L.M, L.q).success
            out["quantecon"] = statistics.median(median_time(lambda L=L: lcp_lemke(L.M, L.q), 3) for L in lcps)
            # what the base's dense path costs on the same problems, in this process
            out["dense_hlcp"] = statistics.median(median_time(lambda h=h: pympc.solve(h), 3) for h in pick)
    elif case == "compile":           # a fresh numba cache (run_case sets NUMBA_CACHE_DIR): first runs
        here = Path(__file__).parents[1] / "models"
        for model in ("friction_oscillator", "slider_crank"):
            t0 = time.perf_counter()
            pympc.simulate(here / f"{model}.toml", samples=2)
            out[model] = time.perf_counter() - t0
    else:
        path = Path(__file__).parents[1] / "models" / f"{case}.toml"
        out["wall"] = median_time(lambda: pympc.simulate(path, samples=2), 3)
        cpu = []                  # CPU time per call, the best of 5 (a shared machine's load leaves it)
        for _ in range(5):
            c0 = time.process_time()
            tr = pympc.simulate(path, samples=2)
            cpu.append(time.process_time() - c0)
        out["cpu"] = min(cpu)
        out["events"] = len(tr.events) - 1
        out["status"] = tr.status.name
    print(json.dumps(out))


def run_case(tree, case):
    """Run ``worker(case)`` in a process that imports pympc from ``tree`` (case "compile": with an empty
    numba cache of its own)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    with tempfile.TemporaryDirectory() as cache:
        if case == "compile":
            env["NUMBA_CACHE_DIR"] = cache
        res = subprocess.run([sys.executable, __file__, "--worker", case], env=env, capture_output=True, text=True,
                             cwd=Path(__file__).parent)
    if res.returncode:
        raise RuntimeError(f"{case} on {tree} failed:\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def oscillator_table(base):
    here = Path(__file__).parents[1]
    system = pympc.load_model(MODEL)
    p, t_end, eps = system.parameters, 30.0, 1e-4
    ref = reference_events(p, t_end)
    after = run_case(here, "oscillator")
    before = run_case(base, "oscillator") if base else None
    reg = []
    for name, (rhs, jac, _, x0), vi in (
            ("regularized (tanh), same model, pympc assembly, Radau", regularized_model(system, eps), 2),
            ("regularized (tanh), hand-written scalar RHS, Radau", regularized_scalar(p, eps), 1)):
        wall = median_time(lambda: regularized_run(rhs, jac, x0, t_end, eps, vi), 3)
        got = regularized_run(rhs, jac, x0, t_end, eps, vi)
        err = max(abs(a - b[1]) for a, b in zip(got, ref))
        reg.append((name, wall, len(got), err))
    hand = hand_rhs(p)
    us_hand = median_time(lambda: [hand(0.1, np.array([0.01, 0.2])) for _ in range(1000)], 5) * 1e3
    print(f"\nfriction_oscillator.toml, 30 s, {len(ref)} reference events; pympc at its default rtol (DOP853 1e-10)")
    print(f"{'run':58s} {'wall':>9s} {'RHS calls':>9s} {'µs/RHS':>8s} {'events':>6s} {'event err':>9s} "
          f"{'vs regularized':>14s}  integrator")
    base_w = reg[0][1]
    rows = ([("pympc event-driven, base " + str(base), before)] if before else []) + \
        [("pympc event-driven, this tree", after)]
    for name, r in rows:
        print(f"{name[:58]:58s} {r['wall'] * 1e3:7.1f}ms {r['calls']:9d} {r['us_rhs']:8.1f} {r['events']:6d} "
              f"{r['err']:9.1e} {base_w / r['wall']:13.0f}x  {r['integrator']}")
    for name, w, ne, err in reg:
        print(f"{name:58s} {w * 1e3:7.1f}ms {'':9s} {'':8s} {ne:6d} {err:9.1e} {base_w / w:13.1f}x")
    print(f"{'hand-written scalar NumPy RHS of the oscillator (one call)':58s} {'':9s} {'':9s} {us_hand:8.1f}")
    print("µs/RHS: time in the right-hand side per call as the driver calls it (solve_ivp: the Python call; "
          "compiled DOP853: the loop's whole time per right-hand side call, its own arithmetic included)")
    print(f"\nper call (default options, 501 samples; wall and CPU, the best of 5 batches of 5), per event, and {THROUGHPUT_RUNS} runs with varied μ in one "
          "process (targets, issue 28: ≤ 5 ms per call, ≥ 200 runs/s)")
    print(f"{'tree':40s} {'ms/call':>8s} {'µs/event':>9s} {'CPU ms/call':>11s} {'CPU µs/event':>12s} {'runs/s':>7s} "
          f"{'runs/CPU s':>10s}")
    for name, r in rows:
        cpu = r.get("cpu_default", math.nan)
        print(f"{name[:40]:40s} {r['wall_default'] * 1e3:8.2f} {r['wall_default'] / r['events'] * 1e6:9.0f} "
              f"{cpu * 1e3:11.2f} {cpu / r['events'] * 1e6:12.0f} {r['runs_per_s']:7.1f} {r['runs_per_cpu_s']:10.1f}")
    if before:
        print(f"{'ratio base / this tree':40s} {before['wall_default'] / after['wall_default']:7.2f}x {'':9s} "
              f"{before.get('cpu_default', math.nan) / after['cpu_default']:10.2f}x {'':12s} "
              f"{after['runs_per_s'] / before['runs_per_s']:6.2f}x {after['runs_per_cpu_s'] / before['runs_per_cpu_s']:9.2f}x")
    if before:
        print(f"speed-up over the base: wall {before['wall'] / after['wall']:.1f}x, "
              f"per RHS call {before['us_rhs'] / after['us_rhs']:.1f}x; this tree's RHS / hand NumPy RHS: "
              f"{after['us_rhs'] / us_hand:.1f}x")


def chain_table(base, sizes):
    here = Path(__file__).parents[1]
    print("\nchains of friction slots, 1 s (slider_chain(n)); per-event HLCP: median over a sample of the recorded "
          "event HLCPs")
    print(f"{'n':>4s} {'tree':>5s} {'total':>8s} {'events':>6s} {'pairs':>9s} {'per event':>10s} {'HLCP':>9s} "
          f"{'dense HLCP':>10s} {'quantecon':>10s} {'HLCP/qe':>8s} {'speed-up':>8s}")
    rows = {}
    for n in sizes:
        for tag, tree in (("base", base), ("this", here)):
            if tree is None:
                continue
            r = rows[n, tag] = run_case(tree, f"chain{n}")
            qe, dense = r.get("quantecon", float("nan")), r.get("dense_hlcp", float("nan"))
            up = f"{rows[n, 'base']['wall'] / r['wall']:7.1f}x" if tag == "this" and (n, "base") in rows else ""
            print(f"{n:4d} {tag:>5s} {r['wall']:7.2f}s {r['events']:6d} {r['pairs'][0]:4d}-{r['pairs'][1]:<4d} "
                  f"{r['wall'] / max(1, r['events']) * 1e3:8.1f}ms {r['hlcp'] * 1e3:7.2f}ms {dense * 1e3:8.2f}ms "
                  f"{qe * 1e3:8.2f}ms {r['hlcp'] / qe:8.2f} {up:>8s}")
    if (50, "this") in rows and (200, "this") in rows:
        a, b = rows[50, "this"], rows[200, "this"]
        k = math.log((b["wall"] / b["events"]) / (a["wall"] / a["events"])) / math.log(4.0)
        print(f"per-event cost grows as n^{k:.2f} from 50 to 200 slots (this tree)")
    print("'HLCP': the solve the simulator does (this tree: sparse banded reduction + Lemke; base: pympc.solve); "
          "'dense HLCP': pympc.solve\non the same problems in the same process; 'quantecon': quantecon's Lemke on "
          "the same reduced LCP")


def compile_table(base):
    here = Path(__file__).parents[1]
    print("\nfirst runs on an empty numba cache (compilation included), one process per tree, one after the other")
    print(f"{'model':20s} {'base':>8s} {'this':>8s}")
    a = run_case(here, "compile")
    b = run_case(base, "compile") if base else {}
    for model in ("friction_oscillator", "slider_crank"):
        print(f"{model:20s} {b.get(model, float('nan')):7.1f}s {a[model]:7.1f}s")
    print(f"{'both':20s} {sum(b.values()) if b else float('nan'):7.1f}s {sum(a.values()):7.1f}s")


def mechanism_table(base):
    here = Path(__file__).parents[1]
    print("\nmechanisms (model files' time spans; wall: median of 3 calls, CPU: the best of 5)")
    print(f"{'model':14s} {'base wall':>9s} {'this wall':>9s} {'base CPU':>9s} {'this CPU':>9s} {'events':>6s} "
          f"{'CPU speed-up':>12s}")
    nan = float("nan")
    for case in ("cross_slide", "slider_crank"):
        a = run_case(here, case)
        b = run_case(base, case) if base else {}
        print(f"{case:14s} {b.get('wall', nan) * 1e3:7.1f}ms {a['wall'] * 1e3:7.1f}ms {b.get('cpu', nan) * 1e3:7.2f}ms "
              f"{a['cpu'] * 1e3:7.2f}ms {a['events']:6d} {b.get('cpu', nan) / a['cpu']:11.2f}x")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, help="a checkout of the code to compare with (e.g. git archive bdd374b)")
    ap.add_argument("--chains", default="10,50,100,200", help="chain sizes (default 10,50,100,200)")
    ap.add_argument("--parts", default="oscillator,mechanisms,chains",
                    help="which tables, comma-separated (default oscillator,mechanisms,chains; also: compile, "
                         "the first-run compile times on an empty numba cache, a few minutes)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
    else:
        parts = set(args.parts.split(","))
        known = {"oscillator", "mechanisms", "chains", "compile"}
        if parts - known:
            ap.error(f"--parts: unknown {sorted(parts - known)}")
        print("load average (1, 5, 15 min) at the start: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        if "oscillator" in parts:
            oscillator_table(args.base)
        if "mechanisms" in parts:
            mechanism_table(args.base)
        if "chains" in parts:
            chain_table(args.base, [int(v) for v in args.chains.split(",")])
        if "compile" in parts:
            compile_table(args.base)
        print("load average (1, 5, 15 min) at the end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
