"""CompiledNLP's grouped nonlinear rows (rows that are copies of one template, evaluated vectorized) against
the same NLP compiled row by row, and against finite differences."""

import numpy as np
import pyomo.environ as pyo
import pytest

import pympc.mpec.nlp as nlp_module
from pympc.mpec.nlp import CompiledNLP


def _model(n=40):
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, n - 1)
    m.x = pyo.Var(m.I, initialize=lambda _, i: 0.3 + 0.01 * i)
    m.y = pyo.Var(m.I, initialize=lambda _, i: 1.1 - 0.02 * i, bounds=(0.1, None))
    m.p = pyo.Param(initialize=2.5, mutable=True)
    m.k = pyo.Var(initialize=0.7)
    m.z = pyo.Var(initialize=3.0)
    m.z.fix()
    # one template (sin, exp, division, a power, a Param and a fixed Var folded in), written over each row's vars
    m.c = pyo.Constraint(m.I, rule=lambda m, i: m.p * pyo.sin(m.k * m.x[i]) + pyo.exp(m.x[i] / m.y[i]) - m.z * m.y[i] ** 3
                         + m.x[i] * m.y[i] * m.k == 1.0)
    # the same shape with the variables in another order: another template
    m.d = pyo.Constraint(m.I, rule=lambda m, i: pyo.log(m.y[i]) * m.x[i] ** 2 >= -5)
    m.o = pyo.Objective(expr=sum((m.x[i] - 0.1 * i) ** 2 + pyo.cos(m.y[i]) for i in m.I))
    return m


def _dense(nlp, vals, structure):
    r, c = structure
    M = np.zeros((nlp.m if structure[0] is nlp.jacobianstructure()[0] else nlp.n, nlp.n))
    np.add.at(M, (r, c), vals)
    return M


def test_grouped_rows_equal_the_rows_compiled_one_by_one(monkeypatch):
    m = _model()
    grouped = CompiledNLP(m)
    assert len(grouped._nl_groups) >= 2 and not grouped._nl_cons
    monkeypatch.setattr(nlp_module, "_GROUP_MIN", 10 ** 9)
    single = CompiledNLP(m)
    assert not single._nl_groups
    rng = np.random.default_rng(0)
    u = grouped.start() + 0.05 * rng.standard_normal(grouped.n)
    lam = rng.standard_normal(grouped.m)
    assert np.allclose(grouped.constraints(u), single.constraints(u), rtol=1e-14, atol=1e-14)
    Jg = _dense(grouped, grouped.jacobian(u), grouped.jacobianstructure())
    Js = _dense(single, single.jacobian(u), single.jacobianstructure())
    assert np.allclose(Jg, Js, rtol=1e-13, atol=1e-13)
    Hg = np.zeros((grouped.n, grouped.n))
    np.add.at(Hg, grouped.hessianstructure(), grouped.hessian(u, lam, 0.7))
    Hs = np.zeros((single.n, single.n))
    np.add.at(Hs, single.hessianstructure(), single.hessian(u, lam, 0.7))
    assert np.allclose(Hg, Hs, rtol=1e-13, atol=1e-13)
    # and against central differences of the Jacobian (the Lagrangian's Hessian, lower triangle)
    def lag_grad(v):
        J = _dense(grouped, grouped.jacobian(v), grouped.jacobianstructure())
        return 0.7 * grouped.gradient(v) + J.T @ lam
    eps = 1e-6
    H_fd = np.column_stack([(lag_grad(u + eps * e) - lag_grad(u - eps * e)) / (2 * eps) for e in np.eye(grouped.n)])
    assert np.allclose(np.tril(H_fd), np.tril(Hg + Hg.T - np.diag(np.diag(Hg))), atol=1e-6)


def test_a_one_variable_template_evaluates_to_its_closed_form():
    m = pyo.ConcreteModel()
    m.I = pyo.RangeSet(0, 9)
    m.x = pyo.Var(m.I, initialize=0.5)
    m.c = pyo.Constraint(m.I, rule=lambda m, i: pyo.exp(m.x[i]) + m.x[i] ** 3 <= 4)
    nlp = CompiledNLP(m)
    assert nlp._nl_groups and nlp.constraints(nlp.start()) == pytest.approx([np.exp(0.5) + 0.125] * 10)
