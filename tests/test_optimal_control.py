"""Optimal control on the FESD model: piecewise-constant inputs (``trajectory_model(controls=...)``), verified
by replaying the answer with ``pympc.simulate`` (``fesd_control.simulate_inputs``).

Oracles: the event-driven simulator (final state of the optimal force history), the least-norm closed form of
the minimum-energy problem when the slider slips all the way (linear dynamics, two linear end conditions), and
a feasible bang-bang profile whose energy the optimizer must not exceed.
"""

import numpy as np
import pytest

pyo = pytest.importorskip("pyomo.environ")
pytest.importorskip("cyipopt")

from pympc.errors import OptionError                                    # noqa: E402
from pympc.identify import fesd                                         # noqa: E402
from pympc.identify.fesd_control import inputs_of, simulate_inputs      # noqa: E402
from pympc.mechanics import Gravity, Particle, PointForce, Slot, System  # noqa: E402

M, G, MU, D = 2.0, 9.81, 0.3, 1.0
STATE = {"x0": "block.x", "v0": "block.x_dot"}


def slider(push=8.0):
    s = System("slider")
    for name, value in [("m", M), ("g", G), ("mu", MU), ("u", push), ("x0", 0.0), ("v0", 0.0)]:
        s.add_parameter(name, value)
    s.add(Particle("block", mass="m", position=("x0", 0.0), velocity=("v0", 0.0)))
    s.add(Slot("slot", "block", "ground", mu="mu"))
    s.add(Gravity("gravity", g=(0.0, "-g")))
    s.add(PointForce("push", "block", value=("u", 0.0)))
    return s


def min_energy(system, t, w_early=0.0, sigmas=(1e-10,)):
    """The notebook's problem: rest at 0 -> rest at D, min sum u^2 dt (+ the arrival term)."""
    m = fesd.trajectory_model(system, t, elements=2, stages=3, controls=["u"], equilibrate=False)
    last, s = len(m.elements) - 1, len(m.stages)
    dt = np.diff(t)
    h0 = {e: m.h[e].value for e in m.elements}
    m.objective.deactivate()
    m.cost = pyo.Objective(expr=sum(m.u[k, "u"] ** 2 * float(dt[k]) for k in m.intervals)
                           + w_early * sum(h0[e] * (m.q[e, s, "block.x"] - D) ** 2 for e in m.elements)
                           + 1e-2 * sum((m.h[e] - h0[e]) ** 2 / h0[e] ** 2 for e in m.elements))
    m.at_target = pyo.Constraint(expr=m.q[last, s, "block.x"] == D)
    m.at_rest = pyo.Constraint(expr=m.v[last, s, "block.x"] == 0.0)
    return m, fesd.solve(m, sigmas=sigmas)


def final_error(runs):
    return abs(runs[-1].q[-1, 0] - D), abs(runs[-1].qd[-1, 0])


def test_short_horizon_matches_the_least_norm_closed_form_and_the_simulator():
    """T below sqrt(6D/(mu g)): slipping all the way is optimal; then x(T), v(T) are linear in u and the
    minimum of sum u^2 dt is the least-norm solution of two linear equations."""
    t = np.linspace(0.0, 1.2, 9)
    m, r = min_energy(slider(), t)
    assert r.ok, r.termination
    u = inputs_of(m)["u"]
    dt, f = np.diff(t), MU * M * G
    # v(T) = sum (u_k - f) dt_k / M = 0;  x(T) = sum (u_k - f)/M (dt_k (T - t_k+1) + dt_k^2 / 2) = D
    A = np.vstack([dt / M, (dt * (t[-1] - t[1:]) + dt ** 2 / 2) / M])
    b = np.array([0.0, D]) + A @ np.full(len(dt), f)
    W = np.sqrt(dt)                                   # min sum u^2 dt: least norm in z = u sqrt(dt)
    z = np.linalg.lstsq(A / W, b, rcond=None)[0]
    assert np.max(np.abs(u - z / W)) < 1e-6
    assert np.all(fesd.at_samples(m)[2][1:-1, 0] > 0.05)            # slipping forward all the way
    assert max(final_error(simulate_inputs(slider(), t, {"u": u}, STATE))) < 1e-8


def test_the_optimizer_decides_a_stop_and_beats_a_bang_bang_profile():
    """Long horizon, warm start slipping all the way (8 N constant): the answer stops the slider before T and
    keeps it stuck at the target; the simulator confirms; its energy is below a feasible bang-bang profile."""
    K, T = 10, 3.0
    t = np.linspace(0.0, T, K + 1)
    m, r = min_energy(slider(), t, w_early=5.0, sigmas=(1e-2, 1e-4, 1e-7, 1e-10))
    assert r.ok, r.termination
    u = inputs_of(m)["u"]
    runs = simulate_inputs(slider(), t, {"u": u}, STATE)
    assert max(final_error(runs)) < 1e-6
    ts = np.concatenate([tr.t for tr in runs])
    vs = np.concatenate([tr.qd[:, 0] for tr in runs])
    stuck = (np.abs(vs) < 1e-9) & (ts > 0.1)
    assert stuck.any() and ts[np.argmax(stuck)] < T - 0.2 and np.all(stuck[ts >= ts[np.argmax(stuck)]])
    t_s = t[K // 2]
    a1, a2 = 2 * D / (t_s * T), 2 * D / ((T - t_s) * T)
    u_bang = np.where(t[:-1] < t_s - 1e-12, M * a1 + MU * M * G, -M * a2 + MU * M * G)
    assert max(final_error(simulate_inputs(slider(), t, {"u": u_bang}, STATE))) < 1e-6
    dt = np.diff(t)
    assert np.sum(u ** 2 * dt) <= np.sum(u_bang ** 2 * dt)


def test_bad_controls_and_inputs_are_named():
    t = np.linspace(0.0, 1.0, 3)
    with pytest.raises(OptionError, match="nope"):
        fesd.trajectory_model(slider(), t, controls=["nope"])
    with pytest.raises(OptionError, match="mass matrix or a friction"):
        fesd.trajectory_model(slider(), t, controls=["mu"])
    with pytest.raises(OptionError, match="one value per interval"):
        simulate_inputs(slider(), t, {"u": [1.0]}, STATE)
    m = fesd.trajectory_model(slider(), t)
    with pytest.raises(OptionError, match="no controls"):
        inputs_of(m)
