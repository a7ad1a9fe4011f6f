"""The FESD fit (``pympc.identify.fesd_fit.fit``) against shooting on every model with a friction slot.

    python benchmarks/fesd_fits.py            # the records below (a few minutes)
    python benchmarks/fesd_fits.py --quick    # the short records of tests/test_fesd_models.py

Per model: a record simulated at the file's parameter values (``synthetic_record``, Gaussian noise of
1 % of each output's peak, seed 3); the shooting estimate (``estimate(..., method=Shooting(starts=1))``,
from the file's values) and its standard errors; the FESD fit (default settings: 4 elements per sample
interval, 3 Radau IIA stages) from 5 % above the true values.  Printed, one row per model:

- ``err/SE``: max over the parameters of |FESD estimate − true value| / SE (the estimate's error);
- ``FESD−shoot/SE``: max |FESD estimate − shooting estimate| / SE (the claim: ≤ 0.1);
- ``event err``: max |FESD switch time − simulated event time| at the FESD estimate (simulator at
  rtol 1e-12; the claim: ≤ 1e-6 s), and the number of events;
- ``CPU``: ``time.process_time`` of one FESD fit and of one shooting fit (2 cores shared with other
  work: ratios are more stable than the absolute times);
- ``vars × rows``: size of the last NLP (the answer's: free variables, rows), as IPOPT sees it;
- ``iters``: IPOPT iterations over all the fit's solves (forward, polish, fit; every walk), and walks
  (model builds, refinements included); ``el``: the elements per interval of the answer (the default
  ``refine=2`` doubles them when the outputs miss ``verify_tol``).
"""

import argparse
import time
from pathlib import Path

import numpy as np

import pympc
from pympc.identify import Experiment, Shooting, estimate, synthetic_record
from pympc.identify.fesd import switch_times
from pympc.identify.fesd_fit import fit
from pympc.mechanics import load_model

MODELS = Path(__file__).resolve().parent.parent / "models"

#: name: (model, span [s], samples, outputs, fitted, known inputs[, elements per interval (default 4)])
LONG = {
    "friction_oscillator": ("friction_oscillator.toml", 6.0, 25, ["mass.x"], ["mu", "mu_s"], {}),
    "cross_slide": ("cross_slide.toml", 1.0, 21, ["crosshead.x", "particle.y"], ["mu1", "mu2"], {"P": -10.0}),
    "slider_crank": ("slider_crank.toml", 0.4, 9, ["slider.x"], ["mu"], {}),
    # across the second reversal and a wall switch 1.7 ms later (λ swings ±55 N in 10 ms after it): 4 elements
    # per interval miss verify_tol (refine=0: not verified), the default refinement doubles them to 8
    "slider_crank 0.5 s": ("slider_crank.toml", 0.5, 11, ["slider.x"], ["mu"], {}),
    "slider_crank 0.5 s, 8 el": ("slider_crank.toml", 0.5, 11, ["slider.x"], ["mu"], {}, 8),
    "inclined_slot_spring": ("inclined_slot_spring.toml", 6.0, 49, ["block.x", "block.x_dot"], ["mu", "mu_s"], {}),
    # a slot on a rotating guide (the rod's rotation prescribed); the bead slips outward all along: no event
    "rotating_rod_bead": ("rotating_rod_bead.toml", 1.0, 11, ["bead.x", "bead.y"], ["mu"], {}),
}
QUICK = {
    "friction_oscillator": ("friction_oscillator.toml", 3.0, 13, ["mass.x"], ["mu", "mu_s"], {}),
    "cross_slide": ("cross_slide.toml", 1.0, 9, ["crosshead.x", "particle.y"], ["mu1", "mu2"], {"P": -10.0}),
    "slider_crank": ("slider_crank.toml", 0.32, 7, ["slider.x"], ["mu"], {}),
    "inclined_slot_spring": ("inclined_slot_spring.toml", 2.0, 21, ["block.x", "block.x_dot"], ["mu", "mu_s"], {}),
}


def run(name, model, span, samples, outputs, names, fixed, elements=4):
    path = MODELS / model
    system = load_model(path).bind(fixed)
    true = np.array([system.parameters[n] for n in names])
    t = np.linspace(0.0, span, samples)
    df, noise = synthetic_record(path, t, outputs, 0.01, 3, **fixed)
    c0 = time.process_time()
    shoot = estimate(Experiment(path, df, outputs=outputs, noise=noise, fixed=fixed), names,
                     method=Shooting(starts=1))
    c1 = time.process_time()
    start = system.bind({n: 1.05 * v for n, v in zip(names, true)})
    res = fit(start, t, df[outputs].to_numpy(), outputs, names, noise=[noise[o] for o in outputs],
              elements=elements)
    c2 = time.process_time()
    row = {"model": name, "record": f"{span:g} s, {samples} samples, {','.join(outputs)}", "fit": ",".join(names),
           "ok": res.ok, "shoot_cpu": c1 - c0, "fesd_cpu": c2 - c1, "walks": res.walks, "el": res.elements,
           "iters": sum(st["iterations"] or 0 for s in res.solves for st in s.stages),
           "size": f"{res.solves[-1].variables} × {res.solves[-1].constraints}" if res.solves else "-"}
    se = np.asarray(shoot.stderr, float)
    if res.ok:
        est = np.array([res.theta[n] for n in shoot.names])
        row["err_se"] = float(np.max(np.abs(est - true) / se))
        row["gap_se"] = float(np.max(np.abs(est - shoot.optimum) / se))
        tr = pympc.simulate(system.bind(res.theta), (t[0], t[-1]), rtol=1e-12, atol=1e-14)
        events = [e for e in tr.events if e.time > t[0]]
        sw = switch_times(res.model)
        row["events"] = len(events)
        row["event_err"] = (max((abs(a - e.time) for (a, _, _), e in zip(sw, events)), default=0.0)
                            if [k for _, _, k in sw] == [e.kind.name for e in events] else float("inf"))
    else:
        row.update(err_se=np.nan, gap_se=np.nan, events=0, event_err=np.nan, message=res.message)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the short records of tests/test_fesd_models.py")
    ap.add_argument("--only", nargs="*", help="model names (keys of the table)")
    args = ap.parse_args(argv)
    cases = QUICK if args.quick else LONG
    rows = [run(k, *v) for k, v in cases.items() if not args.only or k in args.only]
    head = (f"{'model':25s} {'record':44s} {'fit':9s} {'ok':3s} {'err/SE':>7s} {'FESD-shoot/SE':>14s} "
            f"{'event err [s]':>14s} {'FESD CPU':>9s} {'shoot CPU':>9s} {'vars x rows':>12s} {'iters':>6s} walks el")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['model']:25s} {r['record']:44s} {r['fit']:9s} {'yes' if r['ok'] else 'NO':3s} "
              f"{r['err_se']:7.2f} {r['gap_se']:14.1e} {r['event_err']:10.1e} ({r['events']}) "
              f"{r['fesd_cpu']:8.1f}s {r['shoot_cpu']:8.2f}s {r['size']:>12s} {r['iters']:6d} {r['walks']:5d} "
              f"{r['el']:2d}")
        if not r["ok"]:
            print(f"    {r['message']}")


if __name__ == "__main__":
    main()
