"""The FESD fit (:func:`pympc.identify.fesd_fit.fit`) against the shooting fit, CPU time side by side.

    python benchmarks/fesd_speed.py                     # 30 s oscillator record, 5 interleaved rounds
    python benchmarks/fesd_speed.py --rounds 9 --blas-threads 1
    python benchmarks/fesd_speed.py --start 0.3 0.4     # both fits from the file's (the true) values
    python benchmarks/fesd_speed.py --forward           # also the route with the forward MPEC solve first

Record: ``models/friction_oscillator.toml``, 4 samples a second of ``mass.x`` with 1 % noise
(``synthetic_record``, seed 3); μ and μ_s fitted, **both fits from the same start** (default 0.29, 0.41;
``--start``); 4 elements per interval, 3 Radau IIA stages.  Shooting: ``estimate(..., method=Shooting(starts=1))``
with ``Parameter(initial=...)``.  (Before, the shooting fit started at the file's values, the record's true
values, and the FESD fit at 0.29, 0.41: from the true values shooting needs ~1/3 of the CPU, FESD one walk of two.)

Rounds are interleaved (shooting, FESD; the order alternating from round to round) and each round's ratio is
taken within the round; medians and ranges over the rounds are printed.  CPU time two ways: ``process`` (every
thread of the process, ``time.process_time``) and ``main`` (the calling thread, ``time.thread_time``).  They
differ by OpenBLAS's worker thread: NumPy's OpenBLAS (2 threads on this machine) wakes its second thread for
small products, which then spins on the other core for a while after each; during the shooting fit that thread
took 0.06–0.3 s CPU (more when the other core is free to run it), the source of the shooting fit's 0.11–0.47 s
spread in ``process`` time.  ``--blas-threads 1`` sets OpenBLAS to one thread for the whole run (the FESD fit's
IPOPT solves already run at one, :func:`pympc.mpec.ipopt._one_blas_thread`): process = main, a stable ratio.
Per round of the FESD fit: walks, IPOPT iterations per walk (and where a walk was stopped, an element held at its
lower bound: ``pympc.identify.fesd_fit.PINNED``), NLP size, the time split (``timing``: build the
models, compile the NLP, IPOPT, verify by simulation), and the estimates' distance to the shooting fit's in its
standard errors.  Before each timed fit the garbage of the one before is collected (``gc.collect()``, not timed):
otherwise the cyclic collector frees a FESD fit's Pyomo models during the next fit, and a shooting fit run after
a FESD fit was charged 0.4 s more (0.6–0.7 s against 0.22 s, measured).
"""

import argparse
import gc
import statistics
import time

import numpy as np

from pympc.identify import Experiment, Parameter, Shooting, estimate, synthetic_record
from pympc.identify.fesd_fit import fit
from pympc.mechanics import load_model

OSC = "models/friction_oscillator.toml"


def _blas_threads(n):
    from pympc.mpec.ipopt import _openblas_threads
    for _, put in _openblas_threads():
        put(int(n))


def _clock():
    return time.process_time(), time.thread_time()


def _since(c):
    p, t = _clock()
    return p - c[0], t - c[1]


def _span(xs, fmt="{:.3f}"):
    return f"{fmt.format(statistics.median(xs))} [{fmt.format(min(xs))}–{fmt.format(max(xs))}]"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--start", type=float, nargs=2, default=(0.29, 0.41), metavar=("MU", "MU_S"))
    ap.add_argument("--blas-threads", type=int, default=None, help="OpenBLAS threads for the whole run")
    ap.add_argument("--forward", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="the summary only")
    a = ap.parse_args(argv)
    if a.blas_threads:
        _blas_threads(a.blas_threads)
    t = np.linspace(0.0, a.seconds, int(4 * a.seconds) + 1)
    df, noise = synthetic_record(OSC, t, ["mass.x"], 0.01, 3)
    exp = Experiment(OSC, df, outputs=["mass.x"], noise=noise)
    params = [Parameter("mu", initial=a.start[0]), Parameter("mu_s", initial=a.start[1])]
    start = load_model(OSC).bind({"mu": a.start[0], "mu_s": a.start[1]})
    y = df[["mass.x"]].to_numpy()
    routes = [("fesd", False)] + ([("fesd forward", True)] if a.forward else [])

    def shooting():
        return estimate(exp, params, method=Shooting(starts=1))

    def fesd(fwd):
        return fit(start, t, y, ["mass.x"], ["mu", "mu_s"], noise=[noise["mass.x"]], forward=fwd)

    shooting()                                   # warm: numba kernels, imports
    fesd(False)
    rows = {"shooting": []} | {label: [] for label, _ in routes}
    shoot = None
    for rnd in range(a.rounds):
        jobs = [("shooting", None)] + list(routes)
        for label, fwd in (jobs if rnd % 2 == 0 else jobs[::-1]):
            gc.collect()                         # the last fit's garbage (its Pyomo models) not charged to this one
            c = _clock()
            res = shooting() if fwd is None else fesd(fwd)
            proc, main_ = _since(c)
            rows[label].append({"process": proc, "main": main_, "res": res})
            if fwd is None:
                shoot = res
        if a.quiet:
            continue
        s = rows["shooting"][-1]
        print(f"[{rnd}] shooting: {s['process']:.3f} s CPU (main thread {s['main']:.3f})  "
              f"mu={shoot.optimum[0]:.6f} mu_s={shoot.optimum[1]:.6f} stderr={np.round(shoot.stderr, 6).tolist()} "
              f"cost={shoot.cost:.4f}")
        for label, _ in routes:
            row = rows[label][-1]
            r = row["res"]
            d = (np.array([r.theta[n] for n in shoot.names]) - shoot.optimum) / shoot.stderr
            last = r.solves[-1]
            print(f"[{rnd}] {label}: {row['process']:.3f} s CPU = {row['process'] / s['process']:.1f}x shooting "
                  f"(main thread {row['main']:.3f} = {row['main'] / s['main']:.1f}x); ok={r.ok} walks={r.walks} "
                  f"theta={ {k: round(v, 6) for k, v in r.theta.items()} } objective={r.objective:.4f} "
                  f"gap/stderr={np.round(d, 4).tolist()} {r.termination_condition.name}/{r.solution_status.name}")
            print(f"      per walk: iterations={[x.iterations for x in r.solves]} stopped={[x.stopped for x in r.solves]} "
                  f"linear solver={last.linear_solver} "
                  f"NLP {last.variables} variables, {last.constraints} rows; CPU s "
                  f"{ {k: round(v, 3) for k, v in r.timing.items()} }")
            print(f"      {r.message}")
    print(f"\nsummary over {a.rounds} interleaved rounds (median [min–max]; ratios within a round), start "
          f"mu={a.start[0]:g} mu_s={a.start[1]:g}, OpenBLAS threads "
          f"{a.blas_threads if a.blas_threads else 'as loaded'}:")
    sh = rows["shooting"]
    print(f"  {'':14s} {'process CPU s':>22s} {'main-thread CPU s':>22s} {'ratio (process)':>20s} "
          f"{'ratio (main)':>20s}")
    print(f"  {'shooting':14s} {_span([x['process'] for x in sh]):>22s} {_span([x['main'] for x in sh]):>22s}")
    for label, _ in routes:
        rs = rows[label]
        print(f"  {label:14s} {_span([x['process'] for x in rs]):>22s} {_span([x['main'] for x in rs]):>22s} "
              f"{_span([x['process'] / s['process'] for x, s in zip(rs, sh)], '{:.1f}'):>20s} "
              f"{_span([x['main'] / s['main'] for x, s in zip(rs, sh)], '{:.1f}'):>20s}")
        split = {k: _span([x["res"].timing[k] for x in rs]) for k in ("build", "compile", "ipopt", "verify")}
        r = rs[-1]["res"]
        print(f"  {'':14s} split (CPU s): " + ", ".join(f"{k} {v}" for k, v in split.items()))
        print(f"  {'':14s} walks {r.walks}, IPOPT iterations {[x.iterations for x in r.solves]} (stopped at "
              f"{[x.stopped for x in r.solves]}), NLP "
              f"{r.solves[-1].variables} × {r.solves[-1].constraints}; theta "
              f"{ {k: repr(v) for k, v in r.theta.items()} }, objective {r.objective!r}")


if __name__ == "__main__":
    main()
