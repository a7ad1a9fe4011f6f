"""Event-driven simulation against closed forms, energy balance, paradoxes and cross-checks."""

import math

import numpy as np
import pytest
from conftest import MODELS, NO_SOLUTION, TWO_SOLUTIONS, cross_slide_system
from scipy.optimize import brentq

import pympc
from pympc.dynamics import EventKind, Motion, SimulationStatus, Trajectory
from pympc.errors import OptionError
from pympc.mechanics import Gravity, Particle, PointForce, Slot, System, slider_chain


def block(push=(0.0, 0.0), mu=0.4, mu_s=None, direction=(1.0, 0.0), velocity=(0.0, 0.0), g=(0.0, 0.0)):
    s = System("block")
    s.add(Particle("p", mass=1.0, velocity=velocity))
    s.add(Slot("slot", "p", "ground", direction=direction, mu=mu, mu_s=mu_s))
    s.add(PointForce("push", "p", value=push))
    s.add(Gravity("gravity", g=g))
    return s


def test_hand_cases_of_the_design_note():
    tr = pympc.simulate(block(push=(3.0, -10.0)), (0.0, 1.0))
    e = tr.events[0]
    lp, lm, ap, am, fp, fm = (float(v[0]) for v in _split(e))
    assert (lp - lm, ap - am, fp, fm) == pytest.approx((10.0, 0.0, 1.0, 7.0), abs=1e-12)
    assert e.mode_after.motions == (Motion.STICK,) and e.classification == "UNIQUE"
    assert tr.friction_force[:, 0] == pytest.approx(-3.0, abs=1e-9) and abs(tr.q[-1, 0]) < 1e-12
    tr = pympc.simulate(block(push=(5.0, -10.0)), (0.0, 1.0))
    assert tr.events[0].mode_after.motions == (Motion.FORWARD,)
    assert tr.q[-1, 0] == pytest.approx(0.5, rel=1e-10) and tr.friction_force[:, 0] == pytest.approx(-4.0)


def _split(e):
    s = len(e.mode_after.walls)
    c = len(e.candidates)
    x, y = e.x, e.y
    return x[:s], y[:s], x[s:s + c], y[s + c:], y[s:s + c], x[s + c:]


@pytest.mark.parametrize("alpha, mu, mu_s", [(0.3, 0.2, 0.5), (0.6, 0.2, 0.4)])
def test_block_thrown_up_an_inclined_slot(alpha, mu, mu_s):
    g, v0 = 9.81, 3.0
    d = (math.cos(alpha), math.sin(alpha))
    s = block(mu=mu, mu_s=mu_s, direction=d, velocity=(v0 * d[0], v0 * d[1]), g=(0.0, -g))
    tr = pympc.simulate(s, (0.0, 1.5), rtol=1e-12, atol=1e-14)
    assert tr.success
    up = g * (math.sin(alpha) + mu * math.cos(alpha))
    t_stop = v0 / up
    stop = [e for e in tr.events if e.kind == EventKind.SLIP_STOP]
    assert stop and stop[0].time == pytest.approx(t_stop, abs=1e-10)
    s_stop = v0 * t_stop - 0.5 * up * t_stop**2
    along = tr.q @ np.array(d)
    before = tr.t <= t_stop
    np.testing.assert_allclose(along[before], v0 * tr.t[before] - 0.5 * up * tr.t[before] ** 2, atol=1e-10)
    after = tr.t > t_stop + 1e-9
    if math.tan(alpha) <= mu_s:              # static friction holds it
        assert stop[0].mode_after.motions == (Motion.STICK,)
        np.testing.assert_allclose(along[after], s_stop, atol=1e-10)
        assert np.all(tr.motions[after, 0] == 0)
    else:                                    # slides back down with a = g (sin α − μ cos α)
        assert stop[0].mode_after.motions == (Motion.BACKWARD,)
        down = g * (math.sin(alpha) - mu * math.cos(alpha))
        tt = tr.t[after] - t_stop
        np.testing.assert_allclose(along[after], s_stop - 0.5 * down * tt**2, atol=1e-9)
    assert tr.normal_force[:, 0] == pytest.approx(g * math.cos(alpha), rel=1e-9)


def test_bead_on_a_spinning_rod():
    s = pympc.load_model(MODELS / "rotating_rod_bead.toml")
    p = s.parameters
    m, w, mu, r0 = p["m"], p["omega"], p["mu"], p["r0"]
    tr = pympc.simulate(s, rtol=1e-12, atol=1e-14)
    assert tr.success and tr.events[0].mode_after.motions == (Motion.FORWARD,)
    assert tr.events[0].probe is not None           # λ = 0 at the start: the wall is read just after
    # r'' + 2 μ ω r' − ω² r = 0, r(0) = r0, r'(0) = 0
    s1, s2 = -mu * w + w * math.sqrt(mu * mu + 1), -mu * w - w * math.sqrt(mu * mu + 1)
    A, B = r0 * s2 / (s2 - s1), -r0 * s1 / (s2 - s1)
    t = tr.t
    r = A * np.exp(s1 * t) + B * np.exp(s2 * t)
    rd = A * s1 * np.exp(s1 * t) + B * s2 * np.exp(s2 * t)
    np.testing.assert_allclose(np.hypot(tr.q[:, 3], tr.q[:, 4]), r, rtol=1e-9)
    np.testing.assert_allclose(tr.normal_force[:, 0], 2 * m * w * rd, atol=1e-8)      # Coriolis
    np.testing.assert_allclose(tr.friction_force[:, 0], -mu * 2 * m * w * rd, atol=1e-8)


@pytest.mark.parametrize("model", ["cross_slide", "friction_oscillator", "rotating_rod_bead", "slider_crank", "chain"])
def test_energy_balance_on_friction_models(model):
    if model == "chain":
        tr = pympc.simulate(slider_chain(5), (0.0, 1.0))
    else:
        tr = pympc.simulate(MODELS / f"{model}.toml", (0.0, 1.0) if model == "slider_crank" else None)
    assert tr.success, tr.message
    assert tr.dissipated[-1] > 0 and np.all(np.diff(tr.dissipated) >= -1e-12)
    assert tr.energy_error < 1e-8
    assert tr.drift.max() < 1e-8
    assert all(e.verified for e in tr.events)
    times = np.array([e.time for e in tr.events])
    assert np.all(np.diff(times) > 1e-7), "two events at the same time: a transition was decided wrongly"
    assert all(e.mode_after != e.mode_before for e in tr.events[1:]), "an event that changed nothing"


def test_friction_oscillator_event_times_match_the_closed_form():
    s = pympc.load_model(MODELS / "friction_oscillator.toml")
    p = s.parameters
    K, F0, g, mu, mu_s = p["K"], p["F0"], p["g"], p["mu"], p["mu_s"]
    tr = pympc.simulate(s, (0.0, 3.0), rtol=1e-12, atol=1e-14)
    kinds = [e.kind for e in tr.events[:3]]
    assert kinds == [EventKind.START, EventKind.BREAKAWAY, EventKind.SLIP_STOP]
    t1 = math.asin(mu_s * g / F0)                      # F0 sin t reaches μ_s m g at x = 0
    assert tr.events[1].time == pytest.approx(t1, abs=1e-10)
    # forward slip from rest at x = 0: x'' + K x = F0 sin t − μ g
    w0 = math.sqrt(K)
    c = F0 / (K - 1)

    def x_v(t):
        # x = a cos w0 τ + b sin w0 τ + c sin t − μg/K with τ = t − t1
        tau = t - t1
        a = -(c * math.sin(t1) - mu * g / K)
        b = -c * math.cos(t1) / w0
        x = a * math.cos(w0 * tau) + b * math.sin(w0 * tau) + c * math.sin(t) - mu * g / K
        v = -a * w0 * math.sin(w0 * tau) + b * w0 * math.cos(w0 * tau) + c * math.cos(t)
        return x, v

    t2 = brentq(lambda t: x_v(t)[1], t1 + 0.1, t1 + 2.0, xtol=1e-15)
    assert tr.events[2].time == pytest.approx(t2, abs=1e-9)
    assert tr.events[2].mode_after.motions == (Motion.STICK,)
    i = np.searchsorted(tr.t, t2)
    assert tr.q[i, 0] == pytest.approx(x_v(t2)[0], abs=1e-9)


@pytest.mark.parametrize("case, classification", [(TWO_SOLUTIONS, "FINITE"), (NO_SOLUTION, "NONE")])
def test_painleve_paradoxes_stop_with_a_status(case, classification):
    tr = pympc.simulate(cross_slide_system(*case), (0.0, 0.5))
    assert tr.status == SimulationStatus.PARADOX
    e = tr.events[-1]
    assert e.classification == classification
    assert "paradox" in tr.message
    sset = pympc.enumerate_solutions(e.hlcp)           # the recorded HLCP reproduces the verdict
    assert sset.kind.name == classification


def test_ambiguity_rule_is_applied_and_recorded():
    tr = pympc.simulate(cross_slide_system(*TWO_SOLUTIONS), (0.0, 0.5), on_ambiguous="min_force")
    assert tr.status != SimulationStatus.PARADOX
    assert tr.events[0].solver == "min_force" and tr.events[0].solutions == 2
    tr = pympc.simulate(cross_slide_system(*TWO_SOLUTIONS), (0.0, 0.5), on_ambiguous="lemke")
    assert tr.events[0].solver == "lemke (on_ambiguous)" and tr.events[0].verified
    with pytest.raises(OptionError, match="on_ambiguous"):
        pympc.simulate(cross_slide_system(*TWO_SOLUTIONS), (0.0, 0.5), on_ambiguous="random")


def test_per_event_crosscheck_agrees_along_a_simulation():
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 6.0), crosscheck="all")
    assert tr.success and len(tr.events) >= 5
    for e in tr.events:
        assert set(e.crosscheck) == {"ipopt", "milp"}
        assert all(v["agree"] for v in e.crosscheck.values()), (e, e.crosscheck)
    m = tr.events[2].pyomo_model()
    import pyomo.environ as pyo
    assert len(list(m.component_data_objects(pyo.Var))) == 2 * tr.events[2].hlcp.n


@pytest.mark.parametrize("model, t_end", [("cross_slide", 0.5), ("rotating_rod_bead", 0.2), ("slider_crank", 0.6)])
def test_every_event_of_the_friction_models_crosschecks(model, t_end):
    """The event HLCPs of the bundled friction models (degenerate and continuum sets included) by IPOPT and
    the MILP: each answer verified and in the solution set."""
    tr = pympc.simulate(MODELS / f"{model}.toml", (0.0, t_end), crosscheck="all")
    assert tr.success and tr.events
    for e in tr.events:
        assert all(v["agree"] for v in e.crosscheck.values()), (e, e.crosscheck)


def test_general_and_tree_simulations_agree():
    a = pympc.simulate(MODELS / "slider_crank.toml", (0.0, 2.0), formulation="general")
    b = pympc.simulate(MODELS / "slider_crank.toml", (0.0, 2.0), formulation="tree")
    assert a.success and b.success
    assert [e.kind for e in a.events] == [e.kind for e in b.events]
    np.testing.assert_allclose([e.time for e in a.events], [e.time for e in b.events], atol=1e-8)
    np.testing.assert_allclose(a.q, b.q, atol=1e-7)
    np.testing.assert_allclose(a.normal_force, b.normal_force, atol=1e-6 * abs(a.normal_force).max())


def test_save_and_load_without_loss(tmp_path):
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 5.0))
    tr.save(tmp_path / "run.npz")
    back = Trajectory.load(tmp_path / "run.npz")
    for name in ("t", "q", "qd", "normal_force", "friction_force", "motions", "dissipated"):
        np.testing.assert_array_equal(getattr(back, name), getattr(tr, name))
    assert back.status == tr.status and len(back.events) == len(tr.events)
    for e1, e2 in zip(tr.events, back.events):
        assert (e1.time, e1.kind, e1.mode_after) == (e2.time, e2.kind, e2.mode_after)
        np.testing.assert_array_equal(e1.hlcp.A, e2.hlcp.A)
        np.testing.assert_array_equal(e1.x, e2.x)


def test_event_budget_and_bad_options():
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", max_events=3)
    assert tr.status == SimulationStatus.EVENT_LIMIT and len(tr.events) == 4
    assert tr.t[-1] < 30 and len(tr.t) > 1          # what was computed is kept
    for kwargs in ({"crosscheck": "gurobi"}, {"formulation": "lagrange"}):
        with pytest.raises(OptionError):
            pympc.simulate(MODELS / "friction_oscillator.toml", **kwargs)
    with pytest.raises(OptionError, match="t_span"):
        pympc.simulate(MODELS / "friction_oscillator.toml", (1.0, 0.0))


def test_event_accumulation_guard_ends_with_a_status():
    # every transition of the stick-slip oscillator is "too close" under a huge spacing: the guard must fire
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", min_event_spacing=100.0, zeno_events=3)
    assert tr.status == SimulationStatus.ZENO and len(tr.events) == 4 and "accumulation" in tr.message


def test_translating_slider_body_with_fixed_rotation():
    """A rigid slider whose rotation is fixed (Prescribed phi) slides in an inclined slot like a particle."""
    from pympc.mechanics import Prescribed, RigidBody
    alpha, mu, g = 0.5, 0.2, 9.81
    d = (math.cos(alpha), math.sin(alpha))
    s = System("translating block")
    s.add(RigidBody("block", mass=2.0, inertia=0.1, angle=0.3))
    s.add(Prescribed("no rotation", "block", "phi", 0.3))
    s.add(Slot("incline", "block", "ground", direction=d, point=(0.1, -0.05), origin=(0.1 * math.cos(0.3) + 0.05 * math.sin(0.3),
                                                                                    0.1 * math.sin(0.3) - 0.05 * math.cos(0.3)), mu=mu))
    s.add(Gravity("g", g=(0.0, -g)))
    tr = pympc.simulate(s, (0.0, 1.0))
    assert tr.success and tr.events[0].mode_after.motions == (Motion.BACKWARD,)
    along = tr.q[:, :2] @ np.array(d)
    np.testing.assert_allclose(along - along[0], -0.5 * g * (math.sin(alpha) - mu * math.cos(alpha)) * tr.t**2, atol=1e-9)
    assert np.ptp(tr.q[:, 2]) < 1e-12


def test_cli_simulate_writes_trajectory_and_plots(tmp_path, capsys):
    from pympc.cli import main
    rc = main(["simulate", str(MODELS / "friction_oscillator.toml"), "--t-end", "4", "--set", "mu=0.25",
               "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0 and "BREAKAWAY" in out and "mu=0.25" in out and "energy" in out
    assert {p.name for p in tmp_path.iterdir()} >= {"trajectory.npz", "forces.png", "modes.png", "energy.png"}
    tr = Trajectory.load(tmp_path / "trajectory.npz")
    assert tr.t[-1] == pytest.approx(4.0) and tr.success
    assert main(["simulate", str(MODELS / "friction_oscillator.toml"), "--set", "nu=1"]) == 2
    assert "unknown parameter" in capsys.readouterr().err
    assert main(["chain", "3", "--mu", "0.2", "--out", str(tmp_path / "chain.toml")]) == 0
    chain = pympc.load_model(tmp_path / "chain.toml")
    assert len(chain.slots) == 3 and all(sl.mu == 0.2 for sl in chain.slots)
    assert main(["chain", "0"]) == 2
    # the generated file runs as it is (its [simulation] table carries t_end)
    assert main(["simulate", str(tmp_path / "chain.toml"), "--no-plots", "--out", str(tmp_path / "c")]) == 0
    assert Trajectory.load(tmp_path / "c" / "trajectory.npz").t[-1] == pytest.approx(chain.simulation["t_end"])


def test_an_interrupted_run_keeps_what_it_computed():
    calls = []

    def progress(t, t0, t1):
        calls.append(t)
        if len(calls) == 3:
            raise KeyboardInterrupt

    tr = pympc.simulate(MODELS / "friction_oscillator.toml", progress=progress)
    assert tr.status == SimulationStatus.INTERRUPTED and 0 < tr.t[-1] < 30
    assert len(tr.events) >= 3 and np.all(np.diff(tr.t) >= 0)


def test_event_hlcp_solutions_are_exactly_the_consistent_modes(rng):
    """Oracle for the event HLCP: brute force over every mode (walls × stick/slip) of a crosshead-and-slider
    system with both slots at rest, each mode's linear equations solved and checked for consistency."""
    import itertools

    from pympc.dynamics import Baumgarte, Mode, event_problem, read_mode, solve_mode
    from pympc.mechanics import GeneralMethod

    checked = 0
    for trial in range(40):
        th1, th2 = rng.uniform(0, np.pi, 2)
        mu = rng.uniform(0.1, 2.5, 2)
        s = cross_slide_system(th1, th2, mu[0], mu[1], *rng.uniform(0.5, 3, 2), tuple(rng.uniform(-30, 30, 2)), 0, 0)
        form = GeneralMethod(s)
        q, qd = form.initial_state()
        a = form.assemble(q, qd, 0.0)
        stab = Baumgarte(0.0, 0.0)
        ev = event_problem(a, [0, 0], mu, mu, stab, form.mass_diagonal)
        sset = pympc.enumerate_solutions(ev.hlcp)
        if sset.kind.name == "CONTINUUM":
            continue
        from_hlcp = {read_mode(ev, x, y, (1, 1), 1e-9)[0] for x, y in sset.points}
        consistent = set()
        for walls in itertools.product((1, -1), repeat=2):
            for motions in itertools.product((Motion.BACKWARD, Motion.STICK, Motion.FORWARD), repeat=2):
                mode = Mode(walls, motions)
                sol = solve_mode(a, mode, mu, mu, stab, form.mass_diagonal)
                ok = np.all(np.asarray(walls) * sol.lam >= -1e-9)
                for k in range(2):
                    if motions[k] == Motion.STICK:
                        ok &= abs(sol.F[k]) <= mu[k] * abs(sol.lam[k]) + 1e-9
                    else:
                        ok &= motions[k] * sol.aT[k] >= -1e-9
                if ok:
                    consistent.add(mode)
        # modes with λ = 0 on a slot have both walls consistent; compare with the wall read as +1 there
        assert from_hlcp <= consistent, (trial, from_hlcp, consistent)
        strict = {m for m in consistent
                  if all(abs(solve_mode(a, m, mu, mu, stab, form.mass_diagonal).lam[k]) > 1e-7 for k in range(2))}
        assert strict <= from_hlcp, (trial, strict, from_hlcp)
        checked += 1
    assert checked >= 30


def test_to_dataframe_or_a_clear_error():
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 2.0), samples=21)
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(pympc.SimulationError, match="pandas"):
            tr.to_dataframe()
        return
    df = tr.to_dataframe()
    assert len(df) == 21 and np.array_equal(df["t"], np.linspace(0.0, 2.0, 21)) and len(tr.t) > 21
    assert "slot.normal_force" in df and "mass.x" in df and "slot.position" in df
    assert len(tr.to_dataframe(events=True)) == len(tr.t)


@pytest.mark.parametrize("kwargs, needle", [({"rtol": "tight"}, "rtol"), ({"rtol": 0}, "rtol"), ({"atol": -1}, "atol"),
                                            ({"samples": 1}, "samples"), ({"max_events": 2.5}, "max_events"),
                                            ({"method": "Euler"}, "method")])
def test_bad_integration_options_are_refused(kwargs, needle):
    with pytest.raises(OptionError, match=needle):
        pympc.simulate(MODELS / "friction_oscillator.toml", **kwargs)


def test_a_run_that_stops_on_a_jam_returns_its_status_not_an_exception():
    # the start HLCP has no solution, and the mode kept for the samples has singular equations
    tr = pympc.simulate(MODELS / "cross_slide.toml", params={"mu1": 3.0, "mu2": 1.0})
    assert tr.status == SimulationStatus.PARADOX and "no solution" in tr.message
    assert len(tr.t) == 1 and np.all(np.isnan(tr.normal_force))


def test_every_requested_sample_is_in_the_trajectory():
    for path, span in ((MODELS / "cross_slide.toml", (0.0, 2.0)), (MODELS / "friction_oscillator.toml", (0.0, 30.0))):
        grid = np.linspace(*span, 501)
        tr = pympc.simulate(path, span, t_eval=grid)
        assert np.isin(grid, tr.t).all() and np.all(np.diff(tr.t) >= 0)
