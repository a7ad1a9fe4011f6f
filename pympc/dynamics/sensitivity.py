"""Forward sensitivities of an event-driven simulation with respect to named parameters.

With the state ``x = (q, q̇)`` and the parameters θ, the sensitivities
``S = ∂x/∂θ`` (one column per parameter) obey, in a smooth phase of fixed mode
with vector field ``f(x, t, θ)``, the variational equation ``Ṡ = f_x S + f_θ``;
they are integrated together with the state — by the compiled DOP853 loop
(:mod:`pympc.dynamics._dop853`) on the compiled variational right-hand side
(:mod:`pympc.dynamics._variational`: the 2 n_θ + 1 mode evaluations in one
call) where the mode's right-hand side of the system and of its perturbed
copies is compiled end to end, else by ``solve_ivp`` on :meth:`Sensitivities.rhs_python`;
the two take the same steps.  At a state event
``g(x, t, θ) = 0`` located at τ (DESIGN.md §7):

    dτ/dθ = −(g_x S⁻ + g_θ) / ġ,   ġ = g_x f⁻ + g_t,
    S⁺ = Π (S⁻ + (f⁻ − f⁺) dτ/dθ)

where Π is the Jacobian of the projection onto the constraints (position,
then velocity, with the new sticking slots) that the driver applies at every
event.  The derivatives of ``f``, ``g`` and the constraint residuals along a
column ``(S_j, e_j)`` are directional derivatives of the fixed-mode equations
(smooth in x and θ once the mode is fixed), taken by central differences with a
step of ``1e-5·max(|θ_j|, 1e-2)`` in θ_j together with the same multiple of
``S_j`` in x; their truncation error is of the order of the step squared
(≈1e-10 relative) and their rounding noise 1e-11 to 1e-10 relative.  The
sensitivities are in the integrator's error control: with the state's ``rtol``,
and for the column S_j with the absolute tolerance ``atol / (ρ θ̄_j)``,
θ̄_j = max(|θ_j|, 1e-2), ρ = 1e-2 — S_j is controlled as the change of the state
under a 1 % change of θ_j (CVODES's ``atol/pbar`` with pbar = ρ θ̄_j).  With the
state's own ``atol`` the rounding noise of the differences, in components the
constraints hold at zero, set the step: the cross slide took 4× the plain run's
steps for the same error (``benchmarks/sensitivity_speed.py``).  (Measured and
rejected: one-sided differences, whose noise collapses the step size, and
sensitivities left out of the error control, 100× less accurate on the long
steps of nearly polynomial motions.)  Nothing is differentiated across a mode
change: the jumps are the saltation relation above.

Where the derivative does not exist the columns become NaN from that event on,
with a reason: a grazing event (ġ ≈ 0), an event whose HLCP is degenerate (its
mode was settled by a look-ahead probe, so an arbitrarily small perturbation
may select another mode), or one with several solutions.
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError, OptionError
from ._variational import pack, variational_forces, variational_rhs
from .modes import Mode, min_norm
from .trajectory import EventKind

__all__ = ["Sensitivities"]


class Sensitivities:
    """Sensitivity bookkeeping of one simulation (created by :func:`pympc.simulate`).

    Parameters
    ----------
    run : ModeEvaluator
        The simulation's evaluations (:class:`~pympc.dynamics.evaluation.ModeEvaluator`: formulation,
        stabilization, the mode's right-hand side).
    system : System
        The bound system that is simulated.
    names : sequence of str
        Parameters to differentiate with respect to.
    make_run : callable
        ``make_run(system)`` → a :class:`ModeEvaluator` of the same formulation and stabilization for another
        binding.
    forces : bool
        Also give ∂λ/∂θ and ∂F/∂θ at the samples (:meth:`outputs`).
    """

    RHO = 1e-2
    """Relative parameter change by which the sensitivities' absolute tolerance is scaled (:meth:`atol`)."""

    def __init__(self, run, system, names, make_run, forces=True):
        try:
            names = [names] if isinstance(names, str) else list(names)
        except TypeError:
            names = None
        if not names or not all(isinstance(k, str) for k in names):
            raise OptionError(f"sensitivities must be parameter names, e.g. ['mu', 'mu_s'] (or None for a run "
                              f"without them), got {names!r}; parameters: {sorted(system.parameters)}")
        values = system.parameters
        unknown = [k for k in names if k not in values]
        if unknown or len(set(names)) != len(names):
            raise OptionError(f"sensitivities: {unknown or 'repeated names'} — give distinct parameters of the "
                              f"model, one of {sorted(values)}")
        unused = sorted(set(names) - system.used_parameters())
        if unused:
            raise OptionError(f"sensitivities: parameter(s) {unused} are not used by the model "
                              f"(their sensitivities would be zero by construction); in use: "
                              f"{sorted(system.used_parameters())}")
        self.names, self.run, self.forces = names, run, forces
        self.n = run.n
        self.p = len(names)
        self.scale = np.array([max(abs(values[k]), 1e-2) for k in names])
        self.h = 1e-5 * self.scale
        try:
            self.plus = [make_run(system.perturbed({k: values[k] + h})) for k, h in zip(names, self.h)]
            self.minus = [make_run(system.perturbed({k: values[k] - h})) for k, h in zip(names, self.h)]
        except ModelError as exc:
            raise OptionError(f"sensitivities: the model cannot be evaluated next to the parameter values ({exc})") \
                from None
        self.undefined = None          # reason, once a derivative did not exist
        self.undefined_from = np.inf   # ... and from which time on
        self._packed = {}               # mode → the flat arrays of the compiled variational rhs, or None
        self._offsets = {}              # mode → (olam, oF) where _packed has the arrays

    # ------------------------------------------------------------------ packing
    @property
    def size(self):
        return 2 * self.n * self.p

    def atol(self, atol):
        """``solve_ivp``'s absolute tolerances of the augmented state: ``atol`` for the state, and for the
        column S_j ``atol / (ρ θ̄_j)`` with θ̄_j = max(|θ_j|, 1e-2) and ρ = :attr:`RHO` (CVODES's
        ``atol/pbar`` with ``pbar`` = ρ θ̄_j)."""
        m = 2 * self.n + 2
        out = np.empty(m + self.size)
        out[:m] = atol
        out[m:] = np.tile(atol / (self.RHO * self.scale), 2 * self.n)
        return out

    def split(self, y):
        """(x, S) of an augmented state: x = (q, q̇, dissipated, work), S of shape (2n, p)."""
        m = 2 * self.n + 2
        return y[:m], y[m:].reshape(2 * self.n, self.p)

    def _diff(self, fun, x, S):
        """Central directional derivatives of ``fun(run, x)`` along the columns (S_j, e_j), shape
        ``fun's + (p,)``; one state buffer for all columns (this is the variational right-hand side's hot path)."""
        n2 = 2 * self.n
        xs = x.copy()
        cols = None
        for j in range(self.p):
            step = S[:, j] * self.h[j]
            np.add(x[:n2], step, out=xs[:n2])
            a = np.array(fun(self.plus[j], xs), dtype=float)      # a copy: fun may return a view of a buffer
            np.subtract(x[:n2], step, out=xs[:n2])
            d = (a - np.asarray(fun(self.minus[j], xs))) * (0.5 / self.h[j])
            if cols is None:
                cols = np.empty(d.shape + (self.p,))
            cols[..., j] = d
        return cols

    # ------------------------------------------------------------------ smooth phases
    def flat(self, mode):
        """``(fl, il)`` of :func:`pympc.dynamics._variational.variational_flat` in ``mode`` (made once per mode),
        or None where the system or a perturbed copy has no compiled flat right-hand side in ``mode``, or
        their plans' arrays differ in length: :meth:`rhs` then takes the Python path."""
        if mode in self._packed:
            return self._packed[mode]
        packed = None
        runs = [self.run] + self.plus + self.minus
        if isinstance(mode, Mode) and all(r._fast is not None for r in runs):
            flats = [r._fast.flat(mode) for r in runs]
            if all(f is not None for f in flats):
                packed = pack([f[:2] for f in flats], self.h)
        self._packed[mode] = packed
        if packed is not None:
            self._offsets[mode] = flats[0][2][1:]          # λ and F in the mode buffer (the same in every plan)
        return packed

    def rhs(self, t, y, mode):
        """The state's vector field and the variational equation, for ``solve_ivp``: one compiled call
        (:func:`pympc.dynamics._variational.variational_rhs`) where :meth:`flat` applies."""
        packed = self.flat(mode)
        if packed is not None:
            out = np.empty_like(y)
            if variational_rhs(t, y, *packed, out):
                return out
        return self.rhs_python(t, y, mode)        # also where a compiled solve failed: it says why

    def rhs_python(self, t, y, mode):
        """:meth:`rhs` by the runs' right-hand sides in Python (:meth:`_diff`)."""
        n, m = self.n, 2 * self.n + 2
        x, S = y[:m], y[m:].reshape(2 * n, self.p)
        out = np.empty_like(y)
        out[:m] = self.run.rhs(t, x, mode)
        dS = out[m:].reshape(2 * n, self.p)
        dS[:n] = S[n:]
        dS[n:] = self._diff(lambda r, xx: r.rhs(t, xx, mode)[n:2 * n], x, S)
        return out

    # ------------------------------------------------------------------ events
    def start(self, t, x, stick, event):
        """S at the start: derivatives of the initial state, projected like the state."""
        n = self.n
        S = np.empty((2 * n, self.p))
        for j in range(self.p):
            qp, qdp = self.plus[j].form.initial_state()
            qm, qdm = self.minus[j].form.initial_state()
            S[:n, j] = (qp - qm) / (2 * self.h[j])
            S[n:, j] = (qdp - qdm) / (2 * self.h[j])
        self._check_event(event)
        if self.undefined is not None:
            self._give_up(t, event)
        return self.project(t, x, S, stick)

    def _give_up(self, t, event):
        """No derivative from ``t`` on: outputs NaN from there (the integration goes on with zero columns,
        as solve_ivp needs finite states); the event says why."""
        self.undefined_from = min(self.undefined_from, t)
        event.dtime = dict.fromkeys(self.names, float("nan"))
        event.sensitivity_note = event.sensitivity_note or self.undefined

    def jump(self, t, x_minus, S, mode_before, kind, slot, x_plus, mode_after, event):
        """S after an event (saltation and projection); records ``event.dtime``."""
        if self.undefined is None:
            self._check_event(event)
        if self.undefined is not None:
            self._give_up(t, event)
            return np.zeros_like(S)
        n = self.n
        run = self.run

        def g(r, xx, tt=t):
            a, s = r.evaluate(tt, xx, mode_before)
            k = slot
            if kind == EventKind.SLIP_STOP:
                return mode_before.motions[k] * a.vT[k]
            lam = mode_before.walls[k] * s.lam[k]
            if kind == EventKind.WALL_SWITCH:
                return lam
            return r.mu_s[k] * lam - abs(s.F[k])

        a, s = run.evaluate(t, x_minus, mode_before)
        f_minus = np.concatenate([x_minus[n:2 * n], s.qdd])
        # ġ along the old vector field, by a central difference in time
        dt = 1e-7 * max(1.0, abs(t))
        xp, xm = x_minus.copy(), x_minus.copy()
        xp[:2 * n] += dt * f_minus
        xm[:2 * n] -= dt * f_minus
        gdot = (g(run, xp, t + dt) - g(run, xm, t - dt)) / (2 * dt)
        dg = self._diff(g, x_minus, S)                       # g_x S + g_θ, one per parameter
        scale = max(1.0, float(np.abs(a.h).max(initial=0))) if kind != EventKind.SLIP_STOP else \
            max(1.0, float(np.abs(x_minus[n:2 * n]).max(initial=0)))
        if abs(gdot) <= 1e-8 * scale:
            self.undefined = (f"{kind.name} event at t = {t:.9g} is grazing (ġ = {gdot:.3g}): the event time is "
                              "not differentiable")
            self._give_up(t, event)
            return np.zeros_like(S)
        dtau = -dg / gdot
        _, s_after = run.evaluate(t, x_plus, mode_after)
        f_plus = np.concatenate([x_plus[n:2 * n], s_after.qdd])
        S = S + np.outer(f_minus - f_plus, dtau)
        event.dtime = {k: float(v) for k, v in zip(self.names, dtau)}
        event.sensitivity_note = ""
        return self.project(t, x_plus, S, mode_after.sticking)

    def _check_event(self, event):
        why = None
        # the part on whose boundary the event sits by construction (λ = 0 at a wall switch, a zero
        # reserve at a breakaway) is settled by the direction of the crossing: regular when transversal
        own = {EventKind.WALL_SWITCH: ("wall", event.slot), EventKind.BREAKAWAY: ("stick", event.slot)}.get(event.kind)
        others = [] if event.probe is None else [p for p in event.probe["parts"] if tuple(p) != own]
        if others:
            why = (f"its HLCP is degenerate in {', '.join(f'{a} of slot {k}' for a, k in others)} (the mode was "
                   "settled by a look-ahead)")
        elif event.classification in ("FINITE", "CONTINUUM", "NONE"):
            why = f"its HLCP has {event.classification.lower()} solutions"
        if why is not None:
            self.undefined = (f"{event.kind.name} event at t = {event.time:.9g}: {why}; an arbitrarily small "
                              "perturbation may select another mode, so the motion is not differentiable there")
        regular_start = why is None and event.kind == EventKind.START     # τ = t0 does not move
        event.dtime = dict.fromkeys(self.names, 0.0 if regular_start else float("nan"))
        event.sensitivity_note = why or ""

    def project(self, t, x, S, stick):
        """The Jacobian of the event projection applied to S (position, then velocity constraints).

        The least-norm corrections are the ones :meth:`Transition.project <pympc.dynamics.transition.Transition.project>` applies to the state (:func:`min_norm`).
        """
        if self.undefined is not None:
            return np.zeros_like(S)
        n = self.n
        stick = list(stick)
        form = self.run.form
        a = form.assemble(x[:n], x[n:2 * n], t)
        Jh = np.vstack([a.J[a.holonomic], a.WN])
        if Jh.shape[0]:
            def gpos(r, xx):
                b = r.form.assemble(xx[:n], xx[n:2 * n], t)
                return np.concatenate([b.g[b.holonomic], b.gN])
            dG = self._diff(gpos, x, S)
            S = S.copy()
            S[:n] -= min_norm(Jh, dG)
        Jv = np.vstack([a.J, a.WN, a.WT[stick]])
        if Jv.shape[0]:
            def gvel(r, xx):
                b = r.form.assemble(xx[:n], xx[n:2 * n], t)
                return np.concatenate([b.gdot, b.vN, b.vT[stick]])
            dR = self._diff(gvel, x, S)
            S = S.copy()
            S[n:] -= min_norm(Jv, dR)
        return S

    # ------------------------------------------------------------------ outputs
    def outputs(self, t, x, S, mode):
        """(∂q_abs, ∂q̇_abs, ∂λ, ∂F) at one sample, each with one column per parameter (∂λ, ∂F None
        unless :attr:`forces`)."""
        n = self.n
        form = self.run.form
        if t >= self.undefined_from:
            na, s = len(form.absolute_names), len(self.run.mu)
            nan = lambda k: np.full((k, self.p), np.nan)   # noqa: E731
            return nan(na), nan(na), *((nan(s), nan(s)) if self.forces else (None, None))
        if getattr(form, "name", "") == "general":
            dq, dqd = S[:n], S[n:]
        else:
            d = self._diff(lambda r, xx: np.concatenate(r.form.absolute(xx[:n], xx[n:2 * n])), x, S)
            na = d.shape[0] // 2
            dq, dqd = d[:na], d[na:]
        if not self.forces:
            return dq, dqd, None, None

        s = len(self.run.mu)
        packed = self.flat(mode)
        if packed is not None:          # one compiled call for the 2 n_θ evaluations
            ms = np.empty((2 * s, self.p))
            if variational_forces(t, np.ascontiguousarray(x), np.ascontiguousarray(S), *packed, *self._offsets[mode],
                                  ms):
                return dq, dqd, ms[:s], ms[s:]

        def forces(r, xx):      # the compiled path's λ, F where it applies (no assembly objects per sample)
            _, lam, F = r.slot_values(t, xx, mode)
            return np.concatenate([lam, F])
        ms = self._diff(forces, x, S)
        return dq, dqd, ms[:s], ms[s:]

