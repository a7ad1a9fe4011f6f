"""The generic position-level equations (pympc.mechanics.equations) against the numeric assembly.

Oracle: GeneralMethod.assemble at random states; the Jacobians J, WN, WT by
central differences of the generic g(q, t) and slot coordinates, the slip
velocity as WT q̇.  Not covered (and refused): rolling and gear joints.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from pympc.errors import ModelError
from pympc.mechanics import GeneralMethod, load_model
from pympc.mechanics.equations import Equations
from pympc.mechanics.expressions import parse

MODELS = Path(__file__).resolve().parent.parent / "models"
COVERED = ["cross_slide", "friction_oscillator", "rotating_rod_bead", "shortening_pendulum", "slider_crank",
           "spinning_tube_ball"]
NOT_COVERED = ["planetary_gear", "rolling_disc_incline", "wheel_rod"]


def _fd(fun, q, h=1e-6):
    base = np.asarray(fun(q), float).ravel()
    J = np.zeros((base.size, q.size))
    for i in range(q.size):
        e = np.zeros(q.size)
        e[i] = h
        J[:, i] = (np.asarray(fun(q + e), float).ravel() - np.asarray(fun(q - e), float).ravel()) / (2 * h)
    return J


@pytest.mark.parametrize("name", COVERED)
def test_generic_equations_match_the_numeric_assembly(name):
    system = load_model(MODELS / f"{name}.toml")
    eq = Equations(system)
    form = GeneralMethod(system)
    env = eq.parameters()
    rng = np.random.default_rng(7)
    for _ in range(4):
        q, qd, t = rng.normal(size=eq.n), rng.normal(size=eq.n), float(rng.uniform(0, 3))
        a = form.assemble(q, qd, t)
        assert np.allclose(eq.joint_residuals(q, t, env), a.g, atol=1e-12)
        assert np.allclose(_fd(lambda x: eq.joint_residuals(x, t, env), q).reshape(a.J.shape), a.J, atol=1e-7)
        sc = np.array(eq.slot_coordinates(q, env), float).reshape(-1, 2)
        assert np.allclose(sc[:, 0], a.gN, atol=1e-12)
        W = _fd(lambda x: np.array(eq.slot_coordinates(x, env), float), q).reshape(-1, 2, eq.n)
        assert np.allclose(W[:, 0], a.WN, atol=1e-7)
        assert np.allclose(W[:, 1], a.WT, atol=1e-7)
        assert np.allclose(W[:, 1] @ qd, a.vT, atol=1e-7)
        assert np.allclose(eq.applied_forces(q, qd, t, env), a.h, rtol=1e-12, atol=1e-12)
        assert np.allclose(np.diag(np.array(eq.mass(env), float)), a.M)


@pytest.mark.parametrize("name", NOT_COVERED)
def test_rolling_and_gears_are_refused(name):
    eq = Equations(load_model(MODELS / f"{name}.toml"))
    with pytest.raises(ModelError, match="not covered"):
        eq.check_supported()


def test_parameters_follow_the_environment():
    """A parameter mapped to another value (as a fitted Pyomo variable would be) changes the equations."""
    system = load_model(MODELS / "friction_oscillator.toml")
    eq = Equations(system)
    q, v = np.array([0.3, 0.0]), np.zeros(2)
    Q0 = eq.applied_forces(q, v, 1.0, eq.parameters())
    Q1 = eq.applied_forces(q, v, 1.0, eq.parameters({"K": 20.0}))
    assert Q1[0] - Q0[0] == pytest.approx(-5.0 * 0.3)


def test_expression_build_equals_evaluation():
    e = parse("A*sin(w*t)**2 - abs(B)/sqrt(t+1)", ("A", "w", "B"), ("t",))
    env = {"A": 1.5, "w": 2.0, "B": -0.7, "t": 0.3}
    assert e.build(env, math) == pytest.approx(e.bind({k: env[k] for k in "AwB"})(t=0.3), rel=1e-15)
    with pytest.raises(ModelError, match="needs 'w'"):
        e.build({"A": 1.0, "B": 0.0, "t": 0.0}, math)


@pytest.mark.parametrize("name", COVERED)
def test_held_terms_give_the_same_forces(name):
    """applied_forces with a memo (the terms of parameters alone built once, then reused) gives the same
    numbers to the bit and, in Pyomo, the same expressions, printed; the memo's terms are reused, not rebuilt."""
    pyo = pytest.importorskip("pyomo.environ")
    system = load_model(MODELS / f"{name}.toml")
    eq = Equations(system)
    env = eq.parameters()
    rng = np.random.default_rng(11)
    memo = {}
    for _ in range(3):
        q, v, t = list(rng.normal(size=eq.n)), list(rng.normal(size=eq.n)), float(rng.uniform(0, 3))
        assert eq.applied_forces(q, v, t, env, memo=memo) == eq.applied_forces(q, v, t, env)
    m = pyo.ConcreteModel()
    m.theta = pyo.Var(list(env), initialize=env)
    m.theta.fix()
    m.q = pyo.Var(range(2), range(eq.n), initialize=0.1)
    m.v = pyo.Var(range(2), range(eq.n), initialize=0.2)
    m.t = pyo.Var(range(2), initialize=0.3)
    penv = eq.parameters({n: m.theta[n] for n in env}, pyo)
    memo = {}
    for k in range(2):
        q, v = [m.q[k, i] for i in range(eq.n)], [m.v[k, i] for i in range(eq.n)]
        held = eq.applied_forces(q, v, m.t[k], penv, pyo, memo)
        fresh = eq.applied_forces(q, v, m.t[k], penv, pyo)
        assert [str(x) for x in held] == [str(x) for x in fresh]
        assert [pyo.value(x) for x in held] == [pyo.value(x) for x in fresh]
        if k == 0:
            first = dict(memo)
        else:
            assert memo.keys() == first.keys() and all(memo[f] is first[f] for f in first)
    assert memo or not any(type(f).__name__ in ("Gravity", "Spring", "Damper") for f in eq.forces)


def _state_forces():
    """A rigid body and a particle with forces of their state (x, y, vx, phidot), of time alone, a spring of rest
    length 0 and one of length 0.3, gravity with a zero component."""
    from pympc.mechanics import (Damper, Gravity, Particle, PointForce, Revolute, RigidBody, Spring, System,
                                 Torque)
    s = System("state forces")
    s.add(RigidBody("rod", mass=1.3, inertia=0.2))
    s.add(Particle("bead", mass=0.7))
    s.add(Revolute("pin", "ground", "rod", (0.0, 0.0), (-0.5, 0.0)))
    s.add(Gravity("gravity", g=(0.0, -9.81)))
    s.add(Spring("tie", "bead", "ground", k=4.0))
    s.add(Spring("arm", "bead", "rod", k=7.0, length=0.3, point_b=(0.2, 0.1)))
    s.add(Damper("damper", "bead", "ground", c=0.4, point_b=(-1.0, 0.5)))
    s.add(PointForce("push", "bead", value=("2*sin(t) + 0.3*vx", "-0.5*y")))
    s.add(PointForce("drive", "rod", value=("sin(3*t)", 0), point=(0.4, 0.0)))
    s.add(Torque("motor", "rod", value="0.7 - 0.1*phidot"))
    return s


def test_forces_of_the_state_match_the_numeric_assembly():
    """Forces that use the state (the point's position and velocity, the angle's rate) or only time, springs of
    rest length 0 and not, gravity with a zero component: the generic forces are the numeric assembly's (each
    state variable built only when the force's expression uses it; no term F·0 for a zero column), and in
    Pyomo they evaluate to the same numbers."""
    pyo = pytest.importorskip("pyomo.environ")
    system = _state_forces()
    eq = Equations(system)
    form = GeneralMethod(system)
    env = eq.parameters()
    rng = np.random.default_rng(5)
    m = pyo.ConcreteModel()
    m.q = pyo.Var(range(eq.n))
    m.v = pyo.Var(range(eq.n))
    m.t = pyo.Var()
    for _ in range(4):
        q, qd, t = rng.normal(size=eq.n), rng.normal(size=eq.n), float(rng.uniform(0, 3))
        Q = eq.applied_forces(q, qd, t, env)
        assert np.allclose(Q, form.assemble(q, qd, t).h, rtol=1e-12, atol=1e-12)
        for i in range(eq.n):
            m.q[i].value, m.v[i].value = float(q[i]), float(qd[i])
        m.t.value = t
        P = eq.applied_forces([m.q[i] for i in range(eq.n)], [m.v[i] for i in range(eq.n)], m.t, env, pyo)
        assert np.allclose([pyo.value(x) for x in P], Q, rtol=1e-13, atol=1e-13)
