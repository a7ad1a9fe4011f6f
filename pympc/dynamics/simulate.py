"""The event-driven driver: smooth phases with scipy's ``solve_ivp``, one HLCP per transition.

Between events the mode is fixed and :func:`~pympc.dynamics.modes.solve_mode`
gives the accelerations; ``solve_ivp`` integrates and locates the events
(slip velocity of a slipping slot → 0, normal force of any slot → 0, friction
reserve of a sticking slot → 0).  At each event the state is projected onto
the constraints, the event HLCP is built and solved by the native pivoting
solver (and, small enough, its whole solution set enumerated), the new mode is
read off and verified, and integration restarts.  A phase in which the joints and
the sticking slots lock every coordinate and nothing is driven is not
integrated: its state is constant, and its events (functions of t alone) are
located by :func:`~pympc.dynamics.crossings.first_crossing`, which also searches
inside every step of the integrated phases (dense output).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy.integrate import solve_ivp

from ..complementarity import enumerate_solutions
from ..errors import ModelError, OptionError, PympcError, SimulationError
from ..mechanics import GeneralMethod, System, TreeMethod, load_model
from ._event_kernels import event_values
from ..mechanics.assembly import AbsoluteModel
from . import _dop853 as dop853
from ._variational import variational_run
from .crossings import SPLIT, DenseStates, TimeScale, first_crossing
from ._transition import (VELOCITY_PROJECTED, VELOCITY_SAME, as_bools, as_floats, check_mode, position_error,
                          project_velocity, slip_directions)
from .events import event_problem, read_mode
from .modes import Baumgarte, CompiledModes, Mode, Motion, min_norm, solve_mode
from .sensitivity import Sensitivities
from .slot_outputs import add_slot_outputs
from .trajectory import Event, EventKind, SimulationStatus, Trajectory

__all__ = ["simulate", "AMBIGUITY_RULES", "make_formulation"]

AMBIGUITY_RULES = {
    "stop": "stop with status PARADOX (default)",
    "lemke": "take the solution Lemke's method reaches from the covering vector e",
    "min_force": "take the enumerated solution with the smallest total normal force Σ|λ|",
}
"""Rules ``on_ambiguous`` may select when an event HLCP has several solutions with different modes."""

_CROSSCHECK = {None: (), "ipopt": ("ipopt",), "milp": ("milp",), "all": ("ipopt", "milp")}
_METHODS = ("RK23", "RK45", "DOP853", "Radau", "BDF", "LSODA")   # solve_ivp's methods (or an OdeSolver class)

_DEFAULTS = dict(t_start=0.0, t_end=None, method="DOP853", rtol=1e-10, atol=1e-12, max_events=2000,
                 min_event_spacing=1e-9, max_step=None, baumgarte=None, samples=501, zeno_window=None)


def make_formulation(system, formulation=None):
    """A formulation object for ``system``: ``"general"``, ``"tree"`` or an existing formulation."""
    if formulation is None:
        formulation = system.formulation
    if formulation == "general":
        return GeneralMethod(system)
    if formulation == "tree":
        return TreeMethod(system)
    if hasattr(formulation, "assemble") and hasattr(formulation, "slots"):
        return formulation
    raise OptionError(f"formulation must be 'general', 'tree' or a formulation object, got {formulation!r}")


class _Run:
    """State shared by the phases of one simulation (no globals: one per call)."""

    def __init__(self, form, stab, opts):
        self.form, self.stab, self.opts = form, stab, opts
        self.n = form.n
        self.mu = np.array([float(s.mu) for s in form.slots])
        self.mu_s = np.array([float(s.static_mu) for s in form.slots])
        self.md = form.mass_diagonal
        self._cache_key, self._cache = None, None
        self.integrators = set()       # which integrators ran (Trajectory.info["integrator"])
        self._tables = {}              # mode → the event functions' coefficients (_vector)
        self._modes = {}               # mode → its walls and motions as arrays (verify)
        self._fast = CompiledModes(form, self.mu, self.mu_s, stab) if CompiledModes.applies(form) else None

    # ----------------------------------------------------------------- smooth phase
    def _stale(self, t, x, mode):
        """Is the cached evaluation not that of (t, x, mode)?  (The mode is compared by identity first:
        solve_ivp passes the same object to every call of a phase, and a tuple compare costs O(slots).)"""
        xb = x.tobytes()
        k = self._cache_key
        if k is not None and k[0] == t and k[1] == xb and (k[2] is mode or k[2] == mode):
            return None
        return (t, xb, mode)

    def evaluate(self, t, x, mode):
        key = self._stale(t, x, mode)
        if key is not None:
            n = self.n
            if self._fast is not None and isinstance(mode, Mode):   # one compiled call (general method)
                self._out = self._fast.compute(t, x[:n], x[n:2 * n], mode)
                self._cache = None
            else:
                a = self.form.assemble(x[:n], x[n:2 * n], t)
                self._cache = (a, solve_mode(a, mode, self.mu, self.mu_s, self.stab, self.md))
            self._cache_key = key
        if self._cache is None:
            self._cache = self._fast.result()
        return self._cache

    def _compute(self, t, x, mode):
        """The compiled evaluation at (t, x, mode), unless it is the cached one; True if it was evaluated
        (``self._out`` is then a new array, never written again)."""
        key = self._stale(t, x, mode)
        if key is None:
            return False
        self._out = self._fast.compute_state(t, x, mode, np.empty(2 * self.n + 2))
        self._cache_key, self._cache = key, None
        return True

    def slot_values(self, t, x, mode):
        """``(vT, λ, F)`` of the slots at (t, x) in ``mode`` (views of the compiled path's buffers when it applies)."""
        if self._fast is not None and isinstance(mode, Mode):
            self._compute(t, x, mode)
            return self._fast.slot_values()
        a, s = self.evaluate(t, x, mode)
        return a.vT, s.lam, s.F

    def rhs(self, t, x, mode):
        n = self.n
        if self._fast is not None and isinstance(mode, Mode):
            return self._out if self._compute(t, x, mode) else self._out.copy()
        a, s = self.evaluate(t, x, mode)
        qd = x[n:2 * n]
        out = np.empty_like(x)
        out[:n], out[n:2 * n] = qd, s.qdd
        out[2 * n] = -float(s.F @ a.vT)                                  # friction dissipation
        work = a.power + float(s.lam @ a.vN)                             # work put in: applied forces, slots,
        if s.nu.size:                                                    # and joints (driven ones do work)
            work += float(s.nu @ (a.J @ qd))
        out[2 * n + 1] = work
        return out

    def integrate(self, sens, mode, funcs, ta, tb, xa, t_eval, max_step, watched):
        """One piece of a smooth phase from (ta, xa) to tb with dense output, stopping at the first step end
        where the lowest of the ``watched`` event functions has crossed zero downwards: ``solve_ivp``, or

        with DOP853 (the default) and a mode whose right-hand side is compiled end to end
        (:meth:`CompiledModes.flat`), the same steps are taken by the compiled loop of
        :func:`pympc.dynamics._dop853.integrate`, which also watches the event functions there; with
        sensitivities, when the perturbed systems' are too (:meth:`Sensitivities.flat`), on the compiled
        variational right-hand side."""
        o = self.opts
        lowest = _lowest(funcs.vector, watched) if watched.size else None
        flat = self._fast.flat(mode) if (dop853.AVAILABLE and self._fast is not None and isinstance(o["method"], str)
                                         and o["method"] == "DOP853" and isinstance(mode, Mode) and tb > ta) else None
        packed = sens.flat(mode) if sens is not None and flat is not None else None   # the variational rhs
        if flat is None or (sens is not None and packed is None):
            self.integrators.add(f"solve_ivp ({getattr(o['method'], '__name__', o['method'])})")
            return solve_ivp(self.rhs if sens is None else sens.rhs, (ta, tb), xa, method=o["method"], rtol=o["rtol"],
                             atol=o["atol"] if sens is None else sens.atol(o["atol"]), t_eval=t_eval, args=(mode,),
                             max_step=max_step, dense_output=True, events=lowest)
        fl, il, offsets = flat
        event = None
        if watched.size:
            slot, cv, cl, cf, band = funcs.vector.table
            event = (np.ascontiguousarray(np.vstack([cv, cl, cf, band])[:, watched], dtype=float),
                     np.concatenate([offsets, slot[watched]]).astype(np.int64))
        self._cache_key = None             # the compiled buffers will hold other points
        self.integrators.add("compiled DOP853")
        if sens is not None:          # the same loop on the variational right-hand side, S in the error control
            return dop853.integrate(lambda t, y: sens.rhs_python(t, y, mode), ta, tb, xa, fl, il, o["rtol"],
                                    sens.atol(o["atol"]), max_step, t_eval, event, lowest,
                                    stepper=(variational_run, *packed))
        return dop853.integrate(lambda t, x: self.rhs(t, x, mode), ta, tb, xa, fl, il, o["rtol"], o["atol"],
                                max_step, t_eval, event, lowest)

    def event_functions(self, mode, force_scale):
        # a dead band above the integration noise, so that a force that is zero (λ ≡ 0) does not chatter
        band = max(1e-12, 10 * self.opts["rtol"]) * force_scale
        kinds, slots = [], []
        for k, m in enumerate(mode.motions):
            kinds += [EventKind.SLIP_STOP, EventKind.WALL_SWITCH] if m != Motion.STICK else \
                [EventKind.WALL_SWITCH, EventKind.BREAKAWAY]
            slots += [k, k]
        return _EventFunctions(self, mode, band, kinds, slots)

    def _vector(self, kinds, slots, mode, band):
        """All event functions at once (in the order of ``kinds``, ``slots``): ``vector(t, x)`` → array."""
        fixed = self._tables.get(mode)          # what depends on the mode alone, made once per mode
        if fixed is None:
            kind = np.array([int(k) for k in kinds], dtype=int)
            slot = np.array(slots, dtype=int)
            m, w = np.asarray(mode.motions, float)[slot], np.asarray(mode.walls, float)[slot]
            sl, br = (kind == EventKind.SLIP_STOP), (kind == EventKind.BREAKAWAY)
            # g = cv vT + cl λ + cf |F| + band: m vT (slip stop), w λ + band (wall), μs w λ − |F| + band (breakaway)
            cv, cl = np.where(sl, m, 0.0), np.where(sl, 0.0, np.where(br, self.mu_s[slot], 1.0) * w)
            fixed = self._tables[mode] = (slot, cv, cl, np.where(br, -1.0, 0.0), sl)
        slot, cv, cl, cf, sl = fixed
        bands = np.where(sl, 0.0, band)

        def vector(t, x):
            vT, lam, F = self.slot_values(t, x, mode)
            return event_values(vT, lam, F, slot, cv, cl, cf, bands, np.empty(slot.size))

        table = (slot, cv, cl, cf, bands)
        vector.table = table

        def many(ts, X):
            """The functions at the states ``X[i]`` (rows) at times ``ts[i]``: one compiled call when it applies."""
            G = self._fast.event_samples(ts, X, mode, table) if self._fast is not None and isinstance(mode, Mode) \
                else None
            self._cache_key = None            # the compiled buffers now hold the last sample
            return np.array([vector(t, x) for t, x in zip(ts, X)]) if G is None else G
        vector.many = many

        def dense(ts, states):
            """The functions at times ``ts`` of a dense output (:class:`DenseStates`): one compiled call for
            the states and the functions of DOP853 steps when it applies."""
            G = None
            if self._fast is not None and isinstance(mode, Mode) and states.stack is not None:
                G = self._fast.event_samples(ts, None, mode, table, dense=states.stack)
                self._cache_key = None
            return many(ts, states(ts)) if G is None else G
        vector.dense = dense

        def scanner(stack):
            """:func:`pympc.dynamics._dop853.scan_dense` on a stack of DOP853 steps as ``G.scan`` of
            :func:`first_crossing` (None where it does not apply: Python parts, or not a DOP853 stack)."""
            flat = self._fast.flat(mode) if self._fast is not None and isinstance(mode, Mode) else None
            if flat is None or stack is None or vector.split != SPLIT:
                return None
            fl, il, (ovT, olam, oF) = flat
            tab = (ovT, olam, oF, slot, cv, cl, cf, bands)

            def scan(a, ga, b, gb, bound, dt_min):
                t, i, status = dop853.scan_dense(a, ga, b, gb, bound, dt_min, SPLIT, *stack, fl, il, tab)
                self._cache_key = None            # the compiled buffers hold the last sample
                if status != dop853.SCAN_OK:
                    return None
                return (t, i) if i >= 0 else (None, None)
            return scan
        vector.scanner = scanner
        # batches are compiled (cut an interval into many parts at once) only without Python parts
        vector.split = 16 if self._fast is not None and self._fast.batched and isinstance(mode, Mode) else 2
        return vector

    def _event(self, value, kind, slot, mode):
        def f(t, x, *_):
            return value(*self.evaluate(t, x, mode))
        f.terminal, f.direction, f.kind, f.slot = True, -1, kind, slot
        return f

    def locked(self, a, mode):
        """Do the joints, slots and sticking slots fix every coordinate (no free motion at all)?"""
        C = np.vstack([a.J, a.WN, a.WT[mode.sticking]])
        return C.shape[0] >= self.n and np.linalg.matrix_rank(C) == self.n

    def frozen_phase(self, t, t1, x, funcs):
        """A phase in which nothing moves: the state is constant, only the forcing changes with t.

        There is nothing to integrate; the event functions (functions of t alone
        here) are searched for their first downward zero crossing by
        :func:`~pympc.dynamics.crossings.first_crossing` (samples at most
        ``scan_step`` apart, a curvature bound between samples, bisection where a
        dip below zero is not excluded), so a reserve that dips below zero and
        recovers between two samples is found.  Returns (time, index) of the
        first event, or (None, None).
        """
        def G(s):
            return funcs.vector(s, x)
        G.many = lambda ts: funcs.vector.many(ts, np.broadcast_to(x, (len(ts), x.size)))
        G.split = funcs.vector.split
        # the constant state as one dense-output step whose polynomial is zero: y = 0 + x, exactly
        G.scan = funcs.vector.scanner((np.array([t, t1]), np.array([t]), np.array([1.0]), x[None, :].copy(),
                                       np.zeros((1, 7, x.size))))
        return first_crossing(G, t, t1, self.window)

    def scan_phase(self, sol, t, tb, funcs):
        """The first event of an integrated piece on [t, tb], searched on the dense output inside every step.

        A sign test at step ends would miss a dip inside a step.  Returns (time,
        index, state) or (None, None, None).
        """
        def G(s):
            return funcs.vector(s, sol.sol(s))
        states = DenseStates(sol.sol)
        G.many = lambda ts: funcs.vector.dense(ts, states)
        G.split = funcs.vector.split
        G.scan = funcs.vector.scanner(states.stack)
        te, i = first_crossing(G, t, tb, self.window, sol.sol.ts)
        return (None, None, None) if te is None else (te, i, sol.sol(te))

    def window(self, ta, tb, intervals=64):
        """(end, step): a scan window from ``ta`` whose step resolves the forcing there (≤ ``scan_step``, ≤ τ/8)."""
        return self.opts["timescale"].window(ta, tb, self.opts["scan_step"], intervals)

    def initial_violation(self, system, t0):
        """How far the model's initial positions and velocities are off the constraints (absolute coordinates).

        Returns ``{"position": {name: |g|}, "velocity": {name: |ġ|}, "tolerance": {"position": tp,
        "velocity": tv}, "over": [...], "projected": False}``: one entry per joint row and slot (joints with
        two rows as ``name[0]``, ``name[1]``); the tolerances are ``initial_tol`` relative to the largest
        coordinate (at least 1) and the largest velocity (at least 1); ``over`` lists the entries above them.
        """
        form = self.form          # the general method's compiled model holds every joint; the tree's does not
        model = form._abs if getattr(form, "name", None) == "general" and hasattr(form, "_abs") else AbsoluteModel(system)
        q, qd = model.initial_state()
        (g, _, _, gd), slots, *_ = model.evaluate(q, qd, t0)
        gN, vN = slots[0], slots[3]
        names = []
        ends = [r0 for _, r0, _ in model._joints[1:]] + [model.m]
        for (j, r0, _), r1 in zip(model._joints, ends):
            names += [j.name] if r1 - r0 == 1 else [f"{j.name}[{i}]" for i in range(r1 - r0)]
        pos = {n: float(abs(v)) for n, v, h in zip(names, g, model.holonomic) if h}
        vel = {n: float(abs(v)) for n, v in zip(names, gd)}
        for sl, a, b in zip(model.slots, gN, vN):
            pos[sl.name], vel[sl.name] = float(abs(a)), float(abs(b))
        rtol = self.opts["initial_tol"]
        tol = {"position": rtol * max(1.0, float(np.abs(q).max(initial=0))),
               "velocity": rtol * max(1.0, float(np.abs(qd).max(initial=0)))}
        over = [f"{n}: position off by {v:.6g}" for n, v in pos.items() if v > tol["position"]]
        over += [f"{n}: velocity across it {v:.6g}" for n, v in vel.items() if v > tol["velocity"]]
        return {"position": pos, "velocity": vel, "tolerance": tol, "over": over, "projected": False}

    # ----------------------------------------------------------------- events
    def project(self, t, q, qd, stick=(), assembly=None):
        """Newton projection of q onto the position constraints, then of q̇ onto the velocity ones
        (``assembly``: the assembly at (q, q̇, t) when the caller has it)."""
        return self._project(t, q, qd, stick, assembly)[:2]

    def _project(self, t, q, qd, stick=(), assembly=None):
        """:meth:`project`, and the assembly at the projected (q, q̇) when it is the last one made (q̇ was
        already on the velocity constraints, exactly), else None."""
        form = self.form
        last = np.inf
        for i in range(20):
            a = assembly if i == 0 and assembly is not None else form.assemble(q, qd, t)
            err, bound = position_error(as_floats(a.g), as_bools(a.holonomic), as_floats(a.gN), as_floats(q))
            if err <= bound or err > 0.5 * last:   # converged, or at round-off
                break
            last = err
            g = np.concatenate([a.g[a.holonomic], a.gN])
            Jh = np.vstack([a.J[a.holonomic], a.WN])
            q = q - min_norm(Jh, g)
        else:  # out of iterations: q moved after the last assembly
            a = form.assemble(q, qd, t)
        stick = np.asarray(stick, dtype=np.int64).reshape(-1)
        code, qdp = project_velocity(as_floats(a.J), as_floats(a.WN), as_floats(a.WT), stick, as_floats(a.gdot),
                                     as_floats(a.vN), as_floats(a.vT), as_floats(qd))
        if code == VELOCITY_SAME:        # a zero residual: the correction would be exactly zero
            return q, qd, a
        if code == VELOCITY_PROJECTED:
            return q, qdp, None
        Jv = np.vstack([a.J, a.WN, a.WT[stick]])
        r = np.concatenate([a.gdot, a.vN, a.vT[stick]])
        return q, qd - min_norm(Jv, r), None

    def transition(self, t, q, qd, kind, slot, before):
        """Choose the mode at an event; returns (Event, q, q̇, status or None, message)."""
        o = self.opts
        q, qd, a = self._project(t, q, qd)
        if not len(self.mu):  # no slots: nothing to decide
            return Event(t, kind, slot, before, Mode((), ()), None, [], np.zeros(0), np.zeros(0),
                         "no slots", 0, "none"), q, qd, None, None
        if a is None:
            a = self.form.assemble(q, qd, t)
        dirs = slip_directions(as_floats(a.vT), as_floats(qd), o["velocity_tol"])
        if before is not None:
            for k, m in enumerate(before.motions):
                if m == Motion.STICK:
                    dirs[k] = 0
        if kind == EventKind.SLIP_STOP:
            dirs[slot] = 0
        ev = event_problem(a, dirs, self.mu, self.mu_s, self.stab, self.md)
        walls_before = before.walls if before is not None else (1,) * len(self.mu)
        res = ev.solve()
        classification, npoints, solver = "not enumerated", 0, "lemke"
        x = y = None
        status = message = None
        if ev.hlcp.n <= o["enumerate_pairs"]:
            sset = enumerate_solutions(ev.hlcp, max_pairs=o["enumerate_pairs"])
            classification, npoints = sset.kind.name, len(sset.points)
            if sset.kind.name == "NONE":
                status, message = SimulationStatus.PARADOX, (
                    f"{kind.name} event at t = {t:.9g}: the event HLCP ({ev.hlcp.n} pairs) has no solution "
                    "(a Painlevé-type paradox: no consistent mode)")
            else:
                modes = {read_mode(ev, px, py, walls_before)[0] for px, py in sset.points}
                if len(modes) > 1:
                    rule = o["on_ambiguous"]
                    if rule == "stop":
                        status, message = SimulationStatus.PARADOX, (
                            f"{kind.name} event at t = {t:.9g}: the event HLCP has {npoints} solutions selecting "
                            f"different modes {sorted(map(str, modes))} (a Painlevé-type paradox); "
                            f"choose a rule with on_ambiguous= ({', '.join(AMBIGUITY_RULES)})")
                    elif rule == "min_force":
                        s_ = ev.nslots
                        x, y = min(sset.points, key=lambda p: float(np.sum(p[0][:s_] + p[1][:s_])))
                        solver = "min_force"
                    else:
                        solver = "lemke (on_ambiguous)"
                if x is None and status is None and not res.success:
                    x, y = sset.points[0]
                    solver = "enumeration"
        if x is None:
            if res.success:
                x, y = res.x, res.y
            elif status is None:
                why = ("too large to enumerate (enumerate_pairs={})".format(o["enumerate_pairs"])
                       if classification == "not enumerated" else "and on_ambiguous='lemke' needs its answer")
                status, message = SimulationStatus.SOLVER_FAILURE, (
                    f"{kind.name} event at t = {t:.9g}: Lemke ended with {res.status.name} on the "
                    f"{ev.hlcp.n}-pair event HLCP ({res.message}); {why}")
        if x is None:
            x, y = (res.x, res.y) if res.x is not None else (np.zeros(ev.hlcp.n), np.zeros(ev.hlcp.n))
            event = Event(t, kind, slot, before, before or Mode(walls_before, tuple(Motion(d) for d in dirs)),
                          ev.hlcp, ev.candidates, x, y, classification, npoints, solver, verified=False)
            return event, q, qd, status, message
        mode, degenerate = read_mode(ev, x, y, walls_before)
        # the part that triggered the event sits on its boundary by construction (λ ≈ 0, or the reserve ≈ 0):
        # whatever side round-off and the projection left it on, the look-ahead decides it
        if kind == EventKind.WALL_SWITCH and ("wall", slot) not in degenerate:
            degenerate.append(("wall", slot))
        if kind == EventKind.BREAKAWAY and mode.motions[slot] == Motion.STICK and ("stick", slot) not in degenerate:
            degenerate.append(("stick", slot))
        probe = None
        if degenerate:
            mode, probe = self._probe(t, q, qd, a, ev, x, y, dirs, before, mode, degenerate, kind, slot)
        q, qd = self.project(t, q, qd, stick=mode.sticking, assembly=a)     # a: the assembly at this (q, q̇)
        verified, why = self.verify(t, q, qd, mode, ev.candidates)
        event = Event(t, kind, slot, before, mode, ev.hlcp, ev.candidates, np.asarray(x), np.asarray(y),
                      classification, npoints, solver, probe, verified)
        if o["crosscheck"]:
            self._crosscheck(event)
        if not verified:
            status, message = SimulationStatus.MODE_FAILURE, f"{kind.name} event at t = {t:.9g}: mode {mode} {why}"
        return event, q, qd, status, message

    def _probe(self, t, q, qd, a, ev, x, y, dirs, before, mode, degenerate, kind, slot):
        d = self.opts["probe_delta"]
        if before is not None and self._fast is not None and isinstance(before, Mode):   # the compiled solve
            qdd = self._compiled(t, q, qd, before)["qdd"].copy()
        elif before is not None:
            qdd = solve_mode(a, before, self.mu, self.mu_s, self.stab, self.md).qdd
        else:
            qdd = ev.accelerations(x, y)
        qp, qdp = q + d * qd + 0.5 * d * d * qdd, qd + d * qdd
        ap = self.form.assemble(qp, qdp, t + d)
        evp = event_problem(ap, dirs, self.mu, self.mu_s, self.stab, self.md)
        rp = evp.solve()
        walls, motions = list(mode.walls), list(mode.motions)
        if rp.success:
            pmode, pdeg = read_mode(evp, rp.x, rp.y, mode.walls)
        else:
            pmode, pdeg = mode, list(degenerate)
        for part, k in degenerate:
            if part == "wall":
                if ("wall", k) not in pdeg:
                    walls[k] = pmode.walls[k]
                elif kind == EventKind.WALL_SWITCH and k == slot and before is not None:
                    walls[k] = -before.walls[k]
            elif ("stick", k) not in pdeg:
                motions[k] = pmode.motions[k]
        probe = {"delta": d, "hlcp": evp.hlcp, "x": rp.x, "y": rp.y, "parts": degenerate}
        return Mode(tuple(walls), tuple(motions)), probe

    def _compiled(self, t, q, qd, mode):
        """The compiled mode solve at (q, q̇, t): the views of its buffers (valid until the next evaluation)."""
        self._cache_key = None           # the compiled buffers will hold this point
        self._fast.compute(t, q, qd, mode)
        return self._fast.plan(mode).view

    def verify(self, t, q, qd, mode, candidates):
        """Is ``mode`` consistent at this state? (forces on the right wall, sticking within the cone, slips accelerating)."""
        try:
            if self._fast is not None and isinstance(mode, Mode):    # the compiled solve, read in its buffers
                v = self._compiled(t, q, qd, mode)
                lam, h, qdd, F, aT = v["lam"], v["Q"], v["qdd"], v["F"], v["aT"]
            else:
                a, s = self.evaluate(t, np.concatenate([q, qd]), mode)
                lam, h, qdd, F, aT = s.lam, a.h, s.qdd, s.F, s.aT
        except SimulationError as exc:
            return False, str(exc)
        walls, motions = self._mode_arrays(mode)
        code, k = check_mode(as_floats(lam), as_floats(h), as_floats(qdd), as_floats(F), as_floats(aT), walls, motions,
                             self.mu_s, np.asarray(candidates, dtype=np.int64))
        if code == 1:
            return False, f"puts a normal force on the wrong wall (σλ = {walls.astype(int) * lam})"
        if code == 2:
            return False, "needs more static friction than μ_s|λ|"
        if code == 3:
            return False, f"starts slot {k} slipping against its acceleration"
        if code == 4:
            return False, "has forces or accelerations that are not finite"
        return True, ""

    def _mode_arrays(self, mode):
        """``(walls, motions)`` of ``mode`` as float arrays (made once per mode and run)."""
        arrays = self._modes.get(mode)
        if arrays is None:
            arrays = self._modes[mode] = (np.array(mode.walls, dtype=float), np.array(mode.motions, dtype=float))
        return arrays

    def _crosscheck(self, event):
        from ..mpec import crosscheck
        try:
            rep = crosscheck(event.hlcp, solvers=("lemke",) + self.opts["crosscheck"])
        except PympcError as exc:     # a cross-check that cannot run is recorded, it does not stop the simulation
            for name in self.opts["crosscheck"]:
                event.crosscheck[name] = {"agree": False, "status": f"error: {exc}", "success": False}
            return
        event.report = rep
        ref = np.concatenate([event.x, event.y])
        for ans in rep.answers:
            if ans.solver == "lemke":
                continue
            same = ans.success and np.allclose(np.concatenate([ans.x, ans.y]), ref, atol=1e-6 * (1 + np.abs(ref).max()))
            event.crosscheck[ans.solver] = {"agree": bool(same or (ans.success and rep.agree)), "status": ans.status,
                                            "success": bool(ans.success)}


class _EventFunctions:
    """The event functions of a phase: ``funcs[i]`` a callable ``f(t, x)`` with ``kind`` and ``slot`` (made when
    asked for; evaluated on the assembly), and ``vector(t, x)``: all of them at once (compiled)."""

    def __init__(self, run, mode, band, kinds, slots):
        self.run, self.mode, self.band, self.kinds, self.slots = run, mode, band, kinds, slots
        self.vector = run._vector(kinds, slots, mode, band)

    def __len__(self):
        return len(self.kinds)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, i):
        run, kind, k, band = self.run, self.kinds[i], self.slots[i], self.band
        m, w = self.mode.motions[k], self.mode.walls[k]
        if kind == EventKind.SLIP_STOP:
            value = lambda a, s: m * a.vT[k]  # noqa: E731
        elif kind == EventKind.WALL_SWITCH:
            value = lambda a, s: w * s.lam[k] + band  # noqa: E731
        else:
            value = lambda a, s: run.mu_s[k] * w * s.lam[k] - abs(s.F[k]) + band  # noqa: E731
        return run._event(value, kind, k, self.mode)


def _lowest(vector, watched):
    """The smallest of the event functions ``watched`` as one terminal, downward event function for solve_ivp."""
    def lowest(t, x, *_):
        return vector(t, x)[watched].min()
    lowest.terminal, lowest.direction = True, -1
    return lowest


def _options(system, t_span, explicit):
    o = dict(_DEFAULTS)
    o.update({k: v for k, v in system.simulation.items() if k in o})
    o.update({k: v for k, v in explicit.items() if v is not None})
    if t_span is not None:
        try:
            o["t_start"], o["t_end"] = (float(t_span[0]), float(t_span[1]))
        except (TypeError, ValueError, IndexError):
            raise OptionError(f"t_span must be (t0, t1), got {t_span!r}") from None
    if o["t_end"] is None:
        raise OptionError("t_span is needed (or t_end in the model's [simulation] table)")
    if not o["t_end"] > o["t_start"]:
        raise OptionError(f"t_span: t1 = {o['t_end']} must be after t0 = {o['t_start']}")
    for key in ("rtol", "atol", "min_event_spacing") + tuple(k for k in ("max_step", "zeno_window") if o[k] is not None):
        try:
            o[key] = float(o[key])
        except (TypeError, ValueError):
            raise OptionError(f"{key} must be a number, got {o[key]!r}") from None
        positive = key in ("rtol", "max_step", "zeno_window")
        if not o[key] >= 0 or (positive and o[key] == 0) or o[key] == np.inf:
            raise OptionError(f"{key} must be a finite number {'> 0' if positive else '>= 0'}, got {o[key]}")
    for key, least in (("max_events", 0), ("samples", 2)):
        v = o[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < least:
            raise OptionError(f"{key} must be an integer >= {least}, got {v!r}")
        o[key] = int(v)
    if isinstance(o["method"], str) and o["method"] not in _METHODS:
        raise OptionError(f"method must be one of scipy's solve_ivp methods {sorted(_METHODS)}, got {o['method']!r}")
    span = o["t_end"] - o["t_start"]
    if o["max_step"] is None:
        # a sticking phase is trivial for the integrator (its error estimate cannot see a forcing
        # that will break the stick): phases with a sticking slot get at most this step
        o["stick_max_step"] = span / 200
        o["max_step"] = np.inf
    else:
        o["stick_max_step"] = o["max_step"]
    # events are searched between samples at most this far apart, curvature-bounded in between
    # (dynamics/crossings.py): fine enough to resolve the forcing whatever the steps
    o["timescale"] = TimeScale(system)
    o["scan_step"] = min(o["stick_max_step"], span / 200)        # a cap; τ/8 of each window below it
    tau = o["timescale"].tau(o["t_start"], o["t_end"])
    if o["zeno_window"] is None:
        # chattering: zeno_events transitions within a small fraction of the span or of the forcing's time scale
        o["zeno_window"] = min(span * 1e-3, tau / 10)
    return o


def simulate(system, t_span=None, *, params=None, sensitivities=None, force_sensitivities=True, formulation=None, method=None, rtol=None,
             atol=None, crosscheck=None, on_ambiguous="stop", max_events=None, min_event_spacing=None, zeno_events=20,
             zeno_window=None, max_step=None,
             baumgarte=None, samples=None, t_eval=None, enumerate_pairs=8, velocity_tol=1e-8, probe_delta=1e-6,
             progress=None, overrides=None, project_initial=False, initial_tol=1e-6):
    """Simulate a mechanism with friction slots, event by event.

    Parameters
    ----------
    system : System or path
        A :class:`~pympc.mechanics.System` or a model file (read with
        :func:`~pympc.mechanics.load_model`).
    t_span : (float, float), optional
        Default: ``t_start``/``t_end`` of the model's ``[simulation]`` table.
    params : dict, optional
        Parameter values to bind (``{"mu": 0.4}``, or expression strings of the
        model file's language, ``{"alpha": "pi/6"}``): :meth:`System.bind`, no
        re-parsing; unknown names, values outside the bounds and parameters that
        nothing uses are errors.  Recorded in ``Trajectory.parameters``.
    sensitivities : sequence of str, optional
        Parameter names θ: the run also integrates the forward sensitivities
        ∂q/∂θ, ∂q̇/∂θ (and gives ∂λ/∂θ, ∂F/∂θ) through every event (saltation
        relation, :mod:`pympc.dynamics.sensitivity`); see
        :meth:`Trajectory.sensitivity` and ``Event.dtime`` (dτ/dθ).  Where they
        do not exist (grazing or degenerate events) they are NaN from that event
        on, with the reason in ``Trajectory.sensitivity_note``.  They are
        error-controlled with ``rtol`` and, column θ_j, ``atol / (0.01 max(|θ_j|, 1e-2))``.
    force_sensitivities : bool
        With ``sensitivities``: also ∂λ/∂θ and ∂F/∂θ at every sample (default).
        They cost 2 n_θ mode evaluations per sample; ``False`` leaves them out
        (``Trajectory.dnormal_force`` is None) when only the motion is needed.
    formulation : {"general", "tree"} or formulation object, optional
        Default: the system's.
    method, rtol, atol, max_step
        Passed to :func:`scipy.integrate.solve_ivp` (defaults DOP853, 1e-10, 1e-12; by default
        phases with a sticking slot take steps of at most 1/200 of the time span: the error
        control alone would take huge steps through a stick phase, where the motion is trivial
        but the forcing is not).  Events do not depend on the steps: every phase's event
        functions are searched on the dense output between samples at most
        min(1/200 of the span, τ/8, max_step) apart, τ the forcing's time scale, with a
        curvature bound and bisection in between (:mod:`pympc.dynamics.crossings`), so a
        friction reserve that dips below zero and recovers within a step is found.
    crosscheck : {None, "ipopt", "milp", "all"}
        Build every event's Pyomo MPEC model afresh and solve it with these
        solvers as well; the agreement is recorded per event (each solver gets
        :func:`pympc.crosscheck`'s default time limit, 60 s; a MILP out of
        time is recorded as ``UNDECIDED``).
    on_ambiguous : str
        What to do when an event HLCP has several solutions selecting different
        modes: one of :data:`AMBIGUITY_RULES` (default ``"stop"``).  The choice is
        recorded in ``Event.solver``.  No solution always stops.
    max_events : int
        Event budget (default 2000); status EVENT_LIMIT when used up.
    min_event_spacing : float
        Events closer than this (default 1e-9 s) count towards the Zeno guard;
        ``zeno_events`` such events in a row end with status ZENO.
    zeno_window : float, optional
        Rate criterion of the Zeno guard: ``zeno_events`` (default 20) transitions
        of one slot within this window end with status ZENO (transitions of
        different slots, such as the slots of a long chain coming to rest one after
        another, are counted separately).  Default: 1e-3 of the time span or
        1/10 of the forcing's time scale τ (1/fastest rate of the model's time
        functions), whichever is smaller.
    baumgarte : Baumgarte, optional
        Constraint stabilization (default α = β = 10 1/s).
    samples : int
        Number of evenly spaced output samples (default 501), plus every event;
        or give ``t_eval``.
    enumerate_pairs : int
        Enumerate the complete solution set of event HLCPs up to this many pairs
        (default 8); larger ones are solved by Lemke alone.
    velocity_tol : float
        Slip velocities below ``velocity_tol·max(1, |q̇|)`` make a slot a stick candidate.
    probe_delta : float
        Look-ahead time used to settle degenerate event HLCPs (default 1e-6 s).
    progress : callable, optional
        Called as ``progress(t, t0, t1)`` after every phase.
    overrides : dict, optional
        The same as ``params`` (the model-file spelling of ``--set``).
    project_initial : bool
        Initial positions or velocities off the constraints (beyond ``initial_tol``)
        are an error unless this is True; then they are projected onto the
        constraints, and the violation is kept in ``Trajectory.initial_violation``
        (always recorded, per joint row and slot).
    initial_tol : float
        Tolerance of the initial violation, relative to the largest coordinate and
        the largest velocity (each at least 1): default 1e-6.

    Returns
    -------
    Trajectory

    Raises
    ------
    ModelError
        If the initial state is off the constraints and ``project_initial`` is False.

    Examples
    --------
    One particle in a horizontal slot (μ = 0.4) pushed by 3 N sticks, pushed by
    5 N slips with a = 1 m/s² (DESIGN.md §3):

    >>> from pympc.mechanics import System, Particle, Slot, PointForce
    >>> s = System("hand case")
    >>> _ = s.add(Particle("p", mass=1.0)); _ = s.add(Slot("slot", "p", "ground", mu=0.4))
    >>> _ = s.add(PointForce("push", "p", value=(5.0, -10.0)))
    >>> tr = simulate(s, (0.0, 1.0))
    >>> tr.status.name, round(float(tr.qd[-1, 0]), 9), str(tr.events[0].mode_after)
    ('SUCCESS', 1.0, '[+ fwd]')
    """
    for name, given in (("params", params), ("overrides", overrides)):
        if given is not None and not isinstance(given, Mapping):
            raise OptionError(f"{name} must be a mapping name -> value (e.g. {{'mu': 0.3}}), "
                              f"got {type(given).__name__} {given!r}")
    values = {**(overrides or {}), **(params or {})}
    if isinstance(system, (str, Path)):
        system = load_model(system, **values)
    elif isinstance(system, System):
        system = system.bind(values)
    else:
        raise OptionError(f"system must be a pympc System or a model file path, got {type(system).__name__}")
    if on_ambiguous not in AMBIGUITY_RULES:
        raise OptionError(f"on_ambiguous must be one of {sorted(AMBIGUITY_RULES)}, got {on_ambiguous!r}")
    if crosscheck not in _CROSSCHECK:
        raise OptionError(f"crosscheck must be one of {list(_CROSSCHECK)}, got {crosscheck!r}")
    o = _options(system, t_span, dict(method=method, rtol=rtol, atol=atol, max_events=max_events,
                                      min_event_spacing=min_event_spacing, max_step=max_step, zeno_window=zeno_window,
                                      baumgarte=baumgarte, samples=samples))
    stab = o["baumgarte"] or Baumgarte()
    if isinstance(stab, dict):
        stab = Baumgarte(**stab)
    o.update(on_ambiguous=on_ambiguous, crosscheck=_CROSSCHECK[crosscheck], enumerate_pairs=int(enumerate_pairs),
             velocity_tol=float(velocity_tol), probe_delta=float(probe_delta), initial_tol=float(initial_tol))
    if isinstance(zeno_events, bool) or not isinstance(zeno_events, (int, np.integer)) or zeno_events < 2:
        raise OptionError(f"zeno_events must be an integer >= 2, got {zeno_events!r}")
    if isinstance(initial_tol, bool) or not isinstance(initial_tol, (int, float)) or not 0 <= initial_tol < np.inf:
        raise OptionError(f"initial_tol must be a finite number >= 0, got {initial_tol!r}")
    form = make_formulation(system, formulation)
    run = _Run(form, stab, o)
    sens = None
    if sensitivities is not None:
        if getattr(form, "name", None) not in ("general", "tree"):
            raise OptionError("sensitivities need formulation='general' or 'tree'")
        sens = Sensitivities(run, system, sensitivities, lambda sy: _Run(make_formulation(sy, form.name), stab, o),
                             forces=bool(force_sensitivities))
    t0, t1 = o["t_start"], o["t_end"]
    grid = _sample_grid(t_eval, t0, t1) if t_eval is not None else np.linspace(t0, t1, int(o["samples"]))
    n = form.n
    initial = run.initial_violation(system, t0)
    if initial["over"] and not project_initial:
        raise ModelError(f"{system.name}: the initial state is off the constraints ({'; '.join(initial['over'][:6])}"
                         f"{'; …' if len(initial['over']) > 6 else ''}; tolerances {initial['tolerance']['position']:.3g}"
                         f" in position, {initial['tolerance']['velocity']:.3g} in velocity): fix the bodies' initial "
                         "positions/velocities, or let simulate project them onto the constraints with "
                         "project_initial=True (pympc simulate --project-initial)")
    initial["projected"] = bool(initial["over"])
    q, qd = form.initial_state()
    event, q, qd, status, message = run.transition(t0, q, qd, EventKind.START, None, None)
    events = [event]
    phases = []              # (t array, x array, mode)
    x = np.concatenate([q, qd, [0.0, 0.0]])
    if sens is not None:
        x = np.concatenate([x, sens.start(t0, x, event.mode_after.sticking, event).ravel()])
    t = t0
    close = 0
    mode = event.mode_after
    recent = {}    # slot → times of its transitions within the last zeno_window
    try:
        while status is None and t < t1:
            a = form.assemble(x[:n], x[n:2 * n], t)
            fscale = max(1.0, float(np.abs(a.h).max(initial=0)))
            funcs = run.event_functions(mode, fscale)
            inside = grid[(grid > t) & (grid < t1)]
            if mode.sticking and not form.rheonomic and run.locked(a, mode):
                te, i = run.frozen_phase(t, t1, x, funcs)
                if te is None:
                    phases.append((np.concatenate([[t], inside, [t1]]), np.repeat(x[:, None], inside.size + 2, 1), mode))
                    t = t1
                    break
                xe = x
                ins = inside[inside < te]
                phases.append((np.concatenate([[t], ins, [te]]), np.repeat(x[:, None], ins.size + 2, 1), mode))
            else:
                step = o["stick_max_step"] if mode.sticking else o["max_step"]
                # integrated in chunks with dense output, the events searched inside every step
                # (solve_ivp's own event location only compares step ends, and takes a function that
                # starts at zero for a root): the first crossing ends the phase
                ta, xa, te = t, x, None
                while True:
                    tb = run.window(ta, t1, 64)[0]
                    ins = inside[(inside > ta) & (inside < tb)]
                    # solve_ivp stops at the first step-end sign change of a function that starts positive
                    # (a hint that ends the piece early); the scan decides
                    # (solve_ivp takes a function that starts at zero for a root at the start: then again without)
                    # one hint function, the lowest of the event functions watched (one evaluation per step)
                    g0 = funcs.vector(ta, xa)
                    for watched in (np.flatnonzero(g0 >= 0), np.flatnonzero(g0 > 0)):
                        sol = run.integrate(sens, mode, funcs, ta, tb, xa, np.append(ins, tb) if tb >= t1 else ins,
                                            step, watched)
                        tend, hint = tb, None
                        if sol.status == 1:
                            th, xh = sol.t_events[0][0], sol.y_events[0][0]
                            j = int(watched[np.argmin(funcs.vector(th, xh)[watched])])
                            tend, hint = th, (th, j, xh)
                            if th <= ta + 1e-9 * max(1.0, abs(ta)) and g0[j] <= 0:
                                continue
                        break
                    if sol.status == -1:
                        break
                    te, i, xe = run.scan_phase(sol, ta, tend, funcs)
                    if te is None and hint is not None:
                        te, i, xe = hint
                    if te is not None or tend >= t1:
                        break
                    phases.append(_phase(sol, ta, xa, None, None, mode, start=ta == t or ta in inside))
                    ta, xa = tb, sol.sol(tb)
                if sol.status == -1:
                    status, message = SimulationStatus.INTEGRATION_FAILED, f"solve_ivp failed after t = {ta:.9g}: {sol.message}"
                    phases.append(_phase(sol, ta, xa, None, None, mode, start=ta == t or ta in inside))
                    break
                if te is None:
                    phases.append(_phase(sol, ta, xa, None, None, mode, start=ta == t or ta in inside))
                    t = t1
                    break
                phases.append(_phase(sol, ta, xa, te, xe, mode, start=ta == t or ta in inside))
            if progress is not None:
                progress(te, t0, t1)
            f = funcs[i]
            close = close + 1 if te - t < o["min_event_spacing"] else 0
            event, q, qd, status, message = run.transition(te, xe[:n], xe[n:2 * n], f.kind, f.slot, mode)
            events.append(event)
            x = np.concatenate([q, qd, xe[2 * n:]])
            if sens is not None and status is None:
                xm, Sm = sens.split(xe)
                xp = x[:2 * n + 2]
                S = sens.jump(te, xm, Sm, mode, f.kind, f.slot, xp, event.mode_after, event)
                x = np.concatenate([xp, S.ravel()])
            t, mode = te, event.mode_after
            if status is None and close >= zeno_events:
                status, message = SimulationStatus.ZENO, (
                    f"{close} events closer than min_event_spacing = {o['min_event_spacing']:g} s in a row near "
                    f"t = {t:.9g} (event accumulation / chattering)")
            # the rate criterion counts the transitions of each slot: many slots of a long chain that come to
            # rest within a millisecond are one transition each, not an accumulation
            mine = recent.setdefault(f.slot, [])
            mine[:] = [s for s in mine if t - s < o["zeno_window"]] + [t]
            if status is None and len(mine) >= zeno_events:
                status, message = SimulationStatus.ZENO, (
                    f"{len(mine)} transitions of slot {form.slots[f.slot].name!r} within {t - mine[0]:.3g} s < "
                    f"zeno_window = {o['zeno_window']:.3g} s near t = {t:.9g} (event accumulation / chattering; "
                    "the window is 1e-3 of the span or 1/10 of the forcing's time scale unless given)")
            if status is None and len(events) > o["max_events"]:
                status, message = SimulationStatus.EVENT_LIMIT, f"max_events = {o['max_events']} reached at t = {t:.9g}"
    except (SimulationError, ModelError) as exc:   # keep what was computed
        status, message = SimulationStatus.ERROR, f"stopped after t = {t:.9g}: {exc}"
    except KeyboardInterrupt:
        status, message = SimulationStatus.INTERRUPTED, f"interrupted after t = {t:.9g}"
    if status is None:
        status, message = SimulationStatus.SUCCESS, f"reached t = {t1:g} with {len(events) - 1} transitions"
    if progress is not None:
        progress(t, t0, t1)
    if not phases:
        phases.append((np.array([t]), x[:, None], mode))
    tr = _trajectory(run, phases, events, status, message, sens)
    tr.initial_violation, tr.sample_times = initial, grid
    return add_slot_outputs(system, tr)


def _sample_grid(t_eval, t0, t1):
    """``t_eval`` checked: finite, strictly increasing, inside the span (an OptionError saying which, otherwise)."""
    try:
        grid = np.asarray(t_eval, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise OptionError(f"t_eval must be a sequence of times in s, got {type(t_eval).__name__}") from None
    if grid.size == 0 or not np.all(np.isfinite(grid)):
        raise OptionError("t_eval must be a non-empty sequence of finite times")
    if np.any(np.diff(grid) <= 0):
        i = int(np.argmax(np.diff(grid) <= 0))
        raise OptionError(f"t_eval must be strictly increasing: t_eval[{i + 1}] = {grid[i + 1]:g} follows {grid[i]:g}")
    slack = 1e-12 * max(1.0, abs(t0), abs(t1))          # round-off of a computed grid (np.arange) is not an error
    if grid[0] < t0 - slack or grid[-1] > t1 + slack:
        raise OptionError(f"t_eval runs from {grid[0]:g} to {grid[-1]:g} s, outside the span {t0:g} .. {t1:g} s; "
                          "give times inside the span (or widen t_span)")
    return np.clip(grid, t0, t1)


def _phase(sol, ta, xa, tb, xb, mode, start=True):
    """The samples of one smooth phase (or of one piece of it): its start (unless ``start`` is False: a
    piece that continues a phase), the requested times inside it, its end."""
    st = np.asarray(sol.t, dtype=float).reshape(-1)
    sy = np.asarray(sol.y, dtype=float).reshape(len(xa), st.size)
    keep = st > ta if tb is None else (st > ta) & (st < tb)
    first = [[ta]] if start else []
    ts = np.concatenate(first + [st[keep]] + ([[tb]] if tb is not None else []))
    xs = np.hstack(([xa[:, None]] if start else []) + [sy[:, keep]] + ([xb[:, None]] if tb is not None else []))
    return ts, xs, mode


def _trajectory(run, phases, events, status, message, sens=None):
    form = run.form
    n, s = form.n, len(run.mu)
    rows, dsens = [], []
    for ts, xs, mode in phases:
        fast = None
        if run._fast is not None and isinstance(mode, Mode):   # the whole phase in one call
            fast = run._fast.rows(ts, xs[:2 * n + 2].T, mode)
            run._cache_key = None
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
                a, ms = run.evaluate(tj, xj, mode)
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
            "integrator": " + ".join(sorted(run.integrators)) or "none (no integrated phase)"}
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
