"""Forward sensitivities through events against central finite differences of the same simulator.

The finite differences are taken at parameters where the event sequence does not
change (checked), with a step small enough that their own error (≈ h²) is far
below the tolerance; event times are compared with dτ/dθ too.
"""

import numpy as np
import pytest
from conftest import MODELS, same_blas

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


def _sensitivities(system, names):
    from pympc.dynamics import Baumgarte
    from pympc.dynamics.sensitivity import Sensitivities
    from pympc.dynamics.evaluation import ModeEvaluator
    from pympc.dynamics.simulate import make_formulation

    def make_run(s):
        return ModeEvaluator(make_formulation(s), Baumgarte())
    run = make_run(system)
    return run, Sensitivities(run, system, names, make_run, forces=True)


@pytest.mark.parametrize("case", ["oscillator", "cross_slide"])
def test_the_compiled_variational_rhs_and_force_sensitivities_are_the_python_ones(case):
    from pympc.dynamics import Mode, Motion
    path, names, span, params = CASES[case]
    run, sens = _sensitivities(pympc.load_model(path, **params), names)
    rng = np.random.default_rng(3)
    q, qd = run.form.initial_state()
    ns = len(run.mu)
    for motions in [(Motion.FORWARD,) * ns, (Motion.BACKWARD,) + (Motion.STICK,) * (ns - 1)]:
        mode = Mode((1,) * ns, motions)
        assert sens.flat(mode) is not None          # the compiled path applies to these models
        for _ in range(3):
            y = np.concatenate([q, qd + rng.standard_normal(qd.size), [0.3, -0.2], rng.standard_normal(sens.size)])
            t = rng.uniform(0.0, 1.0)
            got, ref = sens.rhs(t, y, mode), sens.rhs_python(t, y, mode)
            assert np.abs(got[2 * run.n + 2:]).max() > 0
            np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.abs(ref).max())
            # ∂λ, ∂F at a sample: one compiled call, or _diff on the runs' slot values
            x, S = sens.split(y)
            got = sens.outputs(t, x, S, mode)[2:]
            compiled = sens.flat
            sens.flat = lambda mode: None
            ref = sens.outputs(t, x, S, mode)[2:]
            sens.flat = compiled
            for a, b in zip(got, ref):
                assert a.shape == b.shape == (ns, len(names))
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-13 * max(np.abs(b).max(), 1.0))


def test_packing_refuses_plans_of_other_lengths():
    from pympc.dynamics._variational import pack
    a = (np.zeros(5), np.zeros(4, np.int64))
    assert pack([a, (np.zeros(6), a[1]), a], [1e-5]) is None
    fl, il = pack([a, a, a], [1e-5])
    assert fl.size == 16 and il[-3:].tolist() == [1, 5, 4]


@pytest.mark.parametrize("case", ["oscillator", "cross_slide"])
def test_a_compiled_sensitivity_run_is_the_solve_ivp_one(case, monkeypatch):
    from pympc.dynamics.sensitivity import Sensitivities
    path, names, span, params = CASES[case]
    system = pympc.load_model(path, **params)
    grid = np.linspace(*span, 41)
    fast = pympc.simulate(system, span, sensitivities=names, t_eval=grid)
    monkeypatch.setattr(Sensitivities, "flat", lambda self, mode: None)     # solve_ivp and the Python rhs
    slow = pympc.simulate(system, span, sensitivities=names, t_eval=grid)
    assert fast.info["integrator"] == "compiled DOP853" and slow.info["integrator"] == "solve_ivp (DOP853)"
    assert fast.success and slow.success and not fast.sensitivity_note
    assert [(e.kind, e.slot) for e in fast.events] == [(e.kind, e.slot) for e in slow.events]
    # round-off where numba's and numpy's BLAS agree; else the accuracy of two valid integrations (the
    # sensitivities' accuracy against finite differences is asserted to 1e-6 above)
    tol, stol = (1e-12, 1e-9) if same_blas() else (1e-8, 1e-6)
    np.testing.assert_allclose([e.time for e in fast.events], [e.time for e in slow.events], rtol=0, atol=tol)
    for a, b in ((fast.dq, slow.dq), (fast.dqd, slow.dqd), (fast.dnormal_force, slow.dnormal_force)):
        np.testing.assert_allclose(a, b, rtol=0, atol=stol * np.abs(b).max())
    for e, f in zip(fast.events, slow.events):
        for k in names:
            assert abs(e.dtime[k] - f.dtime[k]) <= stol * max(1.0, abs(f.dtime[k])), (e.kind, k)
