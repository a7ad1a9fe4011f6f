"""Every solution of a small LCP/HLCP, by pruned enumeration of complementary supports.

The solution set of ``HLCP(A, B, c)`` is the union, over the ``2^n`` choices
of which member of each pair may be positive, of the polyhedra
``{x, y >= 0 : A x + B y = c, y_i = 0 (x_i chosen), x_i = 0 (y_i chosen)}``.
The enumeration walks that binary tree depth first; a subtree whose
relaxation (undecided pairs merely nonnegative) is LP-infeasible is pruned
(LPs by HiGHS through :func:`scipy.optimize.linprog`).  A leaf with a
nonsingular column matrix gives at most one point by a linear solve; a
singular leaf is examined by LPs: empty, a single point, or a continuum (with
a direction of the continuum).

"No solution" is never left to those tests alone: when no leaf gives a point,
Lemke's method and the exact search (:func:`~pympc.complementarity.milp.milp`)
are asked for one; if either finds a point that verifies, the enumeration was
wrong (badly scaled data: a nearly singular support holds a solution at the
scale of its terms that the range test and the LPs, working at the scale of
``c`` and with HiGHS's absolute tolerances, call empty) and the set is decided
again (:func:`_second_look`): every leaf without pruning, a nearly singular
leaf's LU point taken when it verifies, and the found point itself.

A set that is not empty can miss a point the same way (a nearly singular support that the range test or the LP
calls empty while its point verifies at the scale of its terms: a FINITE set reported UNIQUE).  So every support
found empty that way (LAPACK's estimate of its reciprocal condition at most 1e-11, above :data:`LU_POINT_RCOND`) gives
its LU point at the end, listed if it verifies and is not a listed point (nor one on whose support a listed point
lies); the compiled sets of the simulator ask the same through :func:`nearly_singular_empty`.  The oracle:
``tests/test_enumeration_completeness.py``, ``benchmarks/enumeration_scaling.py``.

Cost grows like ``2^n`` in the worst case: sensible up to about 12-16 pairs
(event HLCPs of mechanisms rarely exceed that).  Up to :data:`BATCHED_PAIRS`
pairs, when every support matrix is well conditioned, all the leaves are solved
in one batched call instead (:func:`_batched_leaves`: the same points, with no
LP; the simulator's event HLCPs are mostly of this kind).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.linalg.lapack import dgetrs
from scipy.optimize import linprog

from ..errors import ProblemError
from ._kernel import batched_leaves, relative_residual
from .problems import HLCP, LCP
from .._enum import DocIntEnum
from .support import _checked, _lu_point, lp_point, lu_rcond, support_solution

__all__ = ["SetKind", "SolutionSet", "enumerate_solutions"]

BATCHED_PAIRS = 8
"""Problems of at most this many pairs have their leaves solved in one batched call: below
:data:`WALK_POINTS_FROM` pairs, when every support matrix is well conditioned, its points are the solution set
(:func:`_batched_leaves`); otherwise it says which leaves may hold a point (:func:`_leaves_to_visit`) and the
walk's own leaf examines each of them (:func:`~pympc.complementarity.support.support_solution`, and the LPs of
a singular leaf): the walk's solution set, bit for bit, without its pruning LPs (HiGHS through scipy, a
millisecond or more per LP; a pruned subtree holds no point)."""

WALK_POINTS_FROM = 7
"""From this many pairs the batched points are not taken (the leaves are visited, see :data:`BATCHED_PAIRS`);
below it they are (equal to the walk's to round-off), as they always were."""

LU_POINT_RCOND = 1e-14
"""The nearly singular supports found empty give their LU points (see the module) when LAPACK's estimate of their
reciprocal condition (in the equilibrated problem) is above this: below it the "point" of a support singular to
working precision is a null vector scaled past the data (its relative residual passes: integer problems scaled by
10^±4 gave such points of 1e16 in the equilibrated units, where no other route finds a point).  The points it
must not miss had 4e-13 to 7e-11 (Gram problems)."""

# the supports of n pairs in the walk's order (pair 0 decided first, x_i — column of A — before y_i)
_SUPPORTS = [((np.arange(2 ** n)[:, None] >> (n - 1 - np.arange(n))[None, :]) & 1) == 0
             for n in range(BATCHED_PAIRS + 1)]


class SetKind(DocIntEnum):
    """What the complete solution set of a complementarity problem is."""

    NONE = 0, "No solution exists (every complementary support is infeasible)."
    UNIQUE = 1, "Exactly one solution."
    FINITE = 2, "Finitely many (more than one) isolated solutions, all listed."
    CONTINUUM = 3, "Infinitely many solutions: some support holds a segment or ray (a direction is given)."


@dataclass
class SolutionSet:
    """All solutions of a problem, as found by :func:`enumerate_solutions`.

    Attributes
    ----------
    kind : SetKind
    points : list of tuple of ndarray
        The distinct solutions found, in the problem's own variables:
        ``(z, w)`` for an LCP, ``(x, y)`` for an HLCP.  For a continuum, one
        point of each continuous piece (and every isolated point).
    directions : list of tuple of ndarray
        For a continuum: directions ``(dz, dw)`` / ``(dx, dy)`` along which
        the solution set extends from the matching entry of ``continuum_points``.
    continuum_points : list
        The base point of each direction.
    lps : int
        Number of LPs solved.
    """

    kind: SetKind
    points: list = field(default_factory=list)
    directions: list = field(default_factory=list)
    continuum_points: list = field(default_factory=list)
    lps: int = 0

    def __len__(self):
        return len(self.points)

    def __repr__(self):
        """One line: the kind, how many points and directions, the LPs solved (never the arrays)."""
        extra = f", {len(self.directions)} direction(s)" if self.directions else ""
        return f"<SolutionSet {self.kind.name}: {len(self.points)} point(s){extra}, {self.lps} LPs>"

    def __str__(self):
        """The summary, then every point (and direction) rounded for reading."""
        fmt = lambda v: np.array2string(np.asarray(v), precision=6, suppress_small=True)   # noqa: E731
        lines = [repr(self)] + [f"  point {i}: {fmt(a)}, {fmt(b)}" for i, (a, b) in enumerate(self.points)]
        lines += [f"  direction {i}: {fmt(a)}, {fmt(b)} from {fmt(p[0])}"
                  for i, ((a, b), p) in enumerate(zip(self.directions, self.continuum_points))]
        return "\n".join(lines)


def _extent(Aeq, c, fixed_zero, u0, tol):
    """Is the polyhedron of a singular leaf a single point?  Returns a direction or None."""
    bounds = [(0.0, 0.0) if f else (0.0, None) for f in fixed_zero]
    m = Aeq.shape[1]
    for j in np.flatnonzero(~fixed_zero):
        for sign in (1.0, -1.0):
            cost = np.zeros(m)
            cost[j] = -sign  # maximise sign * u_j
            res = linprog(cost, A_eq=Aeq, b_eq=c, bounds=bounds, method="highs")
            if res.status == 3:  # unbounded: a ray; recover its direction from the null space
                return _ray_direction(Aeq, fixed_zero, j, sign)
            if res.status == 0 and sign * (res.x[j] - u0[j]) > tol * (1.0 + abs(u0[j])):
                return res.x - u0
    return None


def _ray_direction(Aeq, fixed_zero, j, sign):
    """A direction d >= 0 (on free coordinates) with Aeq d = 0 and sign*d_j = 1."""
    m = Aeq.shape[1]
    A2 = np.vstack([Aeq, np.eye(m)[j][None, :] * sign])
    b2 = np.zeros(A2.shape[0])
    b2[-1] = 1.0
    bounds = [(0.0, 0.0) if f else (0.0, None) for f in fixed_zero]
    res = linprog(np.zeros(m), A_eq=A2, b_eq=b2, bounds=bounds, method="highs")
    return res.x if res.status == 0 else np.eye(m)[j]


def enumerate_solutions(problem, max_pairs=16, tol=1e-9):
    """Find every solution of a small LCP or HLCP.

    Parameters
    ----------
    problem : LCP or HLCP
    max_pairs : int
        Refuse problems with more pairs (the cost grows like ``2^n``).
    tol : float
        Tolerance for verification and for telling points apart.

    Returns
    -------
    SolutionSet
        Every listed point is verified with ``problem.is_solution``.

    Notes
    -----
    The enumeration runs on the equilibrated problem (:meth:`HLCP.equilibrated`),
    so its singularity, sign and distinctness tests follow the scales of the
    rows and columns; the points are mapped back and verified in the original.

    Examples
    --------
    >>> import pympc
    >>> s = pympc.enumerate_solutions(pympc.LCP([[1.0, -1.0], [-1.0, 1.0]], [1.0, -1.0]))
    >>> s.kind.name
    'CONTINUUM'
    >>> s = pympc.enumerate_solutions(pympc.LCP([[-1.0]], [1.0]))   # z = 0 and z = 1
    >>> s.kind.name, sorted(float(p[0][0]) for p in s.points)
    ('FINITE', [0.0, 1.0])
    """
    if isinstance(problem, LCP):
        hlcp = problem.to_hlcp()
        back = lambda x, y: (y, x)  # noqa: E731  (x = w, y = z)
    elif isinstance(problem, HLCP):
        hlcp = problem
        back = lambda x, y: (x, y)  # noqa: E731
    else:
        raise ProblemError(f"problem must be a pympc.LCP or pympc.HLCP, got {type(problem).__name__}.")
    n = hlcp.n
    if n > max_pairs:
        raise ProblemError(
            f"problem has {n} pairs; enumeration costs up to 2^{n} LPs. Raise max_pairs if you mean it, "
            "or use pympc.solve / the MILP cross-check."
        )
    return _enumerate(hlcp, back, tol, batched=True)


def _enumerate(hlcp, back, tol, batched):
    n = hlcp.n
    orig = hlcp
    # work on the equilibrated problem (rows and columns scaled by powers of two), so that the
    # singularity, sign and distinctness tests follow the scales of the rows and columns
    hlcp, dx, dy = orig.equilibrated()
    scale = np.concatenate([dx, dy])
    c = hlcp.c
    points, cont_pts, dirs, cont_fixed, near = [], [], [], [], []
    counter = [0]

    def add(u, target):
        for p in target:
            if np.abs(p - u).max() <= 1e3 * tol * (1.0 + np.abs(u).max()):
                return False
        target.append(u)
        return True

    def leaf(choice, lu_point=False):
        # choice[i] True: x_i may be positive (y_i = 0); the point by the one support solve of pympc
        sp = support_solution(hlcp, choice, tol, rcond=1e-11, lp_tol=1e3 * tol, lu_point=lu_point)
        counter[0] += sp.lps
        if sp.x is None:
            if sp.singular:
                near.append(choice)     # found empty at the scale of c: its LU point is looked at below
            return
        u = np.concatenate([sp.x, sp.y])
        if not sp.singular:
            add(u, points)
            return
        counter[0] += 2 * n
        fixed = np.concatenate([~choice, choice])
        d = _extent(Aeq, c, fixed, u, tol)   # a singular leaf: one point or more?
        if d is None:
            add(u, points)
        elif add(u, cont_pts):
            dirs.append(d / max(1.0, np.abs(d).max()))
            cont_fixed.append(fixed)

    def walk(prefix):
        k = len(prefix)
        if k == n:
            leaf(np.array(prefix, bool))
            return
        if n - k > 3:  # prune with the LP relaxation of the undecided pairs
            fixed = np.zeros(2 * n, bool)
            for i, ch in enumerate(prefix):
                fixed[n + i if ch else i] = True
            counter[0] += 1
            if lp_point(Aeq, c, fixed) is None:
                return
        walk(prefix + [True])
        walk(prefix + [False])

    def second_look(witness):
        # every leaf, no pruning, a nearly singular leaf's LU point when it verifies, and the witness itself
        for k in range(2 ** n):
            leaf(((k >> (n - 1 - np.arange(n))) & 1) == 0, lu_point=True)
        add(np.concatenate([witness[0] / dx, witness[1] / dy]), points)

    found = None
    if batched and n <= BATCHED_PAIRS:
        found = _batched_leaves(hlcp, tol, near) if n < WALK_POINTS_FROM else None
        if found is None:   # the walk's leaves in its order, those the batched call proves empty skipped
            Aeq = np.hstack([hlcp.A, hlcp.B])
            found = []
            for k in _leaves_to_visit(hlcp, tol):
                leaf(_SUPPORTS[n][k])
    if found is None:
        Aeq = np.hstack([hlcp.A, hlcp.B])
        walk([])
    else:
        for u in found:
            add(u, points)
    # map back and verify every point in the original problem
    points = [u for u in points if orig.is_solution(u[:n] * dx, u[n:] * dy, 1e3 * tol)]
    if not points and not cont_pts:
        witness = _witness(orig, tol)
        if witness is not None:     # the leaves missed a solution: decide again (see the module)
            Aeq = np.hstack([hlcp.A, hlcp.B])
            second_look(witness)
            points = [u for u in points if orig.is_solution(u[:n] * dx, u[n:] * dy, 1e3 * tol)]
    # the nearly singular supports found empty by the range test or the LP, which work at the scale of c: a point
    # at the scale of its terms (badly scaled data) is their LU point, listed after the others if it verifies and
    # is not one of them (a support that holds a listed point is not asked: a support whose matrix is not singular
    # holds one point; nearly_singular_empty asks the same of the compiled sets)
    listed = len(points)
    for choice in _distinct(near):
        if not _on_support(points, choice):
            sp = _lu_point(hlcp, choice, tol, 0, LU_POINT_RCOND)
            if sp.x is not None:
                add(np.concatenate([sp.x, sp.y]), points)
    points[listed:] = [u for u in points[listed:] if orig.is_solution(u[:n] * dx, u[n:] * dy, 1e3 * tol)]
    # a point that lies in the polyhedron of a continuum is not a separate solution
    if cont_fixed:
        points = [u for u in points if not any((u[f] == 0.0).all() for f in cont_fixed)]
    if cont_pts:
        kind = SetKind.CONTINUUM
    elif not points:
        kind = SetKind.NONE
    elif len(points) == 1:
        kind = SetKind.UNIQUE
    else:
        kind = SetKind.FINITE
    out = SolutionSet(kind, lps=counter[0])
    if cont_pts:
        cont_pts = [u * scale for u in cont_pts]
        dirs = [d * scale / np.abs(d * scale).max() for d in dirs]
        out.continuum_points = [back(u[:n], u[n:]) for u in cont_pts]
        out.directions = [back(d[:n], d[n:]) for d in dirs]
    out.points = [back(u[:n], u[n:]) for u in cont_pts + [u * scale for u in points]]
    return out


def _witness(hlcp, tol):
    """A point ``(x, y)`` of ``hlcp`` that ``is_solution`` accepts within ``tol``, by Lemke's method
    (:func:`~pympc.complementarity.search.lemke_point`) or else the exact search of
    :func:`~pympc.complementarity.milp.milp`, or None: the check of an enumeration that found no solution."""
    from .milp import milp
    from .search import lemke_point

    pt = lemke_point(hlcp, tol)
    if pt is not None:
        return pt
    r = milp(hlcp, tol=tol)
    return (r.x, r.y) if r.status.name == "SOLVED" and hlcp.is_solution(r.x, r.y, tol) else None


def _leaves_to_visit(hlcp, tol):
    """The supports of a small (equilibrated) HLCP that may hold a point, in the walk's order: all but those the
    batched call proves empty (status 0: nonsingular, with a point of the wrong sign or one that fails
    verification; −2: exactly singular with ``c`` out of its range), the leaves the walk's
    :func:`support_solution` finds empty by the same tests (the equivalence :func:`_batched_leaves` rests on)."""
    status = batched_leaves(hlcp.A, hlcp.B, hlcp.c, _SUPPORTS[hlcp.n], tol, 1e3 * tol)[2]
    return np.flatnonzero((status != 0) & (status != -2)).tolist()


def nearly_singular_empty(hlcp, supports, tol, points=None):
    """Are the nearly singular supports ``supports`` (rows of choices) of a small (equilibrated) HLCP empty by
    the walk's first tests of a singular leaf (:func:`~pympc.complementarity.support.support_solution` with
    ``rcond`` 1e-11 and ``lp_tol`` ``1e3 tol``): LAPACK's estimate of each one's reciprocal condition at most
    1e-11 (no LU point) and ``c`` out of its range (a least-squares residual above ``1e3 tol (1 + max|c|)``, no
    LP)?  False as soon as one is not: the walk decides it.

    ``points`` (rows ``(x, y)`` of the equilibrated problem: a set found without those supports): also False
    when a support's LU point verifies and is not one of them (the enumeration's last look at such supports, a
    point at the scale of its terms that the range test at the scale of ``c`` misses: it lists that point; a
    support on which one of ``points`` lies is not asked, its matrix not being singular)."""
    As, Bs, cs = hlcp.A, hlcp.B, hlcp.c
    Cs = np.where(supports[:, None, :], As[None, :, :], Bs[None, :, :])
    factors = [lu_rcond(M) for M in Cs]
    if any(f[2] > 1e-11 for f in factors):
        return False
    if any(np.abs(M @ np.linalg.lstsq(M, cs, rcond=None)[0] - cs).max() <= 1e3 * tol * (1.0 + float(np.abs(cs).max()))
           for M in Cs):
        return False
    if points is None:
        return True
    for choice, (lu, piv, rc) in zip(supports, factors):
        if rc <= LU_POINT_RCOND:        # singular to working precision: no LU point (support_point's refusal)
            continue
        v = dgetrs(lu, piv, cs)[0]
        u = _checked(hlcp, (np.where(choice, v, 0.0), np.where(choice, 0.0, v)), tol)
        if u is not None and not any(np.abs(p - u).max() <= 1e3 * tol * (1.0 + np.abs(u).max()) for p in points) \
                and not _on_support(points, choice):
            return False
    return True


def _on_support(points, choice):
    """Does one of ``points`` (``(x, y)`` as one row) lie on the support ``choice`` (``y_i = 0`` where chosen,
    ``x_i = 0`` else)?"""
    if not len(points):
        return False
    nonzero = np.asarray(points) != 0.0
    return not nonzero[:, np.concatenate([~choice, choice])].any(axis=1).all()


def _distinct(supports):
    """The supports (choices) without repeats, in their first order."""
    seen = {}
    for choice in supports:
        seen.setdefault(choice.tobytes(), choice)
    return list(seen.values())


def _batched_leaves(hlcp, tol, near=None):
    """The points of every leaf of a small (equilibrated) HLCP in one batched solve, in the walk's order, or
    None when some support matrix is singular or nearly so (its leaf may hold a continuum: the walk decides).

    Every support ``C_α v = c`` then holds at most one point; all ``2^n`` are solved in one compiled call
    (:func:`~pympc.complementarity._kernel.batched_leaves`) and the nonnegative ones (the walk's sign rule) that pass :func:`support_solution`'s verification are
    the leaves' points: what the walk finds, without its LPs.
    """
    n = hlcp.n
    As, Bs, cs = hlcp.A, hlcp.B, hlcp.c
    xs = _SUPPORTS[n]
    rc, U, status = batched_leaves(As, Bs, cs, xs, tol, 1e3 * tol)
    # rc > 1e-10: the walk's LAPACK estimate (never below the true value) calls it nonsingular too
    # (> 1e-11) and the point is C_α⁻¹ c.  The others: singular by that estimate too and c out of the range
    # of C_α (the walk's first test of a singular support, a least-squares residual above lp_tol = 1e3 tol):
    # no point.  Anything else (a singular support that may hold points, a continuum, or the estimate's grey
    # zone): the walk itself.  Exactly singular supports are decided in the kernel (status −2, −3).
    st = status.tolist()
    if near is not None:     # (the nearly singular supports: the enumeration looks at their LU points)
        near.extend(xs[status == -1])
    if -3 in st:
        return None
    if -1 in st and not nearly_singular_empty(hlcp, xs[status == -1], tol):
        return None
    points = []
    for k, sk in enumerate(st):
        if sk <= 0:
            continue
        if sk == 1:
            points.append(U[k])
            continue
        u = U[k]
        for attempt in (u, np.where(u <= tol * np.abs(u).max(), 0.0, u)):     # support_solution's two tries
            if max(relative_residual(As, Bs, cs, attempt[:n], attempt[n:])) <= tol or \
                    hlcp.is_solution(attempt[:n], attempt[n:], tol):     # with the noise rule of is_solution
                points.append(attempt)
                break
    return points
