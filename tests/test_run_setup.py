"""The run setup (formulation and mode evaluator) a run leaves with its system for the next run (simulate.py)."""

from pathlib import Path

import numpy as np
import pytest

import pympc
from pympc.dynamics import Baumgarte
from pympc.mechanics import Particle, PointForce, Slot, System

simulate_module = __import__("pympc.dynamics.simulate", fromlist=["_take_setup"])
MODELS = Path(__file__).parents[1] / "models"


def _same(a, b):
    assert [(e.kind, e.slot, e.time) for e in a.events] == [(e.kind, e.slot, e.time) for e in b.events]
    for name in ("t", "q", "qd", "normal_force", "friction_force", "slip_velocity", "walls", "motions", "kinetic",
                 "potential", "dissipated", "work", "drift"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_a_kept_setup_gives_the_numbers_of_a_fresh_one():
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    first = pympc.simulate(system, (0.0, 8.0))
    kept = system._cache["run setups"]
    assert len(kept) == 1
    (form, ev), = kept.values()
    second = pympc.simulate(system, (0.0, 8.0))
    assert system._cache["run setups"][next(iter(kept))][1] is ev        # the same evaluator ran again
    fresh = pympc.simulate(pympc.load_model(MODELS / "friction_oscillator.toml"), (0.0, 8.0))
    _same(first, second)
    _same(second, fresh)
    assert len(second.events) > 5


def test_setups_are_kept_per_formulation_and_stabilization_and_bounded():
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    for a in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0):
        pympc.simulate(system, (0.0, 1.0), samples=3, baumgarte=Baumgarte(a, a))
    kept = system._cache["run setups"]
    assert len(kept) == simulate_module.SETUPS_KEPT
    assert {k[1].alpha for k in kept} == {1.0, 2.0, 3.0, 4.0}
    pympc.simulate(system, (0.0, 1.0), samples=3, formulation="tree")
    assert len(kept) == simulate_module.SETUPS_KEPT and all(k[0] == "general" for k in kept)
    # a formulation object, or sensitivities: made for the run, not kept
    form = pympc.dynamics.make_formulation(system, "general")
    before = dict(kept)
    pympc.simulate(system, (0.0, 1.0), samples=3, formulation=form, baumgarte=Baumgarte(1.0, 1.0))
    pympc.simulate(system, (0.0, 1.0), samples=3, sensitivities=["mu"], baumgarte=Baumgarte(2.0, 2.0))
    assert all(kept[k] is v for k, v in before.items())


def test_a_nested_run_of_the_same_system_makes_its_own():
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    reference = pympc.simulate(pympc.load_model(MODELS / "friction_oscillator.toml"), (0.0, 6.0))
    inner = []

    def progress(t, t0, t1):               # a run inside a run: the outer one holds the kept setup
        if len(inner) < 3:
            inner.append(pympc.simulate(system, (0.0, 6.0)))

    outer = pympc.simulate(system, (0.0, 6.0), progress=progress)
    _same(outer, reference)
    for tr in inner:
        _same(tr, reference)
    assert len(system._cache["run setups"]) == 1


def test_a_changed_system_does_not_reuse_the_setup():
    s = System("pushed")
    s.add(Particle("p", mass=1.0))
    s.add(Slot("slot", "p", "ground", mu=0.4))
    s.add(PointForce("push", "p", value=(5.0, -10.0)))
    tr = pympc.simulate(s, (0.0, 1.0))
    assert tr.qd[-1, 0] == pytest.approx(1.0, abs=1e-9)          # a = (5 − 0.4·10)/1
    assert s._cache.get("run setups")
    s.add(PointForce("more", "p", value=(2.0, 0.0)))                 # clears what was kept
    assert not s._cache.get("run setups")
    tr = pympc.simulate(s, (0.0, 1.0))
    assert tr.qd[-1, 0] == pytest.approx(3.0, abs=1e-9)          # a = (7 − 4)/1


@pytest.mark.parametrize("model", ["friction_oscillator", "chain5"])
def test_the_stacked_columns_are_those_phase_by_phase(model, monkeypatch):
    # record.py: every phase of a compiled mode → all columns at once; the oracle is the block-per-phase
    # path (compiled rows per phase, or sample by sample when the compiled rows are refused)
    from pympc.dynamics import record
    from pympc.mechanics import slider_chain
    system = slider_chain(5) if model == "chain5" else pympc.load_model(MODELS / f"{model}.toml")
    span = (0.0, 1.0) if model == "chain5" else (0.0, 10.0)
    stacked = pympc.simulate(system, span)
    calls = []
    monkeypatch.setattr(record, "_compiled_columns", lambda *a: calls.append(a) or None)
    blocks = pympc.simulate(system, span)
    assert calls
    _same(stacked, blocks)
    monkeypatch.setattr(pympc.dynamics.modes.CompiledModes, "rows", lambda *a: None)
    samples = pympc.simulate(system, span)
    np.testing.assert_array_equal(samples.t, stacked.t)
    np.testing.assert_array_equal(samples.q, stacked.q)
    np.testing.assert_allclose(samples.friction_force, stacked.friction_force, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(samples.normal_force, stacked.normal_force, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(samples.walls, stacked.walls)
    np.testing.assert_array_equal(samples.motions, stacked.motions)


def test_no_setup_is_kept_with_a_copy_bound_or_read_for_one_run():
    # simulate(system, params=...) binds a copy that the run drops: nothing to keep (the setup refers to its
    # system: a kept one would be a reference cycle per run); the system given keeps nothing either
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    made = []
    take = simulate_module._take_setup

    def spy(sy, formulation, stab, cacheable=True):
        made.append((sy, cacheable))
        return take(sy, formulation, stab, cacheable)

    simulate_module._take_setup = spy
    try:
        pympc.simulate(system, (0.0, 1.0), samples=3, params={"mu": 0.25})
        pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 1.0), samples=3)
        pympc.simulate(system, (0.0, 1.0), samples=3, params={})       # bind({}) is the system itself
    finally:
        simulate_module._take_setup = take
    assert [c for _, c in made] == [False, False, True]
    assert made[0][0] is not system and not made[0][0]._cache.get("run setups")
    assert made[2][0] is system and len(system._cache["run setups"]) == 1
