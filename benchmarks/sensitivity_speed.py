"""Sensitivities: cost and accuracy, side by side with central finite differences, one run.

For the friction oscillator (30 s; θ = (μ, μ_s) and (μ, μ_s, K, F0)) and the cross
slide (1 s, pushed back while sliding: θ = (μ1, μ2, P)):

- a plain run, the sensitivity run (``simulate(..., sensitivities=θ,
  force_sensitivities=False)``: ∂q/∂θ, ∂q̇/∂θ and dτ/dθ, what finite differences of the
  motion give too) and central finite differences (2 n_θ + 1 plain runs): wall time
  (median of a few runs) and the ratio to one plain run; and the sensitivity run that
  also gives ∂λ/∂θ, ∂F/∂θ at every sample (the default, ``+forces``);
- the error of both against a reference: Richardson extrapolation of central
  differences at steps h and h/2 (relative to the largest |∂q/∂θ|), at
  parameters where the event sequence does not change;
- the number of right-hand-side evaluations the integrator made (``nfev``: ``solve_ivp``
  or the compiled DOP853 loop) in the plain and in the sensitivity run (where a
  sensitivity run's extra steps come from), and which integrator the sensitivity run used;
- ``py rhs``: the sensitivity run (without the forces) with its compiled path switched off
  (``solve_ivp`` on the Python variational right-hand side), in plain runs;
- the cost of binding new parameter values (``System.bind`` + compiling the
  formulation) against one plain 30 s oscillator run.

    python benchmarks/sensitivity_speed.py
"""

import importlib
import os
import time
from pathlib import Path

import numpy as np
from _timing import median_time

import pympc
from pympc.dynamics.sensitivity import Sensitivities
from pympc.mechanics import GeneralMethod

MODELS = Path(__file__).parents[1] / "models"
_driver = importlib.import_module("pympc.dynamics.simulate")     # the module (pympc.dynamics.simulate is the function)
try:                     # the module that calls the integrators: the phase stepper (before issue 27: the driver)
    _steps = importlib.import_module("pympc.dynamics.stepper")
except ImportError:
    _steps = _driver


def rhs_calls(run):
    """Right-hand-side evaluations the integrators (``solve_ivp``, the compiled DOP853 loop) make in ``run()``
    (an untimed run)."""
    total, solve_ivp, loop = [0], _steps.solve_ivp, _steps.dop853.integrate

    def counting(integrate):
        def counted(*args, **kwargs):
            sol = integrate(*args, **kwargs)
            total[0] += sol.nfev
            return sol
        return counted
    _steps.solve_ivp, _steps.dop853.integrate = counting(solve_ivp), counting(loop)
    try:
        run()
    finally:
        _steps.solve_ivp, _steps.dop853.integrate = solve_ivp, loop
    return total[0]


def python_rhs(run):
    """``run()`` with the sensitivities' compiled path switched off (``solve_ivp`` on the Python variational
    right-hand side, as before it existed; a commit without it runs as it is)."""
    flat = getattr(Sensitivities, "flat", None)
    if flat is None:
        return run()
    Sensitivities.flat = lambda self, mode: None
    try:
        return run()
    finally:
        Sensitivities.flat = flat


def fd(system, span, grid, names, h_rel):
    out = []
    for k in names:
        v = system.parameters[k]
        h = h_rel * max(abs(v), 1e-2)
        a, b = (pympc.simulate(system, span, params={k: v + d}, t_eval=grid) for d in (h, -h))
        if [e.kind for e in a.events] != [e.kind for e in b.events]:
            raise RuntimeError(f"the event sequence changes with {k}: pick other parameters")
        out.append((a.q - b.q) / (2 * h))
    return np.stack(out, axis=-1)


def case(label, path, span, names, params, repeats=3):
    system = pympc.load_model(path, **params)
    grid = np.linspace(*span, 301)
    plain = median_time(lambda: pympc.simulate(system, span, t_eval=grid), repeats)
    sens = median_time(lambda: pympc.simulate(system, span, t_eval=grid, sensitivities=names,
                                              force_sensitivities=False), repeats)
    sens_py = median_time(lambda: python_rhs(lambda: pympc.simulate(system, span, t_eval=grid, sensitivities=names,
                                                                    force_sensitivities=False)), repeats)
    sens_f = median_time(lambda: pympc.simulate(system, span, t_eval=grid, sensitivities=names), repeats)
    t = time.perf_counter()
    d1 = fd(system, span, grid, names, 1e-4)
    fd_time = time.perf_counter() - t + plain          # + the nominal run a user needs anyway
    d2 = fd(system, span, grid, names, 0.5e-4)
    ref = (4 * d2 - d1) / 3                             # Richardson: error O(h^4)
    tr = pympc.simulate(system, span, t_eval=grid, sensitivities=names)
    nfev = [rhs_calls(lambda: pympc.simulate(system, span, t_eval=grid, sensitivities=s)) for s in (None, names)]
    keep = ~np.isin(tr.t, [e.time for e in tr.events])
    scale = np.abs(ref[keep]).max(axis=(0, 1))
    err_s = (np.abs(tr.dq[keep] - ref[keep]).max(axis=(0, 1)) / scale).max()
    err_fd = (np.abs(d1[keep] - ref[keep]).max(axis=(0, 1)) / scale).max()
    p = len(names)
    print(f"{label:28s} {p:3d} {len(tr.events):6d} {plain * 1e3:9.1f} {sens * 1e3:9.1f} {sens / plain:7.2f} "
          f"{1 + p:7d} {sens_f * 1e3:9.1f} {sens_f / plain:7.2f} {fd_time * 1e3:9.1f} {fd_time / plain:7.2f} {err_s:10.1e} {err_fd:10.1e} {nfev[0]:6d} {nfev[1]:6d} {sens_py / plain:7.2f}  "
          f"{tr.info['integrator']}")


def main():
    print("sensitivities vs central finite differences (one run; times are medians; errors relative to max|dq/dθ|)")
    print("load average at the start: %.2f %.2f %.2f" % os.getloadavg())
    print(f"{'case':28s} {'n_θ':>3s} {'events':>6s} {'plain ms':>9s} {'sens ms':>9s} {'ratio':>7s} {'target':>7s} "
          f"{'+forces':>9s} {'ratio':>7s} {'FD ms':>9s} {'ratio':>7s} {'err sens':>10s} {'err FD':>10s} {'nfev':>6s} {'nfev S':>6s} {'py rhs':>7s}  integrator (sens)")
    osc = MODELS / "friction_oscillator.toml"
    case("oscillator 30 s", osc, (0.0, 30.0), ["mu", "mu_s"], {})
    case("oscillator 30 s", osc, (0.0, 30.0), ["mu", "mu_s", "K", "F0"], {})
    case("cross slide 1 s", MODELS / "cross_slide.toml", (0.0, 1.0), ["mu1", "mu2", "P"], {"P": 20.0, "v1": -1.0})
    s = pympc.load_model(osc)
    plain = median_time(lambda: pympc.simulate(s, (0.0, 30.0)), 3)
    vals = iter(np.linspace(0.2, 0.3, 1000))
    bind = median_time(lambda: GeneralMethod(s.bind(mu=next(vals))), 50)
    print(f"\nbinding new parameter values (System.bind + GeneralMethod): {bind * 1e3:.3f} ms = "
          f"{100 * bind / plain:.2f} % of one plain 30 s oscillator run ({plain * 1e3:.0f} ms; target <= 5 %)")
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
