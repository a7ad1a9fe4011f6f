"""The ``pympc`` command line.

``pympc solve FILE``  solve an LCP/HLCP file (.npz or Siconos .dat) with the native solver.
``pympc classify FILE``  matrix-class tests and, for small problems, the full solution set.
``pympc crosscheck FILE``  lemke, ipopt and milp on the same problem, compared.
``pympc simulate MODEL.toml``  event-driven simulation: event table, summary, trajectory file and plots.
``pympc sweep SPEC.toml``  a parameter sweep on Dask (resumable), its summary and regime maps.
``pympc chain N``  the model file of a chain of N friction slots (for scaling studies).
``pympc identify MODEL DATA --fit mu,mu_s``  estimate parameters from measured data; table, plots, result file.
``pympc design MODEL DESIGN.toml``  experiment design: Fisher information, criteria, exploration, optimum.
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
    """``--set NAME=VALUE`` items → {name: number, or an expression string of the model file's language}."""
    def value(name, text):
        if not text:
            raise OptionError(f"--set {name}: no value; give a number or an expression such as pi/6")
        try:
            return float(text)
        except ValueError:      # an expression in the model file's language, parsed when the model binds it
            return text
    return _parse_assignments(items, "--set", value)


def _set_numbers(model, sets):
    """``sets`` with every expression string evaluated over the model's parameters (for jobs that take numbers)."""
    texts = [k for k, v in sets.items() if isinstance(v, str)]
    if not texts:
        return dict(sets)
    from . import load_model
    system = load_model(model)
    for k in texts:
        if k not in system.parameter_definitions:
            raise OptionError(f"--set {k}={sets[k]}: {k} is not a parameter of {model}, so it takes a number")
    bound = system.bind({k: v for k, v in sets.items() if k in system.parameter_definitions}).parameters
    return {k: (bound[k] if k in texts else v) for k, v in sets.items()}


def _run_folder(name, sets, out, overwrite):
    """The folder of a simulation's results, never one holding an earlier run unless ``overwrite``.

    Default: ``results/<model>`` or, with ``--set``, ``results/<model>_<NAME=VALUE>_...``; when that
    holds a run, the first free ``...-2``, ``...-3``.  ``--out DIR`` holding a run is an error
    without ``--overwrite``.
    """
    import re
    from pathlib import Path

    def taken(p):
        return any((p / f).exists() for f in ("trajectory.npz", "run.json"))

    if out is not None:
        out = Path(out)
        if taken(out) and not overwrite:
            raise OptionError(f"--out {out} holds an earlier run (trajectory.npz / run.json): pass --overwrite to "
                              "replace it, or another --out")
        return out
    label = "_".join([name] + [f"{k}={v if isinstance(v, str) else format(v, 'g')}" for k, v in sets.items()])
    base = Path("results") / re.sub(r"[^\w.=+-]", "_", label)
    if overwrite or not taken(base):
        return base
    n = 2
    while taken(base.with_name(f"{base.name}-{n}")):
        n += 1
    return base.with_name(f"{base.name}-{n}")


def _cmd_simulate(args):
    import json
    import platform
    from datetime import datetime, timezone

    from . import __version__, _forked, load_model, simulate
    from .dynamics import plots

    sets = _parse_sets(args.set)
    system = load_model(args.model, **sets)
    # without --t-end the model's [simulation] table decides the span (simulate's default)
    t_start = float(system.simulation.get("t_start", 0.0))
    if args.t_end is None and system.simulation.get("t_end") is None:
        raise OptionError(f"no end time: pass --t-end T on the command line, or set t_end in the [simulation] "
                          f"table of {args.model}")
    if args.t_end is not None and not args.t_end > t_start:
        raise OptionError(f"--t-end {args.t_end:g} must be after the model's t_start = {t_start:g}")
    t_span = None if args.t_end is None else (t_start, args.t_end)
    out = _run_folder(system.name, sets, args.out, args.overwrite)     # refused before the run, not after
    # the figures are drawn by helper processes (where forking is safe and there are two cores): forked now, they
    # import matplotlib while this process loads its kernels and simulates, then draw beside its own writing;
    # "wrote" below lists a figure only once its helper has written it, and a helper's error is raised here
    helper = None if args.no_plots else _forked.start(plots._import_matplotlib)
    try:
        bar = _Progress()
        tr = simulate(system, t_span, formulation=args.formulation,
                      crosscheck=args.crosscheck, on_ambiguous=args.on_ambiguous, progress=bar,
                      project_initial=args.project_initial, samples=args.samples)
        bar.close()
        out.mkdir(parents=True, exist_ok=True)
        if helper is not None:
            data = plots._figure_input(tr)
            helper.submit(plots._write_figures, [(data, out, "", system.name, names)
                                                 for names in plots._split_figures(tr, 2)])
        print(f"model     {system.name} ({args.model}), formulation {tr.info['formulation']}, "
              f"{len(tr.slot_names)} slot(s), {len(tr.coordinate_names)} coordinates")
        if system.parameters:
            print("params    " + ", ".join(f"{k}={v:g}" + ("*" if k in sets else "")
                                           for k, v in system.parameters.items())
                  + ("   (* set on the command line)" if sets else ""))
        print(tr.event_table())
        print(tr.summary())
        run = {"model": str(args.model), "name": system.name, "model_hash": tr.model_hash,
               "parameters": {k: float(v) for k, v in tr.parameters.items()}, "set": sets,
               "t_span": [float(tr.t[0]), float(t_span[1] if t_span else system.simulation["t_end"])],
               "samples": len(tr.sample_rows()), "formulation": tr.info["formulation"], "crosscheck": args.crosscheck,
               "on_ambiguous": args.on_ambiguous, "project_initial": args.project_initial, "status": tr.status.name,
               "message": tr.message, "events": len(tr.events), "pympc": __version__,
               "python": platform.python_version(), "written": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        (out / "run.json").write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
        tr.save(out / "trajectory.npz")
        written = [out / "run.json", out / "trajectory.npz", tr.to_csv(out / "trajectory.csv")]
        if helper is not None:
            order = plots._figure_names(tr)
            written += sorted((p for part in helper.result() for p in part), key=lambda p: order.index(p.stem))
        elif not args.no_plots:
            written += plots.plot_trajectory(tr, out, title=system.name)
    finally:
        if helper is not None:
            helper.close()
    print("wrote     " + ", ".join(str(p) for p in written))
    return 0 if tr.success else 1


def _cmd_chain(args):
    import os

    from .mechanics import write_slider_chain

    if not args.out:
        write_slider_chain(args.n, sys.stdout, mu=args.mu)
        return 0
    part = f"{args.out}.part"          # the file appears whole or not at all
    try:
        with open(part, "w", encoding="utf-8") as f:
            write_slider_chain(args.n, f, mu=args.mu)
        os.replace(part, args.out)
    except OSError as exc:
        raise OptionError(f"--out {args.out}: cannot write it ({exc.strerror or exc})") from None
    finally:
        if os.path.exists(part):
            os.remove(part)
    print(f"wrote     {args.out}")
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


EXIT_OK = 0
"""``pympc identify``: the fit is sound and every fitted parameter is identified (or at a bound) with an interval."""
EXIT_FIT_FAILED = 1
"""``pympc identify``: the fit itself failed its checks (not converged, not stationary, a simulation failed, or the
MPEC answer not verified)."""
EXIT_ERROR = 2
"""Bad input or options (every subcommand; printed as ``pympc: error: ...``)."""
EXIT_NOT_IDENTIFIED = 3
"""``pympc identify``: the fit is done but not every parameter is trustworthy: one is not identifiable, only
bounded on one side, or its interval is unreliable (the residuals contradict the stated noise), or fewer than two
of several starts reached the best cost.  A best start on a plateau (the outputs do not depend on the parameters)
whose parameters are reported not identified also exits 3.  ``--accept-unidentifiable`` turns this into 0."""


def _parse_assignments(items, option, parse):
    """``NAME=VALUE`` items (repeatable options, each possibly comma-separated) → {name: parse(name, value)}."""
    out = {}
    for item in items or ():
        for part in (p for p in item.split(",") if p.strip()):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or not name:
                raise OptionError(f"{option} expects NAME=VALUE, got {part!r}")
            if name in out:
                raise OptionError(f"{option} {name}: given twice")
            out[name] = parse(name, value.strip())
    return out


def _cli_number(option, name, text, open_side=False):
    """A number given on the command line for ``option`` (``""`` → None when ``open_side``)."""
    if open_side and text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        raise OptionError(f"{option} {name}: {text!r} is not a number") from None
    if np.isnan(v) or (np.isinf(v) and not open_side):
        raise OptionError(f"{option} {name}: {text!r} must be a finite number")
    return v


def _cli_bounds(name, text):
    lo, sep, hi = text.partition(":")
    if not sep:
        raise OptionError(f"--bounds {name}: expects LOW:HIGH (either side may be empty for no bound), got {text!r}")
    return (_cli_number("--bounds", name, lo.strip(), True), _cli_number("--bounds", name, hi.strip(), True))


def _cmd_identify(args):
    from pathlib import Path

    from .identify import Experiment, Fesd, Mpec, Parameter, Shooting, estimate

    fixed = _set_numbers(args.model, _parse_sets(args.set))
    fit = [n for n in (s.strip() for s in args.fit.split(",")) if n]
    starts = _parse_assignments(args.start, "--start", lambda n, v: _cli_number("--start", n, v))
    bounds = _parse_assignments(args.bounds, "--bounds", _cli_bounds)
    for name in fixed:
        if name in fit:
            raise OptionError(f"--set {name}: {name} is fitted (--fit {args.fit}); to start its fit at a value "
                              f"use --start {name}=VALUE (and --bounds {name}=LOW:HIGH for its box)")
    for option, given in (("--start", starts), ("--bounds", bounds)):
        for name in given:
            if name not in fit:
                raise OptionError(f"{option} {name}: {name} is not fitted (--fit {args.fit}); "
                                  "to hold a parameter at a value use --set NAME=VALUE")
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
    profile = args.profile.split(",") if args.profile else ()
    if args.method != "fesd" and (args.elements is not None or args.stages is not None or args.refine is not None):
        raise OptionError("--elements and --stages are options of --method fesd"
                          + (" (--refine too)" if args.refine is not None else ""))
    if args.method in ("mpec", "fesd"):
        if args.starts != 1 or profile:
            raise OptionError(f"--method {args.method} solves once from the start values: --starts and --profile are "
                              "options of --method shooting; leave them out")
    if args.method == "mpec":
        method = Mpec(jac=args.jac, **({"step": args.step} if args.step is not None else {}))
    elif args.method == "fesd":
        if args.step is not None:
            raise OptionError("--step is the time step of --method mpec (--method fesd: --elements, --stages)")
        method = Fesd(jac=args.jac, **{k: v for k, v in (("elements", args.elements), ("stages", args.stages),
                                                         ("refine", args.refine)) if v is not None})
    else:
        if args.step is not None:
            raise OptionError("--step is the time step of --method mpec")
        method = Shooting(jac=args.jac, starts=args.starts, seed=args.seed)
    specs = [Parameter(n, initial=starts.get(n), bounds=bounds.get(n)) for n in fit]
    result = estimate(exp, specs, method, profile=profile)
    print(f"model     {args.model}, data {args.data}: {len(exp.t)} samples of {', '.join(exp.outputs)}")
    print(result.summary())
    table = result.starts[["start", "cost", "status", "at_best"] + [c for c in result.starts.columns
                                                                     if c.endswith("_start") or c.endswith("_end")]
                          + ["message"]].copy()
    table["message"] = table["message"].astype(str).str.slice(0, 100)
    print(table.to_string(index=False))
    out = Path(args.out if args.out is not None else Path("results") / f"identify_{exp.model.stem}")
    out.mkdir(parents=True, exist_ok=True)
    result.save(out / "result.json")
    written = [out / "result.json"]
    if not args.no_plots:
        written += result.write_plots(out)
    print("wrote     " + ", ".join(str(p) for p in written))
    best = result.method.get("best_start")
    plateau = best is not None and result.starts.loc[best, "status"] == "flat"
    if not result.ok and not (plateau and not result.checks()["identifiable"][0]):
        print(f"exit      {EXIT_FIT_FAILED}: the fit failed its checks (see the FAIL lines)")
        return EXIT_FIT_FAILED
    if not result.reliable:
        checks = result.checks()
        why = {"identifiable": "a parameter is not identified (its row above shows no interval, or only a bound)",
               "noise": "the residuals contradict the stated noise (no interval holds)",
               "multistart": "fewer than two starts reached the best cost (it may be a local minimum)"}
        bad = "; ".join(f"check {k} failed: {why[k]}" for k in why if not checks[k][0])
        if args.accept_unidentifiable:
            print(f"exit      {EXIT_OK}: accepted with --accept-unidentifiable although {bad}")
            return EXIT_OK
        print(f"exit      {EXIT_NOT_IDENTIFIED}: the fit is done but {bad} (--accept-unidentifiable exits 0)")
        return EXIT_NOT_IDENTIFIED
    return EXIT_OK


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


def _cmd_design(args):
    from pathlib import Path

    from .design import evaluate, explore, load_design, optimize, plot_design_map

    spec = load_design(args.spec, model=args.model)        # a bad spec stops here, before anything runs
    sets = args.set or []
    point = _set_numbers(args.model, _parse_sets([x for x in sets if not x.startswith("outputs=")]))
    point.update(("outputs", x.partition("=")[2]) for x in sets if x.startswith("outputs="))
    print(f"design    {spec.name}: estimate {', '.join(spec.names)} of {spec.model.name}; criterion {spec.criterion}; "
          f"{'prior of ' + str(spec.draws) + ' draws' if spec.distribution else 'prior values'}", flush=True)
    info = evaluate(spec, point)
    print("point     " + ", ".join(f"{k} = {v}" for k, v in {**spec.base, **point}.items()))
    print(info.summary())
    status = 1 if info.singular else 0
    out = Path(args.out or Path("results") / f"design_{spec.name}")
    dask = dict(scheduler=args.scheduler, n_workers=args.workers, serial=args.serial)
    if args.explore:
        df = explore(spec, **dask)
        out.mkdir(parents=True, exist_ok=True)
        df.to_csv(out / "explore.csv", index=False)
        counts = df["status"].value_counts().to_dict()
        print(f"explore   {len(df)} designs over {', '.join(spec.axes)}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        ok = df[df["status"] == "ok"]
        if len(ok):
            best = ok.loc[ok["loss"].idxmin()]
            print("best      " + ", ".join(f"{k} = {best[k]}" for k in spec.axes) + f": {spec.criterion} = {best[spec.criterion]:.6g}")
        print(f"wrote     {out / 'explore.csv'}")
        if counts.get("failed"):
            status = 1
        if args.plot:
            x, _, y = args.plot.partition(",")
            rest = {k: spec.points[0][k] for k in spec.axes if k not in (x, y)}   # a map is a slice at the others' first values
            drawn = df[np.logical_and.reduce([df[k] == v for k, v in rest.items()] + [np.ones(len(df), bool)])]
            fig = plot_design_map(drawn, x, y or None, title=f"{spec.criterion} over ({x}, {y})" + "".join(
                f", {k} = {v}" for k, v in rest.items()))
            fig.savefig(out / "design_map.png", dpi=110)
            print(f"wrote     {out / 'design_map.png'}")
    if args.optimize:
        res = optimize(spec, **dask)
        out.mkdir(parents=True, exist_ok=True)
        res.history.to_csv(out / "optimize.csv", index=False)
        print(res.summary())
        print(f"wrote     {out / 'optimize.csv'}")
    return status


def build_parser():
    from . import __version__

    ap = argparse.ArgumentParser(prog="pympc", description="Friction in planar multibody systems: HLCP/LCP tools.",
                                 epilog="example:\n  pympc simulate models/friction_oscillator.toml --t-end 5\n"
                                        "run 'pympc COMMAND --help' for the options of a command\n",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"pympc {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = _sub(sub, "solve", "solve an LCP/HLCP file (.npz or Siconos .dat) with Lemke's method",
             "pympc solve examples/lcp_CPS_4.dat --max-pivots 500")
    s.add_argument("file", help="problem file: pympc .npz (LCP or HLCP) or Siconos dense .dat (LCP)")
    s.add_argument("--max-pivots", type=_count(1), default=None, metavar="N",
                   help="pivot limit of Lemke's method (default: 1000 + 100 n)")
    s.set_defaults(func=_cmd_solve)
    c = _sub(sub, "classify", "matrix classes and (small problems) every solution",
             "pympc classify examples/lcp_mmc.dat --max-pairs 8")
    c.add_argument("file", help="problem file: pympc .npz (LCP or HLCP) or Siconos dense .dat (LCP)")
    c.add_argument("--max-pairs", type=_count(0), default=12, metavar="N",
                   help="enumerate every solution when the problem has at most N pairs "
                        "(cost up to 2^N LPs; 0 skips the enumeration; default: %(default)s)")
    c.set_defaults(func=_cmd_classify)
    x = _sub(sub, "crosscheck", "solve with lemke, ipopt and milp and compare the answers",
             "pympc crosscheck examples/lcp_CPS_4.dat --solvers lemke,milp --time-limit 10")
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
                   help="override a model parameter (repeatable): a number or an expression in the model file's language, e.g. --set mu=0.2 --set alpha=pi/6")
    m.add_argument("--samples", type=_count(2), default=None, metavar="N",
                   help="evenly spaced output times, the rows of trajectory.csv (default: the model's [simulation] "
                        "samples, else 501)")
    m.add_argument("--crosscheck", choices=["ipopt", "milp", "all"], default=None,
                   help="also solve every event's Pyomo MPEC model with these solvers (default: none)")
    m.add_argument("--formulation", choices=["general", "tree"], default=None,
                   help="equations of motion: 'general' (absolute coordinates and multipliers) or 'tree' "
                        "(Huston's independent coordinates; open chains and trees) "
                        "(default: the formulation the model file names)")
    m.add_argument("--on-ambiguous", choices=["stop", "lemke", "min_force"], default="stop",
                   help="rule for event HLCPs with several solutions (default: stop)")
    m.add_argument("--out", default=None, help="output directory (default: results/<model name>, with the --set "
                   "values in the name, e.g. results/cross_slide_P=5; numbered -2, -3, ... when it holds a run)")
    m.add_argument("--overwrite", action="store_true",
                   help="replace the run in the output directory (without it an --out that holds a run is an error)")
    m.add_argument("--no-plots", action="store_true", help="write the trajectory and run.json only")
    m.add_argument("--project-initial", action="store_true",
                   help="project initial positions/velocities that are off the constraints onto them (default: "
                        "refuse them); the violation is printed in the summary")
    m.set_defaults(func=_cmd_simulate)
    sw = _sub(sub, "sweep", "run a parameter sweep (spec file) on Dask; resumable results and regime maps",
              "pympc sweep examples/sweep_oscillator.toml --plot stick_phases.slot\n\n"
              "exit status: 0 every run stored with an answer (SUCCESS, or the mechanism's PARADOX or ZENO);\n"
              "  1 some run stored without one (FAILED, TIMEOUT, ERROR, MODE_FAILURE, EVENT_LIMIT, ...) or lost "
              "(rerun\n  to do it); 2 bad spec, option or store (another spec's store, a store another sweep is "
              "writing);\n  130 interrupted (--resume continues)")
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
               "pympc identify models/friction_oscillator.toml examples/data/friction_oscillator.csv --fit mu,mu_s "
               "--start mu=0.2,mu_s=0.5 --bounds mu=0.05:1 --starts 8",
               description="estimate model parameters (e.g. mu, mu_s) from measured data.\n\n"
                           "Exit status: 0 every fitted parameter identified (or at a bound) with an interval; "
                           "1 the fit failed its checks; 2 bad input; 3 the fit is done but a parameter is not "
                           "identifiable, only bounded on one side, or unreliable (residuals contradict --noise), "
                           "or the multistart did not reach its best twice (0 with --accept-unidentifiable).")
    idf.add_argument("model", help="a TOML model file")
    idf.add_argument("data", help="measured data (.csv, .parquet or .npz): a column t and outputs named like "
                                  "the trajectory's columns (e.g. mass.x)")
    idf.add_argument("--fit", required=True, help="comma-separated parameters to estimate, e.g. mu,mu_s")
    idf.add_argument("--start", action="append", metavar="NAME=VALUE",
                     help="start value of a fitted parameter (repeatable or comma-separated; default: its value "
                          "in the model file)")
    idf.add_argument("--bounds", action="append", metavar="NAME=LOW:HIGH",
                     help="box of a fitted parameter (repeatable; a side may be empty: no bound; default: the bounds "
                          "the model file declares for it, else [0, 2] for a friction coefficient, else none)")
    idf.add_argument("--set", action="append", metavar="NAME=VALUE",
                     help="hold a parameter that is not fitted at a value (repeatable; default: the model file's)")
    idf.add_argument("--outputs", default=None, help="comma-separated data columns to fit (default: all but t)")
    idf.add_argument("--noise", default=None, help="noise standard deviation: SIGMA or OUTPUT=SIGMA,... "
                                                   "(default: estimated from the residuals)")
    idf.add_argument("--method", choices=["shooting", "mpec", "fesd"], default="shooting",
                     help="shooting (event-driven simulations, default), mpec (the whole trajectory as one "
                          "Pyomo MPEC, first-order time stepping) or fesd (the switch-detecting Radau IIA "
                          "trajectory model, verified by simulation)")
    idf.add_argument("--elements", type=_count(1), default=None, metavar="N",
                     help="finite elements per sample interval of --method fesd (default 4)")
    idf.add_argument("--stages", type=_count(1), default=None, metavar="N",
                     help="Radau IIA stages of --method fesd (default 3)")
    idf.add_argument("--refine", type=_count(0), default=None, metavar="N",
                     help="--method fesd: at most N doublings of the elements when an estimate has the simulated "
                          "events but its outputs miss the check (default 2; 0: report it as not verified)")
    idf.add_argument("--step", type=float, default=None,
                     help="time step of --method mpec in seconds (default 0.02); the estimate is O(step) off")
    idf.add_argument("--t-end", type=float, default=None, help="fit the data up to this time only (seconds; "
                                                               "default: the whole record)")
    idf.add_argument("--jac", choices=["fd", "sensitivity"], default="sensitivity",
                     help="Jacobian of the residuals: the simulator's forward sensitivities (default) or finite "
                          "differences of the simulator")
    idf.add_argument("--starts", type=_count(1), default=1, metavar="N",
                     help="number of starts: the start values first, then a scrambled Sobol sample inside the bounds "
                          "(which must then be finite) (default: %(default)s)")
    idf.add_argument("--seed", type=int, default=0, help="seed of the Sobol sample (default: %(default)s)")
    idf.add_argument("--profile", default=None, help="comma-separated parameters to profile (default: none)")
    idf.add_argument("--accept-unidentifiable", action="store_true",
                     help="exit 0 (not 3) when the fit is sound but a parameter is not identified")
    idf.add_argument("--out", default=None, help="output directory (default: results/identify_<model>)")
    idf.add_argument("--no-plots", action="store_true", help="write the result file only")
    idf.set_defaults(func=_cmd_identify)
    de = _sub(sub, "design", "experiment design: Fisher information, criteria and the best experiment (exit 0: the "
                             "design informs every parameter; 1: it does not, or explored designs failed; 2: bad input)",
              "pympc design models/friction_oscillator.toml examples/design_oscillator.toml --explore --plot F0,w")
    de.add_argument("model", help="a TOML model file (replaces the spec's [design] model)")
    de.add_argument("spec", help="a TOML design spec (see examples/design_*.toml)")
    de.add_argument("--set", action="append", metavar="NAME=VALUE",
                    help="a design variable of the design to evaluate (repeatable; outputs=SET names an output set; "
                         "default: the spec's base design)")
    de.add_argument("--explore", action="store_true", help="evaluate the spec's [grid] or [sample] (on Dask)")
    de.add_argument("--optimize", action="store_true", help="optimize over [optimize] variables (multistart Nelder-Mead)")
    de.add_argument("--plot", default=None, metavar="X,Y", help="with --explore: draw the criterion map over X and Y")
    de.add_argument("--scheduler", default=None, metavar="ADDRESS", help="a running Dask scheduler; default: a local cluster")
    de.add_argument("--workers", type=int, default=None, help="worker processes of the local cluster (default: cores)")
    de.add_argument("--serial", action="store_true", help="evaluate in this process, without Dask")
    de.add_argument("--out", default=None, help="output directory (default: results/design_<spec>)")
    de.set_defaults(func=_cmd_design)
    return ap


_COMPILING = (_cmd_solve, _cmd_classify, _cmd_crosscheck, _cmd_simulate, _cmd_identify, _cmd_design, _cmd_sweep)
"""The commands that compute in this process (and may compile numba kernels)."""


def _announce_compilation(stream=None, every=10.0):
    """Never a silent minute: one line on a terminal's stderr (or ``stream``) when this process starts compiling numba
    kernels, with the time it should take, then a line every ``every`` seconds of compiling with the seconds so far
    (whole lines: the command's own output may come in between), and one at exit saying how long it took."""
    import atexit
    import threading

    from ._compiling import compile_seconds, compiling, expected_compile_seconds, on_first_compile
    if stream is None:
        stream = sys.stderr
        if not getattr(stream, "isatty", lambda: False)():      # a notice for a person at a terminal, not for logs
            return
    stop = threading.Event()

    def started():
        expected = expected_compile_seconds()
        print(f"pympc: compiling pympc's kernels once, about {expected:.0f} s (cached on disk after) ...", file=stream,
              flush=True)

        def progress():
            shown = 0
            while not stop.wait(0.5):
                spent = compile_seconds()
                if compiling() and spent >= (shown + 1) * every:
                    shown = int(spent // every)
                    try:
                        print(f"pympc: compiling ... {spent:.0f} s (of about {max(expected, spent):.0f} s)",
                              file=stream, flush=True)
                    except (ValueError, OSError):
                        return
        threading.Thread(target=progress, name="pympc-compile-progress", daemon=True).start()

        def done():
            stop.set()
            try:
                print(f"pympc: compiled for {compile_seconds():.0f} s; later runs load the kernels from the cache",
                      file=stream, flush=True)
            except (ValueError, OSError):     # the stream was closed before the process ended
                pass
        atexit.register(done)
    on_first_compile(started)


def main(argv=None):
    """Entry point of the ``pympc`` command."""
    return _main(argv)[0]


def _main(argv):
    """Run the command of ``argv``: (exit code, the command's function)."""
    args = build_parser().parse_args(argv)
    if args.func in _COMPILING:
        _announce_compilation()
    try:
        return args.func(args), args.func
    except PympcError as exc:
        print(f"pympc: error: {exc}", file=sys.stderr)
        return 2, args.func
    except OSError as exc:  # e.g. an output directory that cannot be written
        if isinstance(exc, BrokenPipeError):
            sys.stderr.close()
            return 0, args.func
        print(f"pympc: error: {exc.strerror or exc}: {exc.filename or ''}", file=sys.stderr)
        return 2, args.func


_QUICK_EXIT = (_cmd_simulate,)
"""Commands after which the process ends without the interpreter's teardown: they leave no thread, process or
open file behind, and after a simulation the teardown frees the loaded kernels one by one (0.2 s of CPU for the
cross slide, a sixth of its ``--no-plots`` run)."""


def run():
    """The ``pympc`` command as a process (the console script, ``python -m pympc.cli``): :func:`main`, then the
    exit; after the commands of :data:`_QUICK_EXIT` the exit handlers run and the output is flushed, and the
    process ends at once (``os._exit``).  Call :func:`main` to run a command inside a Python session."""
    code, command = _main(None)
    if command in _QUICK_EXIT:
        import atexit
        import os
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):    # closed, or a reader that went away
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
