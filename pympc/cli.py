"""The ``pympc`` command line.

``pympc solve FILE``  solve an LCP/HLCP file (.npz or Siconos .dat) with the native solver.
``pympc classify FILE``  matrix-class tests and, for small problems, the full solution set.
``pympc crosscheck FILE``  lemke, ipopt and milp on the same problem, compared.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .errors import PympcError

__all__ = ["main"]


def _fmt(v):
    return np.array2string(np.asarray(v), precision=6, suppress_small=True, max_line_width=100)


def _cmd_solve(args):
    from . import read_problem, solve

    p = read_problem(args.file)
    r = solve(p, max_pivots=args.max_pivots)
    print(f"problem   {p!r}" + (f"  ({p.comment.splitlines()[0]})" if getattr(p, "comment", None) else ""))
    print(f"status    {r.status.name}: {r.message}")
    print(f"pivots    {r.pivots}")
    if hasattr(r, "z"):
        print(f"z         {_fmt(r.z)}\nw         {_fmt(r.w)}")
    else:
        print(f"x         {_fmt(r.x)}\ny         {_fmt(r.y)}")
    res = r.residual()
    print(f"residual  equation {res.equation:.2e}  negativity {res.negativity:.2e}  complementarity {res.complementarity:.2e}")
    return 0 if r.success else 1


def _cmd_classify(args):
    from . import classify, enumerate_solutions, read_problem

    p = read_problem(args.file)
    c = classify(p)
    print(f"problem   {p!r}")
    print(f"P-matrix / column W-property: {c.p_matrix}  ({c.how})")
    if p.n <= args.max_pairs:
        s = enumerate_solutions(p, max_pairs=args.max_pairs)
        print(f"solution set: {s.kind.name} ({len(s.points)} point(s) listed, {s.lps} LPs)")
        for pt in s.points:
            print("  ", _fmt(pt[0]))
    return 0


def _cmd_crosscheck(args):
    from . import crosscheck, read_problem

    p = read_problem(args.file)
    print(f"problem   {p!r}")
    rep = crosscheck(p, solvers=tuple(args.solvers.split(",")))
    print(rep.table())
    return 0 if rep.agree else 1


def build_parser():
    ap = argparse.ArgumentParser(prog="pympc", description="Friction in planar multibody systems: HLCP/LCP tools.")
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("solve", help="solve an LCP/HLCP file (.npz or Siconos .dat) with Lemke's method")
    s.add_argument("file")
    s.add_argument("--max-pivots", type=int, default=None)
    s.set_defaults(func=_cmd_solve)
    c = sub.add_parser("classify", help="matrix classes and (small problems) every solution")
    c.add_argument("file")
    c.add_argument("--max-pairs", type=int, default=12)
    c.set_defaults(func=_cmd_classify)
    x = sub.add_parser("crosscheck", help="solve with lemke, ipopt and milp and compare the answers")
    x.add_argument("file")
    x.add_argument("--solvers", default="lemke,ipopt,milp", help="comma-separated subset of lemke,ipopt,milp")
    x.set_defaults(func=_cmd_crosscheck)
    return ap


def main(argv=None):
    """Entry point of the ``pympc`` command."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except PympcError as exc:
        print(f"pympc: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
