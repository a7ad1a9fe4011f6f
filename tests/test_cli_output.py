"""What ``pympc simulate`` writes, and how: the CSV without pandas, the figures from helper processes (issue 28)."""

import io
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from conftest import MODELS, ROOT

import pympc
from pympc import _forked
from pympc.cli import main
from pympc.dynamics import SimulationStatus, Trajectory
from pympc.dynamics.export import _write_csv


def _awkward(n=7):
    """A trajectory whose table holds NaN, ±inf, −0.0, tiny and huge numbers and int/bool columns."""
    t = np.linspace(0.0, 1.0, n)
    q = np.column_stack([t, np.array([0.1, -0.0, 1e-300, 1e300, np.inf, -np.inf, 1 / 3])[:n]])
    f = np.column_stack([np.full(n, np.nan), np.sin(t)])
    return Trajectory(t=t, q=q, qd=2 * q, normal_force=f, friction_force=-f, slip_velocity=f ** 2,
                      walls=np.ones((n, 2), int), motions=np.array([[-1, 0]] * n), kinetic=t, potential=-t,
                      dissipated=0 * t, work=t / 7, drift=0 * t, events=[], status=SimulationStatus.SUCCESS,
                      message="", coordinate_names=["b.x", "b.y"], slot_names=["a,b", 'q"s'],
                      slot_position=np.column_stack([t, np.full(n, np.nan)]))


@pytest.mark.parametrize("events", [False, True])
def test_the_csv_is_the_text_pandas_writes(events):
    """The oracle: pandas' own DataFrame.to_csv of the same table (quoting of odd names, NaN, inf, -0.0)."""
    pd = pytest.importorskip("pandas")
    for tr in (_awkward(), pympc.simulate(MODELS / "cross_slide.toml", (0.0, 1.0))):
        mine = io.StringIO()
        _write_csv(mine, tr._table(events))
        theirs = io.StringIO()
        tr.to_dataframe(events=events).to_csv(theirs, index=False, lineterminator="\n")
        assert mine.getvalue() == theirs.getvalue()
        back = pd.read_csv(io.StringIO(mine.getvalue()))
        assert np.array_equal(back["t"].to_numpy(), tr.t[slice(None) if events else tr.sample_rows()])


def test_to_csv_reads_back_and_keeps_float_format(tmp_path):
    pd = pytest.importorskip("pandas")
    tr = _awkward()
    df = pd.read_csv(tr.to_csv(tmp_path / "a.csv"), comment="#")
    assert list(df.columns) == list(tr.to_dataframe().columns)
    assert np.array_equal(df["b.y"].to_numpy(), tr.q[:, 1]) and df["a,b.normal_force"].isna().all()
    text = tr.to_csv(tmp_path / "b.csv", float_format="%.3f").read_text()
    assert "0.167" in text and "0.16666" not in text          # pandas' float_format still applies


def test_simulate_without_plots_imports_neither_pandas_nor_matplotlib(tmp_path):
    argv = ["simulate", str(MODELS / "cross_slide.toml"), "--no-plots", "--out", str(tmp_path)]
    code = ("import sys\nfrom pympc.cli import main\n"
            f"assert main({argv!r}) == 0\n"
            "print(sorted(m for m in ('pandas', 'matplotlib', 'pyomo') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "trajectory.csv").stat().st_size > 1000


def test_the_figures_from_helper_processes_are_the_in_process_figures(tmp_path, monkeypatch, capsys):
    """Byte for byte the PNGs plot_trajectory writes in this process; listed in the same order, after the helpers
    wrote them.  The helpers' run is a fresh process (the command as a person runs it: one thread)."""
    args = ["simulate", str(MODELS / "cross_slide.toml"), "--t-end", "1"]
    code = ("import sys\nfrom pympc import _forked\nstart = _forked.start\nmade = []\n"
            "_forked.start = lambda prepare=None: made.append(start(prepare)) or made[-1]\n"
            "from pympc.cli import main\ncode = main(sys.argv[1:])\n"
            "print('helpers:', [h is not None and h.pid is None for h in made])\nsys.exit(code)\n")
    r = subprocess.run([sys.executable, "-c", code, *args, "--out", str(tmp_path / "helper")], capture_output=True,
                       text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr
    *_, helped, made = r.stdout.splitlines()
    if sys.platform.startswith("linux") and _forked._usable_cores() > 1:
        assert made == "helpers: [True]"                 # a helper drew them, and was waited for
    monkeypatch.setattr(_forked, "start", lambda prepare=None: None)        # no helper: drawn here
    assert main(args + ["--out", str(tmp_path / "here")]) == 0
    alone = capsys.readouterr().out.splitlines()[-1]
    assert helped.replace(str(tmp_path / "helper"), str(tmp_path / "here")) == alone
    names = ["coordinates", "velocities", "forces", "slots", "modes", "energy"]
    assert [p.rsplit("/", 1)[-1] for p in alone.removeprefix("wrote     ").split(", ")] == \
        ["run.json", "trajectory.npz", "trajectory.csv"] + [f"{n}.png" for n in names]
    for n in names:
        assert (tmp_path / "helper" / f"{n}.png").read_bytes() == (tmp_path / "here" / f"{n}.png").read_bytes(), n


def test_a_figure_that_cannot_be_written_is_an_error_of_the_command(tmp_path, capsys):
    (tmp_path / "energy.png").mkdir(parents=True)          # a directory where the figure goes
    assert main(["simulate", str(MODELS / "cross_slide.toml"), "--t-end", "0.5", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr()
    assert "energy.png" in err.err and "wrote" not in err.out


def _job(kind):
    if kind == "raise":
        raise FileNotFoundError(2, "No such file or directory", "/nowhere/x.png")
    if kind == "exit":
        os._exit(7)
    return kind


def _double(x):
    return 2 * x, os.getpid()


def _helper():
    """A Helper made directly (start() would refuse in a test process that runs other threads; these jobs take
    no lock a thread could hold)."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    return _forked.Helper()


def test_start_forks_only_where_it_is_safe(monkeypatch):
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert _forked.start() is None
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(_forked, "_usable_cores", lambda: 1)
    assert _forked.start() is None
    monkeypatch.setattr(_forked, "_usable_cores", lambda: 2)
    monkeypatch.setattr(sys, "platform", "darwin")
    assert _forked.start() is None


def test_helper_runs_each_job_in_its_own_process_and_returns_results_in_order():
    helper = _helper()
    try:
        helper.submit(_double, [(1,), (20,), (300,)])
        results = helper.result()
    finally:
        helper.close()
    assert [r[0] for r in results] == [2, 40, 600]
    pids = {r[1] for r in results}
    assert len(pids) == 3 and os.getpid() not in pids


def test_helper_errors_are_raised_in_the_caller():
    helper = _helper()
    helper.submit(_job, [("ok",), ("raise",)])
    with pytest.raises(FileNotFoundError) as info:         # raised in a fork of the helper
        helper.result()
    assert info.value.filename == "/nowhere/x.png" and "helper process" in "".join(info.value.__notes__)
    helper = _helper()
    helper.submit(_job, [("ok",), ("exit",)])             # a fork of the helper dies: its exit status is named
    with pytest.raises(RuntimeError, match="exit status 7"):
        helper.result()
    helper = _helper()
    helper.submit(_job, [("exit",)])                      # the helper itself dies
    with pytest.raises(RuntimeError, match="exit status 7"):
        helper.result()


def test_a_helper_given_no_work_is_ended_at_once():
    import time
    helper = _helper()
    pid = helper.pid
    t = time.perf_counter()
    helper.close()
    assert time.perf_counter() - t < 60            # (not a speed test: close must not wait for work that never came)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_failing_run_ends_its_helper(tmp_path, monkeypatch):
    """An error after the helper was started (here: the simulation fails) ends the helper."""
    made = []
    monkeypatch.setattr(_forked, "start", lambda prepare=None: made.append(_helper()) or made[-1])

    def fails(*args, **kwargs):
        raise pympc.errors.SimulationError("simulated failure")
    monkeypatch.setattr(pympc, "simulate", fails)
    assert main(["simulate", str(MODELS / "cross_slide.toml"), "--t-end", "1", "--out", str(tmp_path)]) == 2
    assert len(made) == 1 and made[0].pid is None            # ended and waited for


def test_the_command_process_ends_after_its_exit_handlers_with_its_output_whole(tmp_path):
    """``run`` (the console script) ends a simulate process without the interpreter's teardown: what it printed is all
    there, exit handlers ran, and the exit code is the command's."""
    code = ("import atexit, sys\natexit.register(lambda: print('exit handler ran'))\n"
            "from pympc.cli import run\nsys.argv[1:] = sys.argv[2:]\nrun()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ok = subprocess.run([sys.executable, "-c", code, "-", "simulate", str(MODELS / "cross_slide.toml"), "--no-plots",
                         "--out", str(tmp_path / "a")], capture_output=True, text=True, cwd=ROOT, env=env)
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[0].startswith("model     cross_slide") and lines[-2].startswith("wrote     ")
    assert lines[-1] == "exit handler ran" and lines[-2].endswith("trajectory.csv")
    bad = subprocess.run([sys.executable, "-c", code, "-", "simulate", str(tmp_path / "missing.toml")],
                         capture_output=True, text=True, cwd=ROOT, env=env)
    assert bad.returncode == 2 and "missing.toml" in bad.stderr and bad.stdout == "exit handler ran\n"
