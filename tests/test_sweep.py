"""Sweeps on Dask: specs checked before running, runs stored once, failures recorded, resume, killed workers."""

import os
import signal
import subprocess
import time

import numpy as np
import pandas as pd
import pytest
from conftest import MODELS, ROOT, python_env, run_python, start_python

import pympc
import pympc.cli
from pympc.errors import ModelError, OptionError
from pympc.sweep import SweepSpec, load_results, load_spec, plot_regime, run_sweep
from pympc.sweep.engine import _TASK_SECONDS, ANSWERS, _Sizer
from pympc.sweep.observables import evaluate
from pympc.sweep.store import ResultStore

distributed = pytest.importorskip("distributed")

CROSS = MODELS / "cross_slide.toml"
OSC = MODELS / "friction_oscillator.toml"
VOLATILE = ["wall_time", "cpu_time"]


def test_local_cluster_listens_on_loopback_only(client):
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    listening = [c.laddr for p in [me] + me.children(recursive=True) for c in p.net_connections(kind="tcp")
                 if c.status == psutil.CONN_LISTEN]
    assert len(listening) >= 4                   # scheduler, its HTTP server, two workers (and their nannies)
    assert all(a.ip == "127.0.0.1" and a.port != 8787 for a in listening), listening
    assert sum(client.nthreads().values()) == 2 and all(n == 1 for n in client.nthreads().values())


def cross_spec(grid=None, observables=None, t_end=0.2, **sweep):
    data = {"sweep": {"model": str(CROSS), "t_span": [0.0, t_end], **sweep},
            "grid": grid or {"mu1": [0.5, 3.0], "mu2": [0.1, 3.0]}, "options": {"samples": 21}}
    return SweepSpec.from_dict(data, observables=observables)


def same(a, b):
    pd.testing.assert_frame_equal(a.drop(columns=VOLATILE), b.drop(columns=VOLATILE))


# ----------------------------------------------------------------------------- specs

def test_grid_forms_match_numpy(tmp_path):
    spec = SweepSpec.from_dict({"sweep": {"model": str(OSC), "t_span": [0, 1]},
                                "grid": {"F0": {"start": 2.0, "stop": 20.0, "num": 4, "log": True},
                                         "mu_s": {"start": 0.3, "stop": 1.0, "step": 0.1}, "w": [1.0, 2.0]}})
    F0 = sorted({r["F0"] for r in spec.runs})
    mus = sorted({r["mu_s"] for r in spec.runs})
    np.testing.assert_allclose(F0, 2.0 * 10.0 ** (np.arange(4) / 3), rtol=1e-12)
    np.testing.assert_allclose(mus, 0.3 + 0.1 * np.arange(8), rtol=1e-12)   # stop included when on the step
    assert len(spec.runs) == 4 * 8 * 2 and spec.axes == ["F0", "mu_s", "w"]


@pytest.mark.parametrize("method", ["sobol", "lhs"])
def test_samples_are_seeded_and_inside_bounds(method):
    data = {"sweep": {"model": str(OSC), "t_span": [0, 1]},
            "sample": {"method": method, "n": 16, "seed": 7,
                       "bounds": {"F0": [1.0, 20.0], "mu_s": {"low": 0.1, "high": 1.0, "log": True}}}}
    a, b = SweepSpec.from_dict(data), SweepSpec.from_dict(data)
    assert a.runs == b.runs and len(a.runs) == 16
    F0 = np.array([r["F0"] for r in a.runs])
    mus = np.array([r["mu_s"] for r in a.runs])
    assert F0.min() >= 1.0 and F0.max() <= 20.0 and mus.min() >= 0.1 and mus.max() <= 1.0
    # both designs put exactly one point in each of the 16 equal strata of each (transformed) axis
    for u in ((F0 - 1.0) / 19.0, np.log(mus / 0.1) / np.log(10.0)):
        assert sorted(np.floor(u * 16).astype(int)) == list(range(16))
    data["sample"]["seed"] = 8
    assert SweepSpec.from_dict(data).runs != a.runs


@pytest.mark.parametrize("change, error, words", [
    ({"grid": {"mu3": [0.1, 0.2]}}, OptionError, ["unknown parameter", "mu3", "mu1"]),
    ({"grid": {"mu1": {"start": 1.0, "stop": 0.5, "step": 0.1}}}, OptionError, ["mu1", "empty range"]),
    ({"grid": {"mu1": []}}, OptionError, ["mu1", "no values"]),
    ({"sweep": {"observables": ["status", "jam_time"]}}, OptionError, ["unknown observable", "jam_time"]),
    ({"sweep": {"observables": ["first:STOP"]}}, OptionError, ["first:STOP", "event kind"]),
    ({"sweep": {"model": "../models/no_such_model.toml"}}, ModelError, ["no_such_model.toml", "model"]),
    ({"options": {"rtoll": 1e-6}}, OptionError, ["rtoll", "simulate option"]),
    ({"options": {"on_ambiguous": "guess"}}, OptionError, ["[options]", "on_ambiguous", "guess"]),
])
def test_bad_spec_is_a_clear_error_before_anything_runs(tmp_path, capsys, change, error, words):
    data = {"sweep": {"model": "../models/cross_slide.toml", "t_span": [0.0, 0.2]},
            "grid": {"mu1": [0.5, 1.0]}}
    for table, entries in change.items():
        data[table] = {**data.get(table, {}), **entries} if table != "grid" else entries
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    (tmp_path / "models").symlink_to(MODELS)
    path = spec_dir / "bad.toml"
    path.write_text(_toml(data))
    with pytest.raises(error) as exc:
        load_spec(path)
    msg = str(exc.value)
    assert all(w in msg for w in words), msg
    # the command line: exit status 2, the same message, no store, no cluster started
    store = tmp_path / "store"
    assert pympc.cli.main(["sweep", str(path), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pympc: error:") and all(w in err for w in words) and "Traceback" not in err
    assert not store.exists()


def _toml(data):
    """A small TOML writer for the test specs (numbers, strings, lists, inline tables)."""
    import json

    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + "}"
        return repr(v)
    return "".join(f"[{t}]\n" + "".join(f"{k} = {val(v)}\n" for k, v in tab.items()) for t, tab in data.items())


def test_run_keys_follow_content(tmp_path):
    spec = cross_spec()
    p = spec.runs[0]
    assert spec.key(p) == cross_spec().key(dict(p)) != spec.key({**p, "mu1": p["mu1"] + 1e-12})
    assert cross_spec(t_end=0.3).key(p) != spec.key(p)                      # options (time span) count
    changed = tmp_path / "cross.toml"
    changed.write_text(CROSS.read_text().replace("m1 = 2.0", "m1 = 2.5"))
    other = SweepSpec.from_dict({"sweep": {"model": str(changed), "t_span": [0.0, 0.2]},
                                 "grid": {"mu1": [0.5, 3.0], "mu2": [0.1, 3.0]}, "options": {"samples": 21}})
    assert other.key(p) != spec.key(p) and other.model.hash != spec.model.hash   # the model's text counts


# ----------------------------------------------------------------------------- observables

def test_observables_against_the_event_list():
    tr = pympc.simulate(OSC, (0.0, 10.0))
    row = evaluate(["status", "events", "stick_fraction", "stick_phases", "first:SLIP_STOP", "dissipated",
                    "final_state", "start_classification", ("amplitude", lambda t: float(np.abs(t.q[:, 0]).max()))], tr)
    # stick durations from the events alone: from each event into stick to the next event (or the end)
    times = [e.time for e in tr.events] + [tr.t[-1]]
    stick = [int(e.mode_after.motions[0]) == 0 for e in tr.events]
    frac = sum(b - a for a, b, s in zip(times[:-1], times[1:], stick) if s) / (tr.t[-1] - tr.t[0])
    assert row["stick.slot"] == pytest.approx(frac, abs=1e-12)
    assert 0 < frac < 1
    runs = sum(1 for i, s in enumerate(stick) if s and (i == 0 or not stick[i - 1]))
    assert row["stick_phases.slot"] == runs >= 2
    kinds = [e.kind.name for e in tr.events]
    assert row["n_events"] == len(tr.events) - 1 and row["n_SLIP_STOP"] == kinds.count("SLIP_STOP")
    assert row["first_SLIP_STOP"] == next(e.time for e in tr.events if e.kind.name == "SLIP_STOP")
    assert row["dissipated"] == tr.dissipated[-1] > 0
    assert row["final.mass.x"] == tr.q[-1, 0] and row["t_final"] == 10.0
    assert row["start_hlcp"] == tr.events[0].classification and row["status"] == "SUCCESS"
    assert row["amplitude"] == float(np.abs(tr.q[:, 0]).max())


# ----------------------------------------------------------------------------- sweeps on a LocalCluster

def refuse_slipping_down(tr):
    """A user observable that raises on some runs: those that end well with the particle slipping down at the start."""
    if tr.status.name == "SUCCESS" and tr.events[0].mode_after.motions[1] == -1:
        raise ValueError("user observable refuses this run")
    return 1.0


def test_sweep_matches_direct_simulation_and_records_failures(client, tmp_path):
    grid = {"mu1": [0.5, 3.0], "mu2": [0.1, 3.0], "m2": [1.0, -1.0]}       # m2 < 0: the model file refuses
    spec = cross_spec(grid, observables=[refuse_slipping_down])
    report = run_sweep(spec, tmp_path / "s", client=client, batch_size=3)
    df = load_results(tmp_path / "s")
    assert len(df) == 8 == report.total == report.ran and report.lost == 0
    assert list(df["run"]) == list(range(8)) and df.attrs["parameters"] == ["mu1", "mu2", "m2"]
    failed = df[df.status == "FAILED"]
    assert len(failed) == report.counts["FAILED"] and len(failed) > 4
    assert report.failed == (~df.status.isin(ANSWERS)).sum() and len(report.failures) == (df.status != "SUCCESS").sum()
    assert not report.ok
    assert set(failed.index) >= set(df.index[df.m2 < 0])
    for _, r in failed.iterrows():
        assert r.error and "Traceback" in r.traceback
        if r.m2 < 0:
            assert "ModelError" in r.error and "m" in r.error
        else:
            assert "user observable refuses" in r.error
    ok = df[df.status != "FAILED"]
    assert len(ok) >= 1 and (ok.refuse_slipping_down == 1.0).all()
    for _, r in ok.iterrows():      # the oracle: the same run done here, directly
        tr = pympc.simulate(CROSS, (0.0, 0.2), params={"mu1": r.mu1, "mu2": r.mu2, "m2": r.m2}, samples=21)
        assert (r.status, r.start_hlcp, r.n_events) == (tr.status.name, tr.events[0].classification, len(tr.events) - 1)
        assert r.model_hash == spec.model.hash and r.pympc_version == pympc.__version__
    assert "FAILED" in report.summary() and "user observable refuses" in report.summary()


def test_interrupted_sweep_resumes_to_the_same_results(client, tmp_path):
    spec = cross_spec({"mu1": [0.5, 2.0, 8.0], "mu2": [0.1, 1.0, 3.0]})
    ticks = []

    def ctrl_c(done, failed, remaining):
        ticks.append(done)
        if len(ticks) == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, tmp_path / "a", client=client, batch_size=2, progress=ctrl_c)
    stored = ResultStore(tmp_path / "a").finished()
    assert 2 <= len(stored) < 9
    report = run_sweep(spec, tmp_path / "a", client=client, batch_size=2, resume=True)
    assert report.skipped == len(stored) and report.ran == 9 - len(stored) and report.complete
    again = run_sweep(spec, tmp_path / "a", client=client)          # finished: nothing runs
    assert again.ran == 0 and again.skipped == 9
    run_sweep(spec, tmp_path / "b", client=client, batch_size=4)
    same(load_results(tmp_path / "a"), load_results(tmp_path / "b"))
    with pytest.raises(OptionError, match="holds the results of another sweep spec.*t_span"):     # would mix two studies in one store
        run_sweep(cross_spec({"mu1": [0.5, 2.0, 8.0], "mu2": [0.1, 1.0, 3.0]}, t_end=0.3), tmp_path / "a", client=client)
    assert (load_results(tmp_path / "a").status == "PARADOX").any()


def _plan(sizer, n, per_run, load=1.0):
    """The task sizes a sweep of n runs gets when every run takes per_run s of CPU and load times that of wall
    time (tasks finish in order)."""
    sizes = []
    while n:
        k = sizer(n)
        sizes.append(k)
        n -= k
        sizer.observe([{"wall_time": per_run * load, "cpu_time": per_run}] * k)
    return sizes


@pytest.mark.parametrize("workers", [1, 2, 8])
@pytest.mark.parametrize("per_run", [1e-4, 0.005, 0.013, 0.5, 30.0])
@pytest.mark.parametrize("load", [1.0, 3.0])
def test_task_sizes_hold_the_measured_run_time(workers, per_run, load):
    lo, hi = _TASK_SECONDS
    sizes = _plan(_Sizer(workers), 1000, per_run, load)
    assert sum(sizes) == 1000 and min(sizes) >= 1
    assert sizes[0] <= 4                            # a run's time is not known before the first task
    left = 1000 - sizes[0]
    for k in sizes[1:]:
        assert k * per_run * load <= hi or k == 1   # at most _TASK_SECONDS[1] of wall time per task
        assert k * per_run >= lo or k == left       # at least _TASK_SECONDS[0] of CPU, unless it is the rest
        left -= k
    assert sizes[1:] == sorted(sizes[1:], reverse=True)     # guided: large tasks first, the small ones last
    if per_run == 0.005 and workers == 1 and load == 1.0:
        assert len(sizes) <= 10                     # 1000 runs of 5 ms: 8 tasks, not 30 shrinking to 1
    assert _plan(_Sizer(workers, size=7), 20, per_run) == [7, 7, 6]       # a given batch_size is kept


def test_default_task_sizes_store_what_single_run_tasks_store(client, tmp_path):
    spec = cross_spec({"mu1": [0.5, 2.0, 8.0], "mu2": [0.1, 1.0, 3.0, 5.0]})
    report = run_sweep(spec, tmp_path / "a", client=client)
    assert report.complete and report.ran == 12 and len(ResultStore(tmp_path / "a").parts()) < 12
    run_sweep(spec, tmp_path / "b", client=client, batch_size=1)
    same(load_results(tmp_path / "a"), load_results(tmp_path / "b"))


class KillOnce:
    """An observable that SIGKILLs its own worker process the first time it runs (a marker file makes it once)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __call__(self, tr):
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return 0.0
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)


def test_killed_worker_loses_only_its_batch(client, tmp_path):
    marker = tmp_path / "killed"
    spec = cross_spec({"mu1": [0.5, 2.0, 8.0], "mu2": [0.1, 1.0, 3.0]}, observables=[("kill", KillOnce(marker))])
    report = run_sweep(spec, tmp_path / "a", client=client, batch_size=2)
    assert marker.exists()                       # a worker process did kill itself
    assert report.complete and report.ran == 9 and report.lost == 0
    parts = ResultStore(tmp_path / "a").parts()
    assert len(parts) == 5                       # one part per batch, the killed batch written once (redone)
    df = load_results(tmp_path / "a")
    assert df.key.is_unique and len(df) == 9 and (df.kill == 0.0).all()
    run_sweep(spec, tmp_path / "b", client=client, batch_size=3)          # uninterrupted (the marker exists now)
    same(df, load_results(tmp_path / "b"))
    # the nanny restarted the worker: the cluster stays usable
    assert client.submit(sum, [1, 2], pure=False).result() == 3


def test_ctrl_c_stops_the_command_and_resume_finishes(tmp_path):
    spec = tmp_path / "osc.toml"
    # many single-run batches, so that the sweep is far from done when the first part is stored
    n = 240
    spec.write_text(_toml({"sweep": {"model": str(OSC), "t_span": [0.0, 3.0], "batch_size": 1},
                           "grid": {"F0": {"start": 4.0, "stop": 12.0, "num": n}}}))
    store = tmp_path / "store"
    cmd = ["-m", "pympc.cli", "sweep", str(spec), "--store", str(store), "--workers", "1"]
    proc = start_python(*cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        while not list(store.glob("part-*.parquet")) and proc.poll() is None:
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err and "--resume" in err
    stored = len(ResultStore(store).finished())
    assert 1 <= stored < n
    # (the rest in a few batches: a part file per run is only needed while waiting for the first one)
    done = run_python(*cmd, "--resume", "--batch-size", "60", "--plot", "stick.slot", timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"{n - stored} run now, {stored} already stored" in done.stdout
    assert (store / "stick.slot.png").stat().st_size > 0
    assert len(load_results(store)) == n


# ----------------------------------------------------------------------------- loading and maps

def test_regime_map_draws_the_stored_values(client, tmp_path):
    from matplotlib.collections import QuadMesh
    spec = cross_spec({"mu1": [0.5, 2.0, 8.0], "mu2": [0.1, 1.0, 3.0]})
    run_sweep(spec, tmp_path / "s", client=client)
    df = load_results(tmp_path / "s")
    fig = plot_regime(tmp_path / "s", "start_hlcp")
    ax = fig.axes[0]
    mesh = next(c for c in ax.collections if isinstance(c, QuadMesh))
    labels = [t.get_text().split()[0] for t in ax.get_legend().get_texts()]
    codes = np.asarray(mesh.get_array()).reshape(3, 3)           # rows: mu2, columns: mu1
    for _, r in df.iterrows():
        i, j = [0.1, 1.0, 3.0].index(r.mu2), [0.5, 2.0, 8.0].index(r.mu1)
        assert labels[int(codes[i, j])] == r.start_hlcp
    assert {"UNIQUE", "NONE"} <= set(df.start_hlcp)
    curve = plot_regime(df[df.mu2 == 0.1], "dissipated", x="mu1").axes[0].lines[0]
    np.testing.assert_array_equal(curve.get_xdata(), [0.5, 2.0, 8.0])
    np.testing.assert_array_equal(curve.get_ydata(), df[df.mu2 == 0.1].sort_values("mu1").dissipated)
    with pytest.raises(OptionError, match="no observable column 'jam'"):
        plot_regime(df, "jam")


def test_xarray_dataset_when_installed(client, tmp_path):
    xr = pytest.importorskip("xarray")
    spec = cross_spec({"mu1": [0.5, 8.0], "mu2": [0.1, 3.0]})
    run_sweep(spec, tmp_path / "s", client=client)
    ds = load_results(tmp_path / "s", as_xarray=True)
    assert isinstance(ds, xr.Dataset) and ds.start_hlcp.shape == (2, 2)


def test_sweep_notebook_executes():
    nbclient = pytest.importorskip("nbclient")
    import nbformat
    path = ROOT / "notebooks" / "sweep.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute(env=python_env())
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "NONE" in text and "FINITE" in text and "stick_phases" in text
