"""The event-driven driver: ``simulate()`` loops over the phases of a run, event by event.

Between events the mode is fixed; the loop advances a phase (:class:`~pympc.dynamics.stepper.PhaseStepper`:
integration with dense output), whose end is the first event its locator finds
(:class:`~pympc.dynamics.locate.EventLocator`: the first downward zero crossing of the event functions —
slip velocity of a slipping slot, normal force of any slot, friction reserve of a sticking slot), solves the
transition there (:class:`~pympc.dynamics.transition.Transition`: projection, the event HLCP solved by the
native pivoting solver and, small enough, its whole solution set enumerated, look-ahead probe, verification)
and records the event; the Zeno guard and the event budget may stop it.  The options are one validated
object, :class:`~pympc.dynamics.options.SimulateOptions`.  What a run makes once — the formulation, the
:class:`~pympc.dynamics.evaluation.ModeEvaluator` and what it keeps per mode — is kept with the system for its
next run (:func:`_take_setup`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from ..errors import ModelError, OptionError, SimulationError
from ..mechanics import GeneralMethod, System, TreeMethod, load_model
from .evaluation import ModeEvaluator
from .locate import EventLocator
from .options import AMBIGUITY_RULES, SimulateOptions
from .record import build_trajectory
from .sensitivity import Sensitivities
from .slot_outputs import add_slot_outputs
from .stepper import PhaseStepper
from .trajectory import EventKind, SimulationStatus
from .transition import Transition, initial_violation

__all__ = ["simulate", "AMBIGUITY_RULES", "make_formulation", "SimulateOptions"]

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


def simulate(system, t_span=None, *, params=None, sensitivities=None, force_sensitivities=True, formulation=None, method=None, rtol=None,
             atol=None, crosscheck=None, on_ambiguous="stop", max_events=None, min_event_spacing=None, zeno_events=20,
             zeno_window=None, max_step=None,
             baumgarte=None, samples=None, t_eval=None, enumerate_pairs=8, velocity_tol=1e-8, probe_delta=1e-6,
             progress=None, overrides=None, project_initial=False, initial_tol=1e-6, options=None):
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
        Deprecated: the same as ``params``, the one name of a run's parameter values (a
        ``DeprecationWarning`` says so; it will be removed).
    project_initial : bool
        Initial positions or velocities off the constraints (beyond ``initial_tol``)
        are an error unless this is True; then they are projected onto the
        constraints, and the violation is kept in ``Trajectory.initial_violation``
        (always recorded, per joint row and slot).
    initial_tol : float
        Tolerance of the initial violation, relative to the largest coordinate and
        the largest velocity (each at least 1): default 1e-6.
    options : SimulateOptions, optional
        All of the options above as one validated object (:class:`SimulateOptions`, what the keywords
        become; a sweep checks it once and sends it to its runs).  Keywords left at their defaults take
        its values; keywords given override them.

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
    opts = _merged(options, dict(
        formulation=formulation, method=method, rtol=rtol, atol=atol, max_step=max_step, max_events=max_events,
        min_event_spacing=min_event_spacing, zeno_events=zeno_events, zeno_window=zeno_window, baumgarte=baumgarte,
        samples=samples, t_eval=t_eval, crosscheck=crosscheck, on_ambiguous=on_ambiguous,
        enumerate_pairs=enumerate_pairs, velocity_tol=velocity_tol, probe_delta=probe_delta,
        project_initial=project_initial, initial_tol=initial_tol))
    if overrides is not None:
        warnings.warn("simulate(..., overrides=...) is deprecated: write params=... (the same mapping)",
                      DeprecationWarning, stacklevel=2)
    values = {**(overrides or {}), **(params or {})}
    given = system
    if isinstance(system, (str, Path)):
        system = load_model(system, **values)
    elif isinstance(system, System):
        system = system.bind(values)
    else:
        raise OptionError(f"system must be a pympc System or a model file path, got {type(system).__name__}")
    o = opts.resolve(system, t_span)
    # (kept only with a system the caller holds: a copy bound or read here is dropped after the run, and the
    # setup, which refers to it, would only make a reference cycle for the garbage collector; a copy bound to
    # other friction coefficients runs on the setup of the system it was bound from, made from that system)
    holder = given if isinstance(given, System) and given._same_kinematics(system) else None
    setup_key, form, ev = _take_setup(system, opts.formulation, o["baumgarte"],
                                      holder if sensitivities is None else None)
    sens = None
    if sensitivities is not None:
        if getattr(form, "name", None) not in ("general", "tree"):
            raise OptionError("sensitivities need formulation='general' or 'tree'")
        def perturbed(sy):          # the same evaluations for another binding (finite differences in θ)
            return ModeEvaluator(make_formulation(sy, form.name), ev.stab)
        sens = Sensitivities(ev, system, sensitivities, perturbed, forces=bool(force_sensitivities))
    locator = EventLocator(ev, o)
    stepper, transition = PhaseStepper(ev, locator, o, sens, form.rheonomic), Transition(ev, o)
    t0, t1, grid, n = o["t_start"], o["t_end"], o["grid"], form.n
    initial = _initial_violation(form, ev, system, t0, o["initial_tol"], setup_key is not None)
    if initial["over"] and not opts.project_initial:
        raise ModelError(f"{system.name}: the initial state is off the constraints ({'; '.join(initial['over'][:6])}"
                         f"{'; …' if len(initial['over']) > 6 else ''}; tolerances {initial['tolerance']['position']:.3g}"
                         f" in position, {initial['tolerance']['velocity']:.3g} in velocity): fix the bodies' initial "
                         "positions/velocities, or let simulate project them onto the constraints with "
                         "project_initial=True (pympc simulate --project-initial)")
    initial["projected"] = bool(initial["over"])
    q, qd = form.initial_state()
    event, q, qd, status, message = transition(t0, q, qd, EventKind.START, None, None)
    events, phases = [event], []          # phases: (t array, x array, mode)
    x = np.concatenate([q, qd, [0.0, 0.0]])
    if sens is not None:
        x = np.concatenate([x, sens.start(t0, x, event.mode_after.sticking, event).ravel()])
    t, mode = t0, event.mode_after
    guard = _ZenoGuard(o, form)
    # the requested times inside (t, t1): a slice of the sorted grid (grid[(grid > t) & (grid < t1)])
    inner_end = int(np.searchsorted(grid, t1, "left"))
    rheonomic = form.rheonomic
    try:
        while status is None and t < t1:
            a = None
            if mode.sticking and not rheonomic:       # (the transition's own assembly at q: its Jacobians)
                a = transition.jacobians_at(q, t)       # (q: the transition's positions, x[:n] holds them)
                a = a if a is not None else form.assemble(x[:n], x[n:2 * n], t)
            # the dead band's scale: max |h| at this state, as the transition's verification found it
            scale = transition.force_scale
            if scale is None:           # (an assembly at this very state: h depends on q̇)
                a = form.assemble(x[:n], x[n:2 * n], t)
                scale = max(1.0, float(np.abs(a.h).max(initial=0)))
            funcs = locator.functions(mode, scale)
            inside = grid[int(grid.searchsorted(t, "right")):inner_end]
            phase = stepper.advance(t, x, mode, t1, inside, funcs, a)
            phases += phase.pieces
            if phase.status is not None:                  # the integrator failed
                status, message = phase.status, phase.message
                break
            if phase.time is None:                        # no event before t1
                t = t1
                break
            te, xe = phase.time, phase.state
            kind, slot = funcs.kinds[phase.index], funcs.slots[phase.index]
            if progress is not None:
                progress(te, t0, t1)
            event, q, qd, status, message = transition(te, xe[:n], xe[n:2 * n], kind, slot, mode)
            events.append(event)
            x = np.concatenate([q, qd, xe[2 * n:]])
            if sens is not None and status is None:       # the saltation relation carries S through the event
                xm, Sm = sens.split(xe)
                xp = x[:2 * n + 2]
                S = sens.jump(te, xm, Sm, mode, kind, slot, xp, event.mode_after, event)
                x = np.concatenate([xp, S.ravel()])
            t, mode, spacing = te, event.mode_after, te - t
            if status is None:
                status, message = guard.check(t, spacing, slot, len(events))
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
    tr = build_trajectory(ev, stepper.integrators, phases, events, status, message, sens, system)
    _give_back(holder, setup_key, form, ev)
    tr.initial_violation, tr.sample_times = initial, grid
    return add_slot_outputs(system, tr)


def _initial_violation(form, ev, system, t0, tol, kept):
    """:func:`initial_violation` of the run (a new dict); with a setup kept with its system (``kept``: the run's
    system is that system or a copy of it bound to other friction coefficients, the same kinematics) computed once
    per start time and tolerance and kept with the setup's evaluator (``ModeEvaluator.initial_violations``)."""
    if not kept:
        return initial_violation(form, system, t0, tol)
    key = (t0, tol)
    done = ev.initial_violations.get(key)
    if done is None:
        done = ev.initial_violations[key] = initial_violation(form, system, t0, tol)
    return {k: type(v)(v) if isinstance(v, (dict, list)) else v for k, v in done.items()}


SETUPS_KEPT = 4
"""Run setups (formulation and :class:`~pympc.dynamics.evaluation.ModeEvaluator`) kept per system, one per
formulation and Baumgarte stabilization (:func:`_take_setup`)."""


def _take_setup(system, formulation, stab, holder=None):
    """``(key, form, ev)``: the formulation and the evaluator of a run of ``system``.

    A run without sensitivities of a formulation given by name takes them out of the cache of ``holder`` (the
    system the caller holds: ``system`` itself, or the system it was bound from when only friction-only
    parameters differ, :meth:`System._same_kinematics`; kept in ``System._cache``, which every change of the
    system clears; one entry per formulation and ``stab``), where an earlier run left them with what it made
    once per mode (the compiled modes' plans, the event functions' tables): the same objects give the same
    numbers, without making them again; only the friction coefficients are ``system``'s
    (:meth:`ModeEvaluator.set_friction`).  Taken out, not shared: a run owns its evaluator (its compiled
    buffers hold its points), and a nested or concurrent run of the same system makes its own.  ``key`` is
    None for a setup that is not to be given back (``holder`` None: made from ``system``)."""
    if holder is not None and (formulation is None or isinstance(formulation, str)):
        key = (formulation or holder.formulation, stab)
        kept = holder._cache.get("run setups")
        entry = kept.pop(key, None) if kept else None
        if entry is not None:
            entry[1].set_friction(system.slots)     # (an earlier run may have been of another binding)
        else:
            form = make_formulation(holder, formulation)
            entry = (form, ModeEvaluator(form, stab))
            if holder is not system:
                entry[1].set_friction(system.slots)
        return (key, *entry)
    form = make_formulation(system, formulation)
    return None, form, ModeEvaluator(form, stab)


def _give_back(holder, key, form, ev):
    """Keep a run's setup (:func:`_take_setup`) for the next run of ``holder``: at most :data:`SETUPS_KEPT`."""
    if key is None:
        return
    kept = holder._cache.setdefault("run setups", {})
    if key in kept or len(kept) < SETUPS_KEPT:
        kept[key] = (form, ev)


_KEYWORD_DEFAULTS = {f.name: f.default for f in fields(SimulateOptions)}


def _merged(options, keywords):
    """The keywords of ``simulate`` as a :class:`SimulateOptions`: over ``options`` when it is given (keywords
    left at their defaults take its values)."""
    if options is None:
        return SimulateOptions(**keywords)
    if not isinstance(options, SimulateOptions):
        raise OptionError(f"options must be a SimulateOptions, got {type(options).__name__}")
    changed = {}
    for k, v in keywords.items():
        d = _KEYWORD_DEFAULTS[k]
        if not (v is None if d is None else (type(v) is type(d) and v == d)):
            changed[k] = v
    return replace(options, **changed) if changed else options


class _ZenoGuard:
    """The end of a run that accumulates events: ``zeno_events`` events closer than ``min_event_spacing`` in
    a row, or as many transitions of one slot within ``zeno_window``; and the event budget ``max_events``."""

    def __init__(self, settings, form):
        self.o, self.form = settings, form
        self.close = 0
        self.recent = {}    # slot → times of its transitions within the last zeno_window
        self._limits = (settings["min_event_spacing"], settings["zeno_events"], settings["zeno_window"],
                        settings["max_events"])

    def check(self, t, spacing, slot, nevents):
        """After an event at ``t``, ``spacing`` after the one before, of ``slot``: (status, message) or (None, None)."""
        o = self.o
        spacing_min, zeno_events, window, max_events = self._limits
        self.close = self.close + 1 if spacing < spacing_min else 0
        if self.close >= zeno_events:
            return SimulationStatus.ZENO, (
                f"{self.close} events closer than min_event_spacing = {o['min_event_spacing']:g} s in a row near "
                f"t = {t:.9g} (event accumulation / chattering)")
        # the rate criterion counts the transitions of each slot: many slots of a long chain that come to
        # rest within a millisecond are one transition each, not an accumulation
        mine = self.recent.get(slot)
        if mine is None:
            mine = self.recent[slot] = []
        if mine and not t - mine[0] < window:
            mine[:] = [s for s in mine if t - s < window]
        mine.append(t)
        if len(mine) >= zeno_events:
            return SimulationStatus.ZENO, (
                f"{len(mine)} transitions of slot {self.form.slots[slot].name!r} within {t - mine[0]:.3g} s < "
                f"zeno_window = {o['zeno_window']:.3g} s near t = {t:.9g} (event accumulation / chattering; "
                "the window is 1e-3 of the span or 1/10 of the forcing's time scale unless given)")
        if nevents > max_events:
            return SimulationStatus.EVENT_LIMIT, f"max_events = {o['max_events']} reached at t = {t:.9g}"
        return None, None
