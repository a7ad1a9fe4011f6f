"""A complete enumeration when the solution set is not empty: `pympc.enumerate_solutions` (and the compiled sets
of `pympc.dynamics.events.EventProblem.solution_set`) miss no solution that an independent oracle finds, so that
a FINITE set is never reported as UNIQUE (the simulator reads UNIQUE as "the new mode is not ambiguous").

The oracle examines every one of the ``2^n`` supports without pruning, each at its own scale: the support's
columns scaled to unit norm, the point by least squares (an SVD) and, on a support of full numerical rank, by LU,
each with one step of refinement, and on a rank-deficient support an LP over its columns (HiGHS, rows scaled to unit
size); a point counts when ``HLCP.is_solution`` accepts it within 1e-9 (the project's verification).  The
problems: the badly scaled corpus of ``tests/test_enumeration_scaling.py`` (rows and columns scaled by
``10^U(−4, 4)``, Gram problems ``G Gᵀ``), the same families well scaled, LCPs with ``M ≈ −I`` (many solutions),
integer HLCPs (ties, zero rows, singular supports) and the event HLCPs of the simulator's models and slider
chains.  ``benchmarks/enumeration_scaling.py`` counts over more of them.
"""

import pathlib
from unittest import mock

import numpy as np
import pytest
from scipy.optimize import linprog
from test_enumeration_scaling import badly_scaled_problems

import pympc
from pympc import SetKind
from pympc.complementarity import enumeration

MODELS = pathlib.Path(__file__).resolve().parents[1] / "models"
SAME = 1e-6
"""Two points are one solution when they differ by at most ``SAME (1 + max|u|)`` in the units of the
equilibrated problem (the enumeration's own tests use ``1e3 tol`` = 1e-6)."""


def as_hlcp(problem):
    """The HLCP of ``problem`` and the map of its points ``(x, y)`` to the problem's own (an LCP's ``(z, w)``)."""
    if isinstance(problem, pympc.LCP):
        return problem.to_hlcp(), lambda x, y: (y, x)
    return problem, lambda x, y: (x, y)


def _choices(n):
    return [((k >> (n - 1 - np.arange(n))) & 1) == 0 for k in range(2 ** n)]


def support_points(h, choice, tol=1e-9):
    """The point of the support ``choice`` of ``h`` that verifies (``h.is_solution`` within ``tol``), solved at the
    support's own scale (see the module): a list of at most one point ``u = (x, y)`` (the first try that
    verifies)."""
    n = h.n
    C = h.column_matrix(choice)
    s = np.linalg.norm(C, axis=0)
    s[s == 0] = 1.0
    Cs = C / s
    v, _, rank, _ = np.linalg.lstsq(Cs, h.c, rcond=None)
    v = v + np.linalg.lstsq(Cs, h.c - Cs @ v, rcond=None)[0]      # one step of refinement
    v = v / s
    tries = [v]
    if rank == n:                 # and by LU (a support of full numerical rank: least squares may lose its point)
        w = np.linalg.solve(Cs, h.c)
        tries.append((w + np.linalg.solve(Cs, h.c - Cs @ w)) / s)
    else:                         # a singular support: a point of its polyhedron by an LP at its scale
        r = np.maximum(np.abs(Cs).max(axis=1), np.abs(h.c))
        r[r == 0] = 1.0
        res = linprog(np.zeros(n), A_eq=Cs / r[:, None], b_eq=h.c / r, bounds=(0, None), method="highs")
        if res.status == 0:
            tries.append(res.x / s)
    for v in tries:
        if v.min() < -tol * (1.0 + np.abs(v).max()):
            continue
        v = np.maximum(v, 0.0)
        x, y = np.where(choice, v, 0.0), np.where(choice, 0.0, v)
        if h.is_solution(x, y, tol):
            return [np.concatenate([x, y])]
    return []


def _same(u, v, scale):
    a, b = u / scale, v / scale
    return np.abs(a - b).max() <= SAME * (1.0 + np.abs(a).max())


def oracle_points(problem, tol=1e-9):
    """Every distinct verified point the oracle finds on the ``2^n`` supports (see the module): ``(points,
    supports, units)``, the points rows ``(x, y)`` of the problem's HLCP, each with its support (the choice) and
    the units ``(dx, dy)`` in which points are compared."""
    h, _ = as_hlcp(problem)
    _, dx, dy = h.equilibrated()
    scale = np.concatenate([dx, dy])
    pts, supports = [], []
    for choice in _choices(h.n):
        for u in support_points(h, choice, tol):
            if not any(_same(u, p, scale) for p in pts):
                pts.append(u)
                supports.append(choice)
    return pts, supports, scale


def _on_support(u, choice):
    """Does the point ``u = (x, y)`` lie on the support ``choice`` (``y_i = 0`` where chosen, ``x_i = 0`` else)?"""
    n = choice.size
    return not np.any(np.where(choice, u[n:], u[:n]))


def kind_of(count):
    return SetKind.NONE if count == 0 else SetKind.UNIQUE if count == 1 else SetKind.FINITE


def misses(problem, s, oracle=None):
    """``(missed, wrong kind, judged)`` of the solution set ``s`` reported for ``problem``: the oracle's points
    that no listed point matches (within :data:`SAME`, or on the oracle point's support: a nonsingular support
    holds one point, found to its condition), whether the kind differs from that of the listed points and the
    missed ones together (the listed points verify: ``test_enumeration_scaling``), and whether the set was judged
    (a CONTINUUM is not: the oracle does not tell continua)."""
    pts, supports, scale = oracle_points(problem) if oracle is None else oracle
    if s.kind == SetKind.CONTINUUM:
        return 0, False, False
    listed = [np.concatenate(_hlcp_point(problem, a, b)) for a, b in s.points]
    missed = [u for u, ch in zip(pts, supports) if not any(_same(u, p, scale) or _on_support(p, ch) for p in listed)]
    return len(missed), kind_of(len(listed) + len(missed)) != s.kind, True


def _hlcp_point(problem, a, b):
    return (b, a) if isinstance(problem, pympc.LCP) else (a, b)


# the corpora ----------------------------------------------------------------------------------------------


def well_scaled_problems(seed, count, max_n=10):
    """The families of the badly scaled corpus without the scaling: ``(family, problem)``."""
    return badly_scaled_problems(seed, count, max_n, decades=0.0)


def many_solution_problems(seed, count, max_n=8, decades=4.0):
    """LCPs with ``M = −I + 0.3 G`` (up to ``2^n`` solutions) and integer HLCPs (ties, zero rows, singular
    supports, several solutions), rows and columns scaled by ``10^U(−decades, decades)``."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        n = int(rng.integers(1, max_n + 1))
        r, s, t = (10.0 ** rng.uniform(-decades, decades, n) for _ in range(3))
        if k % 2:
            M = -np.eye(n) + 0.3 * rng.standard_normal((n, n))
            yield "minus_identity", pympc.LCP(r[:, None] * M * s, r * rng.uniform(0.1, 1.0, n))
        else:
            A, B = rng.integers(-2, 3, (n, n)).astype(float), rng.integers(-2, 3, (n, n)).astype(float)
            yield "integer", pympc.HLCP(r[:, None] * A * s, r[:, None] * B * t, r * rng.integers(-1, 2, n))


def event_hlcps(models=None, chains=(2, 3, 4, 5), span=2.0):
    """The event HLCPs of the simulator's runs (every model file, and slider chains of ``chains`` slots): each
    event's HLCP and every one whose solution set the run asked for, without repeats."""
    from pympc.dynamics import events as events_module
    from pympc.mechanics import slider_chain

    seen = []
    asked = events_module.EventProblem.solution_set
    systems = [pympc.load_model(p) for p in sorted(MODELS.glob("*.toml")) if models is None or p.stem in models]
    with mock.patch.object(events_module.EventProblem, "solution_set", autospec=True,
                           side_effect=lambda ev, max_pairs: seen.append(ev.hlcp) or asked(ev, max_pairs)):
        for system in systems + [slider_chain(k) for k in chains]:
            seen += [e.hlcp for e in pympc.simulate(system, (0.0, span), samples=2).events if e.hlcp is not None]
    out, keys = [], set()
    for h in seen:
        key = (h.A.tobytes(), h.B.tobytes(), h.c.tobytes())
        if h.n <= 8 and key not in keys:
            keys.add(key)
            out.append(h)
    return out


def compiled_set(h):
    """The solution set of ``h`` as the simulator asks for it (:meth:`EventProblem.solution_set`: the compiled
    call where it decides, else the enumeration)."""
    from pympc.dynamics.events import EventProblem

    return EventProblem(h, [], np.zeros(0), None, None).solution_set(16)


# the tests ------------------------------------------------------------------------------------------------


def _count(corpus, route=pympc.enumerate_solutions):
    missed = wrong = judged = several = 0
    for problem in corpus:
        s = route(problem)
        m, w, j = misses(problem, s)
        missed, wrong, judged = missed + m, wrong + w, judged + j
        several += s.kind == SetKind.FINITE
    return missed, wrong, judged, several


def test_no_missed_point_and_no_wrong_kind_on_badly_scaled_and_degenerate_problems():
    corpus = list(badly_scaled_problems(11, 120, max_n=8)) + list(many_solution_problems(11, 60, max_n=6))
    missed, wrong, judged, several = _count([p for family, p in corpus if family != "gram"])
    assert (missed, wrong) == (0, 0)
    assert judged >= 0.9 * (len(corpus) - 20) and several >= 20       # sets of several points among them
    # Gram problems (G Gᵀ, positive semidefinite, supports of condition up to 1e16): no wrong kind; a point may be
    # missed on a support singular to working precision (LAPACK's estimate 1.5e-16 in problem 58, whose LU point
    # does not verify where the oracle's least-squares point does: one of the many points of a nearly singular
    # problem, whose set is FINITE either way)
    missed, wrong, _, several = _count([p for family, p in corpus if family == "gram"])
    assert wrong == 0 and missed <= 1 and several >= 2


def _without_lu_points(hlcp, choice, tol, lps, rcond=0.0):
    from pympc.complementarity.support import SupportPoint
    return SupportPoint(None, None, True, lps)


def test_a_point_on_a_nearly_singular_support_is_listed(monkeypatch):
    """Gram problems (``G Gᵀ``, G's rows and columns scaled by 10^±4; numpy's default_rng(7), problems 10 and 232
    of ``benchmarks/enumeration_scaling.py``'s corpus) with solutions on supports of reciprocal condition ~1e-12
    in the equilibrated units, points ~1e11 times c: the range test and the LP (at the scale of c) call those
    supports empty, and their LU points verify (relative residuals ~1e-15).  Listed now, by either route; without
    the LU points (the guard this tests) one is reported NONE, the other UNIQUE with a second solution missed."""
    corpus = list(badly_scaled_problems(7, 233))
    problems = [corpus[10][1], corpus[232][1]]
    for p in problems:
        for q, s in ((p, pympc.enumerate_solutions(p)), (p.to_hlcp(), compiled_set(p.to_hlcp()))):
            assert s.kind == SetKind.FINITE and misses(q, s) == (0, False, True)
            assert all(q.is_solution(a, b, tol=1e-6) for a, b in s.points)
    # the guard: the LU points of the nearly singular supports found empty (the enumeration's last look, and
    # nearly_singular_empty's question for the compiled sets)
    monkeypatch.setattr(enumeration, "_lu_point", _without_lu_points)
    monkeypatch.setattr(enumeration, "_checked", lambda hlcp, pt, tol: None)
    assert compiled_set(problems[1].to_hlcp()).kind == SetKind.UNIQUE
    before = [pympc.enumerate_solutions(p) for p in problems]
    assert [s.kind for s in before] == [SetKind.NONE, SetKind.UNIQUE]
    assert all(misses(p, s)[:2] == (m, True) for p, s, m in zip(problems, before, (2, 1)))


def test_no_missed_point_on_event_hlcps_by_either_route():
    corpus = event_hlcps(models=("cross_slide", "friction_oscillator", "slider_crank"), chains=(2, 5), span=1.0)
    assert len(corpus) >= 10 and max(h.n for h in corpus) >= 7
    for route in (pympc.enumerate_solutions, compiled_set):
        missed, wrong, judged, _ = _count(corpus, route)
        assert (missed, wrong) == (0, 0) and judged == len(corpus)


def test_the_oracle_detects_a_missed_point(monkeypatch):
    """The oracle is not blind: a set cut to its first point (UNIQUE for FINITE), and the walk with its pruning LPs
    made to prune a subtree that holds points, are caught."""
    rng = np.random.default_rng(3)
    n = 5
    p = pympc.LCP(-np.eye(n) + 0.1 * rng.standard_normal((n, n)), rng.uniform(0.5, 1.0, n))   # 2^5 solutions
    s = pympc.enumerate_solutions(p)
    assert s.kind == SetKind.FINITE and len(s.points) == 2 ** n
    assert misses(p, s) == (0, False, True)
    short = pympc.SolutionSet(SetKind.UNIQUE, s.points[:1])
    assert misses(p, short) == (2 ** n - 1, True, True)
    # the walk's pruning LPs (from 4 undecided pairs) made to say "empty" everywhere
    # (every subtree with y_0 > 0, a half of the points: no witness check, the set is not empty)
    lp_point = enumeration.lp_point
    monkeypatch.setattr(enumeration, "lp_point", lambda E, rhs, fixed: None if fixed[0] else lp_point(E, rhs, fixed))
    big = pympc.LCP(-np.eye(9) + 0.1 * rng.standard_normal((9, 9)), rng.uniform(0.5, 1.0, 9))
    pruned = pympc.enumerate_solutions(big)
    assert pruned.kind == SetKind.FINITE and misses(big, pruned) == (2 ** 8, False, True)
