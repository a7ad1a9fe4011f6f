"""The direct writer of chain model files (issue 28 point 5): the same file as through the System, bad input refused."""

import io
import math

import pytest

from pympc.cli import main
from pympc.errors import ModelError
from pympc.mechanics import dump_model, load_model, slider_chain
from pympc.mechanics import write_slider_chain
from pympc.mechanics.generators import _check_rows
from pympc.mechanics.modelfile import build_model, tomllib


def _direct(n, chunk=4096, **kw):
    f = io.StringIO()
    write_slider_chain(n, f, chunk=chunk, **kw)
    return f.getvalue()


@pytest.mark.parametrize("n", [1, 2, 3, 4, 9, 33])
@pytest.mark.parametrize("kw", [{}, {"mu": 0.7, "mu_s": 0.9}, {"mass": 2.5, "k": 0.0, "g": 0.0, "v0": 0.0, "t_end": 3},
                                {"mu": 0, "force": -4.0, "omega": 1e-3}])
def test_direct_file_is_the_file_written_through_the_system(n, kw):
    """Byte for byte the text of dump_model(slider_chain(...)), for any chunking, and it reads back as that System."""
    via_system = dump_model(slider_chain(n, **kw))
    for chunk in (1, 2, 5, 4096):
        assert _direct(n, chunk, **kw) == via_system
    again = build_model(tomllib.loads(_direct(n, **kw)))
    assert again.fingerprint() == slider_chain(n, **kw).fingerprint()
    assert [s.guide for s in again.slots] == ["ground"] + [f"s{i}" for i in range(1, n)]


@pytest.mark.parametrize("kw", [{"mu": -0.1}, {"mu": 0.5, "mu_s": 0.2}, {"mass": 0.0}, {"mass": -1.0}, {"k": -1.0},
                                {"mu": math.nan}, {"v0": math.inf}, {"g": math.nan}, {"t_end": "x"},
                                {"colour": 1}])
def test_bad_parameters_are_refused_before_anything_is_written(kw):
    """Every parameter the System path refuses, the direct writer refuses too, with nothing written."""
    with pytest.raises((ModelError, TypeError) if "colour" in kw else ModelError):
        dump_model(slider_chain(5, **kw))
    f = io.StringIO()
    with pytest.raises(ModelError):
        write_slider_chain(5, f, **kw)
    assert f.getvalue() == ""


def test_numbers_that_vary_along_the_chain_are_checked():
    """A non-finite number or a zero-length direction anywhere in a chunk names its slider."""
    good = (0.1, 0.0, 1.0, 0.0, 1.0, 0.0, 0.1, 0.0)
    _check_rows([good] * 3, 1)
    for k, bad in ((2, math.inf), (3, math.nan), (4, 0.0), (0, -math.inf), (7, math.nan)):
        row = list(good)
        row[k] = bad
        if k == 4:
            row[5] = 0.0          # direction (0, 0)
        with pytest.raises(ModelError, match="slider s12 or slot12"):
            _check_rows([good, good, tuple(row), good], 10)


def test_n_must_be_positive():
    for n in (0, -3):
        with pytest.raises(ModelError, match="at least 1"):
            write_slider_chain(n, io.StringIO())


def test_cli_chain_writes_the_file_whole_or_not_at_all(tmp_path, capsys):
    out = tmp_path / "chain40.toml"
    assert main(["chain", "40", "--mu", "0.2", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == dump_model(slider_chain(40, mu=0.2))
    assert len(load_model(out).slots) == 40
    capsys.readouterr()
    assert main(["chain", "3"]) == 0
    assert capsys.readouterr().out == dump_model(slider_chain(3))
    bad = tmp_path / "bad.toml"
    assert main(["chain", "40", "--mu", "-1", "--out", str(bad)]) == 2
    assert "slot1.mu" in capsys.readouterr().err
    assert main(["chain", "4", "--out", str(tmp_path / "no" / "such" / "dir.toml")]) == 2
    assert "--out" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain40.toml"]
