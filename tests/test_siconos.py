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


def _dat(tmp_path, header_n, data_n, tail="a comment\n"):
    rng = np.random.default_rng(data_n)
    M = rng.integers(-3, 4, (data_n, data_n))
    q = rng.integers(-3, 4, data_n)
    body = "\n".join(" ".join(str(v) for v in col) for col in M.T) + "\n" + " ".join(map(str, q)) + "\n"
    f = tmp_path / f"h{header_n}_d{data_n}.dat"
    f.write_text(f"{header_n}\n0\n{header_n}\n{header_n}\n{header_n} {header_n}\n" + body + tail)
    return f


@pytest.mark.parametrize("tail", ["a comment\n", "", "\n\n"])
def test_siconos_header_n_smaller_than_the_data_is_an_error(tmp_path, tail):
    f = _dat(tmp_path, 2, 3, tail)  # 9 + 3 numbers, header says 2: 6 numbers read, more left over
    with pytest.raises(pympc.ProblemError, match="n = 2") as exc:
        pympc.read_siconos(f)
    assert str(f) in str(exc.value)
    assert pympc.read_siconos(_dat(tmp_path, 3, 3, tail)).n == 3  # the consistent file reads


def test_siconos_numbers_left_over_after_whole_lines(tmp_path):
    f = tmp_path / "left.dat"
    f.write_text("2\n0\n2\n2\n2 2\n1 0\n0 1\n-1 -1\n5 5\ncomment\n")  # a third line of numbers
    with pytest.raises(pympc.ProblemError, match="left over") as exc:
        pympc.read_siconos(f)
    assert str(f) in str(exc.value) and "line 9" in str(exc.value)


@pytest.mark.parametrize("tail", ["a comment\n", ""])
def test_siconos_header_n_larger_than_the_data_is_an_error(tmp_path, tail):
    f = _dat(tmp_path, 4, 3, tail)
    with pytest.raises(pympc.ProblemError, match="n = 4") as exc:
        pympc.read_siconos(f)
    assert str(f) in str(exc.value)


def test_siconos_size_lines_must_agree_with_n(tmp_path):
    f = tmp_path / "sizes.dat"
    f.write_text("2\n0\n3\n2\n2 2\n1 0\n0 1\n-1 -1\n")
    with pytest.raises(pympc.ProblemError, match="line 3"):
        pympc.read_siconos(f)
