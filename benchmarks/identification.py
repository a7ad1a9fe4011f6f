"""Identification of friction coefficients: accuracy, coverage, multistart and speed, one run.

    python benchmarks/identification.py            # 50 seeds (long: ~100 fits of a 30 s, 100 Hz record)
    python benchmarks/identification.py --quick    # 5 seeds, 1 seed for the slow comparisons

1. Friction oscillator (``models/friction_oscillator.toml``, true μ = 0.3, μ_s = 0.4),
   30 s at 100 Hz, position ``mass.x`` measured with Gaussian noise of 1 % and 5 % of
   the peak |x|; pympc shooting (start μ = 0.25, μ_s = 0.45) over the seeds: median
   relative errors of μ and μ_s, how often the 95 % Wald intervals cover the true values,
   median wall time per fit.
2. 16 Sobol starts over μ ∈ [0.05, 1], μ_s − μ ∈ [0, 0.5] on one record (5 % noise):
   how many reach the global optimum (the best cost, same parameters to 1e-4).
3. Side by side on the same records: what a user would write instead — friction
   regularized as F = −m g (μ + (μ_s − μ) exp(−(v/v_s)²)) tanh(v/ε) (ε = 1e-3 m/s,
   v_s = 1e-2 m/s), ``solve_ivp`` (Radau, rtol 1e-8), ``least_squares`` with its own
   finite-difference Jacobian — against pympc shooting with its finite-difference
   Jacobian and with its sensitivities (the default).
4. Cross slide (μ1, μ2 from ``crosshead.x`` and ``particle.y``, P = 5 N, 1.5 s at 40 Hz,
   1 % noise) and slider-crank (its slot's μ from ``crank.phi``, μ_s held at 0.25, 2 s at
   100 Hz, 1 % noise): errors and times.
5. The MPEC route (``method="mpec"``) on the oscillator, on a 2 s window of the record
   (noise-free, 20 Hz; one breakaway and one slip stop), three cases: μ with μ_s held at
   0.4, μ with μ_s = μ (a copy of the model), μ and μ_s.  Per step h = 0.04, 0.02, 0.01:
   the number of steps, the time of that grid's solve (the route solves the coarser grids
   first; the time of a grid is its own), μ, its gap to the shooting estimate, the observed
   order log2(gap(2h)/gap(h)), the same for μ_s (last case; "≥ b" where the relaxed MPEC
   was used and proves only a lower bound), the solver, and whether the MPEC check passed.

    python benchmarks/identification.py --only-mpec     # part 5 only
"""

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares

import pympc
from pympc.identify import Experiment, Mpec, Parameter, Shooting, estimate
from pympc.identify import synthetic_record as record

MODELS = Path(__file__).parents[1] / "models"
OSC = MODELS / "friction_oscillator.toml"
TRUE = {"mu": 0.3, "mu_s": 0.4}


def rel_err(est, true):
    return {k: abs(est[k] - v) / v for k, v in true.items()}


def pympc_fit(df, sigma, jac="sensitivity"):
    exp = Experiment(OSC, df, noise=sigma)
    t0 = time.perf_counter()
    res = estimate(exp, [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.45, (0.05, 1.5))], method=Shooting(jac=jac))
    return res, time.perf_counter() - t0


def regularized_fit(df, p):
    """The fit a user would write: tanh/Stribeck-regularized friction, solve_ivp, least_squares with FD."""
    t = df["t"].to_numpy()
    x_data = df["mass.x"].to_numpy()
    m, K, F0, w, g = p["m"], p["K"], p["F0"], p["w"], p["g"]
    eps, vs = 1e-3, 1e-2

    def rhs(s, y, mu, mus):
        x, v = y
        fr = m * g * (mu + (mus - mu) * np.exp(-(v / vs) ** 2)) * np.tanh(v / eps)
        return [v, (F0 * np.sin(w * s) - K * x - fr) / m]

    def resid(th):
        sol = solve_ivp(rhs, (t[0], t[-1]), [0.0, 0.0], method="Radau", t_eval=t, rtol=1e-8, atol=1e-10, args=tuple(th))
        if not sol.success:
            return np.full(t.size, 1e3)
        return sol.y[0] - x_data

    t0 = time.perf_counter()
    res = least_squares(resid, [0.25, 0.45], bounds=([0.05, 0.05], [1.0, 1.5]), x_scale="jac")
    return {"mu": res.x[0], "mu_s": res.x[1]}, time.perf_counter() - t0, res.nfev + 2 * res.njev


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5 seeds; the slow comparisons on one seed")
    ap.add_argument("--seeds", type=int, default=None, help="number of seeds (default 50, --quick 5)")
    ap.add_argument("--only-others", action="store_true", help="run parts 4 and 5 (other mechanisms, MPEC) only")
    ap.add_argument("--only-mpec", action="store_true", help="run part 5 (the MPEC route) only")
    args = ap.parse_args()
    if args.only_mpec:
        return mpec_part()
    if args.only_others:
        return others()
    seeds = args.seeds or (5 if args.quick else 50)
    compare_seeds = 1 if args.quick else 3
    t = np.round(np.arange(0, 3001) * 0.01, 10)
    params = pympc.load_model(OSC).parameters
    print(f"friction oscillator, 30 s at 100 Hz, mass.x measured; {seeds} seeds; pympc shooting, sensitivity Jacobian")
    print(f"{'noise':>6s} {'med |Δμ|/μ':>11s} {'med |Δμs|/μs':>13s} {'Wald μ':>8s} {'Wald μs':>8s} {'both':>6s} "
          f"{'ok fits':>8s} {'med time':>9s}")
    records = {}
    for noise in (0.01, 0.05):
        e_mu, e_mus, cov_mu, cov_mus, both, oks, times = [], [], 0, 0, 0, 0, []
        for seed in range(seeds):
            df, sig = record(OSC, t, ["mass.x"], noise, seed)
            records[(noise, seed)] = (df, sig)
            res, dt = pympc_fit(df, sig)
            est = dict(zip(res.names, res.optimum))
            err = rel_err(est, TRUE)
            e_mu.append(err["mu"]), e_mus.append(err["mu_s"]), times.append(dt)
            c = [res.wald_low[k] <= TRUE[n] <= res.wald_high[k] for k, n in enumerate(res.names)]
            cov_mu += c[0]
            cov_mus += c[1]
            both += all(c)
            oks += res.ok
        print(f"{100 * noise:5.0f}% {100 * statistics.median(e_mu):10.3f}% {100 * statistics.median(e_mus):12.3f}% "
              f"{cov_mu:4d}/{seeds:<3d} {cov_mus:4d}/{seeds:<3d} {both:3d}/{seeds:<3d} {oks:4d}/{seeds:<3d} "
              f"{statistics.median(times):8.1f}s")

    df, sig = records[(0.05, 0)]
    exp = Experiment(OSC, df, noise=sig)
    t0 = time.perf_counter()
    res = estimate(exp, [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.45, excess=(0.0, 0.5))],
                   method=Shooting(starts=16, include_initial=False, seed=0))
    dt = time.perf_counter() - t0
    st = res.starts
    print(f"\n16 Sobol starts over mu in [0.05, 1], mu_s - mu in [0, 0.5] (5% noise, seed 0): "
          f"{int(st['at_best'].sum())} of 16 reach the global optimum (cost {res.cost:.6g}, "
          f"mu = {res.optimum[0]:.5f}, mu_s = {res.optimum[1]:.5f}); {int((st['status'] == 'failed').sum())} failed; "
          f"{dt:.1f} s")
    far = st[~st["at_best"]]
    if len(far):
        print("  starts elsewhere: " + "; ".join(f"({r.mu_start:.3f}, {r.mu_s_start:.3f}) -> ({r.mu_end:.3f}, "
                                                 f"{r.mu_s_end:.3f}) cost {r.cost:.4g}" for r in far.itertuples()))

    print(f"\nside by side on the same records (seeds 0..{compare_seeds - 1}), median over seeds")
    print(f"{'noise':>6s} {'fit':42s} {'|Δμ|/μ':>9s} {'|Δμs|/μs':>9s} {'time':>8s}")
    for noise in (0.01, 0.05):
        rows = {"regularized (tanh/Stribeck) solve_ivp + least_squares FD": [], "pympc shooting, FD Jacobian": []}
        rows["pympc shooting, sensitivities"] = []
        for seed in range(compare_seeds):
            df, sig = records[(noise, seed)]
            est, dt, _ = regularized_fit(df, params)
            rows["regularized (tanh/Stribeck) solve_ivp + least_squares FD"].append((rel_err(est, TRUE), dt))
            res, dt = pympc_fit(df, sig, jac="fd")
            rows["pympc shooting, FD Jacobian"].append((rel_err(dict(zip(res.names, res.optimum)), TRUE), dt))
            res, dt = pympc_fit(df, sig)
            rows["pympc shooting, sensitivities"].append((rel_err(dict(zip(res.names, res.optimum)), TRUE), dt))
        for name, vals in rows.items():
            print(f"{100 * noise:5.0f}% {name:42s} {100 * statistics.median(v[0]['mu'] for v in vals):8.3f}% "
                  f"{100 * statistics.median(v[0]['mu_s'] for v in vals):8.3f}% "
                  f"{statistics.median(v[1] for v in vals):7.1f}s")

    others()


def others():
    """Part 4: the cross slide and the slider-crank."""
    print("\nother mechanisms (1% noise, seed 0, pympc shooting, sensitivity Jacobian)")
    cs = MODELS / "cross_slide.toml"
    tc = np.round(np.arange(0, 61) * 0.025, 10)
    df, sig = record(cs, tc, ["crosshead.x", "particle.y"], 0.01, 0, P=5.0)
    t0 = time.perf_counter()
    res = estimate(Experiment(cs, df, noise=sig, fixed={"P": 5.0}),
                   [Parameter("mu1", 0.5, (0.0, 1.0)), Parameter("mu2", 0.3, (0.0, 1.0))])
    err = rel_err(dict(zip(res.names, res.optimum)), {"mu1": 0.3, "mu2": 0.5})
    print(f"  cross slide   mu1 {res.optimum[0]:.5f} ± {res.stderr[0]:.2g} (rel. error {100 * err['mu1']:.3f}%), "
          f"mu2 {res.optimum[1]:.5f} ± {res.stderr[1]:.2g} ({100 * err['mu2']:.3f}%), {time.perf_counter() - t0:.1f} s, "
          f"ok={res.ok}")
    sc = MODELS / "slider_crank.toml"
    ts = np.round(np.arange(0, 201) * 0.01, 10)
    df, sig = record(sc, ts, ["crank.phi"], 0.01, 0)
    t0 = time.perf_counter()
    res = estimate(Experiment(sc, df, noise=sig), [Parameter("mu", 0.1, (0.0, 0.25))])
    err = rel_err(dict(zip(res.names, res.optimum)), {"mu": 0.2})
    print(f"  slider-crank  mu {res.optimum[0]:.5f} ± {res.stderr[0]:.2g} (rel. error {100 * err['mu']:.3f}%), "
          f"{time.perf_counter() - t0:.1f} s, ok={res.ok}")
    mpec_part()


def mpec_part(span=2.0, steps=(0.04, 0.02, 0.01)):
    """Part 5: the MPEC route at three steps against the shooting estimate on the same record."""
    import tempfile

    t = np.round(np.arange(0, int(round(span / 0.05)) + 1) * 0.05, 10)
    with tempfile.TemporaryDirectory() as tmp:
        equal = Path(tmp) / "oscillator_mu_s_eq_mu.toml"
        equal.write_text(OSC.read_text().replace('mu_s = "mu_s"', 'mu_s = "mu"'))
        cases = [("mu (mu_s = 0.4 held)", OSC, [Parameter("mu", 0.25, (0.05, 1.0))]),
                 ("mu (mu_s = mu)", equal, [Parameter("mu", 0.25, (0.05, 1.0))]),
                 ("mu, mu_s", OSC, [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.45, (0.05, 1.5))])]
        for label, path, spec in cases:
            df, _ = record(path, t, ["mass.x"], 0.0, 0)
            exp = Experiment(path, df)
            t0 = time.perf_counter()
            shoot = estimate(exp, spec)
            ref = dict(zip(shoot.names, shoot.optimum))
            print(f"\nMPEC route, friction oscillator, {span:g} s noise-free at 20 Hz, mass.x, fit {label}; shooting: "
                  + ", ".join(f"{k} {v:.5f}" for k, v in ref.items()) + f" ({time.perf_counter() - t0:.1f} s)")
            print(f"{'step':>6s} {'steps':>6s} {'time':>7s} {'mu':>9s} {'|Δmu|':>9s} {'order':>6s} {'mu_s':>10s} "
                  f"{'|Δmu_s|':>9s} {'order':>6s} {'solver':>10s} {'check':>6s}")
            t0 = time.perf_counter()
            res = estimate(exp, spec, method=Mpec(step=steps[-1]))
            total = time.perf_counter() - t0
            mp = res.method["mpec"]
            prev = prev_s = None
            for k, lad in enumerate(mp["ladder"]):
                last = k == len(mp["ladder"]) - 1
                mu = lad["theta"][0]
                gap = abs(mu - ref["mu"])
                order = np.log2(prev / gap) if prev and gap > 0 else np.nan
                if "mu_s" in ref:
                    mus = lad["theta"][1]
                    gap_s = abs(mus - ref["mu_s"])
                    order_s = np.log2(prev_s / gap_s) if prev_s and gap_s > 0 else np.nan
                    bound = mp["static"].get("mu_s", {}).get("bound") if last else None
                    mus_text = f"≥ {bound:.5f}" if bound is not None else f"{mus:.5f}"    # one-sided (relaxed MPEC)
                else:
                    gap_s = order_s = np.nan
                    mus_text = ""
                check = ("ok" if res.checks()["mpec"][0] else "FAIL") if last else ("ok" if lad["verified"] else "FAIL")
                print(f"{lad['step']:6.3f} {int(round(span / lad['step'])):6d} {lad['seconds']:6.1f}s {mu:9.5f} "
                      f"{gap:9.2e} {order:6.2f} {mus_text:>10s} {gap_s:9.2e} {order_s:6.2f} "
                      f"{lad['route']:>10s} {check:>6s}", flush=True)
                prev, prev_s = gap, gap_s
            print(f"(one estimate, all grids: {total:.1f} s)")


if __name__ == "__main__":
    main()
