"""The command line as a person meets it: version, help, errors, progress (issue 12)."""

import io
import json

import numpy as np
import pandas as pd
import pytest
from conftest import MODELS, ROOT, run_python

import pympc
from pympc.cli import _Progress, build_parser, main

DATA = ROOT / "tests" / "data"


def test_version_from_the_command_line():
    out = run_python("-m", "pympc.cli", "--version")
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
    out = run_python("-m", "pympc.cli", "simulate", MODELS / "friction_oscillator.toml", "--t-end", "2", "--no-plots",
                     "--out", tmp_path)
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


# ------------------------------------------------------------------ issue 26: where a run goes, and back into a fit
OSC = MODELS / "friction_oscillator.toml"


def _examples(parser_name):
    parser = _subparsers()[parser_name]
    return parser.format_help().split("example:")[1]


@pytest.mark.parametrize("command", ["solve", "classify", "crosscheck"])
def test_file_examples_use_files_a_checkout_ships_outside_the_tests(command):
    example = _examples(command)
    paths = [w for w in example.split() if w.endswith((".dat", ".npz"))]
    assert paths and all(not p.startswith("tests/") and (ROOT / p).is_file() for p in paths), example


def test_a_new_run_never_replaces_an_earlier_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    base = ["simulate", str(OSC), "--t-end", "1", "--no-plots"]
    assert main(base) == 0
    first = tmp_path / "results" / "friction_oscillator"
    before = (first / "trajectory.npz").read_bytes()
    assert main(base + ["--set", "F0=3"]) == 0                  # changed parameters: a folder of their own
    changed = tmp_path / "results" / "friction_oscillator_F0=3"
    assert main(base) == 0                                      # the same command again: numbered, not replaced
    again = tmp_path / "results" / "friction_oscillator-2"
    assert (first / "trajectory.npz").read_bytes() == before
    for folder, f0 in ((first, 10.0), (changed, 3.0), (again, 10.0)):
        run = json.loads((folder / "run.json").read_text())
        assert run["parameters"]["F0"] == f0 and run["status"] == "SUCCESS" and run["t_span"] == [0.0, 1.0]
        assert pympc.Trajectory.load(folder / "trajectory.npz").parameters["F0"] == f0
    assert json.loads((changed / "run.json").read_text())["set"] == {"F0": 3.0}
    assert "F0=3*" in capsys.readouterr().out                   # the printed parameters mark what was set


def test_out_holding_a_run_needs_overwrite(tmp_path, capsys):
    out = tmp_path / "mine"
    argv = ["simulate", str(OSC), "--t-end", "1", "--no-plots", "--out", str(out)]
    assert main(argv) == 0
    before = (out / "trajectory.npz").read_bytes()
    capsys.readouterr()
    assert main(argv + ["--set", "F0=3"]) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and str(out) in err
    assert (out / "trajectory.npz").read_bytes() == before      # refused before anything was written
    assert main(argv + ["--set", "F0=3", "--overwrite"]) == 0
    assert json.loads((out / "run.json").read_text())["parameters"]["F0"] == 3.0


def test_round_trip_simulate_csv_noise_identify_from_the_command_line(tmp_path, capsys):
    """simulate at other parameter values → trajectory.csv → noise → identify from the file's values."""
    truth = {"mu": 0.25, "mu_s": 0.35}       # the model file says 0.3, 0.4: the fit starts there, away from the truth
    run = tmp_path / "osc"
    assert main(["simulate", str(OSC), "--t-end", "10", "--no-plots", "--out", str(run), "--samples", "401",
                 "--set", "mu=0.25", "--set", "mu_s=0.35"]) == 0
    df = pd.read_csv(run / "trajectory.csv", comment="#")
    assert np.array_equal(df["t"], np.linspace(0.0, 10.0, 401))        # the requested times, each once
    sigma = 0.01
    data = df[["t", "mass.x"]].copy()
    data["mass.x"] += sigma * np.random.default_rng(7).standard_normal(len(data))
    data.to_csv(tmp_path / "measured.csv", index=False)
    assert main(["identify", str(OSC), str(tmp_path / "measured.csv"), "--fit", "mu,mu_s", "--noise", str(sigma),
                 "--no-plots", "--out", str(tmp_path / "fit")]) == 0
    res = json.loads((tmp_path / "fit" / "result.json").read_text())
    start = {"mu": 0.3, "mu_s": 0.4}
    for name, value, err in zip(res["names"], res["optimum"], res["stderr"]):
        assert abs(value - truth[name]) <= 4 * err < 0.25 * abs(start[name] - truth[name]), (name, value, err)


def test_a_compilation_is_announced_once_and_timed():
    """The first numba compilation of a command's process prints one notice (never a silent minute)."""
    import io

    import numba

    from pympc._compiling import compile_seconds
    from pympc.cli import _announce_compilation
    stream = io.StringIO()
    _announce_compilation(stream)
    before = compile_seconds()
    numba.njit(lambda x: x + 1)(1)            # a function no cache holds: numba compiles it here
    numba.njit(lambda x: x + 2)(1)
    assert stream.getvalue().count("pympc: compiling pympc's kernels once, about ") == 1
    assert compile_seconds() > before
