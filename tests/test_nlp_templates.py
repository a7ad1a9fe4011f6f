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


def _rows_alike_model():
    """Rows of a few forms: linear, quadratic, nonlinear in a group (20 rows) and nonlinear singles (3 rows of
    one form: fewer than a group), a fixed variable and a Param folded in by value (two values: two forms)."""
    m = _model(20)
    m.J = pyo.RangeSet(0, 2)
    m.w = pyo.Var(m.J, initialize=lambda _, j: 0.2 + j, bounds=(0, None))
    m.lin = pyo.Constraint(m.I, rule=lambda m, i: m.x[i] - 2 * m.y[i] + m.z == 0.1 * i)
    m.quad = pyo.Constraint(m.I, rule=lambda m, i: m.k * m.x[i] + m.y[i] * m.x[i] - m.p * m.y[i] >= 0)
    m.few = pyo.Constraint(m.J, rule=lambda m, j: pyo.exp(m.w[j]) * m.x[j] + pyo.sin(m.w[j]) <= 3)
    m.q = pyo.Param(m.I, initialize=lambda _, i: 1.0 + (i % 2), mutable=True)
    m.par = pyo.Constraint(m.I, rule=lambda m, i: m.q[i] * m.x[i] + pyo.cos(m.y[i]) == 1)
    return m


def test_rows_read_by_form_equal_the_rows_read_one_by_one(monkeypatch):
    """CompiledNLP reads the first row of each form and makes the others from it (pympc.mpec._forms): the
    same NLP as reading every row (columns, rows, bounds, structure, values, Jacobian, Hessian bit for bit)."""
    import pympc.mpec._forms as forms
    m = _rows_alike_model()
    parsed = []
    part = nlp_module._Part

    def counting(expr, index, where, memo):
        parsed.append(where)
        return part(expr, index, where, memo)
    monkeypatch.setattr(nlp_module, "_Part", counting)
    by_form = CompiledNLP(m)
    from collections import Counter
    read = Counter(c.parent_component().name for c in parsed if c.ctype is pyo.Constraint)
    # one row read per form (par: two Param values; lin, linear nodes, and d, products, too), the others made;
    # few (3 rows, no group): read again, each with its own nonlinear tree and the NLP's columns
    assert read == {"c": 1, "quad": 1, "par": 2, "few": 4, "lin": 1, "d": 1}, read
    monkeypatch.setattr(forms, "walk", lambda *a: None)     # no form: every row read alone
    one_by_one = CompiledNLP(m)
    assert [id(v) for v in by_form.variables] == [id(v) for v in one_by_one.variables]
    assert by_form.constraint_names == one_by_one.constraint_names
    assert len(by_form._nl_groups) == len(one_by_one._nl_groups) and len(by_form._nl_cons) == 3
    rng = np.random.default_rng(3)
    u = by_form.start() + 0.05 * rng.standard_normal(by_form.n)
    lam = rng.standard_normal(by_form.m)
    for a, b in [(by_form.cl, one_by_one.cl), (by_form.cu, one_by_one.cu), (by_form.lb, one_by_one.lb),
                 (by_form.constraints(u), one_by_one.constraints(u)), (by_form.jacobian(u), one_by_one.jacobian(u)),
                 (by_form.hessian(u, lam, 0.3), one_by_one.hessian(u, lam, 0.3)),
                 (by_form.gradient(u), one_by_one.gradient(u))] + \
            [(x, y) for x, y in zip(by_form.jacobianstructure() + by_form.hessianstructure(),
                                    one_by_one.jacobianstructure() + one_by_one.hessianstructure())]:
        assert a.shape == b.shape and np.array_equal(a, b)
    # a Param's value is part of the form: rows with another value are another form, read with that value
    g = by_form.constraints(u)
    rows = {n: i for i, n in enumerate(by_form.constraint_names)}
    x = {id(v): k for k, v in enumerate(by_form.variables)}
    for i in (0, 1):
        expect = (1.0 + i) * u[x[id(m.x[i])]] + np.cos(u[x[id(m.y[i])]])
        assert g[rows[f"par[{i}]"]] == pytest.approx(expect, rel=1e-14)


def _same_nlp(a, b, seed=5):
    assert [id(v) for v in a.variables] == [id(v) for v in b.variables]
    assert a.constraint_names == b.constraint_names
    rng = np.random.default_rng(seed)
    u = a.start() + 0.05 * rng.standard_normal(a.n)
    lam = rng.standard_normal(a.m)
    for x, y in [(a.cl, b.cl), (a.cu, b.cu), (a.constraints(u), b.constraints(u)), (a.jacobian(u), b.jacobian(u)),
                 (a.hessian(u, lam, 0.3), b.hessian(u, lam, 0.3)), (a.gradient(u), b.gradient(u))] + \
            list(zip(a.jacobianstructure() + a.hessianstructure(), b.jacobianstructure() + b.hessianstructure())):
        assert x.shape == y.shape and np.array_equal(x, y)


def test_rows_kept_between_compiles_are_walked_again_only_when_changed(monkeypatch):
    """CompiledNLP(model, rows=kept): a row as it was is not walked again; one whose variable was fixed, whose
    Param or named expression changed, or whose expression was replaced is.  Oracle: the NLP compiled afresh."""
    import pympc.mpec._forms as forms
    m = _rows_alike_model()
    m.e = pyo.Expression(m.I, rule=lambda m, i: m.x[i] * m.k)
    m.named = pyo.Constraint(m.I, rule=lambda m, i: m.e[i] + m.y[i] ** 2 <= 9)
    kept = {}
    _same_nlp(CompiledNLP(m, rows=kept), CompiledNLP(m))
    walked = []
    walk = forms.walk
    monkeypatch.setattr(forms, "walk", lambda expr, *a: walked.append(expr) or walk(expr, *a))
    again = CompiledNLP(m, rows=kept)
    assert not walked               # nothing changed: no row walked (the first row of each form read from its key)
    _same_nlp(again, CompiledNLP(m))
    m.x[3].fix(0.4)                                     # rows of x[3]: c, quad, par, named, lin, d
    m.q[2] = 5.0                                        # par[2]
    m.e[1].set_value(2.0 * m.x[1] + m.y[1])             # named[1]
    m.quad[4].set_value(m.x[4] * m.x[4] >= 0)           # quad[4]: a new expression
    m.few[0].deactivate()
    walked.clear()
    changed = CompiledNLP(m, rows=kept)
    assert len(walked) == 9, len(walked)        # the changed rows only: six of x[3], par[2], named[1], quad[4]
    monkeypatch.undo()
    _same_nlp(changed, CompiledNLP(m))
    assert not any(r.con is m.few[0] for r in kept.values())     # a row no longer read is not kept


def _compiled_once(monkeypatch):
    """``(model, kept, walked)``: :func:`_rows_alike_model` compiled once with its rows kept, the bodies that
    ``form()`` walks from then on appended to ``walked``."""
    import pympc.mpec._forms as forms
    m = _rows_alike_model()
    kept = {}
    CompiledNLP(m, rows=kept)
    walked = []
    walk = forms.walk
    monkeypatch.setattr(forms, "walk", lambda expr, *a: walked.append(expr) or walk(expr, *a))
    return m, kept, walked


def test_kept_rows_of_a_fixed_variable_moved_or_freed_are_walked_again(monkeypatch):
    """The fixed variable z is folded into the rows c by value: kept rows with z moved, then with z freed, are
    read again (all 40 at once, checked together with the other kept rows), the others not.  Oracle: the NLP
    compiled afresh."""
    m, kept, walked = _compiled_once(monkeypatch)
    for change, rows in ((lambda: m.z.set_value(2.5), 40), (m.z.unfix, 40), (lambda: None, 0)):
        change()
        walked.clear()
        again = CompiledNLP(m, rows=kept)
        assert len(walked) == rows, len(walked)          # z is in the 40 rows c only
        _same_nlp(again, CompiledNLP(m))


def test_a_new_row_on_a_kept_rows_body_is_not_walked_again(monkeypatch):
    """A row replaced by another on the same body (the FESD polish: the law row ``c >= 0`` deactivated, ``c == 0``
    added) takes the kept row's form without a walk while the body is as it was, and is walked when a variable
    of it was fixed since.  Oracle: the NLP compiled afresh."""
    m, kept, walked = _compiled_once(monkeypatch)
    CompiledNLP(m, rows=kept)
    assert not walked                                    # nothing changed: nothing walked
    bodies = {i: m.quad[i].body for i in (1, 2, 3)}
    for i in bodies:
        m.quad[i].deactivate()
    m.eq = pyo.Constraint([1, 2, 3], rule=lambda _, i: bodies[i] == 0)
    walked.clear()
    again = CompiledNLP(m, rows=kept)
    assert not walked
    _same_nlp(again, CompiledNLP(m))
    m.y[3].fix(1.0)                                      # eq[3]'s body changed: walked again
    walked.clear()
    changed = CompiledNLP(m, rows=kept)
    assert any(w is bodies[3] for w in walked) and not any(w is bodies[1] for w in walked)
    monkeypatch.undo()
    _same_nlp(changed, CompiledNLP(m))
    assert not any(r.con is m.quad[1] for r in kept.values())    # the deactivated rows are not kept alive


def test_form_reads_a_sums_own_arguments_when_its_list_is_shared():
    """Pyomo's ``e1 + z`` appends z to e1's argument list in place (the new sum shares it; e1 keeps its count):
    form() reads e1's arguments only — its key and variables those of the same sum built afresh."""
    from pympc.mpec._forms import form
    m = pyo.ConcreteModel()
    m.x, m.y, m.z = pyo.Var(), pyo.Var(), pyo.Var()
    e1 = pyo.sin(m.x) + m.y * m.x
    e2 = e1 + m.z
    assert e1._args_ is e2._args_ and len(e1._args_) == 3 and e1.nargs() == 2       # the case itself
    key, free = form(e1)
    fresh_key, fresh_free = form(pyo.sin(m.x) + m.y * m.x)
    assert key == fresh_key and [v.name for v in free] == [v.name for v in fresh_free] == ["x", "y"]
    key2, free2 = form(e2)
    assert key2 != key and [v.name for v in free2] == ["x", "y", "z"]


def test_bounds_are_pyomos_own_values():
    """The column bounds are Pyomo's ``v.lb``/``v.ub`` (domain and bound the tighter, None unbounded) and the row
    bounds ``pyo.value`` of the row's lower and upper, less its constant, also after a mutable Param moves."""
    m = pyo.ConcreteModel()
    m.p = pyo.Param(initialize=0.5, mutable=True)
    m.x = pyo.Var(range(4), initialize=1.0)
    m.x[0].setlb(-2.0)
    m.x[1].domain = pyo.NonNegativeReals
    m.x[1].setub(3)                                   # an int bound
    m.x[2].domain = pyo.NonPositiveReals
    m.x[2].setlb(-m.p * 4)                            # an expression bound (-2), the domain's upper 0
    m.r = pyo.Constraint(expr=m.x[0] + 2 * m.x[1] + 1.0 <= m.p)          # Param upper bound
    m.s = pyo.Constraint(expr=pyo.inequality(-1, m.x[2] * m.x[3], 4))   # int bounds, no constant
    m.t = pyo.Constraint(expr=m.x[3] - m.x[0] == 0.25)
    m.o = pyo.Objective(expr=sum(m.x[i] ** 2 for i in range(4)))
    nlp = CompiledNLP(m)
    for k, v in enumerate(nlp.variables):
        assert nlp.lb[k] == (-1e20 if v.lb is None else v.lb) and nlp.ub[k] == (1e20 if v.ub is None else v.ub)
    assert nlp.lb.tolist() == [-2.0, 0.0, -2.0, -1e20] and nlp.ub.tolist() == [1e20, 3.0, 0.0, 1e20]

    def expected():
        out = []
        for con, part in zip(nlp.constraints_data, nlp.cons):
            lo, up = pyo.value(con.lower), pyo.value(con.upper)
            out.append(((-1e20 if lo is None else lo) - part.const, (1e20 if up is None else up) - part.const))
        return out
    assert list(zip(nlp.cl.tolist(), nlp.cu.tolist())) == expected()
    assert nlp.cu[0] == -0.5                                             # 0.5 - 1.0
    m.p.set_value(2.0)
    nlp.refresh_bounds()
    assert list(zip(nlp.cl.tolist(), nlp.cu.tolist())) == expected() and nlp.cu[0] == 1.0
