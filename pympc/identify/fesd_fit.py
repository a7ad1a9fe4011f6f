"""Fitting parameters with the switch-detecting trajectory model (:mod:`pympc.identify.fesd`).

:func:`fit` builds the FESD model from a simulation at the current parameter values and
solves it with the parameters held (the forward problem: relaxed cross complementarity,
then the active-set polish).  With that active set fixed (:func:`~pympc.identify.fesd.fix_active_set`:
the mode of every element and the switch conditions on the boundaries as equalities) the
model is a smooth NLP; the parameters are freed and the least squares minimized by IPOPT.
Solving the MPEC with the parameters free instead stalls (measured on the 6 s oscillator
record: 500 iterations without convergence from the shooting optimum, the degenerate
complementarity rows blocking).  The answer is verified by simulating at the estimate: the
simulation's event sequence must be the one the model was built on (same kinds, same
sample intervals) and its outputs must agree with the model's.  When an element collapses
to its lower bound (an event pushing across a sample time) or the sequence differs, the
model is rebuilt from a simulation a step further along the same direction in θ (a *walk*)
and solved again, up to ``walks`` times.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field

import numpy as np

from ..errors import OptionError
from .fesd import DEFAULT_OPTIONS, _layout, _system, fix_active_set, ipopt, solve, switch_times, trajectory_model

__all__ = ["fit", "FesdFit"]


@dataclass
class FesdFit:
    """What :func:`fit` found.

    Attributes
    ----------
    ok : bool
        A walk's answer verified: its forward solve did, and the simulation at its estimate has the
        model's event sequence, with outputs within ``verify_tol`` of the model's.  Of several such
        answers, the one with the smallest objective is reported.
    theta : dict
        The estimate, by parameter name.
    objective : float
        ½ Σ r² at the estimate.
    walks : int
        Models built (1 when the first one verified).
    output_gap : float
        max |model output − simulated output| at the samples, at the estimate.
    event_gap : float
        max |model switch time − simulated event time| at the estimate (s).
    message : str
    solves : list of FesdSolve
    seconds : float
    model : pyomo ConcreteModel
        The model of the answer (its Vars hold it).
    constrained : bool
        An element of the answer is at its lower bound: an event pushes against a sample time (the
        answer is the best verified one over the walks).
    """

    ok: bool
    theta: dict
    objective: float
    walks: int
    output_gap: float = np.inf
    event_gap: float = np.inf
    message: str = ""
    solves: list = field(default_factory=list)
    seconds: float = 0.0
    model: object = None
    constrained: bool = False


def _signature(m):
    """(kind, interval) of every switch of a model: what a walk compares."""
    layout = m.fesd["layout"]
    return [(ev.kind.name, layout[e].interval) for e, ev in
            ((e, m.fesd["events"][layout[e].segment - 1]) for e in range(1, len(layout))
             if layout[e].segment != layout[e - 1].segment)]


def _simulated_signature(tr, t, elements):
    """The :func:`_signature` a model built on simulation ``tr`` would have (without building it)."""
    events = [e for e in tr.events if e.time > t[0] + 1e-12]
    layout = _layout(t, [e.time for e in events], elements, 1e-9 * (t[-1] - t[0]))
    return [(events[layout[e].segment - 1].kind.name, layout[e].interval) for e in range(1, len(layout))
            if layout[e].segment != layout[e - 1].segment]


def fit(system, t, y, outputs, parameters, *, elements=4, stages=3, noise=None, walks=4, verify_tol=1e-5,
        options=None):
    """Least-squares estimate of ``parameters`` with the FESD model, verified by simulation.

    Parameters
    ----------
    system : System or path
        The mechanism; the fitted parameters start at its values.
    t, y, outputs, noise
        The record (see :func:`~pympc.identify.fesd.trajectory_model`).
    parameters : list of str
        Names of the fitted parameters (bounds: the model's declared ones).
    elements, stages
        Finite elements per sample interval and Radau IIA stages.
    walks : int
        At most this many models (each built from a simulation at the previous estimate).
    verify_tol : float
        Largest accepted |model − simulation| of the outputs at the estimate.
    options : dict, optional
        IPOPT options.

    Returns
    -------
    FesdFit
    """
    import pyomo.environ as pyo

    from ..dynamics import simulate
    system = _system(system)
    names = [n.strip() for n in parameters.split(",")] if isinstance(parameters, str) else list(parameters)
    if not names:
        raise OptionError("parameters: name at least one parameter to fit")
    t = np.asarray(t, float)
    _check_static(system, names, t)
    t0 = _time.perf_counter()
    current = system
    out = FesdFit(False, {}, np.inf, 0)
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    best = None
    for walk in range(1, int(walks) + 1):
        m = trajectory_model(current, t, y, outputs, names, elements=elements, stages=stages, noise=noise)
        for n in names:
            m.theta[n].fix()
        res = solve(m, options=options)                    # the forward problem at the walk's start
        out.solves.append(res)
        out.walks, out.model = walk, m
        if not res.ok:
            out.message = f"walk {walk}: the forward FESD solve did not verify ({res.status}: {res.checks})"
            break
        start = {n: float(pyo.value(m.theta[n])) for n in names}
        undo = fix_active_set(m)
        for n in names:
            m.theta[n].unfix()
        try:
            converged, stage = ipopt(m, opts, res, "fit: ")
        finally:
            undo()
        out.theta = {n: float(pyo.value(m.theta[n])) for n in names}
        out.objective = float(pyo.value(m.objective))
        if not converged:
            out.message = f"walk {walk}: the fit with the active set fixed did not converge ({stage['message']})"
            break
        h = np.array([pyo.value(m.h[e]) for e in m.elements])
        h0 = np.array([el.h for el in m.fesd["layout"]])
        collapsed = bool(np.any(h <= 1.001 * m.h[0].lb / h0[0] * h0))
        at = system.bind(out.theta)
        tr = simulate(at, (t[0], t[-1]), t_eval=t, rtol=1e-12, atol=1e-14)
        if not tr.success:
            out.message = f"walk {walk}: the simulation at the estimate failed: {tr.message}"
            break
        try:
            same = _simulated_signature(tr, t, elements) == _signature(m)
        except OptionError:                                  # more events in an interval than elements
            same = False
        if same:
            cand = _verified(m, tr, t, outputs, verify_tol, walk, collapsed)
            if cand["ok"] and (best is None or cand["objective"] < best["objective"]):
                best = cand
        if not same or collapsed:
            step = {n: out.theta[n] + (out.theta[n] - start[n]) for n in names}      # past the blocked event
            out.message = (f"walk {walk}: {'an element collapsed' if collapsed else 'the event sequence changed'}"
                           f" at the estimate; rebuilt at {step}")
            current = system.bind(step)
            continue
        break
    if best is not None:
        for k in ("theta", "objective", "output_gap", "event_gap", "constrained", "model"):
            setattr(out, k, best[k])
        out.ok = True
        out.message = (f"verified by simulation at the estimate (walk {best['walk']} of {out.walks}): outputs within "
                       f"{out.output_gap:.2g}, events within {out.event_gap:.2g} s" +
                       ("; an element is at its lower bound: the minimum with an event kept on its side of a "
                        "sample time" if out.constrained else ""))
    elif not out.message:
        out.message = f"no verified estimate after {out.walks} walks"
    out.seconds = _time.perf_counter() - t0
    return out


def _check_static(system, names, t):
    """A fitted static coefficient needs a breakaway in the record; without one it is only bounded below."""
    from ..dynamics import simulate
    from .experiment import friction_pairs
    statics = {s: (slot, k) for slot, k, s in friction_pairs(system) if s is not None and s in names}
    if not statics:
        return
    tr = simulate(system, (t[0], t[-1]), t_eval=t, rtol=1e-10, atol=1e-12)
    slots = list(tr.slot_names)
    for s, (slot, _) in statics.items():
        j = slots.index(slot)
        if any(e.kind.name == "BREAKAWAY" and e.slot == j for e in tr.events):
            continue
        stick = tr.motions[:, j] == 0
        lam = np.abs(tr.normal_force[stick, j])
        ratio = float(np.max(np.abs(tr.friction_force[stick, j])[lam > 0] / lam[lam > 0])) if np.any(lam > 0) \
            else float("nan")
        raise OptionError(f"{s!r} is not identifiable from this record: slot {slot!r} never breaks away in the "
                          f"simulation at the start values (the data bound it only from below, {s} >= "
                          f"max|F|/|λ| = {ratio:.4g} in its stick phases); fit without {s!r} or use a record "
                          "with a breakaway")


def _verified(m, tr, t, outputs, tol, walk, collapsed):
    """The answer of one walk, compared with the simulation ``tr`` at its estimate."""
    import pyomo.environ as pyo
    idx = [int(np.argmin(np.abs(tr.t - x))) for x in t]
    sim = np.column_stack([_simulated(tr, o, idx) for o in outputs])
    model_y = np.array([[pyo.value(m.output[k, o]) if (k, o) in m.output else np.nan for o in outputs]
                        for k in range(t.size)])
    gap = float(np.nanmax(np.abs(model_y - sim)))
    ev = [e.time for e in tr.events if e.time > t[0]]
    sw = [x for x, _, _ in switch_times(m)]
    return {"ok": gap <= tol, "theta": {n: float(pyo.value(m.theta[n])) for n in m.fesd["fit"]},
            "objective": float(pyo.value(m.objective)), "output_gap": gap,
            "event_gap": float(max([abs(a - b) for a, b in zip(sw, ev)] or [0.0])), "constrained": collapsed,
            "model": m, "walk": walk}


def _simulated(tr, name, idx):
    from .experiment import trajectory_output
    return np.asarray(trajectory_output(tr, name))[idx]

