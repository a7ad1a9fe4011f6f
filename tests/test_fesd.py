"""The switch-detecting trajectory model (pympc.identify.fesd): finite elements with switch detection.

Oracles: the event-driven simulator at tight tolerances (its event times and its states at the samples);
the order of Radau IIA collocation (2s − 1) measured by halving the elements, which a model that let the
switches fall inside an element would not reach (it would be first order).
"""

from pathlib import Path

import numpy as np
import pytest
from conftest import run_python

import pympc
from pympc.errors import ModelError, OptionError
from pympc.mechanics import load_model

fesd = pytest.importorskip("pympc.identify.fesd")

MODELS = Path(__file__).resolve().parent.parent / "models"
OSC = MODELS / "friction_oscillator.toml"


def _reference(system, t):
    ref = pympc.simulate(system, (t[0], t[-1]), t_eval=t, rtol=1e-13, atol=1e-14)
    assert ref.success
    idx = [int(np.argmin(np.abs(ref.t - x))) for x in t]
    return ref, ref.q[idx], ref.qd[idx]


def _errors(system, t, elements, stages):
    """(max event-time error, max state error at the samples, solve record) of a forward FESD solve."""
    ref, q, v = _reference(system, t)
    m = fesd.trajectory_model(system, t, elements=elements, stages=stages)
    res = fesd.solve(m)
    assert res.ok, res
    sw = fesd.switch_times(m)
    events = [e for e in ref.events if e.time > t[0]]
    assert [k for _, _, k in sw] == [e.kind.name for e in events]        # every event is a boundary
    dt = max([abs(a - e.time) for (a, _, _), e in zip(sw, events)] or [0.0])
    _, qm, vm = fesd.at_samples(m)
    return dt, max(np.abs(qm - q).max(), np.abs(vm - v).max()), res


@pytest.fixture(scope="module")
def oscillator():
    return load_model(OSC)


def test_radau_tableau():
    for s in (1, 2, 3, 4):
        c, A = fesd.radau_iia(s)
        assert c[-1] == 1.0 and np.allclose(A.sum(axis=1), c)
        # order conditions B(2s-1): Σ b_i c_i^(k-1) = 1/k with b the last row (stiffly accurate)
        for k in range(1, 2 * s):
            assert np.sum(A[-1] * c ** (k - 1)) == pytest.approx(1.0 / k, rel=1e-12)
        assert np.sum(A[-1] * c ** (2 * s - 1)) != pytest.approx(1.0 / (2 * s), rel=1e-6)


def test_oscillator_events_and_order(oscillator):
    """Breakaway at μ_s|λ| and slip → stick on the 2 s record: event times ≤ 1e-6 s, and the error of the
    states at the samples falls with the order of Radau IIA (2s − 1), not 1."""
    t = np.linspace(0.0, 2.0, 5)
    e3 = [_errors(oscillator, t, n, 3) for n in (2, 4)]
    e2 = [_errors(oscillator, t, n, 2) for n in (2, 4)]
    assert e3[1][0] <= 1e-6
    order3 = np.log2(e3[0][1] / e3[1][1])
    order2 = np.log2(e2[0][1] / e2[1][1])
    assert order3 > 4.0, (e3, order3)         # 5 expected (measured 4.9)
    assert 2.3 < order2 < 4.0, (e2, order2)   # 3 expected (measured 2.8)
    assert np.log2(e3[0][0] / e3[1][0]) > 4.0


def test_oscillator_reversal_and_long_stick(oscillator):
    """A longer record with backward slip (the 2.41 s breakaway goes backward) and stick phases that span
    several samples: all events on boundaries to 1e-6 s, states to 1e-6."""
    t = np.linspace(0.0, 6.0, 25)
    dt, err, res = _errors(oscillator, t, 4, 3)
    assert dt <= 1e-6 and err <= 1e-5, (dt, err, res.stages)


def test_too_coarse(oscillator):
    t = np.array([0.0, 2.0])             # two events inside one interval
    with pytest.raises(OptionError, match="cannot resolve"):
        fesd.trajectory_model(oscillator, t, elements=2, stages=3)


def test_bad_input(oscillator):
    with pytest.raises(OptionError, match="not supported"):
        fesd.trajectory_model(oscillator, [0.0, 0.5], outputs=["mass.kinetic"])
    with pytest.raises(OptionError, match="not a parameter"):
        fesd.trajectory_model(oscillator, [0.0, 0.5], fit=["nu"])
    with pytest.raises(OptionError, match="increasing"):
        fesd.trajectory_model(oscillator, [0.5, 0.0])


def test_rolling_refused():
    path = MODELS / "rolling_disc_incline.toml"
    with pytest.raises(ModelError, match="not covered"):
        fesd.trajectory_model(load_model(path), [0.0, 0.5])


def test_import_is_lazy():
    code = ("import sys, pympc.identify, pympc.identify.fesd; "
            "print(any(k.startswith('pyomo') for k in sys.modules))")
    out = run_python("-c", code)
    assert out.stdout.strip() == "False", out.stderr


def test_inclined_slot_with_spring(tmp_path):
    """The oscillator's particle in a slot inclined at 30° (gravity along it), spring and a 20 N drive:
    slip down, stick, breakaway up at μ_s|λ|, stick, breakaway down, a direct reversal."""
    path = tmp_path / "incline.toml"
    path.write_text(OSC.read_text().replace("direction = [1, 0]", "direction = [0.8660254037844387, 0.5]"))
    system = load_model(path).bind({"F0": 20.0})
    dt, err, _ = _errors(system, np.linspace(0.0, 4.0, 17), 4, 3)
    assert dt <= 1e-6 and err <= 1e-5, (dt, err)


@pytest.mark.parametrize("push", [0.0, -10.0])
def test_cross_slide(push):
    """P = 0: the crosshead stops and the other slot's load changes wall at the same event (λ₂ = 0 while it
    sticks: a degenerate pair); P = −10 N: a direct reversal.  Constant forces and straight slots: the
    accelerations are constant in each phase, so the collocation is exact."""
    system = load_model(MODELS / "cross_slide.toml").bind({"P": push})
    dt, err, _ = _errors(system, np.linspace(0.0, 1.0, 9), 4, 3)
    assert dt <= 1e-9 and err <= 1e-9


def test_slider_crank_order():
    """Three rigid bodies, revolute joints (GGL-stabilized rows) and the slot, across the first event (a
    reversal at 0.2877 s, in a fast stroke): the error at the samples falls with the order of Radau IIA
    (measured 4.9 for 3 stages: 7.2e-4 → 2.4e-5 at the last sample)."""
    system = load_model(MODELS / "slider_crank.toml")
    t = np.linspace(0.0, 0.3, 7)
    e = [_errors(system, t, n, 3) for n in (3, 6)]
    assert np.log2(e[0][1] / e[1][1]) > 4.0, e
    assert e[1][0] <= 1e-6


def test_fit_agrees_with_shooting():
    """μ and μ_s from a noisy 3 s oscillator record (known parameters): the FESD estimate is the shooting
    estimate within 0.1 standard errors, and the simulation at it reproduces the model's outputs."""
    from pympc.identify import Experiment, Shooting, estimate, synthetic_record
    from pympc.identify.fesd_fit import fit
    t = np.linspace(0.0, 3.0, 13)
    df, noise = synthetic_record(OSC, t, ["mass.x"], 0.01, 3)
    shoot = estimate(Experiment(OSC, df, outputs=["mass.x"], noise=noise), "mu,mu_s", method=Shooting(starts=1))
    start = load_model(OSC).bind({"mu": 0.29, "mu_s": 0.41})
    res = fit(start, t, df[["mass.x"]].to_numpy(), ["mass.x"], ["mu", "mu_s"], noise=[noise["mass.x"]])
    assert res.ok, res.message
    d = np.array([res.theta[n] for n in shoot.names]) - shoot.optimum
    assert np.all(np.abs(d) <= 0.1 * shoot.stderr), (res.theta, shoot.optimum, shoot.stderr)
    assert res.output_gap <= 1e-5


def test_fit_refuses_static_without_breakaway(oscillator):
    """The first 0.35 s of the oscillator stick all along: μ_s is only bounded below (by max|F|/|λ|)."""
    from pympc.identify.fesd_fit import fit
    t = np.linspace(0.0, 0.35, 8)
    with pytest.raises(OptionError, match="never breaks away"):
        fit(oscillator, t, np.zeros((t.size, 1)), ["mass.x"], ["mu", "mu_s"])


def _tree(x):
    """The expression as nested (type, numbers, Var names): what two builds of one expression must share."""
    if getattr(x, "is_variable_type", lambda: False)():
        return ("Var", x.name)
    if getattr(x, "is_expression_type", lambda: False)():
        return (type(x).__name__,) + tuple(_tree(a) for a in x.args)
    return (type(x).__name__, repr(x))


def test_direct_sums_and_gradients_match_the_operators():
    """_fesd_terms._linear (the collocation sums, made directly) against Python's sum of the operators' products,
    tree for tree; _fesd_terms._linear_grad (a linear slot's gradient, read off its terms) against reverse-mode symbolic
    differentiation (mpec_model._grad): the same numbers and types, on every friction slot of the models (fixed
    guides: LinearExpression; a moving guide: None, the general route)."""
    pyo = pytest.importorskip("pyomo.environ")
    from pympc.identify import _fesd_terms as terms
    from pympc.identify.mpec_model import _grad
    from pympc.mechanics.equations import Equations
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4))
    xs = [m.x[i] for i in range(4)]
    for coefs in ([0.2, -1.5, 3.0], [1.0, 0.5, 0.25], [0.0, 2.0, 1.0], [2, 3, 4], [0.75]):
        k = len(coefs)
        assert _tree(terms._linear(coefs, xs[:k])) == _tree(sum(c * x for c, x in zip(coefs, xs[:k])))
    assert _tree(terms._linear([0.5, 0.5], [xs[0], xs[1] + xs[2]])) == _tree(0.5 * xs[0] + 0.5 * (xs[1] + xs[2]))
    for k in (1, 2, 4):
        assert _tree(terms._linear(None, xs[:k])) == _tree(sum(xs[:k]))
    exprs = [-0.0 * xs[0] + xs[1], 0.25 * xs[2] - 3 * xs[0], xs[3] + xs[1], 2.0 * xs[0] + xs[0], xs[0] * xs[1] + xs[2]]
    seen = 0
    for path in sorted(MODELS.glob("*.toml")):
        eq = Equations(load_model(path))
        if not eq.slots:
            continue
        mq = pyo.ConcreteModel()
        mq.q = pyo.Var(range(eq.n))
        q = [mq.q[i] for i in range(eq.n)]
        exprs += [(x, q) for pair in eq.slot_coordinates(q, eq.parameters(), pyo) for x in pair]
    for item in exprs:
        expr, wrt = item if isinstance(item, tuple) else (item, xs)
        fast = terms._linear_grad(expr, wrt)
        if fast is None:
            continue
        seen += 1
        ref = _grad(expr, wrt)
        assert [(type(d), d) for d in fast] == [(type(d), d) for d in ref]
        assert [str(d) for d in fast] == [str(d) for d in ref]                # -0.0 and 0.0 told apart
    assert seen >= 6
    assert terms._linear_grad(2.0 * xs[0] + xs[0], xs) is None               # a repeated Var: the general route
    assert terms._linear_grad(xs[0] * xs[1] + xs[2], xs) is None
