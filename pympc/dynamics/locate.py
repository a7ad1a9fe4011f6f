"""Event location: the event functions of a phase and the search for their first downward zero crossing.

A phase in mode m ends at the first zero of one of its event functions (per slot: the slip velocity of a
slipping slot, the normal force on its wall, the friction reserve of a sticking slot; :class:`EventFunctions`).
Whatever integrated the phase — the compiled DOP853 loop or ``solve_ivp`` — the search is the same:
:func:`~pympc.dynamics.crossings.first_crossing` on the dense output (samples at most ``scan_step`` apart, a
curvature bound between samples, bisection where a dip below zero is not excluded), with its inner loop
compiled (:func:`pympc.dynamics._dop853.scan_dense`) for DOP853 steps of a compiled mode, and the whole search
one compiled call (:func:`pympc.dynamics._dop853.first_crossing_dense`: the same windows, samples and scans)
when the forcing's time scale is the same everywhere.  A phase in which
nothing moves is searched the same way, on the constant state (:meth:`EventLocator.frozen`).
"""

from __future__ import annotations

import numpy as np

from . import _dop853 as dop853
from ._event_kernels import event_values
from .crossings import SPLIT, DenseStates, first_crossing
from .modes import Motion
from .trajectory import EventKind

__all__ = ["EventLocator", "EventFunctions", "lowest"]

_NO_TIMES = np.zeros(0)
_ONE = np.ones(1)           # the step of a frozen phase's stack (read only)


class EventLocator:
    """Makes the event functions of each phase and finds the first event of a phase.

    ``evaluator`` is the run's :class:`~pympc.dynamics.evaluation.ModeEvaluator`; ``settings`` the run's
    (:meth:`SimulateOptions.resolve`: ``rtol``, ``timescale``, ``scan_step``)."""

    def __init__(self, evaluator, settings):
        self.ev, self.opts = evaluator, settings
        # mode → the event functions' coefficients, mode → its EventFunctions (one phase at a time uses them):
        # kept with the evaluator (they depend on it and the mode alone), so the runs that share it share them
        self._tables, self._functions = evaluator.event_tables
        self._band = max(1e-12, 10 * settings["rtol"])      # the dead band per unit of force scale
        self._zero_step = None         # the zero polynomial of a frozen phase's one step (frozen())
        self._search_step = False      # search_step(), once its settings were read

    def functions(self, mode, force_scale):
        """The event functions of a phase in ``mode`` (:class:`EventFunctions`); ``force_scale`` sets the
        dead band of the force functions."""
        # a dead band above the integration noise, so that a force that is zero (λ ≡ 0) does not chatter
        band = self._band * force_scale
        funcs = self._functions.get(mode)       # made once per mode and run; a new phase sets its band
        if funcs is None:
            kinds, slots = [], []
            for k, m in enumerate(mode.motions):
                kinds += [EventKind.SLIP_STOP, EventKind.WALL_SWITCH] if m != Motion.STICK else \
                    [EventKind.WALL_SWITCH, EventKind.BREAKAWAY]
                slots += [k, k]
            funcs = self._functions[mode] = EventFunctions(self, mode, band, kinds, slots)
        else:
            funcs.set_band(band)
        return funcs

    def window(self, ta, tb, intervals=64):
        """(end, step): a scan window from ``ta`` whose step resolves the forcing there (≤ ``scan_step``, ≤ τ/8)."""
        return self.opts["timescale"].window(ta, tb, self.opts["scan_step"], intervals)

    def frozen(self, t, t1, x, funcs):
        """The first event of a phase in which nothing moves (the state ``x`` is constant, only the forcing
        changes with t): ``(time, index)`` or ``(None, None)``.

        There is nothing to integrate; the event functions (functions of t alone here) are searched by
        :func:`~pympc.dynamics.crossings.first_crossing`, so a reserve that dips below zero and recovers
        between two samples is found.
        """
        # the constant state as one dense-output step whose polynomial is zero: y = 0 + x, exactly (made inside the
        # compiled search)
        hit = self._compiled_search(funcs, None, t, t1, _NO_TIMES, x)
        if hit is not None:
            return hit
        ends = np.empty(2)
        ends[0], ends[1] = t, t1
        zero = self._zero_step
        if zero is None or zero.shape[2] != x.size:
            zero = self._zero_step = np.zeros((1, 7, x.size))      # (read only: the kernels read the stack)
        stack = (ends, ends[:1], _ONE, x[None, :].copy(), zero)

        def G(s):
            return funcs.vector(s, x)
        G.many = lambda ts: funcs.vector.many(ts, np.broadcast_to(x, (len(ts), x.size)))
        G.split = funcs.vector.split
        G.scan = funcs.vector.scanner(stack)
        return first_crossing(G, t, t1, self.window)

    def _compiled_search(self, funcs, stack, ta, tb, extra, frozen=None):
        """:func:`first_crossing` on ``[ta, tb]`` in one compiled call
        (:func:`pympc.dynamics._dop853.first_crossing_dense`) when it applies — a compiled mode, DOP853 steps,
        a time scale that is the same everywhere — returning ``(time, index)`` or ``(None, None)``; None
        where it does not apply or asks the Python search to redo it (which says why, or raises).  ``frozen``:
        the constant state of a phase in which nothing moves (``stack`` None: its one step is made in the call,
        :func:`pympc.dynamics._dop853.first_crossing_frozen`)."""
        search = getattr(funcs.vector, "search", None)
        step = self.search_step()
        if step is None or search is None or (stack is None and frozen is None):
            return None
        return search(stack, ta, tb, extra, self.opts["scan_step"], step, 1e-11 * max(1.0, abs(ta), abs(tb)),
                      frozen)

    def search_step(self):
        """The scan step of the compiled search (:func:`pympc.dynamics._dop853.first_crossing_dense`): that of
        :meth:`TimeScale.window` where the time scale is the same everywhere, else None (and where it is too
        short a step: the Python search raises)."""
        step = self._search_step
        if step is False:              # (the run's settings decide it: once per run)
            fixed = self.opts["timescale"]._fixed
            cap = self.opts["scan_step"]
            step = None if fixed is None else min(cap, fixed / 8)
            step = self._search_step = step if step is not None and step >= 1e-4 * cap else None
        return step

    def on_dense(self, sol, t, tb, funcs):
        """The first event of an integrated piece on [t, tb], searched on its dense output ``sol.sol``
        inside every step (a sign test at step ends would miss a dip inside a step): ``(time, index,
        state)`` or ``(None, None, None)``."""
        def G(s):
            return funcs.vector(s, sol.sol(s))
        states = DenseStates(sol.sol)
        G.many = lambda ts: funcs.vector.dense(ts, states)
        G.split = funcs.vector.split
        hit = self._compiled_search(funcs, states.stack, t, tb, sol.sol.ts)
        if hit is not None:
            te, i = hit
            return (None, None, None) if te is None else (te, i, sol.sol(te))
        G.scan = funcs.vector.scanner(states.stack)
        te, i = first_crossing(G, t, tb, self.window, sol.sol.ts)
        return (None, None, None) if te is None else (te, i, sol.sol(te))

    def vector(self, kinds, slots, mode, band):
        """All event functions at once (in the order of ``kinds``, ``slots``): ``vector(t, x)`` → array, with
        ``vector.table`` (their coefficients), ``vector.many(ts, X)``, ``vector.dense(ts, states)``,
        ``vector.scanner(stack)`` and ``vector.split`` for :func:`first_crossing`."""
        ev = self.ev
        fixed = self._tables.get(mode)          # what depends on the mode alone, made once per mode
        if fixed is None:
            kind = np.array([int(k) for k in kinds], dtype=int)
            slot = np.array(slots, dtype=int)
            m, w = np.asarray(mode.motions, float)[slot], np.asarray(mode.walls, float)[slot]
            sl, br = (kind == EventKind.SLIP_STOP), (kind == EventKind.BREAKAWAY)
            # g = cv vT + cl λ + cf |F| + band: m vT (slip stop), w λ + band (wall), μs w λ − |F| + band (breakaway)
            cv, cl = np.where(sl, m, 0.0), np.where(sl, 0.0, np.where(br, ev.mu_s[slot], 1.0) * w)
            fixed = self._tables[mode] = (slot, cv, cl, np.where(br, -1.0, 0.0), sl)
        slot, cv, cl, cf, sl = fixed
        bands = np.where(sl, 0.0, band)         # written in place by set_band (the tables below hold it)
        compiled = ev.compiled(mode)

        def vector(t, x):
            vT, lam, F = ev.slot_values(t, x, mode)
            return event_values(vT, lam, F, slot, cv, cl, cf, bands, np.empty(slot.size))

        table = (slot, cv, cl, cf, bands)
        vector.table = table

        forces = np.flatnonzero(~sl)            # the force functions (the others' band stays 0)

        def set_band(band):
            """The dead band of the force functions for a new phase (in place: the tables hold ``bands``)."""
            bands[forces] = band
        vector.set_band = set_band

        def many(ts, X):
            """The functions at the states ``X[i]`` (rows) at times ``ts[i]``: one compiled call when it applies."""
            G = ev._fast.event_samples(ts, X, mode, table) if compiled else None
            ev.forget()                       # the compiled buffers now hold the last sample
            return np.array([vector(t, x) for t, x in zip(ts, X)]) if G is None else G
        vector.many = many

        def dense(ts, states):
            """The functions at times ``ts`` of a dense output (:class:`DenseStates`): one compiled call for
            the states and the functions of DOP853 steps when it applies."""
            G = None
            if compiled and states.stack is not None:
                G = ev._fast.event_samples(ts, None, mode, table, dense=states.stack)
                ev.forget()
            return many(ts, states(ts)) if G is None else G
        vector.dense = dense

        def scanner(stack):
            """:func:`pympc.dynamics._dop853.scan_dense` on a stack of DOP853 steps as ``G.scan`` of
            :func:`first_crossing` (None where it does not apply: Python parts, or not a DOP853 stack)."""
            flat = ev._fast.flat(mode) if compiled else None
            if flat is None or stack is None or vector.split != SPLIT:
                return None
            fl, il, (ovT, olam, oF) = flat
            tab = (ovT, olam, oF, slot, cv, cl, cf, bands)

            def scan(a, ga, b, gb, bound, dt_min):
                t, i, status = dop853.scan_dense(a, ga, b, gb, bound, dt_min, SPLIT, *stack, fl, il, tab)
                ev.forget()                   # the compiled buffers hold the last sample
                if status != dop853.SCAN_OK:
                    return None
                return (t, i) if i >= 0 else (None, None)
            return scan
        vector.scanner = scanner

        def kernel_table():
            """``(fl, il, tab)``: the mode's flat arrays and the functions' table as the compiled search and window
            take them (made once; ``tab`` holds ``bands``, which set_band writes in place), or None where they do not
            apply (Python parts, or a search that is not split in :data:`SPLIT` parts)."""
            if not hasattr(vector, "kernel"):
                flat = ev._fast.flat(mode) if compiled else None
                if flat is None or vector.split != SPLIT:
                    vector.kernel = None
                else:
                    fl, il, (ovT, olam, oF) = flat
                    vector.kernel = (fl, il, (ovT, olam, oF, slot, cv, cl, cf, bands))
            return vector.kernel
        vector.kernel_table = kernel_table

        def search(stack, ta, tb, extra, cap, step, dt_min, frozen=None):
            """:func:`pympc.dynamics._dop853.first_crossing_dense` on a stack of DOP853 steps (or, ``frozen`` the
            constant state, :func:`~pympc.dynamics._dop853.first_crossing_frozen`): ``(t, i)``, ``(None, None)``,
            or None where it does not apply (Python parts) or the Python search must redo it."""
            kernel = kernel_table()
            if kernel is None:
                return None
            fl, il, tab = kernel
            if frozen is not None:
                t, i, status = dop853.first_crossing_frozen(ta, tb, cap, step, dt_min, SPLIT,
                                                            np.ascontiguousarray(frozen, dtype=float), fl, il, tab)
            else:
                t, i, status = dop853.first_crossing_dense(ta, tb, cap, step, np.ascontiguousarray(extra, dtype=float),
                                                           dt_min, SPLIT, *stack, fl, il, tab)
            ev.forget()                       # the compiled buffers hold the last sample
            if status != dop853.SCAN_OK:
                return None
            return (t, i) if i >= 0 else (None, None)
        vector.search = search
        # batches are compiled (cut an interval into many parts at once) only without Python parts
        vector.split = 16 if compiled and ev._fast.batched else 2
        return vector


class EventFunctions:
    """The event functions of a phase: ``funcs[i]`` a callable ``f(t, x)`` with ``kind`` and ``slot`` (made when
    asked for; evaluated on the assembly, solve_ivp's event convention), ``funcs.kinds``, ``funcs.slots``,
    and ``vector(t, x)``: all of them at once (compiled; see :meth:`EventLocator.vector`)."""

    def __init__(self, locator, mode, band, kinds, slots):
        self.ev, self.mode, self.band, self.kinds, self.slots = locator.ev, mode, band, kinds, slots
        self.vector = locator.vector(kinds, slots, mode, band)
        self._watched = {}          # (watched indices) → the event table of the compiled DOP853 loop

    def set_band(self, band):
        """Use these functions for a new phase whose force functions have dead band ``band``."""
        self.band = band
        self.vector.set_band(band)
        if self._watched:
            bands = self.vector.table[4]
            for (ev, evi), watched in self._watched.values():      # the tables' band rows follow
                ev[3] = bands[watched]

    def watched_table(self, watched, offsets):
        """``(ev, evi)``: the table of the watched functions (indices ``watched``) that the compiled DOP853 loop
        reads (:func:`pympc.dynamics._dop853.dop853_run`; ``offsets`` those of the slots' ``vT``, ``λ``, ``F`` in
        the mode's buffer), made once per set of functions and kept up to date with the dead band."""
        key = watched.tobytes()
        entry = self._watched.get(key)
        if entry is None:
            slot, cv, cl, cf, band = self.vector.table
            entry = self._watched[key] = ((np.ascontiguousarray(np.vstack([cv, cl, cf, band])[:, watched], dtype=float),
                                           np.concatenate([offsets, slot[watched]]).astype(np.int64)), watched.copy())
        return entry[0]

    def __len__(self):
        return len(self.kinds)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, i):
        ev, kind, k, band, mode = self.ev, self.kinds[i], self.slots[i], self.band, self.mode
        m, w = mode.motions[k], mode.walls[k]
        if kind == EventKind.SLIP_STOP:
            value = lambda a, s: m * a.vT[k]  # noqa: E731
        elif kind == EventKind.WALL_SWITCH:
            value = lambda a, s: w * s.lam[k] + band  # noqa: E731
        else:
            value = lambda a, s: ev.mu_s[k] * w * s.lam[k] - abs(s.F[k]) + band  # noqa: E731

        def f(t, x, *_):
            return value(*ev.evaluate(t, x, mode))
        f.terminal, f.direction, f.kind, f.slot = True, -1, kind, k
        return f


def lowest(vector, watched):
    """The smallest of the event functions ``watched`` as one terminal, downward event function for solve_ivp."""
    def lowest(t, x, *_):
        return vector(t, x)[watched].min()
    lowest.terminal, lowest.direction = True, -1
    return lowest
