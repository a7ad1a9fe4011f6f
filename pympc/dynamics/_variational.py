"""The variational right-hand side of a sensitivity run in one compiled call.

:meth:`pympc.dynamics.sensitivity.Sensitivities.rhs` evaluates the state's
vector field and, for every parameter θ_j, the central difference of the mode's
q̈ along the column (S_j, e_j): the run of θ_j + h_j at x + h_j S_j minus the
run of θ_j − h_j at x − h_j S_j, over 2 h_j.  When the mode's right-hand side is
compiled end to end (:func:`pympc.mechanics._kernels.general_mode_flat` on a
plan's flat arrays) for the system and for its 2 n_θ perturbed copies, the
2 n_θ + 1 evaluations are one call of :func:`variational_flat` on the plans'
arrays packed end to end (:func:`pack`), with the arithmetic of
``Sensitivities._diff`` (the same expressions, in the same order, so the
result is the Python one to round-off).  The same function is the right-hand
side of the compiled DOP853 loop (:func:`variational_run`, an entry point of
:func:`pympc.dynamics._dop853.dop853_steps`).

Packing: ``fl`` = the base plan's ``fl``, the plus plans', the minus plans',
then the steps h; ``il`` = the plans' ``il`` in the same order, then
``(n_θ, len(fl_k), len(il_k))``.  The base comes first, so the mode buffer the
loop's event check reads (offset ``il[6]`` of ``fl``) is the base evaluation's.
Division by zero gives inf/NaN (``error_model="numpy"``), as in the loop of
:mod:`pympc.dynamics._dop853`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._dop853 import _fun, dop853_steps

__all__ = ["pack", "variational_flat", "variational_forces", "variational_rhs", "variational_run"]


def pack(flats, h):
    """``(fl, il)`` of :func:`variational_flat` from the ``(fl, il)`` of the base plan, the plus plans and the
    minus plans (in the order of ``h``); None where the plans' arrays differ in length (the Python path then)."""
    lf, li = flats[0][0].size, flats[0][1].size
    if any(f.size != lf or i.size != li for f, i in flats):
        return None
    p = len(h)
    if len(flats) != 2 * p + 1:
        raise ValueError(f"{len(flats)} plans for {p} parameters: give the base, {p} plus and {p} minus plans")
    fl = np.concatenate([f for f, _ in flats] + [np.asarray(h, dtype=float)])
    il = np.concatenate([i for _, i in flats] + [np.array([p, lf, li], dtype=np.int64)]).astype(np.int64)
    return fl, il


@njit(cache=True, inline="always", error_model="numpy")
def _shifted(t, x, S, j, hj, sign, r, fl, il, lf, li, xs, out):
    """The mode right-hand side of packed plan ``r`` at ``x ± h_j S_j`` (``sign``; Sensitivities._diff's step:
    ``(−S) h = −(S h)`` exactly) into ``out``, with ``xs`` as the state buffer; False where the solve failed."""
    for i in range(S.shape[0]):
        xs[i] = x[i] + sign * S[i, j] * hj
    return _fun(t, xs, fl[r * lf:(r + 1) * lf], il[r * li:(r + 1) * li], out)


@njit(cache=True, inline="always", error_model="numpy")
def variational_flat(t, y, fl, il, out):
    """``out`` = the state derivative and ``dS`` of the augmented state ``y = (x, S)`` (x of 2n + 2 entries,
    then S of shape (2n, n_θ) row by row): ``dS[:n] = S[n:]``, ``dS[n:, j]`` the central difference of q̈ along
    (S_j, e_j).  False where a mode solve failed (the Python path says why)."""
    k = il.size
    p, lf, li = il[k - 3], il[k - 2], il[k - 1]
    n = il[0]
    n2, m = 2 * n, 2 * n + 2
    h = fl[(2 * p + 1) * lf:(2 * p + 1) * lf + p]
    if not _fun(t, y[:m], fl[:lf], il[:li], out[:m]):
        return False
    S = y[m:].reshape(n2, p)
    xs = y[:m].copy()
    a, b = np.empty(m), np.empty(m)
    for j in range(p):
        hj = h[j]
        if not (_shifted(t, y, S, j, hj, 1.0, 1 + j, fl, il, lf, li, xs, a)
                and _shifted(t, y, S, j, hj, -1.0, 1 + p + j, fl, il, lf, li, xs, b)):
            return False
        c = 0.5 / hj
        for i in range(n):
            out[m + (n + i) * p + j] = (a[n + i] - b[n + i]) * c
    for i in range(n * p):
        out[m + i] = y[m + n * p + i]
    return True


@njit(cache=True, error_model="numpy")
def variational_rhs(t, y, fl, il, out):
    """:func:`variational_flat` as a call from Python."""
    return variational_flat(t, y, fl, il, out)


@njit(cache=True, error_model="numpy")
def variational_forces(t, x, S, fl, il, olam, oF, out):
    """``out`` (2 ns × n_θ) = the central differences of the slots' (λ, F) along the columns (S_j, e_j) at the
    state ``x``, S of shape (2n, n_θ): ``Sensitivities._diff`` of the slot forces, with λ and F read from the
    perturbed plans' mode buffers (offsets ``olam``, ``oF`` of :meth:`CompiledModes.flat`).  False where a mode
    solve failed."""
    k = il.size
    p, lf, li = il[k - 3], il[k - 2], il[k - 1]
    m = 2 * il[0] + 2
    ns = out.shape[0] // 2
    h = fl[(2 * p + 1) * lf:(2 * p + 1) * lf + p]
    o = il[6]                                     # the mode buffer's offset in a plan's fl
    xs = x[:m].copy()
    a = np.empty(m)
    plus = np.empty(2 * ns)
    for j in range(p):
        hj = h[j]
        if not _shifted(t, x, S, j, hj, 1.0, 1 + j, fl, il, lf, li, xs, a):
            return False
        b = (1 + j) * lf + o
        for i in range(ns):
            plus[i], plus[ns + i] = fl[b + olam + i], fl[b + oF + i]
        if not _shifted(t, x, S, j, hj, -1.0, 1 + p + j, fl, il, lf, li, xs, a):
            return False
        b = (1 + p + j) * lf + o
        c = 0.5 / hj
        for i in range(ns):
            out[i, j] = (plus[i] - fl[b + olam + i]) * c
            out[ns + i, j] = (plus[ns + i] - fl[b + oF + i]) * c
    return True


@njit(cache=True, error_model="numpy")
def variational_run(t, y, f, h_abs, g_old, t_bound, rtol, atol, max_step, fl, il, ev, evi, K, told, hs, yold, F,
                    state):
    """:func:`pympc.dynamics._dop853.dop853_steps` on :func:`variational_flat` (the arguments of
    :func:`pympc.dynamics._dop853.dop853_run`, with ``fl``, ``il`` of :func:`pack`)."""
    dop853_steps(variational_flat, t, y, f, h_abs, g_old, t_bound, rtol, atol, max_step, fl, il, ev, evi, K, told, hs,
                 yold, F, state)


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
