"""Rows a builder declares by family (pympc.mpec._declared) against the general reading: the same NLP (columns,
rows, entries, Jacobian and Hessian structure and values) on FESD models, after fixings and a restart, and with
rows and an objective a user added or changed."""

import numpy as np
import pyomo.environ as pyo
import pytest

from pympc.identify import synthetic_record
from pympc.identify.fesd import _restart, trajectory_model
from pympc.identify.fesd_solve import fix_active_set
from pympc.mechanics import load_model
from pympc.mpec import _declared
from pympc.mpec.nlp import _DECLARED, CompiledNLP


def _same(a, b):
    assert [id(v) for v in a.variables] == [id(v) for v in b.variables]
    assert [id(c) for c in a.constraints_data] == [id(c) for c in b.constraints_data]
    left = a._lin + a._q + (a._const, a.cl, a.cu, a.lb, a.ub, *a.jacobianstructure(), *a.hessianstructure())
    right = b._lin + b._q + (b._const, b.cl, b.cu, b.lb, b.ub, *b.jacobianstructure(), *b.hessianstructure())
    for x, y in zip(left, right):
        assert x.dtype == y.dtype and np.array_equal(x, y)
    rng = np.random.default_rng(0)
    u, lam = rng.normal(size=a.n), rng.normal(size=a.m)
    assert np.array_equal(a.constraints(u), b.constraints(u))
    assert np.array_equal(a.jacobian(u), b.jacobian(u))
    assert np.array_equal(a.hessian(u, lam, 0.7), b.hessian(u, lam, 0.7))
    assert a.objective(u) == b.objective(u) and np.array_equal(a.gradient(u), b.gradient(u))


def _model(name, span, samples, outputs, fit, known):
    path = f"models/{name}.toml"
    t = np.linspace(0.0, span, samples)
    df, noise = synthetic_record(load_model(path).bind(known) if known else path, t, outputs, 0.01, 3)
    system = load_model(path).bind(known) if known else load_model(path)
    return system, trajectory_model(system, t, df[outputs].to_numpy(), outputs, fit, elements=4)


CASES = {"friction_oscillator": ("friction_oscillator", 6.0, 25, ["mass.x"], ["mu", "mu_s"], {}),
         "cross_slide": ("cross_slide", 1.0, 9, ["crosshead.x", "particle.y"], ["mu1", "mu2"], {"P": -10.0}),
         "slider_crank": ("slider_crank", 0.32, 7, ["slider.x"], ["mu"], {})}


@pytest.mark.parametrize("case", sorted(CASES))
def test_declared_rows_give_the_general_nlp(case, monkeypatch):
    system, m = _model(*CASES[case])
    rows = m.fesd["nlp_rows"]
    declared = rows[_DECLARED]
    assert sum(len(f[0]) for f in declared.families.values()) > 0
    calls = []
    real = _declared.family_rows
    monkeypatch.setattr("pympc.mpec.nlp.family_rows", lambda d, t: calls.append(real(d, t)) or calls[-1])
    _same(CompiledNLP(m, rows=rows), CompiledNLP(m))
    assert calls and len(calls[-1]) > 0.5 * sum(len(f[0]) for f in declared.families.values())
    undo = fix_active_set(m)                     # fixings: the families split by their arguments' states
    _same(CompiledNLP(m, rows=rows), CompiledNLP(m))
    undo()
    fit = list(m.fesd["fit"])
    _restart(m, system.bind({n: 1.05 * float(system.parameters[n]) for n in fit}))
    undo = fix_active_set(m)
    for n in fit:
        m.theta[n].unfix()
    _same(CompiledNLP(m, rows=rows), CompiledNLP(m))
    undo()


def test_user_rows_and_objective_are_read():
    _, m = _model(*CASES["friction_oscillator"])
    rows = m.fesd["nlp_rows"]
    first = CompiledNLP(m, rows=rows)
    # a user changes a declared row, deactivates another, adds a row and changes the objective
    con = m.collocation_rows[3]
    con.set_value(m.q[0, 1, "mass.x"] == m.q[0, 0, "mass.x"] + 2.0 * m.h[0])
    m.law_rows[5].deactivate()
    m.extra = pyo.Constraint(expr=m.h[0] + m.h[1] <= 0.7)
    m.time[2, 1].set_value(m.t_start[2] + 0.5 * m.h[2])      # a named expression the dynamics rows hold
    m.theta["K"].set_value(1.1 * m.theta["K"].value)          # a fixed parameter at another value
    m.objective.expr = m.objective.expr + (m.theta["mu"] - 0.3) ** 2
    a, b = CompiledNLP(m, rows=rows), CompiledNLP(m)
    _same(a, b)
    ids = [id(c) for c in a.constraints_data]
    assert id(m.extra) in ids and id(m.law_rows[5]) not in ids
    assert a.m == first.m                        # one row out, one in
    i = ids.index(id(con))
    lin, _ = a._row_slices()
    cols, coefs = lin(i)
    assert sorted(a.variables[k].name for k in cols.tolist()) == ["h[0]", "q[0,1,'mass.x']"]
    assert sorted(coefs.tolist()) == [-2.0, 1.0]
    u = a.start() + 0.01
    a.load(u)
    assert a.objective(u) == pytest.approx(pyo.value(m.objective), rel=1e-12)    # the objective as changed
    assert a.objective(u) != pytest.approx(pyo.value(m.objective) - (pyo.value(m.theta["mu"]) - 0.3) ** 2, rel=1e-9)
