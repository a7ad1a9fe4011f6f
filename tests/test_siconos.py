"""Every instance of the Siconos LCP collection, with its outcome stated here.

Where n is small the judge is enumeration of every complementary support;
for the large instances, verification of the returned point.
"""

import numpy as np
import pytest

import pympc
from pympc import SetKind, Status

from conftest import DATA, SICONOS

# file stem -> (Lemke's outcome, the solution set by enumeration or None when n is too large)
EXPECTED = {
    "lcp_CPS_1": (Status.SOLVED, SetKind.CONTINUUM),  # z1 + z2 = 1 (CPS Remark 4.1.14)
    "lcp_CPS_2": (Status.SOLVED, SetKind.UNIQUE),
    # bimatrix game: Lemke with the covering vector e stops on a ray at once, yet three
    # equilibria exist (Lemke-Howson, not Lemke, is the method for games)
    "lcp_CPS_3": (Status.RAY_TERMINATION, SetKind.FINITE),
    "lcp_CPS_4": (Status.SOLVED, SetKind.UNIQUE),
    "lcp_CPS_4bis": (Status.SOLVED, SetKind.UNIQUE),
    "lcp_CPS_5": (Status.SOLVED, SetKind.CONTINUUM),
    "lcp_Pang_isolated_sol": (Status.SOLVED, SetKind.UNIQUE),
    "lcp_Pang_isolated_sol_perturbed": (Status.INFEASIBLE, SetKind.NONE),
    "lcp_deudeu": (Status.SOLVED, SetKind.UNIQUE),
    "lcp_enum_fails": (Status.SOLVED, SetKind.UNIQUE),
    "lcp_exp_murty": (Status.SOLVED, SetKind.UNIQUE),
    "lcp_exp_murty2": (Status.SOLVED, SetKind.UNIQUE),
    "lcp_inf_sol_perturbed": (Status.SOLVED, SetKind.CONTINUUM),
    "lcp_mmc": (Status.SOLVED, None),
    "lcp_ortiz": (Status.SOLVED, SetKind.UNIQUE),
    "lcp_tobenna": (Status.SOLVED, None),
    "lcp_trivial": (Status.SOLVED, SetKind.UNIQUE),
}


def test_every_instance_has_a_stated_outcome():
    assert sorted(EXPECTED) == sorted(f.stem for f in SICONOS)
    assert (DATA / "README.md").exists()


@pytest.mark.parametrize("path", SICONOS, ids=lambda p: p.stem)
def test_siconos_instance(path):
    p = pympc.read_siconos(path)
    status, kind = EXPECTED[path.stem]
    r = pympc.solve(p, fallback=False)   # Lemke's own outcome (pympc.solve's fallback: tests/test_solve_registry.py)
    assert r.status == status, r.message
    if r.success:
        # verified independently of the solver's own check
        assert np.all(r.z >= 0) and np.all(r.w >= 0)
        np.testing.assert_allclose(r.w, p.M @ r.z + p.q, atol=1e-9 * (1 + np.abs(p.q).max()))
        assert np.abs(r.z * r.w).max() <= 1e-9 * (1 + np.abs(r.z).max()) ** 2
    if kind is None:
        return
    s = pympc.enumerate_solutions(p)
    assert s.kind == kind
    for z, w in s.points:
        assert p.is_solution(z, w)
    if r.success and kind in (SetKind.UNIQUE, SetKind.FINITE):
        assert any(np.allclose(r.z, z, atol=1e-7) for z, _ in s.points)
    if kind == SetKind.CONTINUUM:
        (z0, w0), (dz, dw) = s.continuum_points[0], s.directions[0]
        assert np.abs(dz).max() + np.abs(dw).max() > 0
        # a small step along the direction stays in the solution set
        t = 1e-3
        assert p.is_solution(z0 + t * dz, w0 + t * dw, tol=1e-7)


def test_murty_example_takes_exponentially_many_pivots():
    # Murty (1988), ch. 6: Lemke's method needs 2^n pivots on this family
    p = pympc.read_siconos(DATA / "lcp_exp_murty2.dat")
    assert pympc.solve(p).pivots == 2 ** p.n


def test_cps1_continuum_is_the_segment():
    p = pympc.read_siconos(DATA / "lcp_CPS_1.dat")
    s = pympc.enumerate_solutions(p)
    z0 = s.continuum_points[0][0]
    assert z0.sum() == pytest.approx(1.0)
    dz = s.directions[0][0]
    assert dz.sum() == pytest.approx(0.0, abs=1e-12)


def test_large_p_matrix_instance_is_classified():
    p = pympc.read_siconos(DATA / "lcp_mmc.dat")
    c = pympc.classify(p)
    assert c.p_matrix is True
