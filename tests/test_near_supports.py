"""The compiled decision of nearly singular supports (``_event_sets.near_supports_empty``) against the
enumeration's own NumPy test of them (``enumeration.nearly_singular_empty``: LAPACK's estimate of the reciprocal
condition, the least-squares residual, the LU point), support by support and as the simulator takes a compiled
solution set (``events._taken``): never empty where the NumPy test is not, on the real event HLCPs of the
example models (their runs, the slider-crank's with random parameters) and on random problems with a support singular to round-off, its
``c`` out of its range, in it, and near the threshold of the range test."""

import numpy as np
from conftest import MODELS

import pympc
from pympc.complementarity import HLCP
from pympc.complementarity._kernel import batched_leaves
from pympc.complementarity.enumeration import _SUPPORTS, LU_POINT_RCOND, WALK_POINTS_FROM, nearly_singular_empty
from pympc.complementarity.support import lu_rcond
from pympc.dynamics import events as events_module
from pympc.dynamics._event_sets import NEAR_EMPTY_RCOND, near_supports_empty, small_solution_set, walked_solution_set
from pympc.mechanics import slider_chain

TOL = 1e-9


def _compare(h, tally):
    """Every nearly singular support of ``h`` (equilibrated, batched_leaves' status −1) that near_supports_empty
    decides empty is empty by nearly_singular_empty (its LAPACK estimate below the LU point's threshold too: no
    LU point is looked at); ``tally`` counts supports, decided ones and those the NumPy test finds not empty."""
    he = h.equilibrated()[0]
    xs = _SUPPORTS[h.n]
    rc, _, st = batched_leaves(he.A, he.B, he.c, xs, TOL, 1e3 * TOL)
    decided = st.copy()
    near_supports_empty(he.A, he.B, he.c, xs, rc, decided, TOL)
    assert ((decided == st) | ((st == -1) & (decided == -2))).all()     # only −1 becomes −2
    for k in np.flatnonzero(st == -1):
        empty = nearly_singular_empty(he, xs[k:k + 1], TOL)
        tally["near"] += 1
        tally["not empty"] += not empty
        if decided[k] == -2:
            tally["decided"] += 1
            assert empty
            C = np.where(xs[k], he.A, he.B)
            assert rc[k] <= NEAR_EMPTY_RCOND and lu_rcond(C)[2] <= LU_POINT_RCOND
    return st


def _as_taken(h):
    """The compiled set of ``h`` as the simulator takes it now (near_supports_empty in the kernel, the NumPy
    test on what is left) and as it took it before (the NumPy test on every nearly singular support, with the
    set's points): the same answer."""
    solved = small_solution_set if h.n < WALK_POINTS_FROM else walked_solution_set
    ok, P, near = solved(h.A, h.B, h.c, h._a_diagonal, _SUPPORTS[h.n], TOL)
    now = events_module._taken(h, ok, near, P)
    he, dx, dy = h.equilibrated()
    st = batched_leaves(he.A, he.B, he.c, _SUPPORTS[h.n], TOL, 1e3 * TOL)[2]
    every = np.flatnonzero(st == -1)
    before = ok and (not every.size or
                     nearly_singular_empty(he, _SUPPORTS[h.n][every], TOL, P / np.concatenate([dx, dy])))
    assert now == before
    return now


def _taken_hlcps(run):
    """The event HLCPs whose compiled solution sets ``run()`` takes or declines (every call of ``events._taken``)."""
    seen = []
    taken = events_module._taken

    def recording(h, *args):
        seen.append(h)
        return taken(h, *args)
    events_module._taken = recording
    try:
        run()
    finally:
        events_module._taken = taken
    return seen


def _run_event_hlcps():
    """Those of the slider-crank's run (2 s) and other example models' runs."""
    def run():
        for name in ("slider_crank", "friction_oscillator", "cross_slide", "inclined_slot_spring"):
            pympc.simulate(pympc.load_model(MODELS / f"{name}.toml"), (0.0, 2.0), samples=2)
        pympc.simulate(slider_chain(3), (0.0, 2.0), samples=2)
    return _taken_hlcps(run)


def _varied_crank_event_hlcps(rng):
    """Those of slider-cranks of random torque, friction and link lengths (runs of 1 s)."""
    def run():
        for _ in range(6):
            mu = rng.uniform(0.05, 0.5)
            system = pympc.load_model(MODELS / "slider_crank.toml", M0=rng.uniform(1.0, 8.0), mu=mu,
                                      mu_s=mu + rng.uniform(0.0, 0.2), l1=rng.uniform(0.1, 0.3),
                                      l2=rng.uniform(0.4, 0.9))
            pympc.simulate(system, (0.0, 1.0), samples=2)
    return _taken_hlcps(run)


def test_nearly_singular_supports_of_real_event_hlcps_decided_as_the_numpy_test_decides(rng):
    """On the event HLCPs of the example models' runs and of slider-cranks of random parameters: every support the kernel decides
    empty is empty by nearly_singular_empty, and the compiled set is taken exactly when the NumPy test on every
    nearly singular support took it; the slider-crank's stick supports (singular to round-off: the slider held,
    the crank cannot move) are decided in the kernel."""
    tally = dict(near=0, decided=0, **{"not empty": 0})
    taken = 0
    problems = _run_event_hlcps() + _varied_crank_event_hlcps(rng)
    for h in problems:
        _compare(h, tally)
        taken += _as_taken(h)
    assert tally["near"] >= 20 and tally["decided"] >= 0.9 * tally["near"]
    assert taken > 0.8 * len(problems)


def _degenerate_problem(rng, kind):
    """A random HLCP of 2–6 pairs with one support singular to round-off (a column the floating-point combination
    of its others; the supports sharing those columns alike): ``c`` at random (0), in the support's range with a
    nonnegative point (1) or any point (2), or in it plus a multiple of its null direction near the range test's
    threshold (3); its rows scaled over six decades half the time."""
    n = int(rng.integers(2, 7))
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    xs = _SUPPORTS[n]
    k = int(rng.integers(len(xs)))
    C = np.where(xs[k], A, B)
    j = int(rng.integers(n))
    others = [i for i in range(n) if i != j]
    col = C[:, others] @ (rng.standard_normal(n - 1) * (rng.random(n - 1) < 0.7))
    (A if xs[k, j] else B)[:, j] = col
    C = np.where(xs[k], A, B)
    if kind == 0:
        c = rng.standard_normal(n)
    elif kind == 1:
        c = C @ np.abs(rng.standard_normal(n))
    elif kind == 2:
        c = C @ rng.standard_normal(n)
    else:
        c = C @ rng.standard_normal(n) + np.linalg.svd(C)[0][:, -1] * 10.0 ** rng.uniform(-8, -4)
    if rng.random() < 0.5:
        r = 10.0 ** rng.uniform(-3, 3, (n, 1))
        A, B, c = A * r, B * r, c * r[:, 0]
    return HLCP(A, B, c)


def test_nearly_singular_supports_of_random_degenerate_problems_never_claimed_empty_wrongly(rng):
    """On 2000 random problems with supports singular to round-off: never empty where nearly_singular_empty finds
    ``c`` within the range test's threshold or an LU point (hundreds of such supports, near the threshold among
    them); most of those it finds empty are decided in the kernel; the compiled set taken as before."""
    tally = dict(near=0, decided=0, **{"not empty": 0})
    for trial in range(2000):
        h = _degenerate_problem(rng, trial % 4)
        _compare(h, tally)
        _as_taken(h)
    empty = tally["near"] - tally["not empty"]
    assert tally["not empty"] >= 300 and empty >= 1000
    assert tally["decided"] >= 0.7 * empty
