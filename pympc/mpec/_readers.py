"""How a Pyomo row (an objective or a constraint body) is read into linear, quadratic and nonlinear parts.

:class:`_Part` splits one function into a constant, a linear part and a
quadratic part (coefficient arrays) and a general nonlinear remainder (a Pyomo
expression and its variables) for :class:`~pympc.mpec.nlp.CompiledNLP`.
Variables and ``LinearExpression`` nodes are read directly from their
arguments (:func:`_read_linear`); sums, products, negations and divisions by
constants of degree <= 2 by :func:`_polynomial`, without Pyomo's
``generate_standard_repn``; anything else goes through that repn (or, when
too deep for it, stays whole as nonlinear: :class:`_WholeRepn`).  A product of
two linear factors is multiplied out from the factors' repns, shared between
rows through a memo (:func:`_linear`).
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from pyomo.common.numeric_types import native_numeric_types
from pyomo.core.base.var import VarData
from pyomo.core.expr.numeric_expr import (DivisionExpression, LinearExpression, MonomialTermExpression,
                                          NegationExpression, ProductExpression, SumExpression)
from pyomo.repn import generate_standard_repn


class _Linear:
    """A linear repn of one expression, with its variables numbered: ``const + coef @ u[idx]``.

    A variable or a ``LinearExpression`` (the node Pyomo builds for sums of
    monomials) is read directly from its arguments; any other expression goes
    through Pyomo's ``generate_standard_repn``.  Fixed variables and Params
    are folded into the constant at their current values, as that repn does.
    ``nonlinear`` holds the Pyomo repn when the expression is not linear.
    """

    __slots__ = ("const", "idx", "coef", "nonlinear")

    def __init__(self, expr, index, where, quadratic=False):
        self.nonlinear = None
        if _read_linear(self, expr, index, where):
            return
        poly = None if quadratic else _polynomial(expr)   # quadratic: only asked after _polynomial failed (_Part)
        if poly is not None and not poly[2]:        # linear after all: no need for Pyomo's repn
            _fill_linear(self, poly, index, where)
            return
        repn = _standard_repn(expr, quadratic)
        pairs = [(index(v, where), float(c)) for v, c in zip(repn.linear_vars, repn.linear_coefs) if c != 0]
        _set_linear(self, pyo.value(repn.constant), [k for k, _ in pairs], [c for _, c in pairs])
        if repn.nonlinear_expr is not None or repn.quadratic_vars:
            self.nonlinear = repn


class _WholeRepn:
    """Stands for Pyomo's repn of an expression too deep for it (RecursionError): all of it is nonlinear."""

    def __init__(self, expr):
        from pyomo.core.expr.visitor import identify_variables

        self.constant = 0.0
        self.linear_vars = self.linear_coefs = self.quadratic_vars = self.quadratic_coefs = ()
        self.nonlinear_expr = expr
        self.nonlinear_vars = [v for v in identify_variables(expr, include_fixed=False)]


def _standard_repn(expr, quadratic):
    """Pyomo's standard repn, or the whole expression as nonlinear when it is too deep for Pyomo's recursion."""
    try:
        return generate_standard_repn(expr, compute_values=True, quadratic=quadratic)
    except RecursionError:
        return _WholeRepn(expr)


def _fill_linear(lin, poly, index, where):
    """Set ``const``, ``idx``, ``coef`` of ``lin`` from the constant and linear part of a :func:`_polynomial`."""
    const, terms, _ = poly
    idx, coef = [], []
    for v, c in terms.values():
        if c != 0:
            idx.append(index(v, where))
            coef.append(c)
    _set_linear(lin, const, idx, coef)


def _set_linear(lin, const, idx, coef):
    """Set the linear part ``const + coef @ u[idx]`` of ``lin`` (a :class:`_Linear` or :class:`_Part`)."""
    lin.const = float(const)
    lin.idx = np.array(idx, dtype=int)
    lin.coef = np.array(coef, dtype=float)


_SUMS = (SumExpression, LinearExpression)
# Operator nodes whose exact class is always a variable expression (NumericExpression's is_potentially_variable),
# not a variable and not named: _polynomial reads them without those tests (their NPV_ subclasses are other classes).
_VARIABLE_NODES = frozenset((SumExpression, LinearExpression, MonomialTermExpression, ProductExpression,
                             NegationExpression, DivisionExpression))


def _polynomial(expr, depth=0):
    """``(const, {id: (var, coef)}, {(id_a, id_b): (var_a, var_b, coef)})`` of an expression of degree <= 2.

    Reads sums, products, negations, divisions by constants, variables (fixed ones and Params at their
    current values, as Pyomo's repn folds them) directly, without Pyomo's ``generate_standard_repn``
    (several times faster on the rows of a collocation model: ``q_r = q_0 + h Σ A v``, ``μ (λ⁺ + λ⁻) + F``).
    None for anything else (a function, a division by a variable, degree > 2, a deep tree): the caller
    then uses Pyomo's repn.
    """
    cls = expr.__class__
    if cls in native_numeric_types:
        return float(expr), {}, {}
    if depth > 50:
        return None
    if cls is VarData:                      # the common leaf, without the generic tests below
        if expr.fixed:
            return float(pyo.value(expr)), {}, {}
        return 0.0, {id(expr): (expr, 1.0)}, {}
    if cls not in _VARIABLE_NODES:          # the generic tests (the operator nodes listed there need none)
        if expr.is_variable_type():
            if expr.fixed:
                return float(pyo.value(expr)), {}, {}
            return 0.0, {id(expr): (expr, 1.0)}, {}
        if not expr.is_potentially_variable():
            return float(pyo.value(expr)), {}, {}
        if expr.is_named_expression_type():
            return _polynomial(expr.args[0], depth + 1)
    if cls is MonomialTermExpression:
        c, v = expr.args
        c = float(c) if c.__class__ in native_numeric_types else float(pyo.value(c))
        if v.fixed:
            return c * float(pyo.value(v)), {}, {}
        return 0.0, {id(v): (v, c)}, {}
    if isinstance(expr, _SUMS):
        const, lin, quad = 0.0, {}, {}
        for arg in expr.args:
            a = arg.__class__                            # a term c·v or v: added here, as its own repn would be
            if (a is MonomialTermExpression or a is VarData) and depth < 50:   # (deeper: None, below)
                c, v = arg.args if a is MonomialTermExpression else (1.0, arg)
                c = float(c) if c.__class__ in native_numeric_types else float(pyo.value(c))
                if v.fixed:
                    const += c * float(pyo.value(v))
                else:
                    k = id(v)
                    old = lin.get(k)
                    lin[k] = (v, c if old is None else old[1] + c)
                continue
            p = _polynomial(arg, depth + 1)
            if p is None:
                return None
            const += p[0]
            for k, (v, c) in p[1].items():
                old = lin.get(k)
                lin[k] = (v, c if old is None else old[1] + c)
            for k, (a, b, c) in p[2].items():
                old = quad.get(k)
                quad[k] = (a, b, c if old is None else old[2] + c)
        return const, lin, quad
    if cls is NegationExpression:
        p = _polynomial(expr.args[0], depth + 1)
        return None if p is None else _scaled(p, -1.0)
    if cls is DivisionExpression:
        num, den = expr.args
        if den.__class__ not in native_numeric_types and den.is_potentially_variable():
            return None
        p = _polynomial(num, depth + 1)
        return None if p is None else _scaled(p, 1.0 / float(pyo.value(den)))
    if cls is ProductExpression:
        x, y = expr.args
        if (x.__class__ in native_numeric_types and x == 0) or (y.__class__ in native_numeric_types and y == 0):
            return 0.0, {}, {}                           # 0 · anything (as Pyomo's repn drops it)
        f = _polynomial(x, depth + 1)
        g = _polynomial(y, depth + 1) if f is not None else None
        if g is None:
            return None
        if not f[1] and not f[2]:
            return _scaled(g, f[0])
        if not g[1] and not g[2]:
            return _scaled(f, g[0])
        if f[2] or g[2]:
            return None                                  # degree > 2
        lin = {k: (v, c * g[0]) for k, (v, c) in f[1].items()} if g[0] != 0 else {}
        for k, (v, c) in (g[1].items() if f[0] != 0 else ()):
            old = lin.get(k)
            lin[k] = (v, f[0] * c if old is None else old[1] + f[0] * c)
        quad = {}
        for ka, (a, ca) in f[1].items():
            for kb, (b, cb) in g[1].items():
                key = (ka, kb) if ka <= kb else (kb, ka)
                old = quad.get(key)
                quad[key] = (a, b, ca * cb if old is None else old[2] + ca * cb)
        return f[0] * g[0], lin, quad
    return None


def _scaled(p, s):
    const, lin, quad = p
    return (const * s, {k: (v, c * s) for k, (v, c) in lin.items()},
            {k: (a, b, c * s) for k, (a, b, c) in quad.items()})


def _read_linear(lin, expr, index, where):
    """Fill ``lin`` from a variable or a ``LinearExpression`` node; False for any other expression."""
    if expr.__class__ in native_numeric_types:
        terms, const = (), float(expr)
    elif expr.__class__ is LinearExpression:
        terms, const = expr.args, 0.0
    elif getattr(expr, "is_variable_type", bool)():
        terms, const = (expr,), 0.0
    else:
        return False
    idx, coef = [], []
    for arg in terms:
        if arg.__class__ is MonomialTermExpression:
            c, v = arg.args
            c = c if c.__class__ in native_numeric_types else pyo.value(c)
        elif arg.__class__ in native_numeric_types:
            const += arg
            continue
        elif arg.is_variable_type():
            c, v = 1.0, arg
        elif not arg.is_potentially_variable():   # a Param or an expression of Params
            const += pyo.value(arg)
            continue
        else:  # pragma: no cover - LinearExpression admits nothing else
            return False
        if v.fixed:
            const += c * pyo.value(v)
        elif c != 0:
            idx.append(index(v, where))
            coef.append(c)
    _set_linear(lin, const, idx, coef)
    return True


class _Part:
    """One function (objective or constraint) split into linear, quadratic and nonlinear parts.

    A product of two factors that are each linear (the products ``simple_nonlinear``
    makes, ``(c.body - c.lower) * v``) is multiplied out from the factors' linear
    repns, which are shared through ``memo`` with the rows that hold the same
    expression (``c``).  Anything else goes whole through Pyomo's quadratic repn.
    """

    def __init__(self, expr, index, where, memo):
        self.nl = None
        self.qa = self.qb = np.zeros(0, int)
        self.qc = np.zeros(0)
        if expr.__class__ is ProductExpression:
            f, g = (_linear(a, index, where, memo) for a in expr.args)
            if f.nonlinear is None and g.nonlinear is None:
                # (f0 + f·u)(g0 + g·u) = f0 g0 + g0 f·u + f0 g·u + Σ f_i g_j u_i u_j
                self.const = f.const * g.const
                lin = [(x.idx, y.const * x.coef) for x, y in ((f, g), (g, f)) if y.const != 0]
                self.lin_idx = np.concatenate([i for i, _ in lin]) if lin else f.idx[:0]
                self.lin_coef = np.concatenate([c for _, c in lin]) if lin else f.coef[:0]
                if g.idx.size == 1:   # the usual case: an expression times one variable
                    self.qa, self.qb, self.qc = f.idx, np.full(f.idx.size, g.idx[0]), f.coef * g.coef[0]
                else:
                    self.qa, self.qb = np.repeat(f.idx, g.idx.size), np.tile(g.idx, f.idx.size)
                    self.qc = np.outer(f.coef, g.coef).ravel()
                return
        poly = _polynomial(expr)                # a sum of products of degree <= 2: read directly
        if poly is not None:
            _fill_linear(self, poly, index, where)
            self.lin_idx, self.lin_coef = self.idx, self.coef
            quad = [(index(a, where), index(b, where), c) for a, b, c in poly[2].values() if c != 0]
            if quad:
                qa, qb, qc = zip(*quad)
                self.qa, self.qb, self.qc = np.array(qa, int), np.array(qb, int), np.array(qc, float)
            return
        lin = _linear(expr, index, where, memo, quadratic=True)   # quadratic or nonlinear: Pyomo's quadratic repn
        repn = lin.nonlinear
        self.const, self.lin_idx, self.lin_coef = lin.const, lin.idx, lin.coef
        if repn is None:
            return
        if repn.quadratic_vars:
            self.qa, self.qb, self.qc = (np.array(x) for x in zip(*[
                (index(a, where), index(b, where), float(c))
                for (a, b), c in zip(repn.quadratic_vars, repn.quadratic_coefs)]))
            self.qa, self.qb = self.qa.astype(int), self.qb.astype(int)
        if repn.nonlinear_expr is not None:
            nl_vars = list(repn.nonlinear_vars)
            self.nl_idx = [index(v, where) for v in nl_vars]
            self.nl = (repn.nonlinear_expr, nl_vars)

    @property
    def constant(self):
        """Whether the function has no variable part at all."""
        return not (self.lin_idx.size or self.qc.size or self.nl is not None)


def _linear(expr, index, where, memo, quadratic=False):
    """:class:`_Linear` of ``expr``, once per expression object (``memo``: id -> (expr, repn)).

    ``quadratic`` asks Pyomo's repn (when the expression is not a linear node)
    to split out quadratic terms; an expression seen first as a factor was read
    without, and is read again if it turns out not to be linear.
    """
    hit = memo.get(id(expr))
    if hit is None or (quadratic and hit[1].nonlinear is not None and not hit[2]):
        hit = memo[id(expr)] = (expr, _Linear(expr, index, where, quadratic), quadratic)  # expr kept: ids stay unique
    return hit[1]
