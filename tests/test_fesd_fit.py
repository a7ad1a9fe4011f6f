"""The FESD fit (pympc.identify.fesd_fit) as a route of estimate(): options, joint records, declared results.

Oracles: the shooting estimate on the same data (simulated with known parameters), the simulation at the
FESD estimate (the fit's own verification), Pyomo's enums.
"""

import numpy as np
import pytest

from pympc.errors import OptionError
from pympc.identify import Experiment, Fesd, Shooting, estimate, synthetic_record

OSC = "models/friction_oscillator.toml"


@pytest.fixture(scope="module")
def record():
    t = np.linspace(0.0, 3.0, 13)
    df, noise = synthetic_record(OSC, t, ["mass.x"], 0.01, 3)
    return Experiment(OSC, df, outputs=["mass.x"], noise=noise)


def test_fesd_options_are_checked_by_name():
    assert Fesd().elements == 4 and Fesd().stages == 3
    with pytest.raises(OptionError, match="Fesd: elements"):
        Fesd(elements=0)
    with pytest.raises(OptionError, match="Fesd: verify_tol"):
        Fesd(verify_tol=-1.0)
    with pytest.raises(OptionError, match="method='shooting'"):
        Fesd(starts=3)
    assert Fesd().refine == 2 and Fesd(refine=0).refine == 0
    for bad in (-1, 1.5, "2", True):
        with pytest.raises(OptionError, match="Fesd: refine"):
            Fesd(refine=bad)
    from pympc.identify.fesd_fit import fit
    with pytest.raises(OptionError, match="refine must be an integer >= 0"):
        fit(OSC, np.linspace(0.0, 1.0, 3), np.zeros((3, 1)), ["mass.x"], ["mu"], refine=-1)
    from pympc.identify.options import resolve
    assert isinstance(resolve("fesd"), Fesd) and isinstance(resolve(Fesd), Fesd)


def test_estimate_fesd_agrees_with_shooting_and_declares_its_result(record):
    """estimate(..., method=Fesd()) returns an IdentificationResult at the shooting estimate (within 0.1 standard
    errors), with the standard errors of the exact model's Jacobian at its estimate (the shooting ones to 1 %),
    verified by simulation; its facts carry Pyomo's termination condition and solution status by name."""
    shoot = estimate(record, "mu,mu_s", method=Shooting(starts=1))
    res = estimate(record, "mu,mu_s", method=Fesd(elements=4, stages=3))
    assert res.ok and res.converged, res.summary()
    assert type(res) is type(shoot)
    assert np.all(np.abs(res.optimum - shoot.optimum) <= 0.1 * shoot.stderr), (res.optimum, shoot.optimum)
    assert np.allclose(res.stderr, shoot.stderr, rtol=1e-2), (res.stderr, shoot.stderr)
    fe = res.method["fesd"]
    assert fe["termination"] == "convergenceCriteriaSatisfied" and fe["solution_status"] == "optimal"
    assert fe["output_gap"] <= 1e-5
    assert max(abs(x) for x in fe["exact_step"]) <= 0.01 * float(np.min(shoot.stderr))
    assert "fesd" in res.checks() and res.checks()["fesd"][0]
    with pytest.raises(OptionError, match="profile"):
        estimate(record, "mu,mu_s", method="fesd", profile="mu")


def test_fit_result_is_declared_with_pyomo_enums(record):
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition

    from pympc.identify.fesd_fit import fit
    from pympc.mechanics import load_model
    r = fit(load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41}), record.t, record.y, ["mass.x"], ["mu", "mu_s"],
            noise=list(record.sigma))
    assert r.ok and r.termination_condition is TerminationCondition.convergenceCriteriaSatisfied
    assert r.solution_status is SolutionStatus.optimal
    assert all(isinstance(s.termination_condition, TerminationCondition) for s in r.solves)
    # an iteration limit of 1 cannot converge: declared as such, not verified
    bad = fit(load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41}), record.t, record.y, ["mass.x"], ["mu", "mu_s"],
              noise=list(record.sigma), options={"max_iter": 1})
    assert not bad.ok and bad.termination_condition is TerminationCondition.iterationLimit
    assert bad.solution_status is not SolutionStatus.optimal


def test_forward_route_gives_the_same_estimate(record):
    """forward=True (the forward MPEC solve first, its active set fixed) and the simulation's active set agree."""
    from pympc.identify.fesd_fit import fit
    from pympc.mechanics import load_model
    args = (load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41}), record.t, record.y, ["mass.x"], ["mu", "mu_s"])
    a = fit(*args, noise=list(record.sigma))
    b = fit(*args, noise=list(record.sigma), forward=True)
    assert a.ok and b.ok, (a.message, b.message)
    assert all(abs(a.theta[n] - b.theta[n]) <= 1e-6 for n in a.theta), (a.theta, b.theta)


def test_fit_options_change_the_work_not_the_answer(record):
    """FIT_OPTIONS (IPOPT takes MUMPS's KKT solutions without their residuals and refinement) are under the
    caller's options; with IPOPT's own defaults (a residual and one refinement at least for every solution) the
    fit takes the same walks and iterations to the same estimate (oracle: the solve with IPOPT's defaults)."""
    from pympc.identify.fesd_fit import FIT_OPTIONS, fit
    from pympc.mechanics import load_model
    assert FIT_OPTIONS == {"min_refinement_steps": 0, "fast_step_computation": "yes"}
    args = (load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41}), record.t, record.y, ["mass.x"], ["mu", "mu_s"])
    a = fit(*args, noise=list(record.sigma))
    b = fit(*args, noise=list(record.sigma), options={"min_refinement_steps": 1, "fast_step_computation": "no"})
    assert a.ok and b.ok, (a.message, b.message)
    assert a.walks == b.walks and [s.iterations for s in a.solves] == [s.iterations for s in b.solves]
    assert all(abs(a.theta[n] - b.theta[n]) <= 1e-9 * abs(b.theta[n]) for n in a.theta), (a.theta, b.theta)
    assert abs(a.objective - b.objective) <= 1e-9 * b.objective


def test_active_set_pair_sums_equal_pyomo_value():
    """fix_active_set's sums of the pairs' members over an element's stages (slot_law applied to the stage values
    as arrays) are pyo.value's of the members' Pyomo expressions summed, bit for bit: at the warm start and at
    random values, on a model with static friction (four law pairs) and one without (two per slot, two slots);
    Pyomo's error for a Var without a value."""
    import pyomo.environ as pyo

    from pympc.identify.fesd import trajectory_model
    from pympc.identify.fesd_solve import _pair_sums
    rng = np.random.default_rng(0)
    for model, pairs in (("models/cross_slide.toml", 6), (OSC, 5)):
        m = trajectory_model(model, np.linspace(0.0, 1.0, 5), elements=3)
        assert len(m.fesd["pairs"]) == 12 * pairs
        for trial in range(3):
            if trial:
                for v in m.component_data_objects(pyo.Var):
                    if not v.fixed:
                        v.set_value(float(rng.normal()) * 10.0 ** rng.integers(-8, 3), skip_validation=True)
            sums = {k: (sum(abs(pyo.value(a)) for a, _ in st), sum(abs(pyo.value(c)) for _, c in st))
                    for k, st in m.fesd["pairs"].items()}
            assert _pair_sums(m) == sums
            assert any(0 < min(x) for x in sums.values()) == bool(trial)   # the warm start: complementary
    m.F[0, 1, "slot"].set_value(None)
    with pytest.raises(ValueError, match="No value"):
        _pair_sums(m)


def test_two_experiments_jointly_agree_with_joint_shooting():
    """Two records of the oscillator at different drive amplitudes (known μ = 0.3, μ_s = 0.4), fitted jointly:
    one NLP with the parameters shared, each record verified by simulation; the joint FESD estimate is the
    joint shooting estimate within 0.1 standard errors."""
    t = np.linspace(0.0, 3.0, 13)
    exps = []
    for k, F0 in enumerate((10.0, 12.0)):
        df, noise = synthetic_record(OSC, t, ["mass.x"], 0.01, 10 + k, F0=F0)
        exps.append(Experiment(OSC, df, outputs=["mass.x"], noise=noise, fixed={"F0": F0}, name=f"F0={F0:g}"))
    shoot = estimate(exps, "mu,mu_s", method=Shooting(starts=1))
    res = estimate(exps, "mu,mu_s", method=Fesd())
    assert res.ok, res.summary()
    assert np.all(np.abs(res.optimum - shoot.optimum) <= 0.1 * shoot.stderr), (res.optimum, shoot.optimum,
                                                                                shoot.stderr)
    fe = res.method["fesd"]
    assert fe["output_gap"] <= 1e-5 and abs(res.cost - shoot.cost) <= 1e-3 * shoot.cost
    # one NLP over both records: more variables than either record's model alone
    single = estimate(exps[0], "mu,mu_s", method=Fesd())
    assert fe["nlp"][-1]["variables"] > 1.5 * single.method["fesd"]["nlp"][-1]["variables"]


def test_fesd_refuses_a_record_without_the_initial_time():
    t = np.linspace(0.5, 3.0, 11)
    df, noise = synthetic_record(OSC, np.linspace(0.0, 3.0, 13), ["mass.x"], 0.01, 3)
    exp = Experiment(OSC, df[df["t"] >= 0.5], outputs=["mass.x"], noise=noise, t_span=(0.0, 3.0))
    assert t.size == 11
    with pytest.raises(OptionError, match="sample at the initial time"):
        estimate(exp, "mu,mu_s", method="fesd")


def test_cli_identify_method_fesd(tmp_path, capsys, record):
    import pandas as pd

    from pympc.cli import main
    path = tmp_path / "rec.csv"
    pd.DataFrame({"t": record.t, "mass.x": record.y[:, 0]}).to_csv(path, index=False)
    rc = main(["identify", OSC, str(path), "--fit", "mu,mu_s", "--noise", str(float(record.sigma[0])),
               "--method", "fesd", "--elements", "4", "--stages", "3", "--refine", "1", "--no-plots", "--out",
               str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "identification by fesd" in out and "check fesd           ok" in out
    assert main(["identify", OSC, str(path), "--fit", "mu", "--elements", "3", "--no-plots", "--out",
                 str(tmp_path)]) == 2
    assert "--elements and --stages are options of --method fesd" in capsys.readouterr().err
    assert main(["identify", OSC, str(path), "--fit", "mu", "--refine", "1", "--no-plots", "--out",
                 str(tmp_path)]) == 2
    assert "(--refine too)" in capsys.readouterr().err


def test_data_with_static_equal_to_kinetic_give_the_shooting_estimate_on_the_bound():
    """Data simulated with μ_s = μ = 0.3 (seed 0: the shooting estimate sits on its bound μ_s = μ): the FESD fit,
    which holds μ_s >= μ as the friction law and shooting do, gives μ within 0.1 standard errors of shooting's and
    μ_s on or above μ, no further from it than 0.1 standard errors of μ."""
    from pympc.identify.fesd_fit import fit
    from pympc.mechanics import load_model
    system = load_model(OSC).bind({"mu": 0.3, "mu_s": 0.3})
    t = np.linspace(0.0, 6.0, 25)
    df, noise = synthetic_record(system, t, ["mass.x"], 0.01, 0)
    shoot = estimate(Experiment(OSC, df, outputs=["mass.x"], noise=noise), "mu,mu_s", method=Shooting(starts=1))
    mu, mu_s = shoot.optimum
    assert abs(mu_s - mu) <= 1e-9                       # the case: shooting's estimate on its bound
    res = fit(system.bind({"mu": 0.31, "mu_s": 0.32}), t, df[["mass.x"]].to_numpy(), ["mass.x"], ["mu", "mu_s"],
              noise=[noise["mass.x"]])
    assert res.ok, res.message
    assert abs(res.theta["mu"] - mu) <= 0.1 * shoot.stderr[0]
    assert 0.0 <= res.theta["mu_s"] - res.theta["mu"] <= 0.1 * shoot.stderr[0]


def test_walk_one_builds_on_the_static_check_simulation():
    """The simulation the static-coefficient check runs is walk 1's warm start: the model built on it is the
    model built on its own simulation (every Var's value, bounds and fixing, every row printed); at other
    values of the parameters it is not used."""
    import pyomo.environ as pyo

    from pympc.identify.fesd import trajectory_model
    from pympc.identify.fesd_fit import _check_static, _same_start
    from pympc.mechanics import load_model
    t = np.linspace(0.0, 6.0, 25)
    df, _ = synthetic_record(OSC, t, ["mass.x"], 0.01, 3)
    start = load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41})
    sim = _check_static(start, ["mu", "mu_s"], t)
    assert sim is not None and _check_static(start, ["mu"], t) is None      # no static coefficient: no run
    at = {"mu": 0.29, "mu_s": 0.41}
    assert _same_start(sim, start, at) is sim
    assert _same_start(sim, start, {"mu": 0.3, "mu_s": 0.41}) is None and _same_start(None, start, at) is None
    models = [trajectory_model(start.bind(at), t, df[["mass.x"]].to_numpy(), ["mass.x"], ["mu", "mu_s"],
                               warm_start=w) for w in (sim, None)]
    vs, rows = ([[(v.name, v.value, v.lb, v.ub, v.fixed) for v in m.component_data_objects(pyo.Var)] for m in models],
                [[str(c.expr) for c in m.component_data_objects(pyo.Constraint)] for m in models])
    assert vs[0] == vs[1] and rows[0] == rows[1] and len(rows[0]) > 1000


def _oscillator_30s():
    t = np.linspace(0.0, 30.0, 121)
    df, noise = synthetic_record(OSC, t, ["mass.x"], 0.01, 3)
    shoot = estimate(Experiment(OSC, df, outputs=["mass.x"], noise=noise), "mu,mu_s", method=Shooting(starts=1))
    return t, df[["mass.x"]].to_numpy(), [noise["mass.x"]], shoot


def test_the_default_walks_reach_the_estimate_from_a_start_whose_walks_zigzag(monkeypatch):
    """From (0.31, 0.42) on the 30 s oscillator record the walks zig-zag: solved to the end (the stop of a walk
    whose element is held at its lower bound, PINNED, off), 4 walks ended on a constrained minimum (an element at
    its lower bound, 0.12 / 0.18 standard errors off the estimate) and 8 reached the estimate at walk 5; with the
    stop the default reaches it within 4 walks.  Oracle: the shooting fit on the same data, and the fit itself with
    4 walks solved to the end (constrained, a larger objective: reported as no estimate, ``ok`` False)."""
    from pympc.identify import fesd_fit
    from pympc.mechanics import load_model
    t, y, noise, shoot = _oscillator_30s()
    start = load_model(OSC).bind({"mu": 0.31, "mu_s": 0.42})
    run = lambda **kw: fesd_fit.fit(start, t, y, ["mass.x"], ["mu", "mu_s"], noise=noise, **kw)  # noqa: E731
    default = run()
    with monkeypatch.context() as mp:
        mp.setattr(fesd_fit, "PINNED", 0)
        four = run(walks=4)
    gap = lambda r: np.abs(np.array([r.theta[n] for n in shoot.names]) - shoot.optimum) / shoot.stderr  # noqa: E731
    assert not four.ok and four.constrained and four.walks == 4 and gap(four).max() > 0.1  # not an estimate
    assert "lower bound" in four.message and "not the least-squares estimate" in four.message
    assert all(s.stopped is None for s in four.solves)
    assert default.ok and not default.constrained and default.walks <= 4, default.message
    assert all(s.stopped is not None for s in default.solves[:-1]) and default.solves[-1].stopped is None
    assert gap(default).max() < 0.01 and default.objective < four.objective


def test_a_walk_whose_element_stays_at_its_lower_bound_is_stopped(monkeypatch):
    """On the 30 s oscillator record from (0.29, 0.41) walk 1's answer has elements at their lower bound (the
    estimate moves an event across a sample time); IPOPT is stopped once an element is there at PINNED
    consecutive iterates, and walk 2 starts from that θ: the same estimate (to IPOPT's tolerance) as with walk 1
    solved to the end, in fewer iterations.  On the 6 s record from 5 % above the true values two elements touch
    their bound at the 1st iterate only: with PINNED = 1 that walk would be stopped, with the default it is solved
    and verifies (1 walk).  Oracles: the fits with the stop off (PINNED = 0), Pyomo's termination condition."""
    from pyomo.contrib.solver.common.results import TerminationCondition

    from pympc.identify import fesd_fit
    from pympc.mechanics import load_model
    t, y, noise, shoot = _oscillator_30s()
    start = load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41})
    fit = lambda: fesd_fit.fit(start, t, y, ["mass.x"], ["mu", "mu_s"], noise=noise)  # noqa: E731
    stopped = fit()
    with monkeypatch.context() as mp:
        mp.setattr(fesd_fit, "PINNED", 0)
        whole = fit()
    assert fesd_fit.PINNED == 2
    assert stopped.ok and whole.ok and not stopped.constrained and stopped.walks == whole.walks == 2
    first = stopped.solves[0]
    assert first.stopped is not None and first.termination_condition is TerminationCondition.interrupted
    assert whole.solves[0].stopped is None and whole.solves[0].iterations > first.iterations
    assert sum(s.iterations for s in stopped.solves) < sum(s.iterations for s in whole.solves)
    assert all(abs(stopped.theta[n] - whole.theta[n]) <= 1e-9 * abs(whole.theta[n]) for n in whole.theta)
    assert abs(stopped.objective - whole.objective) <= 1e-9 * whole.objective
    system = load_model(OSC)
    t6 = np.linspace(0.0, 6.0, 25)
    df, noise6 = synthetic_record(OSC, t6, ["mass.x"], 0.01, 3)
    near = system.bind({"mu": 1.05 * 0.3, "mu_s": 1.05 * 0.4})
    fit6 = lambda: fesd_fit.fit(near, t6, df[["mass.x"]].to_numpy(), ["mass.x"], ["mu", "mu_s"],  # noqa: E731
                                noise=[noise6["mass.x"]])
    kept = fit6()
    with monkeypatch.context() as mp:
        mp.setattr(fesd_fit, "PINNED", 1)
        eager = fit6()
    assert kept.ok and kept.walks == 1 and kept.solves[0].stopped is None
    assert eager.ok and eager.walks > 1 and eager.solves[0].stopped == 1


def test_a_walk_step_stays_a_valid_system():
    """The next walk's θ (θ + WALK_STEP·(θ − θ_start)) is clipped to the fitted parameters' bounds and holds
    μ_s >= μ (a system with μ_s < μ is refused by validation): from an answer on μ_s = μ reached from a start
    with μ_s > μ the plain step would give μ_s < μ; a stopped walk's iterate need not hold it either."""
    import pyomo.environ as pyo

    from pympc.identify.fesd_fit import WALK_STEP, _step
    from pympc.mechanics import load_model
    m = pyo.ConcreteModel()
    m.theta = pyo.Var(["mu", "mu_s"], bounds=(0.0, 1.0))
    at, start = {"mu": 0.30, "mu_s": 0.30}, {"mu": 0.31, "mu_s": 0.32}
    step = _step(at, start, m, [("mu", "mu_s")])
    assert step["mu"] == 0.30 + WALK_STEP * (0.30 - 0.31)           # the kinetic one as the plain step
    assert at["mu_s"] + WALK_STEP * (at["mu_s"] - start["mu_s"]) < step["mu"] == step["mu_s"]
    load_model(OSC).bind(step)                                        # valid
    assert _step({"mu": 0.02, "mu_s": 0.99}, {"mu": 0.1, "mu_s": 0.9}, m, [("mu", "mu_s")]) == {"mu": 0.0, "mu_s": 1.0}
    free = _step({"mu": 0.3, "mu_s": 0.2}, {"mu": 0.3, "mu_s": 0.3}, m, [])            # no pair: as stepped
    assert free == {"mu": 0.3, "mu_s": 0.2 + WALK_STEP * (0.2 - 0.3)}
