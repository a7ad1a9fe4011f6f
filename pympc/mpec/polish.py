"""The active-set polish of pympc.ipopt's MPEC route: the pairs of ``mpec.simple_nonlinear`` on the extracted NLP,
the guess of which side of each pair is zero, the direct (linear) polish and the pairs' residual.

Every function works on a :class:`~pympc.mpec.nlp.CompiledNLP` and the plan of its pairs
(:func:`_polish_plan`); :mod:`pympc.mpec.ipopt` drives them.
"""

from __future__ import annotations

import numpy as np
from pyomo.mpec.complementarity import ComplementarityData

from ..complementarity.support import solve_columns


def _polish_plan(nlp):
    """Rows and columns of every pair made by ``simple_nonlinear``, or None if some pair has another shape.

    Each pair's block has ``c`` (the expression side ``>= 0``), ``v`` (the
    variable side, bounded below) and ``ccon`` (their product ``<= mpec_bound``);
    box pairs are left to the general polish.  The blocks are found from the
    NLP's rows (every pair has its row ``ve`` there).
    """
    row = {id(con): i for i, con in enumerate(nlp.constraints_data)}
    blocks = {id(b): b for b in (con.parent_block() for con in nlp.constraints_data)
              if isinstance(b, ComplementarityData)}
    plan = []
    for block in blocks.values():
        c, v, ccon = block.component("c"), block.component("v"), block.component("ccon")
        if ccon is None or id(c) not in row or id(ccon) not in row or id(v) not in nlp._col:
            return None
        plan.append((row[id(c)], nlp._col[id(v)], row[id(ccon)]))
    ic, jv, ip_ = (np.array(x, dtype=int) for x in zip(*plan)) if plan else (np.zeros(0, int),) * 3
    return ic, jv, ip_, nlp.cl[ic].copy(), nlp.lb[jv].copy()


def _factors(nlp, plan, u, g=None):
    """The two factors of every pair at ``u``: the expression side and the variable side (``g``: the rows at u)."""
    ic, jv, _, cl0, lb0 = plan
    return (nlp.constraints(u) if g is None else g)[ic] - cl0, u[jv] - lb0


def _choice(f, g):
    """The active-set guess from a point's factors (:func:`_factors`): True where the expression side ``c`` is
    the smaller one (it goes to zero)."""
    return np.abs(f) <= np.abs(g)


def _polish_in_place(nlp, plan, fix_c, saved, both=None):
    """The active-set polish on the extracted NLP itself (no re-extraction).

    From the relaxed bounds ``saved``: the side of each pair that ``fix_c``
    names becomes an equality (``c``) or a fixed variable (``v``); both sides
    where ``both`` (degenerate pairs); the product rows get infinite bounds.
    :func:`_restore` puts ``saved`` back.
    """
    ic, jv, ip_, _, lb0 = plan
    _restore(nlp, saved)
    on_c, on_v = (fix_c, ~fix_c) if both is None else (fix_c | both, ~fix_c | both)
    nlp.cu[ic[on_c]] = nlp.cl[ic[on_c]]
    nlp.lb[jv[on_v]] = nlp.ub[jv[on_v]] = lb0[on_v]
    nlp.cl[ip_], nlp.cu[ip_] = -1e20, 1e20


def _degenerate(f, g, bound):
    """Pairs whose two factors are both within ``10 sqrt(bound)`` of zero: candidates for a degenerate solution."""
    return np.maximum(np.abs(f), np.abs(g)) <= 10.0 * np.sqrt(bound)


def _separated(f, g, ratio=1e-2):
    """Does every pair have one factor much smaller than the other (a clear active set to polish on)?"""
    f, g = np.abs(f), np.abs(g)
    return bool(np.all(np.minimum(f, g) <= ratio * np.maximum(f, g)))


def _linear_polish(nlp, plan, fix_c, saved, tol, max_flips=None, both=None):
    """The polish without IPOPT when the polished problem is a linear system (an LCP/HLCP model).

    With every pair's chosen side at zero (:func:`_polish_in_place`), if the
    objective is constant and every remaining row is linear, the point is the
    solution of the equality rows with the fixed variables substituted.  When
    the only rows or bounds it breaks are the free sides of some pairs (a
    guess that was wrong on nearly degenerate pairs), those pairs' choices are
    flipped and it is solved again: all of them at first, then the
    lowest-numbered one only (Murty's rule, which terminates for P-matrix
    problems), at most ``max_flips`` times (default ``2 n + 4``).  Pairs in
    ``both`` have both sides at zero (a degenerate solution: the rows are then
    solved in the least-squares sense and must hold exactly).  A point is
    accepted only if it meets every bound and row within ``tol``.  Returns the
    point and its rows, or None (not linear, not determined, or no verified
    point); the bounds of the last choice tried are left on ``nlp``.
    """
    ob = nlp.obj
    if ob is not None and not ob.constant:
        return None
    ic, jv, product_rows, _, _ = plan
    skip = np.zeros(nlp.m, bool)
    skip[product_rows] = True
    if nlp._nl_cons or np.any(~skip[nlp._q[0]]):
        return None                                   # a nonlinear row besides the products
    A = nlp._A
    if A is None:
        r, c, v = nlp._lin
        A = np.bincount(r * nlp.n + c, v, minlength=nlp.m * nlp.n).astype(float).reshape(nlp.m, nlp.n)
    fix_c = fix_c.copy()
    pair_row, pair_col = np.zeros(nlp.m, bool), np.zeros(nlp.n, bool)
    pair_row[ic], pair_col[jv] = True, True
    max_flips = 2 * len(ic) + 4 if max_flips is None else max_flips
    for flips in range(max_flips + 1):
        _polish_in_place(nlp, plan, fix_c, saved, both)
        x = _solve_active_set(nlp, A, skip)
        if x is None:
            return None
        g = A @ x
        scale = 1.0 + float(np.abs(x).max(initial=0)) + float(np.abs(nlp.cl[~skip & (nlp.cl > -1e19)]).max(initial=0))
        t = tol * scale
        bad_col = (x < nlp.lb - t) | (x > nlp.ub + t)
        bad_row = ((g < nlp.cl - t) | (g > nlp.cu + t)) & ~skip
        if not (bad_col.any() or bad_row.any()):
            x = np.clip(x, nlp.lb, nlp.ub)
            return x, A @ x   # the linear rows at the point (the product rows' entries are not used)
        if (bad_col & ~pair_col).any() or (bad_row & ~pair_row).any() or flips == max_flips:
            return None       # a row or bound outside the pairs: no choice of sides mends it
        wrong = (fix_c & bad_col[jv]) | (~fix_c & bad_row[ic])   # the free side of these pairs went negative
        if both is not None:
            wrong &= ~both
        if not wrong.any():
            return None
        if flips >= 3:        # block flips may cycle: from here on, the least index only
            wrong[np.argmax(wrong) + 1:] = False
        fix_c ^= wrong
    return None


def _solve_active_set(nlp, A, skip):
    """The point that the equality rows determine once the fixed variables are substituted, or None
    (:func:`pympc.complementarity.support.solve_columns`, pympc's one solve on a support; the caller verifies)."""
    eq = (nlp.cl == nlp.cu) & ~skip
    fixed = nlp.lb == nlp.ub
    x = np.where(fixed, nlp.lb, 0.0)
    v = solve_columns(A[eq], nlp.cl[eq] - A[np.ix_(eq, fixed)] @ x[fixed], ~fixed, rcond=0.0)
    if v is None:
        return None                                   # singular, or not determined by the active set
    x[~fixed] = v
    return x


def _restore(nlp, saved):
    nlp.cl, nlp.cu, nlp.lb, nlp.ub = (a.copy() for a in saved)


def _pair_residual(f, g):
    """The relative natural residual of pairs ``f >= 0 ⊥ g >= 0``: the largest ``|min(f, g)|``, ``-f`` and
    ``-g`` over ``1 +`` the largest factor (as Siconos measures LCP errors relative to the data).

    Relative, so that an exact answer of size 1e7 (round-off 1e-9 in ``f``
    opposite ``g`` = 1e7) is not taken for an inexact one; a relaxed point
    with ``f = g = 1e-6`` (product 1e-12) has residual 1e-6, not 1e-12.
    """
    if len(f) == 0:
        return 0.0
    scale = 1.0 + max(np.abs(f).max(), np.abs(g).max())
    return float(max(np.abs(np.minimum(f, g)).max(), (-f).max(), (-g).max(), 0.0)) / scale


def _box_residual(v, lb, ub, c):
    """The same measure for box pairs ``lb <= v <= ub ⊥ c``: ``c`` may be positive only at ``lb``, negative at ``ub``."""
    return max(_pair_residual(v - lb, np.maximum(c, 0)), _pair_residual(ub - v, np.maximum(-c, 0)))
