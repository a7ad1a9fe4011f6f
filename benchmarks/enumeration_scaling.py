"""Honesty of the enumeration on badly scaled data: how often `pympc.enumerate_solutions` reports no solution
(SetKind.NONE) while Lemke's method (no fallback) or the exact MILP method finds a point that passes the problem's
own verification (a *false NONE*), and how often it lists a point that does not verify (a *false point*).

The problems are those of ``tests/test_enumeration_scaling.py`` (a fixed seed): LCPs with SPD, P and Gaussian
M, Gram matrices ``G Gᵀ`` of a scaled G, HLCPs with Gaussian A, B; 1..max-n pairs; rows and columns scaled by
``10^U(−4, 4)``.  One row per family and the total; the problems with an error are listed.  Run it with another
tree on ``PYTHONPATH`` to count there (the problems and oracles are this tree's test module's).

    PYTHONPATH=. python benchmarks/enumeration_scaling.py [--count 1200] [--seed 7] [--max-n 10]
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from test_enumeration_scaling import FAMILIES, badly_scaled_problems, enumeration_errors  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-n", type=int, default=10)
    args = ap.parse_args(argv)
    rows = {f: [0, 0, 0, 0] for f in FAMILIES}      # problems, NONE, false NONE, false points
    t0 = time.process_time()
    for k, (family, p) in enumerate(badly_scaled_problems(args.seed, args.count, args.max_n)):
        s, false_none, false_points = enumeration_errors(p)
        row = rows[family]
        row[0] += 1
        row[1] += s.kind.name == "NONE"
        row[2] += false_none
        row[3] += false_points
        if false_none or false_points:
            print(f"  problem {k} ({family}, n = {p.n}): {s.kind.name}, false NONE {false_none}, false points "
                  f"{false_points}")
    print(f"{'family':<12}{'problems':>10}{'NONE':>8}{'false NONE':>12}{'false points':>14}")
    for f, (m, none, fn, fp) in rows.items():
        print(f"{f:<12}{m:>10}{none:>8}{fn:>12}{fp:>14}")
    tot = np.sum(list(rows.values()), axis=0)
    print(f"{'total':<12}{tot[0]:>10}{tot[1]:>8}{tot[2]:>12}{tot[3]:>14}")
    print(f"CPU {time.process_time() - t0:.1f} s")


if __name__ == "__main__":
    main()
