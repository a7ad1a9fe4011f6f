"""The warm start of a FESD model (:mod:`pympc.identify.fesd`): a simulation's events and modes, the elements'
layout from them, the start value of every variable, and the rows the warm start's modes decide (stick phases of
static slots, breakaway rows, step equilibration, cross complementarity).  :func:`pympc.identify.fesd._restart`
runs the same three steps on a model already built."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OptionError, SolverError
from ._fesd_terms import _linear


@dataclass
class _Element:
    interval: int
    segment: int            # index into the warm start's modes (between consecutive events)
    h: float
    start: float


def _layout(t, event_times, elements, tol):
    """Elements per interval: the events inside an interval split it into segments; each gets ≥ 1 element."""
    out = []
    ev = np.asarray(sorted(event_times), float)
    for k in range(len(t) - 1):
        a, b = float(t[k]), float(t[k + 1])
        inside = [x for x in ev if a + tol < x < b - tol]
        cuts = [a] + inside + [b]
        lengths = np.diff(cuts)
        if len(lengths) > elements:
            raise OptionError(f"elements={elements} per interval cannot resolve the {len(inside)} events in "
                              f"[{a:g}, {b:g}] (at {', '.join(f'{x:.6g}' for x in inside)}): give at least "
                              f"{len(inside) + 1} elements per interval or a finer sample grid")
        share = lengths / (b - a) * elements
        count = np.maximum(1, np.floor(share).astype(int))
        while count.sum() < elements:                      # largest remainder, by length per element
            count[int(np.argmax(lengths / count))] += 1
        while count.sum() > elements:
            i = int(np.argmax(np.where(count > 1, count - share, -np.inf)))
            count[i] -= 1
        for seg, (c0, n, L) in enumerate(zip(cuts[:-1], count, lengths)):
            gseg = int(np.searchsorted(ev, c0 + tol, side="right"))   # events at or before the segment start
            for i in range(n):
                out.append(_Element(k, gseg, L / n, c0 + i * L / n))
    return out


def _warm(system, t, elements, c, warm_start):
    """The warm start of a model: the simulation's events and modes, the elements' layout and the stage
    values (a simulation sampled at the stage times, each last stage nudged into its own element)."""
    from ..dynamics import simulate
    span = (float(t[0]), float(t[-1]))
    if warm_start is None:
        warm_start = simulate(system, span, t_eval=t, rtol=1e-12, atol=1e-14)
    if not warm_start.success:
        raise SolverError(f"the warm-start simulation of {system.name} failed ({warm_start.status.name}: "
                          f"{warm_start.message}); the FESD model needs its event sequence")
    events = [e for e in warm_start.events if e.time > span[0] + 1e-12]
    modes = [warm_start.events[0].mode_after] + [e.mode_after for e in events]
    tol = 1e-9 * (span[1] - span[0])
    layout = _layout(t, [e.time for e in events], elements, tol)
    stage_t = np.array([[el.start + cr * el.h for cr in c] for el in layout])
    nudged = stage_t.copy()
    nudged[:, -1] -= 1e-7 * np.array([el.h for el in layout])          # the element's own mode at c_s = 1
    dense = simulate(system, span, t_eval=np.unique(np.concatenate([t, nudged.ravel()])), rtol=1e-12, atol=1e-14)
    return {"warm_start": warm_start, "events": events, "modes": modes, "layout": layout, "stage_times": stage_t,
            "W": _stage_values(dense, nudged.ravel())}


def _start(m, system, eq, ws):
    """The start point of the model from the warm start ``ws`` (:func:`_warm`): every Var's value (the
    parameters' at ``system``'s values), the element lengths' lower bounds, the initial state fixed."""
    import pyomo.environ as pyo
    from .mpec_model import _initial_state
    layout, W = ws["layout"], ws["W"]
    s, A = len(m.stages), m.fesd["A"]
    coords, slots = list(m.coords), list(m.slots)
    values = system.parameters
    for n in m.params:
        m.theta[n].set_value(float(values[n]), skip_validation=True)
    if hasattr(m, "u"):
        for k, n in m.u:
            m.u[k, n].set_value(float(values[n]), skip_validation=True)
    h0 = np.array([el.h for el in layout])
    h_min = m.fesd["h_min"]
    for e in m.elements:
        m.h[e].setlb(h_min * h0[e])
        m.h[e].set_value(h0[e], skip_validation=True)
        m.t_start[e].set_value(layout[e].start, skip_validation=True)
    qW, vW = W["q"], W["qd"]
    q0, v0 = _initial_state(eq)
    # the values as Python floats by index (arrays made lists once: no NumPy scalar per Var); set without
    # Pyomo's check against the domain and bounds (a warning, never an error: the same values either way)
    ci, si = {cn: i for i, cn in enumerate(coords)}, {sn: i for i, sn in enumerate(slots)}
    for arr, x0, var in ((qW, q0, m.q), (vW, v0, m.v)):
        arr, x0 = np.asarray(arr, float).tolist(), np.asarray(x0, float).tolist()
        for (e, r, cn), x in var.items():
            x.set_value(arr[e * s + r - 1][ci[cn]] if r else (x0[ci[cn]] if e == 0 else arr[e * s - 1][ci[cn]]),
                        skip_validation=True)
    acc = _accelerations(vW, v0, A, h0, s)
    for (e, r, cn), x in m.a.items():
        x.set_value(acc[e, r - 1, ci[cn]], skip_validation=True)
    for cn in coords:
        m.q[0, 0, cn].fix(q0[coords.index(cn)])
        m.v[0, 0, cn].fix(v0[coords.index(cn)])
    lamW, FW, slipW = W["normal_force"], W["friction_force"], W["slip_velocity"]
    for var, arr in ((m.lam_pos, np.maximum(lamW, 0)), (m.lam_neg, np.maximum(-lamW, 0)), (m.F, FW),
                     (m.slip_pos, np.maximum(slipW, 0)), (m.slip_neg, np.maximum(-slipW, 0))):
        arr = np.asarray(arr, float).tolist()
        for (e, r, sn), x in var.items():
            x.set_value(arr[e * s + r - 1][si[sn]], skip_validation=True)
    mus = m.fesd["mus"]
    excess = {sn: float(pyo.value(mus[j][1] - mus[j][0])) for j, sn in enumerate(slots) if m.fesd["static"][sn]}
    lam_list, slip_list = np.asarray(lamW, float).tolist(), np.asarray(slipW, float).tolist()
    for sign, var in ((1, m.w_pos), (-1, m.w_neg)):
        for (e, r, sn), x in var.items():
            x.set_value(excess[sn] * abs(lam_list[e * s + r - 1][si[sn]])
                        if sign * slip_list[e * s + r - 1][si[sn]] > 0 else 0.0, skip_validation=True)
    for var in (m.nu, m.eta):
        for x in var.values():
            x.set_value(0.0, skip_validation=True)
    _joint_forces(m, m.fesd["balance"], pyo)
    m.sigma.set_value(m.fesd["sigma"])
    m.fesd.update(layout=layout, modes=ws["modes"], events=ws["events"], stage_times=ws["stage_times"],
                  warm_start=ws["warm_start"], system=system)


def _mode_rows(m, ws):
    """What the warm start's modes decide (on a restart: replaced): the stick phases of static slots (their
    slip parts and reserves fixed at zero) and their breakaway rows (``switch_rows``), the cross complementarity
    (``cross``), the step equilibration (``equilibration_rows``)."""
    import pyomo.environ as pyo
    layout, modes = ws["layout"], ws["modes"]
    s, E = len(m.stages), len(layout)
    slots, pairs, mus = list(m.slots), m.fesd["pairs"], m.fesd["mus"]
    static = [m.fesd["static"][sn] for sn in slots]
    for name in ("switch_rows", "equilibration_rows", "cross"):
        if m.component(name) is not None:
            m.del_component(name)
    # the stick phases of static slots (from the warm start) and their breakaway boundaries
    fixed, switch = set(), []
    for e, el in enumerate(layout):
        mode = modes[el.segment]
        for j, sn in enumerate(slots):
            if static[j] and int(mode.motions[j]) == 0:
                fixed.add((e, sn))
                nxt = layout[e + 1].segment if e + 1 < E else None
                if nxt is not None and nxt != el.segment and int(modes[nxt].motions[j]) != 0:
                    sg = 1.0 if int(modes[nxt].motions[j]) > 0 else -1.0
                    N = m.lam_pos[e, s, sn] + m.lam_neg[e, s, sn]
                    switch.append(mus[j][1] * N + sg * m.F[e, s, sn] == 0)
    stick = (m.slip_pos, m.slip_neg, m.w_pos, m.w_neg)
    for e, sn in m.fesd["fixed_stick"] - fixed:          # a restart: the previous warm start's other stick phases
        for r in range(1, s + 1):
            for var in stick:
                var[e, r, sn].unfix()
    for e, sn in fixed:                                  # (fixed again where they were: _start gave them values)
        for r in range(1, s + 1):
            for var in stick:
                var[e, r, sn].fix(0.0, skip_validation=True)
    # step equilibration: equal lengths inside one warm-start segment of one interval
    equal = [m.h[e] == m.h[e + 1] for e in range(E - 1 if m.fesd["equilibrate"] else 0)
             if layout[e].interval == layout[e + 1].interval and layout[e].segment == layout[e + 1].segment]
    # each one Constraint indexed 1, 2, … (the rows and indices a ConstraintList would hold, without a Set.add per row)
    for name, rows in (("switch_rows", switch), ("equilibration_rows", equal)):
        m.add_component(name, pyo.Constraint(pyo.RangeSet(1, len(rows)), rule=lambda _, i, rows=rows: rows[i - 1]))
    # cross complementarity: (Σ_B a)(Σ_B c) <= sigma per element, slot, pair (see _coupling for B)
    cross, coupling = {}, {}
    for (e, sn, key), st in pairs.items():
        ab, cb = _coupling(layout, modes, e, key)
        coupling[e, sn, key] = (ab, cb)
        avals = [x for x, _ in st] + ([pairs[e - 1, sn, key][-1][0]] if ab else [])
        cvals = [cc for _, cc in st] + ([pairs[e - 1, sn, key][-1][1]] if cb else [])
        if all(getattr(x, "fixed", False) and x.value == 0 for x in avals):
            continue
        cross[e, sn, key] = _linear(None, avals) * sum(cvals)
    m.cross = pyo.Constraint(list(cross), rule=lambda _, *k: cross[k] <= m.sigma)
    m.fesd.update(coupling=coupling, fixed_stick=fixed)


def _joint_forces(m, balance, pyo):
    """Start ``nu`` at the joint forces the warm start implies: per stage, the least-squares solution of
    G_Jᵀ nu = M a − Q − Σ (WN λ + WT F) (the dynamics rows at the start values, ``nu`` = 0)."""
    for (e, r), (res, rows) in balance.items():
        if not rows:
            continue
        b = np.array([pyo.value(x) for x in res], float)
        GT = np.array([[pyo.value(d) for d in row] for row in rows], float).T
        nu = np.linalg.lstsq(GT, b, rcond=None)[0]
        for k, x in enumerate(nu):
            m.nu[e, r, k].set_value(float(x), skip_validation=True)


def _coupling(layout, modes, e, key):
    """Which members of the pair at the boundary before element e join its cross complementarity.

    The slip parts (first members of the friction pairs) are continuous in time, so the boundary's slip
    part pairs with the element's reserves: a slip that stops or reverses does so on the boundary.  The
    reserves hold the friction force, which jumps at a slip event, so the boundary's reserve does not pair
    (a breakaway at μ_s > μ is pinned by its own row; at μ_s = μ by the law itself).  The wall split pairs
    both ways (λ is continuous through a wall switch) except at a boundary where the warm start changes a
    slip state (λ may jump there).  The w± pairs (``excess``) have no boundary term (w± jump at breakaway).
    """
    if e == 0 or "excess" in key:
        return False, False
    if key == "wall":
        a, b = modes[layout[e - 1].segment], modes[layout[e].segment]
        same = tuple(int(x) for x in a.motions) == tuple(int(x) for x in b.motions)
        return same, same
    return True, False


def _stage_values(tr, times):
    """The simulation's rows at ``times`` (exact t_eval samples)."""
    pos = np.clip(np.searchsorted(tr.t, times), 1, tr.t.size - 1)
    idx = np.where(np.abs(tr.t[pos - 1] - times) <= np.abs(tr.t[pos] - times), pos - 1, pos)
    if np.max(np.abs(tr.t[idx] - times)) > 1e-9:
        raise SolverError("the warm-start simulation lacks samples at the stage times")
    return {"q": tr.q[idx], "qd": tr.qd[idx], "normal_force": tr.normal_force[idx],
            "friction_force": tr.friction_force[idx], "slip_velocity": tr.slip_velocity[idx]}


def _accelerations(vW, v0, A, h0, s):
    """Stage accelerations consistent with the warm start's stage velocities: a = A⁻¹ (v_r − v_0) / h."""
    E = len(h0)
    V = vW.reshape(E, s, -1)
    start = np.concatenate([np.asarray(v0, float)[None, :], V[:-1, -1, :]], axis=0)
    Ainv = np.linalg.inv(A)
    return np.einsum("rj,ejc->erc", Ainv, V - start[:, None, :]) / h0[:, None, None]
