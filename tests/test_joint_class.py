"""A joint is one class: a joint type defined here, in the test file only, works everywhere.

The classes below (a pin and a driven coordinate with rows of their own; a pin
and a rod that give only their residuals, from which the package derives the
rows symbolically) are written from the :class:`~pympc.mechanics.Joint`
contract alone, with no compiled kernel: the
package registers them by their ``TYPE``, reads them from model files, writes
them back, validates them, assembles their rows (the Python path of the
compiled mode solve), hands their residuals to the MPEC equations, and
simulates them.  Each is checked against the built-in joint it is equivalent
to (revolute, prescribed, distance) on the models of ``models/``: the same
events and the same motion to round-off.

Also here: the fingerprints of every model file (unchanged by the refactor)
and the one-way imports of the mechanics package.
"""

import ast
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from conftest import MODELS

import pympc
from pympc.errors import ModelError
from pympc.dynamics import Baumgarte
from pympc.mechanics import GeneralMethod, Joint, parse
from pympc.mechanics.equations import Equations
from pympc.mechanics.joints import JOINT_TYPES
from pympc.mechanics.modelfile import build_model, dump_model, tomllib


@dataclass
class Pin(Joint):
    """Point ``point_a`` of ``body_a`` on point ``point_b`` of ``body_b`` (a revolute, written again).

    The keys of a revolute, so that a model file's ``type = "revolute"`` can be swapped for ``"test_pin"``.
    """

    ROWS: ClassVar[int] = 2                           # x and y of r_a - r_b
    TYPE: ClassVar[str] = "test_pin"
    FIELDS: ClassVar[dict] = {"body_a": "name", "point_a": "vec", "body_b": "name", "point_b": "vec"}
    body_a: str
    body_b: str
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)

    def compile(self, model):
        return [(model.body(self.body_a), np.asarray(self.point_a, float), 1.0),
                (model.body(self.body_b), np.asarray(self.point_b, float), -1.0)]

    def evaluate(self, data, pose, t, g, J, w, gd):
        for b, s, sign in data:
            r, v, cols, block, acc = pose.point(b, s)
            g[:2] += sign * r
            gd[:2] += sign * v
            w[:2] += sign * acc
            for k, c in enumerate(cols):
                J[:2, c] += sign * block[:, k]

    def residuals(self, eq, q, t, env, ops=math):
        (xa, ya), (xb, yb) = (eq.point(q, b, s, env, ops) for b, s in ((self.body_a, self.point_a),
                                                                        (self.body_b, self.point_b)))
        return [xa - xb, ya - yb]


@dataclass
class Drive(Joint):
    """Coordinate ``coordinate`` of ``body`` follows ``value(t)`` (a prescribed motion, written again)."""

    TYPE: ClassVar[str] = "test_drive"
    FIELDS: ClassVar[dict] = {"coordinate": "str", "body": "name", "value": "time"}
    AXES: ClassVar[dict] = {"x": 0, "y": 1, "phi": 2}
    body: str
    coordinate: str
    value: object                     # no default: the model file must give it

    def validate(self, check):
        super().validate(check)
        if self.coordinate not in self.AXES:
            check.add(f"{self.name}.coordinate: must be x, y or phi, got {self.coordinate!r}")

    def compile(self, model):
        f = parse(self.value, {}, ("t",))
        return (model.offset[model.body(self.body)] + self.AXES[self.coordinate], f, f.diff("t"),
                f.diff("t").diff("t"))

    def evaluate(self, data, pose, t, g, J, w, gd):
        c, f, df, ddf = data
        g[0], gd[0], w[0] = pose.q[c] - f(t=t), pose.qd[c] - df(t=t), -ddf(t=t)
        J[0, c] = 1.0

    def residuals(self, eq, q, t, env, ops=math):
        return [q[eq.offset[eq.body(self.body)] + self.AXES[self.coordinate]] - eq.value(self.value, env, ops, {"t": t})]


@dataclass
class DerivedPin(Pin):
    """The pin above without rows of its own: the package derives them from its residuals (symbolically)."""

    TYPE: ClassVar[str] = "test_derived_pin"
    compile = Joint.compile
    evaluate = Joint.evaluate


@dataclass
class Rod(Joint):
    """|r_a − r_b| = length(t), written as its residual ½(|r_a − r_b|² − L²) only (a distance joint again)."""

    TYPE: ClassVar[str] = "test_rod"
    FIELDS: ClassVar[dict] = {"length": "time", "body_a": "name", "point_a": "vec", "body_b": "name", "point_b": "vec"}
    body_a: str
    body_b: str
    length: object
    point_a: tuple = (0.0, 0.0)
    point_b: tuple = (0.0, 0.0)

    def residuals(self, eq, q, t, env, ops=math):
        d = [a - b for a, b in zip(eq.point(q, self.body_a, self.point_a, env, ops),
                                   eq.point(q, self.body_b, self.point_b, env, ops))]
        L = eq.value(self.length, env, ops, {"t": t})
        return [(d[0] * d[0] + d[1] * d[1] - L * L) / 2]


def _swapped(name, builtin, ours):
    """The model file ``name`` and the same text with every joint of type ``builtin`` of type ``ours``."""
    text = (MODELS / f"{name}.toml").read_text()
    old = f'type = "{builtin}"'
    assert old in text
    return build_model(tomllib.loads(text), name), build_model(tomllib.loads(text.replace(old, f'type = "{ours}"')),
                                                              f"{name} ({ours})")


# the models with pins / a drive, and how long to run them (events happen in each)
CASES = [("slider_crank", "revolute", "test_pin", 1.0), ("rotating_rod_bead", "revolute", "test_pin", 1.0),
         ("rotating_rod_bead", "prescribed", "test_drive", 1.0)]
# joints with residuals only: rows derived symbolically, equal to the built-in ones to round-off, not bit for bit
DERIVED = [("slider_crank", "revolute", "test_derived_pin", 1.0), ("shortening_pendulum", "distance", "test_rod", 1.0),
           ("spinning_tube_ball", "distance", "test_rod", 1.0)]


def test_the_classes_register_themselves_by_type():
    assert JOINT_TYPES["test_pin"] is Pin and JOINT_TYPES["test_drive"] is Drive
    assert JOINT_TYPES["revolute"].__name__ == "Revolute"
    assert Pin.required_keys() == ("body_a", "body_b")          # the fields without a default
    assert Drive.required_keys() == ("body", "coordinate", "value")


def test_a_type_name_is_taken_once():
    with pytest.raises(ModelError, match="'test_pin' is already the joint"):
        @dataclass
        class OtherPin(Joint):
            TYPE: ClassVar[str] = "test_pin"
    with pytest.raises(ModelError, match="TYPE must be an identifier"):
        class Bad(Joint):
            TYPE: ClassVar[str] = "not a name"
    assert JOINT_TYPES["test_pin"] is Pin


@pytest.mark.parametrize("name, builtin, ours, t_end", CASES + DERIVED)
def test_a_joint_from_the_test_file_simulates_as_the_builtin_one(name, builtin, ours, t_end):
    ref, new = _swapped(name, builtin, ours)
    assert any(isinstance(j, JOINT_TYPES[ours]) for j in new.joints.values())
    fr, fn = GeneralMethod(ref), GeneralMethod(new)
    assert fn._abs.m == fr._abs.m and fn.rheonomic == fr.rheonomic
    assert (fn.holonomic == fr.holonomic).all()
    a = pympc.simulate(ref, (0.0, t_end))
    b = pympc.simulate(new, (0.0, t_end))
    assert a.success and b.success and len(a.events) > 0
    assert [e.kind for e in b.events] == [e.kind for e in a.events]
    np.testing.assert_allclose([e.time for e in b.events], [e.time for e in a.events], rtol=0, atol=1e-9)
    assert b.t.shape == a.t.shape
    np.testing.assert_allclose(b.t, a.t, rtol=0, atol=1e-9)
    scale = max(1.0, float(np.abs(a.q).max()))
    np.testing.assert_allclose(b.q, a.q, rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(b.normal_force, a.normal_force, rtol=1e-7, atol=1e-7 * float(np.abs(a.normal_force).max(initial=1.0)))


@pytest.mark.parametrize("name, builtin, ours, t_end", CASES + DERIVED)
def test_the_rows_equal_the_builtin_rows_at_random_states(name, builtin, ours, t_end, rng):
    ref, new = _swapped(name, builtin, ours)
    fr, fn = GeneralMethod(ref), GeneralMethod(new)
    q0, qd0 = fr.initial_state()
    for _ in range(5):
        q, qd, t = q0 + 0.3 * rng.standard_normal(q0.size), rng.standard_normal(q0.size), float(rng.uniform(0, 2))
        ar, an = fr.assemble(q, qd, t), fn.assemble(q, qd, t)
        for key in ("g", "J", "w", "gdot"):
            np.testing.assert_allclose(getattr(an, key), getattr(ar, key), rtol=1e-13, atol=1e-13)
        # the compiled mode solve's inputs: the built-in pins run their kernel, ours the Python path
        pr = fr._abs.python_parts(q, qd, t, Baumgarte())[:2]
        pn = fn._abs.python_parts(q, qd, t, Baumgarte())[:2]
        for x, y in zip((*pn[0], pn[1]), (*pr[0], pr[1])):
            np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-13)
        er, en = Equations(ref), Equations(new)
        np.testing.assert_allclose(en.joint_residuals(list(q), t, en.parameters()),
                                   er.joint_residuals(list(q), t, er.parameters()), rtol=1e-14, atol=1e-14)


def test_a_derived_joint_must_give_as_many_residuals_as_rows():
    @dataclass
    class TwoRowRod(Rod):
        TYPE: ClassVar[str] = "test_two_row_rod"
        ROWS: ClassVar[int] = 2

    text = (MODELS / "shortening_pendulum.toml").read_text().replace('type = "distance"', 'type = "test_two_row_rod"')
    try:
        with pytest.raises(ModelError, match=r"has 2 rows \(ROWS\) but residuals\(\) gives 1"):
            GeneralMethod(build_model(tomllib.loads(text)))
    finally:
        del JOINT_TYPES["test_two_row_rod"]         # a class of this test only: leave the registry as found


def test_the_tree_method_takes_the_new_joint_as_a_constraint():
    """A pin of the test file has no tree_link: the tree closes it with a constraint; the motion is the same."""
    ref, new = _swapped("slider_crank", "revolute", "test_pin")
    a = pympc.simulate(ref, (0.0, 0.3), formulation="tree", rtol=1e-11, atol=1e-12)
    b = pympc.simulate(new, (0.0, 0.3), formulation="tree", rtol=1e-11, atol=1e-12)
    assert a.success and b.success
    tree = pympc.mechanics.TreeMethod(new)
    assert tree.tree_joints == [] and tree.n == 8        # free bodies: 3 + 3 + 2 coordinates
    np.testing.assert_allclose(b.q[-1], a.q[-1], atol=1e-7)


def test_the_new_joint_round_trips_through_the_model_file():
    _, new = _swapped("slider_crank", "revolute", "test_pin")
    text = dump_model(new)
    assert text.count('type = "test_pin"') == 3
    back = build_model(tomllib.loads(text))
    assert back.fingerprint() == new.fingerprint()
    assert [type(j) for j in back.joints.values()] == [type(j) for j in new.joints.values()]


def test_bad_fields_of_the_new_joint_are_reported_with_file_table_and_key():
    text = (MODELS / "rotating_rod_bead.toml").read_text().replace('type = "prescribed"', 'type = "test_drive"')
    with pytest.raises(ModelError, match=r"bead: invalid model:\n  - \[\[joints\]\] #2 \('drive'\), key 'coordinate': must be x, y or phi"):
        build_model(tomllib.loads(text.replace('coordinate = "phi"', 'coordinate = "z"')), "bead")
    with pytest.raises(ModelError, match=r"#2 \('drive'\), key 'body': unknown body 'nope'"):
        build_model(tomllib.loads(text.replace('body = "rod"', 'body = "nope"')), "bead")
    with pytest.raises(ModelError, match=r"#2 \('drive'\): missing key\(s\) \['value'\]"):
        build_model(tomllib.loads(text.replace('value = "omega*t"', '')), "bead")
    with pytest.raises(ModelError, match=r"#2 \('drive'\): unknown key\(s\) \['radius'\]; allowed for type 'test_drive'"):
        build_model(tomllib.loads(text.replace('value = "omega*t"', 'value = "omega*t"\nradius = 1')), "bead")
    with pytest.raises(ModelError, match=r"'test_drvie' is not one of \[.*'test_drive'"):
        build_model(tomllib.loads(text.replace('type = "test_drive"', 'type = "test_drvie"')), "bead")


def test_a_joint_without_residuals_is_refused_by_the_mpec_equations():
    @dataclass
    class Blind(Pin):
        TYPE: ClassVar[str] = "test_blind"
        residuals: ClassVar = None

    text = (MODELS / "slider_crank.toml").read_text().replace('type = "revolute"', 'type = "test_blind"', 1)
    try:
        eq = Equations(build_model(tomllib.loads(text)))
        with pytest.raises(ModelError, match=r"\['O \(test_blind\)'\] have no position-level residuals"):
            eq.check_supported()
    finally:
        del JOINT_TYPES["test_blind"]


# System.fingerprint() of every model file, recorded before joints became classes (issue 27): unchanged
FINGERPRINTS = {
    "cross_slide.toml": "805a1e3573cb6943",
    "friction_oscillator.toml": "a1c82939402ed447",
    "inclined_slot_spring.toml": "e035413940587632",       # added after issue 27 (FESD models, issue 29)
    "planetary_gear.toml": "19badab63ed39d82",
    "rolling_disc_incline.toml": "f9bebfb6abd7d276",
    "rotating_rod_bead.toml": "47115fe2aafc9d70",
    "shortening_pendulum.toml": "8e2133df5ca3cce0",
    "slider_crank.toml": "593f61d3aebed983",
    "spinning_tube_ball.toml": "cd522a8c66e66631",
    "wheel_rod.toml": "a8e3e1b17e898333",
}


def test_the_fingerprints_of_the_model_files_are_unchanged():
    assert sorted(p.name for p in MODELS.glob("*.toml")) == sorted(FINGERPRINTS)
    assert {name: pympc.load_model(MODELS / name).fingerprint() for name in FINGERPRINTS} == FINGERPRINTS


def _imports(path):
    """The sibling modules of pympc.mechanics that ``path`` imports, at any depth (function bodies too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out |= {node.module} if node.module else {a.name for a in node.names}
    return out


def test_the_mechanics_imports_go_one_way():
    """No module of pympc.mechanics imports, even lazily, one that imports it back (directly or not)."""
    pkg = MODELS.parent / "pympc" / "mechanics"
    graph = {p.stem: _imports(p) & {q.stem for q in pkg.glob("*.py")} for p in pkg.glob("*.py") if p.stem != "__init__"}

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for m in graph.get(todo.pop(), ()):
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        return seen

    circles = sorted(m for m in graph if m in reach(m))
    assert circles == [], f"modules on an import circle: {circles}"


def test_no_module_dispatches_on_the_builtin_joint_types():
    """Outside the joint classes, no isinstance/issubclass/type test names a joint class, and the assembly, tree
    method, equations, model file and writer do not import any but the slot (whose table the HLCP is built on)."""
    pkg = MODELS.parent / "pympc" / "mechanics"
    joints = {"Joint", "Revolute", "Slot", "Rolling", "Gear", "Distance", "Prescribed"}
    for path in pkg.glob("*.py"):
        if path.stem == "joints":
            continue
        tree = ast.parse(path.read_text())
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("isinstance", "issubclass"):
                named = {m.id for m in ast.walk(n.args[1]) if isinstance(m, ast.Name)}
                assert not named & (joints - {"Joint"}), f"{path.name}:{n.lineno} tests a joint type {named & joints}"
            if isinstance(n, ast.Compare) and any(isinstance(m, ast.Name) and m.id in joints for m in ast.walk(n)):
                raise AssertionError(f"{path.name}:{n.lineno} compares with a joint class")
        if path.stem in ("assembly", "tree", "equations", "modelfile", "tomlwriter", "general", "_kernels"):
            imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
            assert not imported & (joints - {"Slot"}), f"{path.name} imports {sorted(imported & joints)}"


def test_the_builtin_rows_are_the_derivatives_of_their_residuals(rng):
    """Every built-in joint with residuals, in every model file: its hand-written rows (used by the simulator)
    equal the rows derived symbolically from its residuals (used by the MPEC), at random states; the two
    definitions cannot drift apart."""
    from pympc.mechanics.assembly import _Pose
    checked = set()
    for path in sorted(MODELS.glob("*.toml")):
        ab = GeneralMethod(pympc.load_model(path))._abs
        q0, _ = ab.initial_state()
        for j, r0, data in ab._joints:
            if j.residuals is None:
                continue
            derived = Joint.compile(j, ab)
            for _ in range(3):
                q, qd, t = q0 + 0.3 * rng.standard_normal(ab.n), rng.standard_normal(ab.n), float(rng.uniform(0, 3))
                pose = _Pose(ab, q, qd)
                (g, J, w, gd), (g2, J2, w2, gd2) = [(np.zeros(j.nrows), np.zeros((j.nrows, ab.n)),
                                                     np.zeros(j.nrows), np.zeros(j.nrows)) for _ in range(2)]
                j.evaluate(data, pose, t, g, J, w, gd)
                Joint.evaluate(j, derived, pose, t, g2, J2, w2, gd2)
                for a, b in ((g, g2), (J, J2), (w, w2), (gd, gd2)):
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"{path.name}: {j.name}")
            checked.add(j.TYPE)
    assert checked == {"revolute", "distance", "prescribed"}      # every built-in type with residuals was met
