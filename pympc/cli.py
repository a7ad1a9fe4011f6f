"""The ``pympc`` command line.

``pympc solve FILE``  solve an LCP/HLCP file (.npz or Siconos .dat) with the native solver.
``pympc classify FILE``  matrix-class tests and, for small problems, the full solution set.
``pympc crosscheck FILE``  lemke, ipopt and milp on the same problem, compared.
``pympc simulate MODEL.toml``  event-driven simulation: event table, summary, trajectory file and plots.
``pympc sweep SPEC.toml``  a parameter sweep on Dask (resumable), its summary and regime maps.
``pympc chain N``  the model file of a chain of N friction slots (for scaling studies).
``pympc identify MODEL DATA --fit mu,mu_s``  estimate parameters from measured data; table, plots, result file.
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
    """A progress bar on stderr, shown once a run has taken more than a second.

    It is drawn only when the stream is a terminal: ``\\r`` updates would
    litter a redirected log.
    """

    def __init__(self, stream=None):
        import time
        stream = sys.stderr if stream is None else stream
        self.clock, self.start, self.stream, self.shown = time.perf_counter, time.perf_counter(), stream, False
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(isatty()) if callable(isatty) else False

    def __call__(self, t, t0, t1):
        if not self.enabled or self.clock() - self.start < 1.0:
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
    t_start = float(system.simulation.get("t_start", 0.0))
    if args.t_end is None and system.simulation.get("t_end") is None:
        raise OptionError(f"no end time: pass --t-end T on the command line, or set t_end in the [simulation] "
                          f"table of {args.model}")
    if args.t_end is not None and not args.t_end > t_start:
        raise OptionError(f"--t-end {args.t_end:g} must be after the model's t_start = {t_start:g}")
    t_span = None if args.t_end is None else (t_start, args.t_end)
    bar = _Progress()
    tr = simulate(system, t_span, formulation=args.formulation,
                  crosscheck=args.crosscheck, on_ambiguous=args.on_ambiguous, progress=bar,
                  project_initial=args.project_initial)
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


def _count(minimum):
    """An argparse type: an integer >= ``minimum``."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} must be >= {minimum}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def _seconds(text):
    """An argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a number of seconds > 0")
    return value


def _sub(sub, name, help, example, description=None):
    """A subcommand whose help ends with an example."""
    return sub.add_parser(name, help=help, description=description or help, epilog="example:\n  " + example,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _cmd_identify(args):
    from pathlib import Path

    from .identify import Experiment, estimate

    fixed = _parse_sets(args.set)
    noise = None
    if args.noise is not None:
        noise = {}
        for item in args.noise.split(","):
            name, sep, value = item.partition("=")
            try:
                if sep:
                    noise[name.strip()] = float(value)
                else:
                    noise = float(item)
            except ValueError:
                raise OptionError(f"--noise expects SIGMA or OUTPUT=SIGMA,..., got {args.noise!r}") from None
    outputs = args.outputs.split(",") if args.outputs else None
    data = args.data
    if args.t_end is not None:           # the record up to t_end (a short window for --method mpec)
        from .identify.experiment import read_data
        data = read_data(args.data)
        if "t" not in data.columns or not (data["t"] <= args.t_end).any():
            raise OptionError(f"--t-end {args.t_end:g}: {args.data} has no samples at t <= {args.t_end:g}")
        data = data[data["t"] <= args.t_end]
    exp = Experiment(args.model, data, outputs=outputs, fixed=fixed, noise=noise)
    extra = {"step": args.step} if args.step is not None else {}
    if args.step is not None and args.method != "mpec":
        raise OptionError("--step is the time step of --method mpec")
    result = estimate(exp, args.fit, method=args.method, jac=args.jac, starts=args.starts, seed=args.seed,
                      profile=args.profile.split(",") if args.profile else (), **extra)
    print(f"model     {args.model}, data {args.data}: {len(exp.t)} samples of {', '.join(exp.outputs)}")
    print(result.summary())
    print(result.starts[["start", "cost", "status", "at_best"] + [c for c in result.starts.columns
                                                                   if c.endswith("_end")]].to_string(index=False))
    out = Path(args.out if args.out is not None else Path("results") / f"identify_{exp.model.stem}")
    out.mkdir(parents=True, exist_ok=True)
    result.save(out / "result.json")
    written = [out / "result.json"]
    if not args.no_plots:
        written += result.write_plots(out)
    print("wrote     " + ", ".join(str(p) for p in written))
    return 0 if result.ok else 1


def _cmd_sweep(args):
    from pathlib import Path

    from .sweep import load_results, load_spec, plot_regime, run_sweep

    spec = load_spec(args.spec)                      # a bad spec stops here, before any worker starts
    store = Path(args.store or spec.store or Path("results") / "sweeps" / spec.name)
    print(f"sweep     {spec.name}: {len(spec.runs)} runs of {spec.model.source} over {', '.join(spec.axes)} "
          f"({spec.kind}) -> {store}", flush=True)
    try:
        report = run_sweep(spec, store, scheduler=args.scheduler, n_workers=args.workers, batch_size=args.batch_size,
                           resume=args.resume, retry_failed=args.retry_failed, dashboard=args.dashboard,
                           timeout=args.run_timeout)
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
    # 0: every run stored and SUCCESS; 1: some run did not succeed (any other status) or was lost;
    # 2 (main): bad spec, option or store; 130: interrupted
    return 0 if report.ok else 1


def build_parser():
    from . import __version__

    ap = argparse.ArgumentParser(prog="pympc", description="Friction in planar multibody systems: HLCP/LCP tools.",
                                 epilog="example:\n  pympc simulate models/friction_oscillator.toml --t-end 5\n"
                                        "run 'pympc COMMAND --help' for the options of a command\n",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"pympc {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = _sub(sub, "solve", "solve an LCP/HLCP file (.npz or Siconos .dat) with Lemke's method",
             "pympc solve tests/data/lcp_CPS_2.dat --max-pivots 500")
    s.add_argument("file", help="problem file: pympc .npz (LCP or HLCP) or Siconos dense .dat (LCP)")
    s.add_argument("--max-pivots", type=_count(1), default=None, metavar="N",
                   help="pivot limit of Lemke's method (default: 1000 + 100 n)")
    s.set_defaults(func=_cmd_solve)
    c = _sub(sub, "classify", "matrix classes and (small problems) every solution",
             "pympc classify tests/data/lcp_CPS_1.dat --max-pairs 8")
    c.add_argument("file", help="problem file: pympc .npz (LCP or HLCP) or Siconos dense .dat (LCP)")
    c.add_argument("--max-pairs", type=_count(0), default=12, metavar="N",
                   help="enumerate every solution when the problem has at most N pairs "
                        "(cost up to 2^N LPs; 0 skips the enumeration; default: %(default)s)")
    c.set_defaults(func=_cmd_classify)
    x = _sub(sub, "crosscheck", "solve with lemke, ipopt and milp and compare the answers",
             "pympc crosscheck tests/data/lcp_CPS_2.dat --solvers lemke,milp --time-limit 10")
    x.add_argument("file", help="problem file: pympc .npz (LCP or HLCP) or Siconos dense .dat (LCP)")
    x.add_argument("--solvers", default="lemke,ipopt,milp", help="comma-separated subset of lemke,ipopt,milp "
                   "(default: %(default)s)")
    x.add_argument("--time-limit", type=float, default=60.0,
                   help="seconds for IPOPT and for the MILP each (default 60; a MILP out of time is UNDECIDED)")
    x.set_defaults(func=_cmd_crosscheck)
    m = _sub(sub, "simulate", "simulate a model file event by event; print events, write trajectory and plots",
             "pympc simulate models/friction_oscillator.toml --t-end 5 --set F0=3 --out results/osc --no-plots")
    m.add_argument("model", help="a TOML model file (see models/README.md)")
    m.add_argument("--t-end", type=float, default=None, metavar="T",
                   help="end time in s (default: the model's [simulation] t_end)")
    m.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a model parameter (repeatable), e.g. --set mu=0.2")
    m.add_argument("--crosscheck", choices=["ipopt", "milp", "all"], default=None,
                   help="also solve every event's Pyomo MPEC model with these solvers (default: none)")
    m.add_argument("--formulation", choices=["general", "tree"], default=None,
                   help="equations of motion: 'general' (absolute coordinates and multipliers) or 'tree' "
                        "(Huston's independent coordinates; open chains and trees) "
                        "(default: the formulation the model file names)")
    m.add_argument("--on-ambiguous", choices=["stop", "lemke", "min_force"], default="stop",
                   help="rule for event HLCPs with several solutions (default: stop)")
    m.add_argument("--out", default=None, help="output directory (default: results/<model name>)")
    m.add_argument("--no-plots", action="store_true", help="write the trajectory only")
    m.add_argument("--project-initial", action="store_true",
                   help="project initial positions/velocities that are off the constraints onto them (default: "
                        "refuse them); the violation is printed in the summary")
    m.set_defaults(func=_cmd_simulate)
    sw = _sub(sub, "sweep", "run a parameter sweep (spec file) on Dask; resumable results and regime maps",
              "pympc sweep examples/sweep_oscillator.toml --plot stick_phases.slot\n\n"
              "exit status: 0 every run stored with status SUCCESS; 1 some run stored with another status "
              "(FAILED,\n  TIMEOUT, PARADOX, ZENO, ERROR, ...) or lost (rerun to do it); 2 bad spec, option or store "
              "(another\n  spec's store, a store another sweep is writing); 130 interrupted (--resume continues)")
    sw.add_argument("spec", help="a TOML sweep spec (see examples/sweep_*.toml)")
    sw.add_argument("--store", default=None, help="results directory (default: the spec's, else results/sweeps/<spec>)")
    sw.add_argument("--resume", action="store_true",
                    help="continue a stored sweep (finished runs are always skipped; this also checks the store exists)")
    sw.add_argument("--retry-failed", action="store_true", help="run again the runs stored as FAILED or TIMEOUT")
    sw.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="a running Dask scheduler (tcp://host:8786); default: a local cluster, one worker per core")
    sw.add_argument("--workers", type=_count(1), default=None, help="worker processes of the local cluster (default: cores)")
    sw.add_argument("--batch-size", type=_count(1), default=None,
                    help="runs per Dask task (default: the spec's, or automatic)")
    sw.add_argument("--run-timeout", type=_seconds, default=None, metavar="SECONDS",
                    help="wall-time limit of one run (default: the spec's [options] timeout, else none); a run past "
                         "it is stored with status TIMEOUT and the sweep goes on")
    sw.add_argument("--dashboard", action="store_true", help="start the local cluster's dashboard (loopback, free port; needs bokeh)")
    sw.add_argument("--plot", action="append", metavar="OBSERVABLE",
                    help="draw a regime map of this result column into the store (repeatable)")
    sw.set_defaults(func=_cmd_sweep)
    ch = _sub(sub, "chain", "write the model file of a chain of N friction slots",
              "pympc chain 10 --mu 0.2 --out chain10.toml")
    ch.add_argument("n", type=int, help="number of sliders (and friction slots) in the chain")
    ch.add_argument("--mu", type=float, default=0.3,
                    help="Coulomb friction coefficient of every slot (default: %(default)s)")
    ch.add_argument("--out", default=None, help="file to write (default: standard output)")
    ch.set_defaults(func=_cmd_chain)
    idf = _sub(sub, "identify", "estimate model parameters (e.g. mu, mu_s) from measured data",
               "pympc identify models/friction_oscillator.toml examples/data/friction_oscillator.csv --fit mu,mu_s")
    idf.add_argument("model", help="a TOML model file")
    idf.add_argument("data", help="measured data (.csv, .parquet or .npz): a column t and outputs named like "
                                  "the trajectory's columns (e.g. mass.x)")
    idf.add_argument("--fit", required=True, help="comma-separated parameters to estimate, e.g. mu,mu_s")
    idf.add_argument("--set", action="append", metavar="NAME=VALUE", help="hold a model parameter at a value (repeatable)")
    idf.add_argument("--outputs", default=None, help="comma-separated data columns to fit (default: all but t)")
    idf.add_argument("--noise", default=None, help="noise standard deviation: SIGMA or OUTPUT=SIGMA,... "
                                                   "(default: estimated from the residuals)")
    idf.add_argument("--method", choices=["shooting", "mpec"], default="shooting",
                     help="shooting (event-driven simulations, default) or mpec (the whole trajectory as one "
                          "Pyomo MPEC, first-order time stepping)")
    idf.add_argument("--step", type=float, default=None,
                     help="time step of --method mpec in seconds (default 0.02); the estimate is O(step) off")
    idf.add_argument("--t-end", type=float, default=None, help="fit the data up to this time only (seconds)")
    idf.add_argument("--jac", choices=["fd", "sensitivity"], default="sensitivity",
                     help="Jacobian of the residuals: the simulator's forward sensitivities (default) or finite "
                          "differences of the simulator")
    idf.add_argument("--starts", type=int, default=1, help="number of starts (initial values, then Sobol points)")
    idf.add_argument("--seed", type=int, default=0, help="seed of the Sobol sample")
    idf.add_argument("--profile", default=None, help="comma-separated parameters to profile")
    idf.add_argument("--out", default=None, help="output directory (default: results/identify_<model>)")
    idf.add_argument("--no-plots", action="store_true", help="write the result file only")
    idf.set_defaults(func=_cmd_identify)
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
