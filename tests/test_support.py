"""pympc's one solve on a support (complementarity/support.py) against direct dense solves on random supports."""

import numpy as np
import pytest

from pympc import HLCP
from pympc.complementarity.support import solve_columns, solve_on_support, support_solution


def _direct(h, choice):
    """The support point by a dense solve written out here: C_α column by column, numpy's solve."""
    n = h.n
    C = np.empty((n, n))
    for i in range(n):
        C[:, i] = h.A[:, i] if choice[i] else h.B[:, i]
    v = np.linalg.solve(C, h.c)
    x, y = np.zeros(n), np.zeros(n)
    for i in range(n):
        if choice[i]:
            x[i] = v[i]
        else:
            y[i] = v[i]
    return x, y, np.linalg.cond(C)


def test_support_point_and_solution_match_a_dense_solve_on_random_supports():
    rng = np.random.default_rng(5)
    verified = refused = 0
    for _ in range(400):
        n = int(rng.integers(1, 9))
        h = HLCP(rng.normal(size=(n, n)), rng.normal(size=(n, n)), rng.normal(size=n))
        choice = rng.random(n) < 0.5
        x, y, cond = _direct(h, choice)
        if cond > 1e8:
            continue
        px, py = h.support_point(choice)
        scale = 1.0 + np.abs(np.concatenate([x, y])).max()
        np.testing.assert_allclose(px, x, atol=1e-12 * cond * scale)
        np.testing.assert_allclose(py, y, atol=1e-12 * cond * scale)
        sp = support_solution(h, choice)
        assert not sp.singular and sp.lps == 0
        if min(x.min(), y.min()) >= 0:           # a nonnegative point on its support solves the HLCP
            assert sp.x is not None and h.is_solution(sp.x, sp.y)
            np.testing.assert_allclose(sp.x, x, atol=1e-12 * cond * scale)
            np.testing.assert_allclose(sp.y, y, atol=1e-12 * cond * scale)
            assert (sp.x >= 0).all() and (sp.y >= 0).all() and (sp.x * sp.y == 0).all()
            verified += 1
        elif min(x.min(), y.min()) < -1e-6 * scale:   # clearly the wrong sign: no point
            assert sp.x is None and solve_on_support(h, choice) is None
            refused += 1
    assert verified > 20 and refused > 100


@pytest.mark.parametrize("shape", [(6, 6), (9, 5), (7, 1)])
def test_solve_columns_matches_dense_solve_and_least_squares(shape):
    rng = np.random.default_rng(sum(shape))
    m, k = shape
    for _ in range(50):
        extra = int(rng.integers(0, 4))
        E = rng.normal(size=(m, k + extra))
        cols = rng.permutation(k + extra)[:k]          # an index order: v follows it
        v_true = rng.normal(size=k)
        rhs = E[:, cols] @ v_true
        v = solve_columns(E, rhs, cols)
        np.testing.assert_allclose(v, v_true, atol=1e-9)
        mask = np.zeros(k + extra, bool)
        mask[cols] = True
        v_mask = solve_columns(E, E[:, mask] @ v_true, mask)
        np.testing.assert_allclose(v_mask, v_true, atol=1e-9)
        if m > k:   # an inconsistent overdetermined system: the least-squares solution, as numpy's
            r = rng.normal(size=m)
            np.testing.assert_allclose(solve_columns(E, r, cols), np.linalg.lstsq(E[:, cols], r, rcond=None)[0],
                                       atol=1e-10)


def test_solve_columns_refuses_singular_and_undetermined_systems():
    E = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 1.0]])
    assert solve_columns(E, np.ones(2), np.array([True, True, False])) is None          # exactly singular
    assert solve_columns(E, np.ones(2), np.array([True, True, False]), rcond=0.0) is None
    assert solve_columns(E, np.ones(2), np.ones(3, bool)) is None                       # more unknowns than rows
    near = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-13]])
    assert solve_columns(near, np.array([2.0, 2.0]), np.ones(2, bool)) is None          # rcond below 1e-12
    np.testing.assert_allclose(solve_columns(near, np.array([2.0, 2.0]), np.ones(2, bool), rcond=0.0), [2.0, 0.0],
                               atol=1e-3)
    tall = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert solve_columns(tall[:, [0, 0]], np.ones(3), np.array([0, 1])) is None         # dependent columns


def test_singular_supports_by_lp_and_range():
    # C_α of the support (x_0, x_1) has two equal columns: a segment of solutions x_0 + x_1 = 1
    h = HLCP([[1.0, 1.0], [1.0, 1.0]], [[-1.0, 0.0], [0.0, -1.0]], [1.0, 1.0])
    sp = support_solution(h, [True, True])
    assert sp.singular and sp.lps == 1 and h.is_solution(sp.x, sp.y)
    assert abs(sp.x.sum() - 1.0) < 1e-9 and (sp.y == 0).all()
    off = HLCP([[1.0, 1.0], [1.0, 1.0]], [[-1.0, 0.0], [0.0, -1.0]], [1.0, 2.0])      # c not in the range of C_α
    sp = support_solution(off, [True, True])
    assert sp.singular and sp.x is None and sp.lps == 0
    neg = HLCP([[1.0, 1.0], [1.0, 1.0]], [[-1.0, 0.0], [0.0, -1.0]], [-1.0, -1.0])    # in range, but x < 0
    sp = support_solution(neg, [True, True])
    assert sp.singular and sp.x is None and sp.lps == 1


def test_polish_active_set_is_the_support_solve():
    """IPOPT's linear polish substitutes the fixed variables and solves the rest by solve_columns."""
    pytest.importorskip("pyomo")
    from types import SimpleNamespace

    from pympc.mpec.polish import _solve_active_set

    rng = np.random.default_rng(9)
    for _ in range(30):
        m, n = 5, 8
        A = rng.normal(size=(m, n))
        fixed = np.zeros(n, bool)
        fixed[rng.permutation(n)[:3]] = True
        lb = np.where(fixed, rng.normal(size=n), -1e20)
        x_true = np.where(fixed, lb, rng.normal(size=n))
        g = A @ x_true
        nlp = SimpleNamespace(cl=g.copy(), cu=g.copy(), lb=lb, ub=np.where(fixed, lb, 1e20))
        x = _solve_active_set(nlp, A, np.zeros(m, bool))
        np.testing.assert_allclose(x, x_true, atol=1e-9)
        nlp.cu[0] = nlp.cl[0] + 1.0     # one row fewer: 4 equations, 5 free variables: not determined
        assert _solve_active_set(nlp, A, np.zeros(m, bool)) is None
