"""A sweep run's time limit (pympc/sweep/worker.py): a simulation stops at a phase boundary, numba's preparation of
kernels is neither counted nor interrupted, and an interrupt that the code it lands in converts is still a TIMEOUT."""

import time
from pathlib import Path

import pytest
from numba.core.compiler_lock import global_compiler_lock

import pympc
from pympc.sweep.worker import Deadline, RunTimeout, run_one

OSC = Path(__file__).resolve().parents[1] / "models" / "friction_oscillator.toml"
ENDLESS = {"max_events": 10 ** 9, "samples": 3, "max_step": 0.05}


def test_a_simulation_past_its_limit_stops_at_a_phase_boundary_without_an_interrupt():
    system = pympc.load_model(OSC)
    with Deadline(0.2, grace=600.0) as d:           # the asynchronous interrupt would come only after 600 s
        with pytest.raises(RunTimeout):
            pympc.simulate(system, (0.0, 1e6), progress=d.progress, **ENDLESS)
    assert not d.fired and 0.0 < d.reached[0] < 1e6 and d.elapsed() > 0.2


def test_time_in_numbas_compiler_lock_is_not_the_runs_and_is_never_interrupted():
    with Deadline(0.05, grace=0.05) as d:
        with global_compiler_lock:                  # a compilation or a cache load holds it
            time.sleep(1.0)                         # the timer fires meanwhile (at 0.1 s, then every 0.2 s)
        assert d.elapsed() < 0.05
    assert not d.fired


def converts_the_interrupt(tr):
    """An observable that spins, inside code that turns every exception into its own."""
    try:
        while True:
            pass
    except BaseException as exc:
        raise ValueError("a library's own error") from exc


def test_an_interrupt_converted_by_the_code_it_lands_in_is_still_a_timeout():
    row = run_one(pympc.load_model(OSC), {}, (0.0, 0.5), {}, [converts_the_interrupt], timeout=0.1)
    assert row["status"] == "TIMEOUT", row
    assert "timeout = 0.1 s" in row["message"] and "raised as ValueError: a library's own error" in row["error"]


def test_an_exception_of_the_run_itself_is_failed():
    def fails(tr):
        raise ValueError("the observable's bug")
    row = run_one(pympc.load_model(OSC), {}, (0.0, 0.5), {}, [fails], timeout=60.0)
    assert row["status"] == "FAILED" and row["message"] == "ValueError: the observable's bug"
