"""Honesty of the enumeration: how often `pympc.enumerate_solutions` reports no solution (SetKind.NONE) while
Lemke's method (no fallback) or the exact MILP method finds a point that passes the problem's own verification (a
*false NONE*), how often it lists a point that does not verify (a *false point*), and how many points of an
independent oracle (every support examined without pruning, at its own scale: ``tests/test_enumeration_
completeness.py``) it misses, with the sets whose kind is wrong (UNIQUE for FINITE, NONE for UNIQUE, ...).  With
``--compiled``, the simulator's route too (`EventProblem.solution_set`: the compiled sets where they decide).

The corpora (fixed seeds): ``bad``, the problems of ``tests/test_enumeration_scaling.py`` (LCPs with SPD, P and
Gaussian M, Gram matrices ``G Gᵀ`` of a scaled G, HLCPs with Gaussian A, B; rows and columns scaled by
``10^U(−4, 4)``); ``well``, the same families unscaled; ``many``, LCPs with ``M ≈ −I`` and integer HLCPs (many
solutions, ties, singular supports), scaled; ``events``, the event HLCPs of the simulator's runs of every model
file and slider chains of 2–5 slots.  One row per family and the total; the problems with an error are listed.
Run it with another tree on ``PYTHONPATH`` to count there (the problems and oracles are this tree's tests').

    PYTHONPATH=. python benchmarks/enumeration_scaling.py [--corpus bad] [--count 1200] [--seed 7] [--max-n 10]
        [--compiled]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from test_enumeration_completeness import (as_hlcp, compiled_set, event_hlcps, many_solution_problems,  # noqa: E402
                                           misses, oracle_points, well_scaled_problems)
from test_enumeration_scaling import badly_scaled_problems, enumeration_errors  # noqa: E402

COLUMNS = ("problems", "NONE", "FINITE", "false NONE", "false points", "missed", "wrong kind")


def corpus(name, seed, count, max_n):
    if name == "bad":
        return list(badly_scaled_problems(seed, count, max_n))
    if name == "well":
        return list(well_scaled_problems(seed, count, max_n))
    if name == "many":
        return list(many_solution_problems(seed, count, min(max_n, 8)))
    return [("event", h) for h in event_hlcps()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=("bad", "well", "many", "events"), default="bad")
    ap.add_argument("--count", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-n", type=int, default=10)
    ap.add_argument("--compiled", action="store_true", help="count the compiled route (EventProblem.solution_set) too")
    args = ap.parse_args(argv)
    problems = corpus(args.corpus, args.seed, args.count, args.max_n)
    routes = ["enumerate"] + (["compiled"] if args.compiled else [])
    rows = {(f, r): np.zeros(len(COLUMNS), int) for r in routes for f, _ in problems}
    cpu = dict.fromkeys(routes, 0.0)
    for k, (family, p) in enumerate(problems):
        oracle = oracle_points(p)
        for route in routes:
            t0 = time.process_time()
            if route == "enumerate":
                s, false_none, false_points = enumeration_errors(p)
                q = p
            else:
                q = as_hlcp(p)[0]
                s = compiled_set(q)
                false_none = false_points = 0       # (the sets are the enumeration's: tests/test_fast_paths.py)
            cpu[route] += time.process_time() - t0
            missed, wrong, _ = misses(q, s, oracle)
            rows[family, route] += (1, s.kind.name == "NONE", s.kind.name == "FINITE", false_none, false_points,
                                    missed, wrong)
            if false_none or false_points or missed or wrong:
                print(f"  problem {k} ({family}, n = {p.n}, {route}): {s.kind.name} of {len(s.points)} point(s), "
                      f"false NONE {false_none}, false points {false_points}, missed {missed}, wrong kind {wrong}")
    print(f"{'family':<16}{'route':<11}" + "".join(f"{c:>13}" for c in COLUMNS))
    for route in routes:
        for (f, r), row in rows.items():
            if r == route:
                print(f"{f:<16}{r:<11}" + "".join(f"{v:>13}" for v in row))
        tot = np.sum([row for (f, r), row in rows.items() if r == route], axis=0)
        print(f"{'total':<16}{route:<11}" + "".join(f"{v:>13}" for v in tot) + f"   CPU {cpu[route]:.2f} s")


if __name__ == "__main__":
    main()
