"""Experiment design: criteria on known matrices, the Fisher information against finite differences of the
simulator, the singular-information verdicts, the regime classification, bad input, Dask exploration, the CLI."""

import dataclasses

import numpy as np
import pytest
from conftest import MODELS, ROOT

import pympc
from pympc.design import (SingularInformation, criteria, criterion, evaluate, explore, information, load_design,
                          regimes)
from pympc.design.spec import DesignSpec
from pympc.errors import ModelError, OptionError, PympcError, SimulationError

OSC = MODELS / "friction_oscillator.toml"
SLIDE = MODELS / "cross_slide.toml"


# ---------------------------------------------------------------------------------------------- criteria
@pytest.mark.parametrize("eig", [(4.0, 1.0), (1e3, 2.0, 0.5), (7.0, 7.0)])
def test_criteria_of_known_spectra_in_any_basis(eig):
    """D, A, E, ME are functions of the eigenvalues: the same in every orthonormal basis."""
    lam = np.array(eig)
    want = {"D": np.log(lam).sum(), "A": (1 / lam).sum(), "E": lam.min(), "ME": lam.max() / lam.min()}
    rng = np.random.default_rng(len(eig))
    for _ in range(3):
        Q, _ = np.linalg.qr(rng.standard_normal((lam.size, lam.size)))
        F = Q @ np.diag(lam) @ Q.T
        got = criteria(F)
        for k, v in want.items():
            assert got[k] == pytest.approx(v, rel=1e-10), k
            assert criterion(F, k) == pytest.approx(v, rel=1e-10)


@pytest.mark.parametrize("F", [np.zeros((2, 2)), np.diag([1.0, 0.0]), np.outer([1.0, 2.0], [1.0, 2.0]),
                               np.diag([1.0, 1e-14])])
def test_singular_matrices_have_no_finite_criterion(F):
    """Exactly or numerically singular (rank-deficient, a zero column): D = −inf, A = ME = inf, E = 0, and asking raises."""
    v = criteria(F)
    assert v == {"D": -np.inf, "A": np.inf, "E": 0.0, "ME": np.inf}
    for k in ("D", "A", "E", "ME"):
        with pytest.raises(SingularInformation, match="singular"):
            criterion(F, k)


def test_unknown_criterion_is_an_option_error():
    with pytest.raises(OptionError, match="criterion must be one of"):
        criterion(np.eye(2), "G")


# ---------------------------------------------------------------------------------------------- the information
def _fd_fim(model, names, values, t, outputs, sigma, h=1e-6):
    """F from central differences of pympc.simulate's outputs (an independent route: no sensitivities)."""
    cols = []
    for n in names:
        ys = []
        for s in (1, -1):
            v = {**values, n: values[n] * (1 + s * h)}
            tr = pympc.simulate(model, (t[0], t[-1]), t_eval=t, params=v)
            rows = np.searchsorted(tr.t, t, side="right") - 1
            ys.append(np.column_stack([tr.output(o)[rows] for o in outputs]).ravel())
        cols.append((ys[0] - ys[1]) / (2 * h * values[n]))
    J = np.column_stack(cols) / sigma
    return J.T @ J


@pytest.mark.parametrize("model, names, values, outputs", [
    (OSC, ["mu", "mu_s"], {"mu": 0.3, "mu_s": 0.4, "F0": 10.0, "w": 1.0}, ["mass.x"]),            # stick-slip
    (OSC, ["mu", "mu_s", "K"], {"mu": 0.3, "mu_s": 0.4, "F0": 6.0, "w": 1.5, "K": 15.0}, ["mass.x", "mass.x_dot"]),
    (SLIDE, ["mu1", "mu2"], {"mu1": 0.3, "mu2": 0.5, "P": 0.0}, ["crosshead.x", "particle.y"]),  # two slots, a stop
])
def test_fim_matches_finite_differences_of_the_simulator(model, names, values, outputs):
    """Through breakaways and stops, F from the sensitivities equals F from central differences of positions
    (positions are C¹ in θ while the event sequence stays: the steps are far too small to change it)."""
    t = np.linspace(0.0, 4.0 if model == OSC else 1.0, 41)
    sigma = 0.01
    used = {k: v for k, v in values.items()}
    info, tr = information(model, names, used, t, outputs, {o: ("sigma", sigma) for o in outputs})
    assert len(tr.events) >= 2                                 # events are crossed
    F_fd = _fd_fim(model, names, used, t, outputs, sigma)
    assert np.allclose(info.fim, F_fd, rtol=2e-4, atol=1e-6 * np.abs(F_fd).max())
    assert np.allclose(info.stderr, np.sqrt(np.diag(np.linalg.inv(F_fd))), rtol=1e-3)


def test_relative_noise_and_prior_information():
    """σ relative to the peak scales F by 1/σ²; a prior sd adds 1/sd² to the diagonal; scaling uses θ."""
    t = np.linspace(0, 3, 31)
    vals = {"mu": 0.3, "mu_s": 0.4}
    a, tr = information(OSC, ["mu", "mu_s"], vals, t, ["mass.x"], {"mass.x": ("sigma", 0.01)})
    peak = np.abs(tr.output("mass.x")).max()
    b, _ = information(OSC, ["mu", "mu_s"], vals, t, ["mass.x"], {"mass.x": ("relative", 0.02)})
    assert np.allclose(b.fim, a.fim * (0.01 / (0.02 * peak)) ** 2, rtol=1e-6)
    c, _ = information(OSC, ["mu", "mu_s"], vals, t, ["mass.x"], {"mass.x": ("sigma", 0.01)}, prior_sd={"mu": 0.1})
    assert np.allclose(c.fim - a.fim, np.diag([100.0, 0.0]), atol=1e-8 * np.abs(a.fim).max())
    assert np.allclose(a.scaled, a.fim * np.outer([0.3, 0.4], [0.3, 0.4]))


# ---------------------------------------------------------------------------------------------- regimes and verdicts
def _osc_with_velocity(tmp_path):
    """The oscillator with an initial velocity parameter v0 (a design variable)."""
    text = OSC.read_text().replace('mass = "m"', 'mass = "m"\nvelocity = ["v0", 0]').replace(
        "mu_s = 0.4 ", "mu_s = 0.4 \nv0 = 0.0 ")
    path = tmp_path / "oscillator_v0.toml"
    path.write_text(text)
    assert "v0" in pympc.load_model(path).parameters
    return path


def test_regimes_and_the_reason_a_parameter_is_not_informed(tmp_path):
    """Always sticks: neither μ nor μ_s (μ_s only bounded below); never sticks: no μ_s; stick-slip: both."""
    model = _osc_with_velocity(tmp_path)
    t = np.linspace(0, 0.5, 26)
    cases = {"always sticks": {"F0": 2.0, "v0": 0.0}, "never sticks": {"F0": 0.0, "v0": 3.0},
             "stick-slip": {"F0": 10.0, "v0": 0.0}}
    for regime, design in cases.items():
        tt = t if regime != "stick-slip" else np.linspace(0, 4, 41)
        info, tr = information(model, ["mu", "mu_s"], {"mu": 0.3, "mu_s": 0.4, **design}, tt, ["mass.x"],
                               {"mass.x": ("sigma", 0.01)})
        assert regimes(tr) == {"slot": regime} and info.regimes == {"slot": regime}
        if regime == "stick-slip":
            assert not info.singular and np.all(np.isfinite(info.stderr))
            assert info.criterion("D") == pytest.approx(np.log(np.linalg.det(info.scaled)), rel=1e-9)
            continue
        assert info.singular
        with pytest.raises(SingularInformation, match="mu_s") as exc:
            info.criterion("D")
        if regime == "never sticks":
            assert set(info.not_informed) == {"mu_s"} and "never sticks" in info.not_informed["mu_s"]
            assert np.isfinite(info.stderr[0]) and np.isinf(info.stderr[1])
            assert "never sticks" in str(exc.value)
        else:
            assert set(info.not_informed) == {"mu", "mu_s"}
            assert "never slips" in info.not_informed["mu"]
            assert "never breaks away" in info.not_informed["mu_s"] and "mu_s ≥" in info.not_informed["mu_s"]


# ---------------------------------------------------------------------------------------------- specs and bad input
def _spec(**tables):
    data = {"design": {"model": str(OSC), "parameters": ["mu", "mu_s"], "t_end": 4.0, "dt": 0.1,
                       "outputs": ["mass.x"]},
            "noise": {"mass.x": 0.01}}
    for k, v in tables.items():
        data[k] = {**data.get(k, {}), **v} if k == "design" else v
    return DesignSpec.from_dict(data, where="spec.toml")


@pytest.mark.parametrize("tables, match", [
    ({"grid": {"F00": [1.0, 2.0]}}, r"\[grid\]: design variable 'F00' is not a parameter of model"),
    ({"grid": {"mu": [0.2, 0.3]}}, r"design variable 'mu' is an estimated parameter"),
    ({"sample": {"n": 4, "bounds": {"Fo": [1, 2]}}}, r"\[sample\] bounds: design variable 'Fo'"),
    ({"optimize": {"variables": {"wx": [1, 2]}}}, r"\[optimize\] variables: design variable 'wx'"),
    ({"design": {"parameters": ["mu", "nu"]}}, r"'nu' is not a parameter of model"),
    ({"design": {"outputs": ["mass.q"]}}, r"'mass.q' is not an output"),
    ({"noise": {}}, r"no noise level for measured output\(s\) \['mass.x'\]"),
    ({"noise": {"mass.x": -1.0}}, r"noise level must be > 0"),
    ({"prior": {"mu_s": {"normal": [0.4, 0.0]}}}, r"sd > 0"),
    ({"design": {"criterion": "Q"}}, r"criterion must be one of"),
    ({"design": {"dt": 5.0}}, r"fewer than two samples"),
    ({"grid": {"F0": {"start": 2, "stop": 1, "step": 1}}}, r"F0 has no values"),
])
def test_bad_specs_name_table_and_key(tables, match):
    with pytest.raises(OptionError, match=match):
        _spec(**tables)


def test_missing_model_and_unknown_point_variable():
    with pytest.raises(ModelError, match="no model file"):
        _spec(design={"model": "nowhere.toml"})
    with pytest.raises(OptionError, match="design variable 'Fx' is not a design variable"):
        evaluate(_spec(), {"Fx": 1.0})


def test_a_space_where_every_point_fails_keeps_the_rows():
    spec = _spec(grid={"F0": [8.0, 10.0]}, options={"max_events": 1})
    with pytest.raises(SimulationError, match="every explored design point \\(2\\) failed") as exc:
        explore(spec, serial=True)
    assert len(exc.value.results) == 2 and (exc.value.results["status"] == "failed").all()
    assert exc.value.results["error"].str.contains("EVENT_LIMIT").all()


def test_prior_draws_average_and_a_singular_draw_makes_the_design_singular():
    """Over a μ_s prior: mean F and mean criteria; a design that sticks for some draws is singular, and says which."""
    spec = _spec(prior={"mu_s": {"uniform": [0.35, 0.45]}}, design={"draws": 3, "seed": 1})
    draws = spec.prior_draws()
    assert len(draws) == 3 and all(0.35 <= d["mu_s"] <= 0.45 and d["mu"] == 0.3 for d in draws)
    info = evaluate(spec, {"F0": 10.0})
    singles = [evaluate(dataclasses.replace(spec, distribution={}, prior=d), {"F0": 10.0}) for d in draws]
    assert np.allclose(info.fim, np.mean([s.fim for s in singles], axis=0))
    assert info.values["D"] == pytest.approx(np.mean([s.values["D"] for s in singles]))
    # the threshold F0 = μ_s m g lies inside the prior for F0 = 4.0: some draws never break away
    edge = evaluate(spec, {"F0": 0.4 * 9.8})
    stuck = [d for d in draws if d["mu_s"] * 9.8 >= 0.4 * 9.8]
    assert edge.singular == bool(stuck)
    if stuck:
        assert "prior draw" in edge.not_informed["mu_s"]


def test_exploration_on_dask_equals_serial():
    """client.map over batches on a one-worker LocalCluster gives the serial rows (specs pickle)."""
    spec = _spec(grid={"F0": [2.0, 10.0], "w": [1.0]})
    a = explore(spec, serial=True)
    b = explore(spec, n_workers=1)
    assert list(a["status"]) == ["singular", "ok"] and list(a["regime"]) == ["always sticks", "stick-slip"]
    assert np.array_equal(a["D"].to_numpy(), b["D"].to_numpy())
    assert "mu" in a.loc[0, "not_informed"] and "never slips" in a.loc[0, "not_informed"]


def test_cli_exit_statuses(tmp_path, capsys):
    from pympc.cli import main
    spec = ROOT / "examples" / "design_oscillator.toml"
    args = ["design", str(OSC), str(spec), "--serial", "--out", str(tmp_path)]
    assert main(args + ["--set", "F0=10"]) == 0
    assert "predicted se" in capsys.readouterr().out
    assert main(args + ["--set", "F0=1"]) == 1                    # always sticks for every prior draw
    out = capsys.readouterr().out
    assert "not informed  mu:" in out and "never slips" in out
    assert main(args + ["--set", "F00=1"]) == 2
    assert "design variable 'F00'" in capsys.readouterr().err
    assert main(["design", str(OSC), str(tmp_path / "none.toml")]) == 2


def test_sample_exploration_stays_in_its_bounds():
    spec = _spec(sample={"method": "sobol", "n": 4, "seed": 3, "bounds": {"F0": [5.0, 12.0], "w": [0.5, 2.0]}})
    df = explore(spec, serial=True)
    assert len(df) == 4 and df["F0"].between(5.0, 12.0).all() and df["w"].between(0.5, 2.0).all()
    assert (df["status"] == "ok").all() and (df["regime"] == "stick-slip").all()


def test_optimize_ends_at_the_best_design_it_evaluated_and_reports_its_information():
    """Multistart Nelder–Mead: the answer is the minimum of the loss over every evaluated design, inside the box,
    no worse than the best initial point, and its information is the one evaluate() gives there."""
    from pympc.design import optimize
    spec = _spec(optimize={"variables": {"F0": [2.0, 12.0], "w": [0.5, 2.5]}, "starts": 2, "initial": 4,
                           "maxfev": 8})
    res = optimize(spec, serial=True)
    h = res.history
    assert len(h) > 4 and res.value == pytest.approx(h.loc[h["loss"].idxmin(), "D"])
    assert -res.value <= h["loss"].iloc[:4].min()
    assert 2.0 <= res.design["F0"] <= 12.0 and 0.5 <= res.design["w"] <= 2.5
    again = evaluate(spec, {"F0": res.design["F0"], "w": res.design["w"]})
    assert again.values["D"] == pytest.approx(res.value) and not res.information.singular
    assert len(res.starts) == 2 and (res.starts["nfev"] <= 8 + 1).all()


def test_criteria_follow_pyomo_contrib_doe_on_pympc_fims():
    """pyomo.contrib.doe's own metrics (log10 of det F, tr F⁻¹, λ_min, cond F) of pympc's FIMs give our D, A, E, ME."""
    doe_utils = pytest.importorskip("pyomo.contrib.doe.utils")
    t = np.linspace(0, 4, 41)
    for design in ({"F0": 10.0, "w": 1.0}, {"F0": 5.0, "w": 2.0}):
        info, _ = information(OSC, ["mu", "mu_s"], {"mu": 0.3, "mu_s": 0.4, **design}, t, ["mass.x"],
                              {"mass.x": ("sigma", 0.01)})
        for F in (info.fim, info.scaled):
            m = doe_utils.get_FIM_metrics(F)
            ours = criteria(F)
            assert ours["D"] == pytest.approx(np.log(10) * m["log10(D-Optimality)"], rel=1e-9)
            assert ours["A"] == pytest.approx(10 ** m["log10(A-Optimality)"], rel=1e-9)
            assert ours["E"] == pytest.approx(10 ** m["log10(E-Optimality)"], rel=1e-9)
            assert ours["ME"] == pytest.approx(10 ** m["log10(Modified E-Optimality)"], rel=1e-9)


def test_the_design_map_explains_every_line_and_blank():
    """Markers per regime, the boundary between regimes and the blank (singular) cells all have legend entries."""
    import pandas as pd

    from pympc.design import plot_design_map
    rows = [{"F0": x, "w": y, "D": (np.nan if x == 1.0 else x + y),
             "regime.slot": ("always sticks" if x == 1.0 else "stick-slip")} for x in (1.0, 2.0, 3.0) for y in (1.0, 2.0)]
    fig = plot_design_map(pd.DataFrame(rows), "F0", "w", "D")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert {"always sticks", "stick-slip", "boundary between regimes"} <= set(labels)
    assert any(label.startswith("blank: no D") for label in labels)
