"""pyomo.contrib.parmest on pympc's trajectory MPEC (pympc.identify.MpecExperiment, pympc.mpec.ipopt_as).

Oracles: records simulated with known μ = 0.3, μ_s = 0.4 and Gaussian noise of known σ; pympc's own MPEC
estimate and covariance on the same records (the walk's last NLP is the labeled model's NLP, so parmest's
estimate must be pympc's to solver precision); the event-driven simulator at parmest's estimate.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyomo.contrib.parmest.parmest")

import pyomo.contrib.parmest.parmest as parmest  # noqa: E402
from pyomo.opt import SolverFactory as LegacyFactory  # noqa: E402

import pympc.mpec  # noqa: E402
from pympc.errors import OptionError  # noqa: E402
from pympc.identify import Experiment, Mpec, MpecExperiment, Parameter, estimate  # noqa: E402
from pympc.identify.mpec_experiment import fix_branch  # noqa: E402
from pympc.identify.experiment import simulate_experiment, synthetic_record, trajectory_output  # noqa: E402
from pympc.identify.mpec_model import trajectory_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OSC = ROOT / "models" / "friction_oscillator.toml"
TRUTH = {"mu": 0.3, "mu_s": 0.4}
SIGMA, STEP = 0.005, 0.02
OPTIONS = {"bound_relax_factor": 0.0}      # the branch rows hold exactly
COV_FACTOR = 1.5
"""Stated agreement of parmest's standard errors (finite differences of the time-stepping model) with pympc's
(the exact model's sensitivities at the MPEC estimate): within this factor either way (measured: 1.00)."""


def _record(seed):
    t = np.arange(0.0, 2.0 + 1e-9, 0.05)
    df, _ = synthetic_record(OSC, t, ["mass.x"], SIGMA, seed)
    return Experiment(OSC, df, noise=SIGMA, name=f"seed{seed}")


@pytest.fixture(scope="module")
def both():
    """μ and μ_s on one noisy record: pympc's MPEC estimate and parmest's theta_est on its branch."""
    exp = _record(3)
    params = [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.35, (0.05, 1.5))]
    r = estimate(exp, params, Mpec(step=STEP))
    assert r.method["mpec"]["verified"] and r.method["mpec"]["route"] == "walk", r.summary()
    at = dict(zip(r.names, (float(v) for v in r.optimum)))
    built = []

    def builder(*args, **kwds):          # the pluggable builder is the one used
        built.append(1)
        return trajectory_model(*args, **kwds)
    pe = MpecExperiment(exp, params, step=STEP, at=at, builder=builder)
    est = parmest.Estimator([pe], obj_function="SSE", solver_options=OPTIONS)
    with pympc.mpec.ipopt_as():
        obj, theta = est.theta_est()
    assert built
    return exp, r, pe, est, obj, theta


def test_theta_est_is_pympcs_mpec_estimate_and_near_the_truth(both):
    exp, r, pe, est, obj, theta = both
    got = pe.parameter_values(theta)
    assert set(dict(theta)) == {"fitted[mu]", "excess[mu_s]"}      # parmest names the model's Vars
    for k, n in enumerate(r.names):
        # the same NLP at the same branch: the same point (solver precision), far inside a standard error
        assert abs(got[n] - r.optimum[k]) < 1e-3 * r.stderr[k], (got, r.optimum)
        # and the truth inside 3 standard errors plus the route's first-order bias (|Δμ_s| ≈ 9e-3 at h = 0.02 s)
        assert abs(got[n] - TRUTH[n]) < 3 * r.stderr[k] + (0.02 if n == "mu_s" else 1e-3), (n, got[n], r.stderr[k])
    # the point is an MPEC solution: the time stepping at parmest's estimate has the branches it was solved on
    assert pe.branch_holds(got)


def test_theta_est_verified_against_the_simulator(both):
    exp, r, pe, est, obj, theta = both
    got = pe.parameter_values(theta)
    tr = simulate_experiment(exp, got)
    resid = trajectory_output(tr, "mass.x")[tr.sample_rows(exp.t)] - exp.y[:, 0]
    rms = float(np.sqrt(np.mean(resid ** 2)))
    # the exact model at the estimate explains the record to its noise level (first-order bias far below σ)
    assert 0.6 * SIGMA < rms < 1.4 * SIGMA, rms
    # parmest's objective is SSE = Σ (y − ŷ)² of the time-stepping model: n σ² to within the χ² spread
    n = exp.y.size
    assert 0.5 * n * SIGMA ** 2 < obj < 1.6 * n * SIGMA ** 2, (obj, n * SIGMA ** 2)


def test_cov_est_agrees_with_pympcs_covariance(both):
    exp, r, pe, est, obj, theta = both
    cov = est.cov_est(solver="pympc.ipopt")
    # parmest's parameters are μ and Δ = μ_s − μ: map pympc's covariance of (μ, μ_s) onto them
    T = np.array([[1.0, 0.0], [-1.0, 1.0]])
    ours = T @ r.covariance @ T.T
    theirs = cov.loc[["fitted[mu]", "excess[mu_s]"], ["fitted[mu]", "excess[mu_s]"]].to_numpy()
    ratio = np.sqrt(np.diag(theirs) / np.diag(ours))
    assert np.all((1 / COV_FACTOR < ratio) & (ratio < COV_FACTOR)), (ratio, theirs, ours)
    corr = lambda c: c[0, 1] / np.sqrt(c[0, 0] * c[1, 1])  # noqa: E731
    assert abs(corr(theirs) - corr(ours)) < 0.2, (corr(theirs), corr(ours))


@pytest.fixture(scope="module")
def two():
    """μ from two noisy records fitted jointly: pympc's estimate and parmest on a list of two experiments."""
    exps = [_record(5), _record(6)]
    params = [Parameter("mu", 0.25, (0.05, 1.0))]
    r = estimate(exps, params, Mpec(step=STEP))
    assert r.method["mpec"]["verified"], r.summary()
    at = {"mu": float(r.optimum[0])}
    pes = [MpecExperiment(e, params, step=STEP, at=at) for e in exps]
    est = parmest.Estimator(pes, obj_function="SSE", solver_options=OPTIONS)
    with pympc.mpec.ipopt_as():
        obj, theta = est.theta_est()
    return exps, r, pes, est, obj, theta


def test_two_experiments_jointly_and_bootstrap(two):
    exps, r, pes, est, obj, theta = two
    assert float(theta["fitted[mu]"]) == pytest.approx(r.optimum[0], abs=1e-3 * r.stderr[0])
    with pympc.mpec.ipopt_as():
        boot = est.theta_est_bootstrap(3, seed=2)
    assert len(boot) == 3 and np.all(np.isfinite(boot["fitted[mu]"]))
    # a resample is one of {e0, e0}, {e0, e1}, {e1, e1}: every estimate near the truth (a few standard errors
    # of one record, ≈ √2 × the joint one)
    assert np.all(np.abs(boot["fitted[mu]"] - TRUTH["mu"]) < 5 * np.sqrt(2) * r.stderr[0] + 1e-3), boot


def test_likelihood_ratio_test(two):
    """parmest's objective_at_theta and likelihood_ratio_test on the two experiments.

    The oracle is the χ² profile with the known σ: parmest's objective is the mean over experiments of
    SSE = Σ (y − ŷ)², so 2 Δobj / σ² at μ̂ ± 6 standard errors is ≈ 36 (quadratic to within the curvature
    of the model).  parmest's likelihood_ratio_test sets its thresholds from the number of experiments S
    (obj · (χ²/(S − 2) + 1)), not the number of samples, so on two trajectory experiments it has none (S − 2
    = 0): it runs, and the profile above is the test to read (docs/guide/identification.md says so).
    """
    exps, r, pes, est, obj, theta = two
    import warnings

    import pandas as pd

    mu, se = float(theta["fitted[mu]"]), float(r.stderr[0])
    grid = pd.DataFrame({"fitted[mu]": [mu - 6 * se, mu, mu + 6 * se]})
    with pympc.mpec.ipopt_as():
        at = est.objective_at_theta(grid)
    chi2 = 2 * (at["obj"].to_numpy(dtype=float) - obj) / SIGMA ** 2
    assert abs(chi2[1]) < 1e-4 and 25 < chi2[0] < 50 and 25 < chi2[2] < 50, chi2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # parmest's S − 2 = 0
        lrt = est.likelihood_ratio_test(at, obj, [0.95])
    assert len(lrt) == 3 and 0.95 in lrt.columns


def test_ipopt_as_is_scoped():
    before = "ipopt" in LegacyFactory._cls, LegacyFactory._cls.get("ipopt")
    with pympc.mpec.ipopt_as() as cls:
        assert LegacyFactory._cls["ipopt"] is cls is LegacyFactory.get_class("pympc.ipopt")
    assert ("ipopt" in LegacyFactory._cls, LegacyFactory._cls.get("ipopt")) == before
    with pytest.raises(RuntimeError, match="inside"):
        with pympc.mpec.ipopt_as("my_ipopt"):
            raise RuntimeError("inside")
    assert "my_ipopt" not in LegacyFactory._cls
    with pytest.raises(ValueError, match="solver name"):
        with pympc.mpec.ipopt_as(""):
            pass


def test_bad_arguments_are_refused():
    exp = _record(3)
    params = [Parameter("mu", 0.25, (0.05, 1.0))]
    with pytest.raises(OptionError, match="branch must be"):
        MpecExperiment(exp, params, branch="relaxed")
    with pytest.raises(OptionError, match="branch must be"):
        MpecExperiment(exp, params, branch=1e-6)
    with pytest.raises(OptionError, match="step must be"):
        MpecExperiment(exp, params, step=0.0)
    with pytest.raises(OptionError, match="at has no value"):
        MpecExperiment(exp, params, at={"mu_s": 0.4})
    # a builder whose model breaks the contract (no experiment block with residuals): said, not a traceback
    import pyomo.environ as pyo
    with pytest.raises(OptionError, match="no block experiment"):
        MpecExperiment(exp, params, builder=lambda *a, **k: pyo.ConcreteModel()).get_labeled_model()
    # a branch function that leaves the pairs: parmest would get an MPEC, refused by name
    with pytest.raises(OptionError, match="still holds"):
        MpecExperiment(exp, params, step=0.1, branch=lambda m: None).get_labeled_model()


def test_a_branch_function_is_used(both):
    """branch=callable: the builder's model made an NLP by the caller's function (here the walk's own)."""
    exp, r, pe, est, obj, theta = both
    calls = []

    def branch(m):
        calls.append(m)
        fix_branch(m)
    pf = MpecExperiment(exp, pe.parametrization_parameters, step=STEP, at=pe.at, branch=branch)
    with pympc.mpec.ipopt_as():
        _, th = parmest.Estimator([pf], obj_function="SSE", solver_options=OPTIONS).theta_est()
    assert calls and all(abs(float(th[k]) - float(theta[k])) < 1e-8 for k in dict(theta)), (th, theta)


def test_fesd_model_under_parmest_agrees_with_fesd_fit():
    """MpecExperiment(builder=fesd_builder(), branch=fesd_branch): parmest's theta_est on the switch-detecting
    model of a 3 s oscillator record is fesd_fit.fit's estimate (the same NLP on the same active set) far
    inside a standard error (the shooting route's), with the same least-squares objective."""
    from pympc.identify import Shooting
    from pympc.identify.fesd_experiment import fesd_branch, fesd_builder
    from pympc.identify.fesd_fit import fit
    from pympc.identify.fesd_solve import DEFAULT_OPTIONS
    from pympc.mechanics import load_model

    t = np.linspace(0.0, 3.0, 13)
    df, noise = synthetic_record(OSC, t, ["mass.x"], 0.01, 3)
    exp = Experiment(OSC, df, outputs=["mass.x"], noise=noise)
    sigma = float(noise["mass.x"])
    r = fit(load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41}), t, df[["mass.x"]].to_numpy(), ["mass.x"],
            ["mu", "mu_s"], noise=[sigma])
    assert r.ok, r.message
    shoot = estimate(exp, "mu,mu_s", method=Shooting(starts=1))
    params = [Parameter("mu", 0.29, (0.05, 1.0)), Parameter("mu_s", 0.41, (0.05, 1.5))]
    pe = MpecExperiment(exp, params, at=r.theta, builder=fesd_builder(elements=4), branch=fesd_branch)
    options = {**{k: v for k, v in DEFAULT_OPTIONS.items() if k != "linear_solver"}, "tol": 1e-8,
               "bound_relax_factor": 0.0}
    est = parmest.Estimator([pe], obj_function="SSE", solver_options=options)
    with pympc.mpec.ipopt_as():
        obj, theta = est.theta_est()
    got = pe.parameter_values(theta)
    d = np.array([got[n] - r.theta[n] for n in shoot.names])
    assert np.all(np.abs(d) <= 0.01 * shoot.stderr), (got, r.theta, shoot.stderr)
    assert abs(obj - 2 * sigma ** 2 * r.objective) <= 1e-6 * obj, (obj, 2 * sigma ** 2 * r.objective)


def test_fesd_builder_refuses_a_record_without_the_initial_time():
    """The FESD grid starts at the initial state: a record whose first row is later is refused by name."""
    from pympc.identify.fesd_experiment import fesd_builder
    from pympc.mechanics import load_model
    t = np.array([0.5, 1.0, 1.5])
    with pytest.raises(OptionError, match="sample at the initial time"):
        fesd_builder()(load_model(OSC), t, np.zeros((3, 1)), ["mass.x"], fit={"mu": (0.05, 1.0)}, t0=0.0)
