"""A switch-detecting, high-order whole-trajectory model (FESD) in Pyomo.

:func:`trajectory_model` builds one Pyomo ``ConcreteModel`` of a whole record:
Radau IIA collocation with ``stages`` stages on finite elements whose lengths
``h[e]`` are variables (finite elements with switch detection, Nurkanović,
Sperl, Albrecht, Diehl; the CasADi tool nosnoc).  Each sample interval of the
record is split into ``elements`` elements (Σ h = interval length).  The
mechanics are those of the simulator and of the first-order route
(:class:`~pympc.mechanics.equations.Equations` evaluated on Pyomo objects; the
slot friction law is :func:`pympc.identify.mpec_model.slot_law`), nothing is written
twice.  Per stage (e, r), with the stage time ``time[e, r]``::

    q[e,r] = q[e,0] + h[e] Σ_j A_rj (v[e,j] + G(q[e,j])ᵀ eta[e,j])      (GGL stabilized, index 2)
    v[e,r] = v[e,0] + h[e] Σ_j A_rj a[e,j]
    M a[e,r] = Q(q, v, t) + G_Jᵀ nu + Σ_k (WN_k lam_k + WT_k F_k)
    g(q, t) = 0,  G v + g_t = 0,  per slot: gN = 0, WN v = 0,
    lam = lam_pos − lam_neg,  WT v = slip_pos − slip_neg,

and the pairs of ``slot_law`` (wall split; Coulomb's law on the slip parts).  The
element's start (node 0) is the previous element's last stage (Radau IIA is
stiffly accurate: c_s = 1).  **Cross complementarity**: for every element, slot
and pair 0 ≤ a ⊥ c ≥ 0, (Σ_B a)(Σ_B c) ≤ σ with B the element's stages and the
boundary before it, so no member of a pair may be positive anywhere in an element
while its partner is positive anywhere in it or at its start: the active set
(wall, slip direction, stick) is constant inside an element and a switch sits
on an element boundary, where the collocation restarts and keeps its order
(2s − 1 at the nodes, measured in ``tests/test_fesd.py``).  σ is the relaxation
(a mutable Param ``sigma``) driven to zero by :func:`solve` (in :mod:`pympc.identify.fesd_solve`, re-exported
here with the checks).

Static friction above the kinetic one (μ_s > μ) is the non-monotone part: the
closure of Coulomb's law lets a stuck slot break away anywhere between μ|λ| and
μ_s|λ|.  This model takes the stick phases of such a slot from the warm-start
simulation: in them the slip parts are fixed at zero (|F| ≤ μ_s|λ| remains),
and the boundary where a stick phase ends in a breakaway carries the breakaway
condition μ_s|λ| ± F = 0 (the sign of the new slip).  Slip phases, slip → stick,
reversals and wall switches are decided by the complementarity (cross
complementarity pins them).  A slot with μ_s = μ has no fixed phase at all.
When the parameters move so far that the event sequence changes, build the
model again from a simulation at the new values (:mod:`pympc.identify.fesd_fit`
does: its walks recover μ_s on the inclined slot from a start whose stick phases
are not the data's, ``tests/test_fesd_models.py``).  One model does not decide a
stick with μ_s > μ itself: which of the two laws holds depends on the past (stuck
or slipping), which a pointwise complementarity does not hold.

**Warm start**: every stage from a simulation at the system's values (sampled at the stage times),
the accelerations from its velocities through the collocation, and the joint forces ``nu`` by least
squares from the dynamics rows at those values (on the slider-crank's 0.5 s record, 11 samples × 4
elements: 172 → 44 IPOPT iterations of the forward solve; ``nu`` = 0 left the revolute joints'
rows violated by ~400 N at the start).

**Step equilibration**: the warm start's event times split each interval into
segments; the elements of one segment in one interval have equal lengths, so the
only free lengths are the switch boundaries, which the switch conditions pin.
An interval with more events than ``elements − 1`` cannot be resolved: OptionError.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import OptionError
from ..mechanics.equations import _zero
from ._fesd_terms import _grad, _linear
from .fesd_solve import (DEFAULT_OPTIONS, HOMOTOPY, SIGMAS, FesdSolve, at_samples, check, fix_active_set,
                         ipopt, solve, switch_times)
from .fesd_start import _mode_rows, _start, _warm

__all__ = ["radau_iia", "trajectory_model", "solve", "switch_times", "check", "FesdSolve", "SIGMAS", "HOMOTOPY",
           "at_samples", "fix_active_set", "ipopt", "DEFAULT_OPTIONS"]


def radau_iia(stages):
    """Radau IIA nodes ``c`` (c_s = 1) and Butcher matrix ``A`` of ``stages`` stages (order 2s − 1)."""
    s = int(stages)
    if s < 1:
        raise OptionError(f"stages must be an integer >= 1, got {stages!r}")
    from numpy.polynomial import legendre as L
    coef = np.zeros(s + 1)
    coef[s], coef[s - 1] = 1.0, -1.0                       # P_s − P_{s−1}: zeros in (−1, 1]
    c = np.sort((np.real(L.legroots(coef)) + 1.0) / 2.0)
    c[-1] = 1.0
    V = np.vander(c, s, increasing=True)                   # V[j, k] = c_j^k
    integ = np.array([[ci ** (k + 1) / (k + 1) for k in range(s)] for ci in c])
    return c, integ @ np.linalg.inv(V)


def _system(system):
    from ..mechanics import System, load_model
    if isinstance(system, (str, Path)):
        return load_model(system)
    if not isinstance(system, System):
        raise OptionError(f"system must be a System or a model file, got {type(system).__name__}")
    return system


def trajectory_model(system, t, y=None, outputs=(), fit=(), elements=3, stages=3, sigma=SIGMAS[0], *,
                     warm_start=None, noise=None, h_min=0.01, controls=(), equilibrate=True):
    """The FESD trajectory model of one record (see the module notes).

    Parameters
    ----------
    system : System or path
        The mechanism (its parameter values are the starting point of the fitted ones).
    t : array (K + 1,)
        Sample times, increasing; ``t[0]`` is the initial time (the system's initial state).
    y : array (K + 1, m), optional
        Measured outputs at ``t`` (None: no data, the objective is 0 — a forward solve).
    outputs : list of str
        Output names: coordinates ``body.x``, their velocities ``body.x_dot``, per slot
        ``slot.normal_force``, ``slot.friction_force`` (left limits, not at ``t[0]``), ``slot.slip_velocity``.
    fit : list of str
        Parameter names left free (``theta[name]`` unfixed; bounds: the model's declared ones).
    elements : int
        Finite elements per sample interval.
    stages : int
        Radau IIA stages (order 2s − 1).
    sigma : float
        Initial value of the relaxation ``sigma`` (a mutable Param; :func:`solve` drives it down).
    warm_start : Trajectory, optional
        A :func:`pympc.simulate` run at the system's values with samples at every stage time is made when
        None; a given one only provides the event times and modes (the stage values are re-simulated).
    noise : array (m,), optional
        Noise level per output (residuals are divided by it).
    h_min : float
        Lower bound of an element length, relative to its initial length.
    controls : list of str
        Parameters made **piecewise-constant inputs**: ``u[k, name]`` is the parameter's value on the
        sample interval [t_k, t_k+1] (k in the Set ``intervals``; a free Var, initialized at the system's
        value, bounded by the parameter's declared bounds).  They may enter the applied forces and the
        joints, not the masses or the friction coefficients (OptionError).  For optimal control: fix or
        add an objective over ``u`` (``notebooks/optimal_control.ipynb``); the warm start is a simulation
        at the system's (constant) values.
    equilibrate : bool
        Step equilibration (see the module notes).  False leaves every element length free inside its
        sample interval (Σ h = interval length), so a switch the warm start does not have can move to
        where the optimizer puts it; the lengths of elements without a switch are then not determined
        by the model alone (add a regularization, e.g. Σ (h − h₀)²).

    Returns
    -------
    pyomo.environ.ConcreteModel
        Sets ``elements``, ``stages`` (1..s), ``nodes`` (0..s), ``coords``, ``slots``, ``samples``,
        ``params``; Vars ``q[e, r, c]``, ``v[e, r, c]``, ``a``, ``lam_pos``, ``lam_neg``, ``F[e, r, slot]``
        (friction), ``slip_pos``, ``slip_neg``, ``h[e]``, ``t_start[e]`` (the element's start time), ``nu``,
        ``eta``, ``theta[name]`` (every parameter; fixed except ``fit``), with ``controls``: Set ``intervals``
        (0..K−1), ``controls`` and Var ``u[k, name]``; Expressions ``lam[e, r, slot]`` (signed normal force,
        ``lam_pos − lam_neg``), ``time[e, r]`` (``t_start[e] + c_r h[e]``; explicit, so no Vars and rows of
        their own in the NLP), ``output[k, name]`` (the outputs at sample k) and ``residual[k, name]`` (with data);
        ``objective`` (½ Σ residual²); Param ``sigma``; ``fesd`` (a dict: layout, warm start, pairs).
    """
    from pyomo.common.gc_manager import PauseGC
    with PauseGC():     # the cyclic GC, triggered by the many Pyomo objects, scans them all again and again
        return _trajectory_model(system, t, y, outputs, fit, elements, stages, sigma, warm_start, noise, h_min,
                                 controls, equilibrate)


def _trajectory_model(system, t, y, outputs, fit, elements, stages, sigma, warm_start, noise, h_min, controls,
                      equilibrate):
    import pyomo.environ as pyo
    from ..mechanics.equations import Equations
    from ..mpec._declared import Declared
    from ..mpec.nlp import _DECLARED
    from .mpec_model import slot_law

    system = _system(system)
    eq = Equations(system)
    eq.check_supported()
    t = np.asarray(t, float).ravel()
    if t.size < 2 or not np.all(np.diff(t) > 0) or not np.all(np.isfinite(t)):
        raise OptionError("t must hold at least two finite, strictly increasing sample times")
    elements, s = int(elements), int(stages)
    if elements < 1:
        raise OptionError(f"elements must be an integer >= 1, got {elements!r}")
    if s < 1:
        raise OptionError(f"stages must be an integer >= 1, got {stages!r}")
    outputs = [outputs] if isinstance(outputs, str) else list(outputs)
    fit = [n.strip() for n in fit.split(",") if n.strip()] if isinstance(fit, str) else list(fit)
    values = system.parameters
    for n in fit:
        if n not in values:
            raise OptionError(f"fit: {n!r} is not a parameter of {system.name} ({sorted(values)})")
    controls = [n.strip() for n in controls.split(",") if n.strip()] if isinstance(controls, str) else list(controls)
    for n in controls:
        if n not in values or system.parameter_definitions[n].derived or n in fit:
            raise OptionError(f"controls: {n!r} is not a (non-derived) parameter of {system.name} that is not "
                              f"fitted; give parameter names from {sorted(values)}")
    if y is not None:
        y = np.asarray(y, float).reshape(t.size, -1)
        if y.shape[1] != len(outputs):
            raise OptionError(f"y has {y.shape[1]} columns but {len(outputs)} outputs are named")
    c, A = radau_iia(s)
    span = (float(t[0]), float(t[-1]))
    ws = _warm(system, t, elements, c, warm_start)
    layout = ws["layout"]
    E = len(layout)

    m = pyo.ConcreteModel(name=f"FESD trajectory of {system.name}")
    names = list(system.parameter_definitions)
    free = set(fit)

    def pbounds(_, n):
        d = system.parameter_definitions[n]
        b = getattr(d, "bounds", None)
        if n not in free or b is None:
            return (None, None)
        return tuple(None if x is None or not math.isfinite(x) else float(x) for x in b)

    base = [n for n in names if not system.parameter_definitions[n].derived]
    m.params = pyo.Set(initialize=base, ordered=True)
    m.theta = pyo.Var(m.params, initialize={n: float(values[n]) for n in base}, bounds=pbounds)
    for n in base:
        if n not in free:
            m.theta[n].fix()
    thetas = tuple(m.theta.values())          # (arguments of the declared rows: a row's parameters)
    env = eq.parameters({n: m.theta[n] for n in base}, pyo)
    mass = eq.mass(env, pyo)
    envs = _control_envs(m, eq, system, base, controls, t.size - 1, pyo)
    coords, slots = list(eq.coordinate_names), [sl.name for sl in eq.slots]
    n, ns = eq.n, len(slots)
    m.elements = pyo.RangeSet(0, E - 1)
    m.stages = pyo.RangeSet(1, s)
    m.nodes = pyo.RangeSet(0, s)
    m.coords = pyo.Set(initialize=coords, ordered=True)
    m.slots = pyo.Set(initialize=slots, ordered=True)
    m.samples = pyo.RangeSet(0, t.size - 1)
    m.sigma = pyo.Param(initialize=float(sigma), mutable=True)
    # the Vars' start values and the element lengths' bounds are set from the warm start by _start below
    m.h = pyo.Var(m.elements)
    # an element's start time is a Var (its rows below); its stage times are explicit in it and the length (an
    # Expression: no Vars and rows of their own, a smaller NLP whose dynamics rows keep one form)
    m.t_start = pyo.Var(m.elements)
    m.time = pyo.Expression(m.elements, m.nodes,
                            rule=lambda _, e, r: m.t_start[e] + float(c[r - 1]) * m.h[e] if r else m.t_start[e])
    from .mpec_model import _initial_state
    q0, _ = _initial_state(eq)
    m.q = pyo.Var(m.elements, m.nodes, m.coords)
    m.v = pyo.Var(m.elements, m.nodes, m.coords)
    m.a = pyo.Var(m.elements, m.stages, m.coords)
    m.lam_pos = pyo.Var(m.elements, m.stages, m.slots, within=pyo.NonNegativeReals)
    m.lam_neg = pyo.Var(m.elements, m.stages, m.slots, within=pyo.NonNegativeReals)
    m.lam = pyo.Expression(m.elements, m.stages, m.slots,
                           rule=lambda _, e, r, sn: m.lam_pos[e, r, sn] - m.lam_neg[e, r, sn])
    m.F = pyo.Var(m.elements, m.stages, m.slots)
    m.slip_pos = pyo.Var(m.elements, m.stages, m.slots, within=pyo.NonNegativeReals)
    m.slip_neg = pyo.Var(m.elements, m.stages, m.slots, within=pyo.NonNegativeReals)
    mus = [(eq.value(sl.mu, env, pyo), eq.value(sl.mu_s if sl.mu_s is not None else sl.mu, env, pyo))
           for sl in eq.slots]
    _controls_outside(m, controls, list(mass) + [x for mu in mus for x in mu])
    static = [sl.mu_s is not None and a is not b and not (isinstance(a, float) and isinstance(b, float) and a == b)
              for sl, (a, b) in zip(eq.slots, mus)]
    stat = [sn for sn, st in zip(slots, static) if st]
    m.w_pos = pyo.Var(m.elements, m.stages, stat, within=pyo.NonNegativeReals)
    m.w_neg = pyo.Var(m.elements, m.stages, stat, within=pyo.NonNegativeReals)
    nrow = len(eq.joint_residuals(q0, span[0], eq.parameters()))
    m.joint_rows = pyo.RangeSet(0, nrow - 1) if nrow else pyo.Set(initialize=[])
    m.nu = pyo.Var(m.elements, m.stages, m.joint_rows)
    m.eta = pyo.Var(m.elements, m.stages, list(range(nrow + ns)))

    # each kind's rows gathered first, then made one Constraint indexed 1, 2, … (``m.clock_rows`` …, the order
    # and indices a ConstraintList would give them, in a third of its time per row: no Set.add per row)
    C = {name: _Rows() for name in ("clock", "collocation", "dynamics", "position", "velocity", "slot", "law",
                                    "continuity")}
    pairs = {}                                   # (e, slot, key) -> [(a, c) per stage]
    law_row = {}                                 # (e, slot, key, stage − 1) -> the index of the row c >= 0
    balance = {}                                 # (e, r) -> (M a − forces at nu = 0, joint Jacobian rows)
    held = {}                                    # id(env) -> the forces' terms of parameters alone (applied_forces)
    grads = {}                                   # the gradients of numbers only, by form (_grad)
    fam = _Families()                            # the families of the declared rows (pympc.mpec._declared)
    for e, el in enumerate(layout):
        C["clock"].add(m.t_start[e] == (float(t[el.interval]) if e == 0 or layout[e - 1].interval != el.interval
                                        else m.t_start[e - 1] + m.h[e - 1]))
        if e + 1 == E or layout[e + 1].interval != el.interval:
            C["clock"].add(m.t_start[e] + m.h[e] == float(t[el.interval + 1]))
        if e > 0:
            for cn in coords:
                for var, kind in ((m.q, "q"), (m.v, "v")):
                    now, before = var[e, 0, cn], var[e - 1, s, cn]
                    C["continuity"].put(now == before, fam["continuity", kind, cn], (now, before), ())
        drift = []
        # the element's Vars by stage and coordinate, looked up once (each is used in several rows)
        qe = [[m.q[e, r, cn] for cn in coords] for r in range(s + 1)]
        ve = [[m.v[e, r, cn] for cn in coords] for r in range(s + 1)]
        ae = [None] + [[m.a[e, r, cn] for cn in coords] for r in range(1, s + 1)]
        for r in range(1, s + 1):
            q, v = qe[r], ve[r]
            stage = tuple(q) + tuple(v) + thetas            # (the arguments the stage's rows share)
            tt = m.time[e, r]
            clock = (m.t_start[e], m.h[e])                  # (the variables of tt)
            envk = envs[el.interval]
            rhs = list(eq.applied_forces(q, v, tt, envk, pyo, held.setdefault(id(envk), {})))
            G = []
            nus = [m.nu[e, r, row] for row in range(nrow)]
            for row, g in enumerate(eq.joint_residuals(q, tt, envk, pyo)):
                d = _grad(g, q + [tt], grads)
                G.append(d[:n])
                C["position"].put(g == 0, fam["joint position", r, row], clock, stage, (tt,))
                C["velocity"].put(sum(d[i] * v[i] for i in range(n) if not _zero(d[i])) + d[n] == 0,
                                  fam["joint velocity", r, row], clock, stage, (tt,))
                rhs = [rhs[i] + d[i] * nus[row] if not _zero(d[i]) else rhs[i] for i in range(n)]
            forces, named = clock + tuple(nus), (tt,)    # (the dynamics rows' arguments, named expressions)
            for j, (gN, sT) in enumerate(eq.slot_coordinates(q, envk, pyo)):
                sn = slots[j]
                WN, WT = _grad(gN, q, grads), _grad(sT, q, grads)
                G.append(WN)
                wp, wm = (m.w_pos[e, r, sn], m.w_neg[e, r, sn]) if static[j] else (None, None)
                own = (m.lam_pos[e, r, sn], m.lam_neg[e, r, sn], m.F[e, r, sn], m.slip_pos[e, r, sn],
                       m.slip_neg[e, r, sn]) + ((wp, wm) if static[j] else ())
                lam = m.lam[e, r, sn]
                forces += own[:3]
                named += (lam,)
                C["position"].put(gN == 0, fam["slot position", r, j], (), stage)
                C["velocity"].put(sum(WN[i] * v[i] for i in range(n) if not _zero(WN[i])) == 0,
                                  fam["slot velocity", r, j], (), stage)
                C["slot"].put(sum(WT[i] * v[i] for i in range(n) if not _zero(WT[i])) == own[3] - own[4],
                              fam["slot", r, j], own[3:5], stage)
                rhs = [rhs[i] + (WN[i] * lam if not _zero(WN[i]) else 0)
                       + (WT[i] * own[2] if not _zero(WT[i]) else 0) for i in range(n)]
                mu, mu_s = mus[j]
                for k, (key, x, cc) in enumerate(slot_law(*own[:5], mu, mu_s, wp, wm)):
                    C["law"].put(cc >= 0, fam["law", sn, k, key], own, thetas)
                    law_row[e, sn, key, r - 1] = len(C["law"])          # its index in m.law_rows
                    pairs.setdefault((e, sn, key), []).append((x, cc))
            drift.append(G)
            if nrow:                             # (only joint forces nu are started from it)
                balance[e, r] = ([mass[i] * ae[r][i] - rhs[i] for i in range(n)], G[:nrow])
            for i in range(n):
                C["dynamics"].put(mass[i] * ae[r][i] == rhs[i], fam["dynamics", r, i], (ae[r][i],) + forces, stage,
                                  named)
        h, Af = m.h[e], A.tolist()
        eta = [None] + [[m.eta[e, j, row] for row in range(len(drift[j - 1]))] for j in range(1, s + 1)]
        # a stage's rate of q (v + Gᵀ eta), built once and shared by the element's s collocation rows
        rate = [None] + [[ve[j][i] + sum(G[i] * eta[j][row] for row, G in enumerate(drift[j - 1]) if not _zero(G[i]))
                          for i in range(n)] for j in range(1, s + 1)]
        # each row declared with its family and arguments (pympc.mpec._declared): the same code at every element
        stage_vars = tuple(x for j in range(1, s + 1) for x in qe[j] + eta[j]) + thetas   # (q[e, r, i] among them)
        own_q = [(qe[0][i], h) + tuple(ve[j][i] for j in range(1, s + 1)) for i in range(n)]
        own_v = [(ve[0][i], h) + tuple(ae[j][i] for j in range(1, s + 1)) for i in range(n)]
        for r in range(1, s + 1):
            for i in range(n):
                dq = _linear(Af[r - 1], [rate[j][i] for j in range(1, s + 1)])
                C["collocation"].put(qe[r][i] == qe[0][i] + h * dq, fam["collocation q", r, i], own_q[i], stage_vars)
                dv = _linear(Af[r - 1], [ae[j][i] for j in range(1, s + 1)])
                C["collocation"].put(ve[r][i] == ve[0][i] + h * dv, fam["collocation v", r, i],
                                     (ve[r][i],) + own_v[i], ())
    declared = Declared()
    for name, rows in C.items():
        m.add_component(f"{name}_rows", pyo.Constraint(pyo.RangeSet(1, len(rows)),
                                                       rule=lambda _, i, rows=rows: rows[i - 1]))
        declared.add(rows.declared)
    m.fesd = {"t": t, "elements": elements, "outputs": outputs, "fit": fit, "controls": controls, "c": c, "A": A,
              "pairs": pairs, "law_row": law_row,
              "static": dict(zip(slots, static)), "mus": mus, "balance": balance, "sigma": float(sigma),
              "h_min": h_min, "equilibrate": equilibrate, "fixed_stick": set(),
              "nlp_rows": {_DECLARED: declared}}     # the rows kept between compiles (CompiledNLP(rows=...))
    _start(m, system, eq, ws)
    _mode_rows(m, ws)
    _outputs(m, eq, t, y, outputs, noise, layout, s, coords, slots)
    return m


class _Rows(list):
    """A list of row expressions with a ConstraintList's ``add`` (the rows of one kind, made one Constraint
    when all are known); ``put`` adds a row declared with its family (one object per family: :class:`_Families`),
    arguments and named expressions (:class:`pympc.mpec._declared.Declared`; family -1: a row not declared)."""

    def __init__(self):
        super().__init__()
        self.declared = []

    def put(self, expr, family, own, shared, named=()):
        self.append(expr)
        self.declared.append((expr, family, own, shared, named))

    def add(self, expr):
        self.put(expr, -1, (), ())


class _Families(dict):
    """``fam[key]``: the number of a family (numbered as first met)."""

    def __missing__(self, key):
        k = self[key] = len(self)
        return k


def _restart(m, system, warm_start=None):
    """Start ``m`` (a :func:`trajectory_model` of this mechanism, without rows added to it) again from a
    simulation of ``system`` (other parameter values, the same sample times, elements and stages): the model
    :func:`trajectory_model` would build there, without building its rows again (only the stick phases, the
    breakaway, equilibration and cross-complementarity rows, which the warm start's modes decide)."""
    from pyomo.common.gc_manager import PauseGC
    from ..mechanics.equations import Equations
    system = _system(system)
    with PauseGC():
        ws = _warm(system, m.fesd["t"], m.fesd["elements"], m.fesd["c"], warm_start)
        _start(m, system, Equations(system), ws)
        _mode_rows(m, ws)
    return m


def _control_envs(m, eq, system, base, controls, K, pyo):
    """Per sample interval, the parameter environment: ``u[k, name]`` for the controls, ``theta`` otherwise."""
    if not controls:
        env = eq.parameters({n: m.theta[n] for n in base}, pyo)
        return [env] * K

    def bounds(_, k, n):
        b = getattr(system.parameter_definitions[n], "bounds", None)
        return (None, None) if b is None else tuple(None if x is None or not math.isfinite(x) else float(x) for x in b)
    m.intervals = pyo.RangeSet(0, K - 1)
    m.controls = pyo.Set(initialize=controls, ordered=True)
    m.u = pyo.Var(m.intervals, m.controls, initialize=lambda _, k, n: float(system.parameters[n]), bounds=bounds)
    return [eq.parameters({n: (m.u[k, n] if n in controls else m.theta[n]) for n in base}, pyo) for k in range(K)]


def _controls_outside(m, controls, exprs):
    """OptionError when a control parameter enters the masses or the friction coefficients."""
    if not controls:
        return
    from pyomo.core.expr.visitor import identify_variables
    banned = {id(m.theta[n]) for n in controls}
    for x in exprs:
        if not isinstance(x, (int, float)) and any(id(v) in banned for v in identify_variables(x)):
            raise OptionError(f"controls {controls}: a control enters the mass matrix or a friction coefficient; "
                              f"only forces and joints may depend on a piecewise-constant input")


def _outputs(m, eq, t, y, outputs, noise, layout, s, coords, slots):
    import pyomo.environ as pyo
    first = {}
    for e, el in enumerate(layout):
        first.setdefault(el.interval, e)
    E = len(layout)

    def node(k):                           # (element, node) of sample k; the last sample is the last stage
        return (first[k], 0) if k < len(t) - 1 else (E - 1, s)

    def left(k):                           # the stage that ends at sample k (k >= 1)
        return (first[k] - 1, s) if k < len(t) - 1 else (E - 1, s)

    rules, skip = {}, set()
    for o in outputs:
        base, _, q = o.rpartition(".")
        if o in coords:
            rules[o] = lambda k, o=o: m.q[node(k) + (o,)]
        elif o.endswith("_dot") and o[:-4] in coords:
            rules[o] = lambda k, o=o: m.v[node(k) + (o[:-4],)]
        elif base in slots and q in ("normal_force", "friction_force", "slip_velocity"):
            var = {"normal_force": m.lam, "friction_force": m.F}.get(q)
            if var is None:
                rules[o] = lambda k, b=base: (m.slip_pos[left(k) + (b,)] - m.slip_neg[left(k) + (b,)] if k else
                                              _slip0(m, eq, b))
            else:
                rules[o] = lambda k, var=var, b=base: var[left(k) + (b,)]
                skip.add((0, o))
        else:
            raise OptionError(f"output {o!r} is not supported by the FESD model (coordinates {coords}, their "
                              f"velocities '<coordinate>_dot', and per slot normal_force, friction_force, "
                              f"slip_velocity); use the shooting route")
    idx = [(k, o) for k in range(len(t)) for o in outputs if (k, o) not in skip]
    m.output = pyo.Expression(idx, rule=lambda _, k, o: rules[o](k))
    if y is None:
        m.objective = pyo.Objective(expr=0.0 * m.h[0])
        return
    noise = np.ones(len(outputs)) if noise is None else np.asarray(noise, float).ravel()
    col = {o: i for i, o in enumerate(outputs)}
    m.residual = pyo.Expression(idx, rule=lambda _, k, o: (m.output[k, o] - float(y[k, col[o]])) / float(noise[col[o]]))
    m.objective = pyo.Objective(expr=0.5 * sum(m.residual[i] ** 2 for i in idx))


def _slip0(m, eq, slot):
    import pyomo.environ as pyo
    q = [m.q[0, 0, c] for c in m.coords]
    v = [m.v[0, 0, c] for c in m.coords]
    env = eq.parameters({n: m.theta[n] for n in m.params}, pyo)
    j = [sl.name for sl in eq.slots].index(slot)
    _, sT = eq.slot_coordinates(q, env, pyo)[j]
    WT = _grad(sT, q)
    return sum(WT[i] * v[i] for i in range(len(q)) if not _zero(WT[i]))

