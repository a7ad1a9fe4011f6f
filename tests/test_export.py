"""The path a researcher walks (issue 26): a run's table at the times asked for, slot outputs, plots, printing."""

import re

import numpy as np
import pandas as pd
import pytest
from conftest import MODELS, ROOT

import pympc
from pympc.dynamics.plots import EVENT_STYLE, output_unit, trajectory_figures
from pympc.errors import OptionError, SimulationError
from pympc.mechanics import Gravity, Particle, Slot, System

OSC = MODELS / "friction_oscillator.toml"
G = 9.81


@pytest.fixture(scope="module")
def osc():
    """10 s of the oscillator on 201 requested times: 9 transitions, none of them on the grid."""
    t = np.linspace(0.0, 10.0, 201)
    return t, pympc.simulate(OSC, (0.0, 10.0), t_eval=t)


# ------------------------------------------------------------------ rows at the requested times
def test_dataframe_holds_exactly_the_requested_times(osc):
    t, tr = osc
    assert len(tr.events) > 5 and len(tr.t) > len(t)           # the arrays keep both rows of every event
    df = tr.to_dataframe()
    assert np.array_equal(df["t"].to_numpy(), t)               # each requested time once, nothing else
    rows = tr.sample_rows()
    assert np.array_equal(df["mass.x"].to_numpy(), tr.q[rows, 0])
    every = tr.to_dataframe(events=True)
    assert len(every) == len(tr.t) and every["sample"].sum() == len(t)
    for e in tr.events[1:]:                                    # each event: two rows, before and after, marked
        at = every[every["t"] == e.time]
        assert len(at) == 2 and set(at["event"]) == {e.kind.name} and not at["sample"].any()
    assert (every.loc[~every["t"].isin([e.time for e in tr.events]), "event"] == "").all()


@pytest.mark.parametrize("grid", [np.linspace(0.05, 9.95, 100), np.array([0.3, 4.0, 10.0]), np.array([0.0, 7.5])])
def test_times_without_the_span_ends_are_not_added(grid):
    tr = pympc.simulate(OSC, (0.0, 10.0), t_eval=grid)
    assert tr.t[0] == 0.0 and tr.t[-1] == 10.0                 # the arrays start and end at the span
    assert np.array_equal(tr.to_dataframe()["t"].to_numpy(), grid)


def test_a_run_that_stops_early_exports_the_times_it_reached(osc):
    t, _ = osc
    tr = pympc.simulate(OSC, (0.0, 10.0), t_eval=t, max_events=3)
    assert tr.status.name == "EVENT_LIMIT" and tr.t[-1] < 10.0
    df = tr.to_dataframe()
    assert np.array_equal(df["t"].to_numpy(), t[t <= tr.t[-1]])
    with pytest.raises(SimulationError, match="did not reach"):
        tr.sample_rows([9.0])


@pytest.mark.parametrize("t_eval, needle", [([0.0, 2.0, 1.0], "strictly increasing"), ([0.0, 1.0, 1.0], "increasing"),
                                            ([0.0, 11.0], "outside the span"), ([-1.0, 1.0], "outside the span"),
                                            ([0.0, np.nan], "finite"), ([], "non-empty")])
def test_bad_t_eval_is_an_option_error(t_eval, needle):
    with pytest.raises(OptionError, match=needle):
        pympc.simulate(OSC, (0.0, 10.0), t_eval=t_eval)


def test_a_computed_grid_a_rounding_past_the_end_is_accepted():
    grid = np.arange(0.0, 2.0 + 1e-9, 0.1)
    grid[-1] = 2.0 * (1 + 4e-16)
    tr = pympc.simulate(OSC, (0.0, 2.0), t_eval=grid)
    assert len(tr.to_dataframe()) == len(grid)


def test_csv_is_data_for_an_experiment(osc, tmp_path):
    _, tr = osc
    path = tr.to_csv(tmp_path / "run.csv")
    text = path.read_text()
    assert text.startswith("# pympc trajectory") and "mu=0.3" in text
    back = pd.read_csv(path, comment="#")
    # lossless: every float reads back exactly
    pd.testing.assert_frame_equal(back, tr.to_dataframe(), check_dtype=False, check_exact=True)
    from pympc.identify import Experiment
    exp = Experiment(OSC, path, outputs=["mass.x", "slot.slip_velocity"])
    assert len(exp.t) == 201
    with pytest.raises(OptionError, match="appears twice"):   # what the event rows did before (issue 26)
        Experiment(OSC, tr.to_dataframe(events=True)[["t", "mass.x"]])


def test_save_and_load_keep_the_requested_times(osc, tmp_path):
    _, tr = osc
    tr.save(tmp_path / "r.npz")
    back = pympc.Trajectory.load(tmp_path / "r.npz")
    assert np.array_equal(back.sample_times, tr.sample_times) and np.array_equal(back.slot_position, tr.slot_position)
    pd.testing.assert_frame_equal(back.to_dataframe(), tr.to_dataframe())
    back.sample_times = None                  # a file written before sample_times: every time once
    df = back.to_dataframe()
    assert df["t"].is_unique and len(df) == len(np.unique(tr.t))


# ------------------------------------------------------------------ along-slot coordinate and slip velocity
def _incline(alpha=0.5, mu=0.2):
    s = System("incline", parameters={"alpha": alpha, "mu": mu})
    s.add(Particle("block", mass=2.0))
    s.add(Slot("rail", "block", "ground", direction=("cos(alpha)", "sin(alpha)"), mu="mu"))
    s.add(Gravity("gravity", g=(0.0, -G)))
    return s


@pytest.mark.parametrize("formulation", ["general", "tree"])
def test_inclined_slot_position_and_sensitivities_against_the_closed_form(formulation):
    alpha, mu = 0.5, 0.2                     # tan α > μ: slides down, s = ½ a t², a = −g (sin α − μ cos α)
    t = np.linspace(0.0, 1.0, 21)
    tr = pympc.simulate(_incline(alpha, mu), (0.0, 1.0), t_eval=t, sensitivities=["alpha", "mu"],
                        formulation=formulation)
    rows = tr.sample_rows()
    a = -G * (np.sin(alpha) - mu * np.cos(alpha))
    assert np.allclose(tr.output("rail.position")[rows], 0.5 * a * t ** 2, rtol=0, atol=1e-9)
    assert np.allclose(tr.output("rail.slip_velocity")[rows], a * t, rtol=0, atol=1e-9)
    da = np.array([-G * (np.cos(alpha) + mu * np.sin(alpha)), G * np.cos(alpha)])      # ∂a/∂(α, μ)
    assert np.allclose(tr.sensitivity("rail.position")[rows], 0.5 * np.outer(t ** 2, da), rtol=0, atol=1e-7)
    assert np.allclose(tr.sensitivity("rail.slip_velocity")[rows], np.outer(t, da), rtol=0, atol=1e-7)
    # the world coordinates alone do not say this: x and y both move, along the incline
    assert np.ptp(tr.output("block.x")) > 0.1 and np.ptp(tr.output("block.y")) > 0.1


def test_rotating_guide_position_is_the_radius_and_its_rate_the_slip_velocity():
    tr = pympc.simulate(MODELS / "rotating_rod_bead.toml", t_eval=np.linspace(0.0, 0.8, 801))
    w, mu, r0 = 2.0, 0.2, 0.5                   # r'' + 2μω r' − ω² r = 0, r(0) = r0, r'(0) = 0
    k1, k2 = -mu * w + np.sqrt((mu * w) ** 2 + w ** 2), -mu * w - np.sqrt((mu * w) ** 2 + w ** 2)
    A = r0 * k2 / (k2 - k1)
    t = tr.t
    r = A * np.exp(k1 * t) + (r0 - A) * np.exp(k2 * t)
    rd = A * k1 * np.exp(k1 * t) + (r0 - A) * k2 * np.exp(k2 * t)
    assert np.allclose(tr.slot_position[:, 0], r, atol=1e-8)
    assert np.allclose(tr.slip_velocity[:, 0], rd, atol=1e-8)


def test_slot_output_sensitivities_match_finite_differences_of_the_simulator():
    t = np.linspace(0.0, 6.0, 61)
    names = ["mu", "mu_s", "F0"]
    tr = pympc.simulate(OSC, (0.0, 6.0), t_eval=t, sensitivities=names)
    rows = tr.sample_rows()
    for j, name in enumerate(names):
        v = tr.parameters[name]
        h = 1e-5 * v
        plus, minus = (pympc.simulate(OSC, (0.0, 6.0), t_eval=t, params={name: v + d}) for d in (h, -h))
        for out in ("slot.position", "slot.slip_velocity"):
            fd = (plus.output(out)[plus.sample_rows()] - minus.output(out)[minus.sample_rows()]) / (2 * h)
            got = tr.sensitivity(out)[rows, j]
            scale = np.abs(fd).max()
            assert scale > 0 and np.abs(got - fd).max() <= 1e-4 * scale, (name, out)


# ------------------------------------------------------------------ printing
def test_events_print_their_slot_by_name_and_the_table_has_no_trailing_blanks(osc):
    _, tr = osc
    assert "slot 'slot'" in repr(tr.events[1]) and "slot 0" not in repr(tr.events[1])
    lines = tr.event_table().splitlines()
    assert all(line == line.rstrip() for line in lines) and lines[0].endswith("check")
    cs = pympc.simulate(MODELS / "cross_slide.toml", (0.0, 6.0), params={"P": 5.0})
    e = cs.events[1]
    assert f"slot {cs.slot_names[e.slot]!r}" in repr(e)


def test_solution_sets_print_rounded_numbers_not_numpy_reprs():
    finite = pympc.enumerate_solutions(pympc.LCP([[-1.0, 0.0], [0.0, 1.0]], [1.0, -1.0]))
    unique = pympc.enumerate_solutions(pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]))
    continuum = pympc.enumerate_solutions(pympc.LCP([[1.0, 1.0], [1.0, 1.0]], [-1.0, -1.0]))
    assert continuum.kind.name == "CONTINUUM" and "1 direction(s)" in repr(continuum)
    for s in (finite, unique, continuum):
        text, line = str(s), repr(s)
        assert "array(" not in text and "array(" not in line and "\n" not in line
        assert s.kind.name in line and f"{len(s.points)} point(s)" in line
        assert len(text.splitlines()) == 1 + len(s.points) + len(s.directions)
    assert "1.333333" in str(unique)


def test_dir_of_pympc_shows_public_names_only():
    names = [n for n in dir(pympc) if not n.startswith("__")]
    assert "importlib" not in names and not [n for n in names if n.startswith("_")]
    assert set(pympc.__all__) <= set(names) and "register_with_pyomo" not in names


def test_gitignore_covers_a_virtual_environment():
    lines = (ROOT / ".gitignore").read_text().split()
    assert ".venv/" in lines


def test_readme_states_the_shipped_record_length():
    df = pd.read_csv(ROOT / "examples" / "data" / "friction_oscillator.csv", comment="#")
    span = f"{df['t'].iloc[-1] - df['t'].iloc[0]:g} s record"
    text = (ROOT / "docs" / "guide" / "identification.md").read_text()   # the README passage moved there
    claims = set(re.findall(r"whole (\d+ s) record", text))
    assert claims and claims == {span.replace(" record", "")}


# ------------------------------------------------------------------ plots
def _axes_checks(fig):
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        assert re.search(r"\[[^\]]+\]", ax.get_ylabel()) or ax.get_ylabel().startswith("slot"), ax.get_ylabel()
        legend = ax.get_legend()
        if legend is not None:                   # beside the data, not on it
            assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1 - 1


def test_every_trajectory_plot_has_units_titles_and_legends_off_the_data():
    tr = pympc.simulate(MODELS / "cross_slide.toml", (0.0, 6.0), params={"P": 5.0})
    figs = trajectory_figures(tr, "cross_slide")
    assert set(figs) == {"coordinates", "velocities", "forces", "slots", "modes", "energy"}
    for name, fig in figs.items():
        fig.canvas.draw()
        title = fig._suptitle.get_text().replace("\u00a0", " ")
        assert "cross_slide" in title and "P = 5" in title and "mu1 = 0.3" in title, name
        _axes_checks(fig)
        assert fig.axes[-1].get_xlabel() == "t [s]"
        labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        assert EVENT_STYLE["SLIP_STOP"][2] in labels, name           # every event line explained, by kind
    # crosshead.x and particle.x coincide: the second is drawn dashed and says so
    labels = [t.get_text() for ax in figs["coordinates"].axes for t in ax.get_legend().get_texts()]
    twin = [lab for lab in labels if "(= " in lab]
    assert twin and any("crosshead.x" in lab and "particle.x" in lab for lab in twin)
    modes = [t.get_text() for t in figs["modes"].axes[0].get_legend().get_texts()]
    assert {"slip forward", "stick", "slip backward"} <= set(modes) and any("wall σ = +1" in m for m in modes)


def test_output_units():
    assert [output_unit(n) for n in ("mass.x", "mass.x_dot", "crank.phi", "crank.phi_dot", "slot.normal_force",
                                     "slot.slip_velocity", "slot.position", "kinetic", "slot.motion")] == \
        ["m", "m/s", "rad", "rad/s", "N", "m/s", "m", "J", "-"]


def test_identification_plots_have_units_and_explain_the_event_lines():
    from pympc.identify import Experiment, Parameter, estimate, synthetic_record
    from pympc.identify.plots import plot_fit, plot_region, plot_residuals
    t = np.linspace(0.0, 6.0, 121)
    df, sigma = synthetic_record(OSC, t, ["mass.x", "slot.slip_velocity"], 0.01, 3)
    res = estimate(Experiment(OSC, df, noise=sigma), [Parameter("mu", 0.25, (0.05, 1.0)),
                                                      Parameter("mu_s", 0.45, (0.05, 1.5))])
    kinds = {k for f in res.fits for _, k, *_ in f["events"]} - {"START"}
    assert kinds >= {"BREAKAWAY", "SLIP_STOP"}
    for fig, units in ((plot_fit(res), ["[m]", "[m/s]"]), (plot_residuals(res), ["[m]", "[m/s]"])):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        assert [ax.get_ylabel().rsplit(" ", 1)[-1] for ax in fig.axes] == units
        for ax in fig.axes:
            legend = ax.get_legend()
            labels = [x.get_text() for x in legend.get_texts()]
            assert {EVENT_STYLE[k][2] for k in kinds} <= set(labels)           # every kind of line explained
            assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1 - 1   # off the data
    fig = plot_region(res)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_legend().get_window_extent(fig.canvas.get_renderer()).x0 >= \
        ax.get_window_extent(fig.canvas.get_renderer()).x1 - 1


def test_a_fit_to_the_along_slot_coordinate_recovers_the_parameters():
    """The along-slot coordinate is an output a fit can use (its sensitivities come with the run)."""
    from pympc.identify import Experiment, Parameter, estimate, synthetic_record
    from pympc.identify.experiment import fittable_outputs
    assert "slot.position" in fittable_outputs(pympc.load_model(OSC))
    t = np.linspace(0.0, 8.0, 161)
    df, sigma = synthetic_record(OSC, t, ["slot.position"], 0.005, 11, mu=0.25, mu_s=0.35)
    res = estimate(Experiment(OSC, df, noise=sigma), [Parameter("mu", 0.45, (0.05, 1.0)),
                                                      Parameter("mu_s", 0.6, (0.05, 1.5))])
    assert all(ok for ok, _ in res.checks().values()), res.checks()
    for name, truth in (("mu", 0.25), ("mu_s", 0.35)):
        assert res.status_of(name)[0] == "identified"
        k = res.names.index(name)
        assert abs(res.optimum[k] - truth) <= 4 * res.stderr[k]


def test_parquet_and_xarray_exports_carry_units_and_the_run(osc, tmp_path):
    """A trajectory exports as any tool reads it: Parquet (pandas, pyarrow, polars, DuckDB) and xarray."""
    import json

    import pyarrow.parquet as pq
    t, tr = osc
    path = tr.to_parquet(tmp_path / "run.parquet")
    df = tr.to_dataframe()
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, df)
    np.testing.assert_array_equal(back["t"], t)
    schema = pq.read_schema(path)
    assert schema.field("slot.normal_force").metadata[b"unit"] == b"N"
    assert schema.field("mass.x_dot").metadata[b"unit"] == b"m/s"
    meta = json.loads(schema.metadata[b"pympc"])
    assert meta["status"] == "SUCCESS" and json.loads(meta["parameters"]) == dict(tr.parameters)
    for reader in ("polars", "duckdb"):
        lib = pytest.importorskip(reader)
        n = len(lib.read_parquet(str(path))) if reader == "polars" else \
            len(lib.sql(f"select * from read_parquet('{path}')").df())
        assert n == len(t)
    xr = pytest.importorskip("xarray")
    ds = tr.to_xarray()
    assert isinstance(ds, xr.Dataset) and ds.sizes["t"] == len(t)
    assert ds["slot.friction_force"].attrs["units"] == "N" and ds["t"].attrs["units"] == "s"
    np.testing.assert_array_equal(ds["mass.x"].values, df["mass.x"].values)
    assert ds.attrs["status"] == "SUCCESS"
