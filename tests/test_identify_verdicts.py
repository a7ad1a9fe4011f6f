"""Identification verdicts follow from the data (issue 25) and starts/bounds come from the user (issue 26.1).

Every verdict is checked against data generated with known parameters; the one-sided upper bound of a static
coefficient against its closed form (the smallest stick ratio |F_applied|/(m g) at a velocity reversal).
"""

import json

import numpy as np
import pandas as pd
import pytest
from conftest import MODELS

from pympc import simulate
from pympc.cli import EXIT_ERROR, EXIT_NOT_IDENTIFIED, EXIT_OK, main
from pympc.errors import OptionError, SimulationError
from pympc.identify import Experiment, Mpec, Parameter, Shooting, estimate, synthetic_record
from pympc.identify.verdict import STATUSES

OSC = MODELS / "friction_oscillator.toml"
T = np.round(np.arange(0, 81) * 0.05, 10)          # 4 s at 20 Hz: stick, breakaway, slip, stick again


@pytest.fixture(scope="module")
def record():
    df, sigma = synthetic_record(OSC, T, ["mass.x"], 0.01, 3)
    return df, sigma["mass.x"]


def _run(capsys, *argv):
    code = main(["identify", *map(str, argv)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


# ----------------------------------------------------------------------------- too little data
def test_one_sample_for_two_parameters_is_not_identifiable_and_exits_3(record, tmp_path, capsys):
    df, sigma = record
    one = df[df.t == 1.5]
    res = estimate(Experiment(OSC, one, noise=sigma), "mu,mu_s")
    assert res.identifiability["informative"] <= 1
    assert len(res.identifiability["singular_values"]) == 2 and min(res.identifiability["singular_values"]) == 0
    for n in ("mu", "mu_s"):
        assert res.status_of(n)[0] == "not identifiable", res.summary()
    tab = res.table()
    assert tab[["estimate", "wald_low", "wald_high"]].isna().all().all()
    assert not res.reliable and not res.checks()["identifiable"][0]
    one.to_csv(tmp_path / "one.csv", index=False)
    code, out, _ = _run(capsys, OSC, tmp_path / "one.csv", "--fit", "mu,mu_s", "--noise", sigma, "--no-plots",
                        "--out", tmp_path / "o")
    assert code == EXIT_NOT_IDENTIFIED == 3, out
    assert "identified" not in out.replace("not identifiable", "").replace("not identified", ""), out
    d = json.loads((tmp_path / "o" / "result.json").read_text())
    assert {v["status"] for v in d["verdicts"].values()} == {"not identifiable"}
    code, out, _ = _run(capsys, OSC, tmp_path / "one.csv", "--fit", "mu,mu_s", "--noise", sigma, "--no-plots",
                        "--out", tmp_path / "o", "--accept-unidentifiable")
    assert code == EXIT_OK and "--accept-unidentifiable" in out


# ----------------------------------------------------------------------------- stated noise contradicted
@pytest.mark.parametrize("factor", [30.0, 700.0])
def test_understated_noise_makes_every_interval_unreliable(record, factor, tmp_path, capsys):
    df, sigma = record
    exp = Experiment(OSC, df, noise=sigma / factor)
    res = estimate(exp, [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.45, (0.05, 1.5))])
    assert res.ok, res.summary()                     # the fit itself is fine ...
    assert not res.checks()["noise"][0]              # ... the residuals are `factor` times the stated noise
    tab = res.table()
    assert (tab["status"] == "unreliable").all(), res.summary()
    assert tab[["wald_low", "wald_high", "stderr"]].isna().all().all()
    assert np.isfinite(tab["estimate"]).all()        # the estimate is shown, no interval is
    # the same data with the true noise: identified, truth inside
    good = estimate(Experiment(OSC, df, noise=sigma), [Parameter("mu", 0.25, (0.05, 1.0)),
                                                       Parameter("mu_s", 0.45, (0.05, 1.5))], confidence=0.99)
    assert good.reliable and good.checks()["noise"][0], good.summary()
    gt = good.table()
    assert (gt["status"] == "identified").all(), good.summary()
    assert gt.loc["mu", "wald_low"] < 0.3 < gt.loc["mu", "wald_high"]
    df.to_csv(tmp_path / "d.csv", index=False)
    code, out, _ = _run(capsys, OSC, tmp_path / "d.csv", "--fit", "mu,mu_s", "--noise", sigma / factor,
                        "--start", "mu=0.25,mu_s=0.45", "--no-plots", "--out", tmp_path / "o")
    assert code == EXIT_NOT_IDENTIFIED, out
    assert "unreliable" in out and "check noise          FAIL" in out


# ----------------------------------------------------------------------------- conditioning
def test_a_barely_informed_parameter_is_not_identifiable_whatever_its_wald_interval(record):
    """Data ending just after the breakaway: μ_s (the breakaway time) is determined, μ barely (a short slip).
    Whatever the numbers, a parameter is 'identified' only when its interval fits in its box."""
    df, sigma = record
    tr = simulate(OSC, (0.0, 4.0))
    tb = next(ev.time for ev in tr.events if ev.kind.name == "BREAKAWAY")
    short = df[df.t <= tb + 0.06]
    res = estimate(Experiment(OSC, short, noise=sigma), [Parameter("mu", 0.25, (0.05, 1.0)),
                                                          Parameter("mu_s", 0.45, (0.05, 1.5))])
    for k, n in enumerate(res.names):
        status = res.status_of(n)[0]
        assert status in STATUSES
        half = 0.5 * (res.wald_high[k] - res.wald_low[k])
        width = res.bounds[k, 1] - res.bounds[k, 0]
        if status in ("identified", "at bound"):
            assert half <= width and res.table().loc[n, "wald_low"] >= res.bounds[k, 0]
        elif np.isfinite(half):
            assert half > width or n in res.identifiability["not_identifiable"] or n in res.stick
    assert res.checks()["identifiable"][0] == all(res.status_of(n)[0] in ("identified", "at bound")
                                                  for n in res.names)


def test_a_wald_interval_wider_than_the_box_is_not_an_identification(record):
    df, sigma = record
    res = estimate(Experiment(OSC, df, noise=sigma), "mu,mu_s")
    assert res.status_of("mu")[0] == "identified"
    res.stderr = res.stderr * 1e5                    # the same fit, as if the Jacobian were 1e5 times weaker
    res.wald_low, res.wald_high = res.optimum - 1.96 * res.stderr, res.optimum + 1.96 * res.stderr
    for n in res.names:
        status, why = res.status_of(n)
        assert status == "not identifiable" and "ill-conditioned" in why
    assert not res.checks()["identifiable"][0] and not res.reliable
    assert res.table()[["wald_low", "wald_high"]].isna().all().all()


def test_mu_s_equal_to_mu_gets_one_verdict_with_or_without_profile_and_noise():
    """μ_s = μ in the truth: the fit ends with μ_s − μ at its bound 0, where the sensitivity to μ_s vanishes.
    Whether a profile is asked for and whether the noise is stated, μ_s gets the same verdict (from its
    profile, computed automatically) and the interval holds the truth."""
    df, sigma = synthetic_record(OSC, T, ["mass.x"], 0.01, 3, mu_s=0.3)
    specs = [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.45, (0.05, 1.5))]
    seen = set()
    for noise in (None, sigma["mass.x"]):
        for profile in ((), ("mu_s",)):
            res = estimate(Experiment(OSC, df, noise=noise), specs, profile=profile)
            v = res.verdict("mu_s")
            seen.add(v["status"])
            assert v["status"] == "identified" and v["interval"] == "profile", res.summary()
            assert v["low"] <= 0.3 < v["high"] and v["high"] - v["low"] < 0.1
            assert res.verdict("mu")["status"] == "identified"
            assert ("mu_s" in res.method.get("auto_profiled", [])) == (not profile)
    assert seen == {"identified"}


# ----------------------------------------------------------------------------- one-sided bounds
def _reversal_ratio(tr, K=15.0, F0=10.0, w=1.0, m=1.0, g=9.8):
    """min over velocity reversals of |F0 sin(wt) − K x|/(m g): the μ_s at which the block would stick there."""
    ratios = []
    for ev in tr.events:
        if ev.kind.name == "SLIP_STOP":
            i = int(np.argmin(np.abs(tr.t - ev.time)))
            assert abs(tr.t[i] - ev.time) < 1e-9          # the event is a row of the trajectory
            ratios.append(abs(F0 * np.sin(w * ev.time) - K * tr.q[i, 0]) / (m * g))
    return min(ratios)


def test_data_that_never_stick_bound_mu_s_from_above(tmp_path):
    """Launched at 3 m/s, the block slips through one velocity reversal (t = 0.39 s) and sticks only at 0.92 s:
    the first 0.85 s never stick, so they prove μ_s < |F|/|λ| at the reversal, not a value."""
    path = tmp_path / "moving.toml"
    path.write_text(OSC.read_text().replace('mass = "m"\n', 'mass = "m"\nvelocity = [3.0, 0]\n', 1))
    t = np.round(np.arange(0, 86) * 0.01, 10)
    df, sigma = synthetic_record(path, t, ["mass.x"], 0.005, 5, mu_s=0.35)
    exp = Experiment(path, df, noise=sigma["mass.x"])
    res = estimate(exp, [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.5, (0.05, 1.5))])
    assert res.stick["mu_s"]["kind"] == "upper bound", res.summary()
    v = res.verdict("mu_s")
    assert v["status"] == "one-sided" and v["side"] == "above"
    bound = v["bound"]
    # oracle: the closed-form stick ratio at the reversal of the fitted trajectory
    tr = simulate(path, (0.0, 0.85), params={"mu": float(res.optimum[0]), "mu_s": float(res.optimum[1])},
                  t_eval=t)
    assert not np.any(tr.motions[:, 0] == 0) and sum(ev.kind.name == "SLIP_STOP" for ev in tr.events) == 1
    assert bound == pytest.approx(_reversal_ratio(tr), rel=2e-3)
    assert 0.35 < bound                                   # the truth (never sticks here) is below the bound
    assert res.table().loc["mu_s", "upper_bound_only"] == bound
    assert np.isnan(res.table().loc["mu_s", "estimate"])
    assert "bounded above" in res.summary() and "does not depend" not in res.summary()
    assert res.status_of("mu")[0] == "identified", res.summary()
    assert res.table().loc["mu", "wald_low"] < 0.3 < res.table().loc["mu", "wald_high"]


def test_cli_stick_only_record_exits_3_with_a_lower_bound_in_the_json(tmp_path, capsys):
    t = np.round(np.arange(0, 61) * 0.1, 10)
    pd.DataFrame({"t": t, "mass.x": 1e-3 * np.random.default_rng(0).standard_normal(t.size)}).to_csv(
        tmp_path / "still.csv", index=False)
    code, out, _ = _run(capsys, OSC, tmp_path / "still.csv", "--fit", "mu,mu_s", "--set", "F0=3", "--noise", "1e-3",
                        "--no-plots", "--out", tmp_path / "o")
    assert code == EXIT_NOT_IDENTIFIED, out
    d = json.loads((tmp_path / "o" / "result.json").read_text())
    v = d["verdicts"]
    assert v["mu"]["status"] == "not identifiable"
    assert v["mu_s"]["status"] == "one-sided" and v["mu_s"]["side"] == "below"
    assert 3.0 * np.cos(0.05) / 9.8 <= v["mu_s"]["bound"] <= 3.0 / 9.8
    assert "≥ 0.30" in out and "(bounded below)" in out


# ----------------------------------------------------------------------------- multistart
def test_multistart_check_needs_the_best_cost_twice_and_says_why_starts_failed(record, monkeypatch):
    from pympc.identify import shooting

    real = shooting.simulate_experiment

    def fragile(exp, values, sensitivities=None):
        if values["mu"] > 0.35:
            raise SimulationError("simulated failure for mu > 0.35")
        return real(exp, values, sensitivities)

    df, sigma = record
    exp = Experiment(OSC, df, noise=sigma)
    specs = [Parameter("mu", 0.25, (0.05, 1.0)), Parameter("mu_s", 0.45, (0.05, 1.5))]
    monkeypatch.setattr(shooting, "simulate_experiment", fragile)
    res = estimate(exp, specs, Shooting(starts=4, seed=2))
    st = res.starts
    reached = int((st["cost"] <= st["cost"].min() * (1 + 1e-6) + 1e-9).sum())
    ok, detail = res.checks()["multistart"]
    assert ok == (reached >= 2) and f"{reached} of 4" in detail
    assert (st["status"] == "failed").sum() >= 1 and "simulated failure" in detail
    monkeypatch.setattr(shooting, "simulate_experiment", real)
    one = estimate(exp, specs)
    assert one.checks()["multistart"][0] and "not applicable" in one.checks()["multistart"][1]


BOUNDED = """
[model]
name = "bounded_oscillator"
[parameters]
m = 1.0
K = 15.0
F0 = 10.0
w = 1.0
g = 9.8
mu = {value = 0.3, bounds = [0.1, 0.45]}
mu_s = {value = 0.4, bounds = [0.2, 0.6]}
[[bodies]]
name = "mass"
type = "particle"
mass = "m"
[[joints]]
name = "slot"
type = "slot"
slider = "mass"
guide = "ground"
direction = [1, 0]
mu = "mu"
mu_s = "mu_s"
[[forces]]
name = "gravity"
type = "gravity"
g = [0, "-g"]
[[forces]]
name = "spring"
type = "spring"
body_a = "mass"
body_b = "ground"
k = "K"
[[forces]]
name = "drive"
type = "force"
body = "mass"
value = ["F0*sin(w*t)", 0]
"""


def test_starts_lie_inside_the_model_files_declared_bounds(record, tmp_path):
    path = tmp_path / "bounded.toml"
    path.write_text(BOUNDED, encoding="utf-8")
    df, sigma = record
    res = estimate(Experiment(path, df, noise=sigma), "mu,mu_s", Shooting(starts=8, seed=0))
    st = res.starts
    assert st["mu_start"].between(0.1, 0.45).all() and st["mu_s_start"].between(0.2, 0.6).all()
    assert (st["mu_s_start"] >= st["mu_start"]).all()
    assert not st["message"].astype(str).str.contains("outside its bounds").any()
    assert (st["status"] != "failed").all(), st
    assert res.bounds.tolist() == [[0.1, 0.45], [0.2, 0.6]]
    with pytest.raises(OptionError, match="declares"):
        estimate(Experiment(path, df, noise=sigma), [Parameter("mu", 0.3, (0.0, 1.0))])


# ----------------------------------------------------------------------------- starts and bounds from the CLI
def test_cli_start_and_bounds_recover_the_truth_from_elsewhere(record, tmp_path, capsys):
    df, sigma = record
    df.to_csv(tmp_path / "d.csv", index=False)
    code, out, err = _run(capsys, OSC, tmp_path / "d.csv", "--fit", "mu,mu_s", "--noise", sigma,
                          "--start", "mu=0.15", "--start", "mu_s=0.6", "--bounds", "mu=0.05:0.9",
                          "--bounds", "mu_s=0.1:1.2", "--no-plots", "--out", tmp_path / "o")
    assert code == EXIT_OK, out + err
    d = json.loads((tmp_path / "o" / "result.json").read_text())
    st = pd.DataFrame(d["starts"]["data"], columns=d["starts"]["columns"])
    assert st.loc[0, "mu_start"] == 0.15 and st.loc[0, "mu_s_start"] == 0.6     # started away from the truth
    assert [list(map(float, b)) for b in d["bounds"]] == [[0.05, 0.9], [0.1, 1.2]]
    for name, true in (("mu", 0.3), ("mu_s", 0.4)):
        v = d["verdicts"][name]
        assert v["status"] == "identified" and v["low"] < true < v["high"], v
    # from the Python API the same start and bounds give the same answer
    res = estimate(Experiment(OSC, df, noise=sigma), [Parameter("mu", 0.15, (0.05, 0.9)),
                                                      Parameter("mu_s", 0.6, (0.1, 1.2))])
    np.testing.assert_allclose(res.optimum, [v for v in d["optimum"]], rtol=1e-6)


def test_cli_start_bounds_and_set_refuse_what_they_cannot_mean(record, tmp_path, capsys):
    df, sigma = record
    df.to_csv(tmp_path / "d.csv", index=False)
    base = [OSC, tmp_path / "d.csv", "--fit", "mu,mu_s", "--no-plots", "--out", tmp_path / "o"]
    for extra, msg in ((["--set", "mu=0.15"], "--start mu="), (["--start", "K=3"], "not fitted"),
                       (["--start", "mu=abc"], "not a number"), (["--start", "mu=nan"], "finite"),
                       (["--bounds", "mu=0.1"], "LOW:HIGH"), (["--bounds", "mu=0.5:0.1"], "empty"),
                       (["--start", "mu=0.9", "--bounds", "mu=0:0.5"], "outside its bounds"),
                       (["--starts", "3", "--bounds", "mu=0:"], "finite bounds")):
        code, out, err = _run(capsys, *base, *extra)
        assert code == EXIT_ERROR and msg in err, (extra, err)


def test_cli_identify_help_says_where_every_default_comes_from(capsys):
    with pytest.raises(SystemExit):
        main(["identify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for phrase in ("--start", "value in the model file", "--bounds", "declares", "--starts", "(default: 1)",
                   "--seed", "(default: 0)", "Exit status", "3 the fit is done", "--accept-unidentifiable"):
        assert phrase in text, phrase


# ----------------------------------------------------------------------------- bad input
def test_bad_identification_input_is_a_clear_error(record, tmp_path):
    df, sigma = record
    (tmp_path / "h.csv").write_text("t,mass.x\n")
    with pytest.raises(OptionError, match="no rows"):
        Experiment(OSC, tmp_path / "h.csv")
    with pytest.raises(OptionError, match="'kinetic'.*no sensitivity.*mass.x"):
        Experiment(OSC, df.assign(kinetic=0.0))
    with pytest.raises(OptionError, match="fixed must be a dict"):
        Experiment(OSC, df, fixed=[("F0", 3.0)])
    with pytest.raises(OptionError, match=r"fixed\['F0'\] must be a number.*string"):
        Experiment(OSC, df, fixed={"F0": "3"})
    with pytest.raises(OptionError, match="noise must be a number"):
        Experiment(OSC, df, noise="0.01")
    exp = Experiment(OSC, df, noise=sigma)
    for parameters, msg in ((0.25, "parameters must be"), (["mu", 0.25], "parameters must be names"),
                            ([Parameter("mu", "0.25")], "initial must be a number"),
                            ([Parameter("mu", np.inf)], "finite"),
                            ([Parameter("mu", 0.3, (np.nan, 1.0))], "lower bound must be"),
                            ([Parameter("mu", 0.3, "0:1")], "a pair")):
        with pytest.raises(OptionError, match=msg):
            estimate(exp, parameters)
    with pytest.raises(OptionError, match="time_limit"):
        Mpec(time_limit=float("nan"))
    with pytest.raises(OptionError, match="starts must be an integer"):
        Shooting(starts="4")
