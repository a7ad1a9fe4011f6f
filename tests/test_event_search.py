"""The event loop's search and its per-run reuse (issue 28): the curvature test of an interval, the event
functions and tables made once per mode, the rank test of a stick phase, the force scale of a phase.

Oracles: the lowest function the curvature bound allows (a quadratic, sampled finely), the old, weaker
test, fresh objects made without any reuse, a fresh assembly at the same state.
"""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import record_calls

import pympc
from pympc.dynamics import Baumgarte, Mode, Motion, SimulateOptions
from pympc.dynamics import _dop853
from pympc.dynamics._event_kernels import may_cross as may_cross_compiled
from pympc.dynamics.crossings import may_cross
from pympc.dynamics.evaluation import ModeEvaluator
from pympc.dynamics.locate import EventLocator
from pympc.dynamics.simulate import make_formulation
from pympc.dynamics.stepper import PhaseStepper
from pympc.dynamics.trajectory import EventKind
from pympc.dynamics.transition import Transition

MODELS = Path(__file__).parents[1] / "models"


def _cases(rng, k=4000):
    """(ga, gb, G, w): random, with the edge cases mixed in (values at zero, no curvature, a function
    that starts a phase at zero)."""
    ga = np.abs(rng.standard_normal(k)) * 10.0 ** rng.uniform(-6, 1, k)
    gb = rng.standard_normal(k) * 10.0 ** rng.uniform(-6, 1, k)
    G = 10.0 ** rng.uniform(-3, 3, k)
    w = 10.0 ** rng.uniform(-6, 0, k)
    ga[::7] = 0.0
    gb[1::11] = 0.0
    G[2::13] = 0.0
    ga[3::17] = -1e-3          # below zero at a: not a downward crossing after a
    return ga, gb, G, w


def test_may_cross_is_exact_for_the_lowest_function_the_bound_allows(rng):
    """``chord − G (t − a)(b − t)/2`` satisfies the bound with equality and lies below every other function
    that does: an interval is cleared exactly when it stays above zero inside (sampled finely)."""
    ga, gb, G, w = _cases(rng)
    got = may_cross(ga, gb, G, w)
    s = np.linspace(0.0, 1.0, 20001)[1:]                         # (a, b]
    checked = 0
    for i in range(ga.size):
        t = s * w[i]
        low = ga[i] + (gb[i] - ga[i]) * s - 0.5 * G[i] * t * (w[i] - t)
        scale = max(abs(ga[i]), abs(gb[i]), G[i] * w[i] ** 2, 1e-300)
        m = low.min()
        if ga[i] < 0:
            assert not got[i]
        elif gb[i] < 0:
            assert got[i]
        elif m < -1e-6 * scale:          # the lowest allowed function dips below zero: not cleared
            assert got[i], (ga[i], gb[i], G[i], w[i])
            checked += 1
        elif m > 1e-6 * scale:           # it stays above zero: cleared
            assert not got[i], (ga[i], gb[i], G[i], w[i])
            checked += 1
    assert checked > 1000


def test_may_cross_is_never_weaker_than_the_old_test_and_clears_a_rising_start(rng):
    ga, gb, G, w = _cases(rng)
    old = (np.minimum(ga, gb) - G * w * w / 8 <= 0) & (ga >= 0)
    new = may_cross(ga, gb, G, w)
    assert not (new & ~old).any()                 # whatever the old test cleared stays cleared
    # the motivating case: a slip velocity that starts at zero and rises faster than the curvature can turn
    # it back (the old test kept such an interval open and bisected it down to dt_min)
    assert not may_cross(0.0, 1e-4, 18.0, 1e-4)
    assert (np.minimum(0.0, 1e-4) - 18.0 * 1e-8 / 8) <= 0       # ... which the old test could not clear
    assert may_cross(0.0, 1e-12, 18.0, 1e-4)      # too slow a rise for the curvature allowed: may dip
    assert may_cross(0.0, 0.0, 1.0, 1.0)          # at zero at both ends, curved: may dip between


def test_the_compiled_test_is_the_numpy_one(rng):
    ga, gb, G, w = _cases(rng, 2000)
    ref = may_cross(ga, gb, G, w)
    got = np.array([may_cross_compiled(*v) for v in zip(ga, gb, G, w)])
    np.testing.assert_array_equal(got, ref)


def test_the_oscillator_bisects_no_phase_start(monkeypatch):
    """Every slip phase starts with its slip velocity at zero; the search clears it instead of bisecting
    down to dt_min, so the compiled scan runs at most once per event; the events are the ones of the run
    without any compiled scan (the Python search, the same test)."""
    calls = []
    original = _dop853.scan_dense

    def counted(*args):
        calls.append(args[0])
        return original(*args)

    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    whole = pympc.simulate(system)           # the whole search of a phase compiled (first_crossing_dense)
    monkeypatch.setattr(EventLocator, "_compiled_search", lambda self, *args: None)   # first_crossing in Python
    monkeypatch.setattr(PhaseStepper, "_compiled_window", lambda self, *args: None)   # (also in slip phases)
    monkeypatch.setattr(_dop853, "scan_dense", counted)
    tr = pympc.simulate(system)
    assert tr.success and len(tr.events) == 23
    assert 0 < len(calls) <= len(tr.events) - 1, len(calls)
    assert [e.time for e in whole.events] == [e.time for e in tr.events]
    monkeypatch.setattr(_dop853, "scan_dense", lambda *args: (0.0, -1, _dop853.SCAN_PYTHON))
    plain = pympc.simulate(system)
    assert [e.kind for e in plain.events] == [e.kind for e in tr.events]
    np.testing.assert_allclose([e.time for e in plain.events], [e.time for e in tr.events], rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", ["oscillator", "oscillator, mu 0.2", "chain5"])
def test_the_compiled_search_of_a_phase_finds_the_python_searchs_events(case, monkeypatch):
    """Every phase's search in one compiled call (first_crossing_dense, for slip and stick phases alike; in a
    slip phase inside the compiled window, dop853_window) against crossings.first_crossing in Python: the same
    events, modes and samples, to the bit."""
    from pympc.mechanics import slider_chain
    if case == "chain5":
        system, span = slider_chain(5), (0.0, 2.0)
    else:
        system, span = pympc.load_model(MODELS / "friction_oscillator.toml"), None
    params = {"mu": 0.2, "mu_s": 0.3} if "mu" in case else None
    statuses = record_calls(monkeypatch, _dop853, "first_crossing_dense", lambda out: out[2])
    frozen = record_calls(monkeypatch, _dop853, "first_crossing_frozen", lambda out: out[2])    # (stick phases)
    windows = record_calls(monkeypatch, _dop853, "dop853_window", lambda out: out[0])
    fast = pympc.simulate(system, span, params=params)
    assert fast.success and len(fast.events) > 3
    assert len(statuses) + len(frozen) + len(windows) >= len(fast.events) - 1
    assert set(statuses) | set(frozen) <= {_dop853.SCAN_OK}
    if case != "chain5":
        assert frozen                  # the oscillator sticks: its stick phases are searched by the frozen call
    assert windows and _dop853.WINDOW_PYTHON not in windows
    monkeypatch.setattr(EventLocator, "_compiled_search", lambda self, *args: None)
    monkeypatch.setattr(PhaseStepper, "_compiled_window", lambda self, *args: None)
    plain = pympc.simulate(system, span, params=params)
    assert [(e.time, e.kind, e.mode_after) for e in fast.events] == [(e.time, e.kind, e.mode_after)
                                                                       for e in plain.events]
    for key in ("t", "q", "qd", "normal_force", "friction_force"):
        np.testing.assert_array_equal(getattr(fast, key), getattr(plain, key), err_msg=key)


def _parts(system, t_end=30.0):
    o = SimulateOptions().resolve(system, (0.0, t_end))
    ev = ModeEvaluator(make_formulation(system), Baumgarte())
    return o, ev, EventLocator(ev, o)


@pytest.mark.parametrize("motion", [Motion.FORWARD, Motion.STICK])
def test_event_functions_made_once_per_mode_follow_each_phases_band(motion, rng):
    """The locator keeps one EventFunctions per mode; a new phase's dead band must reach its values, the
    compiled loop's table and the scan's table (a stale band would move every force event)."""
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    mode = Mode((1,), (motion,))
    o, ev, locator = _parts(system)
    q, qd = ev.form.initial_state()
    x = np.concatenate([q, qd + [0.2, 0.0], [0.0, 0.0]])
    first = locator.functions(mode, 1.0)
    for scale in (1e6, 3.0, 1.0):
        again = locator.functions(mode, scale)
        assert again is first
        fresh = EventLocator(ev, o).functions(mode, scale)       # nothing reused
        np.testing.assert_array_equal(again.vector(0.7, x), fresh.vector(0.7, x))
        np.testing.assert_array_equal(again.vector.table[4], fresh.vector.table[4])
        assert again.band == fresh.band
        for i, f in enumerate(again):
            assert f(0.7, x) == pytest.approx(fresh[i](0.7, x), rel=1e-12, abs=1e-12)


def test_the_rank_test_of_a_stick_phase_follows_its_rows():
    """locked() remembers the last rows per mode: other rows (a guide that turned) are ranked again."""
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    _, ev, _ = _parts(system)
    mode = Mode((1,), (Motion.STICK,))
    full = SimpleNamespace(J=np.zeros((0, 2)), WN=np.array([[0.0, 1.0]]), WT=np.array([[1.0, 0.0]]))
    short = SimpleNamespace(J=np.zeros((0, 2)), WN=np.array([[0.0, 1.0]]), WT=np.array([[0.0, 2.0]]))
    for a, want in ((full, True), (full, True), (short, False), (full, True), (short, False)):
        assert ev.locked(a, mode) is want


@pytest.mark.parametrize("model", ["friction_oscillator", "slider_crank", "cross_slide"])
def test_the_force_scale_of_a_phase_is_that_of_its_start(model):
    """The next phase's dead band is scaled by max(1, |h|) read off the transition's verification: the
    value a fresh assembly at the same state gives."""
    system = pympc.load_model(MODELS / f"{model}.toml")
    o, ev, _ = _parts(system)
    tr = Transition(ev, o)
    q, qd = ev.form.initial_state()
    event, q, qd, status, _ = tr(0.0, q, qd, EventKind.START, None, None)
    assert status is None and tr.force_scale is not None
    a = ev.form.assemble(q, qd, 0.0)
    assert tr.force_scale == pytest.approx(max(1.0, float(np.abs(a.h).max(initial=0))), rel=1e-12)


def test_a_constant_time_scale_gives_the_bisections_windows(rng):
    """With constant rates (sin(w t), w bound) the window is computed directly: the same (end, step) as the
    bisection over τ, and the same error for a forcing too fast to sample."""
    from pympc.dynamics.crossings import TimeScale
    from pympc.errors import SimulationError
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    fast = TimeScale(system)
    slow = TimeScale(system)
    slow._fixed = None
    assert fast._fixed == pytest.approx(1.0)
    for _ in range(300):
        ta = rng.uniform(0, 30)
        tb = ta + 10.0 ** rng.uniform(-3, 1.5)
        cap = 10.0 ** rng.uniform(-3, 0)
        intervals = int(rng.choice([8, 16, 32, 64]))
        assert fast.window(ta, tb, cap, intervals) == slow.window(ta, tb, cap, intervals)
    fast_w, slow_w = (TimeScale(system.bind({"w": 1e5})) for _ in range(2))
    slow_w._fixed = None
    for ts in (fast_w, slow_w):
        with pytest.raises(SimulationError, match="time scale"):
            ts.window(0.0, 30.0, 0.15, 64)


def test_a_stick_phase_reads_the_transitions_jacobians_at_its_positions():
    """The locked test of a stick phase reads the Jacobians of the assembly the transition's projection made
    at the phase's positions (not a second assembly): they are a fresh assembly's there; at other positions
    or another time there is none to read."""
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    o, ev, _ = _parts(system)
    tr = Transition(ev, o)
    q, qd = ev.form.initial_state()
    event, q, qd, status, _ = tr(0.0, q, qd, EventKind.START, None, None)
    assert status is None and event.mode_after.sticking          # from rest it sticks
    a = tr.jacobians_at(q.copy(), 0.0)
    fresh = ev.form.assemble(q, qd, 0.0)
    for key in ("J", "WN", "WT"):
        np.testing.assert_array_equal(getattr(a, key), getattr(fresh, key), err_msg=key)
    assert ev.locked(a, event.mode_after) is True
    assert tr.jacobians_at(q + 1e-3, 0.0) is None and tr.jacobians_at(q, 0.1) is None
