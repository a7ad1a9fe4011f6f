"""The transition at an event: projection, the event HLCP, the look-ahead probe, verification.

At an event (and at the start) :class:`Transition` projects the state onto the constraints, builds and solves
the event HLCP (:func:`~pympc.dynamics.events.solved_event_problem`: the native pivoting solver and, small
enough, the enumeration of its whole solution set), reads the new mode off its solution, settles the degenerate
parts by a look-ahead probe (the event HLCP a short time ``probe_delta`` ahead), projects the velocities
onto the new mode's constraints and verifies the mode (:func:`~pympc.dynamics._transition.check_mode`).
Its compiled kernels are in :mod:`pympc.dynamics._transition` and :mod:`pympc.dynamics._event_solve` (the event
HLCP built, solved, read and enumerated in one call).

The contract: ``transition(t, q, q̇, kind, slot, mode_before)`` → ``(Event, q, q̇, status, message)``, the
status ``None`` when the simulation may go on in ``Event.mode_after``.
"""

from __future__ import annotations

import numpy as np

from ..errors import PympcError, SimulationError
from ..mechanics.assembly import AbsoluteModel
from ._transition import (VELOCITY_NOT_TRIED, VELOCITY_PROJECTED, VELOCITY_SAME, as_floats, assembly_arrays,
                          check_mode, position_step, project_velocity, settle, slip_directions, velocity_rows)
from .events import read_mode, solved_event_problem
from .modes import SPARSE_FROM, Mode, Motion, known_mode, min_norm, solve_mode
from .options import AMBIGUITY_RULES
from .trajectory import Event, EventKind, SimulationStatus

__all__ = ["Transition", "initial_violation"]

_NO_STICK = np.zeros(0, np.int64)     # no sticking slot to project onto (read only by the kernel)


class Transition:
    """The transition of one run: ``transition(t, q, q̇, kind, slot, before)`` (see the module).

    ``evaluator``: the run's :class:`~pympc.dynamics.evaluation.ModeEvaluator`; ``settings``: the run's
    (``velocity_tol``, ``enumerate_pairs``, ``on_ambiguous``, ``probe_delta``, ``crosscheck``)."""

    def __init__(self, evaluator, settings):
        self.ev, self.opts = evaluator, settings
        self.form = evaluator.form
        self.force_scale = None     # max(1, |h|) at the state the last verify() checked (the next phase's start)
        self.positions = None       # (q, assembly at q): the last projection's positions and an assembly there

    def jacobians_at(self, q, t):
        """An assembly at positions ``q`` and time ``t`` made by the last projection, for its Jacobians (the
        velocities it was made at may differ from the projected ones), or None when it is not at this ``q``."""
        last = self.positions
        if last is None or last[1].t != t or (last[0] is not q and not np.array_equal(last[0], q)):
            return None
        return last[1]

    def project(self, t, q, qd, stick=(), assembly=None):
        """Newton projection of q onto the position constraints, then of q̇ onto the velocity ones
        (``assembly``: the assembly at (q, q̇, t) when the caller has it)."""
        return self._project(t, q, qd, stick, assembly)[:2]

    def _project(self, t, q, qd, stick=(), assembly=None):
        """:meth:`project`, and the assembly at the projected (q, q̇) when it is the last one made (q̇ was
        already on the velocity constraints, exactly), else None."""
        form = self.form
        last = np.inf
        if type(stick) is not np.ndarray or stick.dtype != np.int64 or stick.ndim != 1:   # __call__'s are made so
            stick = np.asarray(stick, dtype=np.int64).reshape(-1) if len(stick) else _NO_STICK
        qdf = as_floats(qd)
        for i in range(20):
            a = assembly if i == 0 and assembly is not None else form.assemble(q, qd, t)
            k = assembly_arrays(a)
            # the position error and, converged, the velocity projection at once (settle)
            qf = as_floats(q)
            err, bound, code, qdp = settle(k.g, k.holonomic, k.gN, qf, k.J, k.WN, k.WT, stick, k.gdot,
                                           k.vN, k.vT, qdf, SPARSE_FROM)
            if err <= bound or err > 0.5 * last:   # converged, or at round-off
                break
            last = err
            done, qn = position_step(k.g, k.holonomic, k.gN, k.J, k.WN, qf, SPARSE_FROM)   # min_norm's dense paths
            if done:
                q = qn
            else:
                g = np.concatenate([a.g[a.holonomic], a.gN])
                Jh = np.vstack([a.J[a.holonomic], a.WN])
                q = q - min_norm(Jh, g)
        else:  # out of iterations: q moved after the last assembly
            a = form.assemble(q, qd, t)
            code = VELOCITY_NOT_TRIED
        self.positions = (q, a)          # its Jacobians are those at q (the velocities may be projected below)
        if code == VELOCITY_NOT_TRIED:
            k = assembly_arrays(a)
            code, qdp = project_velocity(k.J, k.WN, k.WT, stick, k.gdot, k.vN, k.vT, qdf, SPARSE_FROM)
        if code == VELOCITY_SAME:        # a zero residual: the correction would be exactly zero
            return q, qd, a
        if code == VELOCITY_PROJECTED:
            return q, qdp, None
        Jv, r = velocity_rows(k.J, k.WN, k.WT, stick, k.gdot, k.vN, k.vT)     # k: the arrays of a
        return q, qd - min_norm(Jv, r), None

    def __call__(self, t, q, qd, kind, slot, before):
        """Choose the mode at an event; returns (Event, q, q̇, status or None, message)."""
        o, ev = self.opts, self.ev
        self.force_scale = None
        q, qd, a = self._project(t, q, qd)
        if not len(ev.mu):  # no slots: nothing to decide
            return Event(t, kind, slot, before, Mode((), ()), None, [], np.zeros(0), np.zeros(0),
                         "no slots", 0, "none"), q, qd, None, None
        if a is None:
            a = self.form.assemble(q, qd, t)
        dirs = slip_directions(assembly_arrays(a).vT, as_floats(qd), o["velocity_tol"])
        if before is not None:
            for k in before.sticking:
                dirs[k] = 0
        if kind == EventKind.SLIP_STOP:
            dirs[slot] = 0
        walls_before = before.walls if before is not None else (1,) * len(ev.mu)
        evp, res = solved_event_problem(a, dirs, ev.mu, ev.mu_s, ev.stab, ev.md, walls_before, o["enumerate_pairs"])
        x, y, classification, npoints, solver, status, message = self._choose(t, kind, evp, res, walls_before)
        if x is None:
            x, y = (res.x, res.y) if res.x is not None else (np.zeros(evp.hlcp.n), np.zeros(evp.hlcp.n))
            event = Event(t, kind, slot, before, before or Mode(walls_before, tuple(Motion(d) for d in dirs)),
                          evp.kept(), evp.candidates, x, y, classification, npoints, solver, verified=False)
            return event, q, qd, status, message
        mode, degenerate = read_mode(evp, x, y, walls_before)
        # the part that triggered the event sits on its boundary by construction (λ ≈ 0, or the reserve ≈ 0):
        # whatever side round-off and the projection left it on, the look-ahead decides it
        if kind == EventKind.WALL_SWITCH and ("wall", slot) not in degenerate:
            degenerate.append(("wall", slot))
        if kind == EventKind.BREAKAWAY and mode.motions[slot] == Motion.STICK and ("stick", slot) not in degenerate:
            degenerate.append(("stick", slot))
        probe = None
        if degenerate:
            mode, probe = self._probe(t, q, qd, a, evp, x, y, dirs, before, mode, degenerate, kind, slot)
        q, qd, a = self._project(t, q, qd, mode._stick, a)     # a: the assembly at this (q, q̇); then at the projected
        verified, why = self.verify(t, q, qd, mode, evp._cand, a)      # (q, q̇), or None
        event = Event(t, kind, slot, before, mode, evp.kept(), evp.candidates, np.asarray(x), np.asarray(y),
                      classification, npoints, solver, probe, verified)
        if o["crosscheck"]:
            self._crosscheck(event)
        if not verified:
            status, message = SimulationStatus.MODE_FAILURE, f"{kind.name} event at t = {t:.9g}: mode {mode} {why}"
        return event, q, qd, status, message

    def _choose(self, t, kind, evp, res, walls_before):
        """The solution of the event HLCP to take: ``(x, y, classification, points, solver, status,
        message)``, ``x`` None with a status when there is none to take (no solution, an ambiguity the rule
        stops on, Lemke failed on a problem too large to enumerate)."""
        o = self.opts
        classification, npoints, solver = "not enumerated", 0, "lemke"
        x = y = None
        status = message = None
        success = res.success
        if evp.hlcp.n <= o["enumerate_pairs"]:
            sset = evp.solution_set(o["enumerate_pairs"])
            classification, npoints = sset.kind.name, len(sset.points)
            if classification == "NONE":
                status, message = SimulationStatus.PARADOX, (
                    f"{kind.name} event at t = {t:.9g}: the event HLCP ({evp.hlcp.n} pairs) has no solution "
                    "(a Painlevé-type paradox: no consistent mode)")
            else:
                # one point selects one mode: no ambiguity to read (the usual case, a read_mode call saved)
                modes = {read_mode(evp, px, py, walls_before)[0] for px, py in sset.points} if npoints > 1 else ()
                if len(modes) > 1:
                    rule = o["on_ambiguous"]
                    if rule == "stop":
                        status, message = SimulationStatus.PARADOX, (
                            f"{kind.name} event at t = {t:.9g}: the event HLCP has {npoints} solutions selecting "
                            f"different modes {sorted(map(str, modes))} (a Painlevé-type paradox); "
                            f"choose a rule with on_ambiguous= ({', '.join(AMBIGUITY_RULES)})")
                    elif rule == "min_force":
                        s_ = evp.nslots
                        x, y = min(sset.points, key=lambda p: float(np.sum(p[0][:s_] + p[1][:s_])))
                        solver = "min_force"
                    else:
                        solver = "lemke (on_ambiguous)"
                if x is None and status is None and not success:
                    x, y = sset.points[0]
                    solver = "enumeration"
        if x is None:
            if success:
                x, y = res.x, res.y
            elif status is None:
                why = ("too large to enumerate (enumerate_pairs={})".format(o["enumerate_pairs"])
                       if classification == "not enumerated" else "and on_ambiguous='lemke' needs its answer")
                status, message = SimulationStatus.SOLVER_FAILURE, (
                    f"{kind.name} event at t = {t:.9g}: Lemke ended with {res.status.name} on the "
                    f"{evp.hlcp.n}-pair event HLCP ({res.message}); {why}")
        return x, y, classification, npoints, solver, status, message

    def _probe(self, t, q, qd, a, evp, x, y, dirs, before, mode, degenerate, kind, slot):
        """Settle the ``degenerate`` parts of ``mode`` by the event HLCP ``probe_delta`` ahead (the state
        moved on by the mode before, or by the event's accelerations at the start)."""
        ev = self.ev
        d = self.opts["probe_delta"]
        if before is not None and ev.compiled(before):   # the compiled solve
            qdd = ev.solved(t, q, qd, before)["qdd"].copy()
        elif before is not None:
            qdd = solve_mode(a, before, ev.mu, ev.mu_s, ev.stab, ev.md).qdd
        else:
            qdd = evp.accelerations(x, y)
        qp, qdp = q + d * qd + 0.5 * d * d * qdd, qd + d * qdd
        ap = self.form.assemble(qp, qdp, t + d)
        walls_before = mode.walls
        evpp, rp = solved_event_problem(ap, dirs, ev.mu, ev.mu_s, ev.stab, ev.md, walls_before, 0)
        walls, motions = list(mode.walls), list(mode.motions)
        if rp.success:
            pmode, pdeg = read_mode(evpp, rp.x, rp.y, walls_before)
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
        probe = {"delta": d, "hlcp": evpp.kept(), "x": rp.x, "y": rp.y, "parts": degenerate}
        return known_mode(tuple(walls), tuple(motions)), probe

    def verify(self, t, q, qd, mode, candidates, assembly=None):
        """Is ``mode`` consistent at this state? (forces on the right wall, sticking within the cone, slips
        accelerating.)  ``assembly``: the assembly at (q, q̇, t) when the caller has it (the evaluation of a mode
        without the compiled solve takes it instead of assembling again)."""
        ev = self.ev
        try:
            if ev.compiled(mode):    # the compiled solve, read in its buffers (float64 slices of one: as kernels take)
                v = ev.solved(t, q, qd, mode)
                lam, h, qdd, F, aT = v["lam"], v["Q"], v["qdd"], v["F"], v["aT"]
            else:
                a, s = ev.evaluate(t, np.concatenate([q, qd]), mode, assembly)
                lam, h, qdd, F, aT = as_floats(s.lam), as_floats(a.h), as_floats(s.qdd), as_floats(s.F), as_floats(s.aT)
        except SimulationError as exc:
            return False, str(exc)
        walls, motions = ev.mode_arrays(mode)
        if type(candidates) is not np.ndarray or candidates.dtype != np.int64:     # __call__'s: the problem's
            candidates = np.asarray(candidates, dtype=np.int64)
        code, k, hmax = check_mode(lam, h, qdd, F, aT, walls, motions, ev.mu_s, candidates)
        self.force_scale = max(1.0, hmax)      # max(1, max|h|)
        if code == 1:
            return False, f"puts a normal force on the wrong wall (σλ = {walls.astype(int) * lam})"
        if code == 2:
            return False, "needs more static friction than μ_s|λ|"
        if code == 3:
            return False, f"starts slot {k} slipping against its acceleration"
        if code == 4:
            return False, "has forces or accelerations that are not finite"
        return True, ""

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


def initial_violation(form, system, t0, initial_tol):
    """How far the model's initial positions and velocities are off the constraints (absolute coordinates).

    Returns ``{"position": {name: |g|}, "velocity": {name: |ġ|}, "tolerance": {"position": tp,
    "velocity": tv}, "over": [...], "projected": False}``: one entry per joint row and slot (joints with
    two rows as ``name[0]``, ``name[1]``); the tolerances are ``initial_tol`` relative to the largest
    coordinate (at least 1) and the largest velocity (at least 1); ``over`` lists the entries above them.
    """
    # the general method's compiled model holds every joint; the tree's does not
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
    tol = {"position": initial_tol * max(1.0, float(np.abs(q).max(initial=0))),
           "velocity": initial_tol * max(1.0, float(np.abs(qd).max(initial=0)))}
    over = [f"{n}: position off by {v:.6g}" for n, v in pos.items() if v > tol["position"]]
    over += [f"{n}: velocity across it {v:.6g}" for n, v in vel.items() if v > tol["velocity"]]
    return {"position": pos, "velocity": vel, "tolerance": tol, "over": over, "projected": False}
