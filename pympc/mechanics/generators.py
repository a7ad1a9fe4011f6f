"""Generated mechanisms for scaling studies."""

from __future__ import annotations

import math

from ..errors import ModelError
from .system import Gravity, Particle, PointForce, Slot, Spring, System

__all__ = ["slider_chain"]


def slider_chain(n, mu=0.3, mu_s=None, mass=1.0, k=20.0, g=9.81, force=15.0, omega=3.0, v0=0.5, t_end=1.0):
    """A chain of ``n`` sliders: slider k moves in a slot carried by slider k−1.

    Slider 1 runs in a fixed slot; the slot of slider k is turned by ``0.9 k`` rad,
    so every slot's normal force depends on the accelerations of the whole
    chain.  Each slider is tied to the ground by a spring (stiffness ``k``,
    anchored at the origin), gravity acts downward, the last slider is driven
    by ``force*sin(omega t)`` horizontally, and the sliders start with
    alternating slip velocities ``±v0`` in their slots.

    Parameters
    ----------
    n : int
        Number of sliders (= degrees of freedom = friction slots).
    mu, mu_s : float
        Friction coefficients of every slot (μ_s defaults to μ).  Like ``mass``,
        ``k``, ``g``, ``force``, ``omega`` and ``v0`` they become the System's
        parameters (``m``, ``mu``, ``mu_s``, ``k``, ``g``, ``force``, ``omega``,
        ``v0``), so a written model file is an expression of them and
        ``--set mu=0.9`` changes every slot.
    t_end : float
        The model's default end time (its ``[simulation]`` table).

    Returns
    -------
    System

    Examples
    --------
    >>> s = slider_chain(3)
    >>> len(s.slots), len(s.bodies)
    (3, 3)
    """
    n = int(n)
    if n < 1:
        raise ModelError(f"slider_chain: n must be at least 1, got {n}")
    params = {"m": mass, "mu": mu, "mu_s": "mu" if mu_s is None else mu_s, "k": k, "g": g, "force": force,
              "omega": omega, "v0": v0}
    s = System(f"slider_chain_{n}", parameters=params,
               description=f"chain of {n} sliders, each in a slot carried by the previous one",
               simulation={"t_end": float(t_end)})
    vel = [0.0, 0.0]       # the initial velocity is v0 times this (alternating slips along turned slots)
    for i in range(1, n + 1):
        th = 0.9 * (i - 1)
        d = (math.cos(th), math.sin(th))
        sign = 1 if i % 2 else -1
        vel = [vel[0] + sign * d[0], vel[1] + sign * d[1]]
        s.add(Particle(f"s{i}", mass="m", position=(0.1 * i, 0.0), velocity=(f"v0*{vel[0]!r}", f"v0*{vel[1]!r}")))
        guide = "ground" if i == 1 else f"s{i - 1}"
        origin = (0.1 * i, 0.0) if i == 1 else (0.1, 0.0)
        s.add(Slot(f"slot{i}", slider=f"s{i}", guide=guide, direction=d, origin=origin, mu="mu", mu_s="mu_s"))
        s.add(Spring(f"spring{i}", f"s{i}", "ground", k="k"))
    s.add(Gravity("gravity", g=(0.0, "-g")))
    s.add(PointForce("drive", f"s{n}", value=("force*sin(omega*t)", 0.0)))
    return s
