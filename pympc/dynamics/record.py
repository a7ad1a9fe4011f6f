"""The record of a run: the samples of its phases and its events made into a :class:`Trajectory`."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..errors import SimulationError
from .trajectory import SimulationStatus, Trajectory

__all__ = ["build_trajectory"]


def build_trajectory(ev, integrators, phases, events, status, message, sens=None):
    """The :class:`Trajectory` of a run: ``phases`` the samples ``(t, x, mode)`` of its phases, evaluated by
    the run's :class:`~pympc.dynamics.evaluation.ModeEvaluator` ``ev`` (forces, slip velocities, energies;
    the whole phase in one compiled call where it applies), ``events`` its events, ``integrators`` the names
    of the integrators that ran, ``sens`` its sensitivities (or None)."""
    form = ev.form
    n, s = form.n, len(ev.mu)
    rows, dsens = [], []
    for ts, xs, mode in phases:
        fast = None
        if ev.compiled(mode):   # the whole phase in one call
            fast = ev._fast.rows(ts, xs[:2 * n + 2].T, mode)
            ev.forget()
        if fast is not None:
            lam, F, vT, T, V, drift = fast
            walls, motions = mode.walls, [int(m) for m in mode.motions]
            for j, tj in enumerate(ts):
                xj = xs[:, j]
                if sens is not None:
                    dsens.append(sens.outputs(tj, *sens.split(xj), mode))
                rows.append((tj, xj[:n], xj[n:2 * n], lam[j], F[j], vT[j], walls, motions, T[j], V[j], xj[2 * n],
                             xj[2 * n + 1], drift[j]))
            continue
        for j, tj in enumerate(ts):
            xj = xs[:, j]
            if sens is not None:
                xj, Sj = sens.split(xj)
                dsens.append(sens.outputs(tj, xj, Sj, mode))
            try:
                a, ms = ev.evaluate(tj, xj, mode)
            except SimulationError:
                if status == SimulationStatus.ERROR:   # the mechanism itself is singular: the error, as raised
                    raise
                # a run that stopped on a paradox keeps the mode before it, which may be singular there:
                # the state is kept, its forces are unknown
                a = form.assemble(xj[:n], xj[n:2 * n], tj)
                ms = SimpleNamespace(lam=np.full(s, np.nan), F=np.full(s, np.nan))
            qa, qda = form.absolute(xj[:n], xj[n:2 * n])
            drift = float(np.abs(np.concatenate([a.g[a.holonomic], a.gN])).max(initial=0))
            rows.append((tj, qa, qda, ms.lam, ms.F, a.vT, mode.walls, [int(m) for m in mode.motions],
                         a.kinetic, a.potential, xj[2 * n], xj[2 * n + 1], drift))
    cols = list(zip(*rows))
    arr = lambda i, shape=None: np.array(cols[i], dtype=float).reshape(len(rows), *(shape or ()))  # noqa: E731
    info = {"formulation": getattr(form, "name", type(form).__name__), "transitions": len(events) - 1,
            "integrator": " + ".join(sorted(integrators)) or "none (no integrated phase)"}
    system = form.system
    checked = [e for e in events if e.crosscheck]
    if checked:
        agree = sum(all(v["agree"] for v in e.crosscheck.values()) for e in checked)
        info["crosscheck"] = f"{agree} of {len(checked)} events agree"
    return Trajectory(
        t=arr(0), q=arr(1, (len(form.absolute_names),)), qd=arr(2, (len(form.absolute_names),)),
        normal_force=arr(3, (s,)), friction_force=arr(4, (s,)), slip_velocity=arr(5, (s,)),
        walls=np.array(cols[6], dtype=int).reshape(len(rows), s), motions=np.array(cols[7], dtype=int).reshape(len(rows), s),
        kinetic=arr(8), potential=arr(9), dissipated=arr(10), work=arr(11), drift=arr(12), events=events,
        status=status, message=message, coordinate_names=list(form.absolute_names),
        slot_names=[sl.name for sl in form.slots], info=info,
        parameters=dict(system.parameters), model_hash=system.fingerprint(), **_sensitivity_fields(sens, dsens))


def _sensitivity_fields(sens, dsens):
    if sens is None:
        return {}
    dq, dqd, dlam, dF = (None if a[0] is None else np.array(a) for a in zip(*dsens))
    return {"sensitivity_names": list(sens.names), "dq": dq, "dqd": dqd, "dnormal_force": dlam,
            "dfriction_force": dF, "sensitivity_note": sens.undefined or ""}
