"""The event HLCP of a small system built, solved by Lemke's method, read and enumerated in one compiled call.

:func:`solved_event` chains the kernels a transition used to call one by one from Python
(:func:`~pympc.dynamics._transition.dense_event`, :func:`~pympc.complementarity._kernel.solve_hlcp_default`,
:func:`~pympc.dynamics._transition.mode_of_point` of Lemke's point and, where the transition enumerates the
event HLCP, :func:`~pympc.dynamics._event_sets.small_solution_set` or
:func:`~pympc.dynamics._event_sets.walked_solution_set`): the same kernels on the same arrays, so the same
numbers, with one crossing from Python instead of four and their glue.  What each of them declines is declined
here too, and the caller (:func:`pympc.dynamics.events.solved_event_problem`) takes the Python path for it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..complementarity._kernel import solve_hlcp_default, solve_lcp_form_default
from ._event_sets import _declined, small_solution_set, walked_solution_set
from ._transition import EVENT_OK, dense_event, mode_of_point

__all__ = ["solved_event", "WALK_FROM"]

WALK_FROM = 7
"""From this many pairs the solution set is :func:`walked_solution_set`'s, below it :func:`small_solution_set`'s
(``enumeration.WALK_POINTS_FROM``, checked by the tests)."""


@njit(cache=True, nogil=True)
def solved_event(M, md, J, WN, WT, h, w, gdot, g, holonomic, bN, vN, gN, bT, vT, alpha, beta, dirs, mu, mu_s, cand,
                 previous_walls, supports):
    """:func:`~pympc.dynamics._transition.dense_event` of the arguments up to ``cand``, Lemke's compiled default
    call on it (where A is not diagonal), the mode its point selects (``previous_walls``: the walls of slots
    whose force is zero; the tolerance :attr:`~pympc.dynamics.events.EventProblem.tol` of the problem) and,
    when ``supports`` has rows (``enumeration._SUPPORTS`` of the problem's pairs), its solution set.

    Returns ``(code, (A, B, c, qdd0, Q, diagonal, tol), (decided, code, pivots, el, ll, point, residual,
    negative), read, (set_decided, P, near))``: ``code`` :data:`EVENT_OK` or why the build declined (nothing
    else meaningful then); Lemke's tuple is ``solve_hlcp_default``'s (``decided`` False, too, where A is
    diagonal: not tried) with its ``x, y, dx, dy`` the quarters of ``point`` (one array to return instead of
    four, each one costs its boxing); ``read`` is ``mode_of_point``'s ``(walls, motions, degenerate)`` of
    Lemke's point, concatenated (empty where Lemke did not decide); the set is the solution-set kernel's
    (``set_decided`` False where not asked; ``near``: the nearly singular supports the caller must find empty).
    Where A is diagonal, Lemke's default call on its LCP form instead (``solve_lcp_form_default``, what
    ``lemke_default`` takes): where its point is clean, ``read`` is that point's, ``point`` its answer ``out``
    and ``pivots`` its pivots (``decided`` stays False: a nonempty ``read`` says so).
    """
    code, A, B, c, qdd0, Q, diagonal = dense_event(M, md, J, WN, WT, h, w, gdot, g, holonomic, bN, vN, gN, bT, vT,
                                                   alpha, beta, dirs, mu, mu_s, cand)
    n = c.shape[0]
    big = 0.0
    for i in range(n):
        big = max(big, abs(c[i]))
    tol = 1e-9 * (1.0 + max(big, 1.0))
    e = np.zeros(0, np.int64)
    read = e
    point = np.empty(4 * n)                  # x, y, dx, dy: one array returned instead of four
    form = False                             # point: the LCP form's answer
    if code != EVENT_OK or diagonal:
        lemke = (False, 0, 0, e, e, np.zeros(n), np.zeros(n), (0.0, 0.0, 0.0), False, np.ones(n), np.ones(n))
        if code == EVENT_OK:         # A diagonal: Lemke's default call on the LCP form, as lemke_default makes it
            fcode, fpiv, clean, out = solve_lcp_form_default(A, B, c)
            if clean:
                walls, motions, deg = mode_of_point(out[n:2 * n], out[:n], cand, dirs, previous_walls, tol)
                read = np.concatenate((walls, motions, deg))
                lemke = (False, fcode, fpiv, e, e, lemke[5], lemke[6], lemke[7], False, lemke[9], lemke[10])
                point, form = out, True
    else:
        lemke = solve_hlcp_default(A, B, c)
        if lemke[0]:
            walls, motions, deg = mode_of_point(lemke[5], lemke[6], cand, dirs, previous_walls, tol)
            read = np.concatenate((walls, motions, deg))
    if not form:
        point[:n] = lemke[5]
        point[n:2 * n] = lemke[6]
        point[2 * n:3 * n] = lemke[9]
        point[3 * n:] = lemke[10]
    sset = _declined(n)
    if code == EVENT_OK and supports.shape[0] and supports.shape[1] == n:
        if n < WALK_FROM:
            sset = small_solution_set(A, B, c, diagonal, supports, 1e-9)
        else:
            sset = walked_solution_set(A, B, c, diagonal, supports, 1e-9)
    return (code, (A, B, c, qdd0, Q, diagonal, tol),
            (lemke[0], lemke[1], lemke[2], lemke[3], lemke[4], point, lemke[7], lemke[8]), read, sset)


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
