"""The vector field of a mode and the forces behind it, with a one-point cache: what the phase stepper, the
event locator, the transition and the sensitivities all evaluate.

:class:`ModeEvaluator` holds a formulation and the slots' friction coefficients; at (t, x, mode) it gives the
assembly and :class:`~pympc.dynamics.modes.ModeSolution` (:meth:`~ModeEvaluator.evaluate`), the right-hand
side of the state ``x = (q, q̇, dissipated, work)`` (:meth:`~ModeEvaluator.rhs`) and the slots' ``(vT, λ, F)``
(:meth:`~ModeEvaluator.slot_values`) — by one compiled call where :class:`CompiledModes` applies, by the
assembly and :func:`solve_mode` otherwise.  The last point is cached: solve_ivp and the event functions ask
for the same point several times.
"""

from __future__ import annotations

import numpy as np

from ..mechanics.assembly import SparseAssembly
from .modes import CompiledModes, Mode, solve_mode

__all__ = ["ModeEvaluator"]


class ModeEvaluator:
    """Evaluations of one formulation (``form``) with constraint stabilization ``stab``, owned by one run at a
    time (kept with the system between runs: :func:`pympc.simulate`).

    Attributes: ``form``, ``stab``, ``n`` (coordinates), ``mu``, ``mu_s`` (per slot), ``md`` (the mass
    diagonal), ``_fast`` (the compiled modes, or None), ``event_tables`` (what the
    :class:`~pympc.dynamics.locate.EventLocator` makes once per mode, kept here: a run that takes over an evaluator
    kept with its system takes them too), ``initial_violations`` (``simulate``'s check of the initial state, per
    start time and tolerance: the kinematics of the runs that share an evaluator are the same).  A caller that makes the compiled buffers hold another point (a batch of
    samples, a compiled integration) calls :meth:`forget`.
    """

    def __init__(self, form, stab):
        self.form, self.stab = form, stab
        self.n = form.n
        self.mu = np.array([float(s.mu) for s in form.slots])
        self.mu_s = np.array([float(s.static_mu) for s in form.slots])
        self.md = form.mass_diagonal
        self._cache_key, self._cache = None, None
        self._modes = {}               # mode → its walls and motions as arrays (mode_arrays)
        self._locked = {}              # mode → (its rows as bytes, locked?) of its last locked() test
        self.event_tables = ({}, {})   # the EventLocator's per-mode tables and event functions (locate.py)
        self.initial_violations = {}   # (t0, tol) → what simulate's initial check found (the same kinematics)
        self._fast = CompiledModes(form, self.mu, self.mu_s, stab) if CompiledModes.applies(form) else None

    def set_friction(self, slots):
        """Take the friction coefficients of ``slots`` (a system's slots, in the order of ``form.slots``): a
        setup kept with a system serves a copy of it bound to other values of μ or μ_s (:func:`pympc.simulate`).
        New arrays (what earlier runs handed out keeps its values); the compiled modes' plans get the new
        friction columns, and the event tables, which hold μ_s, are made again when μ_s changed."""
        mu = np.array([float(s.mu) for s in slots])
        mu_s = np.array([float(s.static_mu) for s in slots])
        if mu.tobytes() != self.mu.tobytes():
            self.mu = mu
            if self._fast is not None:
                self._fast.set_mu(mu)
            self._cache_key = None
        if mu_s.tobytes() != self.mu_s.tobytes():
            self.mu_s = mu_s
            if self._fast is not None:
                self._fast.mu_s = mu_s
            self.event_tables = ({}, {})
            self._cache_key = None

    def compiled(self, mode):
        """Does the compiled path evaluate ``mode``?"""
        return self._fast is not None and isinstance(mode, Mode)

    def forget(self):
        """The cached point is no longer in the compiled buffers."""
        self._cache_key = None

    def _stale(self, t, x, mode):
        """Is the cached evaluation not that of (t, x, mode)?  (The mode is compared by identity first:
        solve_ivp passes the same object to every call of a phase, and a tuple compare costs O(slots).)"""
        xb = x.tobytes()
        k = self._cache_key
        if k is not None and k[0] == t and k[1] == xb and (k[2] is mode or k[2] == mode):
            return None
        return (t, xb, mode)

    def evaluate(self, t, x, mode, assembly=None):
        """``(assembly, ModeSolution)`` at (t, x) in ``mode`` (``assembly``: the formulation's assembly at (t, x)
        when the caller has it: taken instead of assembling again)."""
        key = self._stale(t, x, mode)
        if key is not None:
            n = self.n
            if self._fast is not None and isinstance(mode, Mode):   # one compiled call (general method)
                self._out = self._fast.compute(t, x[:n], x[n:2 * n], mode)
                self._cache = None
            else:
                a = assembly if assembly is not None else self.form.assemble(x[:n], x[n:2 * n], t)
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
        """``dx/dt`` of the state ``x = (q, q̇, dissipated, work)`` in ``mode`` (solve_ivp's ``fun``)."""
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

    def solved(self, t, q, qd, mode):
        """The compiled mode solve at (q, q̇, t): the views of its buffers (valid until the next evaluation)."""
        self._cache_key = None           # the compiled buffers will hold this point
        fast = self._fast
        fast.compute(t, q, qd, mode)
        return fast._recent[1].view      # the plan compute took (a mode is hashed in O(slots))

    def mode_arrays(self, mode):
        """``(walls, motions)`` of ``mode`` as float arrays (a :class:`Mode`'s made once and kept with it, as its
        other arrays; any other object's once per mode and run)."""
        if type(mode) is Mode:
            return mode._arrays
        arrays = self._modes.get(mode)
        if arrays is None:
            arrays = self._modes[mode] = (np.array(mode.walls, dtype=float), np.array(mode.motions, dtype=float))
        return arrays

    def locked(self, a, mode):
        """Do the joints, slots and sticking slots fix every coordinate (no free motion at all)?"""
        J = a.J
        # the rows of a stick phase repeat (fixed guides): the rank once per rows, recognized by the arrays
        # that hold them (a sparse assembly's slot rows as they are: its dense rows are not built to compare)
        rows = a.rows if isinstance(a, SparseAssembly) else (a.WN, a.WT)
        if J.shape[0] + rows[0].shape[0] + len(mode.sticking) < self.n:    # fewer rows than coordinates
            return False
        key = (J.shape, J.tobytes(), *(r.shape for r in rows), *(r.tobytes() for r in rows))
        last = self._locked.get(mode)
        if last is not None and last[0] == key:
            return last[1]
        C = np.vstack([J, a.WN, a.WT[mode.sticking]])
        out = _rank(C) == self.n
        self._locked[mode] = (key, out)
        return out


_RANKS = {}      # (shape, dtype, bytes) of a matrix → its rank: the stick phases of every run of a model share rows


def _rank(C):
    """``np.linalg.matrix_rank(C)``, remembered for matrices seen before (an SVD costs tens of µs, the first in a
    run of a loaded machine hundreds: a run's first stick phase paid it)."""
    key = (C.shape, C.dtype.str, C.tobytes())
    r = _RANKS.get(key)
    if r is None:
        if len(_RANKS) >= 4096:
            _RANKS.clear()
        r = _RANKS[key] = int(np.linalg.matrix_rank(C))
    return r
