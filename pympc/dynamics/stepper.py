"""The phase stepper: one smooth phase in a fixed mode, from its start to its first event or the end.

The contract (scipy's ``OdeSolver`` split: the driver loops, the stepper steps):
``PhaseStepper.advance(t, x, mode, t1, inside, funcs, assembly)`` → :class:`PhaseResult` — the samples of the
phase (its start, the requested times ``inside`` it, its end) and how it ended: at an event (its time, the
index of the event function, the state there), at ``t1``, or with the integrator failing.

A phase is integrated in windows with dense output (the compiled DOP853 loop of
:mod:`pympc.dynamics._dop853` where the mode's right-hand side is compiled end to end, else scipy's
``solve_ivp``), and each window's events are located by the :class:`~pympc.dynamics.locate.EventLocator`
on its dense output.  A phase in which the joints and the sticking slots lock every coordinate and nothing
is driven is not integrated: its state is constant (:meth:`EventLocator.frozen`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from . import _dop853 as dop853
from ._variational import variational_run
from .crossings import SPLIT
from .locate import lowest
from .modes import Mode
from .trajectory import SimulationStatus

__all__ = ["PhaseStepper", "PhaseResult", "phase_samples"]


@dataclass
class PhaseResult:
    """How one phase ended, and its samples.

    Attributes
    ----------
    pieces : list of (t, x, mode)
        The samples of the phase (times, states as columns, its mode), in pieces.
    time : float or None
        The event's time (None: the phase reached ``t1``, or failed).
    index : int or None
        The index of the event function that fired (``funcs[index]`` has its kind and slot).
    state : ndarray or None
        The state at the event.
    status, message
        :attr:`SimulationStatus.INTEGRATION_FAILED` and why, or None.
    """

    pieces: list = field(default_factory=list)
    time: float | None = None
    index: int | None = None
    state: np.ndarray | None = None
    status: SimulationStatus | None = None
    message: str | None = None


class PhaseStepper:
    """Advances the phases of one run (see the module).

    ``evaluator``: the run's :class:`~pympc.dynamics.evaluation.ModeEvaluator`; ``locator``: its
    :class:`~pympc.dynamics.locate.EventLocator`; ``settings``: the run's (``method``, ``rtol``, ``atol``,
    ``max_step``, ``stick_max_step``); ``sens``: the :class:`~pympc.dynamics.sensitivity.Sensitivities` carried
    along in the state, or None.  ``integrators`` collects which integrators ran."""

    def __init__(self, evaluator, locator, settings, sens=None, rheonomic=True):
        self.ev, self.locator, self.opts, self.sens = evaluator, locator, settings, sens
        self.rheonomic = rheonomic
        self.integrators = set()       # which integrators ran (Trajectory.info["integrator"])
        self._window_settings = None   # (compiled windows apply?, search step, rtol, atol, scan step) of the run

    def advance(self, t, x, mode, t1, inside, funcs, assembly):
        """The phase from (t, x) in ``mode`` to its first event or ``t1``; ``inside``: the requested sample
        times in (t, t1), ascending; ``funcs``: its event functions; ``assembly``: an assembly at (t, q) (its
        Jacobians are read, only by a phase with a sticking slot of a system without prescribed motions; None will
        do elsewhere)."""
        if mode.sticking and not self.rheonomic and self.ev.locked(assembly, mode):
            te, i = self.locator.frozen(t, t1, x, funcs)
            k = inside.size if te is None else int(inside.searchsorted(te, "left"))    # inside[inside < te]
            ts = np.empty(k + 2)
            ts[0], ts[1:k + 1], ts[k + 1] = t, inside[:k], t1 if te is None else te
            xs = np.empty((x.size, k + 2))
            xs[:] = x[:, None]
            return PhaseResult([(ts, xs, mode)], te, i, None if te is None else x)
        o = self.opts
        step = o["stick_max_step"] if mode.sticking else o["max_step"]
        out = PhaseResult()
        # integrated in chunks with dense output, the events searched inside every step
        # (solve_ivp's own event location only compares step ends, and takes a function that
        # starts at zero for a root): the first crossing ends the phase
        ta, xa, te = t, x, None
        compiled = self._compiled_window(mode, funcs)
        while True:
            tb = self.locator.window(ta, t1, 64)[0]
            ins = inside[inside.searchsorted(ta, "right"):inside.searchsorted(tb, "left")]   # in (ta, tb)
            start = ta == t or ta in inside
            window = self._window(compiled, ta, tb, t1, xa, ins, step, mode, start) if compiled is not None else None
            if window is not None:           # the whole window in one compiled call, its samples made there
                piece, tend, te, i, xe, xb = window
            else:
                piece = None
                # solve_ivp stops at the first step-end sign change of a function that starts positive
                # (a hint that ends the piece early); the scan decides
                # (solve_ivp takes a function that starts at zero for a root at the start: then again without)
                # one hint function, the lowest of the event functions watched (one evaluation per step)
                g0 = funcs.vector(ta, xa)
                for strict in (False, True):
                    watched = np.flatnonzero(g0 > 0) if strict else np.flatnonzero(g0 >= 0)
                    sol = self.integrate(mode, funcs, ta, tb, xa, np.append(ins, tb) if tb >= t1 else ins, step,
                                         watched)
                    tend, hint = tb, None
                    if sol.status == 1:
                        th, xh = sol.t_events[0][0], sol.y_events[0][0]
                        tend, hint = th, (th, watched, xh)      # (which function: read only when needed)
                        if th <= ta + 1e-9 * max(1.0, abs(ta)) and g0[_lowest_at(funcs, hint)] <= 0:
                            continue
                    break
                if sol.status == -1:
                    out.status = SimulationStatus.INTEGRATION_FAILED
                    out.message = f"solve_ivp failed after t = {ta:.9g}: {sol.message}"
                    out.pieces.append(phase_samples(sol, ta, xa, None, None, mode, start=start))
                    return out
                te, i, xe = self.locator.on_dense(sol, ta, tend, funcs)
                if te is None and hint is not None:
                    te, i, xe = hint[0], _lowest_at(funcs, hint), hint[2]
            if te is not None or tend >= t1:
                break
            if piece is None:
                piece, xb = phase_samples(sol, ta, xa, None, None, mode, start=start), sol.sol(tb)
            out.pieces.append(piece)
            ta, xa = tb, xb
        if te is None:
            out.pieces.append(piece if piece is not None else phase_samples(sol, ta, xa, None, None, mode, start=start))
            return out
        out.pieces.append(piece if piece is not None else phase_samples(sol, ta, xa, te, xe, mode, start=start))
        out.time, out.index, out.state = te, i, xe
        return out

    def _compiled_window(self, mode, funcs):
        """What :func:`pympc.dynamics._dop853.dop853_window` takes besides the window, for a phase in ``mode``
        whose windows it can do — DOP853 (the default) on a compiled mode, no sensitivities, the search of
        :meth:`EventLocator.on_dense` compiled (a time scale that is the same everywhere) — else None."""
        if self._window_settings is None:          # what depends on the run alone, once
            o, ev = self.opts, self.ev
            self._window_settings = (dop853.AVAILABLE and self.sens is None and ev._fast is not None
                                     and isinstance(o["method"], str) and o["method"] == "DOP853",
                                     self.locator.search_step(), float(o["rtol"]), float(o["atol"]),
                                     float(o["scan_step"]))
        applies, hstep = self._window_settings[:2]
        if not (applies and isinstance(mode, Mode)) or hstep is None:
            return None
        kernel = funcs.vector.kernel_table()        # (fl, il, tab) of the mode's functions, or None
        return None if kernel is None else (*kernel, hstep)

    def _window(self, compiled, ta, tb, t1, xa, ins, step, mode, start):
        """The window [ta, tb] of a phase by :func:`pympc.dynamics._dop853.dop853_window`: ``(piece, tend, te, i, xe,
        xb)`` as the Python code of :meth:`advance` finds them (``piece``: the window's samples as
        :func:`phase_samples` makes them, ``start`` whether they begin with (ta, xa); ``xb``: the state at ``tb``
        where no event ended the window), or None where that code must do it."""
        if not tb > ta:
            return None
        fl, il, tab, hstep = compiled
        _, _, rtol, atol, scan_step = self._window_settings
        t_eval = np.append(ins, tb) if tb >= t1 else ins
        code, te, i, tend, ts, xs, xe, xb = dop853.dop853_window(
            ta, np.ascontiguousarray(xa, dtype=float), tb, np.ascontiguousarray(t_eval, dtype=float),
            rtol, atol, float(step), fl, il, tab, scan_step, hstep, SPLIT, bool(start))
        self.ev.forget()                 # the compiled buffers hold other points
        if code == dop853.WINDOW_PYTHON:
            return None
        self.integrators.add("compiled DOP853")
        if code == dop853.WINDOW_END:
            return (ts, xs, mode), tend, None, None, None, xb
        return (ts, xs, mode), tend, te, int(i), xe, None

    def integrate(self, mode, funcs, ta, tb, xa, t_eval, max_step, watched):
        """One piece of a smooth phase from (ta, xa) to tb with dense output, stopping at the first step end
        where the lowest of the ``watched`` event functions has crossed zero downwards: ``solve_ivp``, or

        with DOP853 (the default) and a mode whose right-hand side is compiled end to end
        (:meth:`CompiledModes.flat`), the same steps are taken by the compiled loop of
        :func:`pympc.dynamics._dop853.integrate`, which also watches the event functions there; with
        sensitivities, when the perturbed systems' are too (:meth:`Sensitivities.flat`), on the compiled
        variational right-hand side."""
        o, ev, sens = self.opts, self.ev, self.sens
        hint = lowest(funcs.vector, watched) if watched.size else None
        flat = ev._fast.flat(mode) if (dop853.AVAILABLE and ev._fast is not None and isinstance(o["method"], str)
                                       and o["method"] == "DOP853" and isinstance(mode, Mode) and tb > ta) else None
        packed = sens.flat(mode) if sens is not None and flat is not None else None   # the variational rhs
        if flat is None or (sens is not None and packed is None):
            self.integrators.add(f"solve_ivp ({getattr(o['method'], '__name__', o['method'])})")
            return solve_ivp(ev.rhs if sens is None else sens.rhs, (ta, tb), xa, method=o["method"], rtol=o["rtol"],
                             atol=o["atol"] if sens is None else sens.atol(o["atol"]), t_eval=t_eval, args=(mode,),
                             max_step=max_step, dense_output=True, events=hint)
        fl, il, offsets = flat
        event = None
        if watched.size:              # the watched functions' table, made once per mode and set of functions
            event = funcs.watched_table(watched, offsets)
        ev.forget()             # the compiled buffers will hold other points
        self.integrators.add("compiled DOP853")
        if sens is not None:          # the same loop on the variational right-hand side, S in the error control
            return dop853.integrate(lambda t, y: sens.rhs_python(t, y, mode), ta, tb, xa, fl, il, o["rtol"],
                                    sens.atol(o["atol"]), max_step, t_eval, event, hint,
                                    stepper=(variational_run, *packed))
        return dop853.integrate(lambda t, x: ev.rhs(t, x, mode), ta, tb, xa, fl, il, o["rtol"], o["atol"],
                                max_step, t_eval, event, hint)


def _lowest_at(funcs, hint):
    """The index of the lowest of the watched event functions at the integrator's event ``hint`` = (t, watched, x)."""
    t, watched, x = hint
    return int(watched[np.argmin(funcs.vector(t, x)[watched])])


def phase_samples(sol, ta, xa, tb, xb, mode, start=True):
    """The samples of one smooth phase (or of one piece of it): its start (unless ``start`` is False: a
    piece that continues a phase), the requested times inside it, its end."""
    st = np.asarray(sol.t, dtype=float).reshape(-1)
    sy = np.asarray(sol.y, dtype=float).reshape(len(xa), st.size)
    # the sample times are sorted (t_eval): those in (ta, tb) are one slice
    lo = int(st.searchsorted(ta, "right"))
    hi = st.size if tb is None else max(lo, int(st.searchsorted(tb, "left")))
    i0 = 1 if start else 0
    k = i0 + hi - lo
    ts, xs = np.empty(k + (tb is not None)), np.empty((len(xa), k + (tb is not None)))
    ts[i0:k], xs[:, i0:k] = st[lo:hi], sy[:, lo:hi]
    if start:
        ts[0], xs[:, 0] = ta, xa
    if tb is not None:
        ts[k], xs[:, k] = tb, xb
    return ts, xs, mode
