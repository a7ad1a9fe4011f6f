"""Problem construction, validation, conversion and files."""

import numpy as np
import pytest

import pympc
from pympc import HLCP, LCP, ProblemError


@pytest.mark.parametrize(
    "args, word",
    [
        (([[np.nan]], [1.0]), "non-finite"),
        (([[1.0]], [np.inf]), "non-finite"),
        (([[1.0, 2.0]], [1.0]), "square"),
        (([[1.0, 0.0], [0.0, 1.0]], [1.0, 2.0, 3.0]), "length 2"),
        (([["a"]], [1.0]), "numeric"),
        (([], []), "2-D"),
        ((np.zeros((0, 0)), []), "empty"),
        (([1.0, 2.0], [1.0, 2.0]), "2-D"),
        (([[1.0]], [[[1.0]]]), "1-D"),
    ],
)
def test_lcp_bad_input_is_a_clear_problem_error(args, word):
    with pytest.raises(ProblemError, match=word):
        LCP(*args)


def test_hlcp_bad_input_names_the_argument():
    with pytest.raises(ProblemError, match="B must have shape"):
        HLCP(np.eye(2), np.eye(3), [1, 1])
    with pytest.raises(ProblemError, match="^c "):
        HLCP(np.eye(2), np.eye(2), [1, np.nan])
    with pytest.raises(ProblemError, match="A must be square"):
        HLCP(np.ones((2, 3)), np.eye(2), [1, 1])


def test_problem_data_is_copied_and_read_only():
    M = np.eye(2)
    p = LCP(M, [1.0, 1.0])
    M[0, 0] = 5.0
    assert p.M[0, 0] == 1.0
    with pytest.raises(ValueError):
        p.M[0, 0] = 3.0


def test_lcp_to_hlcp_and_back(rng):
    M = rng.standard_normal((4, 4))
    q = rng.standard_normal(4)
    h = LCP(M, q).to_hlcp()
    np.testing.assert_array_equal(h.A, np.eye(4))
    np.testing.assert_array_equal(h.B, -M)
    red = h.to_lcp()
    assert red.basis.all()
    np.testing.assert_allclose(red.lcp.M, M, atol=1e-14)
    np.testing.assert_allclose(red.lcp.q, q, atol=1e-14)


def test_hlcp_with_singular_a_finds_a_pivoted_basis():
    # pair 2 has a zero A column: y_2 must be basic
    A = np.array([[2.0, 0.0], [1.0, 0.0]])
    B = np.array([[0.0, 1.0], [0.0, 3.0]])
    h = HLCP(A, B, [2.0, 4.0])
    basis = h.find_basis()
    assert basis.tolist() == [True, False]
    red = h.to_lcp()
    r = pympc.solve(h)
    assert r.success and h.is_solution(r.x, r.y)
    # the LCP form has the same solutions, mapped by the reduction
    z, w = red.to_lcp_point(r.x, r.y)
    assert red.lcp.is_solution(z, w)


def test_hlcp_without_any_nonsingular_basis():
    h = HLCP(np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([[-1.0, 0.0], [-1.0, 0.0]]), [1.0, 2.0])
    assert h.find_basis() is None
    with pytest.raises(ProblemError, match="no nonsingular complementary basis"):
        h.to_lcp()
    r = pympc.solve(h)
    assert r.status == pympc.Status.INFEASIBLE  # rows 1 and 2 contradict each other: proved


def test_npz_round_trip(tmp_path, rng):
    p = LCP(rng.standard_normal((3, 3)), rng.standard_normal(3), name="demo")
    p.save(tmp_path / "p.npz")
    p2 = pympc.load_problem(tmp_path / "p.npz")
    np.testing.assert_array_equal(p.M, p2.M)
    np.testing.assert_array_equal(p.q, p2.q)
    assert p2.name == "demo"
    h = p.to_hlcp()
    h.save(tmp_path / "h.npz")
    h2 = pympc.read_problem(tmp_path / "h.npz")
    np.testing.assert_array_equal(h.B, h2.B)


def test_bad_files_are_problem_errors(tmp_path):
    with pytest.raises(ProblemError, match="could not read"):
        pympc.load_problem(tmp_path / "missing.npz")
    bad = tmp_path / "bad.dat"
    bad.write_text("2\n0\n2\n2\n2 2\n1 x\n0 1\n1 1\n")
    with pytest.raises(ProblemError, match="line 6"):
        pympc.read_siconos(bad)
    short = tmp_path / "short.dat"
    short.write_text("2\n0\n2\n2\n2 2\n1 0\n0 1\n1\n")
    with pytest.raises(ProblemError, match="need 6"):
        pympc.read_siconos(short)
    with pytest.raises(ProblemError, match="unknown problem file type"):
        pympc.read_problem(tmp_path / "x.txt")


def test_siconos_reader_is_column_major(tmp_path):
    f = tmp_path / "p.dat"
    f.write_text("2\n0\n2\n2\n2 2\n1 3\n2 4\n-1 -2\n# comment line\n")
    p = pympc.read_siconos(f)
    np.testing.assert_array_equal(p.M, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(p.q, [-1.0, -2.0])
    assert p.comment == "# comment line"
