"""Forward sensitivities through events against central finite differences of the same simulator.

The finite differences are taken at parameters where the event sequence does not
change (checked), with a step small enough that their own error (≈ h²) is far
below the tolerance; event times are compared with dτ/dθ too.
"""

import numpy as np
import pytest
from conftest import MODELS

import pympc
from pympc.errors import OptionError, SimulationError

CASES = {
    "oscillator": (MODELS / "friction_oscillator.toml", ["mu", "mu_s", "K", "F0"], (0.0, 8.0), {}),
    # pushed back while sliding forward: the crosshead's slip reverses at t ≈ 0.11
    "cross_slide": (MODELS / "cross_slide.toml", ["mu1", "mu2", "P"], (0.0, 0.6), {"P": 20.0, "v1": -1.0}),
    # slip stops and reverses, then the slider's load changes wall twice
    "slider_crank": (MODELS / "slider_crank.toml", ["mu", "M0"], (0.0, 0.55), {}),
}


def central_fd(system, name, t_span, h, grid):
    v = system.parameters[name]
    runs = [pympc.simulate(system, t_span, params={name: v + d}, t_eval=grid) for d in (h, -h)]
    return runs


@pytest.mark.parametrize("formulation", ["general", "tree"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_sensitivities_match_central_differences(case, formulation):
    path, names, span, params = CASES[case]
    system = pympc.load_model(path, **params)
    grid = np.linspace(*span, 41)
    tr = pympc.simulate(system, span, sensitivities=names, t_eval=grid, formulation=formulation)
    assert tr.success and tr.sensitivity_names == names and not tr.sensitivity_note
    kinds = [(e.kind, e.slot) for e in tr.events]
    assert len(kinds) >= 2
    for j, name in enumerate(names):
        h = 1e-5 * max(abs(system.parameters[name]), 1e-2)
        plus, minus = (pympc.simulate(system, span, params={name: system.parameters[name] + d}, t_eval=grid,
                                      formulation=formulation) for d in (h, -h))
        # the same event sequence on both sides, so the motion is differentiable here
        assert [(e.kind, e.slot) for e in plus.events] == kinds == [(e.kind, e.slot) for e in minus.events]
        keep = ~np.isin(plus.t, [e.time for e in plus.events]) & ~np.isin(minus.t, [e.time for e in minus.events])
        keep &= ~np.isin(tr.t, [e.time for e in tr.events])        # event samples move with τ: compare the grid
        for arr, d in (("q", tr.dq), ("qd", tr.dqd), ("normal_force", tr.dnormal_force)):
            fd = (getattr(plus, arr) - getattr(minus, arr)) / (2 * h)
            assert fd.shape == d[:, :, j].shape
            scale = max(np.abs(fd[keep]).max(), 1e-3)
            err = np.abs(fd[keep] - d[keep, :, j]).max() / scale
            assert err <= 1e-6, (name, arr, err)
        tp, tm = np.array([e.time for e in plus.events]), np.array([e.time for e in minus.events])
        dtau = np.array([e.dtime[name] for e in tr.events])
        np.testing.assert_allclose(dtau, (tp - tm) / (2 * h), rtol=1e-6, atol=1e-6 * max(1.0, np.abs(dtau).max()))


def test_stick_phases_do_not_depend_on_mu_and_breakaway_moves_with_mu_s():
    tr = pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 1.2), sensitivities=["mu", "mu_s"], samples=25)
    first = tr.events[1]
    assert first.kind.name == "BREAKAWAY"
    before = tr.t < first.time
    assert np.all(tr.dq[before] == 0.0)                     # sticking from rest: nothing depends on μ, μ_s
    assert first.dtime["mu"] == 0.0 or abs(first.dtime["mu"]) < 1e-9
    assert first.dtime["mu_s"] > 0                            # more static friction: later breakaway


def test_sensitivity_accessors_and_files(tmp_path):
    tr = pympc.simulate(MODELS / "cross_slide.toml", (0.0, 0.5), sensitivities=["mu1", "P"], samples=11)
    assert tr.sensitivity("crosshead.x").shape == (len(tr.t), 2)
    assert tr.sensitivity("crosshead.x_dot").shape == (len(tr.t), 2)
    np.testing.assert_array_equal(tr.output("crosshead.x"), tr.coordinate("crosshead.x"))
    with pytest.raises(SimulationError, match="no sensitivity of 'nothing'"):
        tr.sensitivity("nothing")
    tr.save(tmp_path / "s.npz")
    back = pympc.Trajectory.load(tmp_path / "s.npz")
    np.testing.assert_array_equal(back.dq, tr.dq)
    assert back.sensitivity_names == ["mu1", "P"] and back.events[-1].dtime == tr.events[-1].dtime
    plain = pympc.simulate(MODELS / "cross_slide.toml", (0.0, 0.5), samples=11)
    with pytest.raises(SimulationError, match="no sensitivities"):
        plain.sensitivity("crosshead.x")


def test_motion_sensitivities_without_the_forces():
    """force_sensitivities=False changes nothing of ∂q, ∂q̇ and leaves ∂λ, ∂F out, saying so when asked."""
    kw = dict(sensitivities=["mu1", "P"], samples=11)
    full = pympc.simulate(MODELS / "cross_slide.toml", (0.0, 0.5), **kw)
    motion = pympc.simulate(MODELS / "cross_slide.toml", (0.0, 0.5), force_sensitivities=False, **kw)
    np.testing.assert_array_equal(motion.dq, full.dq)
    np.testing.assert_array_equal(motion.dqd, full.dqd)
    assert motion.dnormal_force is None and motion.dfriction_force is None
    assert np.abs(full.sensitivity("horizontal.normal_force")).max() > 0
    with pytest.raises(SimulationError, match="force_sensitivities=True"):
        motion.sensitivity("horizontal.normal_force")


def test_bad_sensitivity_requests():
    with pytest.raises(OptionError, match="one of"):
        pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 1.0), sensitivities=["nu"])
    with pytest.raises(OptionError, match="distinct"):
        pympc.simulate(MODELS / "friction_oscillator.toml", (0.0, 1.0), sensitivities=["mu", "mu"])


def test_degenerate_start_makes_sensitivities_undefined_with_a_reason():
    # the rotating rod's bead starts on a continuum of HLCP solutions: not differentiable
    tr = pympc.simulate(MODELS / "rotating_rod_bead.toml", (0.0, 0.2), samples=5,
                        sensitivities=[next(iter(sorted(pympc.load_model(MODELS / "rotating_rod_bead.toml")
                                                        .used_parameters())))])
    assert tr.events[0].classification == "CONTINUUM"
    assert np.all(np.isnan(tr.dq)) and "not differentiable" in tr.sensitivity_note
    assert all(np.isnan(v) for v in tr.events[0].dtime.values())



def test_sensitivity_columns_are_error_controlled_as_a_one_percent_parameter_change(monkeypatch):
    # S_j gets the absolute tolerance atol / (0.01 max(|θ_j|, 1e-2)), the state its own atol
    path, names, span, params = CASES["cross_slide"]
    system = pympc.load_model(path, **params)
    Sens = pympc.dynamics.sensitivity.Sensitivities
    seen, atol = [], Sens.atol
    monkeypatch.setattr(Sens, "atol", lambda self, a: seen.append((self, a, atol(self, a))) or seen[-1][2])
    grid = np.linspace(*span, 41)
    scaled = pympc.simulate(system, span, sensitivities=names, t_eval=grid, atol=1e-11)
    sens, given, tol = seen[0]
    x, S = sens.split(tol)
    assert given == 1e-11 and np.all(x == 1e-11) and S.shape == (2 * sens.n, len(names))
    theta = np.array([max(abs(system.parameters[k]), 1e-2) for k in names])
    np.testing.assert_allclose(S, np.broadcast_to(1e-11 / (1e-2 * theta), S.shape), rtol=1e-15)
    # with the state's own atol for every column (the stricter control it replaced) they agree far inside
    # the finite-difference tolerance of the tests above
    monkeypatch.setattr(Sens, "atol", lambda self, a: a)
    strict = pympc.simulate(system, span, sensitivities=names, t_eval=grid, atol=1e-11)
    for a, b in ((scaled.dq, strict.dq), (scaled.dqd, strict.dqd), (scaled.dnormal_force, strict.dnormal_force)):
        assert (np.abs(a - b).max(axis=(0, 1)) / np.abs(b).max(axis=(0, 1))).max() <= 1e-8
