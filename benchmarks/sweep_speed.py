"""Sweep throughput: a plain Python loop over ``simulate`` against the Dask sweep, one run.

1,000 runs of ``friction_oscillator.toml`` for 10 s each (a 40 × 25 grid over F0 and μ_s):

1. a loop in this process over ``pympc.simulate(system, (0, 10), params=params)`` (the model read
   once, its parameters bound per run: what a user would write)
   (after one warm-up run: the numba kernels are loaded from their disk cache);
2. ``pympc.sweep.run_sweep`` on a fresh ``LocalCluster`` of 2 single-threaded worker
   processes — cluster start, worker warm-up, batching, observables and the Parquet
   store all inside the measured time;
   1 and 2 alternate over slices of the runs (``--rounds``, default 4: on a shared machine
   the others' load then weighs on both alike);
3. the same ``run_sweep`` again on the finished stores (what ``--resume`` costs when
   nothing is left to do; each slice has its own store, since a store holds one spec).

Overhead per run = (sweep wall time × workers − Σ time inside the runs) / runs: the
worker time not spent simulating (cluster start, scheduling, transfers, store writes,
idle workers at the end).  Targets (issue 15): ≥ 1.6× the loop's throughput on 2
workers, ≤ 5 ms overhead per run, resume ≤ 2 % of the sweep.

    python benchmarks/sweep_speed.py [--runs 1000] [--t-end 10] [--workers 2]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from dask.distributed import Client

import pympc
from pympc.sweep import SweepSpec, load_results, local_cluster, run_sweep

MODEL = Path(__file__).parents[1] / "models" / "friction_oscillator.toml"


def _warm_up(model):
    import pympc
    pympc.simulate(model, (0.0, 0.5))


def _spec(model, t_end, F0, mu_s):
    return SweepSpec.from_dict({"sweep": {"model": str(model), "t_span": [0.0, t_end],
                                          "observables": ["status", "events", "stick_phases", "stick_fraction",
                                                          "dissipated"]},
                                "grid": {"F0": F0, "mu_s": mu_s}})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--t-end", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4,
                    help="alternate loop and sweep over this many slices of the runs (a shared machine's load "
                         "then weighs on both alike)")
    args = ap.parse_args()
    n_f = 40 if args.runs >= 40 else args.runs
    n_mu = max(1, args.runs // n_f)
    F0 = [float(x) for x in np.linspace(2.0, 20.0, n_f)]
    mus = [float(x) for x in np.linspace(0.35, 1.0, n_mu)]
    spec = _spec(MODEL, args.t_end, F0, mus)
    slices = [_spec(MODEL, args.t_end, F0, part) for part in np.array_split(mus, min(args.rounds, n_mu))]
    n = len(spec.runs)
    print(f"{n} runs of {MODEL.name} for {args.t_end:g} s; {os.cpu_count()} cores; loop and sweep alternate over "
          f"{len(slices)} slices (load average before: {os.getloadavg()[0]:.2f})", flush=True)

    system = pympc.load_model(MODEL)
    pympc.simulate(system, (0.0, args.t_end))                    # warm-up: numba kernels from the disk cache
    loop = sweep = loop_cpu = 0.0
    statuses = []
    with tempfile.TemporaryDirectory(prefix="pympc-sweep-bench-") as tmp:
        stores = [Path(tmp) / f"slice{k}" for k in range(len(slices))]     # a store holds one spec
        t = time.perf_counter()
        cluster = local_cluster(args.workers)
        client = Client(cluster)
        start = time.perf_counter() - t
        t = time.perf_counter()
        client.run(_warm_up, str(MODEL))         # what every fresh worker pays once: import pympc, first run
        warm = time.perf_counter() - t
        for k, part in enumerate(slices):
            t, c = time.perf_counter(), time.process_time()
            statuses += [pympc.simulate(system, (0.0, args.t_end), params=p).status.name for p in part.runs]
            loop += time.perf_counter() - t
            loop_cpu += time.process_time() - c
            t = time.perf_counter()
            report = run_sweep(part, stores[k], client=client)
            sweep += time.perf_counter() - t
            assert report.complete and report.ran == len(part.runs)
            print(f"slice {k + 1}/{len(slices)}: loop {loop:.1f} s, sweep {sweep:.1f} s so far "
                  f"(load average {os.getloadavg()[0]:.2f})", flush=True)
        client.close()
        cluster.close()
        dask = start + warm + sweep
        t = time.perf_counter()
        again = [run_sweep(part, st, n_workers=args.workers, resume=True) for part, st in zip(slices, stores)]
        resume = time.perf_counter() - t
        df = pd.concat([load_results(st) for st in stores], ignore_index=True)
    assert sum(a.ran for a in again) == 0 and sum(a.skipped for a in again) == n
    order = {tuple(sorted(p.items())): i for i, p in enumerate(r for part in slices for r in part.runs)}
    assert [statuses[order[tuple(sorted({"F0": a, "mu_s": b}.items()))]] for a, b in zip(df.F0, df.mu_s)] == \
        list(df.status), "the sweep's statuses differ from the loop's"
    inside = float(df.wall_time.sum())
    overhead = (dask * args.workers - inside) / n
    steady = (sweep * args.workers - inside) / n
    rows = [("loop over simulate (1 process)", loop, n / loop, 1000 * loop / n),
            (f"Dask sweep ({args.workers} workers)", dask, n / dask, 1000 * dask / n)]
    print(f"\n{'':34s} {'wall [s]':>9s} {'runs/s':>8s} {'ms/run':>8s}")
    for name, w, rate, ms in rows:
        print(f"{name:34s} {w:9.1f} {rate:8.2f} {ms:8.1f}")
    print(f"{'speed-up (throughput ratio)':34s} {loop / dask:9.2f}x   (target >= 1.6x)")
    print(f"{'per worker / loop, all included':34s} {loop / dask / args.workers:9.2f}    (issue 28: within 20 %, "
          ">= 0.80)")
    print(f"{'per worker / loop, warm workers':34s} {loop / sweep / args.workers:9.2f}    (the sweep's own time: "
          "no cluster start, no warm-up)")
    print(f"{'  of which cluster start':34s} {start:9.1f} s")
    print(f"{'  of which worker warm-up':34s} {warm:9.1f} s   (import pympc + first run, all workers in parallel)")
    print(f"{'overhead per run, all included':34s} {1000 * overhead:9.2f} ms  (target <= 5 ms; worker time outside the runs)")
    print(f"{'overhead per run, warm workers':34s} {1000 * steady:9.2f} ms  (scheduling, transfers, store, idle tail)")
    print(f"{'time inside a run, loop / sweep':34s} {1000 * loop / n:9.1f} / {1000 * inside / n:.1f} ms")
    cpu = float(df.cpu_time.sum())
    print(f"{'CPU time of a run, loop / sweep':34s} {1000 * loop_cpu / n:9.1f} / {1000 * cpu / n:.1f} ms  "
          f"(CPU share the machine gave: loop {loop_cpu / loop:.2f}, sweep {cpu / sweep:.2f} cores)")
    print(f"{'resume on the finished sweep':34s} {resume:9.2f} s = {100 * resume / dask:.2f} % of the sweep "
          f"(target <= 2 %)")
    print(f"statuses: {dict(zip(*np.unique(df.status, return_counts=True)))}; "
          f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
