"""Experiment design checked against reality: predicted standard errors vs the scatter of replicate fits.

For the friction oscillator (μ = 0.3, μ_s = 0.4, position measured every 0.05 s
for 10 s with σ = 0.01 m), two designs of the forcing (F0, w):

* naive:    the model file's defaults (F0 = 10 N, w = 1 rad/s);
* designed: :func:`pympc.design.optimize` on ``examples/design_oscillator.toml``
  (D-optimal, averaged over a uniform prior of μ_s on [0.37, 0.43]).

At each design, ``--replicates`` noisy records (default 200) of the true motion
are fitted by the shooting estimator (:func:`pympc.identify.estimate`, from the
start μ = 0.29, μ_s = 0.41), and the standard deviation of the estimates is
compared with the standard error the Fisher information predicts at the true
values.  The sampling error of a standard deviation from n replicates is about
1/√(2(n − 1)) relative (5 % at n = 200): a ratio observed/predicted within
3 such errors of 1 agrees.  Then the improvement naive → designed, observed
against predicted.  Prints a table; nothing is asserted (tests/test_design*.py
checks smaller things).

Run:  PYTHONPATH=$PWD python benchmarks/design_check.py [--replicates 200] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "models" / "friction_oscillator.toml"
TRUTH = {"mu": 0.3, "mu_s": 0.4}
SIGMA = 0.01
START = {"mu": 0.29, "mu_s": 0.41}


def replicate_fits(design, n, seed):
    """Estimates of (μ, μ_s) from ``n`` noisy records of the true motion at ``design``; (estimates, failures, s/fit)."""
    from pympc.identify import Experiment, Parameter, estimate, synthetic_record
    t = np.arange(0.0, design["t_end"] + 1e-9, design["dt"])
    forcing = {k: design[k] for k in ("F0", "w")}
    clean, _ = synthetic_record(MODEL, t, ["mass.x"], 0.0, 0, **forcing, **TRUTH)
    rng = np.random.default_rng(seed)
    est, failed, clock = [], 0, time.perf_counter()
    for _ in range(n):
        df = clean.copy()
        df["mass.x"] += SIGMA * rng.standard_normal(t.size)
        e = Experiment(MODEL, df, fixed=forcing, noise=SIGMA)
        r = estimate(e, [Parameter(k, initial=v) for k, v in START.items()])
        if r.converged and np.all(np.isfinite(r.optimum)):
            est.append(r.optimum)
        else:
            failed += 1
    return np.array(est), failed, (time.perf_counter() - clock) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="20 replicates (a smoke run)")
    args = ap.parse_args()
    n = 20 if args.quick else args.replicates
    from pympc.design import evaluate, load_design, optimize
    spec = load_design(ROOT / "examples" / "design_oscillator.toml")
    clock = time.perf_counter()
    best = optimize(spec, serial=True)
    t_opt = time.perf_counter() - clock
    at_truth = dataclasses.replace(spec, distribution={}, prior={**spec.prior, **TRUTH})
    designs = {"naive": {**spec.base, "F0": spec.prior["F0"], "w": spec.prior["w"]},
               "designed": {**spec.base, "F0": best.design["F0"], "w": best.design["w"]}}
    print(f"optimizer: multistart Nelder-Mead, {len(best.history)} designs evaluated in {t_opt:.1f} s -> "
          f"F0 = {best.design['F0']:.4f} N, w = {best.design['w']:.4f} rad/s (robust D = {best.value:.4f})")
    print(f"replicates: {n} per design, sigma = {SIGMA} m, dt = {spec.base['dt']} s, T = {spec.base['t_end']} s; "
          f"agreement: |observed/predicted - 1| <= 3/sqrt(2(n-1)) = {3 / np.sqrt(2 * (n - 1)):.3f}\n")
    rows, obs_sd, pred_se = [], {}, {}
    for name, d in designs.items():
        info = evaluate(at_truth, {"F0": d["F0"], "w": d["w"]})
        est, failed, per_fit = replicate_fits(d, n, seed=1 if name == "naive" else 2)
        sd = est.std(axis=0, ddof=1)
        bias = est.mean(axis=0) - np.array([TRUTH[k] for k in spec.names])
        obs_sd[name], pred_se[name] = sd, info.stderr
        corr_obs = np.corrcoef(est.T)[0, 1]
        for k, p in enumerate(spec.names):
            ratio = sd[k] / info.stderr[k]
            ok = abs(ratio - 1) <= 3 / np.sqrt(2 * (len(est) - 1))
            rows.append((name, f"F0={d['F0']:.3f}, w={d['w']:.3f}", info.regimes["slot"], p, info.stderr[k], sd[k],
                         ratio, bias[k], "agrees" if ok else "DIFFERS", len(est), failed, per_fit))
        print(f"{name:9s} D = {info.values['D']:.3f}  corr predicted {info.correlation[0, 1]:+.3f}, observed "
              f"{corr_obs:+.3f}")
    head = ("design", "forcing", "regime", "param", "pred. se", "obs. sd", "obs/pred", "mean bias", "check", "fits",
            "failed", "s/fit")
    fmt = "{:9s} {:22s} {:11s} {:6s} {:>10s} {:>10s} {:>8s} {:>10s} {:8s} {:>5s} {:>6s} {:>6s}"
    print()
    print(fmt.format(*head))
    for r in rows:
        print(fmt.format(r[0], r[1], r[2], r[3], f"{r[4]:.3e}", f"{r[5]:.3e}", f"{r[6]:.3f}", f"{r[7]:+.1e}", r[8],
                         str(r[9]), str(r[10]), f"{r[11]:.2f}"))
    print("\nimprovement naive -> designed (ratio of standard errors; > 1 is better)")
    for k, p in enumerate(spec.names):
        pr, ob = pred_se["naive"][k] / pred_se["designed"][k], obs_sd["naive"][k] / obs_sd["designed"][k]
        err = ob * np.sqrt(2) / np.sqrt(2 * (n - 1))      # two independent sd's: relative errors add in quadrature
        print(f"  {p:6s} predicted {pr:6.3f}   observed {ob:6.3f} ± {err:.3f}")


if __name__ == "__main__":
    main()
