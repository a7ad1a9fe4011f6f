"""The time stepping of the trajectory MPEC run as a simulation: every parameter fixed, one step at a time.

:func:`time_stepping` advances the discretization of
:mod:`pympc.identify.mpec_model` (same :class:`~pympc.mechanics.equations.Equations`,
same :func:`~pympc.identify.mpec_model.slot_law` pairs) step by step: each step
is a small mixed complementarity problem in (v_{k+1}, ν, Λ±, P, s±, w±),
solved exactly as a MILP (HiGHS through :func:`scipy.optimize.milp`, one
binary per complementarity pair, big-M).  Among the solutions of a step it
takes the one with the least slip |s⁺| + |s⁻| (with μ_s = μ the step has a
unique solution and the choice does not matter).

Breakaway (a slot with μ_s > μ stuck at step k): the *virtual stick step*
k → k+1 (the slot held stuck, its force P' free) is solved first.  With the
reserve towards the stick force's sign σ, r = μ_s|Λ| − σP, the slot stays
stuck if r'_{k+1} ≥ 0 (the virtual step is the step).  Otherwise it breaks
away inside the step after the fraction θ = r_k / (r_k − r'_{k+1}) ∈ [0, 1]
(the reserve interpolated linearly between the last stuck step and the
virtual one; r_0 = 0): stuck for θh, slipping for (1 − θ)h, so the step's
mean force is P = θ P' + (1 − θ) σ μ|Λ| and its slip is free.  θ = 1 is the
stick step, θ = 0 a full slip step: when the breakaway moves to the next step
the trajectory does not jump, and it is continuous and piecewise smooth in
μ_s (r is linear in μ_s).  The earlier stick-first law (``breakaway=False``:
stuck while a stick solution with |P| ≤ μ_s|Λ| exists, then a whole slip
step) is piecewise constant in μ_s.  A slipping slot that stops is decided
by the least-slip rule above (it sticks if |P| ≤ μ_s|Λ| can hold).

Measured (2 s oscillator, μ = 0.3, μ_s = 0.4): max |Δv| against
:func:`pympc.simulate` 8.2e-2, 4.1e-2, 2.1e-2, 1.0e-2 at h = 0.04, 0.02,
0.01, 0.005 s (first order; the stick-first law: 7.9e-2 ... 8.7e-3); the
least squares against the exact record on 41 values of μ_s in [0.38, 0.42]
(h = 0.02 s) has no plateau (the stick-first law: 4 plateaus, 3 jumps).

It separates the discretization error (this trajectory against
:func:`pympc.simulate`) from the optimization error of the MPEC fit, and a
solution of it satisfies the MPEC's rows and pairs exactly (with the
breakaway steps configured, :func:`pympc.identify.mpec_branches.configure`), so it
is the warm start of the MPEC at given parameters and fixes the branches of
:func:`pympc.identify.mpec_route.walk_modes`.

The position-level rows g(q_{k+1}) = 0 and the Jacobians at q_{k+1} are
linearized about the previous iterate and the step repeated until q_{k+1}
is stationary (exact in one pass when the rows are linear, as for a
fixed straight guide).  Jacobians of the position functions are central
differences (step 1e-7).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from ..errors import SimulationError
from ..mechanics.equations import Equations
from .mpec_model import _initial_state, slot_law

__all__ = ["time_stepping"]


def _jac(f, q, eps=1e-7):
    q = np.asarray(q, dtype=float)
    f0 = np.asarray(f(q), dtype=float)
    out = np.zeros((f0.size, q.size))
    for i in range(q.size):
        d = np.zeros_like(q)
        d[i] = eps
        out[:, i] = (np.asarray(f(q + d), float) - np.asarray(f(q - d), float)) / (2 * eps)
    return f0, out


def time_stepping(system, t_end, step, *, t0=None, big=1e4, iterations=30, tol=1e-12, breakaway=True):
    """Run the MPEC's time stepping with the system's parameter values.

    Parameters
    ----------
    system : System
        The mechanism, every parameter at its value (``system.bind(...)``).
    t_end : float
    step : float
        Largest step; the grid is uniform with K = ceil((t_end − t0)/step) steps (as the MPEC's).
    t0 : float, optional
        Default: the model's ``t_start`` or 0.
    big : float
        Big-M bound on every variable and pair side of a step (raise it for large forces).
    iterations : int
        Most passes of the linearization of the position-level rows per step (it stops when q_{k+1} is
        stationary; one pass for linear rows.  The slider-crank needed more than the earlier default 5: its
        rows were violated by 7.7e-3 after 5 passes, by 5e-8 after 30).
    breakaway : bool
        Resolve the breakaway of a stuck slot with μ_s > μ inside the step (the module notes; default).
        False: the stick-first law of the earlier version (a whole step breaks away; piecewise constant in μ_s).

    Returns
    -------
    dict
        ``t`` (K+1,), ``q``, ``v`` (K+1, n), ``normal_force``, ``friction_force``, ``slip`` (K+1, slots)
        (row 0: zeros for the forces), ``nu`` (K+1, joint rows), ``h``, and ``breakaway``:
        ``{k: {"stuck": slots stuck at step k − 1,
        "slots": {j: (θ, σ)}, "virtual": the virtual stick step's arrays}}`` for every step k in which a
        slot breaks away (σ the sign of the stick force, θ the stuck fraction of the step); ``stuck`` (K+1, slots):
        the slot is stuck at that step (the breakaway law applies in the next one).

    Raises
    ------
    SimulationError
        When a step has no solution within the bounds (name the step and time).
    """
    eq = Equations(system)
    eq.check_supported()
    t0 = float(system.simulation.get("t_start", 0.0)) if t0 is None else float(t0)
    K = max(1, int(math.ceil((t_end - t0) / step - 1e-9)))
    h = (t_end - t0) / K
    env = eq.parameters()
    mass = np.array([float(x) for x in eq.mass(env)])
    n, ns = eq.n, len(eq.slots)
    mus = [(float(eq.value(sl.mu, env)), float(eq.value(sl.mu_s if sl.mu_s is not None else sl.mu, env)))
           for sl in eq.slots]
    static = [c != a for a, c in mus]
    q0, v0 = (np.array(x, dtype=float) for x in _initial_state(eq))
    nr = len(eq.joint_residuals(q0, t0, env))
    # variable layout: v (n), nu (nr), then per slot lp, lm, P, sp, sm[, wp, wm]
    per = [7 if s else 5 for s in static]
    start = [n + nr + sum(per[:j]) for j in range(ns)]
    nx = n + nr + sum(per)
    out_q, out_v, nu_out = [q0], [v0], [np.zeros(nr)]
    lam_out, fr_out, slip_out = [np.zeros(ns)], [np.zeros(ns)], [np.zeros(ns)]
    q, v = q0, v0
    layout = (mass, mus, static, start, per, nx, nr, big)
    # slots stuck at the previous step (a slip of zero there, not a partial breakaway): the breakaway law
    stuck = [static[j] and breakaway and abs(_slip_of(eq, env, q0, v0, j)) <= STUCK_TOL for j in range(ns)]
    events, stuck_out = {}, [list(stuck)]
    for k in range(1, K + 1):
        tk, tp = t0 + k * h, t0 + (k - 1) * h
        Q = np.array([float(x) for x in eq.applied_forces(list(q), list(v), tp, env)])

        def solve(kinds):
            qn = q + h * v
            last = {}
            for _ in range(max(1, iterations)):
                x = _step(eq, env, q, v, qn, tk, h, Q, layout, kinds, last)
                if x is None:
                    raise SimulationError(f"time stepping: step {k} (t = {tk:g}) has no solution with |x| <= {big:g}")
                qnew = q + h * x[:n]
                done = np.max(np.abs(qnew - qn)) <= tol * (1 + np.max(np.abs(qn)))
                qn = qnew
                if done:
                    break
            return x, qn

        broke = {}
        if any(stuck):
            xv, qv = solve({j: "stick" for j in range(ns) if stuck[j]})
            for j in range(ns):
                if not stuck[j]:
                    continue
                s = start[j]
                lam1, P1 = xv[s] + xv[s + 1], xv[s + 2]
                sigma = 1.0 if P1 > 0 else -1.0
                r1 = mus[j][1] * lam1 - sigma * P1            # the virtual step's reserve towards sigma
                if r1 < 0:
                    r0 = mus[j][1] * abs(lam_out[-1][j]) - sigma * fr_out[-1][j] if k > 1 else 0.0
                    broke[j] = (r0 / (r0 - r1), sigma)
        if broke:
            kinds = {j: ("break", th, xv[start[j] + 2], sg) for j, (th, sg) in broke.items()}
            x, qn = solve(kinds)
            events[k] = {"stuck": [j for j in range(ns) if stuck[j]], "slots": broke,
                         "virtual": {"v": xv[:n].copy(), "q": qv.copy(), "nu": xv[n:n + nr].copy(),
                                     "normal_force": np.array([xv[s] - xv[s + 1] for s in start]),
                                     "friction_force": np.array([xv[s + 2] for s in start]),
                                     "slip": np.array([xv[s + 3] - xv[s + 4] for s in start])}}
        elif any(stuck):
            x, qn = xv, qv
        else:
            x, qn = solve({})
        v, q = x[:n], qn
        out_q.append(q), out_v.append(v), nu_out.append(x[n:n + nr])
        lam_out.append(np.array([x[s] - x[s + 1] for s in start]))
        fr_out.append(np.array([x[s + 2] for s in start]))
        slip_out.append(np.array([x[s + 3] - x[s + 4] for s in start]))
        stuck = [static[j] and breakaway and abs(slip_out[-1][j]) <= STUCK_TOL and (j not in broke or broke[j][0] >= 1)
                 for j in range(ns)]
        stuck_out.append(list(stuck))
    return {"t": t0 + h * np.arange(K + 1), "q": np.array(out_q), "v": np.array(out_v), "h": h,
            "normal_force": np.array(lam_out), "friction_force": np.array(fr_out), "slip": np.array(slip_out),
            "nu": np.array(nu_out).reshape(K + 1, nr), "breakaway": events,
            "stuck": np.array(stuck_out, dtype=bool).reshape(K + 1, ns)}


STUCK_TOL = 1e-9
"""A slot whose slip velocity at a step is at most this is stuck there [m/s]."""


def _slip_of(eq, env, q, v, j):
    """The tangential slip velocity WT(q) v of slot j."""
    sc = lambda z: [eq.slot_coordinates(list(z), env)[j][1]]  # noqa: E731
    _, S = _jac(sc, q)
    return float(S[0] @ v)


def _step(eq, env, q, v, qn, tk, h, Q, layout, kinds, last=None):
    """One step's MILP, its position rows linearized at qn; the solution vector or None.

    ``last`` (a dict, optional) holds the previous pass's MILP and answer: a pass whose MILP is the same,
    bit for bit (rows that are linear in q linearize to the same data at the new iterate, so the pass
    that confirms q_{k+1} is stationary repeats the one before), takes that answer without solving again
    — what HiGHS, deterministic, would return.

    ``kinds[j]``: ``"stick"`` (slot j held stuck: slip 0, P free, only the wall pair) or
    ``("break", θ, P', σ)`` (P = θ P' + (1 − θ) σ μ |Λ|, slip free, only the wall pair); otherwise slot_law.
    """
    mass, mus, static, start, per, nx, nr, big = layout
    n = eq.n
    g0, J = _jac(lambda z: eq.joint_residuals(list(z), tk, env), qn) if nr else (np.zeros(0), np.zeros((0, n)))
    sc = lambda z: [c for pair in eq.slot_coordinates(list(z), env) for c in pair]  # noqa: E731
    s0, S = _jac(sc, qn)
    rows, rhs = [], []
    # dynamics: M (v - v_k)/h - J^T nu - WN^T Λ - WT^T P = Q
    D = np.zeros((n, nx))
    D[:, :n] = np.diag(mass / h)
    D[:, n:n + nr] = -J.T
    for j, s in enumerate(start):
        WN, WT = S[2 * j], S[2 * j + 1]
        D[:, s] -= WN
        D[:, s + 1] += WN
        D[:, s + 2] -= WT
    rows.append(D), rhs.append(Q + mass * v / h)
    # position rows at q_{k+1} = q + h v, linearized at qn: g(qn) + J (q + h v - qn) = 0
    if nr:
        G = np.zeros((nr, nx))
        G[:, :n] = h * J
        rows.append(G), rhs.append(-(g0 + J @ (q - qn)))
    for j, s in enumerate(start):
        WN, WT = S[2 * j], S[2 * j + 1]
        G = np.zeros((2, nx))
        G[0, :n] = h * WN                              # gap
        G[1, :n] = WT                                  # slip = sp - sm
        G[1, s + 3], G[1, s + 4] = -1.0, 1.0
        rows.append(G), rhs.append(np.array([-(s0[2 * j] + WN @ (q - qn)), 0.0]))
        kind = kinds.get(j)
        if isinstance(kind, tuple):                    # P - (1 - θ) σ μ (Λ⁺ + Λ⁻) = θ P'
            _, th, Pv, sg = kind
            G = np.zeros((1, nx))
            G[0, s + 2] = 1.0
            G[0, s] = G[0, s + 1] = -(1 - th) * sg * mus[j][0]
            rows.append(G), rhs.append(np.array([th * Pv]))
    Aeq, beq = np.vstack(rows), np.concatenate(rhs)
    # the complementarity pairs of slot_law, as affine rows (coefficients over x, constant last)
    unit = np.eye(nx + 1)
    pairs = []
    for j, s in enumerate(start):
        var = [unit[s + i] for i in range(per[j])]
        extra = (var[5], var[6]) if static[j] else (None, None)
        law = slot_law(var[0], var[1], var[2], var[3], var[4], mus[j][0], mus[j][1], *extra)
        pairs += [(a, c) for key, a, c in law if key == "wall" or j not in kinds]
    npair = len(pairs)
    # x then binaries z: a <= big z, c <= big (1 - z), a, c >= 0
    A, lo, hi = [], [], []
    for p, (a, c) in enumerate(pairs):
        for side, row, zc in ((a, a[:nx], -big), (c, c[:nx], big)):
            line = np.concatenate([row, np.zeros(npair)])
            line[nx + p] = zc
            A.append(line)
            if zc < 0:        # a - big z <= -a0 ; a >= -a0
                lo.append(-np.inf), hi.append(-side[nx])
            else:             # c + big z <= big - c0
                lo.append(-np.inf), hi.append(big - side[nx])
            A.append(np.concatenate([row, np.zeros(npair)]))
            lo.append(-side[nx]), hi.append(np.inf)
    A.append(np.hstack([Aeq, np.zeros((Aeq.shape[0], npair))]))
    cost = np.zeros(nx + npair)
    for s in start:
        cost[s + 3] = cost[s + 4] = 1.0               # least slip
    lb = np.full(nx + npair, -big)
    lb[nx:] = 0.0
    ub = np.full(nx + npair, big)
    ub[nx:] = 1.0
    for j, s in enumerate(start):
        lb[[s, s + 1, s + 3, s + 4]] = 0.0
        if static[j]:
            lb[[s + 5, s + 6]] = 0.0
            if j in kinds:
                ub[[s + 5, s + 6]] = 0.0              # w± unused
        if kinds.get(j) == "stick":
            ub[[s + 3, s + 4]] = 0.0
    integ = np.zeros(nx + npair)
    integ[nx:] = 1
    A_in = np.array(A[:-1])
    data = (A_in.shape, A_in.tobytes(), np.array(lo).tobytes(), np.array(hi).tobytes(), A[-1].tobytes(), beq.tobytes(),
            lb.tobytes(), ub.tobytes())
    if last is not None and last.get("data") == data:   # the same MILP as the pass before: its answer
        return None if last["x"] is None else last["x"].copy()
    x = _solved(cost, A_in, lo, hi, A[-1], beq, integ, lb, ub, nx)
    if last is not None:
        last["data"], last["x"] = data, None if x is None else x.copy()
    return x


def _solved(cost, A_in, lo, hi, Aeq, beq, integ, lb, ub, nx):
    """The step's MILP by HiGHS (scipy's ``milp``, no gap): its x, or None."""
    cons = [LinearConstraint(A_in, lo, hi), LinearConstraint(Aeq, beq, beq)]
    res = milp(cost, constraints=cons, integrality=integ, bounds=Bounds(lb, ub),
               options={"mip_rel_gap": 0.0})
    if res.status != 0 or res.x is None:
        return None
    x = res.x[:nx]
    x[np.abs(x) < 1e-13] = 0.0
    return x
