"""Simulation speed, side by side, one run.

1. ``friction_oscillator.toml`` for 30 s: pympc's event-driven run against the same
   model with regularized friction (F = −μ|λ| tanh(v/ε), ε = 1e-4, scipy Radau).
   The event-time error is measured against a semi-analytic reference (every
   smooth phase of this model is a linear ODE with a closed-form solution; only
   the phase ends are found by root finding).  Stop events (slip velocity → 0)
   are compared for both; the regularized run has no sharp breakaway, so its
   stop times are the zero crossings of v after a slip.
2. Chains of 10 and 50 friction slots (``pympc.mechanics.slider_chain``) for 1 s:
   total time, events, the time of a whole transition, and of one event HLCP
   solve (the recorded event HLCPs re-solved by pympc's Lemke; the same problems
   reduced to LCPs and solved by quantecon's Lemke when it is installed).

    python benchmarks/simulation_speed.py
"""

import math
import statistics
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


def oscillator_table(**overrides):
    system = pympc.load_model(MODEL, **overrides)
    p, t_end = system.parameters, 30.0
    ref = reference_events(p, t_end)
    rows = []
    eps = 1e-4
    for name, (rhs, jac, _, x0), vi in (
            ("regularized, same model (pympc assembly), Radau", regularized_model(system, eps), 2),
            ("regularized, hand-written scalar RHS, Radau", regularized_scalar(p, eps), 1)):
        wall = median_time(lambda: regularized_run(rhs, jac, x0, t_end, eps, vi), 3)
        got = list(zip([k for k, _ in ref], regularized_run(rhs, jac, x0, t_end, eps, vi)))  # alternating
        rows.append((name, wall, len(got), got))
    for rtol in (1e-6, 1e-8, 1e-10):
        run = lambda: pympc.simulate(system, (0.0, t_end), rtol=rtol, atol=rtol * 1e-2, samples=2)  # noqa: E731
        wall = median_time(run, 3)
        tr = run()
        got = [(e.kind.name, e.time) for e in tr.events[1:]]
        assert [k for k, _ in got] == [k for k, _ in ref], "event sequence differs from the reference"
        rows.append((f"pympc event-driven, DOP853 rtol={rtol:g}", wall, len(got), got))
    print(f"\nfriction_oscillator.toml {overrides or ''}, 30 s: {len(ref)} reference events (closed-form phases); "
          "ratios against the first row")
    print(f"{'run':48s} {'wall':>9s} {'events':>7s} {'stop err':>9s} {'all err':>9s} {'speed-up':>9s} {'err ratio':>10s}")
    base = None
    for name, w, ne, got in rows:
        k = min(len(got), len(ref))
        err = max(abs(a[1] - b[1]) for a, b in zip(got[:k], ref[:k]))
        err_stop = max(abs(a[1] - b[1]) for a, b in zip(got[:k], ref[:k]) if b[0] == "SLIP_STOP")
        base = base or (w, err)
        print(f"{name:48s} {w * 1e3:7.1f}ms {ne:7d} {err_stop:9.1e} {err:9.1e} {base[0] / w:8.1f}x {base[1] / err:9.1e}x")


def chain_table():
    try:
        from quantecon.optimize import lcp_lemke
    except ImportError:
        lcp_lemke = None
    print("\nchains of friction slots, 1 s (slider_chain(n)); per-event HLCP solve times are medians over the "
          "recorded event HLCPs")
    print(f"{'n':>3s} {'total':>8s} {'events':>7s} {'pairs':>9s} {'transition':>11s} {'pympc HLCP':>11s} {'max':>8s} "
          f"{'quantecon LCP':>14s} {'ratio':>6s}")
    import importlib
    driver = importlib.import_module("pympc.dynamics.simulate")
    original = driver._Run.transition
    spent = []

    def timed(self, *args):
        t = time.perf_counter()
        out = original(self, *args)
        spent.append(time.perf_counter() - t)
        return out

    driver._Run.transition = timed
    for n in (10, 50):
        s = slider_chain(n)
        spent.clear()
        t0 = time.perf_counter()
        tr = pympc.simulate(s, (0.0, 1.0), samples=2)
        total = time.perf_counter() - t0
        per_transition = statistics.median(spent)
        assert tr.success, tr.message
        hl = [e.hlcp for e in tr.events]
        ts = [median_time(lambda h=h: pympc.solve(h), 5) for h in hl]
        pairs = [h.n for h in hl]
        q_med = float("nan")
        if lcp_lemke is not None:
            lcps = []
            for h in hl:
                try:
                    lcps.append(h.to_lcp().lcp)
                except pympc.ProblemError:
                    pass
            q_med = statistics.median(median_time(lambda L=L: lcp_lemke(L.M, L.q), 5) for L in lcps)
        med = statistics.median(ts)
        print(f"{n:3d} {total:7.2f}s {len(tr.events):7d} {min(pairs):4d}-{max(pairs):<4d} {per_transition * 1e3:9.2f}ms "
              f"{med * 1e3:9.3f}ms "
              f"{max(ts) * 1e3:6.2f}ms {q_med * 1e3:12.3f}ms {med / q_med:6.2f}")
    driver._Run.transition = original
    print("'transition': median time of a whole transition (projection, event HLCP assembly and solve, look-ahead,\n"
          "verification); 'pympc HLCP': the event HLCP solve alone; 'ratio': pympc HLCP / quantecon on the reduced LCP")


if __name__ == "__main__":
    oscillator_table()
    oscillator_table(mu_s=0.3)   # μ_s = μ: the regularized law can represent this one
    chain_table()
