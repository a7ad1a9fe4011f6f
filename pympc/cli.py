"""The ``pympc`` command line.

``pympc solve FILE``  solve an LCP/HLCP file (.npz or Siconos .dat) with the native solver.
``pympc classify FILE``  matrix-class tests and, for small problems, the full solution set.
``pympc crosscheck FILE``  lemke, ipopt and milp on the same problem, compared.
``pympc simulate MODEL.toml``  event-driven simulation: event table, summary, trajectory file and plots.
``pympc sweep SPEC.toml``  a parameter sweep on Dask (resumable), its summary and regime maps.
``pympc chain N``  the model file of a chain of N friction slots (for scaling studies).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .errors import OptionError, PympcError

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
    rep = crosscheck(p, solvers=tuple(args.solvers.split(",")), time_limit=args.time_limit)
    print(rep.table())
    return 0 if rep.agree else 1


class _Progress:
    """A progress bar on stderr, shown once a run has taken more than a second."""

    def __init__(self, stream=sys.stderr):
        import time
        self.clock, self.start, self.stream, self.shown = time.perf_counter, time.perf_counter(), stream, False

    def __call__(self, t, t0, t1):
        if self.clock() - self.start < 1.0:
            return
        frac = min(1.0, (t - t0) / (t1 - t0))
        bar = "#" * int(30 * frac)
        self.stream.write(f"\r[{bar:30s}] {100 * frac:5.1f}%  t = {t:.4g} s  ({self.clock() - self.start:.1f} s)")
        self.stream.flush()
        self.shown = True

    def close(self):
        if self.shown:
            self.stream.write("\n")


def _parse_sets(items):
    out = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise OptionError(f"--set expects NAME=VALUE, got {item!r}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise OptionError(f"--set {name}: {value!r} is not a number") from None
    return out


def _cmd_simulate(args):
    from pathlib import Path

    from . import load_model, simulate
    from .dynamics.plots import plot_trajectory

    system = load_model(args.model, **_parse_sets(args.set))
    # without --t-end the model's [simulation] table decides the span (simulate's default)
    t_span = None if args.t_end is None else (float(system.simulation.get("t_start", 0.0)), args.t_end)
    bar = _Progress()
    tr = simulate(system, t_span, formulation=args.formulation,
                  crosscheck=args.crosscheck, on_ambiguous=args.on_ambiguous, progress=bar)
    bar.close()
    print(f"model     {system.name} ({args.model}), formulation {tr.info['formulation']}, "
          f"{len(tr.slot_names)} slot(s), {len(tr.coordinate_names)} coordinates")
    if system.parameters:
        print("params    " + ", ".join(f"{k}={v:g}" for k, v in system.parameters.items()))
    print(tr.event_table())
    print(tr.summary())
    out = Path(args.out if args.out is not None else Path("results") / system.name)
    out.mkdir(parents=True, exist_ok=True)
    tr.save(out / "trajectory.npz")
    written = [out / "trajectory.npz"]
    if not args.no_plots:
        written += plot_trajectory(tr, out)
    print("wrote     " + ", ".join(str(p) for p in written))
    return 0 if tr.success else 1


def _cmd_chain(args):
    from .mechanics import dump_model, slider_chain

    text = dump_model(slider_chain(args.n, mu=args.mu))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote     {args.out}")
    else:
        sys.stdout.write(text)
    return 0


def _cmd_sweep(args):
    from pathlib import Path

    from .sweep import load_results, load_spec, plot_regime, run_sweep

    spec = load_spec(args.spec)                      # a bad spec stops here, before any worker starts
    store = Path(args.store or spec.store or Path("results") / "sweeps" / spec.name)
    print(f"sweep     {spec.name}: {len(spec.runs)} runs of {spec.model.source} over {', '.join(spec.axes)} "
          f"({spec.kind}) -> {store}", flush=True)
    try:
        report = run_sweep(spec, store, scheduler=args.scheduler, n_workers=args.workers, batch_size=args.batch_size,
                           resume=args.resume, retry_failed=args.retry_failed, dashboard=args.dashboard)
    except KeyboardInterrupt:
        print(f"\npympc: interrupted; finished batches are kept in {store}: run the same command with --resume "
              "to continue", file=sys.stderr)
        return 130
    print(report.summary())
    if args.plot:
        df = load_results(store)
        for obs in args.plot:
            fig = plot_regime(df, obs)
            path = store / f"{obs.replace('/', '_')}.png"
            fig.savefig(path, dpi=110)
            print(f"wrote     {path}")
    return 0 if report.complete and not report.failed else 1


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
    x.add_argument("--time-limit", type=float, default=60.0,
                   help="seconds for IPOPT and for the MILP each (default 60; a MILP out of time is UNDECIDED)")
    x.set_defaults(func=_cmd_crosscheck)
    m = sub.add_parser("simulate", help="simulate a model file event by event; print events, write trajectory and plots")
    m.add_argument("model", help="a TOML model file (see models/README.md)")
    m.add_argument("--t-end", type=float, default=None, help="end time (default: the model's [simulation] t_end)")
    m.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a model parameter (repeatable)")
    m.add_argument("--crosscheck", choices=["ipopt", "milp", "all"], default=None,
                   help="also solve every event's Pyomo MPEC model with these solvers")
    m.add_argument("--formulation", choices=["general", "tree"], default=None)
    m.add_argument("--on-ambiguous", choices=["stop", "lemke", "min_force"], default="stop",
                   help="rule for event HLCPs with several solutions (default: stop)")
    m.add_argument("--out", default=None, help="output directory (default: results/<model name>)")
    m.add_argument("--no-plots", action="store_true", help="write the trajectory only")
    m.set_defaults(func=_cmd_simulate)
    sw = sub.add_parser("sweep", help="run a parameter sweep (spec file) on Dask; resumable results and regime maps")
    sw.add_argument("spec", help="a TOML sweep spec (see examples/sweep_*.toml)")
    sw.add_argument("--store", default=None, help="results directory (default: the spec's, else results/sweeps/<spec>)")
    sw.add_argument("--resume", action="store_true",
                    help="continue a stored sweep (finished runs are always skipped; this also checks the store exists)")
    sw.add_argument("--retry-failed", action="store_true", help="run again the runs stored as FAILED")
    sw.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="a running Dask scheduler (tcp://host:8786); default: a local cluster, one worker per core")
    sw.add_argument("--workers", type=int, default=None, help="worker processes of the local cluster (default: cores)")
    sw.add_argument("--batch-size", type=int, default=None, help="runs per Dask task (default: the spec's, or automatic)")
    sw.add_argument("--dashboard", action="store_true", help="start the local cluster's dashboard (loopback, free port; needs bokeh)")
    sw.add_argument("--plot", action="append", metavar="OBSERVABLE",
                    help="draw a regime map of this result column into the store (repeatable)")
    sw.set_defaults(func=_cmd_sweep)
    ch = sub.add_parser("chain", help="write the model file of a chain of N friction slots")
    ch.add_argument("n", type=int)
    ch.add_argument("--mu", type=float, default=0.3)
    ch.add_argument("--out", default=None, help="file to write (default: standard output)")
    ch.set_defaults(func=_cmd_chain)
    return ap


def main(argv=None):
    """Entry point of the ``pympc`` command."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except PympcError as exc:
        print(f"pympc: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. an output directory that cannot be written
        if isinstance(exc, BrokenPipeError):
            sys.stderr.close()
            return 0
        print(f"pympc: error: {exc.strerror or exc}: {exc.filename or ''}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
