"""Friction-parameter identification (pympc.identify): derivatives, recovery, uncertainty, bad input."""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import MODELS, ROOT, python_env, run_python
from scipy.optimize._numdiff import approx_derivative

import pympc
from pympc.errors import ModelError, OptionError, SimulationError
from pympc.identify import (
    Experiment, IdentificationResult, Mpec, Parameter, Parametrization, Shooting, ShootingProblem, estimate,
    synthetic_record,
)

OSC = MODELS / "friction_oscillator.toml"

# A block at rest in a horizontal slot pushed by a ramp force c·t: it sticks until c·t_b = μ_s m g,
# then slips with m ẍ = c t − μ m g.  Closed forms of x and of its derivatives in μ and μ_s.
RAMP = """
[model]
name = "ramp_block"
[parameters]
m = 2.0
c = 4.0
g = 10.0
mu = 0.2
mu_s = 0.3
unused = 1.0
[[bodies]]
name = "block"
type = "particle"
mass = "m"
[[joints]]
name = "rail"
type = "slot"
slider = "block"
guide = "ground"
direction = [1, 0]
mu = "mu"
mu_s = "mu_s"
[[forces]]
name = "gravity"
type = "gravity"
g = [0, "-g"]
[[forces]]
name = "push"
type = "force"
body = "block"
value = ["c*t", 0]
"""


def ramp_closed_form(t, m=2.0, c=4.0, g=10.0, mu=0.2, mu_s=0.3):
    """x(t), ∂x/∂μ, ∂x/∂μ_s of the ramp-pushed block."""
    tb = mu_s * m * g / c
    s = np.clip(t - tb, 0, None)
    x = c / (2 * m) * ((t ** 3 - tb ** 3) / 3 - tb ** 2 * (t - tb)) - mu * g * (t - tb) ** 2 / 2
    x = np.where(t > tb, x, 0.0)
    return x, -g * s ** 2 / 2, -(mu_s - mu) * g * s * m * g / c


@pytest.fixture
def ramp(tmp_path):
    path = tmp_path / "ramp_block.toml"
    path.write_text(RAMP, encoding="utf-8")
    return path


def ramp_experiment(path, t, **kw):
    x = ramp_closed_form(t)[0]
    return Experiment(path, pd.DataFrame({"t": t, "block.x": x}), **kw)


def oscillator_data(t, seed, rel_noise, **overrides):
    """Noisy positions of the friction oscillator (noise relative to the peak |x|)."""
    df, sigma = synthetic_record(OSC, t, ["mass.x"], rel_noise, seed, **overrides)
    return df, sigma["mass.x"]


# ----------------------------------------------------------------------------- derivatives
@pytest.mark.parametrize("scheme", ["forward", "central"])
def test_fd_jacobian_matches_the_closed_form_derivatives(ramp, scheme):
    t = np.linspace(0.0, 3.0, 31)
    exp = ramp_experiment(ramp, t)
    par = Parametrization(["mu", "mu_s"], [exp])
    assert par.pairs == [(0, 1)] and par.z_names() == ["mu", "mu_s - mu"]
    prob = ShootingProblem([exp], par, fd_scheme=scheme)
    r = prob.residual(par.z0)
    assert np.abs(r).max() < 1e-8                          # the simulator reproduces the closed form
    J = prob.jacobian_fd(par.z0) @ par.Tinv                 # back to ∂x/∂(μ, μ_s)
    _, dmu, dmus = ramp_closed_form(t)
    assert np.abs(J[:, 0] - dmu).max() < 1e-5 * np.abs(dmu).max()
    assert np.abs(J[:, 1] - dmus).max() < 1e-5 * np.abs(dmus).max()


def test_fd_jacobian_matches_scipy_differences_on_the_oscillator():
    t = np.linspace(0.0, 6.0, 61)
    df, _ = oscillator_data(t, 0, 0.0)
    exp = Experiment(OSC, df, noise=0.01)
    prob = ShootingProblem([exp], Parametrization(["mu", "mu_s", "K"], [exp]), fd_scheme="central")
    z = prob.par.z0
    J = prob.jacobian_fd(z)
    ref = approx_derivative(prob.residual, z, method="3-point", rel_step=1e-5)   # scipy's own differences
    assert np.abs(J - ref).max() < 1e-4 * np.abs(ref).max()
    assert np.abs(J).max(axis=0).min() > 1.0       # every column informative


def test_sensitivity_jacobian_matches_fd():
    t = np.linspace(0.0, 6.0, 61)
    df, _ = oscillator_data(t, 0, 0.0)
    exp = Experiment(OSC, df, noise=0.01)
    par = Parametrization(["mu", "mu_s", "K"], [exp])
    Js = ShootingProblem([exp], par, jac="sensitivity").jacobian(par.z0)
    Jf = ShootingProblem([exp], par, fd_scheme="central").jacobian_fd(par.z0)
    assert np.abs(Js - Jf).max() < 1e-4 * np.abs(Jf).max()


def test_sensitivity_estimate_agrees_with_fd_estimate():
    t = np.round(np.arange(0, 121) * 0.05, 10)
    df, sigma = oscillator_data(t, 3, 0.01)
    exp = Experiment(OSC, df, noise=sigma)
    spec = [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.35, (0.05, 1.5))]
    a = estimate(exp, spec, Shooting(jac="sensitivity"))
    b = estimate(exp, spec, Shooting(jac="fd"))
    assert a.ok and b.ok
    assert np.allclose(a.optimum, b.optimum, rtol=1e-4)
    assert np.allclose(a.stderr, b.stderr, rtol=1e-2)


# ----------------------------------------------------------------------------- recovery
def test_oscillator_mu_and_mu_s_recovered_within_their_intervals(tmp_path):
    t = np.round(np.arange(0, 161) * 0.05, 10)
    df, sigma = oscillator_data(t, 7, 0.01)
    exp = Experiment(OSC, df, noise=sigma)
    res = estimate(exp, [Parameter("mu", 0.2, (0.05, 1.0)), Parameter("mu_s", 0.5, (0.05, 1.5))], confidence=0.99)
    assert res.ok, res.summary()
    assert res.profile("mu_s") is res.profiles["mu_s"]     # a question asked of the result, kept with it
    assert res.method["reparametrized"] == ["mu, mu_s - mu"]
    tab = res.table()
    for name, true in (("mu", 0.3), ("mu_s", 0.4)):
        assert tab.loc[name, "wald_low"] < true < tab.loc[name, "wald_high"], res.summary()
        assert tab.loc[name, "status"] == "identified"
        assert tab.loc[name, "stderr"] < 0.05 * true
    prof = res.profiles["mu_s"]
    assert prof["kind"] == "bounded" and prof["interval"][0] < 0.4 < prof["interval"][1]
    # for a nearly linear model the χ²₁ profile interval and the Wald interval (same level) have about the same width
    wald_width = tab.loc["mu_s", "wald_high"] - tab.loc["mu_s", "wald_low"]
    assert 0.75 < (prof["interval"][1] - prof["interval"][0]) / wald_width < 1.25
    assert res.checks()["noise"][0]
    # residuals are at the noise level
    rs = res.residuals()
    assert 0.8 < rs.loc[0, "rms_over_sigma"] < 1.2
    # save / load round trip
    res.save(tmp_path / "r.json")
    back = IdentificationResult.load(tmp_path / "r.json")
    pd.testing.assert_frame_equal(back.table(), tab)
    pd.testing.assert_frame_equal(back.starts, res.starts, check_dtype=False)
    assert back.profiles["mu_s"]["interval"] == prof["interval"]
    figs = res.write_plots(tmp_path / "plots")
    assert {p.name for p in figs} == {"identify_fit.png", "identify_residuals.png", "identify_profiles.png",
                                      "identify_region.png"}


def test_joint_fit_of_two_experiments_from_csv_and_npz(tmp_path):
    t = np.round(np.arange(0, 101) * 0.05, 10)
    a, sa = oscillator_data(t, 11, 0.01)
    b, sb = oscillator_data(t, 12, 0.01, F0=12.0)
    a.to_csv(tmp_path / "a.csv", index=False)
    np.savez(tmp_path / "b.npz", **{k: b[k].to_numpy() for k in b.columns})
    ea = Experiment(OSC, tmp_path / "a.csv", noise=sa, name="F0=10")
    eb = Experiment(OSC, tmp_path / "b.npz", noise=sb, fixed={"F0": 12.0}, name="F0=12")
    res = estimate([ea, eb], "mu,mu_s", confidence=0.99)
    assert res.ok, res.summary()
    assert res.n == 2 * t.size and len(res.fits) == 2
    tab = res.table()
    assert tab.loc["mu", "wald_low"] < 0.3 < tab.loc["mu", "wald_high"]
    assert tab.loc["mu_s", "wald_low"] < 0.4 < tab.loc["mu_s", "wald_high"]
    # jointly the intervals are narrower than from the first experiment alone (more data, same model)
    alone = estimate(ea, "mu,mu_s", confidence=0.99)
    assert np.all(res.stderr < alone.stderr)


def test_cross_slide_shipped_data_recovers_mu1_mu2():
    data = ROOT / "examples" / "data" / "cross_slide.parquet"
    exp = Experiment(MODELS / "cross_slide.toml", data, fixed={"P": 5.0},
                     noise={"crosshead.x": 0.0115026, "particle.y": 0.123614})
    res = estimate(exp, [Parameter("mu1", 0.5, (0.0, 1.0)), Parameter("mu2", 0.3, (0.0, 1.0))], confidence=0.99)
    assert res.ok, res.summary()
    tab = res.table()
    assert tab.loc["mu1", "wald_low"] < 0.3 < tab.loc["mu1", "wald_high"]
    assert tab.loc["mu2", "wald_low"] < 0.5 < tab.loc["mu2", "wald_high"]


# ----------------------------------------------------------------------------- identifiability
def test_stick_only_data_give_a_lower_bound_on_mu_s_and_nothing_on_mu():
    # F0 = 3 N never overcomes μ_s m g = 3.92 N: the mass never moves; the data prove μ_s ≥ max|F|/|λ| = 3/9.8
    t = np.round(np.arange(0, 61) * 0.1, 10)
    df = pd.DataFrame({"t": t, "mass.x": 1e-3 * np.random.default_rng(0).standard_normal(t.size)})
    exp = Experiment(OSC, df, fixed={"F0": 3.0}, noise=1e-3)
    res = estimate(exp, "mu,mu_s", profile=["mu_s"])
    assert res.status_of("mu_s")[0] == "one-sided"
    # max|F|/|λ| over the sampled stick states: the drive's peak 3 N is sampled within 0.05 s
    assert 3.0 * np.cos(0.05) / 9.8 <= res.stick["mu_s"]["bound"] <= 3.0 / 9.8
    assert res.status_of("mu")[0] == "not identifiable"
    tab = res.table()
    assert np.isnan(tab.loc["mu_s", "estimate"]) and np.isnan(tab.loc["mu", "estimate"])    # never a point estimate
    assert tab.loc["mu_s", "lower_bound_only"] == res.stick["mu_s"]["bound"]
    assert "mu" not in res.estimates and "mu_s" not in res.estimates
    assert not res.checks()["identifiable"][0]
    prof = res.profiles["mu_s"]
    assert prof["kind"] == "one-sided" and prof["sides"]["lower"] == "crossed"
    assert prof["interval"][0] == pytest.approx(3.0 / 9.8, abs=0.03)


def test_a_parameter_without_influence_is_reported_not_identifiable(ramp):
    t = np.linspace(0.0, 3.0, 31)
    exp = ramp_experiment(ramp, t, noise=1e-3)
    res = estimate(exp, [Parameter("mu", 0.25, (0.0, 1.0)), Parameter("unused", 1.0, (0.5, 2.0))])
    assert res.status_of("unused")[0] == "not identifiable"
    assert "unused" in res.identifiability["not_identifiable"]
    assert np.isinf(res.stderr[1]) and np.isnan(res.table().loc["unused", "estimate"])
    assert res.optimum[0] == pytest.approx(0.2, abs=1e-6) and res.status_of("mu")[0] == "identified"


def test_multistart_reports_every_start_and_survives_a_failing_one(ramp, monkeypatch):
    from pympc.identify import shooting

    real = shooting.simulate_experiment

    def fragile(exp, values, sensitivities=None):
        if values["mu"] > 0.6:
            raise SimulationError("simulated failure for mu > 0.6")
        return real(exp, values, sensitivities)

    monkeypatch.setattr(shooting, "simulate_experiment", fragile)
    t = np.linspace(0.0, 3.0, 31)
    exp = ramp_experiment(ramp, t, noise=1e-3)
    res = estimate(exp, [Parameter("mu", 0.1, (0.0, 1.0)), Parameter("mu_s", 0.35, (0.0, 1.0), excess=(0.0, 0.5))],
                   Shooting(starts=6, seed=1))
    st = res.starts
    assert len(st) == 6 and st.loc[0, "mu_start"] == 0.1
    failed = st[st["status"] == "failed"]
    assert len(failed) >= 1 and (failed["mu_start"] > 0.6).all()
    assert failed["message"].str.contains("simulated failure for mu > 0.6").all()
    assert res.ok and res.optimum == pytest.approx([0.2, 0.3], abs=1e-5)
    assert st["at_best"].sum() >= 1
    # the Sobol points lie in the box of (μ, μ_s − μ)
    d = st["mu_s_start"] - st["mu_start"]
    assert ((d >= 0) & (d <= 0.5)).all() and st["mu_start"].between(0, 1).all()


# ----------------------------------------------------------------------------- bad input
def _df(t, x=None):
    return pd.DataFrame({"t": t, "mass.x": np.zeros(len(t)) if x is None else x})


@pytest.mark.parametrize("t, x, match", [
    ([0.0, 0.1, np.nan], None, "NaN"),
    ([0.0, 0.1, 0.2], [0.0, np.nan, 0.0], "NaN/infinite"),
    ([0.0, 0.2, 0.1], None, "not sorted"),
    ([0.0, 0.1, 0.1], None, "appears twice"),
    ([-0.5, 0.1, 0.2], None, "outside the simulated span"),
])
def test_bad_data_raise_clear_errors(t, x, match):
    with pytest.raises(OptionError, match=match):
        Experiment(OSC, _df(t, x))


def test_bad_experiment_arguments_raise_clear_errors(tmp_path):
    t = [0.0, 0.1, 0.2]
    with pytest.raises(OptionError, match="not an output of model"):
        Experiment(OSC, pd.DataFrame({"t": t, "mass.z": [0, 0, 0]}))
    with pytest.raises(OptionError, match="not a column"):
        Experiment(OSC, _df(t), outputs=["mass.y"])
    with pytest.raises(OptionError, match="no time column"):
        Experiment(OSC, pd.DataFrame({"time": t, "mass.x": [0, 0, 0]}))
    with pytest.raises(OptionError, match="outside the simulated span"):
        Experiment(OSC, _df(t), t_span=(0.0, 0.15))
    with pytest.raises(ModelError, match="unknown parameter"):
        Experiment(OSC, _df(t), fixed={"nope": 1.0})
    with pytest.raises(OptionError, match="positive"):
        Experiment(OSC, _df(t), noise=-1.0)
    with pytest.raises(OptionError, match="does not exist"):
        Experiment(OSC, tmp_path / "missing.csv")
    (tmp_path / "d.txt").write_text("t,mass.x\n0,0\n")
    with pytest.raises(OptionError, match=".csv, .parquet or .npz"):
        Experiment(OSC, tmp_path / "d.txt")


def test_bad_estimate_arguments_raise_clear_errors():
    exp = Experiment(OSC, _df([0.0, 0.1, 0.2]), fixed={"F0": 12.0})
    with pytest.raises(OptionError, match="not in model"):
        estimate(exp, "mu,nope")
    with pytest.raises(OptionError, match="outside its bounds"):
        estimate(exp, [Parameter("mu", 0.5, (0.0, 0.4))])
    with pytest.raises(OptionError, match="empty"):
        estimate(exp, [Parameter("mu", 0.3, (0.5, 0.4))])
    with pytest.raises(OptionError, match="fixed in experiment"):
        estimate(exp, "F0")
    with pytest.raises(OptionError, match="finite bounds"):
        estimate(exp, "K", Shooting(starts=3))
    with pytest.raises(OptionError, match="method must be"):
        estimate(exp, "mu", method="newton")
    with pytest.raises(OptionError, match="jac must be"):
        Shooting(jac="exact")
    with pytest.raises(OptionError, match="μ_s must be ≥ μ"):
        estimate(exp, [Parameter("mu", 0.5, (0.0, 1.0)), Parameter("mu_s", 0.4, (0.0, 1.0))])


# ----------------------------------------------------------------------------- options, and questions to the result
@pytest.mark.parametrize("cls, field, bad", [
    (Shooting, "jac", "exact"), (Shooting, "fd_scheme", "backward"), (Shooting, "fd_step", 0.0),
    (Shooting, "starts", 0), (Shooting, "starts", "4"), (Shooting, "starts", 2.0), (Shooting, "include_initial", 1),
    (Shooting, "seed", -1), (Shooting, "max_nfev", 0), (Shooting, "ftol", -1e-8), (Shooting, "xtol", np.nan),
    (Shooting, "gtol", "1e-8"), (Shooting, "profile_steps", 0), (Shooting, "auto_profile", "yes"),
    (Mpec, "step", 0.0), (Mpec, "step", np.inf), (Mpec, "relaxation", ()), (Mpec, "relaxation", (1e-3, -1.0)),
    (Mpec, "relaxation", "1e-3"), (Mpec, "static_penalty", -1.0), (Mpec, "time_limit", 0.0),
    (Mpec, "time_limit", np.nan), (Mpec, "jac", "exact"), (Mpec, "fd_step", -1e-6)])
def test_every_option_is_checked_once_by_its_class(cls, field, bad):
    with pytest.raises(OptionError, match=f"^{cls.__name__}: {field}"):
        cls(**{field: bad})


def test_option_classes_document_every_field_and_take_only_their_own():
    import dataclasses
    import re

    for cls in (Shooting, Mpec):     # each field heads a paragraph of the class's Parameters section
        for f in dataclasses.fields(cls):
            assert re.search(rf"^    (\w+, )*{f.name}\b", cls.__doc__, re.M), (cls, f.name)
    assert Shooting().least_squares == dict(max_nfev=60, ftol=1e-8, xtol=1e-8, gtol=1e-8)
    assert Mpec(time_limit=np.inf).time_limit is None and Mpec().step == 0.02
    with pytest.raises(OptionError, match=r"^Shooting: 'step' is an option of method='mpec' \(pympc.identify.Mpec"):
        Shooting(step=0.01)
    with pytest.raises(OptionError, match=r"^Mpec: 'starts' is an option of method='shooting'"):
        Mpec(starts=2)
    with pytest.raises(OptionError, match="'stepsize' is not an option of any method"):
        Mpec(stepsize=0.01)
    import pickle
    from dataclasses import replace

    assert pickle.loads(pickle.dumps(Mpec(step=0.01))) == Mpec(step=0.01)
    assert replace(Shooting(starts=3), seed=2) == Shooting(starts=3, seed=2)


def test_old_keywords_warn_with_the_new_spelling_and_fit_the_same(ramp):
    exp = ramp_experiment(ramp, np.linspace(0.0, 3.0, 31), noise=1e-3)
    spec = [Parameter("mu", 0.25, (0.05, 1.0))]
    new = estimate(exp, spec, Shooting(jac="fd", max_nfev=20))
    with pytest.warns(DeprecationWarning, match=r"write estimate\(\.\.\., method=Shooting\(jac='fd', max_nfev=20\)\)"):
        old = estimate(exp, spec, jac="fd", max_nfev=20)
    np.testing.assert_array_equal(old.optimum, new.optimum)
    assert old.method["options"] == new.method["options"] and new.method["options"]["max_nfev"] == 20
    assert old.optimum[0] == pytest.approx(0.2, abs=1e-6)       # the closed form's μ
    # an option of another method names the method it belongs to
    with pytest.raises(OptionError, match=r"\['step'\] are options of method='mpec'.*method=Mpec\(step=0.01\)"):
        estimate(exp, spec, step=0.01)
    with pytest.raises(OptionError, match=r"\['time_limit'\] are options of method='mpec'"):
        estimate(exp, spec, Shooting(), time_limit=5)
    with pytest.raises(OptionError, match=r"\['seed', 'starts'\] are options of method='shooting'.*solves once"):
        estimate(exp, spec, "mpec", starts=3, seed=1)
    with pytest.raises(OptionError, match=r"in the options object passed as method, Shooting\(\.\.\., starts=3\)"):
        estimate(exp, spec, Shooting(), starts=3)
    with pytest.raises(OptionError, match=r"no option \['start'\].*fields of pympc.identify.Shooting"):
        estimate(exp, spec, start=3)
    with pytest.raises(OptionError, match="profile is a question for method='shooting'"):
        estimate(exp, spec, Mpec(), profile=["mu"])


def test_profiles_and_intervals_are_questions_to_the_result(ramp, tmp_path):
    from scipy.stats import norm

    t = np.linspace(0.0, 3.0, 31)
    sigma = 1e-3
    y = ramp_closed_form(t)[0] + sigma * np.random.default_rng(4).standard_normal(t.size)
    exp = Experiment(ramp, pd.DataFrame({"t": t, "block.x": y}), noise=sigma)
    spec = [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.35, (0.05, 1.0))]
    asked = estimate(exp, spec, profile=["mu"])
    res = estimate(exp, spec)
    assert res.ok and set(res.profiles) == set(asked.profiles) - {"mu"}
    prof = res.profile("mu")                   # one implementation: the same profile as estimate(profile=...)
    assert prof == asked.profiles["mu"] and res.profiles["mu"] is prof and res.profile("mu") is prof
    pd.testing.assert_frame_equal(res.table(), asked.table())
    assert res.verdict("mu")["interval"] == "profile"
    ci = res.confidence_intervals()            # at the result's level: what the verdicts print
    tab = res.table()
    for n in ("mu", "mu_s"):
        v = res.verdict(n)
        assert (ci.loc[n, "low"], ci.loc[n, "high"], ci.loc[n, "interval"]) == (v["low"], v["high"], v["interval"])
        assert ci.loc[n, "low"] < [0.2, 0.3][res.names.index(n)] < ci.loc[n, "high"]
    assert ci.loc["mu", "low"] == tab.loc["mu", "profile_low"]
    wide = res.confidence_intervals(0.99)      # another level: Wald rescaled, the profile refitted
    assert res.confidence == 0.95 and res.profiles["mu"] is prof and res.table().equals(tab)   # result unchanged
    ratio = norm.ppf(0.995) / norm.ppf(0.975)
    assert wide.loc["mu_s", "interval"] == "wald"
    assert (wide.loc["mu_s", "high"] - wide.loc["mu_s", "low"]) == pytest.approx(
        ratio * (ci.loc["mu_s", "high"] - ci.loc["mu_s", "low"]), rel=1e-9)
    assert wide.loc["mu", "interval"] == "profile"
    assert wide.loc["mu", "low"] < ci.loc["mu", "low"] and wide.loc["mu", "high"] > ci.loc["mu", "high"]
    # a loaded result keeps its profiles, but has nothing to refit new ones with
    res.save(tmp_path / "r.json")
    back = IdentificationResult.load(tmp_path / "r.json")
    assert back.profile("mu") == prof
    with pytest.raises(OptionError, match="loaded from a file"):
        back.profile("mu_s")
    with pytest.raises(OptionError, match="not an estimated parameter"):
        res.profile("m")
    with pytest.raises(OptionError, match="level must be in"):
        res.confidence_intervals(1.5)


def test_import_of_identify_stays_pyomo_free():
    code = ("import sys, pympc.identify as i; i.Shooting(); i.Mpec(step=0.01); "
            "print(sorted(k for k in sys.modules if k.startswith('pyomo')))")
    out = run_python("-c", code)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr[-2000:]


# ----------------------------------------------------------------------------- command line
def test_cli_identify_prints_the_table_and_writes_result_and_plots(tmp_path, capsys):
    from pympc.cli import main

    code = main(["identify", str(OSC), str(ROOT / "examples" / "data" / "friction_oscillator.csv"),
                 "--fit", "mu,mu_s", "--noise", "0.00706212", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "mu_s" in out and "identified" in out and "check converged      ok" in out
    d = json.loads((tmp_path / "result.json").read_text())
    est = dict(zip(d["names"], d["optimum"]))
    lo, hi = dict(zip(d["names"], d["wald_low"])), dict(zip(d["names"], d["wald_high"]))
    assert lo["mu"] < 0.3 < hi["mu"] and lo["mu_s"] < 0.4 < hi["mu_s"], est
    assert (tmp_path / "identify_fit.png").stat().st_size > 1000


def test_cli_identify_bad_input_is_a_clear_error(tmp_path, capsys):
    from pympc.cli import main

    bad = tmp_path / "bad.csv"
    bad.write_text("t,mass.x\n0,0\n0.2,0\n0.1,0\n")
    assert main(["identify", str(OSC), str(bad), "--fit", "mu"]) == 2
    assert "not sorted" in capsys.readouterr().err
    assert main(["identify", str(OSC), str(ROOT / "examples" / "data" / "friction_oscillator.csv"), "--fit", "mu",
                 "--step", "0.01"]) == 2
    assert "--step is the time step of --method mpec" in capsys.readouterr().err
    assert main(["identify", str(OSC), str(ROOT / "examples" / "data" / "friction_oscillator.csv"), "--fit", "mu",
                 "--t-end", "-1"]) == 2
    assert "no samples at t <= -1" in capsys.readouterr().err


def test_cli_identify_t_end_fits_the_first_seconds(tmp_path, capsys):
    from pympc.cli import main

    code = main(["identify", str(OSC), str(ROOT / "examples" / "data" / "friction_oscillator.csv"), "--fit", "mu",
                 "--t-end", "2", "--no-plots", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    t = pd.read_csv(ROOT / "examples" / "data" / "friction_oscillator.csv", comment="#")["t"]
    assert f"{int((t <= 2).sum())} samples of mass.x" in out and (t > 2).any()


def test_identification_notebook_executes():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    path = ROOT / "notebooks" / "identification.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute(env=python_env())
    text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
                   for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "check converged      ok" in text and "one-sided" in text and "not sorted" in text
    assert sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs) >= 3
    # the questions asked of the result: a profile, and the intervals at 99 % (Wald rescaled, profile refitted)
    assert "profile likelihood [" in text
    ci = [c for c in nb.cells if "confidence_intervals(0.99)" in c.source][0]
    table = ci.outputs[0]["data"]["text/plain"]
    assert "profile" in table and "wald" in table and table.count("identified") == 2, table


def test_exact_data_give_the_true_values_and_pass_every_check():
    """Noise-free data: the residuals are the simulator's own error, partly along J; the fit is still a
    stationary point (its Gauss–Newton step is below least_squares' xtol) and says so. A fit stopped after
    two evaluations far from the optimum is not."""
    t = np.round(np.arange(0, 501) * 0.01, 10)
    df, _ = synthetic_record(OSC, t, ["mass.x"], 0.0, 0)
    specs = [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.45, (0.05, 1.5))]
    res = estimate(Experiment(OSC, df), specs)
    np.testing.assert_allclose(res.optimum, [0.3, 0.4], rtol=1e-8)
    assert res.ok and res.checks()["gradient"][0] and res.converged, res.summary()
    early = estimate(Experiment(OSC, df), specs, Shooting(max_nfev=2))
    assert not early.checks()["gradient"][0] and not early.ok

