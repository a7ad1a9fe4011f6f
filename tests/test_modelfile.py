"""Model files: every model in models/ loads; each kind of bad input gets a clear ModelError."""

import numpy as np
import pytest
from conftest import MODELS

import pympc
from pympc.errors import ModelError
from pympc.mechanics import GeneralMethod, TreeMethod, load_model

GOOD = """
[model]
name = "block"
[parameters]
m = 1.0
mu = 0.3
[[bodies]]
name = "block"
type = "particle"
mass = "m"
[[joints]]
name = "rail"
type = "slot"
slider = "block"
guide = "ground"
direction = [1, 0]
mu = "mu"
[[forces]]
name = "gravity"
type = "gravity"
g = [0, -9.81]
"""


def write(tmp_path, text):
    p = tmp_path / "model.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("path", sorted(MODELS.glob("*.toml")), ids=lambda p: p.stem)
def test_every_model_loads_in_both_formulations(path):
    s = load_model(path)
    for form in (GeneralMethod(s), TreeMethod(s)):
        q, qd = form.initial_state()
        a = form.assemble(q, qd, 0.0)
        assert abs(a.gN).max(initial=0) < 1e-9 and abs(a.g[a.holonomic]).max(initial=0) < 1e-9
    assert s.simulation.get("t_end", 0) > 0


def test_overrides_follow_into_dependent_parameters(tmp_path):
    p = write(tmp_path, GOOD.replace('mu = 0.3', 'mu = 0.3\nmu_s = "1.5*mu"').replace(
        'mu = "mu"', 'mu = "mu"\nmu_s = "mu_s"'))
    s = load_model(p, mu=0.2)
    assert s.parameters["mu_s"] == pytest.approx(0.3)
    assert s.slots[0].static_mu == pytest.approx(0.3)


BAD = {
    "malformed TOML": (GOOD.replace("[model]", "[model"), "not valid TOML"),
    "unknown table": (GOOD + "\n[extras]\nx = 1\n", "unknown table"),
    "unknown key": (GOOD.replace('type = "particle"', 'type = "particle"\ncolour = "red"'), "unknown key"),
    "unknown body": (GOOD.replace('slider = "block"', 'slider = "blok"'), "unknown body 'blok'"),
    "negative mu": (GOOD.replace("mu = 0.3", "mu = -0.3"), "must be >= 0"),
    "mu_s below mu": (GOOD.replace('mu = "mu"', 'mu = "mu"\nmu_s = 0.1'), "below mu"),
    "zero-length direction": (GOOD.replace("direction = [1, 0]", "direction = [0, 0]"), "zero-length direction"),
    "zero mass": (GOOD.replace("m = 1.0", "m = 0.0"), "must be > 0"),
    "negative inertia": (GOOD.replace('type = "particle"', 'type = "rigid"\ninertia = -1'), "must be >= 0"),
    "unknown name in expression": (GOOD.replace('mass = "m"', 'mass = "2*mass_of_block"'), "unknown name"),
    "code in expression": (GOOD.replace('mass = "m"', 'mass = "__import__(\'os\').getpid()"'), "not allowed"),
    "time in a constant": (GOOD.replace('mass = "m"', 'mass = "m*t"'), "unknown name 't'"),
    "bad joint type": (GOOD.replace('type = "slot"', 'type = "glue"'), "is not one of"),
    "missing key": (GOOD.replace('guide = "ground"\n', ""), "missing key"),
    "bad vector": (GOOD.replace("direction = [1, 0]", "direction = [1, 0, 0]"), "two values"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_model_files_get_clear_errors(tmp_path, case):
    text, needle = BAD[case]
    p = write(tmp_path, text)
    with pytest.raises(ModelError) as exc:
        load_model(p)
    msg = str(exc.value)
    assert str(p) in msg and needle in msg, msg


def test_errors_name_the_table_and_key(tmp_path):
    p = write(tmp_path, GOOD.replace("mu = 0.3", "mu = -0.3"))
    with pytest.raises(ModelError, match=r"\[\[joints\]\] #1 \('rail'\), key 'mu'"):
        load_model(p)


def test_unknown_override_and_missing_file(tmp_path):
    with pytest.raises(ModelError, match="unknown parameter"):
        load_model(write(tmp_path, GOOD), friction=0.1)
    with pytest.raises(ModelError, match="cannot read"):
        load_model(tmp_path / "nope.toml")


def test_singular_mass_data_is_reported():
    """A rigid body with zero inertia whose rotation nothing constrains: a clear error, not a traceback."""
    s = pympc.System("spinning point")
    from pympc.mechanics import Gravity, RigidBody
    s.add(RigidBody("b", mass=1.0, inertia=0.0))
    s.add(Gravity("g"))
    with pytest.raises(pympc.SimulationError, match="singular"):
        pympc.simulate(s, (0.0, 1.0))


def test_validate_reports_every_problem_at_once():
    from pympc.mechanics import Particle, Slot, System
    s = System("two problems")
    s.add(Particle("p", mass=-1.0))
    s.add(Slot("rail", "p", "nowhere", direction=(0.0, 0.0), mu=-0.1))
    with pytest.raises(ModelError) as exc:
        s.validate()
    msg = str(exc.value)
    for needle in ("p.mass", "unknown body 'nowhere'", "zero-length direction", "rail.mu"):
        assert needle in msg
    assert isinstance(s.bodies, type(s.joints)) and "p" in s.bodies
    with pytest.raises(TypeError):
        s.bodies["q"] = Particle("q", mass=1.0)          # read-only view


def test_simulation_table_sets_the_defaults(tmp_path):
    text = GOOD.replace('[[forces]]', '[[forces]]', 1) + (
        '\n[simulation]\nt_end = "2*m"\nmethod = "RK45"\nrtol = 1e-8\nbaumgarte = {alpha = 5, beta = 5}\nsamples = 11\n')
    s = load_model(write(tmp_path, text))
    assert s.simulation == {"t_end": 2.0, "method": "RK45", "rtol": 1e-8, "baumgarte": {"alpha": 5.0, "beta": 5.0},
                            "samples": 11.0}
    tr = pympc.simulate(s)
    assert tr.success and tr.t[-1] == 2.0 and len(tr.t) >= 11
    with pytest.raises(ModelError, match="baumgarte"):
        load_model(write(tmp_path, GOOD + '\n[simulation]\nbaumgarte = 3\n'))


@pytest.mark.parametrize("source", [p.stem for p in sorted(MODELS.glob("*.toml"))] + ["slider_chain"])
def test_dump_and_load_round_trip(source, tmp_path, rng):
    from pympc.mechanics import save_model, slider_chain
    s = slider_chain(4) if source == "slider_chain" else load_model(MODELS / f"{source}.toml")
    save_model(s, tmp_path / "copy.toml")
    back = load_model(tmp_path / "copy.toml")
    assert list(back.bodies) == list(s.bodies) and list(back.joints) == list(s.joints)
    assert back.simulation == s.simulation and back.formulation == s.formulation
    f1, f2 = GeneralMethod(s), GeneralMethod(back)
    q, qd = rng.uniform(-1, 1, f1.n), rng.uniform(-1, 1, f1.n)
    a1, a2 = f1.assemble(q, qd, 0.7), f2.assemble(q, qd, 0.7)
    for name in ("M", "h", "g", "J", "w", "gN", "WN", "bN", "WT", "bT"):
        np.testing.assert_allclose(getattr(a2, name), getattr(a1, name), rtol=1e-15, atol=1e-15, err_msg=name)
