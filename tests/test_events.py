"""Event location that does not depend on the steps, and the Zeno guard (issue 12, item 1).

Oracle: the forced friction oscillator without spring (K = 0), a particle in a horizontal slot with
normal force m g.  At rest it sticks while |F0 sin(w t)| ≤ μ_s m g, so every breakaway is at a rising
crossing w t = asin(μ_s m g / F0) + kπ; a slip from t_b in direction d has the closed-form velocity
v(t) = F0/(m w) (cos w t_b − cos w t) − d μ g (t − t_b), and stops where it returns to zero.
"""

import math

import numpy as np
import pytest
from conftest import MODELS, run_python
from scipy.optimize import brentq

import pympc
from pympc.dynamics import EventKind, SimulationStatus
from pympc.dynamics.crossings import TimeScale, first_crossing
from pympc.mechanics import Particle, PointForce, Slot, System


def oracle(F0, w, mu, mu_s, t_end, m=1.0, g=9.8):
    """Breakaway and slip-stop times of the K = 0 oscillator, from the closed forms."""
    c = mu_s * m * g / F0
    breaks, stops = [], []
    t, k = 0.0, 0
    while True:
        # next rising crossing of |F0 sin wt| = μ_s m g after t
        k = max(k, math.floor((w * t - math.asin(c)) / math.pi) + 1) if c < 1 else None
        if k is None:
            break
        tb = (math.asin(c) + k * math.pi) / w
        if tb >= t_end:
            break
        breaks.append(tb)
        d = math.copysign(1.0, math.sin(w * tb))
        v = lambda s: d * (F0 / (m * w) * (math.cos(w * tb) - math.cos(w * s)) - d * mu * g * (s - tb))  # noqa: E731
        grid = tb + np.linspace(0, 2 * math.pi / w, 20001)[1:]
        vals = np.array([v(s) for s in grid])
        j = int(np.flatnonzero(vals < 0)[0])
        ts = brentq(v, grid[j - 1], grid[j], xtol=1e-15)
        assert abs(F0 * math.sin(w * ts)) <= mu_s * m * g      # it sticks again (no reversal in these cases)
        if ts >= t_end:
            break
        stops.append(ts)
        t = ts
    return breaks, stops


@pytest.mark.parametrize("F0, mu, mu_s", [(3.95, 0.3, 0.4), (3.921, 0.4, 0.4)])
def test_every_breakaway_of_the_forced_oscillator_is_found(F0, mu, mu_s):
    """The issue's cases: 12 of 96 and 1 of 96 breakaways were found with default settings."""
    w = 10.0
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", params=dict(F0=F0, w=w, K=0, mu=mu, mu_s=mu_s))
    assert tr.success, tr.message
    breaks, stops = oracle(F0, w, mu, mu_s, 30.0)
    assert len(breaks) >= 95
    got_b = [e.time for e in tr.events if e.kind == EventKind.BREAKAWAY]
    got_s = [e.time for e in tr.events if e.kind == EventKind.SLIP_STOP]
    assert len(got_b) == len(breaks) and len(got_s) == len(stops)
    np.testing.assert_allclose(got_b, breaks, atol=1e-9)
    np.testing.assert_allclose(got_s, stops, atol=1e-7)
    assert tr.energy_error < 1e-6      # relative to tiny energies in the μ = μ_s case (slips of ~1e-7 m)


def test_event_times_do_not_depend_on_max_step():
    kw = dict(params=dict(F0=3.921, w=10.0, K=0, mu=0.4, mu_s=0.4), t_span=(0.0, 3.0))
    a = pympc.simulate(MODELS / "friction_oscillator.toml", **kw)
    b = pympc.simulate(MODELS / "friction_oscillator.toml", max_step=0.001, **kw)
    breaks, stops = oracle(3.921, 10.0, 0.4, 0.4, 3.0)
    assert [e.kind for e in a.events] == [e.kind for e in b.events] and len(a.events) == 1 + len(breaks) + len(stops)
    np.testing.assert_allclose([e.time for e in a.events], [e.time for e in b.events], atol=1e-9)


def block(push, mu=0.4):
    s = System("block")
    s.add(Particle("p", mass=1.0))
    s.add(Slot("slot", "p", "ground", mu=mu))
    s.add(PointForce("push", "p", value=push))
    return s


def test_high_frequency_stick_slip_is_not_zeno():
    """Dense but legitimate stick-slip: a breakaway every forcing half-period (1.57 ms), about 637 in 1 s."""
    tr = pympc.simulate(block(("4.0001*sin(2000*t)", -10.0)), (0.0, 1.0))
    assert tr.success, tr.message
    n = sum(e.kind == EventKind.BREAKAWAY for e in tr.events)
    assert n == math.floor((1.0 * 2000 - math.asin(4 / 4.0001)) / math.pi) + 1


def test_transitions_of_different_slots_are_not_an_accumulation():
    """The rate criterion counts each slot's transitions: a chain whose slots stop one after another
    (4 transitions of different slots within 24 ms here) is not Zeno, and the guard changes nothing."""
    from pympc.mechanics import slider_chain
    system = slider_chain(10)
    ref = pympc.simulate(system, (0.0, 1.0), zeno_events=1000)
    times = np.array([e.time for e in ref.events[1:]])
    assert ref.success and (times[3:] - times[:-3]).min() < 0.03     # 4 in a row within the window below
    tr = pympc.simulate(system, (0.0, 1.0), zeno_events=4, zeno_window=0.03)
    assert tr.success, tr.message
    assert [(e.kind, e.slot) for e in tr.events] == [(e.kind, e.slot) for e in ref.events]
    np.testing.assert_allclose([e.time for e in tr.events], [e.time for e in ref.events], rtol=0, atol=1e-12)


def test_accumulating_events_end_with_zeno():
    """A forcing sin(1/(1.2 − t)) whose breakaways accumulate at t = 1.2 (a true Zeno point): the rate
    criterion stops it (the old min_event_spacing = 1e-9 s never tripped) before the event budget."""
    tr = pympc.simulate(block(("4.04*sin(1/(1.2 - t))", -10.0)), (0.0, 1.5))
    assert tr.status == SimulationStatus.ZENO and "chattering" in tr.message
    assert 40 < len(tr.events) < 2000 and 1.18 < tr.events[-1].time < 1.2
    gaps = np.diff([e.time for e in tr.events])
    assert gaps[-20:].max() < 1e-4 and gaps.min() > 1e-9      # dense, yet never under the old spacing
    # every breakaway found is on the closed form: |sin(1/(1.2 − t))| = 4/4.04
    tb = np.array([e.time for e in tr.events if e.kind == EventKind.BREAKAWAY])
    np.testing.assert_allclose(np.abs(np.sin(1 / (1.2 - tb))), 4 / 4.04, atol=1e-7)
    # and none is missed: consecutive breakaways are one half-period of the phase 1/(1.2 − t) apart
    phase = 1 / (1.2 - tb)
    np.testing.assert_allclose(np.diff(phase), np.pi, rtol=1e-6)


def test_first_crossing_finds_a_dip_between_samples():
    g = lambda t: np.array([1.0, 1e-3 - np.exp(-((t - 0.50123) / 1e-3) ** 2)])  # noqa: E731 (2 ms dip)
    t, i = first_crossing(g, 0.0, 1.0, 0.01)
    assert i == 1 and t == pytest.approx(0.50123 - 1e-3 * math.sqrt(math.log(1e3)), abs=1e-12)
    assert first_crossing(lambda t: np.array([1 - np.sin(t)]), 0.0, 3.0, 0.01) == (None, None)  # a touch
    s = System("ts")
    s.add(Particle("p", mass=1.0))
    s.add(PointForce("f", "p", value=("sin(5*t) + exp(t/2)", "0")))
    assert TimeScale(s).tau(0.0, 1.0) == pytest.approx(0.2)


# ---------------------------------------------------------------- item 4: inconsistent initial conditions
def off_slot(position=(0.0, 0.5), velocity=(0.0, 0.0)):
    from pympc.mechanics import Gravity
    s = System("off slot")
    s.add(Particle("p", mass=1.0, position=position, velocity=velocity))
    s.add(Slot("slot", "p", "ground", mu=0.3))
    s.add(Gravity("gravity", g=(0.0, -9.8)))
    return s


@pytest.mark.parametrize("position, velocity, needle", [((0.0, 0.5), (0.0, 0.0), "slot: position off by 0.5"),
                                                         ((0.0, 0.0), (1.0, 0.3), "slot: velocity across it 0.3")])
def test_an_inconsistent_start_is_refused_unless_projection_is_asked_for(position, velocity, needle):
    with pytest.raises(pympc.ModelError, match="project_initial=True") as err:
        pympc.simulate(off_slot(position, velocity), (0.0, 0.2))
    assert needle in str(err.value)
    tr = pympc.simulate(off_slot(position, velocity), (0.0, 0.2), project_initial=True)
    iv = tr.initial_violation
    assert iv["projected"] and iv["over"] == [needle]
    assert iv["position"]["slot"] == pytest.approx(position[1]) and iv["velocity"]["slot"] == pytest.approx(velocity[1])
    assert abs(tr.q[0, 1]) < 1e-12 and abs(tr.qd[0, 1]) < 1e-12          # it was projected
    assert "PROJECTED" in tr.summary() and needle in tr.summary()


def test_initial_violation_is_saved_and_printed_by_the_cli(tmp_path, capsys):
    from pympc.cli import main
    from pympc.mechanics import dump_model
    (tmp_path / "off.toml").write_text(dump_model(off_slot((0.0, 0.5))))
    assert main(["simulate", str(tmp_path / "off.toml"), "--t-end", "0.1", "--no-plots", "--out", str(tmp_path)]) == 2
    assert "project-initial" in capsys.readouterr().err
    assert main(["simulate", str(tmp_path / "off.toml"), "--t-end", "0.1", "--no-plots", "--project-initial",
                 "--out", str(tmp_path)]) == 0
    assert "PROJECTED onto the constraints: slot: position off by 0.5" in capsys.readouterr().out
    back = pympc.dynamics.Trajectory.load(tmp_path / "trajectory.npz")
    assert back.initial_violation["projected"] and back.initial_violation["position"]["slot"] == pytest.approx(0.5)


@pytest.mark.parametrize("model", sorted(p.stem for p in MODELS.glob("*.toml")))
def test_shipped_models_start_consistently(model):
    s = pympc.load_model(MODELS / f"{model}.toml")
    t0 = float(s.simulation.get("t_start", 0.0))
    tr = pympc.simulate(s, (t0, t0 + 1e-3), samples=2)
    iv = tr.initial_violation
    assert not iv["projected"] and not iv["over"]
    assert max(iv["position"].values(), default=0) < 1e-12 and max(iv["velocity"].values(), default=0) < 1e-12


# ---------------------------------------------------------------- trajectory files and reprs
def test_loading_something_that_is_not_a_trajectory_names_the_file(tmp_path):
    Trajectory = pympc.dynamics.Trajectory
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    np.savez(tmp_path / "pickled.npz", meta=np.array([{"x": 1}], dtype=object))
    (tmp_path / "junk.npz").write_bytes(b"not a zip file at all")
    for name, needle in (("other.npz", "not a pympc trajectory file"), ("pickled.npz", "not a"),
                         ("junk.npz", "not a readable pympc trajectory file"), ("missing.npz", "no such")):
        with pytest.raises(pympc.SimulationError, match=needle) as err:
            Trajectory.load(tmp_path / name)
        assert name in str(err.value) and "allow_pickle" not in str(err.value)


def test_trajectory_and_event_reprs_are_short():
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 5.0))
    r = repr(tr)
    assert len(r) < 200 and "SUCCESS" in r and f"{len(tr.t)} samples" in r and f"{len(tr.events)} events" in r
    assert all(len(repr(e)) < 200 for e in tr.events) and "BREAKAWAY" in repr(tr.events[1])


# ---------------------------------------------------------------- plots
def _synthetic(slots, n=200):
    """A Trajectory with ``slots`` slots and a body falling 180 m (no simulation needed to test the plots)."""
    Trajectory = pympc.dynamics.Trajectory
    t = np.linspace(0.0, 6.0, n)
    names = [f"s{k}.x" for k in range(slots)] + [f"s{k}.y" for k in range(slots)] + ["rock.x", "rock.y", "arm.phi"]
    q = np.column_stack([0.1 * np.sin(t + k) for k in range(slots)] + [np.zeros((n, slots)), np.full(n, 0.3),
                                                                        5 - 4.9 * t**2, np.cos(t)])
    f = np.column_stack([np.sin(t * (k + 1)) for k in range(slots)])
    motions = np.sign(np.round(np.sin(t[:, None] * np.arange(1, slots + 1)))).astype(int)
    return Trajectory(t=t, q=q, qd=np.gradient(q, t, axis=0), normal_force=10 + f, friction_force=f,
                      slip_velocity=f, walls=np.ones((n, slots), int), motions=motions, kinetic=t**2,
                      potential=-t**2, dissipated=0.01 * t, work=0.01 * t, drift=np.zeros(n), events=[],
                      status=SimulationStatus.SUCCESS, message="synthetic", coordinate_names=names,
                      slot_names=[f"slot{k}" for k in range(slots)])


@pytest.mark.parametrize("slots", [2, 50])
def test_plots_have_units_own_panels_for_big_curves_and_legends_outside(slots, tmp_path, monkeypatch):
    import matplotlib
    from matplotlib.collections import QuadMesh

    from pympc.dynamics.plots import MAX_CURVES, plot_trajectory, trajectory_figures

    def no_use(*a, **k):
        raise AssertionError("matplotlib.use called")

    monkeypatch.setattr(matplotlib, "use", no_use)
    tr = _synthetic(slots)
    figs = trajectory_figures(tr)
    assert set(figs) == {"coordinates", "velocities", "forces", "slots", "modes", "energy"}
    for name, fig in figs.items():
        fig.canvas.draw()
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                assert "[" in ax.get_ylabel() or ax.get_yticklabels(), (name, ax.get_ylabel())
                continue
            assert "[" in ax.get_ylabel() or ax.get_ylabel() == "slot" or "slot" in ax.get_ylabel(), (name, ax.get_ylabel())
            leg = ax.get_legend()
            if leg is not None:
                assert len(leg.get_texts()) <= MAX_CURVES + 1
                assert leg.get_window_extent().x0 >= ax.get_window_extent().x1 - 1      # outside the data
        assert any(a.get_xlabel() == "t [s]" for a in fig.axes)
    # the falling rock has a panel of its own: no axes holds both rock.y and a slider's coordinate
    for ax in figs["coordinates"].axes:
        labels = {l.get_label() for l in ax.get_lines()}
        assert not ("rock.y" in labels and labels & {"s0.x", "s1.x"})
    units = {ax.get_ylabel() for ax in figs["coordinates"].axes}
    assert units == {"coordinates [m]", "coordinates [rad]"}
    assert any(isinstance(c, QuadMesh) for ax in figs["modes"].axes for c in ax.collections) == (slots > 6)
    files = plot_trajectory(tr, tmp_path)
    assert all(p.stat().st_size > 1000 for p in files)


def test_plotting_leaves_the_callers_backend_alone():
    """(Pyomo's import machinery switches matplotlib to Agg by itself, so this runs without the test module.)"""
    import inspect
    code = ("import matplotlib\nmatplotlib.use('svg')\nimport numpy as np\nimport pympc\n"
            "from pympc.dynamics import SimulationStatus\n" + inspect.getsource(_synthetic) +
            "from pympc.dynamics.plots import trajectory_figures\ntrajectory_figures(_synthetic(3))\n"
            "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend()\n")
    r = run_python("-c", code)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("kwargs, needle", [({"zeno_window": 0}, "zeno_window"), ({"zeno_window": "x"}, "zeno_window"),
                                            ({"zeno_events": 1}, "zeno_events"), ({"initial_tol": -1}, "initial_tol")])
def test_bad_event_guard_options_are_refused(kwargs, needle):
    with pytest.raises(pympc.OptionError, match=needle):
        pympc.simulate(MODELS / "friction_oscillator.toml", **kwargs)


def test_zeno_window_option_trips_on_the_dense_stick_slip():
    """The guard's window is an option: with a window of 3 s the oscillator's legitimate stick-slip counts as
    chattering (20 transitions within 3 s), which shows the default (0.01 s here) is what keeps it running."""
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", params=dict(F0=3.95, w=10.0, K=0), zeno_window=3.0)
    assert tr.status == SimulationStatus.ZENO and "zeno_window = 3 s" in tr.message


def test_a_forcing_too_fast_to_resolve_stops_with_an_error_not_a_hang_or_a_guess():
    tr = pympc.simulate(block(("4.1*sin(1e7*t)", -10.0)), (0.0, 1.0))
    assert tr.status == SimulationStatus.ERROR and "time scale" in tr.message and "t_span" in tr.message
