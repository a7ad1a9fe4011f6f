"""Fitting parameters with the switch-detecting trajectory model (:mod:`pympc.identify.fesd`).

:func:`fit` (one record) and :func:`fit_records` (several records sharing the parameters, one NLP) build
the FESD model of each record from a simulation at the current parameter values.  That simulation is
complementary already, so it shows the mode of every element: the active set is fixed from it
(:func:`~pympc.identify.fesd.fix_active_set`: the mode of every element and the switch conditions on the
boundaries as equalities) and the model is a smooth NLP; the parameters are freed and the least squares
minimized by IPOPT.  (``forward=True`` first solves the MPEC with the parameters held, relaxed cross
complementarity and the active-set polish, and fixes the active set of that answer instead: the route
before, ~8× slower on the 30 s oscillator record and with the same estimate.)  Solving the MPEC with the
parameters free instead stalls (measured on the 6 s oscillator record: 500 iterations without
convergence from the shooting optimum, the degenerate complementarity rows blocking).  The answer is
verified by simulating every record at the estimate: the simulation's event sequence must be the one the
model was built on (same kinds, same sample intervals) and its outputs must agree with the model's.
When an element collapses to its lower bound (an event pushing across a sample time) or the sequence
differs, the models are started again from simulations a step further along the same direction in θ (a
*walk*: with the same elements the models are restarted in place, ``pympc.identify.fesd._restart``, the
rows kept, the values, bounds, stick phases and mode rows of the new warm start set; the same model as one built
afresh) and solved again, up to ``walks`` times.  A walk whose elements stay at their lower bound during the
solve (:data:`PINNED`) is not solved to the end: IPOPT is stopped and the next walk steps on from that
iterate's θ (every walk but the last; the last is solved to the end, and a collapsed answer of it is reported as
such).  When an answer has the simulation's event sequence but its outputs miss
``verify_tol`` (the elements too coarse for the motion), the elements per interval are doubled and the fit
solved again from that answer's θ, up to ``refine`` times (a refinement is a model build on top of the walks).
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field

import numpy as np

from ..errors import OptionError
from .fesd import DEFAULT_OPTIONS, _restart, _system, fix_active_set, solve, switch_times, trajectory_model
from .fesd_solve import enums, solution_status, termination_condition
from .fesd_start import _layout

__all__ = ["fit", "fit_records", "fit_experiments", "FesdFit", "Record", "WALK_STEP", "PINNED", "FIT_OPTIONS"]

#: default of ``refine``: doublings of the elements per interval when the outputs miss ``verify_tol``
REFINE = 2

#: a walk rebuilds the model at θ + WALK_STEP·(θ − θ_start): past the sample time an event was held at
WALK_STEP = 0.25

#: an element whose length is within this factor of its lower bound is *collapsed* (held there by an event
#: pushing across a sample time)
COLLAPSED = 1.001

#: a walk's IPOPT solve is ended once an element has been collapsed at this many consecutive iterates (not on
#: the last walk of the budget): the walk's structure cannot hold the estimate, and the next walk steps on from the
#: iterate's θ as from a collapsed answer's.  On the 30 s oscillator record from (0.29, 0.41)
#: (``benchmarks/fesd_speed.py``) walk 1's element reaches its bound at IPOPT's 2nd iteration and stays there;
#: solved to the end, it took 9 iterations to a θ the next walk only steps past.  One iterate is not enough: on the
#: 6 s record from 5 % above the true values (``benchmarks/fesd_fits.py``) two elements touch their bound at the 1st
#: iterate and leave it at the 2nd, on the way to the verified estimate (1 walk; stopped there, 3).  Over 48 starts
#: on three records (μ 0.27–0.33 × μ_s 0.37–0.45, seeds 3, 5 and 7) 2 reached the shooting estimate within 0.1 SE
#: from 47 (the other not verified), 3 from 45 (its walks differ; the other 3 not verified).
PINNED = 2

#: IPOPT options of the fit's NLP over :data:`~pympc.identify.fesd_solve.DEFAULT_OPTIONS` (and under the caller's
#: ``options``): IPOPT takes MUMPS's solution of a KKT system as it comes, without computing its residual
#: (``fast_step_computation``) and without a refinement step that no residual asked for (``min_refinement_steps``
#: 0; IPOPT's default: at least one back solve and residual every time).  With the active set fixed the NLP is
#: smooth and MUMPS's solutions accurate (the answer is verified by simulation anyway): on the 30 s oscillator
#: record (``benchmarks/fesd_speed.py``) the same iterations (9 and 5) and estimate (|Δθ| ~1e-15), IPOPT's CPU
#: time of the two walks 0.55 + 0.38 → 0.41 + 0.25 s (measured solve by solve, same process).
FIT_OPTIONS = {"min_refinement_steps": 0, "fast_step_computation": "yes"}


@dataclass
class Record:
    """One record for :func:`fit_records`: the mechanism (its fixed values bound), the sample times ``t``
    (``t[0]`` the initial time), the data ``y`` (K + 1, m) of ``outputs`` and their ``noise`` (m,) or None."""

    system: object
    t: np.ndarray
    y: np.ndarray
    outputs: list
    noise: object = None


@dataclass
class FesdFit:
    """What :func:`fit` found (a declared result, like ``pyomo.contrib.solver``'s ``Results``).

    Attributes
    ----------
    ok : bool
        A walk's answer verified: its NLP converged, and the simulation of every record at its estimate
        has the model's event sequence, with outputs within ``verify_tol`` of the model's, and no element at
        its lower bound (``constrained``).  Of several such answers, the one with the smallest objective is
        reported.
    termination_condition : pyomo.contrib.solver.common.results.TerminationCondition
        Why the last IPOPT solve stopped (``convergenceCriteriaSatisfied``, ``iterationLimit``,
        ``locallyInfeasible``, ``error``, ...).
    solution_status : pyomo.contrib.solver.common.results.SolutionStatus
        ``optimal`` when ``ok``; ``feasible`` (a converged NLP whose answer did not verify), ``infeasible``
        or ``noSolution``.
    theta : dict
        The estimate, by parameter name.
    objective : float
        ½ Σ r² at the estimate (over every record).
    walks : int
        Walks: models built or restarted (1 when the first one verified); a walk stopped when an element
        reached its lower bound (:data:`PINNED`) counts.
    output_gap : float
        max |model output − simulated output| at the samples, at the estimate (over the records).
    event_gap : float
        max |model switch time − simulated event time| at the estimate (s).
    message : str
    solves : list of FesdSolve
        Per walk: the NLP's size, IPOPT's iterations and seconds (``stages``), ``stopped`` (the iteration at
        which an element reached its lower bound and IPOPT was stopped, or None), and with ``forward`` the
        forward solves.
    seconds : float
    model : pyomo ConcreteModel
        The model of the answer (its Vars hold it); with several records the first one's (all: ``models``).
    models : list of pyomo ConcreteModel
    constrained : bool
        An element of the answer is at its lower bound: an event pushes against a sample time.  Such an
        answer (the best with the simulation's events when no walk gave one without) is a minimum held by that
        bound, not the estimate: ``ok`` is False.
    elements : int
        Finite elements per sample interval of the answer's models (``elements`` × 2^refinements).
    refinements : int
        How often the elements were doubled because an answer's outputs missed ``verify_tol``.
    timing : dict
        CPU seconds (``time.process_time``) over the walks: ``build`` (the models), ``compile`` (the NLP), ``ipopt``, ``verify``
        (the simulations at the estimates), ``forward`` (the forward solves, with ``forward``).
    """

    ok: bool
    termination_condition: object = None
    solution_status: object = None
    theta: dict = field(default_factory=dict)
    objective: float = np.inf
    walks: int = 0
    output_gap: float = np.inf
    event_gap: float = np.inf
    message: str = ""
    solves: list = field(default_factory=list)
    seconds: float = 0.0
    model: object = None
    models: list = field(default_factory=list)
    constrained: bool = False
    elements: int = 0
    refinements: int = 0
    timing: dict = field(default_factory=dict)

    def as_dict(self):
        """The facts as plain JSON values (enums by name, no model)."""
        return {"ok": self.ok, "termination": getattr(self.termination_condition, "name", None),
                "solution_status": getattr(self.solution_status, "name", None), "theta": dict(self.theta),
                "objective": self.objective, "walks": self.walks, "output_gap": self.output_gap,
                "event_gap": self.event_gap, "message": self.message, "constrained": self.constrained,
                "elements": self.elements, "refinements": self.refinements, "seconds": self.seconds,
                "timing": dict(self.timing),
                "nlp": [{"variables": s.variables, "constraints": s.constraints, "iterations": s.iterations,
                         "linear_solver": s.linear_solver, "seconds": s.seconds} for s in self.solves]}


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


def fit(system, t, y, outputs, parameters, *, elements=4, stages=3, noise=None, walks=8, verify_tol=1e-5,
        options=None, forward=False, refine=REFINE):
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
    refine : int
        At most this many doublings of ``elements`` when an answer has the simulation's events but its outputs
        miss ``verify_tol`` (each a model build from the simulation at that answer, on top of ``walks``;
        0: such an answer is reported as not verified).
    options : dict, optional
        IPOPT options (over :data:`~pympc.identify.fesd_solve.DEFAULT_OPTIONS` and :data:`FIT_OPTIONS`).
    forward : bool
        Fix the active set of the forward MPEC solve at the start values (relaxation and polish) instead of
        the simulation's (default False: the simulation's, see the module notes).

    Returns
    -------
    FesdFit
    """
    return fit_records([Record(system, t, y, outputs, noise)], parameters, elements=elements, stages=stages,
                       walks=walks, verify_tol=verify_tol, options=options, forward=forward, refine=refine)


def fit_records(records, parameters, *, elements=4, stages=3, walks=8, verify_tol=1e-5, options=None,
                forward=False, bounds=None, refine=REFINE):
    """:func:`fit` of several records (:class:`Record`) sharing ``parameters``: one NLP, each record verified.

    The models of the records are sub-blocks of one Pyomo model whose parameters are tied by equality rows
    to the first record's; the objective is the sum of theirs.  The fitted parameters start at the first
    record's system's values (every record's system should hold the same values of them).  ``bounds``
    (``{name: (low, high)}``, optional) replaces the model's declared bounds of the fitted parameters.
    """
    from pyomo.common.gc_manager import PauseGC
    if isinstance(refine, bool) or not isinstance(refine, (int, np.integer)) or refine < 0:
        raise OptionError(f"refine must be an integer >= 0 (doublings of the elements per interval), got {refine!r}")
    refine = int(refine)
    with PauseGC():     # the walks hold their models anyway; the cyclic GC would rescan their objects often
        return _fit_records(records, parameters, elements, stages, walks, verify_tol, options, forward, bounds,
                            refine)


def _fit_records(records, parameters, elements, stages, walks, verify_tol, options, forward, bounds, refine):
    import pyomo.environ as pyo

    from ..dynamics import simulate
    records = [r if isinstance(r, Record) else Record(*r) for r in records]
    if not records:
        raise OptionError("records: give at least one record")
    systems = [_system(r.system) for r in records]
    names = [n.strip() for n in parameters.split(",")] if isinstance(parameters, str) else list(parameters)
    if not names:
        raise OptionError("parameters: name at least one parameter to fit")
    ts = [np.asarray(r.t, float) for r in records]
    starts = [_check_static(s, names, t) for s, t in zip(systems, ts)]    # its simulations: walk 1's warm starts
    from .experiment import friction_pairs
    ordered = [(k, st) for _, k, st in friction_pairs(systems[0]) if k in names and st in names]  # μ_s >= μ
    TC, SS = enums()
    t0 = _time.perf_counter()
    theta0 = {n: float(systems[0].parameters[n]) for n in names}
    current = dict(theta0)
    out = FesdFit(False, TC.unknown, SS.noSolution)
    rejected = None                 # the output gap of an answer with the simulation's events but not its outputs
    timing = dict.fromkeys(("build", "compile", "ipopt", "verify", "forward"), 0.0)
    opts = {**DEFAULT_OPTIONS, **FIT_OPTIONS, **(options or {})}
    best, models = None, None
    budget, walk = int(walks), 0          # a refinement adds a build to the budget
    while walk < budget:
        walk += 1
        clock = _time.process_time()
        if models and len(models[0].fesd["layout"]) == elements * (ts[0].size - 1):
            # the same rows (same records, elements, stages): restart the models from simulations at the new
            # θ instead of building them again (an earlier walk's answer they hold is kept for the end)
            if best is not None and best["models"] is models and "values" not in best:
                best["values"] = [_values(m) for m in models]
            for m, s in zip(models, systems):
                _restart(m, s.bind(current))
        else:
            models = [trajectory_model(s.bind(current), t, r.y, r.outputs, names, elements=elements, stages=stages,
                                       noise=r.noise, warm_start=_same_start(sim, s, current))
                      for s, t, r, sim in zip(systems, ts, records, starts)]
        _bounded(models, bounds)
        timing["build"] += _time.process_time() - clock
        out.walks, out.models, out.model = walk, models, models[0]
        if forward:
            clock = _time.process_time()
            failed = _forward(models, names, options, out)
            timing["forward"] += _time.process_time() - clock
            if failed:
                out.message = f"walk {walk}: {failed}"
                break
        start = dict(current)
        res, converged = _fit_nlp(models, names, opts, timing, ordered,
                                  stop=_pinned(models) if walk < budget and PINNED else None)
        out.solves.append(res)
        out.termination_condition = res.termination_condition
        m0 = models[0]
        out.theta = {n: float(pyo.value(m0.theta[n])) for n in names}
        out.objective = float(sum(pyo.value(m.objective) for m in models))
        if res.stopped is not None:     # an element held at its lower bound: step past it from the iterate's θ
            current = _step(out.theta, start, models[0], ordered)
            out.message = (f"walk {walk}: an element at its lower bound at {PINNED} consecutive iterates (IPOPT "
                           f"stopped at iteration {res.stopped}); rebuilt at {current}")
            continue
        if not converged:
            out.message = f"walk {walk}: the fit with the active set fixed did not converge ({res.message})"
            break
        clock = _time.process_time()
        checks = [_check_record(m, s.bind(out.theta), t, r.outputs, elements, verify_tol, simulate)
                  for m, s, t, r in zip(models, systems, ts, records)]
        timing["verify"] += _time.process_time() - clock
        failed = [c["error"] for c in checks if c.get("error")]
        if failed:
            out.message = f"walk {walk}: " + "; ".join(failed)
            break
        same = all(c["same"] for c in checks)
        collapsed = any(c["collapsed"] for c in checks)
        if same and not all(c["ok"] for c in checks):
            rejected = max(c["output_gap"] for c in checks)
            if not collapsed and out.refinements < refine:     # the elements too coarse: double them, from θ
                out.refinements += 1
                budget += 1
                out.message = (f"walk {walk}: outputs {rejected:.2g} off the simulation with {elements} elements "
                               f"per interval; rebuilt with {2 * elements} at {out.theta}")
                elements *= 2
                current = dict(out.theta)
                continue
        if same and all(c["ok"] for c in checks) and (best is None or (collapsed, out.objective)
                                                      < (best["constrained"], best["objective"])):
            best = {"theta": dict(out.theta), "objective": out.objective, "walk": walk, "models": models,
                    "elements": elements, "start": dict(start),
                    "output_gap": max(c["output_gap"] for c in checks),
                    "event_gap": max(c["event_gap"] for c in checks), "constrained": collapsed,
                    "termination_condition": res.termination_condition}
        if not same or collapsed:
            step = _step(out.theta, start, models[0], ordered)      # past the held event
            out.message = (f"walk {walk}: {'an element collapsed' if collapsed else 'the event sequence changed'}"
                           f" at the estimate; rebuilt at {step}")
            current = step
            continue
        break
    out.elements = elements
    if best is not None:
        for k in ("theta", "objective", "output_gap", "event_gap", "constrained", "termination_condition",
                  "elements"):
            setattr(out, k, best[k])
        if "values" in best:          # its models were restarted by a later walk: build them again, load its answer
            clock = _time.process_time()
            best["models"] = _rebuilt(best, systems, ts, records, names, stages, bounds)
            timing["build"] += _time.process_time() - clock
        out.models, out.model = best["models"], best["models"][0]
        out.ok = not out.constrained          # a minimum held by an element's bound is not the estimate
        gaps = (f"outputs within {out.output_gap:.2g}, events within {out.event_gap:.2g} s, {out.elements} elements "
                f"per interval" + (f" (doubled {out.refinements}× as the outputs missed verify_tol)"
                                   if out.refinements else ""))
        out.message = (f"verified by simulation at the estimate (walk {best['walk']} of {out.walks}): {gaps}"
                       if out.ok else
                       f"no estimate after {out.walks} walks: the best answer with the simulation's events (walk "
                       f"{best['walk']}; {gaps}) has an element at its lower bound, a minimum with an event held on "
                       "its side of a sample time, not the least-squares estimate (that lies past the sample time); "
                       "give more walks or start nearer the estimate")
    elif rejected is not None:
        out.message = (f"no verified estimate after {out.walks} walks: at the estimate the model has the simulation's "
                       f"events but its outputs differ from the simulation's by {rejected:.2g} (> verify_tol = "
                       f"{verify_tol:g}) with {out.elements} elements per interval (after {out.refinements} of "
                       f"refine = {refine} doublings); the elements do not resolve the motion: give more elements per "
                       "interval, a larger refine or a finer sample grid")
    elif not out.message:
        out.message = f"no verified estimate after {out.walks} walks"
    out.solution_status = solution_status(out.ok, bool(out.solves) and out.solves[-1].ok, bool(out.solves))
    out.timing = timing
    out.seconds = _time.perf_counter() - t0
    return out


def _step(at, start, m, ordered):
    """The next walk's θ: ``at + WALK_STEP·(at − start)``, clipped to the bounds of ``m.theta`` and with each
    (kinetic, static) pair of ``ordered`` held to static >= kinetic (the static one raised): the NLP holds both
    at its answer, but not the step past it, nor a stopped walk's iterate (a system with μ_s < μ is invalid)."""
    step = {}
    for n, x in at.items():
        lo, hi = m.theta[n].bounds
        x = x + WALK_STEP * (x - start[n])
        step[n] = min(max(x, -np.inf if lo is None else lo), np.inf if hi is None else hi)
    for k, st in ordered:
        step[st] = max(step[st], step[k])
    return step


def _bounded(models, bounds):
    """Replace the declared bounds of the fitted parameters by ``bounds`` (``{name: (low, high)}``)."""
    for m in models:
        for n, (lo, hi) in (bounds or {}).items():
            m.theta[n].setlb(None if lo is None or not np.isfinite(lo) else float(lo))
            m.theta[n].setub(None if hi is None or not np.isfinite(hi) else float(hi))


def _values(m):
    """The values of every Var of ``m`` (in the order of ``component_data_objects``)."""
    import pyomo.environ as pyo
    return [v.value for v in m.component_data_objects(pyo.Var)]


def _rebuilt(best, systems, ts, records, names, stages, bounds):
    """The models of the walk ``best`` (later restarted) built again at its start θ, its answer loaded."""
    import pyomo.environ as pyo
    models = [trajectory_model(s.bind(best["start"]), t, r.y, r.outputs, names, elements=best["elements"],
                               stages=stages, noise=r.noise) for s, t, r in zip(systems, ts, records)]
    _bounded(models, bounds)
    for m, values in zip(models, best["values"]):
        for v, x in zip(m.component_data_objects(pyo.Var), values):
            v.set_value(x, skip_validation=True)
    return models


def _forward(models, names, options, out):
    """The forward MPEC solve of every model at its start values (its answer's active set is then fixed)."""
    for k, m in enumerate(models):
        for n in names:
            m.theta[n].fix()
        res = solve(m, options=options)
        for n in names:
            m.theta[n].unfix()
        out.solves.append(res)
        if not res.ok:
            return f"the forward FESD solve of record {k} did not verify ({res.status}: {res.checks})"
    return None


def _pinned(models):
    """The ``stop`` of :func:`~pympc.identify.fesd_solve.ipopt` that ends a walk once an element of ``models`` has
    been collapsed (:data:`COLLAPSED`) at :data:`PINNED` consecutive IPOPT iterates."""
    hs = [m.h[e] for m in models for e in m.elements]

    def test_of(nlp):                   # a Presolved NLP (its x mapped to every column by full) or a CompiledNLP
        full = getattr(nlp, "full", None)
        index = {id(v): k for k, v in enumerate((nlp if full is None else nlp.nlp).variables)}
        cols = np.array([index[id(v)] for v in hs if id(v) in index], int)
        floor = COLLAPSED * np.array([v.lb for v in hs if id(v) in index], float)
        run = [0]

        def test(x, iteration):
            run[0] = run[0] + 1 if np.any((x if full is None else full(x))[cols] <= floor) else 0
            return run[0] >= PINNED
        return test
    return test_of


def _fit_nlp(models, names, opts, timing, ordered=(), stop=None):
    """Fix every model's active set, free θ (one θ: the records' are tied to the first's), solve by IPOPT;
    ``ordered``: (kinetic, static) pairs of fitted names held to static >= kinetic (the law's own condition,
    as shooting holds it); ``stop``: see :func:`~pympc.identify.fesd_solve.ipopt`."""
    import pyomo.environ as pyo

    from .fesd_solve import FesdSolve, ipopt
    undos = [fix_active_set(m) for m in models]
    for m in models:
        for n in names:
            m.theta[n].unfix()
    top = models[0]
    if len(models) > 1:
        top = pyo.ConcreteModel(name="FESD records")
        for k, m in enumerate(models):
            top.add_component(f"record{k}", m)
            m.objective.deactivate()
        top.tie = pyo.ConstraintList()
        for m in models[1:]:
            for n in names:
                top.tie.add(m.theta[n] == models[0].theta[n])
        top.objective = pyo.Objective(expr=sum(m.objective.expr for m in models))
    if ordered:
        top.static_at_least_kinetic = pyo.Constraint(range(len(ordered)), rule=lambda _, i: models[0].theta[
            ordered[i][1]] >= models[0].theta[ordered[i][0]])
    TC, SS = enums()
    res = FesdSolve(False, TC.unknown, SS.noSolution, linear_solver=opts["linear_solver"])
    clock = _time.process_time()
    try:
        converged, stage = ipopt(top, opts, res, "fit: ", drop_redundant=False, stop=stop)
    finally:
        if ordered:
            top.del_component(top.static_at_least_kinetic)
        if len(models) > 1:
            for k, m in enumerate(models):
                top.del_component(m)
                m.objective.activate()
        for undo in undos:
            undo()
    cpu = _time.process_time() - clock
    share = stage["compile_seconds"] / max(stage["compile_seconds"] + stage["seconds"], 1e-12)
    timing["compile"] += cpu * share                      # the CPU time split as the wall time was
    timing["ipopt"] += cpu * (1 - share)
    res.termination_condition = termination_condition(stage["status"])
    res.message, res.iterations, res.seconds = stage["message"], stage["iterations"] or 0, stage["seconds"]
    res.compile_seconds, res.variables, res.constraints = stage["compile_seconds"], stage["variables"], stage["constraints"]
    res.ok, res.stopped = converged, stage["stopped"]
    res.solution_status = SS.optimal if converged else SS.noSolution
    return res, converged


def _check_record(m, at, t, outputs, elements, tol, simulate):
    """Simulate one record at the estimate (``at``: its system with θ bound) and compare it with its model."""
    import pyomo.environ as pyo
    h = np.array([pyo.value(m.h[e]) for e in m.elements])
    h0 = np.array([el.h for el in m.fesd["layout"]])
    collapsed = bool(np.any(h <= COLLAPSED * m.h[0].lb / h0[0] * h0))
    tr = simulate(at, (t[0], t[-1]), t_eval=t, rtol=1e-12, atol=1e-14)
    if not tr.success:
        return {"error": f"the simulation at the estimate failed: {tr.message}"}
    try:
        same = _simulated_signature(tr, t, elements) == _signature(m)
    except OptionError:                                  # more events in an interval than elements
        same = False
    out = {"same": same, "collapsed": collapsed, "ok": False, "output_gap": np.inf, "event_gap": np.inf}
    if same:
        out.update(_verified(m, tr, t, outputs, tol))
    return out


def fit_experiments(experiments, par, options):
    """The FESD route of :func:`~pympc.identify.estimate`: ``(rows, results, fit)`` shaped like
    :func:`~pympc.identify.shooting.fit_starts` (one start), ``fit`` a :class:`FesdFit`.

    ``experiments`` (:class:`~pympc.identify.Experiment`), ``par`` their
    :class:`~pympc.identify.Parametrization` (its start values and bounds), ``options`` a
    :class:`~pympc.identify.Fesd`.  Each experiment's system is bound to ``par``'s fixed and start values.
    """
    from types import SimpleNamespace
    theta0 = dict(zip(par.names, (float(v) for v in par.theta0)))
    records = []
    for e in experiments:
        if abs(float(e.t[0]) - e.t_span[0]) > 1e-12 * max(1.0, abs(e.t_span[0])):
            raise OptionError(f"method='fesd': experiment {e.name!r} starts at t = {e.t[0]:g} but is simulated from "
                              f"{e.t_span[0]:g}; the FESD model needs a sample at the initial time (give the data a "
                              "row there, or use method='shooting')")
        system = e.system.bind({n: v for n, v in {**par.fixed, **theta0}.items() if n in e.parameters})
        records.append(Record(system, e.t, e.y, list(e.outputs), None if e.sigma is None else list(e.sigma)))
    bounds = {n: (float(lo), float(hi)) for n, lo, hi in zip(par.names, par.theta_lo, par.theta_hi)}
    clock = _time.perf_counter()
    res = fit_records(records, par.names, elements=options.elements, stages=options.stages, walks=options.walks,
                      verify_tol=options.verify_tol, forward=options.forward, bounds=bounds, refine=options.refine)
    theta = np.array([res.theta.get(n, np.nan) for n in par.names], dtype=float)
    z = par.Tinv @ theta
    cost = res.objective if res.ok else np.inf
    why = (f"FESD {getattr(res.termination_condition, 'name', '?')}/{getattr(res.solution_status, 'name', '?')}: "
           f"{res.message}")
    row = {"start": 0, **{f"{n}_start": v for n, v in zip(par.names, par.theta0)},
           **{f"{n}_end": v for n, v in zip(par.names, theta)}, "cost": cost,
           "status": "converged" if res.ok else "not converged", "message": why, "nfev": np.nan,
           "optimality": np.nan, "plateau_moves": 0, "simulations": len(experiments) * res.walks,
           "seconds": _time.perf_counter() - clock}
    point = SimpleNamespace(x=np.clip(z, par.lo, par.hi), cost=cost, optimality=np.nan, message=why)
    return [row], [point if res.ok else None], res


def _check_static(system, names, t):
    """A fitted static coefficient needs a breakaway in the record; without one it is only bounded below.
    Returns the simulation it ran (the warm start's, :func:`~pympc.identify.fesd_start._warm`: walk 1 builds on it),
    or None (no static coefficient fitted, no simulation)."""
    from ..dynamics import simulate
    from .experiment import friction_pairs
    statics = {s: (slot, k) for slot, k, s in friction_pairs(system) if s is not None and s in names}
    if not statics:
        return None
    tr = simulate(system, (float(t[0]), float(t[-1])), t_eval=t, rtol=1e-12, atol=1e-14)
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
    return tr


def _same_start(sim, system, at):
    """``sim`` (a start simulation of ``system``) when ``at`` gives every parameter it names the system's own
    value (``system.bind(at)`` simulates the same), else None."""
    values = system.parameters
    if sim is None or any(n not in values or float(values[n]) != float(x) for n, x in at.items()):
        return None
    return sim


def _verified(m, tr, t, outputs, tol):
    """The model's outputs and switch times against the simulation ``tr`` at its estimate."""
    import pyomo.environ as pyo
    idx = [int(np.argmin(np.abs(tr.t - x))) for x in t]
    sim = np.column_stack([_simulated(tr, o, idx) for o in outputs])
    model_y = np.array([[pyo.value(m.output[k, o]) if (k, o) in m.output else np.nan for o in outputs]
                        for k in range(t.size)])
    gap = float(np.nanmax(np.abs(model_y - sim)))
    ev = [e.time for e in tr.events if e.time > t[0]]
    sw = [x for x, _, _ in switch_times(m)]
    return {"ok": gap <= tol, "output_gap": gap, "event_gap": float(max([abs(a - b) for a, b in zip(sw, ev)] or [0.0]))}


def _simulated(tr, name, idx):
    from .experiment import trajectory_output
    return np.asarray(trajectory_output(tr, name))[idx]

