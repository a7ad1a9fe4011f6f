"""The compiled DOP853 loop (pympc.dynamics._dop853) against scipy's ``solve_ivp(method="DOP853")``.

Oracle: scipy itself, on the same compiled right-hand side: the same step times, the same dense output, the
same event stop, the same failures.  And the driver: a simulation through the compiled loop equals one
through solve_ivp (the loop switched off), event for event.

Always asserted: agreement to the integration's accuracy (a different summation order in one BLAS call moves
DOP853's step ends by ~1e-6 relative, so equality to round-off cannot be asked of every machine).  To
round-off as well when numba's ``np.dot`` and numpy's give the same bits on this machine (``conftest.same_blas``).
"""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import record_calls, same_blas
from scipy.integrate import solve_ivp

import pympc
from pympc.dynamics import Baumgarte, Mode, Motion
from pympc.dynamics import _dop853
from pympc.dynamics.crossings import DenseStates
from pympc.dynamics.modes import CompiledModes
from pympc.dynamics import SimulateOptions
from pympc.dynamics.evaluation import ModeEvaluator
from pympc.dynamics.locate import EventLocator, lowest
from pympc.dynamics.simulate import make_formulation
from pympc.dynamics.stepper import PhaseStepper
from pympc.mechanics import Particle, PointForce, Slot, System, slider_chain

MODELS = Path(__file__).parents[1] / "models"


SAME_BLAS = same_blas()


def _run(system, t_end):
    """The parts of a run of ``system`` on (0, t_end): its evaluator (``run.ev``, and its ``form``, ``n``, ``mu``,
    ``_fast``, ``rhs``), event locator (``run.locator``) and phase stepper (``run.stepper``)."""
    o = SimulateOptions().resolve(system, (0.0, t_end))
    ev = ModeEvaluator(make_formulation(system), Baumgarte())
    locator = EventLocator(ev, o)
    return SimpleNamespace(ev=ev, form=ev.form, n=ev.n, mu=ev.mu, _fast=ev._fast, rhs=ev.rhs, locator=locator,
                           stepper=PhaseStepper(ev, locator, o))


def _cases():
    osc = pympc.load_model(MODELS / "friction_oscillator.toml")
    return {"oscillator": (osc, Mode((1,), (Motion.FORWARD,))),
            "chain6": (slider_chain(6), Mode((1,) * 6, (Motion.FORWARD, Motion.STICK, Motion.BACKWARD) * 2))}


def _state(run, rng):
    q, qd = run.form.initial_state()
    return np.concatenate([q, qd + 0.3 * rng.standard_normal(qd.size), [0.0, 0.0]])


@pytest.mark.parametrize("case", ["oscillator", "chain6"])
@pytest.mark.parametrize("max_step", [np.inf, 0.05])
def test_the_compiled_loop_takes_scipys_steps(case, max_step, rng):
    system, mode = _cases()[case]
    run = _run(system, 3.0)
    fl, il, _ = run._fast.flat(mode)
    x0 = _state(run, rng)
    t_eval = np.sort(rng.uniform(0.0, 2.0, 9))
    ref = solve_ivp(run.rhs, (0.0, 2.0), x0, method="DOP853", rtol=1e-10, atol=1e-12, max_step=max_step,
                    t_eval=t_eval, args=(mode,), dense_output=True)
    got = _dop853.integrate(None, 0.0, 2.0, x0, fl, il, 1e-10, 1e-12, max_step, t_eval)
    assert ref.status == got.status == 0
    assert len(ref.sol.ts) > 10 and abs(len(got.sol.ts) - len(ref.sol.ts)) <= 0.05 * len(ref.sol.ts) + 2
    np.testing.assert_array_equal(got.t, ref.t)
    scale = np.abs(ref.y).max()
    ts = np.linspace(0.0, 2.0, 333)
    tol = 1e-12 if SAME_BLAS else 1e-8       # round-off, or the accuracy of two valid integrations
    if SAME_BLAS:
        assert got.nfev == ref.nfev and len(got.sol.ts) == len(ref.sol.ts)
        np.testing.assert_allclose(got.sol.ts, ref.sol.ts, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got.y, ref.y, rtol=0, atol=tol * scale)
    np.testing.assert_allclose(got.sol(ts), ref.sol(ts), rtol=0, atol=tol * scale)
    np.testing.assert_allclose(got.sol(0.7), ref.sol(0.7), rtol=0, atol=tol * scale)
    if not SAME_BLAS:
        return
    # the stack is what DenseStates builds from scipy's interpolants
    mine, theirs = DenseStates(got.sol), DenseStates(ref.sol)
    for a, b in zip(mine.stack, theirs.stack):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(1.0, np.abs(b).max()))


def test_a_loop_that_runs_out_of_room_goes_on_where_it_stopped(rng, monkeypatch):
    system, mode = _cases()["oscillator"]
    run = _run(system, 30.0)
    fl, il, _ = run._fast.flat(mode)
    x0 = _state(run, rng)
    whole = _dop853.integrate(None, 0.0, 20.0, x0, fl, il, 1e-10, 1e-12, np.inf, ())
    monkeypatch.setattr(_dop853, "_CHUNK", 3)
    pieces = _dop853.integrate(None, 0.0, 20.0, x0, fl, il, 1e-10, 1e-12, np.inf, ())
    assert len(whole.sol.ts) > 20
    np.testing.assert_array_equal(pieces.sol.ts, whole.sol.ts)
    for a, b in zip(pieces.sol.stack, whole.sol.stack):
        np.testing.assert_array_equal(a, b)


def _forward_slip(rng, v):
    """The oscillator's run, forward-slip mode, its event functions and a state slipping at ``v``."""
    run = _run(pympc.load_model(MODELS / "friction_oscillator.toml"), 30.0)
    mode = Mode((1,), (Motion.FORWARD,))
    x0 = _state(run, rng)
    x0[run.n] = v
    return run, mode, run.locator.functions(mode, 10.0), x0


def test_the_event_stop_is_solve_ivps(rng):
    """The slip velocity of the oscillator reaching zero: solve_ivp's terminal event on the lowest function."""
    run, mode, funcs, x0 = _forward_slip(rng, 1.0)    # slipping forward at 1 m/s: it stops within a second
    g0 = funcs.vector(0.0, x0)
    watched = np.flatnonzero(g0 > 0)
    hint = lowest(funcs.vector, watched)
    ref = solve_ivp(run.rhs, (0.0, 5.0), x0, method="DOP853", rtol=1e-10, atol=1e-12, args=(mode,),
                    dense_output=True, events=hint, t_eval=np.linspace(0.1, 4.9, 25))
    got = run.stepper.integrate(mode, funcs, 0.0, 5.0, x0, np.linspace(0.1, 4.9, 25), np.inf, watched)
    assert isinstance(got, _dop853.Dop853Result)
    assert ref.status == got.status == 1
    assert 0 < got.t_events[0][0] < 5.0
    tol = 1e-12 if SAME_BLAS else 1e-8       # round-off, or the accuracy of two valid integrations
    assert got.t_events[0][0] == pytest.approx(ref.t_events[0][0], rel=tol, abs=tol)
    np.testing.assert_allclose(got.y_events[0][0], ref.y_events[0][0], rtol=tol, atol=tol)
    if SAME_BLAS:
        np.testing.assert_allclose(got.sol.ts, ref.sol.ts, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(got.t, ref.t)
    assert abs(hint(got.t_events[0][0], got.y_events[0][0])) < 1e-9
    # without watched functions it runs to the end
    free = run.stepper.integrate(mode, funcs, 0.0, 5.0, x0, (), np.inf, np.array([], int))
    assert free.status == 0 and free.t_events is None and free.sol.ts[-1] == 5.0


def test_a_failing_right_hand_side_stops_the_run_as_solve_ivp_does(monkeypatch):
    """A pushing force sqrt(0.5 − t) is NaN after 0.5 s: the compiled loop hands the failing point to the
    Python right-hand side, which raises the driver's error, as inside solve_ivp."""
    def build():
        s = System("push until 0.5 s")
        s.add(Particle("p", mass=1.0))
        s.add(Slot("slot", "p", "ground", mu=0.2))
        s.add(PointForce("push", "p", value=("5*sqrt(0.5 - t)", -10.0)))
        return s

    run = _run(build(), 1.0)
    fl, il, _ = run._fast.flat(Mode((1,), (Motion.FORWARD,)))
    with pytest.raises(ValueError, match="entries"):       # a state of the wrong size is refused, not written past
        _dop853.integrate(None, 0.0, 0.4, np.zeros(2 * run.n + 1), fl, il, 1e-10, 1e-12, np.inf, ())
    fast = pympc.simulate(build(), (0.0, 1.0))
    monkeypatch.setattr(CompiledModes, "flat", lambda self, mode: None)
    plain = pympc.simulate(build(), (0.0, 1.0))
    assert fast.info["integrator"] == "compiled DOP853"
    assert fast.status.name == plain.status.name == "ERROR"
    assert "cannot be evaluated" in fast.message
    assert fast.message.split(": ", 1)[1] == plain.message.split(": ", 1)[1]


@pytest.mark.parametrize("model", ["friction_oscillator", "chain8"])
def test_simulations_through_the_loop_equal_those_through_solve_ivp(model, monkeypatch):
    def make():
        return slider_chain(8) if model == "chain8" else pympc.load_model(MODELS / f"{model}.toml")
    system = make()
    span = (0.0, 1.0) if model == "chain8" else (0.0, 12.0)
    # the compiled loop: a window in one call, or integrate
    loop, windows = (record_calls(monkeypatch, _dop853, name) for name in ("integrate", "dop853_window"))
    fast = pympc.simulate(system, span)
    assert loop or windows, "the compiled loop did not run"
    monkeypatch.setattr(CompiledModes, "flat", lambda self, mode: None)
    loop.clear(), windows.clear()
    # (another System object: the setup the first run left with ``system``, compiled tables and all, is not used)
    plain = pympc.simulate(make(), span)
    assert not loop and not windows
    assert fast.success and plain.success
    assert [(e.kind, e.slot) for e in fast.events] == [(e.kind, e.slot) for e in plain.events]
    tol = 1e-12 if SAME_BLAS else 1e-8       # round-off, or the accuracy of two valid integrations
    np.testing.assert_allclose([e.time for e in fast.events], [e.time for e in plain.events], rtol=0, atol=tol)
    np.testing.assert_allclose(fast.t, plain.t, rtol=0, atol=tol)
    np.testing.assert_allclose(fast.q, plain.q, rtol=0, atol=100 * tol * max(1.0, np.abs(plain.q).max()))
    np.testing.assert_allclose(fast.dissipated, plain.dissipated, rtol=100 * tol, atol=tol)
    assert fast.info["integrator"] == "compiled DOP853" and plain.info["integrator"] == "solve_ivp (DOP853)"


def test_other_methods_keep_solve_ivp(monkeypatch):
    # (DOP853 sensitivity runs go through the loop: tests/test_sensitivity.py)
    system = pympc.load_model(MODELS / "friction_oscillator.toml")
    monkeypatch.setattr(_dop853, "integrate", lambda *a, **k: pytest.fail("the compiled loop ran"))
    tr = pympc.simulate(system, (0.0, 3.0), method="RK45", samples=5)
    assert tr.success and tr.info["integrator"] == "solve_ivp (RK45)"
    tr = pympc.simulate(system, (0.0, 2.0), method="RK45", sensitivities=["K"], samples=5)
    assert tr.success and tr.info["integrator"] == "solve_ivp (RK45)"


def _slipping_piece(rng):
    """A piece of a forward slip of the oscillator that ends with the slip velocity crossing zero."""
    run, mode, funcs, x0 = _forward_slip(rng, 1.0 + rng.uniform(0, 0.5))
    sol = run.stepper.integrate(mode, funcs, 0.0, 5.0, x0, (), np.inf, np.array([], int))
    return run, mode, funcs, sol


def test_the_compiled_brentq_is_scipys(rng):
    from scipy.optimize import brentq
    run, mode, funcs, sol = _slipping_piece(rng)
    fl, il, offs = run._fast.flat(mode)
    slot, cv, cl, cf, band = funcs.vector.table
    tab = (*offs, slot, cv, cl, cf, band)
    G = lambda s: funcs.vector(s, sol.sol(s))  # noqa: E731
    ts = sol.sol.ts
    g = np.array([G(s)[0] for s in ts])
    k = int(np.flatnonzero(g < 0)[0])          # the step in which the slip velocity changes sign
    assert g[k - 1] > 0
    for a in (ts[k - 1], 0.5 * (ts[k - 2] + ts[k - 1]), ts[0]):
        for xtol in (1e-15, 1e-9, 1e-3):
            ref = brentq(lambda s: G(s)[0], a, ts[k], xtol=xtol, rtol=4 * np.finfo(float).eps)
            got, ok = _dop853.brentq_dense(0, a, ts[k], xtol, 4 * np.finfo(float).eps, *sol.sol.stack, fl, il, tab,
                                           np.empty((1, slot.size)))
            assert ok and got == ref
    _, ok = _dop853.brentq_dense(0, ts[0], ts[1], 1e-15, 1e-15, *sol.sol.stack, fl, il, tab, np.empty((1, slot.size)))
    assert not ok                              # no sign change: scipy raises, the compiled one says so


def test_the_compiled_scan_is_the_python_one(rng, monkeypatch):
    """first_crossing over a piece with and without G.scan: the same crossing, to the bit."""
    from pympc.dynamics import crossings
    run, mode, funcs, sol = _slipping_piece(rng)
    whole = run.locator.on_dense(sol, 0.0, 5.0, funcs)     # the whole search compiled (first_crossing_dense)
    calls = []
    original = _dop853.scan_dense

    def counted(*args):
        out = original(*args)
        calls.append(out)
        return out

    monkeypatch.setattr(_dop853, "scan_dense", counted)
    monkeypatch.setattr(funcs.vector, "search", None)       # first_crossing in Python, its scans compiled
    got = run.locator.on_dense(sol, 0.0, 5.0, funcs)
    assert got[0] == whole[0] and got[1] == whole[1]
    np.testing.assert_array_equal(got[2], whole[2])
    assert calls and calls[-1][2] == _dop853.SCAN_OK
    # a direct comparison on one interval the curvature bound leaves open
    G = lambda s: funcs.vector(s, sol.sol(s))  # noqa: E731
    G.many = lambda ts: funcs.vector.dense(ts, DenseStates(sol.sol))
    a, b = got[0] - 0.3, got[0] + 0.2
    ga, gb = G(a), G(b)
    bound = np.full(ga.size, 50.0)
    direct = funcs.vector.scanner(sol.sol.stack)(a, ga, b, gb, bound, 1e-11)
    assert direct[0] is not None and direct == crossings._scan(G, a, ga, b, gb, bound, 1e-11)
    monkeypatch.setattr(funcs.vector, "scanner", lambda stack: None)
    ref = run.locator.on_dense(sol, 0.0, 5.0, funcs)
    assert got[0] is not None and got[0] == ref[0] and got[1] == ref[1]
    np.testing.assert_array_equal(got[2], ref[2])


def test_the_compiled_search_of_a_window_is_first_crossings(rng, monkeypatch):
    """first_crossing_dense against crossings.first_crossing (its scans compiled) on random windows of a
    slipping piece, with random extra sample times (step ends, some closer than dt_min to a grid time or to
    each other), and on the constant stack of a frozen phase: the same (time, index), to the bit."""
    from pympc.dynamics import crossings
    run, mode, funcs, sol = _slipping_piece(rng)
    locator, states = run.locator, DenseStates(sol.sol)
    G = lambda s: funcs.vector(s, sol.sol(s))  # noqa: E731
    G.many = lambda ts: funcs.vector.dense(ts, states)
    G.split = funcs.vector.split
    G.scan = funcs.vector.scanner(states.stack)
    end = sol.sol.ts[-1]
    found = 0
    for k in range(60):
        ta = rng.uniform(0.0, 0.9 * end)
        tb = rng.uniform(ta, end) if k % 3 else end
        extra = np.sort(np.concatenate([sol.sol.ts, rng.uniform(ta, tb, 3)]))
        if k % 4 == 0:               # samples within dt_min of others: thinned the same way
            extra = np.sort(np.concatenate([extra, extra[::5] + 3e-12, [ta + (tb - ta) / 8 + 1e-12]]))
        got = locator._compiled_search(funcs, states.stack, ta, tb, extra)
        ref = crossings.first_crossing(G, ta, tb, locator.window, extra)
        assert got == ref, (ta, tb)
        found += ref[0] is not None
    assert 10 < found < 60
    # a frozen phase: the state held, only the forcing moves (the stick phase's functions)
    stick = Mode((1,), (Motion.STICK,))
    ff = locator.functions(stick, 10.0)
    x = sol.sol(0.0).copy()
    x[run.n:2 * run.n] = 0.0
    got = locator.frozen(0.0, 30.0, x, ff)
    monkeypatch.setattr(ff.vector, "search", None)
    assert got == locator.frozen(0.0, 30.0, x, ff) and got[0] is not None


@pytest.mark.parametrize("model", ["friction_oscillator", "chain5"])
def test_the_trajectory_rows_of_a_phase_in_one_call_are_the_per_sample_ones(model, monkeypatch):
    system = slider_chain(5) if model == "chain5" else pympc.load_model(MODELS / f"{model}.toml")
    fast = pympc.simulate(system, (0.0, 2.0), samples=101)
    monkeypatch.setattr(CompiledModes, "rows", lambda self, ts, X, mode, *ranges_out: None)
    plain = pympc.simulate(system, (0.0, 2.0), samples=101)
    assert fast.success and plain.success and len(fast.t) > 100
    for key in ("t", "q", "qd", "normal_force", "friction_force", "slip_velocity", "walls", "motions", "kinetic",
                "potential", "dissipated", "work", "drift"):
        np.testing.assert_array_equal(getattr(fast, key), getattr(plain, key), err_msg=key)


def test_the_mode_solve_is_compiled_for_one_array_type():
    """Every caller passes C-contiguous writable arrays: one compiled copy of the solve (a read-only or
    strided argument would compile it again, ~10 s on a fresh install)."""
    from pympc.mechanics import _kernels
    for model in ("friction_oscillator", "slider_crank", "cross_slide"):
        assert pympc.simulate(MODELS / f"{model}.toml", (0.0, 0.5), samples=11).success
    sigs = _kernels.general_mode_timed.signatures
    assert sigs
    for sig in sigs:
        text = " ".join(map(str, sig))
        assert "readonly" not in text and ", A)" not in text, text


_TRAJECTORY_ARRAYS = ("t", "q", "qd", "normal_force", "friction_force", "slip_velocity", "walls", "motions", "kinetic",
                      "potential", "dissipated", "work", "drift")


def _same_runs(a, b):
    assert a.status == b.status and a.message == b.message
    assert [(e.time, e.kind, e.slot, e.mode_before, e.mode_after) for e in a.events] == \
        [(e.time, e.kind, e.slot, e.mode_before, e.mode_after) for e in b.events]
    for key in _TRAJECTORY_ARRAYS:
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)


@pytest.mark.parametrize("case", ["oscillator", "oscillator, mu 0.2, max_step", "inclined", "cross_slide", "chain5"])
def test_a_window_in_one_compiled_call_is_the_python_window_to_the_bit(case, monkeypatch):
    """_dop853.dop853_window (the event functions at the window's start, the compiled loop, its event's root, the
    search and the samples in one call) against the window in Python (integrate, on_dense, the hint): the same
    events, modes and samples, to the bit; cross_slide's slip phase spans several windows (no forcing: windows of
    64 scan steps).  A window the compiled call hands back (WINDOW_PYTHON) is done by the Python code: the same run."""
    kw = {}
    if case == "chain5":
        system, span = slider_chain(5), (0.0, 2.0)
    else:
        name = {"inclined": "inclined_slot_spring", "cross_slide": "cross_slide"}.get(case, "friction_oscillator")
        system, span = pympc.load_model(MODELS / f"{name}.toml"), None
    if "mu" in case:
        kw = {"params": {"mu": 0.2, "mu_s": 0.3}, "max_step": 0.05}
    original = _dop853.dop853_window
    codes = record_calls(monkeypatch, _dop853, "dop853_window", lambda out: out[0])
    fast = pympc.simulate(system, span, **kw)
    assert fast.success and fast.info["integrator"] == "compiled DOP853"
    assert codes and set(codes) <= {_dop853.WINDOW_END, _dop853.WINDOW_EVENT}, codes
    assert codes.count(_dop853.WINDOW_EVENT) >= len(fast.events) - 1 - sum(e.mode_before.sticking != []
                                                                           for e in fast.events[1:])
    if case == "cross_slide":
        assert codes.count(_dop853.WINDOW_END) >= 2          # a phase over several windows
    monkeypatch.setattr(_dop853, "dop853_window", lambda *args: (_dop853.WINDOW_PYTHON,) + original(*args)[1:])
    handed_back = pympc.simulate(system, span, **kw)
    _same_runs(fast, handed_back)
    monkeypatch.setattr(PhaseStepper, "_compiled_window", lambda self, *args: None)
    plain = pympc.simulate(system, span, **kw)
    assert plain.info["integrator"] == "compiled DOP853"
    _same_runs(fast, plain)
