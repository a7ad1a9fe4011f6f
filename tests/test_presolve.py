"""pympc.mpec.presolve.Presolved: variables pinned alone by linear equality rows fixed, the rest solved by IPOPT.

Oracles: the Hock–Schittkowski optima; finite differences of the reduced callbacks; the full NLP's values at
the same point; the FESD fit with and without the presolve."""

import numpy as np
import pyomo.environ as pyo
import pytest
from scipy.optimize import approx_fprime

import pympc.mpec.presolve as presolve
from pympc.mpec import CompiledNLP
from pympc.mpec.ipopt import solve_nlp
from pympc.mpec.presolve import Presolved

from hock_schittkowski import PROBLEMS


def chain_model(x1=2.0, x1_ub=None):
    """x1 = x1 (alone), x2 = x1 + 1 (alone once x1 is), 3 x3 - x2 = 0 (then alone); x4, x5 nonlinear and free."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(1, 6), initialize=0.5)
    m.x[4].setlb(0.1)
    if x1_ub is not None:
        m.x[1].setub(x1_ub)
    m.pin = pyo.Constraint(expr=m.x[1] == x1)
    m.next = pyo.Constraint(expr=m.x[2] - m.x[1] == 1.0)
    m.third = pyo.Constraint(expr=3 * m.x[3] - m.x[2] == 0.0)
    m.curve = pyo.Constraint(expr=m.x[4] * m.x[5] + pyo.sin(m.x[3] * m.x[4]) >= 1.0)
    m.link = pyo.Constraint(expr=m.x[5] + m.x[2] + m.x[4] <= 10.0)
    m.o = pyo.Objective(expr=(m.x[4] - m.x[3]) ** 2 + pyo.exp(0.1 * m.x[5]) * m.x[2] + m.x[5] ** 2)
    return m


def assert_derivatives(red, x, rng):
    """The reduced gradient, Jacobian and Hessian of the Lagrangian against finite differences of the reduced
    objective and rows."""
    r, c = red.jacobianstructure()
    assert len(set(zip(r.tolist(), c.tolist()))) == r.size
    J = np.zeros((red.m, red.n))
    np.add.at(J, (r, c), red.jacobian(x))
    for i in range(red.m):
        assert J[i] == pytest.approx(approx_fprime(x, lambda z: red.constraints(z)[i], 1e-7), abs=1e-5)
    assert red.gradient(x) == pytest.approx(approx_fprime(x, red.objective, 1e-7), abs=1e-5)
    lam, w = rng.normal(size=red.m), 0.7
    r, c = red.hessianstructure()
    assert np.all(r >= c) and len(set(zip(r.tolist(), c.tolist()))) == r.size
    H = np.zeros((red.n, red.n))
    np.add.at(H, (r, c), red.hessian(x, lam, w))
    H = H + np.tril(H, -1).T

    def lagrangian_gradient(z):
        Jz = np.zeros((red.m, red.n))
        np.add.at(Jz, red.jacobianstructure(), red.jacobian(z))
        return w * red.gradient(z) + Jz.T @ lam
    for i in range(red.n):
        assert H[i] == pytest.approx(approx_fprime(x, lambda z: lagrangian_gradient(z)[i], 1e-7), abs=1e-4)


def test_a_variable_with_an_affine_row_to_another_is_replaced_by_it(rng):
    """y = 2 x + 1 (y unbounded): y is aggregated onto x; x y and sin(y) make Hessian entries of x alone
    (the (y, x) entry counted twice on x's diagonal)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(-3, 3), initialize=0.3)
    m.y = pyo.Var(initialize=1.6)
    m.z = pyo.Var(initialize=0.2)
    m.affine = pyo.Constraint(expr=m.y - 2 * m.x == 1.0)
    m.curve = pyo.Constraint(expr=m.x * m.y + m.z ** 2 >= 1.0)
    m.o = pyo.Objective(expr=(m.x * m.y - 1) ** 2 + pyo.sin(m.y) + m.z ** 2 + pyo.exp(0.1 * m.x))
    full = CompiledNLP(m)
    red = Presolved(full)
    assert (red.n, red.m) == (2, 1) and [full.variables[k].name for k in red.aggregated] == ["y"]
    x = rng.uniform(-1, 1, red.n)
    u = red.full(x)
    assert u[next(i for i, v in enumerate(full.variables) if v is m.y)] == \
        pytest.approx(2 * x[0] + 1, abs=1e-15)
    assert_derivatives(red, x, rng)
    u_full, info_full = solve_nlp(full, full.start(), {"tol": 1e-10})
    xr, info = solve_nlp(red, red.start(), {"tol": 1e-10})
    assert info["status"] == 0 and info_full["status"] == 0
    assert red.full(xr) == pytest.approx(u_full, abs=1e-7)
    assert Presolved(CompiledNLP(m), aggregate=False).n == 3
    m.y.set_value(0.0)          # the row does not hold at the start: aggregating would move IPOPT's start point
    assert Presolved(CompiledNLP(m)).n == 3


def test_a_chain_of_pinned_variables_is_fixed_and_the_rest_has_the_full_derivatives(rng):
    m = chain_model()
    full = CompiledNLP(m)
    red = Presolved(full)
    assert (full.n, full.m) == (5, 5) and (red.n, red.m) == (2, 2) and len(red.fixed) == 3
    x = rng.uniform(0.5, 1.5, red.n)
    u = red.full(x)
    fixed = {full.variables[k].name: u[k] for k in red.fixed}
    assert fixed == pytest.approx({"x[1]": 2.0, "x[2]": 3.0, "x[3]": 1.0}, abs=1e-15)
    assert red.objective(x) == full.objective(u)
    assert np.array_equal(red.constraints(x), full.constraints(u)[[3, 4]])
    assert_derivatives(red, x, rng)


def test_the_presolved_nlp_solves_to_the_full_one_and_loads_every_variable():
    m = chain_model()
    full = CompiledNLP(m)
    u_full, info_full = solve_nlp(full, full.start(), {"tol": 1e-10})
    red = Presolved(CompiledNLP(m))
    x, info = solve_nlp(red, red.start(), {"tol": 1e-10})
    assert info["status"] == 0 and info_full["status"] == 0
    assert red.full(x) == pytest.approx(u_full, abs=1e-7)
    red.load(x)
    assert [m.x[k].value for k in (1, 2, 3)] == pytest.approx([2.0, 3.0, 1.0], abs=1e-15)
    assert m.x[4].value == pytest.approx(u_full[next(i for i, v in enumerate(full.variables) if v is m.x[4])], abs=1e-7)


def test_a_pinned_value_outside_the_bounds_is_left_to_ipopt_and_a_contradicting_row_is_violated():
    red = Presolved(CompiledNLP(chain_model(x1=2.0, x1_ub=1.0)))
    # x1 = 2 breaks x1 <= 1: x1 not fixed (IPOPT decides); x2 = x1 + 1 and x3 = x2 / 3 do not hold at the start
    # (all 0.5): not aggregated either
    assert (red.n, len(red.fixed), len(red.aggregated)) == (5, 0, 0) and not red.violated
    _, info = solve_nlp(red, red.start(), {"max_iter": 200})
    assert info["status"] in (2, -2, -3, -1)          # not solved: infeasible (or no progress)
    m = chain_model()
    m.again = pyo.Constraint(expr=2 * m.x[1] == 5.0)    # a second row pins x1 at 2.5: a contradiction
    red = Presolved(CompiledNLP(m))
    assert [c.name for c in red.violated] in (["again"], ["pin"])
    _, info = solve_nlp(red, red.start(), {})
    assert info["status"] == 2


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_hock_schittkowski_through_the_presolve(name):
    build, f_star = PROBLEMS[name]
    m = build()
    red = Presolved(CompiledNLP(m, drop_redundant=True))
    x, info = solve_nlp(red, red.start(), {"mu_strategy": "adaptive", "tol": 1e-10, "max_iter": 3000})
    assert info["status"] in (0, 1)
    red.load(x)
    f = pyo.value(m.o)
    if name == "hs055":    # a local minimum at the book's start (f = 20/3) besides the global one (tests/test_ipopt_nlp.py)
        assert min(abs(f - 19 / 3), abs(f - 20 / 3)) <= 1e-6
    else:
        assert f == pytest.approx(f_star, rel=1e-6, abs=1e-6)


def test_fesd_fit_estimate_is_the_same_without_the_presolve(monkeypatch):
    from pympc.identify import synthetic_record
    from pympc.identify.fesd_fit import fit
    from pympc.mechanics import load_model
    osc = "models/friction_oscillator.toml"
    t = np.linspace(0.0, 3.0, 13)
    df, noise = synthetic_record(osc, t, ["mass.x"], 0.01, 3)
    start = load_model(osc).bind({"mu": 0.29, "mu_s": 0.41})
    args = (start, t, df[["mass.x"]].to_numpy(), ["mass.x"], ["mu", "mu_s"])
    with_presolve = fit(*args, noise=[noise["mass.x"]])
    sizes = [(s.variables, s.constraints) for s in with_presolve.solves]
    monkeypatch.setattr(presolve, "Presolved", lambda nlp: nlp)
    without = fit(*args, noise=[noise["mass.x"]])
    assert with_presolve.ok and without.ok and with_presolve.walks == without.walks
    assert all(a[0] < b.variables and a[1] < b.constraints for a, b in zip(sizes, without.solves))
    for n in ("mu", "mu_s"):
        assert with_presolve.theta[n] == pytest.approx(without.theta[n], rel=1e-9)
    assert with_presolve.objective == pytest.approx(without.objective, rel=1e-9)
