"""The branches of the trajectory MPEC's complementarity pairs: breakaway pattern, warm start, fixing a branch.

A model of :mod:`pympc.identify.mpec_model` holds, per experiment block,
``sides`` (every pair ``0 ≤ a ⊥ c ≥ 0``) and the Pyomo ``Complementarity``
``pairs``.  This module gives a block the breakaway law of a time stepping
(:func:`configure`), sets its variables from a time stepping or simulation
(:func:`warm`), reads which side of each pair is zero (:func:`modes`) and
replaces every pair by that branch (:func:`fix_modes`: a plain NLP, what the
walk of :func:`pympc.identify.mpec_route.walk_modes` solves and what
:class:`pympc.identify.parmest.TrajectoryExperiment` hands to parmest), or
puts the pairs back (:func:`unfix_modes`).
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from pyomo.mpec import complements

__all__ = ["configure", "warm", "modes", "fix_modes", "unfix_modes", "set_theta", "stick_ratios"]


def configure(b, ws):
    """Give experiment block ``b`` the breakaway law of the time stepping ``ws``
    (:func:`pympc.identify.mpec_stepping.time_stepping`): every step in which a stuck slot breaks away gets the
    virtual stick step's variables and rows (block ``breakaway_<k>``) and, instead of that slot's friction
    pairs, ``P = θ P' + (1 − θ) σ μ |Λ|`` with θ = r_{k−1} / (r_{k−1} − r'), r = μ_s|Λ| − σP (σ and the
    step fixed, θ an expression); the friction reserves of a slot that stays stuck (stuck at k − 1 and k)
    become "soft" for :func:`pympc.identify.mpec_branches.fix_modes` (the time stepping decides them).
    Unchanged pattern: only the soft set is renewed."""
    pattern = {int(k): (tuple(int(j) for j in d["stuck"]), tuple(sorted((int(j), float(sg))
                                                                       for j, (_, sg) in d["slots"].items())))
               for k, d in ws.get("breakaway", {}).items()}
    if pattern != b.pattern:
        _unconfigure(b)
        for k, (stuck, slots) in sorted(pattern.items()):
            _add_breakaway(b, k, stuck, dict(slots))
        b.pattern = pattern
    b.soft = {}
    stuck = ws.get("stuck")
    if stuck is None:
        return
    for k in range(1, b.steps + 1):
        for j in range(len(b.ctx.mus)):
            broke = k in pattern and j in dict(pattern[k][1])
            if b.ctx.static[j] and stuck[k - 1, j] and stuck[k, j] and not broke:
                b.soft.update({(k, j, "+excess"): [b.sp[k, j], b.wp[k, j]], (k, j, "-excess"): [b.sm[k, j], b.wm[k, j]],
                               (k, j, "+"): [], (k, j, "-"): []})


def _add_pair(b, key, a, c):
    """The pair 0 ≤ a ⊥ c ≥ 0 on block b: a Pyomo Complementarity, and its sides for the checks."""
    b.sides[key] = (a, c)
    b.pairs[key] = complements(a >= 0, c >= 0)


def _unconfigure(b):
    for k in b.pattern:
        b.del_component(f"breakaway_{k}")
    for key in [key for key in b.sides if key not in b.law_sides]:
        del b.pairs[key]
    for key, (a, c) in b.law_sides.items():
        if key not in b.sides:
            _add_pair(b, key, a, c)
    b.sides, b.pattern, b.loose = dict(b.law_sides), {}, []
    b.row_parts = b.row_parts[:5]


def _add_breakaway(b, k, stuck, slots):
    ctx = b.ctx
    n, ns, nrow = ctx.eq.n, len(ctx.mus), len([r for r in b.nu if r[0] == k])
    vb = pyo.Block()
    b.add_component(f"breakaway_{k}", vb)
    S, St = range(ns), [j for j in range(ns) if ctx.static[j]]
    vb.q, vb.v = pyo.Var(range(n), initialize=0.0), pyo.Var(range(n), initialize=0.0)
    vb.nu, vb.P = pyo.Var(range(nrow), initialize=0.0), pyo.Var(S, initialize=0.0)
    vb.lp, vb.lm, vb.sp, vb.sm = (pyo.Var(S, within=pyo.NonNegativeReals, initialize=0.0) for _ in range(4))
    vb.wp, vb.wm = (pyo.Var(St, within=pyo.NonNegativeReals, initialize=0.0) for _ in range(2))
    for j in stuck:
        vb.sp[j].fix(0.0), vb.sm[j].fix(0.0)
        if ctx.static[j]:
            vb.wp[j].fix(0.0), vb.wm[j].fix(0.0)
    vb.dynamics, vb.position, vb.joint, vb.gap, vb.slip, vb.law = (pyo.ConstraintList() for _ in range(6))
    ctx.step(vb, k, [b.q[k - 1, i] for i in range(n)], [b.v[k - 1, i] for i in range(n)], [vb.q[i] for i in range(n)],
             [vb.v[i] for i in range(n)], lambda name, j: getattr(vb, name)[j],
             lambda key, a, c: _add_pair(b, key, a, c), ("virtual", k), stuck=stuck)
    for j, sg in slots.items():
        for key in [key for key in b.sides if key[:2] == (k, j) and key[2] != "wall"]:
            del b.sides[key]
            del b.pairs[key]
        mu, mu_s = ctx.mus[j]
        r1 = mu_s * (vb.lp[j] + vb.lm[j]) - sg * vb.P[j]
        r0 = mu_s * (b.lp[k - 1, j] + b.lm[k - 1, j]) - sg * b.P[k - 1, j] if k > 1 else 0.0
        theta = r0 / (r0 - r1)
        vb.law.add(b.P[k, j] == theta * vb.P[j] + (1 - theta) * sg * mu * (b.lp[k, j] + b.lm[k, j]))
        zero, other = (b.sp[k, j], b.sm[k, j]) if sg > 0 else (b.sm[k, j], b.sp[k, j])
        b.loose.append((zero, other, [b.wp[k, j], b.wm[k, j]] if ctx.static[j] else []))
    b.row_parts = b.row_parts + [vb.dynamics, vb.position, vb.joint, vb.gap, vb.slip, vb.law]



def warm(b, eq, ws, mus, static):
    """Set the variables from a simulation or time stepping sampled on the grid (the forces at the step's end);
    a time stepping's breakaway law is configured first (:func:`configure`)."""
    if "breakaway" in ws:
        configure(b, ws)
    q, v = np.asarray(ws["q"], float), np.asarray(ws["v"], float)
    lam = np.asarray(ws.get("normal_force", np.zeros((q.shape[0], len(eq.slots)))), float).reshape(q.shape[0], -1)
    fr = np.asarray(ws.get("friction_force", np.zeros_like(lam)), float).reshape(q.shape[0], -1)
    nu = ws.get("nu")
    broke = {(k, j) for k, (_, slots) in b.pattern.items() for j, _ in slots}
    for k in range(1, b.steps + 1):
        for i in range(eq.n):
            b.q[k, i].set_value(float(q[k, i]))
            b.v[k, i].set_value(float(v[k, i]))
        if nu is not None:
            for r in range(np.shape(nu)[1]):
                b.nu[k, r].set_value(float(nu[k][r]))
        _warm_slots(b, eq, mus, static, lam[k], fr[k], lambda name, j, k=k: getattr(b, name)[k, j],
                    [pyo.value(b.slip_velocity[k, j]) for j in range(len(eq.slots))], [(k, j) in broke for j in
                                                                                     range(len(eq.slots))])
    for k, d in ws.get("breakaway", {}).items():
        vb, vw = b.component(f"breakaway_{k}"), d["virtual"]
        for i in range(eq.n):
            vb.q[i].set_value(float(vw["q"][i]))
            vb.v[i].set_value(float(vw["v"][i]))
        for r in range(len(vw["nu"])):
            vb.nu[r].set_value(float(vw["nu"][r]))
        stuck = [j in d["stuck"] for j in range(len(eq.slots))]
        _warm_slots(b, eq, mus, static, vw["normal_force"], vw["friction_force"], lambda name, j: getattr(vb, name)[j],
                    vw["slip"], stuck)


def _warm_slots(b, eq, mus, static, lam, fr, var, slip, unused_w):
    for j in range(len(eq.slots)):
        L, P, vt = float(lam[j]), float(fr[j]), float(slip[j])
        var("lp", j).set_value(max(L, 0.0))
        var("lm", j).set_value(max(-L, 0.0))
        var("P", j).set_value(P)
        for name, x in (("sp", max(vt, 0.0)), ("sm", max(-vt, 0.0))):
            if not var(name, j).fixed:
                var(name, j).set_value(x)
        if static[j] and not var("wp", j).fixed:
            mu, mu_s = (pyo.value(x) for x in mus[j])
            w = 0.0 if unused_w[j] else (mu_s - mu) * abs(L)
            var("wp", j).set_value(w if vt > 0 else 0.0)
            var("wm", j).set_value(w if vt < 0 else 0.0)


def stick_ratios(m, tol=1e-9):
    """``{(experiment, slot): (largest |P|/|Λ| over the stuck steps, number of stuck steps)}`` of a solution.

    A step is stuck when both slip parts are below ``tol`` × the largest slip and
    |Λ| above ``tol`` × the largest; NaN when no step is stuck.
    """
    out = {}
    for k, b in m.experiment.items():
        for j in sorted({key[1] for key in b.P}):
            keys = [key for key in b.P if key[1] == j]
            s = np.array([pyo.value(b.sp[key]) + pyo.value(b.sm[key]) for key in keys])
            lam = np.array([pyo.value(b.lp[key]) + pyo.value(b.lm[key]) for key in keys])
            P = np.array([abs(pyo.value(b.P[key])) for key in keys])
            stuck = (s <= tol * max(1.0, s.max(initial=0.0))) & (lam > tol * max(1.0, lam.max(initial=0.0)))
            out[k, j] = (float((P[stuck] / lam[stuck]).max()) if stuck.any() else np.nan, int(stuck.sum()))
    return out


def set_theta(m, theta):
    """Set the fitted parameters of ``m`` from ``{user name: value}`` (μ_s through its excess over μ)."""
    statics = dict((s, k) for k, s in m.pairs)
    for n, v in theta.items():
        if n in statics:
            m.excess[n].set_value(max(0.0, float(v) - float(theta[statics[n]])))
        elif n in m.fitted:
            m.fitted[n].set_value(float(v))


def modes(m, tol=1e-9):
    """``{(experiment, pair key): True when the pair's first side is the zero one}`` at the current point."""
    out = {}
    for k, b in m.experiment.items():
        for key, (a, c) in b.sides.items():
            va, vc = pyo.value(a), pyo.value(c)
            out[k, key] = bool(va <= max(vc, tol))
    return out


def fix_modes(m, chosen):
    """Replace every complementarity pair by its branch in ``chosen`` (see :func:`modes`): the zero side
    ``== 0`` (a variable is fixed at 0), the other ``>= 0`` (a row of its own, the bound of a variable side
    lifted, so that its multiplier tells whether it blocks); a plain NLP.  With the breakaway law configured
    (:func:`pympc.identify.mpec_branches.configure`) the reserves of a slot that stays stuck are no rows (its slip
    and w± are zero; whether it stays stuck is the time stepping's decision, re-run by :func:`walk_modes`),
    and a breakaway step's slip has its sign's other part at zero and is free.  ``unfix_modes`` puts the pairs
    back.

    Returns ``{(experiment, key): the "other >= 0" row}``.
    """
    unfix_modes(m)
    rows, lifted, fixed = {}, [], []

    def is_var(x):
        return getattr(x, "is_variable_type", lambda: False)()

    def lift(v):
        if is_var(v) and v.lb == 0:
            lifted.append((v, v.domain))
            v.domain = pyo.Reals

    def zero(x, b):
        # a variable side is fixed at zero (IPOPT drops it) rather than held by a row against its own bound
        # (x ≥ 0 and x = 0 leave the interior point method no interior)
        if is_var(x):
            if not x.fixed:
                x.fix(0.0)
                fixed.append(x)
        else:
            b.mode.add(x == 0)
    for k, b in m.experiment.items():
        b.mode = pyo.ConstraintList()
        b.pairs.deactivate()
        soft = getattr(b, "soft", {})
        for key, (a, c) in b.sides.items():
            first, other = (a, c) if chosen[k, key] else (c, a)
            if key in soft:           # a stuck slot's reserves: decided by the time stepping, not rows
                for x in soft[key]:
                    zero(x, b)
                continue
            zero(first, b)
            rows[k, key] = b.mode.add(other >= 0)
            lift(other)
        for first, other, unused in getattr(b, "loose", []):     # a breakaway step's slip: its sign fixed, free
            for x in [first] + unused:
                zero(x, b)
            lift(other)
    m._lifted, m._fixed = lifted, fixed
    return rows


def unfix_modes(m):
    for v, domain in getattr(m, "_lifted", []):
        v.domain = domain
    for v in getattr(m, "_fixed", []):
        v.unfix()
    m._lifted, m._fixed = [], []
    for b in m.experiment.values():
        if b.component("mode") is not None:
            b.del_component("mode")
        b.pairs.activate()
