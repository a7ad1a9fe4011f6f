"""The record of a run: the samples of its phases and its events made into a :class:`Trajectory`."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..errors import SimulationError
from .trajectory import SimulationStatus, Trajectory

__all__ = ["build_trajectory"]


def build_trajectory(ev, integrators, phases, events, status, message, sens=None, system=None):
    """The :class:`Trajectory` of a run: ``phases`` the samples ``(t, x, mode)`` of its phases, evaluated by
    the run's :class:`~pympc.dynamics.evaluation.ModeEvaluator` ``ev`` (forces, slip velocities, energies;
    the whole phase in one compiled call where it applies), ``events`` its events, ``integrators`` the names
    of the integrators that ran, ``sens`` its sensitivities (or None), ``system`` the system that ran (default
    the formulation's; a run bound to other friction coefficients runs on the formulation of the system it was
    bound from).

    Every phase becomes one block of columns (arrays of its samples), and the blocks are stacked once at
    the end: no Python object per sample on the compiled path."""
    form = ev.form
    n, s = form.n, len(ev.mu)
    dsens = []
    columns = _compiled_columns(ev, phases, n, s) if sens is None else None
    if columns is None:
        columns = _phase_columns(ev, phases, status, sens, dsens)
    info = {"formulation": getattr(form, "name", type(form).__name__), "transitions": len(events) - 1,
            "integrator": " + ".join(sorted(integrators)) or "none (no integrated phase)"}
    system = form.system if system is None else system
    checked = [e for e in events if e.crosscheck]
    if checked:
        agree = sum(all(v["agree"] for v in e.crosscheck.values()) for e in checked)
        info["crosscheck"] = f"{agree} of {len(checked)} events agree"
    return Trajectory(
        **columns, events=events, status=status, message=message, coordinate_names=list(form.absolute_names),
        slot_names=[sl.name for sl in form.slots], info=info,
        parameters=dict(system.parameters), model_hash=system.fingerprint(), **_sensitivity_fields(sens, dsens))


_COLUMNS = ("t", "q", "qd", "normal_force", "friction_force", "slip_velocity", "walls", "motions", "kinetic",
            "potential", "dissipated", "work", "drift")


def _compiled_columns(ev, phases, n, s):
    """The trajectory's columns when every phase is of a compiled mode: the states of all phases stacked once,
    the rows of each mode (:meth:`CompiledModes.rows`) in one call over the ranges of all its phases, written
    into the columns in place (every sample is solved on its own: the numbers of one call per phase); None where
    this does not apply (no samples, a mode with Python parts or whose call fails: :func:`_phase_columns`)."""
    counts = [len(ts) for ts, _, _ in phases]
    if not phases or not all(ev.compiled(mode) for _, _, mode in phases) or sum(counts) == 0:
        return None
    t = np.concatenate([np.asarray(ts, dtype=float) for ts, _, _ in phases])
    X = np.concatenate([xs[:2 * n + 2] for _, xs, _ in phases], axis=1)
    K = t.size
    rows = np.empty((K, s)), np.empty((K, s)), np.empty((K, s)), np.empty(K), np.empty(K), np.empty(K)
    ranges, number, which = {}, {}, []     # mode → its phases' (start, end) pairs, its number; every phase's
    start = 0
    for (_, _, mode), k in zip(phases, counts):
        if k:
            j = number.get(mode)
            if j is None:
                j = number[mode] = len(number)
                ranges[mode] = []
            which.append(j)
            ranges[mode] += (start, start + k)
            start += k
    Xr = np.ascontiguousarray(X.T)            # (the samples' states as rows, for every mode's call)
    for mode, r in ranges.items():
        done = ev._fast.rows(t, Xr, mode, np.array(r, dtype=np.int64), rows)
        if done is None:
            ev.forget()
            return None
    ev.forget()
    at = np.repeat(np.array(which, dtype=np.int64), [k for k in counts if k])    # the mode's number of each sample
    walls = np.array([mode.walls for mode in ranges], dtype=int).reshape(len(ranges), s)[at]
    motions = np.array([[int(m) for m in mode.motions] for mode in ranges], dtype=int).reshape(len(ranges), s)[at]
    lam, F, vT, T, V, drift = rows
    # the compiled path is the general method: its coordinates are the absolute ones
    return dict(zip(_COLUMNS, (t, X[:n].T.copy(), X[n:2 * n].T.copy(), lam, F, vT, walls, motions, T, V,
                               X[2 * n].copy(), X[2 * n + 1].copy(), drift)))


def _phase_columns(ev, phases, status, sens, dsens):
    """The trajectory's columns phase by phase (a block of columns per phase, stacked at the end): compiled rows
    where they apply, else sample by sample (the sensitivities' outputs appended to ``dsens``)."""
    form = ev.form
    n, s = form.n, len(ev.mu)
    na = len(form.absolute_names)
    blocks = []
    fast_rows = _compiled_rows(ev, phases, n)
    for j, (ts, xs, mode) in enumerate(phases):
        k = len(ts)
        if k == 0:
            continue
        fast = fast_rows.get(j)
        if fast is None and ev.compiled(mode):   # the whole phase in one call
            fast = ev._fast.rows(ts, xs[:2 * n + 2].T, mode)
            ev.forget()
        walls, motions = mode.walls, [int(m) for m in mode.motions]      # repeated k times at the end
        if fast is not None:
            lam, F, vT, T, V, drift = fast
            if sens is not None:
                for j, tj in enumerate(ts):
                    dsens.append(sens.outputs(tj, *sens.split(xs[:, j]), mode))
            # the compiled path is the general method: its coordinates are the absolute ones
            blocks.append((np.asarray(ts, dtype=float), xs[:n].T, xs[n:2 * n].T, lam, F, vT, walls, motions, T, V,
                           xs[2 * n], xs[2 * n + 1], drift))
            continue
        rows = []
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
            rows.append((tj, qa, qda, ms.lam, ms.F, a.vT, a.kinetic, a.potential, xj[2 * n], xj[2 * n + 1], drift))
        cols = list(zip(*rows))
        arr = lambda i, shape=(): np.array(cols[i], dtype=float).reshape(k, *shape)  # noqa: E731
        blocks.append((arr(0), arr(1, (na,)), arr(2, (na,)), arr(3, (s,)), arr(4, (s,)), arr(5, (s,)), walls, motions,
                       arr(6), arr(7), arr(8), arr(9), arr(10)))
    if not blocks:                  # no samples at all: empty columns of the right widths
        blocks.append((np.zeros(0), np.zeros((0, na)), np.zeros((0, na)), *(np.zeros((0, s)),) * 3, (0,) * s,
                       (0,) * s, *(np.zeros(0),) * 5))
    counts = [len(b[0]) for b in blocks]

    def col(i, dtype=float):
        if i in (6, 7):             # walls, motions: one row per phase, repeated for its samples
            return np.repeat(np.array([b[i] for b in blocks], dtype=int).reshape(len(blocks), s), counts, axis=0)
        return np.concatenate([b[i] for b in blocks]).astype(dtype, copy=False)
    return {name: col(i, int if i in (6, 7) else float) for i, name in enumerate(_COLUMNS)}


def _compiled_rows(ev, phases, n):
    """phase index → the rows :meth:`CompiledModes.rows` gives for its samples, all the phases of a compiled
    mode in one call (every sample is solved on its own: the same numbers as one call per phase); a mode
    whose call fails somewhere is left out (its phases are done one by one, and the failing one sample by
    sample, which says why)."""
    out = {}
    for mode, idx in _compiled_phases(ev, phases).items():
        if len(idx) == 1:
            continue                # (one phase: the caller's own call)
        ts = np.concatenate([phases[j][0] for j in idx])
        X = np.concatenate([phases[j][1][:2 * n + 2].T for j in idx])       # (rows: C order)
        rows = ev._fast.rows(ts, X, mode)
        ev.forget()
        if rows is None:
            continue
        start = 0
        for j in idx:
            end = start + len(phases[j][0])
            out[j] = tuple(r[start:end] for r in rows)
            start = end
    return out


def _compiled_phases(ev, phases):
    """Compiled mode → the indices of its phases that have samples, in order (one call of its rows serves them)."""
    by_mode = {}
    for j, (ts, _, mode) in enumerate(phases):
        if len(ts) and ev.compiled(mode):
            by_mode.setdefault(mode, []).append(j)
    return by_mode


def _sensitivity_fields(sens, dsens):
    if sens is None:
        return {}
    dq, dqd, dlam, dF = (None if a[0] is None else np.array(a) for a in zip(*dsens))
    return {"sensitivity_names": list(sens.names), "dq": dq, "dqd": dqd, "dnormal_force": dlam,
            "dfriction_force": dF, "sensitivity_note": sens.undefined or ""}
