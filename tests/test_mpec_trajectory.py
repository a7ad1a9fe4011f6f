"""The whole-trajectory MPEC route (pympc.identify.mpec_model, mpec_route; estimate(method="mpec")).

Oracles: the static-friction law checked by linear programming on the same
slot_law function the model uses; the time-stepping rows evaluated at the
exact simulator's trajectory (first order: they shrink with the step); the
MPEC estimate against the shooting estimate on noise-free data.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import pympc
from pympc.errors import ModelError, OptionError
from pympc.identify import Experiment, Mpec, Parameter, estimate
from pympc.identify.experiment import synthetic_record
from pympc.mechanics import load_model
from pympc.identify.mpec_model import residuals, slot_law, trajectory_model

MODELS = Path(__file__).resolve().parent.parent / "models"
OSC = MODELS / "friction_oscillator.toml"


def _P_range(sp, sm, lam, mu, mu_s):
    """min and max of the friction force P allowed by slot_law at fixed slip parts and normal force (LP over P, w±)."""
    def sides(x):                      # x = (P, wp, wm): the pairs' values, affine in x
        return [(a, c) for _, a, c in slot_law(lam, 0.0, x[0], sp, sm, mu, mu_s, x[1], x[2])]
    base = sides(np.zeros(3))
    cols = [sides(np.eye(3)[i]) for i in range(3)]
    A_eq, b_eq, A_ub, b_ub = [], [], [], []
    for r, (a, c0) in enumerate(base):
        if r == 0:
            continue                   # the wall pair: Λ⁺ = lam, Λ⁻ = 0
        row = [cols[i][r][1] - c0 for i in range(3)]
        if a > 0:
            A_eq.append(row), b_eq.append(-c0)           # a > 0: c = 0
        else:
            A_ub.append([-v for v in row]), b_ub.append(c0)  # a = 0: c >= 0
    bounds = [(None, None), (0, None), (0, None)]
    out = []
    for sign in (1, -1):
        res = linprog([sign, 0, 0], A_ub=A_ub or None, b_ub=b_ub or None, A_eq=A_eq or None, b_eq=b_eq or None,
                      bounds=bounds)
        out.append(sign * res.fun if res.status == 0 else None)
    return out


@pytest.mark.parametrize("lam", [0.5, 2.0])
def test_static_friction_law(lam):
    mu, mu_s = 0.3, 0.4
    lo, hi = _P_range(0.0, 0.0, lam, mu, mu_s)          # sticking: |P| <= mu_s |Λ|
    assert lo == pytest.approx(-mu_s * lam) and hi == pytest.approx(mu_s * lam)
    lo, hi = _P_range(0.7, 0.0, lam, mu, mu_s)          # slipping forward: P = -mu |Λ|
    assert lo == pytest.approx(-mu * lam) and hi == pytest.approx(-mu * lam)
    lo, hi = _P_range(0.0, 0.7, lam, mu, mu_s)          # slipping backward: P = +mu |Λ|
    assert lo == pytest.approx(mu * lam) and hi == pytest.approx(mu * lam)
    lo, hi = _P_range(0.0, 0.0, lam, mu, mu)            # mu_s = mu: the plain law, |P| <= mu |Λ|
    assert hi == pytest.approx(mu * lam)


def _warm(system, T, h):
    grid = np.linspace(0.0, T, int(round(T / h)) + 1)
    tr = pympc.simulate(system, (0.0, T), t_eval=grid)
    rows = np.searchsorted(tr.t, grid, side="right") - 1
    return tr, {"q": tr.q[rows], "v": tr.qd[rows], "normal_force": tr.normal_force[rows],
                "friction_force": tr.friction_force[rows]}


def test_rows_at_the_simulated_trajectory_are_first_order():
    """The exact trajectory violates the time-stepping rows by O(h): positions pointwise, the dynamics
    in the time integral (a switch inside a step leaves an O(1) force error on that one step)."""
    system = load_model(OSC)
    T = 2.0
    out = []
    for h in (0.04, 0.02, 0.01):
        tr, ws = _warm(system, T, h)
        t = np.linspace(0.0, T, 21)
        m = trajectory_model(system, t, np.zeros((t.size, 1)), ["mass.x"], fit={"mu": (0.05, 1.0)}, step=h,
                             warm_start=ws)
        b = m.experiment[0]
        pos = max(abs(c.body() - c.upper()) for c in b.position.values())
        dyn = h * sum(abs(c.body() - c.upper()) for c in b.dynamics.values())
        assert residuals(m)["complementarity"] <= 1e-12
        out.append((pos, dyn))
    (p1, d1), (p2, d2), (p3, d3) = out
    assert p2 < 0.6 * p1 and p3 < 0.6 * p2
    assert d2 < 0.7 * d1 and d3 < 0.7 * d2


def test_unsupported_outputs_and_models_are_refused():
    system = load_model(OSC)
    with pytest.raises(OptionError, match="not supported by the MPEC route"):
        trajectory_model(system, [0.0, 1.0], [[0.0], [0.0]], ["kinetic"], fit={"mu": (0, 1)}, step=0.1)
    with pytest.raises(ModelError, match="not covered"):
        trajectory_model(load_model(MODELS / "wheel_rod.toml"), [0.0, 1.0], [[0.0], [0.0]], ["disc.x"],
                         fit={}, step=0.1)


@pytest.fixture(scope="module")
def oscillator():
    t = np.arange(0.0, 2.0 + 1e-9, 0.05)
    df, _ = synthetic_record(OSC, t, ["mass.x"], 0.0, 0)
    exp = Experiment(OSC, df)
    shooting = estimate(exp, [Parameter("mu", 0.25, (0.05, 1.0))])
    return exp, shooting


def test_mpec_estimate_approaches_the_shooting_estimate(oscillator):
    """Noise-free oscillator record (2 s, one breakaway and one slip stop): μ by the MPEC route at two steps.

    Stated bound: |μ_mpec − μ_shooting| < 0.005 at h = 0.02 s, and smaller than at h = 0.04 s.
    """
    exp, shooting = oscillator
    assert shooting.optimum[0] == pytest.approx(0.3, abs=1e-4)
    gaps = []
    for h in (0.04, 0.02):
        r = estimate(exp, [Parameter("mu", 0.25, (0.05, 1.0))], Mpec(step=h))
        mp = r.method["mpec"]
        assert mp["verified"] and all(r.checks()[k][0] for k in ("converged", "mpec", "simulations")), r.summary()
        # the discretization check's bias estimate (an exact-model Gauss–Newton step) points at the shooting
        # estimate; on noise-free data the bias exceeds the standard error and the result says so
        bias = mp["exact_step"][0]
        assert abs(r.optimum[0] + bias - shooting.optimum[0]) < 0.1 * abs(r.optimum[0] - shooting.optimum[0])
        assert r.checks()["discretization"][0] == (abs(bias) <= r.stderr[0]) and r.ok == r.checks()["discretization"][0]
        assert mp["complementarity_residual"] <= 1e-8 and mp["dynamics_residual"] <= 1e-7
        assert r.checks()["mpec"][0]
        assert np.all(np.isfinite(r.covariance)) and r.stderr[0] > 0
        assert r.method["method"] == "mpec" and r.model is not None
        gaps.append(abs(r.optimum[0] - shooting.optimum[0]))
    assert gaps[1] < gaps[0] and gaps[1] < 0.005, gaps


def test_cli_identify_mpec(tmp_path, capsys):
    from pympc.cli import main

    t = np.arange(0.0, 2.0 + 1e-9, 0.05)
    df, sigma = synthetic_record(OSC, t, ["mass.x"], 0.01, 3)
    data = tmp_path / "short.csv"
    df.to_csv(data, index=False)
    code = main(["identify", str(OSC), str(data), "--fit", "mu", "--method", "mpec", "--step", "0.04",
                 "--noise", str(sigma["mass.x"]), "--out", str(tmp_path), "--no-plots"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "identification by mpec" in out and "check mpec           ok" in out
    d = json.loads((tmp_path / "result.json").read_text())
    assert d["method"]["method"] == "mpec" and abs(d["optimum"][0] - 0.3) < 0.01


# ---------------------------------------------------------------- discretization against optimization error
def _equal_coefficients(tmp_path):
    """The oscillator with μ_s = μ (the slot's static coefficient is the parameter mu)."""
    path = tmp_path / "oscillator_mu_s_eq_mu.toml"
    text = OSC.read_text()
    assert 'mu_s = "mu_s"' in text
    path.write_text(text.replace('mu_s = "mu_s"', 'mu_s = "mu"'))
    return path


def _slope(h, err):
    return float(np.polyfit(np.log(h), np.log(err), 1)[0])


@pytest.mark.parametrize("case", ["mu_s > mu", "mu_s = mu"])
def test_time_stepping_is_the_mpec_and_first_order(case, tmp_path):
    """The MPEC's time stepping run as a simulation (pympc.identify.mpec_stepping): its trajectory satisfies the
    MPEC's rows and pairs (same equations), and its velocity error against the event-driven simulator
    halves with the step (first order)."""
    from pympc.identify.mpec_stepping import time_stepping

    system = load_model(OSC if case == "mu_s > mu" else _equal_coefficients(tmp_path))
    T, hs, errs = 2.0, (0.04, 0.02, 0.01), []
    for h in hs:
        ts = time_stepping(system, T, h)
        t = np.linspace(0.0, T, 11)
        m = trajectory_model(system, t, np.zeros((t.size, 1)), ["mass.x"], fit={"mu": (0.05, 1.0)}, step=h,
                             warm_start=ts)
        r = residuals(m)
        assert r["dynamics"] <= 1e-7 and r["complementarity"] <= 1e-7, r
        tr = pympc.simulate(system, (0.0, T), t_eval=ts["t"])
        rows = tr.sample_rows(ts["t"])
        errs.append(np.max(np.abs(ts["v"][:, 0] - tr.qd[rows, 0])))
    assert errs[0] > 1e-3                            # the step matters ...
    assert all(a / b >= 1.6 for a, b in zip(errs, errs[1:])), errs   # ... at first order
    assert _slope(hs, errs) >= 0.8


@pytest.mark.parametrize("case", ["mu_s > mu", "mu_s = mu"])
def test_mpec_gap_to_shooting_is_first_order(case, tmp_path):
    """Noise-free 2 s oscillator record, μ fitted (μ_s held at 0.4, or equal to μ): the MPEC estimate at
    h = 0.04, 0.02, 0.01 s (the ladder of one estimate) approaches the shooting estimate at first order, and
    each one is a local minimum of the least squares over the time stepping (checked by running the time
    stepping at μ ± 2e-4: an oracle independent of the MPEC solver)."""
    from pympc.identify.mpec_stepping import time_stepping

    path = OSC if case == "mu_s > mu" else _equal_coefficients(tmp_path)
    t = np.arange(0.0, 2.0 + 1e-9, 0.05)
    df, _ = synthetic_record(path, t, ["mass.x"], 0.0, 0)
    exp = Experiment(path, df)
    spec = [Parameter("mu", 0.25, (0.05, 1.0))]
    shooting = estimate(exp, spec)
    assert shooting.optimum[0] == pytest.approx(0.3, abs=1e-5)
    r = estimate(exp, spec, Mpec(step=0.01))
    mp = r.method["mpec"]
    assert mp["verified"] and all(r.checks()[k][0] for k in ("converged", "mpec", "simulations")), r.summary()
    ladder = mp["ladder"]
    assert [round(x["step"], 6) for x in ladder] == [0.04, 0.02, 0.01] and all(x["verified"] for x in ladder)
    gaps = [abs(x["theta"][0] - shooting.optimum[0]) for x in ladder]
    hs = [x["step"] for x in ladder]
    assert all(b < a for a, b in zip(gaps, gaps[1:])), gaps
    assert _slope(hs, gaps) >= 0.8 and gaps[-1] < 5e-4, gaps
    system = load_model(path)
    y = df["mass.x"].to_numpy()

    def fit(mu, h):
        ts = time_stepping(system.bind({"mu": mu}), 2.0, h)
        return float(np.sum((np.interp(t, ts["t"], ts["q"][:, 0]) - y) ** 2))
    mu, h = ladder[1]["theta"][0], ladder[1]["step"]
    assert fit(mu, h) <= min(fit(mu - 2e-4, h), fit(mu + 2e-4, h))


def test_time_stepping_without_a_solution_is_a_simulation_error():
    from pympc.errors import SimulationError
    from pympc.identify.mpec_stepping import time_stepping

    with pytest.raises(SimulationError, match=r"step 1 \(t = 0.1\) has no solution"):
        time_stepping(load_model(OSC), 0.2, 0.1, big=1.0)     # the normal force 9.8 N exceeds the bound


# ---------------------------------------------------------------- the breakaway inside the step: μ and μ_s together
def _osc_cost(system, t, y, h, breakaway=True, **values):
    from pympc.identify.mpec_stepping import time_stepping

    ts = time_stepping(system.bind(values), float(t[-1]), h, breakaway=breakaway)
    return float(np.sum((np.interp(t, ts["t"], ts["q"][:, 0]) - y) ** 2))


def test_time_stepping_is_continuous_in_mu_s():
    """With the breakaway resolved inside the step the least squares of the time stepping against the exact
    record is continuous in μ_s: on a grid of μ_s no plateau (the old stick-first law was piecewise constant:
    the breakaway jumped by whole steps) and no jump (no difference above twice both neighbours')."""
    system = load_model(OSC)
    t = np.arange(0.0, 2.0 + 1e-9, 0.05)
    df, _ = synthetic_record(OSC, t, ["mass.x"], 0.0, 0)
    y = df["mass.x"].to_numpy()
    grid = np.linspace(0.37, 0.43, 31)
    cost = np.array([_osc_cost(system, t, y, 0.04, mu_s=v) for v in grid])
    d = np.abs(np.diff(cost))
    assert np.all(d > 1e-12 * cost.max()), d                         # no plateau
    for i in range(1, d.size - 1):                                   # no isolated jump
        assert d[i] <= 2.0 * max(d[i - 1], d[i + 1]) + 1e-12, (i, d[i - 1:i + 2])
    old = np.array([_osc_cost(system, t, y, 0.04, breakaway=False, mu_s=v) for v in grid])
    assert np.sum(np.abs(np.diff(old)) <= 1e-12 * old.max()) >= 20   # the same oracle sees the old law's plateaus


def test_breakaway_step_satisfies_the_nlp_rows():
    """A time-stepping trajectory with a breakaway inside a step satisfies the configured NLP exactly: the
    virtual stick step's rows, the interpolation row of the breakaway step, every pair."""
    from pympc.identify.mpec_stepping import time_stepping

    system = load_model(OSC)
    ts = time_stepping(system, 1.0, 0.02)
    (k, event), = ts["breakaway"].items()
    theta, sigma = event["slots"][0]
    assert 0.0 < theta < 1.0 and sigma == -1.0                      # the spring pulls back: slip forward
    assert ts["stuck"][k - 1, 0] and not ts["stuck"][k, 0] and ts["slip"][k, 0] > 0
    P_virtual, lam = event["virtual"]["friction_force"][0], abs(ts["normal_force"][k, 0])
    assert ts["friction_force"][k, 0] == pytest.approx(theta * P_virtual + (1 - theta) * sigma * 0.3 * lam, abs=1e-9)
    t = np.linspace(0.0, 1.0, 11)
    m = trajectory_model(system, t, np.zeros((t.size, 1)), ["mass.x"], fit={"mu": (0.05, 1.0), "mu_s": (0.05, 1.5)},
                         step=0.02, warm_start=ts)
    b = m.experiment[0]
    assert b.component(f"breakaway_{k}") is not None and b.pattern == {k: ((0,), ((0, -1.0),))}
    r = residuals(m)
    assert r["dynamics"] <= 1e-8 and r["complementarity"] <= 1e-9, r


def test_mpec_fits_mu_and_mu_s_at_first_order():
    """Noise-free 2 s oscillator record, μ and μ_s fitted together: the MPEC estimates at h = 0.04, 0.02, 0.01 s
    (the ladder of one estimate, by the walk) approach the shooting estimate at first order in both
    parameters, and each estimate is a local minimum of the least squares over the time stepping (run at
    μ ± 2e-4 and μ_s ± 2e-4: an oracle independent of the MPEC solver)."""
    t = np.arange(0.0, 2.0 + 1e-9, 0.05)
    df, _ = synthetic_record(OSC, t, ["mass.x"], 0.0, 0)
    exp = Experiment(OSC, df)
    spec = [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.45, (0.05, 1.5))]
    shooting = estimate(exp, spec)
    assert shooting.optimum == pytest.approx([0.3, 0.4], abs=1e-5)
    r = estimate(exp, spec, Mpec(step=0.01))
    mp = r.method["mpec"]
    assert mp["verified"] and all(r.checks()[k][0] for k in ("converged", "mpec", "simulations")), r.summary()
    assert mp["route"] == "walk" and not mp["static"]                # a point estimate of μ_s, not a bound
    assert r.checks()["identifiable"][0], r.checks()["identifiable"]
    ladder = mp["ladder"]
    assert [round(x["step"], 6) for x in ladder] == [0.04, 0.02, 0.01] and all(x["verified"] for x in ladder)
    hs = [x["step"] for x in ladder]
    system, y = load_model(OSC), df["mass.x"].to_numpy()
    for p in range(2):
        gaps = [abs(x["theta"][p] - shooting.optimum[p]) for x in ladder]
        assert all(b < a for a, b in zip(gaps, gaps[1:])), (p, gaps)
        assert _slope(hs, gaps) >= 0.8, (p, gaps)
    assert abs(ladder[-1]["theta"][1] - 0.4) < 0.01
    for x in ladder[1:]:
        mu, mu_s = x["theta"]
        best = _osc_cost(system, t, y, x["step"], mu=mu, mu_s=mu_s)
        for d_mu, d_mus in ((2e-4, 0), (-2e-4, 0), (0, 2e-4), (0, -2e-4)):
            assert best <= _osc_cost(system, t, y, x["step"], mu=mu + d_mu, mu_s=mu_s + d_mus), (x, d_mu, d_mus)


def test_mpec_mu_s_without_breakaway_is_one_sided():
    """Data that never break away (a weak drive) determine μ_s only from below: the MPEC route (walk with the
    breakaway law) reports the one-sided bound max|F|/|λ| of the exact model, never a point estimate."""
    import pandas as pd

    t = np.arange(0.0, 1.0 + 1e-9, 0.05)
    tr = pympc.simulate(load_model(OSC, F0=2.0), (0.0, 1.0), t_eval=t)
    assert all(e.kind.name != "BREAKAWAY" for e in tr.events[1:])
    exp = Experiment(OSC, pd.DataFrame({"t": t, "mass.x": tr.q[:, 0]}), fixed={"F0": 2.0})
    r = estimate(exp, [Parameter("mu_s", 0.45, (0.05, 1.5))], Mpec(step=0.05))
    assert r.method["mpec"]["verified"]
    ok, why = r.checks()["identifiable"]
    assert not ok and "mu_s: one-sided" in why
    assert r.stick["mu_s"]["kind"] == "lower bound" and 0.1 < r.stick["mu_s"]["bound"] < 0.4


def test_breakaway_through_joints_satisfies_the_nlp_rows():
    """Slider-crank (revolute joints, nonlinear position rows): the slider, at rest, breaks away in the first
    step (θ = 0: no earlier stuck step, r_0 = 0); the time stepping's trajectory satisfies the configured NLP
    (virtual stick step with its joint forces, interpolation row) up to the MILP's feasibility tolerance."""
    from pympc.identify.mpec_stepping import time_stepping

    system = load_model(MODELS / "slider_crank.toml")
    ts = time_stepping(system, 0.4, 0.02)
    assert list(ts["breakaway"]) == [1] and ts["breakaway"][1]["slots"][0][0] == 0.0
    assert np.abs(ts["breakaway"][1]["virtual"]["nu"]).max() > 1.0            # the joints carry the stick step
    t = np.linspace(0.0, 0.4, 5)
    m = trajectory_model(system, t, np.zeros((t.size, 1)), ["crank.phi"],
                         fit={"mu": (0.05, 1.0), "mu_s": (0.05, 1.5)}, step=0.02, warm_start=ts)
    r = residuals(m)
    assert r["dynamics"] <= 1e-6 and r["complementarity"] <= 1e-6, r


def test_fit_mpec_returns_a_declared_result(oscillator):
    """fit_mpec's MpecFit: Pyomo's enums as two fields, sizes that are the model's, timing, a JSON-able dict;
    an unverifiable fit (a walk budget of one NLP cannot be consistent) says so in both fields."""
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
    from pyomo.mpec import Complementarity

    import pyomo.environ as pyo
    from pympc.identify import MpecFit, Parametrization, fit_mpec

    exp, shooting = oscillator
    par = Parametrization([Parameter("mu", 0.25, (0.05, 1.0))], [exp])
    rows, results, fit = fit_mpec([exp], par, step=0.04, continuation=False)
    assert isinstance(fit, MpecFit) and fit.verified and fit.route == "walk"
    assert fit.termination_condition is TerminationCondition.convergenceCriteriaSatisfied
    assert fit.solution_status is SolutionStatus.optimal
    m = fit.model
    assert fit.complementarity_pairs == sum(1 for _ in m.component_data_objects(Complementarity, active=True)) > 0
    assert fit.complementarity_pairs == sum(len(b.sides) for b in m.experiment.values())
    assert fit.variables == sum(1 for v in m.component_data_objects(pyo.Var) if not v.fixed) > fit.steps[0]
    assert fit.constraints > 0 and fit.steps == [50] and fit.step == [pytest.approx(0.04)]
    assert fit.timing["total"] >= fit.timing["solve"] > 0 and len(fit.ladder) == 1 and fit.walks
    assert abs(fit.theta["mu"] - 0.3) < 0.005 and rows[0]["status"] == "converged"
    d = json.loads(json.dumps(fit.as_dict()))
    assert d["termination"] == "convergenceCriteriaSatisfied" and d["solution_status"] == "optimal"
    assert "model" not in d and d["names"] == ["mu"]


def test_walk_budget_is_not_a_verified_answer(oscillator):
    """walk_modes with a budget of one NLP stops before the branches are checked: iterationLimit, not converged."""
    from pyomo.contrib.solver.common.results import TerminationCondition

    from pympc.identify import Parametrization
    from pympc.identify.mpec_route import _trajectories, mpec_model, walk_modes

    exp, _ = oscillator
    par = Parametrization([Parameter("mu", 0.25, (0.05, 1.0))], [exp])
    m, _ = mpec_model([exp], par, 0.04, warm=False, static_penalty=0.0)
    run = _trajectories([exp], par)
    w = walk_modes(m, lambda th: run(th, 0.04), {"mu": 0.25}, max_walks=1)
    assert not w["converged"] and w["termination_condition"] is TerminationCondition.iterationLimit
    assert len(w["walks"]) == 1
