"""Transitions of small mechanisms: what the event transitions cost, one run.

Table 1: for the forced friction oscillator (30 s, general and tree formulation), the slider-crank (2 s), the
cross slide and slider chains of 2 and 5 slots (2 s):
the whole simulation and the time spent in the transition (``Transition``) (projection, event HLCP, Lemke, enumeration of
the solution set, the look-ahead probe, verification of the new mode), per run and per transition (best of
several batches of CPU time: the machine is shared), every run on a model loaded afresh, and per transition with
the same model object reused for every run ("reused model": what a model simulated before pays; the difference
is first-use work per model and per new mode, and a colder cache).

Table 2: the compiled pieces against the paths they stand beside in the package, on the oscillator's own event
states, per call: the event HLCP by one compiled call (``dense_event``) against the NumPy build, and Lemke on
an event HLCP with the defaults (one compiled call, ``_kernel.solve_hlcp_default``) against its general path.

With ``--base PATH`` (a checkout of another tree), Table 1 side by side instead: ``--rounds`` rounds, each
running this script's cases in a fresh process of each tree in turn (the order alternating), µs per transition
as the median over rounds and its range, and the median of the ratios of the same round; each case twice, a
fresh model per run and (", reused") the same model for every run.

    python benchmarks/transition_speed.py
    python benchmarks/transition_speed.py --base /path/to/checkout --rounds 7
"""

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import pympc
from pympc.dynamics import events
from pympc.mechanics import slider_chain

MODELS = Path(__file__).parents[1] / "models"
_driver = importlib.import_module("pympc.dynamics.simulate")
# where the transition lives: dynamics/transition.py (a tree before issue 27: the driver's _Run.transition)
_OLD = hasattr(_driver, "_Run")
_transition = _driver if _OLD else importlib.import_module("pympc.dynamics.transition")
_OWNER, _METHOD = (_driver._Run, "transition") if _OLD else (_transition.Transition, "__call__")
_lemke = importlib.import_module("pympc.complementarity.lemke")


def transition_cost(path, t_end, formulation=None, batches=15, runs=2, reuse=False):
    """(transitions, ms per run, ms in transition per run): best of ``batches`` batches of ``runs`` runs (every call
    of the transition counts, the start's too: a run of one event, the cross slide's, has one).  Every run loads
    its model afresh (a new system: what a first run of a model pays), or with ``reuse`` all runs simulate the
    same system object (what a run of a model simulated before pays: the setup kept with the system, its plans)."""
    spent = [0.0, 0]
    kept = []
    inner = getattr(_OWNER, _METHOD)

    def timed(*args, **kwargs):
        t = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[0] += time.process_time() - t
            spent[1] += 1

    def run():
        system = kept[0] if kept else path() if callable(path) else pympc.load_model(path)
        if reuse and not kept:
            kept.append(system)
        return _driver.simulate(system, (0.0, t_end), samples=2, formulation=formulation)
    setattr(_OWNER, _METHOD, timed)
    try:
        spent[1] = 0
        run()
        calls = spent[1]
        best = None
        for _ in range(batches):
            spent[0] = 0.0
            t = time.process_time()
            for _ in range(runs):
                run()
            total = (time.process_time() - t) / runs
            if best is None or total < best[0]:
                best = (total, spent[0] / runs)
    finally:
        setattr(_OWNER, _METHOD, inner)
    return calls, best[0] * 1e3, best[1] * 1e3


def event_states():
    """The (run, assembly, directions) of every event HLCP the oscillator's 30 s run builds."""
    seen = []
    name = "solved_event_problem" if hasattr(_transition, "solved_event_problem") else "event_problem"
    build = getattr(_transition, name)

    def recording(a, dirs, mu, mu_s, stab, md=None, *rest):
        seen.append((a, np.array(dirs), mu, mu_s, stab, md))
        return build(a, dirs, mu, mu_s, stab, md, *rest)
    setattr(_transition, name, recording)
    try:
        _driver.simulate(pympc.load_model(MODELS / "friction_oscillator.toml"), (0.0, 30.0), samples=2)
    finally:
        setattr(_transition, name, build)
    return seen


def per_call(fn, items, repeats=200):
    """Best mean µs per call of ``fn(item)`` over the items."""
    best = np.inf
    for _ in range(5):
        t = time.process_time()
        for _ in range(repeats // 5):
            for it in items:
                fn(it)
        best = min(best, (time.process_time() - t) / (repeats // 5 * len(items)))
    return best * 1e6


CASES = (("friction oscillator 30 s, general", "friction_oscillator.toml", 30.0, None),
         ("friction oscillator 30 s, tree", "friction_oscillator.toml", 30.0, "tree"),
         ("slider-crank 2 s, general", "slider_crank.toml", 2.0, None),
         ("cross slide 2 s (2 slots)", "cross_slide.toml", 2.0, None),
         ("slider chain, 2 slots, 2 s", lambda: slider_chain(2), 2.0, None),
         ("slider chain, 5 slots, 2 s", lambda: slider_chain(5), 2.0, None))


REUSED = ", reused"
"""The suffix of a case's row with the same model reused across runs (Table 1 side by side)."""


def worker(batches):
    """One round of Table 1 in this process (``--worker``): µs per transition of every case, a fresh model per
    run and the same model reused, as JSON."""
    out = {}
    for name, path, t_end, form in CASES:
        for reuse, key in ((False, name), (True, name + REUSED)):
            n, total, spent = transition_cost(path if callable(path) else MODELS / path, t_end, form,
                                              batches=batches, reuse=reuse)
            out[key] = spent / n * 1e3
    print(json.dumps(out))


def side_by_side(base, rounds, batches):
    """Table 1 of this tree and of ``base`` in interleaved fresh processes (see the module)."""
    here = Path(__file__).parents[1]
    trees = {"base": Path(base).resolve(), "this": here}
    got = {"base": [], "this": []}
    for r in range(rounds):
        for tag in (("base", "this") if r % 2 == 0 else ("this", "base")):
            env = dict(os.environ, PYTHONPATH=str(trees[tag]))
            res = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", "--batches", str(batches)],
                                 env=env, capture_output=True, text=True, check=True)
            got[tag].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(f"Table 1, side by side: µs per transition (CPU), median [range] of {rounds} interleaved rounds "
          f"(fresh processes, best of {batches} batches of 2 runs each); base {trees['base']}")
    print(f"{'case':44s} {'base':>22s} {'this tree':>22s} {'base/this':>9s}")
    for name in [c[0] + r for c in CASES for r in ("", REUSED)]:
        if name not in got["base"][0]:       # a base whose worker has no reused column
            continue
        b = [g[name] for g in got["base"]]
        t = [g[name] for g in got["this"]]
        fmt = lambda v: f"{statistics.median(v):6.0f} [{min(v):5.0f}–{max(v):5.0f}]"   # noqa: E731
        ratio = statistics.median(x / y for x, y in zip(b, t))
        print(f"{name:44s} {fmt(b):>22s} {fmt(t):>22s} {ratio:9.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="a checkout of the tree to compare with (Table 1 side by side)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=4, help="batches per case and round (with --base)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.batches)
    if args.base:
        return side_by_side(args.base, args.rounds, args.batches)
    print("Table 1: transitions of small mechanisms (CPU, best of 15 batches of 2 runs; issue 28's target: "
          "≤ 150 µs per transition for systems of up to 5 slots)")
    print(f"{'case':34s} {'transitions':>11s} {'run ms':>8s} {'transition ms':>14s} {'µs/transition':>14s} "
          f"{'reused model':>12s}")
    for name, path, t_end, form in CASES:
        n, total, spent = transition_cost(path if callable(path) else MODELS / path, t_end, form)
        _, _, again = transition_cost(path if callable(path) else MODELS / path, t_end, form, reuse=True)
        print(f"{name:34s} {n:11d} {total:8.1f} {spent:14.2f} {spent / n * 1e3:14.0f} {again / n * 1e3:12.0f}")

    states = event_states()
    hlcps = [h for h in (events.event_problem(*s).hlcp for s in states) if not h._a_diagonal]
    print(f"\nTable 2: pieces on the oscillator's {len(states)} event HLCPs, µs per call (one run)")
    print(f"{'piece':44s} {'compiled':>9s} {'reference':>10s} {'ratio':>6s}")
    fast = per_call(lambda s: events.event_problem(*s), states)
    ref = per_call(lambda s: events._numpy_event_problem(*s, False),
                   [(a, d.astype(float), mu, mu_s, stab, md) for a, d, mu, mu_s, stab, md in states])
    print(f"{'event HLCP: dense_event / NumPy build':44s} {fast:9.1f} {ref:10.1f} {ref / fast:6.1f}")
    # the general path: as if the point needed _verify (and without the one-call kernel)
    mapped, kernel = _lemke.mapped_point, _lemke.HLCP_DEFAULT_KERNEL
    fast = per_call(_lemke.lemke, hlcps)
    _lemke.mapped_point, _lemke.HLCP_DEFAULT_KERNEL = (lambda *args: mapped(*args)[:3] + (True,)), False
    try:
        ref = per_call(_lemke.lemke, hlcps)
    finally:
        _lemke.mapped_point, _lemke.HLCP_DEFAULT_KERNEL = mapped, kernel
    print(f"{'Lemke, the ' + str(len(hlcps)) + ' with a non-diagonal A':44s} {fast:9.1f} {ref:10.1f} {ref / fast:6.1f}")


if __name__ == "__main__":
    main()
