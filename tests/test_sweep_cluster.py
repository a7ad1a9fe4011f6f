"""A sweep on a Dask cluster started by hand (``dask scheduler``, ``dask worker``), one worker killed mid-sweep."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
from conftest import python_env, start_python
from test_sweep import OSC, _toml

from pympc.sweep import load_results
from pympc.sweep.store import ResultStore

distributed = pytest.importorskip("distributed")
DASK = shutil.which("dask", path=os.path.dirname(sys.executable)) or shutil.which("dask")


@pytest.fixture
def cluster(tmp_path):
    """A scheduler and two single-threaded workers (no nanny: the pid is the worker) on 127.0.0.1, ports chosen
    by the system; the workers import this session's pympc (PYTHONPATH).  Always torn down."""
    if DASK is None:
        pytest.skip("the dask command is not installed")
    env = python_env()
    info = tmp_path / "scheduler.json"
    procs = []

    def start(*args):
        p = subprocess.Popen([DASK, *args], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=open(tmp_path / f"dask-{len(procs)}.log", "w"), start_new_session=True)
        procs.append(p)
        return p
    try:
        start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(info))
        for _ in range(600):
            if info.exists() and info.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        workers = [start("worker", address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1",
                         "--no-dashboard", "--name", f"w{i}") for i in range(2)]
        from dask.distributed import Client
        with Client(address, timeout=120) as c:
            c.wait_for_workers(2, timeout=300)
        yield address, workers, env
    finally:
        for p in reversed(procs):    # workers first, each to its end: one whose scheduler is gone waits ~30 s to leave
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)


def test_sweep_on_a_scheduler_survives_a_killed_worker(cluster, tmp_path):
    address, workers, env = cluster
    n = 40
    spec = tmp_path / "osc.toml"
    spec.write_text(_toml({"sweep": {"model": str(OSC), "t_span": [0.0, 3.0], "batch_size": 1},
                           "grid": {"F0": {"start": 4.0, "stop": 12.0, "num": n}}}))
    store = tmp_path / "store"
    proc = start_python("-m", "pympc.cli", "sweep", spec, "--store", store, "--scheduler", address, env=env,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        while len(list(store.glob("part-*.parquet"))) < 3 and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        os.kill(workers[0].pid, signal.SIGKILL)           # mid-sweep: the other worker finishes the sweep
        out, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert workers[0].wait(timeout=60) == -signal.SIGKILL and workers[1].poll() is None
    assert proc.returncode == 0, (out, err)
    assert f"{n} run now, 0 already stored, 0 failed, 0 other outcomes, 0 lost" in out
    df = load_results(store)
    assert len(df) == n and df.key.is_unique and sorted(df.run) == list(range(n)) and (df.status == "SUCCESS").all()
    raw = pd.read_parquet(store)                        # every run stored exactly once, as any reader sees it
    assert len(raw) == n and raw.key.is_unique
    assert sum(len(pd.read_parquet(p)) for p in ResultStore(store).parts()) == n
