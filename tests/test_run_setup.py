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
    # simulate(system, params=...) binds a copy that the run drops: nothing is kept with it (the setup refers to
    # its system: a kept one would be a reference cycle per run).  A copy bound to other friction coefficients
    # runs on the setup of the system given, which keeps it; other parameters make a setup for the run alone
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    made = []
    take = simulate_module._take_setup

    def spy(sy, formulation, stab, holder=None):
        made.append((sy, holder))
        return take(sy, formulation, stab, holder)

    simulate_module._take_setup = spy
    try:
        pympc.simulate(system, (0.0, 1.0), samples=3, params={"K": 14.0})
        pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 1.0), samples=3)
        assert not system._cache.get("run setups")
        pympc.simulate(system, (0.0, 1.0), samples=3, params={"mu": 0.25})
        pympc.simulate(system, (0.0, 1.0), samples=3, params={})       # bind({}) is the system itself
    finally:
        simulate_module._take_setup = take
    assert [h is system for _, h in made] == [False, False, True, True]
    assert made[0][1] is None and made[1][1] is None
    assert made[0][0] is not system and not made[0][0]._cache.get("run setups")
    assert made[2][0] is not system and not made[2][0]._cache.get("run setups")
    assert made[3][0] is system and len(system._cache["run setups"]) == 1


def test_friction_only_parameters_are_recognized():
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    assert system._friction_only() == {"mu", "mu_s"}
    assert system._same_kinematics(system.bind(mu=0.25))
    assert system._same_kinematics(system.bind(mu=0.25, mu_s=0.5))
    assert system._same_kinematics(system.bind(mu=0.3))                  # the same values
    for other in ({"K": 14.0}, {"m": 1.5}, {"mu": 0.25, "g": 9.0}):
        assert not system._same_kinematics(system.bind(other))
    assert not system._same_kinematics(pympc.load_model(MODELS / "friction_oscillator.toml", mu=0.25))
    # a parameter that enters a friction coefficient and something else is not friction-only
    s = System("both", parameters={"c": 0.3, "mu_s": "2*c"})
    s.add(Particle("p", mass="1 + c"))
    s.add(Slot("slot", "p", "ground", mu="c", mu_s="mu_s"))
    s.add(PointForce("push", "p", value=(5.0, -10.0)))
    assert s._friction_only() == {"mu_s"}
    assert not s._same_kinematics(s.bind(c=0.2))          # (mu_s follows c, and so does the mass)
    assert s._same_kinematics(s.bind(mu_s=0.7))


def test_runs_with_varied_friction_are_those_of_fresh_systems():
    # the oracle: every run with other values on a system built afresh with them (nothing kept, nothing shared);
    # the loop runs through the setup kept with `system` (μ, μ_s), and through new setups where the values change
    # the model beyond the friction coefficients (K, m): bit for bit the same trajectories
    import pickle
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    runs = [{"mu": 0.25}, {"mu": 0.35}, {}, {"mu": 0.2, "mu_s": 0.45}, {"K": 12.0}, {"mu_s": 0.5},
            {"m": 1.3, "mu": 0.28}, {"mu": 0.25}, {}, {"mu": 0.39}]
    evaluators = []
    take = simulate_module._take_setup

    def spy(sy, formulation, stab, holder=None):
        out = take(sy, formulation, stab, holder)
        evaluators.append(out[2])
        return out

    simulate_module._take_setup = spy
    try:
        got = [pympc.simulate(system, (0.0, 12.0), params=p) for p in runs]
    finally:
        simulate_module._take_setup = take
    for p, tr in zip(runs, got):
        fresh = pympc.simulate(pympc.load_model(MODELS / "friction_oscillator.toml", **p), (0.0, 12.0))
        _same(tr, fresh)
        assert tr.parameters == fresh.parameters and tr.info["formulation"] == "general"
        assert tr.model_hash == fresh.model_hash
        assert len(tr.events) > 5
    shared = {id(ev) for p, ev in zip(runs, evaluators) if not {"K", "m"} & set(p)}
    assert len(shared) == 1                                   # one evaluator for every friction-only binding
    assert all(id(ev) not in shared for p, ev in zip(runs, evaluators) if {"K", "m"} & set(p))
    assert len(system._cache["run setups"]) == 1
    # what Dask sends: the system without its caches
    assert pickle.loads(pickle.dumps(system))._cache == {}


def test_mode_templates_are_shared_by_values_of_mu():
    from pympc.dynamics import modes
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    pympc.simulate(system, (0.0, 6.0), params={"mu": 0.21})
    keys = list(modes._templates)
    pympc.simulate(pympc.load_model(MODELS / "friction_oscillator.toml", mu=0.22), (0.0, 6.0))
    assert list(modes._templates) == keys                # the same key: no templates made for the new μ
    pympc.simulate(pympc.load_model(MODELS / "friction_oscillator.toml", K=13.0), (0.0, 6.0))
    assert len(modes._templates) == min(len(keys) + 1, modes.MODELS_KEPT)


@pytest.mark.parametrize("formulation", ["general", "tree"])
def test_the_initial_check_kept_with_a_setup_is_a_fresh_one(formulation):
    """The initial violation is checked once per kept setup, start time and tolerance (the runs that share a setup
    have the same kinematics): every run gets the numbers a fresh check gives, in dicts of its own."""
    from pympc.dynamics.transition import initial_violation
    path = MODELS / "cross_slide.toml"
    system = pympc.load_model(path)
    system._cache.clear()
    runs = [pympc.simulate(system, (0.0, 0.2), samples=3, formulation=formulation, params=p)
            for p in (None, {"mu1": 0.1}, {"mu2": 0.45}, None)]
    (_, ev), = system._cache["run setups"].values()
    assert list(ev.initial_violations) == [(0.0, 1e-6)]
    fresh = initial_violation(simulate_module.make_formulation(pympc.load_model(path), formulation),
                              pympc.load_model(path), 0.0, 1e-6)
    for tr in runs:
        assert tr.initial_violation == {**fresh, "projected": False}
    runs[0].initial_violation["position"].clear()
    runs[0].initial_violation["over"].append("changed")
    assert runs[1].initial_violation == {**fresh, "projected": False}
    again = pympc.simulate(system, (0.0, 0.2), samples=3, formulation=formulation)
    assert again.initial_violation == {**fresh, "projected": False}
    other = pympc.simulate(system, (0.0, 0.2), samples=3, formulation=formulation, initial_tol=1e-3)
    assert other.initial_violation["tolerance"] == initial_violation(
        simulate_module.make_formulation(system, formulation), system, 0.0, 1e-3)["tolerance"]
    assert set(ev.initial_violations) == {(0.0, 1e-6), (0.0, 1e-3)}
