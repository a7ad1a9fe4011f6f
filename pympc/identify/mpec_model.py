"""The whole trajectory as one Pyomo MPEC: time stepping with the slot complementarity at every step.

:func:`trajectory_model` builds, for one or more experiments, a Pyomo
``ConcreteModel`` whose variables are the states and the mean joint and slot forces of every step
and the fitted parameters, and whose objective is the weighted least squares
of the measured outputs.  The mechanics come from
:class:`~pympc.mechanics.equations.Equations` (the same element definitions
as the numeric assembly, emitted as Pyomo expressions with ``ops =
pyomo.environ``; the Jacobians are their symbolic derivatives,
``pyomo.core.expr.calculus.derivatives.differentiate``).

Discretization (first order, Moreau–Jean type, implicit in velocity), step h,
t_k = t0 + k h::

    M (v_{k+1} − v_k) / h = Q(q_k, v_k, t_k) + J(q_{k+1})ᵀ ν + Σ_j WN_j(q_{k+1})ᵀ Λ_j + WT_j(q_{k+1})ᵀ P_j
    (q_{k+1} − q_k) / h = v_{k+1}
    g(q_{k+1}, t_{k+1}) = 0,  gN_j(q_{k+1}) = 0                     (position level)

ν, Λ, P are the mean forces over the step (impulse / h), so that every row and
every complementarity product has the same size whatever the step.  The joints and the slot gaps
are imposed at position level at k+1: with q_{k+1} = q_k + h v_{k+1} that is
a condition on v_{k+1}, and positions never drift off the constraints (a
velocity-level row, J v_{k+1} = 0, would let g drift by O(h) per unit time).
Per slot and step: the wall split Λ = Λ⁺ − Λ⁻, 0 ≤ Λ⁺ ⊥ Λ⁻ ≥ 0,
|Λ| = Λ⁺ + Λ⁻; the slip WT v_{k+1} = s⁺ − s⁻ and, for μ_s = μ,
0 ≤ s± ⊥ μ|Λ| ± P ≥ 0.  For μ_s > μ, with w± ≥ 0:
0 ≤ s⁺ ⊥ (μ_s − μ)|Λ| − w⁺ ≥ 0 and 0 ≤ s⁺ ⊥ μ_s|Λ| + P − w⁺ ≥ 0
(mirrored for s⁻): slipping forward (s⁺ > 0) forces w⁺ = (μ_s − μ)|Λ| and
P = −μ|Λ|; sticking (s± = 0) leaves |P| ≤ μ_s|Λ|.  That is the *closure* of
Coulomb's law with μ_s > μ: it also lets a stuck slot break away when
μ|Λ| < |P| < μ_s|Λ|.  The event-driven model's law — stuck until μ_s|Λ| is reached — is the
*breakaway law* of the time stepping (:mod:`pympc.identify.mpec_stepping`): in the
step where a stuck slot breaks away, the virtual stick step's variables
(q', v', ν', Λ'±, P', ...; block ``breakaway_<k>``, the same step rows with
that slot held stuck) and, instead of the slot's friction pairs,
P_k = θ P' + (1 − θ) σ μ|Λ_k| with θ = r_{k−1}/(r_{k−1} − r'),
r = μ_s|Λ| − σP (σ the sign of the stick force, the slip's sign fixed).
Which steps these are depends on the parameters: :func:`~pympc.identify.mpec_branches.configure` sets
them from a time stepping (a warm start from
:func:`~pympc.identify.mpec_stepping.time_stepping` does it), and
:func:`~pympc.identify.mpec_route.walk_modes` re-runs the time stepping
when θ leaves [0, 1].  A model built without them has the closure law.

What this does to accuracy (measured, ``tests/test_mpec_trajectory.py`` and
``benchmarks/identification.py`` part 5, noise-free 2 s oscillator record at
20 Hz, ``mass.x``; shooting gives μ = 0.3, μ_s = 0.4):

* The discretization is first order.  The time stepping run as a simulation
  is off :func:`pympc.simulate` by max |Δv| = 8.2e-2, 4.1e-2, 2.1e-2, 1.0e-2
  at h = 0.04, 0.02, 0.01, 0.005 s (μ_s = 0.4; with μ_s = μ: 6.4e-2, 3.3e-2,
  1.7e-2, 8.4e-3), and its trajectory satisfies this model's rows and pairs.
* The MPEC estimate, by the walk (the minimum of the least squares over the
  time stepping), is off the shooting estimate by, at h = 0.04, 0.02, 0.01 s:
  μ alone, μ_s = 0.4 held: 1.3e-3, 5.7e-4, 2.6e-4; μ alone, μ_s = μ: 1.4e-4,
  3.0e-5, 1.8e-5; μ and μ_s together: μ 1.7e-4, 4.9e-5, 5.5e-6 and μ_s 1.9e-2,
  9.0e-3, 4.7e-3 (μ_s = 0.3806, 0.3910, 0.3953; at h = 0.005 s, a separate run:
  μ 4.7e-6, μ_s 2.3e-3).  First order in every case (μ_s: order 1.11, 0.94, 1.00).
  Before the breakaway law (stick-first, breakaway at a whole step) μ_s had
  no gradient, and μ and μ_s together did not converge (μ off by 8e-4, 1.4e-3,
  2.7e-2).
* The relaxed MPEC (continuation + active-set polish, :mod:`pympc.mpec.ipopt`)
  does not find that minimum: its polish fixes the branches of the pairs from a
  relaxed point and stops where a pair with both sides zero blocks the descent
  (μ = 0.30155 at h = 0.01 s with μ_s = μ, not a local minimum of the least
  squares over the time stepping), and with the closure law it may break a
  slot away early, so it bounds μ_s only from below (the largest stick ratio
  |P|/|Λ| of its solution).  It is the fallback of a walk that does not verify.
  ``static_penalty`` adds ``static_penalty × Σ(y/σ)² × (μ_s − μ)`` to its
  objective to lean towards the smallest μ_s (0 in the walk, which needs none).

Data times need not be on the grid: a prediction is the linear interpolation
between the two steps around it (exact on the grid).  Outputs: coordinates and
velocities of bodies (``body.x``, ``body.x_dot``; the velocity at t_k is
v_k, the backward difference), and per slot ``normal_force``,
``friction_force`` (the mean force of the step ending at t_k) and
``slip_velocity``; the energies are refused (OptionError).
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.calculus.derivatives import differentiate
from pyomo.mpec import Complementarity

from ..errors import OptionError
from ..mechanics.equations import Equations
from ..mechanics.system import RigidBody
from .mpec_branches import _add_pair, warm

__all__ = ["trajectory_model", "experiments_model", "add_parameters", "add_experiment", "finish", "slot_law", "residuals",
           "STATIC_PENALTY"]

STATIC_PENALTY = 1e-4
"""Default weight of μ_s − μ in the objective, relative to Σ (y/σ)² (see the module notes)."""

_SLOT_OUTPUTS = ("normal_force", "friction_force", "slip_velocity")


def _grad(expr, wrt):
    """Symbolic ∂expr/∂wrt (a list); zeros for a constant."""
    if not hasattr(expr, "is_expression_type") or (not expr.is_expression_type() and not expr.is_variable_type()):
        return [0.0] * len(wrt)
    return differentiate(expr, wrt_list=wrt, mode=differentiate.Modes.reverse_symbolic)


def _friction_pairs(system):
    """(slot, kinetic parameter, static parameter) of each slot whose coefficients are single parameters."""
    out = []
    for sl in system.slots:
        d = system.definition(sl.name)
        name = lambda v: v.text.strip() if hasattr(v, "parameters") and v.text.strip() in v.parameters else None  # noqa
        out.append((sl.name, name(d.mu), name(d.mu_s)))
    return out


def trajectory_model(system, t, data, outputs, *, fit, step, t0=None, sigma=None, warm_start=None,
                     static_penalty=STATIC_PENALTY):
    """A Pyomo MPEC of one experiment: the whole trajectory, the fitted parameters, the least squares.

    Parameters
    ----------
    system : System
        The mechanism with every parameter that is not fitted at its value.
    t : array, shape (N,)
        Data times (increasing, inside ``[t0, t0 + K h]``).
    data : array, shape (N, m)
    outputs : list of str
        Output names (see the module notes).
    fit : dict, list of str or str
        ``{name: (lower, upper)}`` of the fitted parameters (None: unbounded), or their names
        (``"mu,mu_s"``; bounds: the model's declared ones); they start at the system's values.  When both coefficients of a slot are fitted the model has ``mu`` and
        ``excess[mu_s] = mu_s − mu ≥ 0``.
    step : float
        Time step h; the grid is t0, t0 + h', ..., t[-1] with h' ≤ h the largest step that divides the span.
    t0 : float, optional
        Initial time (default: the system's ``t_start`` or 0); the initial state is the system's.
    sigma : array (m,), optional
        Noise level per output (weights 1/σ); default 1.
    warm_start : dict, optional
        Arrays on the grid to start from: ``q``, ``v`` (K+1, n), ``normal_force``, ``friction_force`` (K+1, slots).
    static_penalty : float
        See the module notes (0 switches it off).

    Returns
    -------
    pyomo.environ.ConcreteModel
        ``model.theta[name]`` are the user's parameters (variables or expressions),
        ``model.experiment[0]`` the block with ``q``, ``v``, ``lp``, ``lm`` (wall split), ``P``, ... and
        ``model.objective``.  Add constraints or priors before solving.
    """
    m = pyo.ConcreteModel(name=f"trajectory MPEC of {system.name}")
    add_parameters(m, system, fit)
    m.experiment = pyo.Block([0])
    add_experiment(m, m.experiment[0], system, t, data, outputs, step=step, t0=t0, sigma=sigma, warm_start=warm_start)
    finish(m, static_penalty)
    return m


def experiments_model(parts, system, fit, static_penalty=None):
    """One ConcreteModel with a block per experiment, the parameters shared.

    Parameters
    ----------
    parts : list of dict
        Keyword arguments of :func:`~pympc.identify.mpec_model.add_experiment` per experiment
        (``system``, ``t``, ``data``, ``outputs``, ``step``, ``t0``, ``sigma``, ``warm_start``).
    system : System
        Gives the start values of the fitted parameters.
    fit : dict
        ``{name: (lower, upper)}``.
    static_penalty : float, optional
    """
    m = pyo.ConcreteModel(name="pympc identification MPEC")
    add_parameters(m, system, fit)
    m.experiment = pyo.Block(range(len(parts)))
    for k, part in enumerate(parts):
        part = dict(part)
        add_experiment(m, m.experiment[k], part.pop("system"), part.pop("t"), part.pop("data"), part.pop("outputs"),
                       **part)
    finish(m, STATIC_PENALTY if static_penalty is None else static_penalty)
    return m


def add_parameters(m, system, fit):
    values = system.parameters
    if isinstance(fit, str):
        fit = [n.strip() for n in fit.split(",") if n.strip()]
    if not isinstance(fit, dict):     # names only: the model's declared bounds, else unbounded
        fit = {n: system.parameter_definitions[n].bounds if n in system.parameter_definitions else None for n in fit}
    names = list(fit)
    for n in names:
        if n not in values:
            raise OptionError(f"fit: {n!r} is not a parameter of {system.name} ({sorted(values)})")
    pairs = [(k, s) for _, k, s in _friction_pairs(system) if k in names and s in names and k != s]
    statics = {s: k for k, s in pairs}
    free = [n for n in names if n not in statics]

    def bounds(n):
        lo, hi = fit[n] if fit[n] is not None else (None, None)
        return (None if lo is None or not math.isfinite(lo) else float(lo),
                None if hi is None or not math.isfinite(hi) else float(hi))

    m.fitted = pyo.Var(free, initialize={n: float(values[n]) for n in free}, bounds=lambda _, n: bounds(n))
    m.excess = pyo.Var(list(statics), within=pyo.NonNegativeReals,
                       initialize={s: max(0.0, float(values[s] - values[k])) for s, k in statics.items()})
    for s, k in statics.items():    # μ_s = μ + Δ inside the user's box for μ_s
        lo, hi = bounds(s)
        if lo is not None:
            m.add_component(f"{s}_lower", pyo.Constraint(expr=m.fitted[k] + m.excess[s] >= lo))
        if hi is not None:
            m.add_component(f"{s}_upper", pyo.Constraint(expr=m.fitted[k] + m.excess[s] <= hi))
    m.theta = {n: m.fitted[n] for n in free}
    m.theta.update({s: m.fitted[k] + m.excess[s] for s, k in statics.items()})
    m.pairs = pairs


def finish(m, static_penalty=STATIC_PENALTY):
    """The objective: ½ Σ r² over every experiment block, plus ``static_penalty`` × scale × Σ (μ_s − μ)."""
    blocks = list(m.experiment.values())
    fit = sum(0.5 * sum(r ** 2 for r in b.residual.values()) for b in blocks)
    scale = sum(b.data_scale for b in blocks)
    m.objective = pyo.Objective(expr=fit + static_penalty * scale * sum(m.excess[s] for s in m.excess))


def add_experiment(m, b, system, t, data, outputs, *, step, t0=None, sigma=None, warm_start=None):
    """Build the time-stepping equations and residuals of one experiment on block ``b`` of model ``m``."""
    eq = Equations(system)
    eq.check_supported()
    t = np.asarray(t, dtype=float)
    data = np.asarray(data, dtype=float).reshape(t.size, -1)
    t0 = float(system.simulation.get("t_start", 0.0)) if t0 is None else float(t0)
    if not step > 0:
        raise OptionError(f"step must be positive, got {step!r}")
    if t.size == 0 or t[0] < t0 - 1e-12:
        raise OptionError(f"data times must start at or after t0 = {t0:g}")
    K = max(1, int(math.ceil((t[-1] - t0) / step - 1e-9)))
    h = (t[-1] - t0) / K
    b.h, b.steps, b.t0 = h, K, t0
    grid = t0 + h * np.arange(K + 1)
    n, ns = eq.n, len(eq.slots)
    env = eq.parameters({k: v for k, v in m.theta.items()}, pyo)
    mass = eq.mass(env, pyo)
    q0, v0 = _initial_state(eq)
    b.q = pyo.Var(range(K + 1), range(n), initialize=lambda _, k, i: q0[i])
    b.v = pyo.Var(range(K + 1), range(n), initialize=lambda _, k, i: v0[i])
    for i in range(n):
        b.q[0, i].fix(q0[i])
        b.v[0, i].fix(v0[i])
    steps = range(1, K + 1)
    nrow = len(eq.joint_residuals(q0, t0, eq.parameters()))
    b.nu = pyo.Var(steps, range(nrow), initialize=0.0)
    S = range(ns)
    b.lp = pyo.Var(steps, S, within=pyo.NonNegativeReals, initialize=0.0)
    b.lm = pyo.Var(steps, S, within=pyo.NonNegativeReals, initialize=0.0)
    b.P = pyo.Var(steps, S, initialize=0.0)
    b.sp = pyo.Var(steps, S, within=pyo.NonNegativeReals, initialize=0.0)
    b.sm = pyo.Var(steps, S, within=pyo.NonNegativeReals, initialize=0.0)
    mus = [(eq.value(sl.mu, env, pyo), eq.value(sl.mu_s if sl.mu_s is not None else sl.mu, env, pyo))
           for sl in eq.slots]
    static = [sl.mu_s is not None and a is not c and not (isinstance(a, float) and isinstance(c, float) and a == c)
              for sl, (a, c) in zip(eq.slots, mus)]
    b.wp = pyo.Var(steps, [j for j in S if static[j]], within=pyo.NonNegativeReals, initialize=0.0)
    b.wm = pyo.Var(steps, [j for j in S if static[j]], within=pyo.NonNegativeReals, initialize=0.0)
    b.dynamics, b.position, b.joint, b.gap, b.slip = (pyo.ConstraintList() for _ in range(5))
    b.pairs = Complementarity(pyo.Any)
    b.sides = {}                      # key -> (a, c) of the pair 0 <= a ⊥ c >= 0, for the checks
    b.slip_velocity = {}              # (k, j) -> WT(q_k) v_k
    pair = lambda key, a, c: _add_pair(b, key, a, c)  # noqa: E731
    ctx = _Context(eq, env, mass, h, grid, mus, static)
    for k in steps:
        slips = ctx.step(b, k, [b.q[k - 1, i] for i in range(n)], [b.v[k - 1, i] for i in range(n)],
                         [b.q[k, i] for i in range(n)], [b.v[k, i] for i in range(n)],
                         lambda name, j, k=k: getattr(b, name)[k, j], pair, (k,))
        for j, slip in slips.items():
            b.slip_velocity[k, j] = slip
    b.law_sides = dict(b.sides)       # the closure law's pairs, before any breakaway is configured
    b.ctx, b.pattern, b.soft, b.loose = ctx, {}, {}, []
    b.row_parts = [b.dynamics, b.position, b.joint, b.gap, b.slip]
    _residuals(b, eq, t, data, list(outputs), sigma, grid)
    b.warm = lambda ws: warm(b, eq, ws, mus, static)   # noqa: E731  (re-start from a simulation on the grid)
    if warm_start is not None:
        b.warm(warm_start)
    return b


class _Context:
    """What the rows of every step need: the equations, the (Pyomo) parameters, masses, step, grid, coefficients."""

    def __init__(self, eq, env, mass, h, grid, mus, static):
        self.eq, self.env, self.mass, self.h, self.grid, self.mus, self.static = eq, env, mass, h, grid, mus, static

    def step(self, rows, k, qp, vp, qk, vk, var, pair, prefix, stuck=()):
        """The rows of step k, from (qp, vp) at t_{k−1} to (qk, vk), on ``rows`` (its ``dynamics``, ``position``,
        ``joint``, ``gap``, ``slip`` ConstraintLists); ``var(name, j)`` gives the step's slot variables and
        ``var("nu", r)`` its joint forces; the pairs go to ``pair(prefix + (j, key), a, c)`` (slots in ``stuck``:
        the wall pair only, their slip held at zero by the caller).  Returns ``{slot: slip expression}``."""
        eq, env, n = self.eq, self.env, self.eq.n
        rhs = list(eq.applied_forces(qp, vp, float(self.grid[k - 1]), env, pyo))
        for r, g in enumerate(eq.joint_residuals(qk, float(self.grid[k]), env, pyo)):
            rows.joint.add(g == 0)
            for i, d in enumerate(_grad(g, qk)):
                rhs[i] = rhs[i] + d * var("nu", r) if not _zero(d) else rhs[i]
        slips = {}
        for j, (gN, s) in enumerate(eq.slot_coordinates(qk, env, pyo)):
            rows.gap.add(gN == 0)
            WN, WT = _grad(gN, qk), _grad(s, qk)
            lam = var("lp", j) - var("lm", j)
            for i in range(n):
                if not _zero(WN[i]):
                    rhs[i] = rhs[i] + WN[i] * lam
                if not _zero(WT[i]):
                    rhs[i] = rhs[i] + WT[i] * var("P", j)
            slips[j] = sum(WT[i] * vk[i] for i in range(n) if not _zero(WT[i]))
            rows.slip.add(slips[j] == var("sp", j) - var("sm", j))
            mu, mu_s = self.mus[j]
            wp, wm = (var("wp", j), var("wm", j)) if self.static[j] else (None, None)
            for key, x, c in slot_law(var("lp", j), var("lm", j), var("P", j), var("sp", j), var("sm", j), mu, mu_s,
                                      wp, wm):
                if key == "wall" or j not in stuck:
                    pair(prefix + (j, key), x, c)
        for i in range(n):
            rows.dynamics.add(self.mass[i] * (vk[i] - vp[i]) / self.h == rhs[i])
            rows.position.add((qk[i] - qp[i]) / self.h == vk[i])
        return slips


def slot_law(lp, lm, P, sp, sm, mu, mu_s, wp=None, wm=None):
    """The complementarity pairs ``(key, a, c)``, 0 ≤ a ⊥ c ≥ 0, of one slot at one step (any arithmetic).

    The wall split (Λ⁺ ⊥ Λ⁻, |Λ| = Λ⁺ + Λ⁻) and Coulomb's law on the slip parts
    s⁺, s⁻: with ``wp``/``wm`` given (μ_s > μ) the four pairs of the module notes,
    else 0 ≤ s± ⊥ μ|Λ| ± P ≥ 0.
    """
    absl = lp + lm
    out = [("wall", lp, lm)]
    if wp is not None:
        out += [("+excess", sp, (mu_s - mu) * absl - wp), ("+", sp, mu_s * absl + P - wp),
                ("-excess", sm, (mu_s - mu) * absl - wm), ("-", sm, mu_s * absl - P - wm)]
    else:
        out += [("+", sp, mu * absl + P), ("-", sm, mu * absl - P)]
    return out


def _zero(d):
    return isinstance(d, (int, float)) and d == 0


def _initial_state(eq):
    q, v = [], []
    env = eq.parameters()
    for body in eq.bodies:
        q += [float(eq.value(x, env)) for x in body.position]
        v += [float(eq.value(x, env)) for x in body.velocity]
        if isinstance(body, RigidBody):
            q.append(float(eq.value(body.angle, env)))
            v.append(float(eq.value(body.angular_velocity, env)))
    return q, v


def _series(b, eq, name):
    """``(kind, index, fn)``: fn(k) the Pyomo value of output ``name`` at grid step k."""
    names = eq.coordinate_names
    if name in names:
        i = names.index(name)
        return lambda k: b.q[k, i]
    if name.endswith("_dot") and name[:-4] in names:
        i = names.index(name[:-4])
        return lambda k: b.v[k, i]
    base, _, quantity = name.rpartition(".")
    slots = [sl.name for sl in eq.slots]
    if quantity in _SLOT_OUTPUTS and base in slots:
        j = slots.index(base)
        if quantity == "normal_force":
            return lambda k: b.lp[max(k, 1), j] - b.lm[max(k, 1), j]
        if quantity == "friction_force":
            return lambda k: b.P[max(k, 1), j]
        return lambda k: b.sp[max(k, 1), j] - b.sm[max(k, 1), j]
    raise OptionError(f"output {name!r} is not supported by the MPEC route (coordinates, their velocities "
                      f"'<coordinate>_dot' and slot forces/slip velocity are: {names}); use the shooting route")


def _residuals(b, eq, t, data, outputs, sigma, grid):
    sigma = np.ones(len(outputs)) if sigma is None else np.asarray(sigma, dtype=float)
    series = [_series(b, eq, o) for o in outputs]
    pos = (t - b.t0) / b.h
    idx = np.clip(np.floor(pos + 1e-9).astype(int), 0, b.steps)
    frac = pos - idx
    rows = {}
    for d in range(t.size):
        k, a = int(idx[d]), float(frac[d])
        for o, fn in enumerate(series):
            pred = fn(k) if a <= 1e-9 or k == b.steps else (1 - a) * fn(k) + a * fn(k + 1)
            rows[d, o] = (pred - float(data[d, o])) / float(sigma[o])
    b.residual = pyo.Expression(list(rows), initialize=rows)
    b.data_scale = float(np.sum((data / sigma) ** 2))
    b.outputs = outputs


def residuals(m):
    """The checks of a solved (or warm-started) model: ``{"dynamics": max row violation, "complementarity":
    max |min(a, b)| over the pairs (negative sides included), "objective": value}``."""
    dyn = 0.0
    for b in m.experiment.values():
        for part in b.row_parts:
            for c in part.values():
                dyn = max(dyn, abs(pyo.value(c.body) - pyo.value(c.upper)))
    comp = 0.0
    for b in m.experiment.values():
        for a, c in b.sides.values():
            comp = max(comp, abs(min(pyo.value(a), pyo.value(c))))
    return {"dynamics": dyn, "complementarity": comp, "objective": float(pyo.value(m.objective))}
