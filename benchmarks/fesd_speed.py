"""The FESD fit (:func:`pympc.identify.fesd_fit.fit`) against the shooting fit, CPU time side by side.

    python benchmarks/fesd_speed.py                 # 30 s oscillator record, new route only
    python benchmarks/fesd_speed.py --forward       # also the route with the forward MPEC solve first
    python benchmarks/fesd_speed.py --seconds 6 --repeat 2

Record: ``models/friction_oscillator.toml``, 4 samples a second of ``mass.x`` with 1 % noise
(``synthetic_record``, seed 3); μ and μ_s fitted from 0.29 and 0.41; 4 elements per interval, 3 Radau
IIA stages.  Reported: CPU seconds (``time.process_time``: the machine is shared), the ratio to the
shooting fit (``estimate(..., method=Shooting(starts=1))``), the estimates and their distance in the
shooting fit's standard errors, walks, IPOPT iterations, linear solver, NLP size and the time split
(build the models, compile the NLP, IPOPT, verify by simulation).
"""

import argparse
import time

import numpy as np

from pympc.identify import Experiment, Shooting, estimate, synthetic_record
from pympc.identify.fesd_fit import fit
from pympc.mechanics import load_model

OSC = "models/friction_oscillator.toml"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--forward", action="store_true")
    a = ap.parse_args()
    t = np.linspace(0.0, a.seconds, int(4 * a.seconds) + 1)
    df, noise = synthetic_record(OSC, t, ["mass.x"], 0.01, 3)
    exp = Experiment(OSC, df, outputs=["mass.x"], noise=noise)
    estimate(exp, "mu,mu_s", method=Shooting(starts=1))          # warm: numba kernels, imports
    start = load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41})
    y = df[["mass.x"]].to_numpy()
    routes = [("fesd", False)] + ([("fesd forward", True)] if a.forward else [])
    for rep in range(a.repeat):
        c = time.process_time()
        shoot = estimate(exp, "mu,mu_s", method=Shooting(starts=1))
        base = time.process_time() - c
        print(f"[{rep}] shooting: {base:.3f} s CPU  mu={shoot.optimum[0]:.6f} mu_s={shoot.optimum[1]:.6f} "
              f"stderr={np.round(shoot.stderr, 6).tolist()} cost={shoot.cost:.4f}")
        for label, fwd in routes:
            c = time.process_time()
            r = fit(start, t, y, ["mass.x"], ["mu", "mu_s"], noise=[noise["mass.x"]], forward=fwd)
            cpu = time.process_time() - c
            d = (np.array([r.theta[n] for n in shoot.names]) - shoot.optimum) / shoot.stderr
            s = r.solves[-1]
            print(f"[{rep}] {label}: {cpu:.3f} s CPU = {cpu / base:.1f}x shooting; ok={r.ok} walks={r.walks} "
                  f"theta={ {k: round(v, 6) for k, v in r.theta.items()} } objective={r.objective:.4f} "
                  f"gap/stderr={np.round(d, 4).tolist()} {r.termination_condition.name}/{r.solution_status.name}")
            print(f"      per walk: iterations={[x.iterations for x in r.solves]} linear solver={s.linear_solver} "
                  f"NLP {s.variables} variables, {s.constraints} rows; CPU s "
                  f"{ {k: round(v, 2) for k, v in r.timing.items()} }")
            print(f"      {r.message}")


if __name__ == "__main__":
    main()
