"""The command line as a person meets it: version, help, errors, progress (issue 12)."""

import io
import subprocess
import sys

import pytest
from conftest import MODELS, ROOT

import pympc
from pympc.cli import _Progress, build_parser, main

DATA = ROOT / "tests" / "data"


def test_version_from_the_command_line():
    out = subprocess.run([sys.executable, "-m", "pympc.cli", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == f"pympc {pympc.__version__}"


def _subparsers():
    ap = build_parser()
    action = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


def test_every_argument_has_help_and_every_command_an_example():
    commands = _subparsers()
    assert set(commands) >= {"solve", "classify", "crosscheck", "simulate", "chain"}
    for name, parser in commands.items():
        for action in parser._actions:
            assert action.help, (name, action.dest)
        text = parser.format_help()
        assert "example:" in text and f"pympc {name} " in text.split("example:")[1], name
    text = commands["classify"].format_help()
    assert "--max-pairs" in text and "default: 12" in text
    for name, flag in [("simulate", "--formulation"), ("chain", "--mu"), ("chain", "n"), ("solve", "--max-pivots"),
                       ("solve", "file")]:
        assert flag in commands[name].format_help()


def test_help_runs_for_every_command(capsys):
    for name in _subparsers():
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0 and "example:" in capsys.readouterr().out, name


@pytest.mark.parametrize("argv, match", [
    (["classify", str(DATA / "lcp_CPS_1.dat"), "--max-pairs", "-1"], "--max-pairs: -1 must be >= 0"),
    (["solve", str(DATA / "lcp_CPS_1.dat"), "--max-pivots", "0"], "--max-pivots: 0 must be >= 1"),
    (["solve", str(DATA / "lcp_CPS_1.dat"), "--max-pivots", "2.5"], "--max-pivots: '2.5' is not an integer"),
])
def test_bad_counts_are_usage_errors(argv, match, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and match in capsys.readouterr().err


def test_classify_max_pairs_zero_skips_the_enumeration(capsys):
    assert main(["classify", str(DATA / "lcp_CPS_2.dat"), "--max-pairs", "0"]) == 0
    out = capsys.readouterr().out
    assert "P-matrix" in out and "solution set" not in out


def test_missing_end_time_names_the_command_line_option(tmp_path, capsys):
    text = (MODELS / "friction_oscillator.toml").read_text()
    assert "t_end = 30.0" in text
    model = tmp_path / "no_end.toml"
    model.write_text(text.replace("t_end = 30.0", ""))
    assert main(["simulate", str(model), "--no-plots", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--t-end" in err and str(model) in err
    assert main(["simulate", str(MODELS / "friction_oscillator.toml"), "--t-end", "-1", "--no-plots",
                 "--out", str(tmp_path / "o")]) == 2
    assert "--t-end" in capsys.readouterr().err


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("tty", [False, True])
def test_progress_bar_draws_only_on_a_terminal(tty):
    stream = _Stream(tty)
    bar = _Progress(stream)
    bar.start -= 5.0  # as if the run had taken five seconds
    bar(0.5, 0.0, 1.0)
    bar(1.0, 0.0, 1.0)
    bar.close()
    text = stream.getvalue()
    if tty:
        assert text.count("\r") == 2 and "100.0%" in text and text.endswith("\n")
    else:
        assert text == ""


def test_redirected_simulation_log_has_no_carriage_returns(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pympc.cli", "simulate", str(MODELS / "friction_oscillator.toml"),
                          "--t-end", "2", "--no-plots", "--out", str(tmp_path)], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "\r" not in out.stderr and "\r" not in out.stdout


def test_solve_prints_status_names(tmp_path, capsys):
    s = 1e9
    pympc.LCP([[s, 0.0], [0.0, 1.0 / s]], [-s, -1.0]).save(tmp_path / "scaled.npz")
    assert main(["solve", str(tmp_path / "scaled.npz")]) == 0
    out = capsys.readouterr().out
    assert "status    SOLVED" in out and "[1.e+00 1.e+09]" in out
    assert main(["classify", str(tmp_path / "scaled.npz")]) == 0
    out = capsys.readouterr().out
    assert "P-matrix / column W-property: True" in out and "UNIQUE" in out
