"""Fault injection on the sweep store: damaged parts, a writer killed mid-sweep, two writers, a changed spec,
an old store layout; per-run time limits; exit statuses; options checked before anything starts."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings

import pandas as pd
import numpy as np
import pytest
from conftest import run_python, start_python
from test_sweep import CROSS, OSC, _toml, cross_spec, same

import pympc.cli
from pympc.errors import OptionError
from pympc.sweep import load_results, run_sweep
from pympc.sweep.engine import ANSWERS
from pympc.sweep.store import DAMAGED, LOCK, MANIFEST, ResultStore

GRID = {"mu1": [0.5, 2.0], "mu2": [0.1, 3.0]}


def cli(*args, timeout=600):
    """``pympc`` in a subprocess (its own session, so that a kill reaches its cluster too)."""
    return run_python("-m", "pympc.cli", *args, timeout=timeout, start_new_session=True)


def write_spec(path, grid, t_end=0.2, **options):
    path.write_text(_toml({"sweep": {"model": str(CROSS), "t_span": [0.0, t_end], "batch_size": 1},
                           "grid": grid, "options": {"samples": 21, **options}}))
    return path


def one_row_per_run(store, n):
    df = load_results(store)
    assert len(df) == n and df.key.is_unique and sorted(df.run) == list(range(n))
    raw = pd.read_parquet(store)                     # the directory as a Parquet dataset, without pympc
    assert len(raw) == n and raw.key.is_unique
    return df


# ----------------------------------------------------------------------------- damaged parts

@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_damaged_part_is_named_the_rest_readable_and_resume_redoes_it(client, tmp_path, damage):
    spec = cross_spec(GRID)
    run_sweep(spec, tmp_path / "ref", client=client)
    store = tmp_path / "s"
    run_sweep(spec, store, client=client, batch_size=1)
    parts = ResultStore(store).parts()
    assert len(parts) == 4
    bad = parts[1]
    data = bad.read_bytes()
    bad.write_bytes({"truncate": data[:len(data) // 2], "garbage": os.urandom(len(data)), "empty": b""}[damage])
    with pytest.warns(UserWarning, match=f"{bad.name}.*damaged.*--resume"):
        partial = load_results(store)
    assert len(partial) == 3 and partial.key.is_unique       # the good parts stay readable
    report = run_sweep(spec, store, client=client, resume=True)
    assert any(bad.name in n and "damaged" in n for n in report.notes), report.notes
    assert report.ran == 1 and report.skipped == 3 and report.complete
    assert (store / DAMAGED / bad.name).exists() and not bad.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(one_row_per_run(store, 4), load_results(tmp_path / "ref"))


# ----------------------------------------------------------------------------- a writer killed mid-sweep

def test_a_writer_killed_between_its_atomic_steps_is_repaired(client, tmp_path):
    """The states a SIGKILL between two renames leaves: a retried run's new row written but its old row not yet
    removed (a key in two parts), and a part not yet given the dataset's schema (a column missing)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    store = tmp_path / "s"
    spec = cross_spec(GRID)
    run_sweep(spec, store, client=client, batch_size=2)
    reference = load_results(store)
    first, second = ResultStore(store).parts()
    t = pq.read_table(first)
    row = t.slice(0, 1).to_pylist()[0]
    stale = pa.Table.from_pylist([{**row, "status": "FAILED", "dissipated": None}], schema=t.schema)
    pq.write_table(stale, first.with_name("part-00000000-0.parquet"))      # an older part holding the same key
    lost = set(pq.read_table(second).column("run").to_pylist())
    pq.write_table(pq.read_table(second).drop_columns(["dissipated"]), second)
    assert len(pd.read_parquet(first.parent, columns=["key"])) == 5         # readers would see the key twice
    report = run_sweep(spec, store, client=client)
    assert report.ran == 0 and any("superseded" in n for n in report.notes), report.notes
    df = one_row_per_run(store, 4)
    same(df.drop(columns="dissipated"), reference.drop(columns="dissipated"))     # the stale row lost
    gone = df.run.isin(lost)
    assert df.dissipated[gone].isna().all() and (df.dissipated[~gone] == reference.dissipated[~gone]).all()
    assert len({str(pq.read_schema(p)) for p in ResultStore(store).parts()}) == 1

def test_writer_killed_mid_sweep_leaves_a_store_the_next_writer_repairs(tmp_path):
    n = 40
    spec = tmp_path / "osc.toml"
    spec.write_text(_toml({"sweep": {"model": str(OSC), "t_span": [0.0, 3.0], "batch_size": 1},
                           "grid": {"F0": {"start": 4.0, "stop": 12.0, "num": n}}}))
    store = tmp_path / "store"
    proc = start_python("-m", "pympc.cli", "sweep", spec, "--store", store, "--workers", "1",
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while len(list(store.glob("part-*.parquet"))) < 2 and proc.poll() is None:
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)          # the writer and its cluster, no chance to clean up
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    lock = json.loads((store / LOCK).read_text())    # the dead writer's lock file is still there
    assert lock["pid"] == proc.pid and lock["host"] == socket.gethostname()
    stored = ResultStore(store).finished()
    assert 2 <= len(stored) < n
    # what a writer killed inside write_part leaves: a partial temporary file (readers skip the leading dot)
    part = ResultStore(store).parts()[0]
    (store / f".part-99999999-0.parquet.tmp").write_bytes(part.read_bytes()[:100])
    assert len(pd.read_parquet(store)) == len(stored)
    done = cli("sweep", spec, "--store", store, "--workers", "1", "--resume")
    assert done.returncode == 0, done.stderr
    assert "took over a stale lock" in done.stderr
    assert str(proc.pid) in done.stderr and ".part-99999999-0.parquet.tmp" in done.stderr
    assert f"{n - len(stored)} run now, {len(stored)} already stored" in done.stdout
    assert not list(store.glob(".*.tmp")) and (store / LOCK).read_text() == ""      # released
    one_row_per_run(store, n)


# ----------------------------------------------------------------------------- two writers

def test_a_second_writer_is_refused_with_the_holders_host_and_pid(client, tmp_path, capsys):
    spec_file = write_spec(tmp_path / "cross.toml", GRID)
    store = tmp_path / "s"
    holder = start_python("-c", "import sys, time; from pympc.sweep.store import ResultStore\n"
                          f"with ResultStore({str(store)!r}).writer():\n print('locked', flush=True)\n"
                          " time.sleep(600)", stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(OptionError, match=f"another sweep is writing.*{socket.gethostname()}.*pid {holder.pid}"):
            run_sweep(cross_spec(GRID), store, client=client)
        assert pympc.cli.main(["sweep", str(spec_file), "--store", str(store)]) == 2
        err = capsys.readouterr().err
        assert f"pid {holder.pid}" in err and "Traceback" not in err
        assert not ResultStore(store).parts()                       # nothing was written
    finally:
        holder.kill()
        holder.wait(timeout=60)
    report = run_sweep(cross_spec(GRID), store, client=client)     # its holder is gone: the lock is stale
    assert any("stale lock" in n and str(holder.pid) in n for n in report.notes) and report.ran == 4
    one_row_per_run(store, 4)


def test_lock_without_flock(tmp_path, monkeypatch):
    """Where fcntl is missing (Windows): an exclusively created lock file; stale when its pid is gone from this host."""
    import pympc.sweep.store as st
    monkeypatch.setattr(st, "fcntl", None)
    path = tmp_path / "s"
    with ResultStore(path).writer() as notes:
        assert notes == []
        with pytest.raises(OptionError, match=f"another sweep is writing.*pid {os.getpid()}"):
            with ResultStore(path).writer():
                pass
    assert not (path / LOCK).exists()
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=60)
    (path / LOCK).write_text(json.dumps({"host": socket.gethostname(), "pid": gone.pid, "since": "then"}))
    with ResultStore(path).writer() as notes:
        assert any("stale lock" in n and str(gone.pid) in n for n in notes)
    (path / LOCK).write_text(json.dumps({"host": "elsewhere", "pid": os.getpid(), "since": "then"}))
    with pytest.raises(OptionError, match="host elsewhere"):      # another host's process cannot be checked
        with ResultStore(path).writer():
            pass


def test_two_sweeps_started_together_store_every_run_once(tmp_path):
    spec_file = write_spec(tmp_path / "cross.toml", {"mu1": [0.5, 1.0, 2.0, 4.0], "mu2": [0.1, 1.0, 3.0]})
    store = tmp_path / "s"
    cmd = ["-m", "pympc.cli", "sweep", str(spec_file), "--store", str(store), "--workers", "1"]
    procs = [start_python(*cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
             for _ in range(2)]
    try:
        outs = [p.communicate(timeout=900) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    codes = sorted(p.returncode for p in procs)
    assert codes in ([0, 0], [0, 2]), outs     # PARADOX runs are answers, not failures
    ran = 0
    for p, (out, err) in zip(procs, outs):
        if p.returncode == 2:
            assert "another sweep is writing" in err and "Traceback" not in err
        else:
            ran += int(out.split(" run now")[0].rsplit(" ", 1)[-1])
    assert ran == 12                       # no run done twice into the store
    one_row_per_run(store, 12)
    assert json.loads((store / MANIFEST).read_text())["runs"] == 12


# ----------------------------------------------------------------------------- one spec per store

@pytest.mark.parametrize("change, words", [
    (dict(grid={"mu1": [0.5, 2.0, 4.0], "mu2": [0.1, 3.0]}), ["values", "runs"]),
    (dict(grid={"mu1": [0.5, 2.5], "mu2": [0.1, 3.0]}), ["values"]),
    (dict(grid={"mu1": [0.5, 2.0]}), ["axes"]),
    (dict(t_end=0.3), ["t_span"]),
    (dict(grid=GRID, observables=[("extra", lambda tr: 1.0)]), ["observables"]),
])
def test_a_store_belongs_to_one_spec(client, tmp_path, change, words):
    store = tmp_path / "s"
    run_sweep(cross_spec(GRID), store, client=client)
    before = sorted(p.name for p in ResultStore(store).parts())
    for resume in (False, True):
        with pytest.raises(OptionError, match="holds the results of another sweep spec") as exc:
            run_sweep(cross_spec(**change), store, client=client, resume=resume)
        assert all(w in str(exc.value) for w in words) and "--store" in str(exc.value)
    assert sorted(p.name for p in ResultStore(store).parts()) == before
    one_row_per_run(store, 4)
    # the time limit is not part of a run (a rerun may give a longer one)
    assert run_sweep(cross_spec(GRID), store, client=client, timeout=100.0).skipped == 4


def test_a_changed_model_file_is_refused_on_the_command_line(tmp_path, capsys):
    model = tmp_path / "cross.toml"
    model.write_text(CROSS.read_text())
    spec = tmp_path / "spec.toml"
    spec.write_text(_toml({"sweep": {"model": "cross.toml", "t_span": [0.0, 0.2]}, "grid": {"mu1": [0.5, 1.0]}}))
    store = tmp_path / "s"
    assert pympc.cli.main(["sweep", str(spec), "--store", str(store), "--workers", "1"]) == 0
    model.write_text(CROSS.read_text().replace("m1 = 2.0", "m1 = 2.5"))
    assert pympc.cli.main(["sweep", str(spec), "--store", str(store), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "another sweep spec" in err and "model_hash" in err and "Traceback" not in err


def test_a_store_of_the_older_layout_is_read_and_migrated(client, tmp_path):
    store = tmp_path / "s"
    spec = cross_spec(GRID)
    run_sweep(spec, store, client=client, batch_size=2)
    reference = load_results(store)
    # the layout before: the manifest 'sweep.json' among the parts (no fingerprint), parts named part-<uuid>
    manifest = json.loads((store / MANIFEST).read_text())
    for k in ("format", "fingerprint", "values"):
        manifest.pop(k)
    (store / "sweep.json").write_text(json.dumps(manifest))
    (store / MANIFEST).unlink()
    (store / LOCK).unlink()
    for i, p in enumerate(ResultStore(store).parts()):
        p.rename(store / f"part-{i:032x}.parquet")
        time.sleep(0.01)                      # old parts are ordered by time
    same(load_results(store), reference)      # still readable as it is
    clone = tmp_path / "clone"
    shutil.copytree(store, clone)
    report = run_sweep(spec, clone, client=client, resume=True)
    assert any("sweep.json" in n and MANIFEST in n for n in report.notes) and report.ran == 0
    with pytest.raises(OptionError, match="another sweep spec"):       # and still one spec per store
        run_sweep(cross_spec({"mu1": [0.5, 4.0], "mu2": [0.1, 3.0]}), store, client=client)
    # opening it to write moved the manifest out of the readers' way (the refusal too)
    assert not (store / "sweep.json").exists() and json.loads((store / MANIFEST).read_text())["runs"] == 4
    report = run_sweep(spec, store, client=client, resume=True)          # the same spec: nothing rerun
    assert report.skipped == 4 and report.ran == 0
    same(one_row_per_run(store, 4), reference)


# ----------------------------------------------------------------------------- time limits, statuses, exit codes

def spin_when_mu1_high(tr):
    """A user observable that never returns for the runs with mu1 > 4."""
    if tr.parameters["mu1"] > 4:
        while True:
            pass
    return 1.0


def test_run_past_its_time_limit_is_stored_as_timeout_and_the_sweep_goes_on(client, tmp_path):
    spec = cross_spec({"mu1": [0.5, 2.0, 8.0], "mu2": [0.1, 1.0]}, observables=[spin_when_mu1_high])
    # (a run here takes milliseconds, a first run on a fresh worker ~1-3 s: 5 s are ample; each spinning run costs it)
    report = run_sweep(spec, tmp_path / "s", client=client, batch_size=6, timeout=5.0)
    df = load_results(tmp_path / "s")
    assert report.complete and len(df) == 6
    spun = df[df.status == "TIMEOUT"]
    assert list(spun.mu1) == [8.0, 8.0] and report.counts["TIMEOUT"] == 2
    assert spun.message.str.contains("timeout = 5 s").all() and spun.spin_when_mu1_high.isna().all()
    assert (df.loc[df.status != "TIMEOUT", "spin_when_mu1_high"].dropna() == 1.0).all()
    assert (df[df.mu1 < 4].status != "TIMEOUT").all() and list(spun.run) == [4, 5]   # the batch went on after run 4
    assert report.failed == (~df.status.isin(ANSWERS)).sum() and "TIMEOUT" in report.summary()
    # retry_failed reruns the timed-out runs (here they spin again)
    again = run_sweep(spec, tmp_path / "s", client=client, retry_failed=True, timeout=1.0)
    assert again.ran == len(spun) and again.counts == report.counts
    assert load_results(tmp_path / "s").message.str.contains("timeout = 1 s").sum() == len(spun)


def test_run_timeout_on_the_command_line_stops_endless_simulations(tmp_path):
    spec = tmp_path / "osc.toml"
    spec.write_text(_toml({"sweep": {"model": str(OSC), "t_span": [0.0, 1e6]}, "grid": {"F0": [4.0, 8.0]},
                           "options": {"max_events": 10 ** 9, "samples": 3, "max_step": 0.05}}))
    done = cli("sweep", spec, "--store", tmp_path / "s", "--workers", "1", "--run-timeout", "3")
    assert done.returncode == 1, done.stderr
    df = load_results(tmp_path / "s")
    assert (df.status == "TIMEOUT").all() and df.message.str.contains("reached t = ").all(), df.message.tolist()
    assert "2 failed" in done.stdout and done.stdout.count("TIMEOUT") >= 3


def test_exit_status_counts_every_status_but_success(tmp_path):
    spec = write_spec(tmp_path / "bad.toml", {"m2": [-1.0, -2.0]})             # the model refuses m2 < 0
    done = cli("sweep", spec, "--store", tmp_path / "s", "--workers", "1")
    assert done.returncode == 1, done.stderr
    assert "2 failed" in done.stdout and "FAILED    run 0 (m2=-1): ModelError" in done.stdout
    ok = cli("sweep", write_spec(tmp_path / "ok.toml", {"mu1": [0.5, 1.0]}), "--store", tmp_path / "t",
             "--workers", "1")
    assert ok.returncode == 0 and "0 failed" in ok.stdout, ok.stdout + ok.stderr


@pytest.mark.parametrize("args, words", [
    (["--workers", "-1"], ["--workers", "-1"]), (["--workers", "0"], ["--workers"]),
    (["--batch-size", "-3"], ["--batch-size", "-3"]), (["--batch-size", "x"], ["--batch-size"]),
    (["--run-timeout", "0"], ["--run-timeout"]), (["--run-timeout", "nan"], ["--run-timeout"]),
])
def test_bad_options_stop_before_anything_starts(tmp_path, capsys, args, words):
    spec = write_spec(tmp_path / "s.toml", GRID)
    with pytest.raises(SystemExit) as exc:
        pympc.cli.main(["sweep", str(spec), "--store", str(tmp_path / "s"), *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words) and not (tmp_path / "s").exists()


@pytest.mark.parametrize("kwargs", [dict(n_workers=-1), dict(n_workers=1.5), dict(batch_size=0),
                                    dict(batch_size=True), dict(timeout=-1.0), dict(timeout=float("inf")),
                                    dict(progress=3), dict(scheduler=8786)])
def test_bad_arguments_of_run_sweep(tmp_path, kwargs):
    name = next(iter(kwargs))
    with pytest.raises(OptionError, match=name):
        run_sweep(cross_spec(GRID), tmp_path / "s", **kwargs)
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("table, key, value, words", [
    ("sweep", "model", 42, ["[sweep] model", "42"]),
    ("sweep", "t_span", "abc", ["[sweep] t_span"]),
    ("sweep", "observables", "status", ["[sweep] observables"]),
    ("sweep", "store", 5, ["[sweep] store"]),
    ("sweep", "batch_size", 2.5, ["[sweep] batch_size"]),
    ("options", "timeout", "10", ["[options] timeout"]),
    ("options", "timeout", -1, ["[options] timeout"]),
    ("options", "samples", "many", ["[options]", "samples"]),
    ("options", "project_initial", 1, ["[options] project_initial"]),
    ("options", "t_eval", "x", ["[options] t_eval"]),
    ("options", "baumgarte", 3, ["[options] baumgarte"]),
    ("grid", "mu1", {"start": 0.0, "stop": 1.0, "step": "x"}, ["[grid]", "mu1", "step"]),
    ("grid", "mu1", {"start": 0.1, "stop": 1.0, "num": 3, "log": "yes"}, ["[grid]", "mu1", "log"]),
    ("parameters", "P", "x", ["[parameters]"]),
])
def test_every_type_error_in_a_spec_names_file_table_and_key(tmp_path, capsys, table, key, value, words):
    data = {"sweep": {"model": str(CROSS), "t_span": [0.0, 0.2]}, "grid": {"mu1": [0.5, 1.0]}}
    data.setdefault(table, {})[key] = value
    path = tmp_path / "typed.toml"
    path.write_text(_toml(data))
    assert pympc.cli.main(["sweep", str(path), "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pympc: error:") and str(path) in err and all(w in err for w in words), err
    assert "Traceback" not in err and not (tmp_path / "s").exists()


def test_run_keys_keep_their_formula():
    """Stores written before stay resumable only while a run's key is computed as it was: SHA-256 (first 32 hex
    digits) of the JSON of model hash, parameters (repr of floats, sorted), time span, options (repr, sorted),
    observable names and pympc version."""
    import hashlib

    import pympc
    spec = cross_spec(GRID)
    for p in spec.runs:
        blob = json.dumps({"model": spec.model.hash, "params": sorted((k, repr(float(v))) for k, v in p.items()),
                           "t_span": spec.t_span, "options": sorted((k, repr(v)) for k, v in spec.options.items()),
                           "observables": spec.observable_names(), "version": pympc.__version__}, sort_keys=True)
        assert spec.key(p) == hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]
    from pympc.sweep import SweepSpec
    timed = SweepSpec.from_dict({"sweep": {"model": str(CROSS), "t_span": [0.0, 0.2]}, "grid": GRID,
                                 "options": {"samples": 21, "timeout": 5.0}})
    assert timed.timeout == 5.0 and timed.options == spec.options
    assert [timed.key(p) for p in timed.runs] == [spec.key(p) for p in spec.runs]   # the time limit is not in it


def test_fixed_parameters_and_grid_values_take_the_model_language(tmp_path):
    """[parameters] and [grid] list entries may be expressions (issue 30.4), parsed by the model file's parser."""
    from pympc.sweep import load_spec
    from pympc.errors import ModelError
    spec = tmp_path / "expr.toml"
    spec.write_text(_toml({"sweep": {"model": str(OSC), "t_span": [0.0, 1.0]}, "parameters": {"w": "pi/4"},
                           "grid": {"F0": ["2*K", 3.0]}}))
    s = load_spec(spec)
    assert [r["F0"] for r in s.runs] == [30.0, 3.0] and all(r["w"] == np.pi / 4 for r in s.runs)
    spec.write_text(_toml({"sweep": {"model": str(OSC), "t_span": [0.0, 1.0]}, "parameters": {"w": "pi/"},
                           "grid": {"F0": [3.0]}}))
    with pytest.raises(ModelError, match=r"\[parameters\] w: cannot parse 'pi/'"):
        load_spec(spec)


@pytest.mark.parametrize("bounds", [[0.1, float("inf")], [float("-inf"), 0.5], [0.1, float("nan")]])
def test_a_sample_needs_finite_bounds(tmp_path, bounds):
    from pympc.sweep import load_spec
    spec = tmp_path / "inf.toml"
    spec.write_text(_toml({"sweep": {"model": str(OSC), "t_span": [0.0, 1.0]},
                           "sample": {"n": 4, "bounds": {"mu": bounds}}}))
    with pytest.raises(OptionError, match=r"bounds.mu: .* not a finite range"):
        load_spec(spec)
