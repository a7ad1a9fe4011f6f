"""Named parameters: defined once, bound cheaply and validated, pickled, recorded in the results."""

import pickle

import numpy as np
import pytest
from conftest import MODELS

import pympc
from pympc.errors import ModelError
from pympc.mechanics import (
    GeneralMethod, Gravity, Parameter, Particle, PointForce, Slot, Spring, System, TreeMethod, dump_model,
    load_model, slider_chain,
)
from pympc.mechanics.modelfile import build_model, tomllib

OSC = MODELS / "friction_oscillator.toml"


def oscillator_in_python():
    """The friction oscillator of models/friction_oscillator.toml, built in Python with the same parameters."""
    s = System("osc", parameters={"m": 1.0, "K": 15.0, "F0": 10.0, "w": 1.0, "g": 9.8, "mu": 0.3,
                                  "mu_s": Parameter("mu_s", 0.4, bounds=(0.0, 2.0))})
    s.add(Particle("mass", mass="m"))
    s.add(Slot("slot", "mass", "ground", mu="mu", mu_s="mu_s"))
    s.add(Gravity("gravity", g=(0.0, "-g")))
    s.add(Spring("spring", "mass", "ground", k="K"))
    s.add(PointForce("drive", "mass", value=("F0*sin(w*t)", 0.0)))
    return s


def test_python_and_file_systems_bind_the_same_way():
    py, f = oscillator_in_python(), load_model(OSC)
    a = pympc.simulate(py, (0.0, 8.0), params={"mu": 0.25, "F0": 9.0}, samples=81)
    b = pympc.simulate(f, (0.0, 8.0), params={"mu": 0.25, "F0": 9.0}, samples=81)
    with pytest.warns(DeprecationWarning, match="write params="):     # the old name of params
        c = pympc.simulate(OSC, (0.0, 8.0), overrides={"mu": 0.25, "F0": 9.0}, samples=81)
    assert a.success and b.success and c.success
    np.testing.assert_allclose(a.q, b.q, atol=1e-12)
    np.testing.assert_array_equal(b.q, c.q)
    assert a.parameters["mu"] == b.parameters["mu"] == 0.25 and a.parameters["F0"] == 9.0
    # binding changed the motion: the default parameters give another one
    d = pympc.simulate(f, (0.0, 8.0), samples=81)
    assert np.abs(d.q - b.q).max() > 1e-3


def test_bind_leaves_the_original_and_derived_parameters_follow(tmp_path):
    text = OSC.read_text().replace("mu_s = 0.4", 'mu_s = "mu + 0.1"')
    s = build_model(tomllib.loads(text))
    t = s.bind(mu=0.5)
    assert s.parameters["mu_s"] == pytest.approx(0.4) and t.parameters["mu_s"] == pytest.approx(0.6)
    assert t.slots[0].mu == 0.5 and t.slots[0].static_mu == pytest.approx(0.6)
    assert s.slots[0].mu == 0.3
    # a derived parameter given itself takes the given value
    assert s.bind(mu=0.5, mu_s=0.9).slots[0].static_mu == 0.9


@pytest.mark.parametrize("values, needle", [
    ({"nu": 0.3}, "unknown parameter(s) ['nu']; known: "),
    ({"mu": float("nan")}, "finite number"),
    ({"mu": "a lot"}, "parameter 'mu': cannot parse 'a lot'"),
    ({"mu": "nu/2"}, "parameter 'mu': unknown name 'nu'"),
    ({"mu": "t/10"}, "parameter 'mu': unknown name 't'"),      # a parameter is a number, not a function of time
    ({"mu": None}, "expected a number or an expression string"),
    ({"mu": [0.3]}, "expected a number or an expression string"),
    ({"mu": 0.5}, "below mu"),                     # μ_s = 0.4 < μ: element validation runs on binding
    ({"m": -1.0}, "must be > 0"),
    ({"mu_s": 3.0}, "outside its bounds"),
])
def test_binding_is_validated(values, needle):
    with pytest.raises(ModelError, match=None) as exc:
        oscillator_in_python().bind(values)
    assert needle in str(exc.value)


def test_values_may_be_expressions_of_the_model_language():
    """Strings are parsed by the model file's safe parser (constants, functions, the other parameters), never float()."""
    s = oscillator_in_python()
    t = s.bind({"F0": "3*pi", "mu": "mu_s/2"})
    assert t.parameters["F0"] == 3 * np.pi and t.parameters["mu"] == 0.2
    # a number given in the same call is what the expression sees
    assert s.bind({"mu_s": 0.8, "mu": "mu_s - 0.1"}).parameters["mu"] == pytest.approx(0.7)
    # a numeric string is an expression too (the same value), not a silent float() of anything
    assert s.bind(mu="0.25").parameters["mu"] == 0.25
    assert load_model(OSC, w="2*pi/10").parameters["w"] == pytest.approx(np.pi / 5)
    tr = pympc.simulate(OSC, (0.0, 1.0), params={"w": "pi/4"}, samples=11)
    assert tr.parameters["w"] == np.pi / 4


@pytest.mark.parametrize("given", [["mu", 0.3], 0.3, "mu=0.3", (("mu", 0.3),)])
def test_parameter_values_that_are_not_a_mapping_are_refused_by_name(given):
    with pytest.raises(ModelError, match="must be a mapping"):
        oscillator_in_python().bind(given)
    for keyword in ("params", "overrides"):
        with pytest.raises(pympc.errors.OptionError, match=f"^{keyword} must be a mapping"):
            pympc.simulate(OSC, (0.0, 1.0), **{keyword: given})


def test_binding_a_parameter_that_nothing_uses_is_an_error():
    s = oscillator_in_python()
    s.add_parameter("unused", 1.0)
    with pytest.raises(ModelError, match="would change nothing"):
        s.bind(unused=2.0)


def test_file_overrides_name_the_file(tmp_path):
    with pytest.raises(ModelError, match="friction_oscillator.toml: overrides: .*unknown parameter"):
        load_model(OSC, nu=0.2)
    with pytest.raises(ModelError, match="friction_oscillator.toml"):
        pympc.simulate(OSC, params={"mu": float("inf")})


def test_chain_files_are_expressions_of_their_parameters(tmp_path):
    path = tmp_path / "chain.toml"
    path.write_text(dump_model(slider_chain(3)))
    s = load_model(path, mu=0.9)
    assert [sl.mu for sl in s.slots] == [0.9, 0.9, 0.9]
    assert [sl.static_mu for sl in s.slots] == [0.9, 0.9, 0.9]     # μ_s follows μ unless given
    assert 'mu = "mu"' in path.read_text()
    with pytest.raises(ModelError, match="unknown parameter"):
        load_model(path, n=5)


def test_parameter_definitions_and_bounds_in_model_files(tmp_path):
    text = OSC.read_text().replace("mu = 0.3 ", 'mu = {value = 0.3, bounds = [0.0, 1.0], description = "kinetic"} ')
    s = build_model(tomllib.loads(text), "osc.toml")
    p = s.parameter_definitions["mu"]
    assert p.bounds == (0.0, 1.0) and p.description == "kinetic"
    with pytest.raises(ModelError, match="outside its bounds"):
        s.bind(mu=1.5)
    again = build_model(tomllib.loads(dump_model(s)))
    assert again.parameter_definitions["mu"].bounds == (0.0, 1.0)
    bad = OSC.read_text().replace("mu = 0.3 ", "mu = {value = 2.0, bounds = [0.0, 1.0]} ")
    with pytest.raises(ModelError, match=r"osc.toml: \[parameters\], key 'mu': .*outside its bounds"):
        build_model(tomllib.loads(bad), "osc.toml")


@pytest.mark.parametrize("path, name", [(OSC, "K"), (MODELS / "cross_slide.toml", "mu1"),
                                        (MODELS / "slider_crank.toml", "M0")], ids=lambda p: getattr(p, "stem", p))
def test_everything_that_crosses_a_process_boundary_pickles(path, name):
    s = load_model(path)
    s = s.bind({name: s.parameters[name] * 1.01})
    for form in (GeneralMethod, TreeMethod):
        f = pickle.loads(pickle.dumps(form(s)))
        q, qd = f.initial_state()
        a, b = f.assemble(q, qd, 0.3), form(s).assemble(q, qd, 0.3)
        np.testing.assert_array_equal(a.h, b.h)
    tr = pympc.simulate(s, (0.0, 0.5), samples=11)
    back = pickle.loads(pickle.dumps(tr))
    np.testing.assert_array_equal(back.q, tr.q)
    assert back.parameters == tr.parameters and back.model_hash == tr.model_hash
    assert [e.mode_after for e in back.events] == [e.mode_after for e in tr.events]
    # the unpickled System simulates to the same trajectory
    again = pympc.simulate(pickle.loads(pickle.dumps(s)), (0.0, 0.5), samples=11)
    np.testing.assert_array_equal(again.q, tr.q)


def test_trajectory_files_keep_parameters_and_model_hash(tmp_path):
    tr = pympc.simulate(OSC, (0.0, 1.0), params={"K": 12.0}, samples=11)
    tr.save(tmp_path / "run.npz")
    back = pympc.Trajectory.load(tmp_path / "run.npz")
    assert back.parameters == tr.parameters and back.parameters["K"] == 12.0
    assert back.model_hash == tr.model_hash == load_model(OSC, K=12.0).fingerprint()
    assert tr.model_hash != load_model(OSC).fingerprint()


BAD_EXPRESSIONS = {
    "division by zero": "1/0",
    "square root of -1": "sqrt(-1)",
    "overflow": "10**10**10",
    "too deep": "+".join(["1"] * 200_000),
}


@pytest.mark.parametrize("case", sorted(BAD_EXPRESSIONS))
def test_expressions_that_are_not_finite_name_file_table_and_key(tmp_path, case):
    path = tmp_path / "model.toml"
    path.write_text(OSC.read_text().replace('k = "K"', f'k = "{BAD_EXPRESSIONS[case]}"'))
    with pytest.raises(ModelError) as exc:
        load_model(path)
    msg = str(exc.value)
    assert str(path) in msg and "[[forces]] #2 ('spring')" in msg and "'k'" in msg


@pytest.mark.filterwarnings("ignore:divide by zero")
def test_expression_not_finite_at_run_time_is_an_error(tmp_path):
    path = tmp_path / "model.toml"
    path.write_text(OSC.read_text().replace('"F0*sin(w*t)"', '"F0/(x - x)"'))
    with pytest.raises(ModelError) as exc:
        pympc.simulate(path, (0.0, 1.0))
    assert "('drive'), key 'value'" in str(exc.value) and "cannot be evaluated at t=0" in str(exc.value)


def test_binary_model_file_is_a_model_error(tmp_path):
    path = tmp_path / "model.toml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    with pytest.raises(ModelError, match="not a text model file"):
        load_model(path)


def test_parameter_names_may_not_hide_time_state_or_functions():
    s = System("x")
    for bad in ("t", "vx", "sin", "pi", "2mu"):
        with pytest.raises(ModelError, match=f"parameter '{bad}'"):
            s.add_parameter(bad, 1.0)


def test_command_line_overrides_take_the_model_language(tmp_path, capsys):
    from pympc.cli import main
    assert main(["simulate", str(OSC), "--t-end", "1", "--set", "w=pi/4", "--set", "F0=2*K",
                 "--no-plots", "--out", str(tmp_path)]) == 0
    tr = pympc.Trajectory.load(tmp_path / "trajectory.npz")
    assert tr.parameters["w"] == np.pi / 4 and tr.parameters["F0"] == 30.0
    assert main(["simulate", str(OSC), "--t-end", "1", "--set", "w=pi/", "--no-plots", "--out", str(tmp_path)]) != 0
    assert "parameter 'w': cannot parse 'pi/'" in capsys.readouterr().err


@pytest.mark.parametrize("given", [[], (), [1], 0.3, [None]])
def test_sensitivities_that_are_not_parameter_names_are_refused_by_name(given):
    with pytest.raises(pympc.errors.OptionError, match=r"^sensitivities must be parameter names"):
        pympc.simulate(OSC, (0.0, 1.0), sensitivities=given)


def _fields(system):
    """Every element of ``system`` as bound now, field by field (expressions as their text and their value at
    a few times and states): what a formulation reads of it."""
    out = {}
    for name in (*system.bodies, *system.joints, *system.forces):
        e = system.get(name)
        for f in type(e).FIELDS:
            v = getattr(e, f)
            items = v if isinstance(v, tuple) else (v,)
            out[name, f] = tuple(x if not hasattr(x, "text") else x.value if x.is_constant else
                                 (x.text, [x(t=t, x=0.1, y=0.2, vx=0.3, vy=0.4) for t in (0.0, 0.7, 2.1)])
                                 for x in items)
    return out


@pytest.mark.parametrize("steps", [
    [{"mu": 0.25}],
    [{"mu": 0.25}, {"F0": 7.0}, {"mu": 0.3}],           # a chain of bindings, back to a value bound before
    [{"w": 2.0}, {"K": 12.0, "m": 2.0}],
    [{"mu_s": 0.5}, {"mu": "mu_s - 0.2"}],
])
def test_a_bound_copy_resolves_as_a_system_bound_from_scratch(steps):
    """bind() takes the parent's resolved elements whose parameters kept their values (issue 28): every
    element must read as the same binding resolved from scratch (a pickled copy keeps no cache), and the
    elements that depend on a changed parameter must be made again."""
    s = oscillator_in_python()
    s.validate()
    for values in steps:
        parent = s
        s = s.bind(values)
        fresh = pickle.loads(pickle.dumps(s))            # the same binding, nothing resolved yet
        assert _fields(s) == _fields(fresh)
        assert s.fingerprint() == fresh.fingerprint()
        changed = {k for k in s.parameters if s.parameters[k] != parent.parameters[k]}
        for name in (*s.bodies, *s.joints, *s.forces):
            uses = set().union(*(getattr(getattr(s.definition(name), f), "parameters", set())
                                 if not isinstance(getattr(s.definition(name), f), tuple) else
                                 set().union(*(getattr(x, "parameters", set()) for x in getattr(s.definition(name), f)))
                                 for f in type(s.definition(name)).FIELDS))
            assert (s.get(name) is parent.get(name)) == (not uses & changed), name
    a = pympc.simulate(s, (0.0, 6.0), samples=61)
    b = pympc.simulate(fresh, (0.0, 6.0), samples=61)
    np.testing.assert_array_equal(a.q, b.q)
    assert [e.time for e in a.events] == [e.time for e in b.events]


def test_a_bound_copy_still_checks_its_values():
    """The names check is carried over to a bound copy; the values are checked every time."""
    s = oscillator_in_python()
    s.validate()
    t = s.bind(mu=0.2)
    with pytest.raises(ModelError, match="mu_s"):
        t.bind(mu=0.45)                         # μ > μ_s
    with pytest.raises(ModelError, match="mass"):
        t.bind(m=-1.0)


def test_the_forcing_time_scale_is_made_again_only_for_other_elements():
    from pympc.dynamics.crossings import TimeScale
    s = load_model(OSC)
    first = TimeScale.of(s)
    assert TimeScale.of(s.bind(mu=0.2)) is first           # μ: the drive is the same object
    faster = TimeScale.of(s.bind(w=4.0))
    assert faster is not first and faster.tau(0.0, 1.0) == pytest.approx(0.25) and first.tau(0.0, 1.0) == 1.0
    assert TimeScale(s.bind(w=4.0)).tau(0.0, 1.0) == faster.tau(0.0, 1.0)


def test_the_bound_copies_share_the_model_body_of_their_fingerprint():
    """bind(): the element lines of the model file (what the fingerprint hashes besides the parameters) are made
    once for a system and all its bound copies, whichever asks first; a change of the system makes them again."""
    s = oscillator_in_python()
    copies = [s.bind({"mu": mu}) for mu in (0.1, 0.2, 0.25)]
    prints = [c.fingerprint() for c in copies]                  # the copies first, the original never
    assert copies[0]._cache["model_body"] is s._cache["model_body"] is copies[2]._cache["model_body"]
    assert "lines" in s._cache["model_body"]
    for c, fp in zip(copies, prints):
        assert fp == pickle.loads(pickle.dumps(c)).fingerprint()     # from scratch: nothing cached
    assert len(set(prints)) == 3
    s.add_parameter("unused_here", 1.0)                             # a change: the lines are made again
    assert "model_body" not in s._cache
    assert s.fingerprint() == pickle.loads(pickle.dumps(s)).fingerprint() != prints[0]
    assert copies[0].fingerprint() == prints[0]                     # the copies keep their own definitions
