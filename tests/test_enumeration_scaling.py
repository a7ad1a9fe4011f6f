"""An honest enumeration on badly scaled data: `pympc.enumerate_solutions` never reports no solution while
another route (Lemke's method, the exact search of `pympc.complementarity.milp`) finds a point that the problem's
own verification accepts, and every point it lists verifies.

The problems: LCPs with SPD, positive-definite-plus-skew, triangular (P-matrices), Gaussian and Gram (``G Gᵀ`` of
a ``G`` whose rows and columns are scaled: positive semidefinite, condition up to ~1e16) M, and HLCPs with
Gaussian A, B; 1–10 pairs; rows and columns scaled by ``10^U(−4, 4)``.  ``benchmarks/enumeration_scaling.py``
counts over more of them.
"""

import numpy as np
import pytest
from conftest import random_p_matrix

import pympc
from pympc import SetKind
from pympc.complementarity import enumeration, milp, support

FAMILIES = ("spd", "pd_skew", "triangular", "general", "gram", "hlcp")


def badly_scaled_problem(rng, family, n, decades=4.0):
    """One problem of ``family`` with ``n`` pairs, rows and columns scaled by ``10^U(−decades, decades)`` (an
    HLCP's columns of A and of B each by their own factors)."""
    scale = lambda: 10.0 ** rng.uniform(-decades, decades, n)   # noqa: E731
    if family == "hlcp":
        A, B, c = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
        r, dx, dy = scale(), scale(), scale()
        return pympc.HLCP(r[:, None] * A * dx, r[:, None] * B * dy, r * c)
    if family == "gram":
        G = scale()[:, None] * rng.standard_normal((n, n)) * scale()
        return pympc.LCP(G @ G.T, rng.standard_normal(n) * scale())
    M = rng.standard_normal((n, n)) if family == "general" else random_p_matrix(rng, n, family)
    r, s = scale(), scale()
    return pympc.LCP(r[:, None] * M * s, r * rng.uniform(-1, 1, n))


def badly_scaled_problems(seed, count, max_n=10, decades=4.0):
    """``count`` problems, the families in turn, ``n`` uniform in 1..max_n: ``(family, problem)`` (``decades`` 0:
    the same families well scaled)."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        family = FAMILIES[k % len(FAMILIES)]
        yield family, badly_scaled_problem(rng, family, int(rng.integers(1, max_n + 1)), decades)


def _point(problem, r):
    return (r.z, r.w) if isinstance(problem, pympc.LCP) else (r.x, r.y)


def oracle_point(problem, tol=1e-9):
    """``(route, point)``: a point by Lemke's method (no fallback) or else the exact MILP method that
    ``problem.is_solution`` accepts within ``tol``, or None."""
    r = pympc.solve(problem, method="lemke", fallback=False)
    if r.status.name == "SOLVED" and problem.is_solution(*_point(problem, r), tol=tol):
        return "lemke", _point(problem, r)
    r = milp(problem)
    if r.status.name == "SOLVED" and problem.is_solution(*_point(problem, r), tol=tol):
        return "milp", _point(problem, r)
    return None


def enumeration_errors(problem, tol=1e-9):
    """``(solution set, false NONE, false points)``: NONE while an oracle point verifies; listed points that do
    not verify within the enumeration's own ``1e3 tol``."""
    s = pympc.enumerate_solutions(problem, tol=tol)
    false_points = sum(not problem.is_solution(a, b, tol=1e3 * tol) for a, b in s.points)
    return s, s.kind == SetKind.NONE and oracle_point(problem, tol) is not None, false_points


def test_no_false_none_and_no_false_point_on_badly_scaled_problems(monkeypatch):
    corpus = list(badly_scaled_problems(7, 432))
    kinds, false_none, false_points = set(), 0, 0
    for _, p in corpus:
        s, fn, fp = enumeration_errors(p)
        kinds.add(s.kind.name)
        false_none += fn
        false_points += fp
    assert false_none == 0 and false_points == 0
    assert {"NONE", "UNIQUE", "FINITE"} <= kinds          # true NONEs stay NONE
    # the corpus holds the problems this guards: without the check of an empty set (and the LU points of the
    # nearly singular supports found empty, which now list one of them) the enumeration misses solutions of Gram
    # problems (nearly singular supports: the range test and the LPs at the scale of c call them empty; problems
    # 328 and 424)
    monkeypatch.setattr(enumeration, "_witness", lambda hlcp, tol: None)
    monkeypatch.setattr(enumeration, "_lu_point", lambda hlcp, choice, tol, lps, rcond: support.SupportPoint(None, None, True, lps))
    assert sum(enumeration_errors(p)[1] for family, p in corpus if family == "gram") >= 2


# M = G Gᵀ with G's rows and columns scaled by 10^±4 (numpy's default_rng(7), the 1362nd draw of the last stop's
# badly scaled corpus): the solution's support matrix has condition ~5e15, so the support tests at the scale of q
# (the least-squares range test, the LP) called it empty, and enumeration reported no solution while Lemke's
# point verifies with residuals ~4e-17 at the scale of the terms.
_BADLY_SCALED_M = [
    [3.9962947580923356e+07, -1.0937775513805562e+04, -1.0562284238826695e+06, 1.0752298794965401e+10, 1.7728152740398884e+03],
    [-1.0937775513805562e+04, 2.9941132429790791e+00, 2.8899561041126782e+02, -2.9274888962204643e+06, -4.8853238346596012e-01],
    [-1.0562284238826695e+06, 2.8899561041126782e+02, 2.7934415181209515e+04, -2.8721567816135520e+08, -4.6202922805651141e+01],
    [1.0752298794965401e+10, -2.9274888962204643e+06, -2.8721567816135520e+08, 3.4004963821478169e+12, 3.6763681973895425e+05],
    [1.7728152740398884e+03, -4.8853238346596012e-01, -4.6202922805651141e+01, 3.6763681973895425e+05, 1.0220617460797966e-01]]
_BADLY_SCALED_Q = [-7.8557140549516674e+01, -1.0628776146861010e+03, 3.1292575448469022e+00, -2.3998862492859182e-04,
                   1.4416332553198261e-01]


@pytest.mark.parametrize("form", ["lcp", "hlcp"])
def test_a_solution_on_a_nearly_singular_support_is_listed_and_solve_finds_it(form):
    p = pympc.LCP(_BADLY_SCALED_M, _BADLY_SCALED_Q)
    lemke = pympc.solve(p, method="lemke", fallback=False)
    assert lemke.status.name == "SOLVED" and p.is_solution(lemke.z, tol=1e-12)
    q = p if form == "lcp" else p.to_hlcp()
    sols = pympc.enumerate_solutions(q)
    assert sols.kind != SetKind.NONE and sols.points
    assert all(q.is_solution(a, b, tol=1e-6) for a, b in sols.points)
    z = [b if form == "hlcp" else a for a, b in sols.points]
    assert any(((v > 0) == (lemke.z > 0)).all() for v in z)         # Lemke's support among the listed ones
    for method in ("enumerate", "milp"):
        r = pympc.solve(q, method=method)
        assert r.status.name != "INFEASIBLE", (method, r.message)
