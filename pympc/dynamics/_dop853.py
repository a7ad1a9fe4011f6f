"""scipy's DOP853 as one compiled loop, for mode right-hand sides that are compiled end to end.

``solve_ivp(method="DOP853")`` spends about 40 µs of Python per step (stage
bookkeeping, error norm, dense output, event bookkeeping) around a right-hand
side that costs a few µs when it is :func:`pympc.mechanics._kernels.general_mode_flat`.
:func:`integrate` runs the same algorithm — scipy's coefficient table
(``scipy.integrate._ivp.dop853_coefficients``, imported, not retyped), its
initial step (``select_initial_step``), its error norm and step-size control
(SAFETY, MIN_FACTOR, MAX_FACTOR, ``max_step``, the too-small-step failure) and
its dense output — in numba, calling the compiled right-hand side directly.
It takes the same steps as ``solve_ivp`` to round-off, and returns them as a
:class:`Dop853Solution` whose ``stack`` is the form
:class:`~pympc.dynamics.crossings.DenseStates` and
:func:`~pympc.dynamics._event_kernels.dop853_states` consume.

Events: the lowest of the watched event functions is evaluated at every step
end from the buffers the step's last stage left (no extra evaluation), and the
loop stops at the first downward sign change — solve_ivp's terminal,
direction −1 event; its root on that step's interpolant is found by brentq as
solve_ivp does (``xtol = rtol = 4 eps``).  The exact event location stays with
the caller's scan of the dense output.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.optimize import brentq

try:      # scipy's own table and step-control constants (private modules: without them, solve_ivp runs)
    from scipy.integrate._ivp import dop853_coefficients as _co
    from scipy.integrate._ivp.rk import MAX_FACTOR, MIN_FACTOR, SAFETY
    AVAILABLE = True
except ImportError:    # pragma: no cover
    from types import SimpleNamespace
    _co = SimpleNamespace(N_STAGES=12, N_STAGES_EXTENDED=16, INTERPOLATOR_POWER=7,
                          A=np.zeros((16, 16)), B=np.zeros(12), C=np.zeros(16), E3=np.zeros(13),
                          E5=np.zeros(13), D=np.zeros((4, 16)))
    MAX_FACTOR = MIN_FACTOR = SAFETY = 0.0
    AVAILABLE = False

from ..mechanics._kernels import _span, general_mode_flat
from ._event_kernels import curvature_bounds, dop853_states, event_values, flat_event_samples, may_cross

__all__ = ["integrate", "Dop853Solution", "Dop853Result", "scan_dense", "first_crossing_dense", "dop853_window"]

_NS = _co.N_STAGES                       # 12 stages of the step, 16 with the dense output's extra ones
_A = np.ascontiguousarray(_co.A, dtype=float)
_B = np.ascontiguousarray(_co.B, dtype=float)
_C = np.ascontiguousarray(_co.C, dtype=float)
_E3 = np.ascontiguousarray(_co.E3, dtype=float)
_E5 = np.ascontiguousarray(_co.E5, dtype=float)
_D = np.ascontiguousarray(_co.D, dtype=float)
_ORDER = 7                               # DOP853's error estimator order
_EPS = np.finfo(float).eps

# The helpers are inlined into the two compiled entry points (numba IR inlining): every compiled function that
# calls the mode solve links and generates its machine code again (about 2 s each on a first run).  Division
# by zero gives inf/NaN as in scipy's C and NumPy code (error_model="numpy"), not an exception.

# status codes of the compiled loop
FINISHED, EVENT, FULL, TOO_SMALL, RHS_FAILED = 0, 1, 2, -1, -2


@njit(cache=True, inline="always", error_model="numpy")
def _fun(t, y, fl, il, out):
    ok, bad, T, V, P = general_mode_flat(t, y, fl, il, out)
    return ok and bad == -1


@njit(cache=True, inline="always", error_model="numpy")
def _lowest(fl, il, ev, evi, vals):
    """The lowest watched event function at the point of the last evaluation (read from the mode's buffer):
    ``ev`` = (cv, cl, cf, band) rows, ``evi`` = (ovT, olam, oF, slot…)."""
    o = il[6]
    ns = evi[2] - evi[1]
    slot = evi[3:]
    event_values(_span(fl, o + evi[0], ns), _span(fl, o + evi[1], ns), _span(fl, o + evi[2], ns),
                 slot, ev[0], ev[1], ev[2], ev[3], vals)
    g = np.inf
    for i in range(vals.size):
        if vals[i] < g:
            g = vals[i]
    return g


@njit(cache=True, inline="always", error_model="numpy")
def _rms(x):
    """scipy's ``norm``: ``np.linalg.norm(x) / x.size ** 0.5`` (the same BLAS dot)."""
    return math.sqrt(np.dot(x, x)) / x.size ** 0.5


@njit(cache=True, inline="always", error_model="numpy")
def _stages(fun, t, y, h, first, last, K, fl, il, yst, d):
    """Stages ``first`` … ``last − 1``: ``K[s] = fun(t + C[s] h, y + (K[:s]ᵀ A[s, :s]) h)`` (scipy's
    expressions; ``yst``, ``d``: scratch of the state's length).  Returns −1, or the stage whose evaluation
    failed (``y`` then holds its point)."""
    for s in range(first, last):
        np.dot(K[:s].T, _A[s, :s], d)    # the BLAS call of np.dot, into d
        for i in range(y.size):          # y + d * h elementwise: numpy's two operations, one rounding each
            yst[i] = y[i] + d[i] * h
        if not fun(t + _C[s] * h, yst, fl, il, K[s]):
            y[:] = yst
            return s
    return -1


@njit(cache=True, inline="always", error_model="numpy")
def _put(state, t, h_abs, g, status, steps, nfev, t_fail):
    state[0], state[1], state[2], state[3], state[4], state[5], state[6] = t, h_abs, g, status, steps, nfev, t_fail


@njit(cache=True, error_model="numpy")
def dop853_run(t, y, f, h_abs, g_old, t_bound, rtol, atol, max_step, fl, il, ev, evi, K, told, hs, yold, F, state):
    """:func:`dop853_steps` on the mode right-hand side :func:`_fun`."""
    dop853_steps(_fun, t, y, f, h_abs, g_old, t_bound, rtol, atol, max_step, fl, il, ev, evi, K, told, hs, yold, F, state)


@njit(cache=True, inline="always", error_model="numpy")
def dop853_steps(fun, t, y, f, h_abs, g_old, t_bound, rtol, atol, max_step, fl, il, ev, evi, K, told, hs, yold, F,
                 state):
    """Steps of scipy's DOP853 from (t, y) (``f = fun(t, y)`` unless at the start) towards ``t_bound`` (ascending), at most
    ``told.size`` of them, each stored as its dense output (``told``, ``hs``, ``yold``, ``F``).

    The arithmetic is scipy's, expression by expression, with the same BLAS calls (numba's ``np.dot``
    calls the BLAS numpy calls): the steps are scipy's to the bit where the two libraries agree.
    ``h_abs`` ≤ 0 (the start): ``f`` and the lowest watched event function at t are evaluated, then
    scipy's initial step is selected.  ``g_old``: the lowest watched event function at t (NaN: none
    watched; ignored at the start).  On return ``y``, ``f`` hold the last state and derivative and ``state`` =
    (t, h_abs, g, status, steps, nfev, t_fail); status FINISHED, EVENT (downward sign change of the
    lowest event function in the last step), FULL (call again to go on), TOO_SMALL, RHS_FAILED (``y``
    holds the point where the right-hand side failed, at ``t_fail``).
    """
    ny = y.size
    nfev = 0
    vals = np.empty(evi.size - 3)
    if h_abs <= 0.0:                                     # the start: f = fun(t, y), the events there
        nfev += 1
        if not fun(t, y, fl, il, f):
            _put(state, t, h_abs, g_old, RHS_FAILED, 0, nfev, t)
            return
        g_old = _lowest(fl, il, ev, evi, vals) if vals.size else np.nan
    watch = not math.isnan(g_old)
    if h_abs <= 0.0:                                     # scipy's select_initial_step
        interval = abs(t_bound - t)
        scale = atol + np.abs(y) * rtol
        d0, d1 = _rms(y / scale), _rms(f / scale)
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h0 = min(h0, interval)
        y1 = y + h0 * f
        nfev += 1
        if not fun(t + h0, y1, fl, il, K[1]):
            y[:] = y1
            _put(state, t, h_abs, g_old, RHS_FAILED, 0, nfev, t + h0)
            return
        d2 = _rms((K[1] - f) / scale) / h0
        h1 = max(1e-6, h0 * 1e-3) if d1 <= 1e-15 and d2 <= 1e-15 else (0.01 / max(d1, d2)) ** (1 / (_ORDER + 1))
        h_abs = min(100 * h0, h1, interval, max_step)
    exponent = -1 / (_ORDER + 1)
    Ks = K[:_NS + 1]
    # scratch of the step (numpy's expressions below elementwise, one rounding per operation as there; the
    # np.dot calls are the same BLAS calls, into these buffers)
    yst, d, ynew, scale, err = np.empty(ny), np.empty(ny), np.empty(ny), np.empty(ny), np.empty(ny)
    dD = np.empty((_D.shape[0], ny))
    steps = 0
    status = FULL
    while steps < told.size:
        min_step = 10 * abs(np.nextafter(t, np.inf) - t)
        if h_abs > max_step:
            h_abs = max_step
        elif h_abs < min_step:
            h_abs = min_step
        rejected = False
        while True:                                      # scipy's RungeKutta._step_impl
            if h_abs < min_step:
                _put(state, t, h_abs, g_old, TOO_SMALL, steps, nfev, t)
                return
            h = h_abs
            t_new = t + h
            if t_new - t_bound > 0:
                t_new = t_bound
            h = t_new - t
            h_abs = abs(h)
            K[0] = f
            s = _stages(fun, t, y, h, 1, _NS, K, fl, il, yst, d)       # rk_step
            nfev += _NS - 1 if s < 0 else s
            if s >= 0:
                _put(state, t, h_abs, g_old, RHS_FAILED, steps, nfev, t + _C[s] * h)
                return
            np.dot(K[:_NS].T, _B, d)                     # y_new = y + h * (K[:NS]ᵀ B)
            for i in range(ny):
                ynew[i] = y[i] + h * d[i]
            nfev += 1
            if not fun(t + h, ynew, fl, il, K[_NS]):
                y[:] = ynew
                _put(state, t, h_abs, g_old, RHS_FAILED, steps, nfev, t + h)
                return
            for i in range(ny):                          # atol + np.maximum(|y|, |y_new|) * rtol
                a, b = abs(y[i]), abs(ynew[i])
                scale[i] = atol[i] + (a if a >= b or math.isnan(a) else b) * rtol
            np.dot(Ks.T, _E5, d)                         # DOP853._estimate_error_norm: err5, err3
            np.dot(Ks.T, _E3, err)
            for i in range(ny):
                d[i] /= scale[i]
                err[i] /= scale[i]
            r5, r3 = math.sqrt(np.dot(d, d)), math.sqrt(np.dot(err, err))
            e5, e3 = r5 * r5, r3 * r3
            if e5 == 0 and e3 == 0:
                error_norm = 0.0
            else:
                error_norm = abs(h) * e5 / math.sqrt((e5 + 0.01 * e3) * ny)
            if error_norm < 1:
                factor = MAX_FACTOR if error_norm == 0 else min(MAX_FACTOR, SAFETY * error_norm ** exponent)
                if rejected:
                    factor = min(1.0, factor)
                h_abs *= factor
                break
            shrink = SAFETY * error_norm ** exponent
            h_abs *= shrink if shrink > MIN_FACTOR else MIN_FACTOR     # max(MIN_FACTOR, nan) is MIN_FACTOR
            rejected = True
        g_new = _lowest(fl, il, ev, evi, vals) if watch else g_old   # the buffers hold (t_new, y_new) now
        s = _stages(fun, t, y, h, _NS + 1, K.shape[0], K, fl, il, yst, d)   # DOP853._dense_output_impl
        nfev += K.shape[0] - _NS - 1 if s < 0 else s - _NS
        if s >= 0:
            _put(state, t, h_abs, g_old, RHS_FAILED, steps, nfev, t + _C[s] * h)
            return
        Fk = F[steps]
        np.dot(_D, K, dD)
        for i in range(ny):
            delta_y = ynew[i] - y[i]
            Fk[0, i] = delta_y
            Fk[1, i] = h * K[0, i] - delta_y
            Fk[2, i] = 2 * delta_y - h * (K[_NS, i] + K[0, i])
            for r in range(dD.shape[0]):
                Fk[3 + r, i] = h * dD[r, i]
        told[steps] = t
        hs[steps] = t_new - t
        yold[steps] = y
        steps += 1
        t = t_new
        y[:] = ynew
        f[:] = K[_NS]
        if watch and g_old >= 0 and g_new <= 0:
            status = EVENT
            g_old = g_new
            break
        g_old = g_new
        if t - t_bound >= 0:
            status = FINISHED
            break
    _put(state, t, h_abs, g_old, status, steps, nfev, t)


class Dop853Solution:
    """The dense output of the steps of :func:`integrate`, as scipy's ``OdeSolution`` of DOP853 steps:
    ``sol(t)`` → state (n,), ``sol(ts)`` → (n, len(ts)); the segment of a time is the one scipy picks
    (a breakpoint belongs to the step before it).

    Attributes
    ----------
    ts : ndarray
        Breakpoints (the start, the step ends; the last one is the event root when the run stopped at one).
    stack : tuple
        ``(ts, t_old, h, y_old, F)`` as :class:`~pympc.dynamics.crossings.DenseStates` holds them.
    """

    def __init__(self, ts, t_old, h, y_old, F):
        self.ts = self.ts_sorted = ts
        self.stack = (ts, t_old, h, y_old, F)

    def __call__(self, t):
        ts = np.atleast_1d(np.asarray(t, dtype=float))
        X = np.empty((ts.size, self.stack[3].shape[1]))
        dop853_states(np.ascontiguousarray(ts), *self.stack, X)
        return X[0] if np.ndim(t) == 0 else X.T


class Dop853Result:
    """What the driver reads of a ``solve_ivp`` result: ``t``, ``y`` (at ``t_eval``), ``sol``, ``status``
    (0 end reached, 1 stopped at the event, −1 failed), ``message``, ``t_events``, ``y_events``, ``nfev``."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


_CHUNK = 64


def integrate(fun_fail, t0, t_bound, y0, fl, il, rtol, atol, max_step, t_eval, event=None, lowest=None,
              stepper=None):
    """DOP853 from ``y0`` at ``t0`` to ``t_bound`` (ascending) on the compiled right-hand side (``fl``, ``il``
    of :func:`~pympc.mechanics._kernels.pack_flat`): ``solve_ivp(fun, (t0, t_bound), y0, method="DOP853",
    rtol=rtol, atol=atol, max_step=max_step, t_eval=t_eval, dense_output=True, events=lowest)`` with
    ``lowest`` terminal and downward.

    Parameters
    ----------
    fun_fail : callable
        ``fun_fail(t, y)``: the right-hand side in Python, called where the compiled one failed
        (it raises, saying why).
    event : tuple, optional
        ``(ev, evi)``: the watched event functions as :func:`dop853_run` reads them.
    lowest : callable, optional
        ``lowest(t, y)``: the same function in Python (the root on the last step is found with it).
    stepper : tuple, optional
        ``(run, sfl, sil)``: another compiled entry point of :func:`dop853_steps` (the signature of
        :func:`dop853_run`) and the arrays it takes in place of ``fl``, ``il``, whose right-hand side
        writes all of ``y`` (e.g. :func:`pympc.dynamics._variational.variational_run`); ``fl``, ``il``
        stay those of the mode for the event root, and ``_lowest`` reads the mode buffer at ``sil[6]``.

    Returns
    -------
    Dop853Result
    """
    y = np.array(y0, dtype=float)
    ny = y.size
    run, sfl, sil = (dop853_run, fl, il) if stepper is None else stepper
    if stepper is None and ny != 2 * il[0] + 2:      # the compiled right-hand side writes 2n + 2 entries (unchecked)
        raise ValueError(f"the state has {ny} entries, the compiled right-hand side {2 * il[0] + 2}")
    if not t_bound > t0:
        raise ValueError(f"the compiled DOP853 integrates forward only: t_bound = {t_bound} <= t0 = {t0}")
    rtol = max(float(rtol), 100 * _EPS)          # scipy's validate_tol
    atol = np.full(ny, float(atol)) if np.ndim(atol) == 0 else np.broadcast_to(np.asarray(atol, dtype=float), (ny,)).copy()
    f = np.empty(ny)
    K = np.empty((_co.N_STAGES_EXTENDED, ny))
    ev, evi = event if event is not None else (np.zeros((4, 0)), np.zeros(3, np.int64))
    g = math.nan
    state = np.empty(7)
    h_abs, chunks, nfev = 0.0, [], 0
    t = t0
    while True:
        told, hs = np.empty(_CHUNK), np.empty(_CHUNK)
        yold, F = np.empty((_CHUNK, ny)), np.empty((_CHUNK, _co.INTERPOLATOR_POWER, ny))
        run(t, y, f, h_abs, g, t_bound, rtol, atol, max_step, sfl, sil, ev, evi, K, told, hs, yold, F, state)
        t, h_abs, g, status, k, dn = state[0], state[1], state[2], int(state[3]), int(state[4]), int(state[5])
        nfev += dn
        chunks.append((told[:k], hs[:k], yold[:k], F[:k]))
        if status == RHS_FAILED:
            fun_fail(state[6], y)                # raises
            raise AssertionError("the compiled right-hand side failed where the Python one did not")  # pragma: no cover
        if status != FULL:
            break
    told, hs, yold, F = (np.concatenate(c) if len(chunks) > 1 else c[0] for c in zip(*chunks))
    ts = np.append(told, t)
    t_events, y_events, end = None, None, t
    if status == TOO_SMALL:
        message, code = "Required step size is less than spacing between numbers.", -1
    elif status == EVENT:
        # solve_ivp's handle_events: the root of the event function on the last step's interpolant
        last = (np.array([told[-1], t]), told[-1:], hs[-1:], yold[-1:], F[-1:])
        tab = (int(evi[0]), int(evi[1]), int(evi[2]), evi[3:], ev[0], ev[1], ev[2], ev[3])
        root, ok = brentq_dense(-1, told[-1], t, 4 * _EPS, 4 * _EPS, *last, fl, il, tab, np.empty((1, ev.shape[1])))
        if not ok:                 # scipy's brentq says why
            step = Dop853Solution(*last)
            root = brentq(lambda s: lowest(s, step(s)), told[-1], t, xtol=4 * _EPS, rtol=4 * _EPS)
        ye = np.empty((1, ny))
        dop853_states(np.array([root]), *last, ye)          # the state at the root, on the last step
        t_events, y_events = [np.array([root])], [ye]
        ts[-1] = end = root
        message, code = "A termination event occurred.", 1
    else:
        message, code = "The solver successfully reached the end of the integration interval.", 0
    sol = Dop853Solution(ts, told, hs, yold, F)
    te = np.asarray(t_eval, dtype=float)
    te = te[te <= end] if te.size else te
    return Dop853Result(t=te, y=sol(te) if te.size else np.empty((ny, 0)), sol=sol, status=code, message=message,
                        t_events=t_events, y_events=y_events, nfev=nfev, success=code >= 0)


# ---------------------------------------------------------------- the event search on a stack of steps
# crossings._scan and scipy's brentq (on G(s)[i], the event functions at the dense state) in one compiled call
# when the functions are those of a compiled mode and the states a stack of DOP853 steps: the same samples,
# the same arithmetic, scipy's brentq.c iteration for the roots.

SCAN_OK, SCAN_PYTHON = 0, 1          # found or not found / something the Python search must redo (it raises)


@njit(cache=True, inline="always", error_model="numpy")
def _dense_values(ts, stack_ts, t_old, h, y_old, F, fl, il, tab, G):
    """The event functions (table ``tab`` = (ovT, olam, oF, slot, cv, cl, cf, band)) at the dense states
    at ``ts`` into the rows of ``G``; −1, or the first sample whose mode solve failed."""
    X = np.empty((ts.size, y_old.shape[1]))
    dop853_states(ts, stack_ts, t_old, h, y_old, F, X)
    ovT, olam, oF, slot, cv, cl, cf, band = tab
    return flat_event_samples(ts, X, fl, il, ovT, olam, oF, slot, cv, cl, cf, band, G)


@njit(cache=True, inline="always", error_model="numpy")
def _dense_value(s, k, stack_ts, t_old, h, y_old, F, fl, il, tab, buf):
    """Function ``k`` at time ``s`` (k < 0: the lowest of them); NaN if the solve failed."""
    ts = np.empty(1)
    ts[0] = s
    if _dense_values(ts, stack_ts, t_old, h, y_old, F, fl, il, tab, buf) >= 0:
        return np.nan
    if k >= 0:
        return buf[0, k]
    return buf[0].min()


@njit(cache=True, inline="always", error_model="numpy")
def brentq_dense(k, xa, xb, xtol, rtol, stack_ts, t_old, h, y_old, F, fl, il, tab, buf):
    """scipy's ``brentq`` (its C iteration, ``maxiter`` = 100) on :func:`_dense_value`; returns
    (root, ok): not ok where scipy would raise (a NaN value, no sign change, no convergence)."""
    xpre, xcur = xa, xb
    xblk = fblk = spre = scur = 0.0
    fpre = _dense_value(xpre, k, stack_ts, t_old, h, y_old, F, fl, il, tab, buf)
    fcur = _dense_value(xcur, k, stack_ts, t_old, h, y_old, F, fl, il, tab, buf)
    if math.isnan(fpre) or math.isnan(fcur):
        return 0.0, False
    if fpre == 0:
        return xpre, True
    if fcur == 0:
        return xcur, True
    if (math.copysign(1.0, fpre) < 0) == (math.copysign(1.0, fcur) < 0):     # signbit(fpre) == signbit(fcur)
        return 0.0, False
    for _ in range(100):
        if fpre != 0 and fcur != 0 and (math.copysign(1.0, fpre) < 0) != (math.copysign(1.0, fcur) < 0):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur, True
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:                         # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:                                    # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        if abs(scur) > delta:
            xcur += scur
        else:
            xcur += delta if sbis > 0 else -delta
        fcur = _dense_value(xcur, k, stack_ts, t_old, h, y_old, F, fl, il, tab, buf)
        if math.isnan(fcur):
            return 0.0, False
    return xcur, False


@njit(cache=True, error_model="numpy")
def scan_dense(a, ga, b, gb, bound, dt_min, split, stack_ts, t_old, h, y_old, F, fl, il, tab):
    """:func:`pympc.dynamics.crossings._scan` compiled: the first crossing in [a, b], bisected in ``split``
    parts where the curvature bound allows a zero, the roots by :func:`brentq_dense` (xtol 1e-15,
    rtol 4 eps).  Returns (t, index, status): index −1 when there is none; status SCAN_PYTHON when the
    Python search must redo it (a failed solve, a root scipy's brentq would not return, a deep stack)."""
    m = ga.size
    cap = 64 * split
    SA, SB = np.empty(cap), np.empty(cap)
    GA, GB = np.empty((cap, m)), np.empty((cap, m))
    SA[0], SB[0], GA[0], GB[0] = a, b, ga, gb
    top = 1
    buf = np.empty((1, m))
    ts = np.empty(split + 1)
    vals = np.empty((split + 1, m))
    rtol = 4 * np.finfo(np.float64).eps
    while top > 0:
        top -= 1
        a, b = SA[top], SB[top]
        ga, gb = GA[top].copy(), GB[top].copy()
        w = b - a
        anyp = False
        same = True
        for k in range(m):
            p = may_cross(ga[k], gb[k], bound[k], w)
            single = p and gb[k] < 0 and abs(gb[k] - ga[k]) > bound[k] * w * w
            anyp = anyp or p
            same = same and single == p
        if not anyp:
            continue
        if w <= dt_min or same:
            best, bi = np.inf, -1
            for k in range(m):
                if ga[k] >= 0 and gb[k] < 0:
                    r, ok = brentq_dense(k, a, b, 1e-15, rtol, stack_ts, t_old, h, y_old, F, fl, il, tab, buf)
                    if not ok:
                        return 0.0, -1, SCAN_PYTHON
                    if r < best:
                        best, bi = r, k
            if bi >= 0:
                return best, bi, SCAN_OK
            continue
        step = (b - a) / split                       # np.linspace(a, b, split + 1), b at the end
        for j in range(split + 1):
            ts[j] = j * step + a
        ts[split] = b
        vals[0], vals[split] = ga, gb
        if _dense_values(ts[1:split], stack_ts, t_old, h, y_old, F, fl, il, tab, vals[1:split]) >= 0:
            return 0.0, -1, SCAN_PYTHON
        if top + split > cap:
            return 0.0, -1, SCAN_PYTHON
        for j in range(split - 1, -1, -1):
            ww = ts[j + 1] - ts[j]
            keep = False
            for k in range(m):
                if may_cross(vals[j, k], vals[j + 1, k], bound[k], ww):
                    keep = True
            if keep:
                SA[top], SB[top], GA[top], GB[top] = ts[j], ts[j + 1], vals[j], vals[j + 1]
                top += 1
    return 0.0, -1, SCAN_OK


@njit(cache=True, error_model="numpy")
def first_crossing_dense(ta, tb, cap, hstep, extra, dt_min, split, stack_ts, t_old, h, y_old, F, fl, il, tab):
    """:func:`pympc.dynamics.crossings.first_crossing` compiled, for the event functions of a compiled mode
    (table ``tab`` as :func:`scan_dense` takes it) on a stack of DOP853 steps, with the windows of a time
    scale that is the same everywhere (:meth:`~pympc.dynamics.crossings.TimeScale.window` with a fixed τ:
    ``hstep`` = min(``cap``, τ/8), 64 intervals): the same windows, sample times (``extra`` merged in, the
    same ``dt_min`` thinning), curvature bounds (:func:`curvature_bounds`) and interval searches
    (:func:`scan_dense`), left to right.  Returns (t, index, status) as :func:`scan_dense` does: index −1
    when no function crosses zero downwards on [ta, tb]; status SCAN_PYTHON when the Python search must
    redo it (a failed solve, or :func:`scan_dense` asked for it)."""
    m = tab[3].size
    if m == 0:
        return 0.0, -1, SCAN_OK
    t0 = ta
    intervals = 8
    while t0 < tb:
        hi = min(tb, t0 + 64 * cap)                  # TimeScale.window, τ fixed
        end = hi if t0 + 64 * hstep >= hi else min(t0 + 64 * hstep, tb)
        end = min(end, t0 + intervals * hstep)
        intervals = min(2 * intervals, 64)
        n = max(4, int(math.ceil((end - t0) / hstep)))
        width = (end - t0) / n
        inner = 0
        for e in range(extra.size):
            if extra[e] > t0 and extra[e] < end:
                inner += 1
        ts = np.empty(n + 1 + inner)
        for j in range(n + 1):                       # np.arange(n + 1.0) * width + t0
            ts[j] = float(j) * width + t0
        if inner:
            r = n + 1
            for e in range(extra.size):
                if extra[e] > t0 and extra[e] < end:
                    ts[r] = extra[e]
                    r += 1
            ts = np.unique(ts)
        if inner or width <= dt_min:                 # drop a sample within dt_min of the one before it
            keep = np.empty(ts.size, np.bool_)
            keep[0] = True
            for j in range(1, ts.size):
                keep[j] = ts[j] - ts[j - 1] > dt_min
            ts = ts[keep]
        ts[ts.size - 1] = end
        vals = np.empty((ts.size, m))
        if _dense_values(ts, stack_ts, t_old, h, y_old, F, fl, il, tab, vals) >= 0:
            return 0.0, -1, SCAN_PYTHON
        bounds = np.empty((ts.size - 1, m))
        open_ = curvature_bounds(ts, vals, bounds)
        for i in range(ts.size - 1):
            if open_[i]:
                t, k, status = scan_dense(ts[i], vals[i], ts[i + 1], vals[i + 1], bounds[i], dt_min, split,
                                          stack_ts, t_old, h, y_old, F, fl, il, tab)
                if status != SCAN_OK:
                    return 0.0, -1, status
                if k >= 0:
                    return t, k, SCAN_OK
        t0 = end
    return 0.0, -1, SCAN_OK


# ---------------------------------------------------------------- a window of a phase in one call
# PhaseStepper.advance's window (the event functions at its start, the watched ones, :func:`integrate`, the root
# of its event, the search of :meth:`EventLocator.on_dense` and the samples) compiled, for a compiled mode and a
# time scale that is the same everywhere: the same calls of the same kernels in the same order, so the same
# numbers; whatever the Python code would do differently (a failed solve, the integrator failing, an event at
# the start, scipy's brentq or the Python search needed) makes it return WINDOW_PYTHON, and the window is done
# again by the Python code, which says why.

WINDOW_PYTHON, WINDOW_END, WINDOW_EVENT = -1, 0, 1
_NSE, _POWER = _co.N_STAGES_EXTENDED, _co.INTERPOLATOR_POWER


@njit(cache=True, error_model="numpy")
def first_crossing_frozen(ta, tb, cap, hstep, dt_min, split, x, fl, il, tab):
    """:func:`first_crossing_dense` on ``[ta, tb]`` of a phase whose state ``x`` is constant
    (:meth:`~pympc.dynamics.locate.EventLocator.frozen`): on the stack of one DOP853 step whose polynomial is
    zero (``y = 0 + x``, exactly), without extra sample times."""
    ny = x.size
    ends, t_old, h = np.empty(2), np.empty(1), np.ones(1)
    ends[0], ends[1], t_old[0] = ta, tb, ta
    y_old = np.empty((1, ny))
    for c in range(ny):
        y_old[0, c] = x[c]
    return first_crossing_dense(ta, tb, cap, hstep, np.empty(0), dt_min, split, ends, t_old, h, y_old,
                                np.zeros((1, _POWER, ny)), fl, il, tab)


@njit(cache=True, error_model="numpy")
def dop853_window(ta, xa, tb, t_eval, rtol, atol, max_step, fl, il, tab, cap, hstep, split, start):
    """One window [ta, tb] of a phase from the state ``xa`` (``t_eval`` the sample times of the window, ``tab`` =
    (ovT, olam, oF, slot, cv, cl, cf, band) the phase's event functions, ``cap``/``hstep`` the scan's step cap
    and step, ``split`` :data:`~pympc.dynamics.crossings.SPLIT`): ``(code, te, index, tend, ts, xs, xe, xb)`` —
    WINDOW_EVENT and the event (te, index, state xe) found in it, or WINDOW_END (none before ``tend``; ``xb`` the
    dense output at ``tb``, where a next window starts), with the samples of the window as
    :func:`pympc.dynamics.stepper.phase_samples` makes them of the dense output (``ts``, the states ``xs`` as
    columns: ``ta`` and ``xa`` first when ``start``, the sample times in (ta, te), the event last);
    WINDOW_PYTHON: the Python code must do this window."""
    ovT, olam, oF, slot, cv, cl, cf, band = tab
    m, ny = slot.size, xa.size
    o = il[6]
    ns = oF - olam
    nothing = np.empty(0)
    fail = (WINDOW_PYTHON, 0.0, -1, 0.0, nothing, np.empty((ny, 0)), nothing, nothing)
    f = np.empty(ny)
    g0 = np.empty(m)
    if not _fun(ta, xa, fl, il, f):                        # funcs.vector(ta, xa)
        return fail
    event_values(fl[o + ovT:o + ovT + ns], fl[o + olam:o + olam + ns], fl[o + oF:o + oF + ns], slot, cv, cl, cf,
                 band, g0)
    nw = 0
    for k in range(m):
        if g0[k] >= 0:
            nw += 1
    watched = np.empty(nw, np.int64)                       # np.flatnonzero(g0 >= 0)
    ev = np.empty((4, nw))                                 # EventFunctions.watched_table
    evi = np.empty(3 + nw, np.int64)
    evi[0], evi[1], evi[2] = ovT, olam, oF
    j = 0
    for k in range(m):
        if g0[k] >= 0:
            watched[j] = k
            ev[0, j], ev[1, j], ev[2, j], ev[3, j] = cv[k], cl[k], cf[k], band[k]
            evi[3 + j] = slot[k]
            j += 1
    # integrate: dop853_run in chunks of _CHUNK steps, as there
    y = xa.copy()
    rtol = max(rtol, 100 * _EPS)
    atol_ = np.full(ny, atol)
    K = np.empty((_NSE, ny))
    state = np.empty(7)
    size = _CHUNK
    told, hs = np.empty(size), np.empty(size)
    yold, F = np.empty((size, ny)), np.empty((size, _POWER, ny))
    k = 0
    t, h_abs, g = ta, 0.0, np.nan
    while True:
        if k + _CHUNK > size:                              # room for another chunk
            size *= 2
            told2, hs2 = np.empty(size), np.empty(size)
            yold2, F2 = np.empty((size, ny)), np.empty((size, _POWER, ny))
            told2[:k] = told[:k]
            hs2[:k] = hs[:k]
            yold2[:k] = yold[:k]
            F2[:k] = F[:k]
            told, hs, yold, F = told2, hs2, yold2, F2
        dop853_steps(_fun, t, y, f, h_abs, g, tb, rtol, atol_, max_step, fl, il, ev, evi, K, told[k:k + _CHUNK],
                     hs[k:k + _CHUNK], yold[k:k + _CHUNK], F[k:k + _CHUNK], state)
        t, h_abs, g, status = state[0], state[1], state[2], int(state[3])
        k += int(state[4])
        if status == RHS_FAILED or status == TOO_SMALL:
            return fail
        if status != FULL:
            break
    told, hs, yold, F = told[:k].copy(), hs[:k].copy(), yold[:k].copy(), F[:k].copy()
    ts = np.empty(k + 1)
    ts[:k] = told
    ts[k] = t
    end = t
    ye = np.empty((1, ny))
    if status == EVENT:           # the root of the lowest watched function on the last step's interpolant
        last_ts = np.empty(2)
        last_ts[0], last_ts[1] = told[k - 1], t
        etab = (evi[0], evi[1], evi[2], evi[3:], ev[0], ev[1], ev[2], ev[3])
        root, ok = brentq_dense(-1, told[k - 1], t, 4 * _EPS, 4 * _EPS, last_ts, told[k - 1:k], hs[k - 1:k],
                                yold[k - 1:k], F[k - 1:k], fl, il, etab, np.empty((1, nw)))
        if not ok:
            return fail
        rt = np.empty(1)
        rt[0] = root
        dop853_states(rt, last_ts, told[k - 1:k], hs[k - 1:k], yold[k - 1:k], F[k - 1:k], ye)
        ts[k] = end = root
        if root <= ta + 1e-9 * max(1.0, abs(ta)):          # an event at the start: the Python code decides
            return fail
    # the first event on the dense output (EventLocator.on_dense)
    dt_min = 1e-11 * max(1.0, abs(ta), abs(end))
    te, i, found = first_crossing_dense(ta, end, cap, hstep, ts, dt_min, split, ts, told, hs, yold, F, fl, il, tab)
    if found != SCAN_OK:
        return fail
    xe = np.empty(ny)
    code = WINDOW_EVENT
    if i >= 0:
        one = np.empty(1)
        one[0] = te
        X1 = np.empty((1, ny))
        dop853_states(one, ts, told, hs, yold, F, X1)
        xe[:] = X1[0]
    elif status == EVENT:         # the integrator's event: the lowest watched function there (np.argmin)
        te = end
        if not _fun(te, ye[0], fl, il, f):
            return fail
        vals = np.empty(m)
        event_values(fl[o + ovT:o + ovT + ns], fl[o + olam:o + olam + ns], fl[o + oF:o + oF + ns], slot, cv, cl,
                     cf, band, vals)
        best = 0
        for j in range(1, nw):
            vb, vj = vals[watched[best]], vals[watched[j]]
            if math.isnan(vb):
                break
            if math.isnan(vj) or vj < vb:
                best = j
        i = watched[best]
        xe[:] = ye[0]
    else:
        code = WINDOW_END
    nk = 0
    for r in range(t_eval.size):
        if t_eval[r] <= end:
            nk += 1
    st = np.empty(nk)
    r2 = 0
    for r in range(t_eval.size):
        if t_eval[r] <= end:
            st[r2] = t_eval[r]
            r2 += 1
    Y = np.empty((nk, ny))
    if nk:
        dop853_states(st, ts, told, hs, yold, F, Y)
    # the window's samples (phase_samples): the start, the sample times in (ta, te), the event
    lo, hi = 0, nk
    for r in range(nk):
        if st[r] <= ta:
            lo = r + 1
    if code == WINDOW_EVENT:
        hi = lo
        for r in range(lo, nk):
            if st[r] < te:
                hi = r + 1
    i0 = 1 if start else 0
    kk = i0 + hi - lo
    ends = 1 if code == WINDOW_EVENT else 0
    pts, pxs = np.empty(kk + ends), np.empty((ny, kk + ends))
    for r in range(lo, hi):
        pts[i0 + r - lo] = st[r]
        for c in range(ny):
            pxs[c, i0 + r - lo] = Y[r, c]
    if start:
        pts[0] = ta
        for c in range(ny):
            pxs[c, 0] = xa[c]
    xb = nothing
    if ends:
        pts[kk] = te
        for c in range(ny):
            pxs[c, kk] = xe[c]
    else:                         # the state at tb, where the next window starts (the dense output there)
        one = np.empty(1)
        one[0] = tb
        X1 = np.empty((1, ny))
        dop853_states(one, ts, told, hs, yold, F, X1)
        xb = X1[0].copy()
    return code, te, i, end, pts, pxs, xe, xb


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
