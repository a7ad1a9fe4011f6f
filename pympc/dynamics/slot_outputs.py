"""The along-slot coordinate of every slot, and the sensitivities of it and of the slip velocity.

A slot's along-slot coordinate is ``s = u·(P − A)``: the slider point P measured
along the slot's direction u from the guide's origin A (both in world axes; the
guide may move and turn).  Its rate is the slip velocity ``v = ds/dt = (∂s/∂q) q̇``
(the guide's rotation included).  Both are computed from the absolute coordinates
a :class:`~pympc.dynamics.Trajectory` records, by the one definition of the slot
frame that the MPEC route uses (:meth:`pympc.mechanics.equations.Equations.slot_coordinates`),
evaluated with numpy on all samples at once.

Derivatives: ``∂s/∂θ_j = s_q ∂q/∂θ_j + s_θ`` by a complex step (exact to
round-off: ``Im s(q + iεS_j, θ + iεe_j)/ε``), ``v`` by a complex step along q̇, and
``∂v/∂θ_j`` by a central difference of that along ``(∂q/∂θ_j, ∂q̇/∂θ_j, e_j)``
with the step of the simulator's sensitivities (1e-5·max(|θ_j|, 1e-2); error of
the order of 1e-10 relative).
"""

from __future__ import annotations

import numpy as np

from ..mechanics.equations import Equations

__all__ = ["add_slot_outputs"]

_EPS = 1e-30          # complex step: no cancellation, any tiny step is exact


def _along(eq, env, q):
    """(s,) rows per slot of the along-slot coordinate; ``q`` has shape (n, N) (complex allowed)."""
    return np.array([c[1] for c in eq.slot_coordinates(q, env, np)]).reshape(len(eq.slots), -1)


def _env(eq, theta=None):
    """The parameter environment, with complex perturbations ``{name: value}`` in place."""
    return eq.parameters(theta, np)


def add_slot_outputs(system, tr):
    """Fill ``tr.slot_position`` (and, with sensitivities, ``tr.dslot_position`` and
    ``tr.dslip_velocity``) of a trajectory of the bound ``system``; returns ``tr``."""
    s = len(tr.slot_names)
    if s == 0 or len(tr.t) == 0:
        tr.slot_position = np.zeros((len(tr.t), s))
        return tr
    eq = Equations(system)
    if list(eq.coordinate_names) != list(tr.coordinate_names):      # not the absolute coordinates: do not guess
        return tr
    env = _env(eq)
    q, qd = tr.q.T, tr.qd.T
    tr.slot_position = _along(eq, env, q).T.copy()
    if not tr.sensitivity_names or tr.dq is None:
        return tr
    values = eq.parameters(None, np)
    N, p = len(tr.t), len(tr.sensitivity_names)
    ds, dv = np.empty((N, s, p)), np.empty((N, s, p))

    def rate(qq, vv, th):
        return _along(eq, th, qq + 1j * _EPS * vv).imag / _EPS

    for j, name in enumerate(tr.sensitivity_names):
        Sq, Sv = tr.dq[:, :, j].T, tr.dqd[:, :, j].T
        th = _env(eq, {name: values[name] + 1j * _EPS})
        ds[:, :, j] = (_along(eq, th, q + 1j * _EPS * Sq).imag / _EPS).T
        h = 1e-5 * max(abs(values[name]), 1e-2)
        up, down = _env(eq, {name: values[name] + h}), _env(eq, {name: values[name] - h})
        dv[:, :, j] = ((rate(q + h * Sq, qd + h * Sv, up) - rate(q - h * Sq, qd - h * Sv, down)) / (2 * h)).T
    tr.dslot_position, tr.dslip_velocity = ds, dv
    return tr
