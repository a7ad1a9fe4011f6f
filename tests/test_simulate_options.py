"""SimulateOptions (simulate's keywords as one validated object) and the driver's parts behind their contracts.

Oracles: simulate with keywords against simulate with the same options as an object (to the bit: the same run);
every option given a value of the wrong kind or range is refused by name; the phase stepper's first event
against the first transition of the whole run.
"""

import pickle
from pathlib import Path

import numpy as np
import pytest

import pympc
from pympc.dynamics import Baumgarte, EventKind, SimulateOptions
from pympc.dynamics.evaluation import ModeEvaluator
from pympc.dynamics.locate import EventLocator
from pympc.dynamics.simulate import make_formulation
from pympc.dynamics.stepper import PhaseResult, PhaseStepper
from pympc.dynamics.transition import Transition
from pympc.errors import OptionError

MODELS = Path(__file__).parents[1] / "models"

BAD = [("rtol", 0.0), ("rtol", -1e-6), ("rtol", "tight"), ("atol", float("inf")), ("max_step", 0.0),
       ("min_event_spacing", -1.0), ("zeno_window", 0.0), ("max_events", 2.5), ("max_events", True),
       ("samples", 1), ("method", "Euler"), ("method", 3), ("zeno_events", 1), ("zeno_events", 2.0),
       ("initial_tol", -1.0), ("initial_tol", True), ("on_ambiguous", "guess"), ("crosscheck", "gurobi"),
       ("formulation", "lagrange"), ("baumgarte", {"gamma": 1.0}), ("baumgarte", 3.0), ("t_eval", [0.0, 0.0]),
       ("t_eval", [0.0, float("nan")]), ("t_eval", []), ("enumerate_pairs", "many"), ("velocity_tol", "small")]


@pytest.mark.parametrize("key, value", BAD)
def test_a_bad_option_is_refused_by_name(key, value):
    with pytest.raises(OptionError, match=key):
        SimulateOptions(**{key: value})
    with pytest.raises(OptionError, match=key):          # the keyword of simulate: the same check
        pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 1.0), **{key: value})


def test_values_are_normalized_and_the_object_pickles():
    o = SimulateOptions(rtol=1e-8, max_events=10.0, samples=np.int64(11), baumgarte={"alpha": 5.0, "beta": 6.0},
                        t_eval=np.linspace(0.0, 1.0, 5), crosscheck="milp")
    assert (type(o.rtol), type(o.max_events), type(o.samples)) == (float, int, int)
    assert o.baumgarte == Baumgarte(5.0, 6.0) and o.t_eval == (0.0, 0.25, 0.5, 0.75, 1.0)
    back = pickle.loads(pickle.dumps(o))
    assert back == o and hash(back) == hash(o)
    assert set(SimulateOptions.keywords()) < set(pympc.simulate.__code__.co_varnames)


def test_the_model_table_fills_what_was_not_given_and_is_checked():
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    table = dict(system.simulation)
    o = SimulateOptions().resolve(system)
    assert o["t_end"] == table["t_end"] and o["baumgarte"] == Baumgarte()
    assert SimulateOptions(rtol=1e-6).resolve(system)["rtol"] == 1e-6          # a keyword wins over the table
    system._simulation["rtol"] = -1.0
    with pytest.raises(OptionError, match="rtol"):
        SimulateOptions().resolve(system)
    assert SimulateOptions(rtol=1e-7).resolve(system)["rtol"] == 1e-7          # ... unless the keyword is given
    system._simulation["rtol"] = table.get("rtol", 1e-10)
    with pytest.raises(OptionError, match="t_eval runs from"):
        SimulateOptions(t_eval=[0.0, 99.0]).resolve(system, (0.0, 1.0))
    with pytest.raises(OptionError, match="t_span"):
        SimulateOptions().resolve(system, (1.0, 1.0))


@pytest.mark.parametrize("model", ["friction_oscillator", "slider_crank"])
def test_options_as_an_object_run_as_the_keywords(model):
    kw = dict(rtol=1e-9, samples=51, on_ambiguous="min_force", probe_delta=2e-6)
    a = pympc.simulate(MODELS / f"{model}.toml", (0.0, 3.0), **kw)
    b = pympc.simulate(MODELS / f"{model}.toml", (0.0, 3.0), options=SimulateOptions(**kw))
    c = pympc.simulate(MODELS / f"{model}.toml", (0.0, 3.0), options=SimulateOptions(rtol=1e-6, samples=51,
                       on_ambiguous="min_force", probe_delta=2e-6), rtol=1e-9)      # a keyword overrides
    assert a.success and len(a.events) > 1
    for other in (b, c):
        assert [(e.time, e.kind, e.slot, e.mode_after) for e in other.events] == \
            [(e.time, e.kind, e.slot, e.mode_after) for e in a.events]
        np.testing.assert_array_equal(other.q, a.q)
    with pytest.raises(OptionError, match="options must be a SimulateOptions"):
        pympc.simulate(MODELS / f"{model}.toml", (0.0, 1.0), options={"rtol": 1e-9})


@pytest.mark.parametrize("model", ["friction_oscillator", "cross_slide"])
def test_the_stepper_ends_the_first_phase_at_the_runs_first_event(model):
    """The contract: transition at the start, advance one phase → PhaseResult; its event is the run's first."""
    system = pympc.load_model(MODELS / f"{model}.toml")
    span = (0.0, 6.0)
    run = pympc.simulate(system, span)
    o = SimulateOptions().resolve(system, span)
    ev = ModeEvaluator(make_formulation(system), o["baumgarte"])
    locator = EventLocator(ev, o)
    stepper, transition = PhaseStepper(ev, locator, o, rheonomic=ev.form.rheonomic), Transition(ev, o)
    q, qd = ev.form.initial_state()
    start, q, qd, status, _ = transition(0.0, q, qd, EventKind.START, None, None)
    assert status is None and start.mode_after == run.events[0].mode_after
    x = np.concatenate([q, qd, [0.0, 0.0]])
    a = ev.form.assemble(q, qd, 0.0)
    funcs = locator.functions(start.mode_after, max(1.0, float(np.abs(a.h).max(initial=0))))
    phase = stepper.advance(0.0, x, start.mode_after, span[1], np.linspace(0.5, 5.5, 11), funcs, a)
    assert isinstance(phase, PhaseResult) and phase.status is None
    if len(run.events) == 1:
        assert phase.time is None
        return
    first = run.events[1]
    assert phase.time == first.time and (funcs[phase.index].kind, funcs[phase.index].slot) == (first.kind, first.slot)
    ts = np.concatenate([p[0] for p in phase.pieces])
    assert ts[0] == 0.0 and ts[-1] == phase.time and np.all(np.diff(ts) > 0)
    event = transition(phase.time, phase.state[:ev.n], phase.state[ev.n:2 * ev.n], first.kind, first.slot,
                       start.mode_after)[0]
    assert event.mode_after == first.mode_after
