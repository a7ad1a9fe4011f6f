"""Solving the FESD model (:mod:`pympc.identify.fesd`): the relaxation, the active-set polish, the checks.

:func:`solve` compiles the model once (pympc's cyipopt bridge, :class:`~pympc.mpec.nlp.CompiledNLP`),
runs IPOPT at the relaxation σ (a homotopy when that fails), then fixes the active set the relaxed
answer shows (:func:`fix_active_set`) and solves again with exact complementarity; :func:`check`
measures rows, cross complementarity and pairs at the model's current point.
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["SIGMAS", "HOMOTOPY", "FesdSolve", "enums", "termination_condition", "solution_status", "DEFAULT_OPTIONS", "solve", "fix_active_set", "ipopt", "check",
           "switch_times", "at_samples"]

#: default relaxation σ (absolute: force × velocity).  From a simulation's warm start, which is complementary
#: already, one stage at the final σ is fastest (measured on the 2 s oscillator, 4 × 4 elements, 3 stages: 31
#: IPOPT iterations, against 218 for the homotopy 1e-4, 1e-7, 1e-10 which first leaves the complementary point)
SIGMAS = (1e-10,)

#: the homotopy :func:`solve` falls back to, from the warm start again, when a stage of ``sigmas`` fails
HOMOTOPY = (1e-4, 1e-7, 1e-10)

@dataclass
class FesdSolve:
    """How :func:`solve` went (a declared result, like ``pyomo.contrib.solver``'s ``Results``).

    Attributes
    ----------
    ok : bool
        Every homotopy stage converged and the final point verifies (:func:`check`).
    termination_condition : pyomo.contrib.solver.common.results.TerminationCondition
        Why the last IPOPT stage stopped (:func:`termination_condition` of its status).
    solution_status : pyomo.contrib.solver.common.results.SolutionStatus
        ``optimal`` when ``ok``; ``feasible`` when the rows and pairs hold but a stage did not converge;
        ``infeasible`` (a point that violates them) or ``noSolution`` (no stage ran).
    message : str
        IPOPT's message of the last stage.
    stages : list of dict
        Per σ: ``sigma``, ``status`` (IPOPT's code), ``message``, ``iterations``, ``seconds``.
    checks : dict
        :func:`check` of the final point.
    seconds : float
    variables, constraints : int
        Size of the NLP (free variables, rows).
    compile_seconds : float
        Building the NLP's derivatives (once for all stages).
    iterations : int
        IPOPT iterations over all stages.
    linear_solver : str
    stopped : int or None
        The IPOPT iteration at which the caller's test of the iterates ended the solve (a fit's walk whose
        elements cannot hold the estimate, :data:`~pympc.identify.fesd_fit.PINNED`), else None.
    """

    ok: bool
    termination_condition: object
    solution_status: object
    message: str = ""
    stages: list = field(default_factory=list)
    checks: dict = field(default_factory=dict)
    seconds: float = 0.0
    variables: int = 0
    constraints: int = 0
    compile_seconds: float = 0.0
    iterations: int = 0
    linear_solver: str = ""
    stopped: object = None

    @property
    def status(self):
        """The solution status's name (``"optimal"``, ``"feasible"``, ...; kept for messages)."""
        return self.solution_status.name


def enums():
    """Pyomo's ``(TerminationCondition, SolutionStatus)`` (imported when asked: ``import pympc.identify`` stays
    Pyomo-free)."""
    from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
    return TerminationCondition, SolutionStatus


def termination_condition(status):
    """Pyomo's ``TerminationCondition`` of an IPOPT return code (0, 1: converged; 2: locally infeasible;
    -1: iteration limit; -4: time limit; 5: stopped by the caller, interrupted; anything else: error)."""
    TC, _ = enums()
    return {0: TC.convergenceCriteriaSatisfied, 1: TC.convergenceCriteriaSatisfied, 2: TC.locallyInfeasible,
            -1: TC.iterationLimit, -4: TC.maxTimeLimit, 5: TC.interrupted}.get(int(status), TC.error)


def solution_status(ok, feasible, ran=True):
    """Pyomo's ``SolutionStatus``: optimal (verified), feasible (rows hold), infeasible, or noSolution."""
    _, SS = enums()
    if not ran:
        return SS.noSolution
    return SS.optimal if ok else SS.feasible if feasible else SS.infeasible


#: IPOPT options of :func:`solve` (warm started: the start is a simulation, complementary already).  The
#: barrier update is IPOPT's default, monotone, named so that it also holds through ``pympc.ipopt``'s Pyomo
#: solver, whose own default is adaptive: from a start at the optimum (parmest on the FESD model at
#: ``fesd_fit.fit``'s estimate, 3 s oscillator record) the adaptive update dropped μ to 1e-11 and IPOPT stopped
#: with an error in the step computation at some start points, monotone converged in 2 iterations at each.
DEFAULT_OPTIONS = {"tol": 1e-10, "constr_viol_tol": 1e-10, "acceptable_tol": 1e-8, "warm_start_init_point": "yes",
                   "warm_start_bound_push": 1e-12, "warm_start_mult_bound_push": 1e-12, "mu_init": 1e-9,
                   "mu_strategy": "monotone", "bound_push": 1e-12, "max_iter": 500, "linear_solver": "mumps"}


def solve(m, sigmas=SIGMAS, *, fallback=HOMOTOPY, polish=True, tol=1e-8, options=None, tee=False):
    """Solve the model by IPOPT (pympc's cyipopt bridge, :mod:`pympc.mpec.ipopt`) along the homotopy ``sigmas``.

    The NLP is compiled once (:class:`~pympc.mpec.nlp.CompiledNLP`); each σ stage re-reads the bound of the
    cross-complementarity rows and starts from the previous answer (the first from the model's values, a
    simulation).  The answer is loaded into the model.  Returns a :class:`FesdSolve`; ``ok`` only when every
    stage converged and :func:`check` finds the rows satisfied to ``tol`` and the cross complementarity at
    most the last σ (+ tol).  When a stage fails, the ``fallback`` schedule is run from the start point again
    (its stages are listed after the failed ones).  ``polish``: then fix the active set the relaxed answer
    shows and solve again with exact complementarity (:func:`fix_active_set`; listed as a stage with σ = 0).
    """
    import os
    import tempfile

    from ..mpec.nlp import CompiledNLP
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    t0 = _time.perf_counter()
    nlp = CompiledNLP(m)
    TC, SS = enums()
    out = FesdSolve(False, TC.unknown, SS.noSolution, compile_seconds=_time.perf_counter() - t0, variables=nlp.n,
                    constraints=nlp.m, linear_solver=opts["linear_solver"])
    start = nlp.start()
    fd, log = tempfile.mkstemp(suffix=".ipopt.log")
    os.close(fd)
    try:
        for schedule in (sigmas, fallback or ()):
            u, converged = _homotopy(m, nlp, start, schedule, opts, log, tee, out)
            if converged:
                break
    finally:
        os.unlink(log)
    nlp.load(u)
    if converged and polish:
        converged = _polish(m, opts, log_opts=(tee, out))
    out.message = out.stages[-1]["message"] if out.stages else "no stage"
    out.termination_condition = termination_condition(out.stages[-1]["status"]) if out.stages else TC.error
    out.iterations = sum(st["iterations"] or 0 for st in out.stages)
    out.seconds = _time.perf_counter() - t0
    out.checks = check(m)
    feasible = (out.checks["rows"] <= tol and out.checks["cross"] <= float(m.sigma.value) + tol
                and out.checks["pairs"] <= tol)
    out.ok = converged and feasible
    out.solution_status = solution_status(out.ok, feasible, bool(out.stages))
    return out


def fix_active_set(m, degenerate=1e-6, separation=1e-3):
    """Fix the active set the model's current (relaxed) point shows; returns a function that undoes it.

    Per element, slot and pair the side with the smaller sum over the element's stages is set to zero
    at every stage and, where :func:`_coupling` pairs it, at the boundary before the element (the cross
    complementarity at σ = 0): a first member by fixing the Var at 0, a second member by a row of
    ``m.polish_rows`` (a second member that is a Var, the wall split's λ⁻, is fixed too).  A static slot's
    reserve w± whose slip part is fixed at zero and that no row holds is fixed at zero (it is then in no
    equality, and w± = 0 is feasible whenever any w± ≥ 0 is).  The inequality ``c ≥ 0`` of a second member
    set to zero is deactivated (implied by the row; kept, it is active from the start and IPOPT's slack to it
    degenerate).  The cross rows are deactivated.  A pair whose two sums are both at most
    ``degenerate`` or within a factor ``1/separation`` of each other (both ~√σ: zero all along, e.g. λ ≡ 0
    while the other slot sticks) gets only its first member fixed at zero, without the boundary: fixing
    both would repeat what the rows already say (IPOPT: too few degrees of freedom).
    With the active set fixed the model is a smooth NLP (the switch boundaries pinned by equalities).
    """
    import pyomo.environ as pyo
    pairs = m.fesd["pairs"]
    sums = _pair_sums(m)
    fixed, relaxed = [], []
    zero_a, zero_c = set(), set()
    for (e, sn, key), st in pairs.items():
        sa, sc = sums[e, sn, key]
        if max(sa, sc) <= degenerate or min(sa, sc) > separation * max(sa, sc):
            relaxed.append((e, sn, key))       # not separated: its first member (a Var) is fixed, no boundary
        target = zero_a if sa <= sc or relaxed[-1:] == [(e, sn, key)] else zero_c
        stages = [(e, r) for r in range(len(st))]
        if relaxed[-1:] != [(e, sn, key)] and m.fesd["coupling"][e, sn, key][0 if target is zero_a else 1]:
            stages.append((e - 1, len(st) - 1))
        target.update((sn, key) + x for x in stages)
    for sn, key, e, r in zero_a:
        a = pairs[e, sn, key][r][0]
        if not a.fixed:
            fixed.append(a)
            a.fix(0.0, skip_validation=True)
    # a static slot's reserve w± whose slip part is fixed at zero, and whose pairs' other sides are not made
    # rows, is in no equality and in no objective: its Newton step is undetermined (IPOPT's first step moved
    # it by 1e3, measured on the 30 s oscillator), and w± = 0 is feasible whenever any w± >= 0 is (it only
    # loosens the inequalities it is in): fix it there
    for sign, slips, ws in (("+", m.slip_pos, getattr(m, "w_pos", {})), ("-", m.slip_neg, getattr(m, "w_neg", {}))):
        excess = sign + "excess"
        for (e, r, sn), w in ws.items():
            slip = slips[e, r, sn]
            if (slip.fixed and slip.value == 0 and not w.fixed and (sn, sign, e, r - 1) not in zero_c
                    and (sn, excess, e, r - 1) not in zero_c):
                fixed.append(w)
                w.fix(0.0, skip_validation=True)
    law, law_row = getattr(m, "law_rows", None), m.fesd["law_row"]   # the row c >= 0 of each pair member c
    implied, polish = [], []
    for sn, key, e, r in sorted(zero_c, key=str):
        c = pairs[e, sn, key][r][1]
        row = law[law_row[e, sn, key, r]] if law is not None else None
        if row is not None and row.active:      # c >= 0, implied by c = 0 and active at the start: degenerate
            row.deactivate()
            implied.append(row)
        if getattr(c, "is_variable_type", bool)():      # a Var (the wall split's λ⁻): fixed, not a row that pins
            if not c.fixed:                             # it at its bound (IPOPT's slack to it would be ~0)
                fixed.append(c)
                c.fix(0.0, skip_validation=True)
        else:
            polish.append(c == 0)
    # one Constraint indexed 1, 2, … (the rows and indices a ConstraintList would hold, without a Set.add per row)
    m.polish_rows = pyo.Constraint(pyo.RangeSet(1, len(polish)), rule=lambda _, i: polish[i - 1])
    m.cross.deactivate()

    def undo():
        m.del_component(m.polish_rows)
        m.cross.activate()
        for row in implied:
            row.activate()
        for a in fixed:
            a.unfix()
    return undo


def _pair_sums(m):
    """``{(e, slot, key): (Σ_r |a_r|, Σ_r |c_r|)}``: the members of every pair of ``m.fesd["pairs"]`` summed over
    the element's stages at the model's values.  The members are made as the model made them, by
    :func:`~pympc.identify.mpec_model.slot_law`, here on the stage values of one slot as arrays (E, s): the same
    operations in the same order as evaluating each member's Pyomo expression (``pyo.value``; the same numbers,
    ``tests/test_fesd_fit.py``), without a walk of ~7 000 small trees (the 30 s oscillator record)."""
    import pyomo.environ as pyo

    from .mpec_model import slot_law
    E, s = len(m.elements), len(m.stages)
    out = {}
    for j, sn in enumerate(m.slots):
        def at(var):
            xs = [var[e, r, sn] for e in range(E) for r in range(1, s + 1)]
            vals = [x.value for x in xs]
            if None in vals:                            # Pyomo's error for a Var without a value
                pyo.value(xs[vals.index(None)])
            return np.array(vals, float).reshape(E, s)
        mu, mu_s = (float(pyo.value(x)) for x in m.fesd["mus"][j])
        w = (at(m.w_pos), at(m.w_neg)) if m.fesd["static"][sn] else (None, None)
        for key, a, c in slot_law(at(m.lam_pos), at(m.lam_neg), at(m.F), at(m.slip_pos), at(m.slip_neg), mu, mu_s,
                                  *w):
            sa = sc = 0                                 # summed stage by stage, as sum() does
            for r in range(s):
                sa, sc = sa + np.abs(a[:, r]), sc + np.abs(c[:, r])
            out.update(zip(((e, sn, key) for e in range(E)), zip(sa.tolist(), sc.tolist())))
    return out


def ipopt(m, opts, out=None, label="", tee=False, drop_redundant=True, stop=None):
    """Solve the model as it stands (compiled afresh, the variables its linear rows pin alone fixed:
    :class:`~pympc.mpec.presolve.Presolved`) by IPOPT; load the answer when IPOPT converged.

    Returns ``(converged, stage)`` with ``stage`` the record appended to ``out.stages`` (when given):
    ``sigma`` (0), ``status`` (IPOPT's code), ``message``, ``iterations``, ``seconds`` (IPOPT),
    ``compile_seconds``, ``variables``, ``constraints`` (as IPOPT sees them, after the presolve), ``mult_g``
    (the rows' multipliers, by name: not kept in ``out``), ``stopped``.  ``drop_redundant``: see
    :class:`~pympc.mpec.nlp.CompiledNLP`.  ``stop`` (optional): ``stop(nlp)`` given the NLP IPOPT solves (a
    :class:`~pympc.mpec.presolve.Presolved`) returns the test ``(x, iteration) -> bool`` of its iterates
    (:func:`~pympc.mpec.ipopt.solve_nlp`); when it ends the solve, ``stopped`` is the iteration (else None) and
    that iterate is loaded.
    """
    import os
    import tempfile

    from ..mpec.ipopt import solve_nlp
    from ..mpec import presolve
    from ..mpec.nlp import CompiledNLP
    fd, log = tempfile.mkstemp(suffix=".ipopt.log")
    os.close(fd)
    try:
        t1 = _time.perf_counter()
        rows = m.fesd.setdefault("nlp_rows", {}) if isinstance(getattr(m, "fesd", None), dict) else None
        nlp = presolve.Presolved(CompiledNLP(m, drop_redundant=drop_redundant, rows=rows))
        t2 = _time.perf_counter()
        u, info = solve_nlp(nlp, nlp.start(), {**opts, "output_file": log, "file_print_level": 3}, tee,
                            stop=None if stop is None else stop(nlp))
        status = int(info["status"])
        stage = {"sigma": 0.0, "status": status, "message": label + info["status_msg"].decode(errors="replace"),
                 "iterations": _iterations(log), "seconds": _time.perf_counter() - t2, "compile_seconds": t2 - t1,
                 "variables": nlp.n, "constraints": nlp.m, "stopped": info.get("stopped")}
        if status in (0, 1) or stage["stopped"] is not None:
            nlp.load(u)
    finally:
        os.unlink(log)
    if out is not None:
        out.stages.append(stage)
    return status in (0, 1), stage


def _polish(m, opts, log_opts):
    """:func:`fix_active_set`, solve, undo; the model keeps the polished answer only when it converged."""
    import pyomo.environ as pyo
    keep = [(v, v.value) for v in m.component_data_objects(pyo.Var)]
    undo = fix_active_set(m)
    try:
        ok, _ = ipopt(m, opts, log_opts[1], "polish: ", log_opts[0])
    finally:
        undo()
    if not ok:
        for v, val in keep:
            v.set_value(val, skip_validation=True)
    return ok


def _homotopy(m, nlp, u, schedule, opts, log, tee, out):
    from ..mpec.ipopt import solve_nlp
    for sg in schedule:
        m.sigma.set_value(float(sg))
        nlp.refresh_bounds()
        t1 = _time.perf_counter()
        u_new, info = solve_nlp(nlp, u, {**opts, "output_file": log, "file_print_level": 3}, tee)
        status = int(info["status"])
        out.stages.append({"sigma": float(sg), "status": status,
                           "message": info["status_msg"].decode(errors="replace"),
                           "iterations": _iterations(log), "seconds": _time.perf_counter() - t1})
        if status not in (0, 1):
            return u, False
        u = u_new
    return u, True


def _iterations(log):
    try:
        with open(log) as fh:
            for line in fh:
                if line.startswith("Number of Iterations"):
                    return int(line.split(":")[1])
    except OSError:
        return None
    return None


def check(m):
    """The residuals of the model's current point: ``rows`` (max equality/inequality violation, relative to
    1), ``cross`` (max cross-complementarity product), ``pairs`` (max |min(a, c)| over stage pairs)."""
    import pyomo.environ as pyo
    rows, worst = 0.0, None
    for con in m.component_data_objects(pyo.Constraint, active=True):
        if con.parent_component() is m.cross:
            continue
        body = pyo.value(con.body)
        lo, up = pyo.value(con.lower), pyo.value(con.upper)
        viol = max(0.0, (lo - body) if lo is not None else 0.0, (body - up) if up is not None else 0.0)
        if viol > rows:
            rows, worst = viol, con.name
    cross = max([pyo.value(c.body) for c in m.cross.values()] or [0.0])
    pairs = max([abs(min(pyo.value(a), pyo.value(b))) for st in m.fesd["pairs"].values() for a, b in st] or [0.0])
    return {"rows": rows, "cross": cross, "pairs": pairs, "worst_row": worst}


def switch_times(m):
    """``[(time, slot, kind)]``: the element boundaries where the warm start's mode changes (the switches),
    at the model's current values; ``kind`` is the warm-start event's kind name."""
    import pyomo.environ as pyo
    layout, events = m.fesd["layout"], m.fesd["events"]
    out = []
    for e in range(1, len(layout)):
        if layout[e].segment != layout[e - 1].segment:
            ev = events[layout[e].segment - 1]
            out.append((pyo.value(m.time[e, 0]), ev.slot_name or ev.slot, ev.kind.name))
    return out


def at_samples(m):
    """``(t, q, v)``: the sample times and the model's current coordinates and velocities there, shape (K+1, n)."""
    import pyomo.environ as pyo
    layout, t = m.fesd["layout"], m.fesd["t"]
    first = {}
    for e, el in enumerate(layout):
        first.setdefault(el.interval, e)
    s, E = len(m.stages), len(layout)
    nodes = [(first[k], 0) if k < len(t) - 1 else (E - 1, s) for k in range(len(t))]
    q = np.array([[pyo.value(m.q[e, r, c]) for c in m.coords] for e, r in nodes])
    v = np.array([[pyo.value(m.v[e, r, c]) for c in m.coords] for e, r in nodes])
    return t, q, v
