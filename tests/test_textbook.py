"""The textbook examples of seed 001 (models/*.toml) against their closed forms (DESIGN.md §6)."""

import math

import numpy as np
import pytest
from conftest import MODELS, accelerations

import pympc
from pympc.mechanics import GeneralMethod, TreeMethod, load_model

FORMULATIONS = [GeneralMethod, TreeMethod]


def set_state(system, **bodies):
    """Set bodies' initial positions/velocities: name=(position, angle, velocity, angular_velocity)."""
    for name, (pos, ang, vel, om) in bodies.items():
        b = system.bodies[name]
        b.position, b.velocity = tuple(pos), tuple(vel)
        if ang is not None:
            b.angle, b.angular_velocity = ang, om
    return system


def solved(form_cls, system, t=0.0):
    form = form_cls(system)
    y, yd = form.initial_state()
    sol, a = accelerations(form, y, yd, t)
    if form_cls is TreeMethod:
        q, qd, T, rem = form.kinematics(y, yd)
        return T @ sol.qdd + rem, sol, form
    return sol.qdd, sol, form


@pytest.mark.parametrize("form_cls", FORMULATIONS)
def test_rolling_disc_on_an_incline(form_cls):
    s = load_model(MODELS / "rolling_disc_incline.toml")
    p = s.parameters
    m, g, al = p["m"], p["g"], p["alpha"]
    qdd, sol, _ = solved(form_cls, s)
    u = np.array([math.cos(al), -math.sin(al)])
    assert qdd[:2] @ u == pytest.approx(2 / 3 * g * math.sin(al), rel=1e-12)
    normal, friction = sol.nu                        # the rolling joint's two multipliers
    assert normal == pytest.approx(m * g * math.cos(al), rel=1e-12)
    assert friction == pytest.approx(-m * g * math.sin(al) / 3, rel=1e-12)   # acts up the slope


@pytest.mark.parametrize("form_cls", FORMULATIONS)
def test_planetary_gear(form_cls, rng):
    s = load_model(MODELS / "planetary_gear.toml")
    p = s.parameters
    l, r = p["l"], p["r"]
    for _ in range(3):
        phi, om = rng.uniform(-3, 3), rng.uniform(-5, 5)
        e, t = np.array([math.cos(phi), math.sin(phi)]), np.array([-math.sin(phi), math.cos(phi)])
        set_state(s, crank=(l / 2 * e, phi, l / 2 * om * t, om),
                  planet=(l * e, 0.3, l * om * t, l * om / r))
        qdd, _, _ = solved(form_cls, s)
        assert qdd[2] == pytest.approx(6 * p["M"] / ((9 * p["m1"] + 2 * p["m2"]) * l * l), rel=1e-10)


@pytest.mark.parametrize("form_cls", FORMULATIONS)
def test_ball_in_a_spinning_tube(form_cls, rng):
    s = load_model(MODELS / "spinning_tube_ball.toml")
    p = s.parameters
    R, w, g = p["R"], p["omega"], p["g"]
    for _ in range(4):
        th, thd = rng.uniform(-3, 3), rng.uniform(-4, 4)
        er, et = np.array([math.sin(th), -math.cos(th)]), np.array([math.cos(th), math.sin(th)])
        set_state(s, ball=(R * er, None, R * thd * et, None))
        qdd, _, _ = solved(form_cls, s)
        thdd = qdd @ et / R
        assert thdd == pytest.approx(-(g / R - w * w * math.cos(th)) * math.sin(th), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("form_cls", FORMULATIONS)
def test_pendulum_shortened_at_constant_speed(form_cls, rng):
    s = load_model(MODELS / "shortening_pendulum.toml")
    p = s.parameters
    m, l0, v, g = p["m"], p["l0"], p["v"], p["g"]
    for _ in range(4):
        t, psi, psid = rng.uniform(0, 5), rng.uniform(-1.5, 1.5), rng.uniform(-3, 3)
        L = l0 - v * t
        er, ep = np.array([math.sin(psi), -math.cos(psi)]), np.array([math.cos(psi), math.sin(psi)])
        set_state(s, bob=(L * er, None, -v * er + L * psid * ep, None))
        qdd, sol, _ = solved(form_cls, s, t)
        psidd = (qdd @ ep + 2 * v * psid) / L               # r̈·e_ψ = l ψ̈ + 2 l̇ ψ̇
        assert L * psidd - 2 * v * psid + g * math.sin(psi) == pytest.approx(0, abs=1e-10)
        tension = -sol.nu[0] * L                            # force ν d on the bob, d = bob − pivot
        assert tension == pytest.approx(m * L * psid**2 + m * g * math.cos(psi), rel=1e-10)


def wheel_rod_state(s, xA, phi, xAd, phid):
    p = s.parameters
    R, l = p["R"], p["l"]
    er = np.array([math.sin(phi), -math.cos(phi)])
    det = np.array([math.cos(phi), math.sin(phi)])
    set_state(s, wheel=((xA, R), 0.0, (xAd, 0.0), -xAd / R),
              rod=(np.array([xA, R]) + l / 2 * er, phi - math.pi / 2, np.array([xAd, 0.0]) + l / 2 * phid * det, phid))


def test_wheel_with_hinged_rod_both_methods(rng):
    """Derivation (Lagrange, x = x_A, φ from the downward vertical, rolling: ω = −ẋ/R):

    T = ¾ m1 ẋ² + ½ m2 (ẋ² + l ẋ φ̇ cos φ + l² φ̇²/4) + m2 l² φ̇²/24
      = (¾ m1 + ½ m2) ẋ² + (m2 l/2) ẋ φ̇ cos φ + (m2 l²/6) φ̇²,     V = −m2 g (l/2) cos φ,
    so  (3m1/2 + m2) ẍ + (m2 l/2)(φ̈ cos φ − φ̇² sin φ) = 0   (x is cyclic: the momentum is conserved)
    and (m2 l²/3) φ̈ + (m2 l/2) ẍ cos φ + m2 g (l/2) sin φ = 0.
    """
    s = load_model(MODELS / "wheel_rod.toml")
    p = s.parameters
    m1, m2, l, g = p["m1"], p["m2"], p["l"], p["g"]
    for _ in range(4):
        phi, phid, xAd = rng.uniform(-2, 2), rng.uniform(-3, 3), rng.uniform(-2, 2)
        wheel_rod_state(s, rng.uniform(-1, 1), phi, xAd, phid)
        (qg, _, _), (qt, _, _) = solved(GeneralMethod, s), solved(TreeMethod, s)
        np.testing.assert_allclose(qt, qg, atol=1e-12 * (1 + abs(qg).max()))     # round-off agreement
        xdd, phidd = qg[0], qg[5]
        c, sn = math.cos(phi), math.sin(phi)
        assert (1.5 * m1 + m2) * xdd + m2 * l / 2 * (phidd * c - phid**2 * sn) == pytest.approx(0, abs=1e-10)
        assert m2 * l * l / 3 * phidd + m2 * l / 2 * xdd * c + m2 * g * l / 2 * sn == pytest.approx(0, abs=1e-10)


@pytest.mark.parametrize("formulation", ["general", "tree"])
def test_conserved_quantities_over_long_runs(formulation):
    # wheel and rod: horizontal momentum and energy
    s = load_model(MODELS / "wheel_rod.toml")
    p = s.parameters
    tr = pympc.simulate(s, (0.0, 20.0), formulation=formulation, rtol=1e-12, atol=1e-13)
    assert tr.success
    xAd = tr.qd[:, tr.coordinate_names.index("wheel.x")]
    phi = tr.q[:, tr.coordinate_names.index("rod.phi")] + math.pi / 2
    phid = tr.qd[:, tr.coordinate_names.index("rod.phi")]
    mom = (1.5 * p["m1"] + p["m2"]) * xAd + p["m2"] * p["l"] / 2 * phid * np.cos(phi)
    assert np.ptp(mom) < 1e-8 * (1 + abs(mom).max())
    E = tr.kinetic + tr.potential
    assert np.ptp(E) <= 1e-8 * np.abs(E).max()
    # ball in the spinning tube: the Jacobi integral (the energy is not conserved)
    s = load_model(MODELS / "spinning_tube_ball.toml")
    p = s.parameters
    R, w, g = p["R"], p["omega"], p["g"]
    tr = pympc.simulate(s, (0.0, 20.0), formulation=formulation, rtol=1e-12, atol=1e-13)
    x, y = tr.q[:, 0], tr.q[:, 1]
    th = np.arctan2(x, -y)
    thd = (tr.qd[:, 0] * np.cos(th) + tr.qd[:, 1] * np.sin(th)) / R
    jacobi = 0.5 * R**2 * thd**2 - 0.5 * w**2 * R**2 * np.sin(th) ** 2 - g * R * np.cos(th)
    assert np.ptp(jacobi) < 1e-8 * np.abs(jacobi).max()
    assert np.ptp(tr.kinetic + tr.potential) > 1e-3            # energy alone is not conserved


def test_frictionless_slider_crank_conserves_energy():
    tr = pympc.simulate(MODELS / "slider_crank.toml", (0.0, 10.0), params={"mu": 0.0, "mu_s": 0.0, "M0": 0.0},
                        rtol=1e-12, atol=1e-13)
    assert tr.success
    E = tr.kinetic + tr.potential
    assert np.ptp(E) <= 1e-8 * np.abs(E).max()
    assert tr.drift.max() < 1e-9
