"""Terms of the FESD model's rows made directly (:mod:`pympc.identify.fesd`): collocation sums as the
expressions Pyomo's operators would make, and gradients read off linear expressions or kept by form within one
model build.  Pyomo is imported at the first use (``import pympc.identify`` stays Pyomo-free)."""

from __future__ import annotations


def _grad(expr, wrt, kept=None):
    """∂expr/∂wrt (:func:`pympc.identify.mpec_model._grad`); a gradient of numbers only (a slot or joint whose
    residual is linear in q: the same for every stage) is kept in the dict ``kept`` (one model build's) by the
    expression's form (:func:`pympc.mpec._forms.form`: its tree, numbers and fixed values, the variables by place)
    and the places of ``wrt``, and given again for the next expression of that form.  A ``LinearExpression`` of distinct Vars
    (a slot on a fixed guide) has its gradient read off its terms (:func:`_linear_grad`)."""
    known = _linear_grad(expr, wrt)
    if known is not None:
        return known
    from ..mpec._forms import form
    from .mpec_model import _grad as g
    found = form(expr) if kept is not None and hasattr(expr, "is_expression_type") else None
    if found is None:
        return g(expr, wrt)
    key, free = found
    place = {id(v): k for k, v in enumerate(free)}
    key = (key, tuple(place.get(id(v)) for v in wrt))
    known = kept.get(key)
    if known is None:
        known = g(expr, wrt)
        if not all(d.__class__ in (int, float) for d in known):
            return known
        kept[key] = known
    return list(known)


def _linear_grad(expr, wrt):
    """∂expr/∂wrt of a ``LinearExpression`` whose terms are distinct Vars, bare or times a number: the numbers
    reverse-mode symbolic differentiation gives (``0 + c·1`` for a term's Var, 1 for a bare one, 0 for a Var not
    in it: the same values and types, ``tests/test_fesd.py``), without walking the tree; None for any other
    expression."""
    linear, monomial, var = _LINEAR_TYPES or _linear_types()
    if expr.__class__ is not linear:
        return None
    coef = {}
    for a in expr.args:
        if a.__class__ is var:
            c, x = 1, a
        elif a.__class__ is monomial:
            c, x = a.args
            if c.__class__ not in (int, float) or x.__class__ is not var:
                return None
            c = 0 + c * 1
        else:
            return None
        if id(x) in coef:
            return None
        coef[id(x)] = c
    return [coef.get(id(w), 0) for w in wrt]


def _linear(coefs, xs):
    """``Σ c x`` over numbers ``coefs`` and Pyomo objects ``xs``: the expression the operators make
    (``sum(c * x ...)``), made directly when every x is a Var and every c a float other than 0 and 1 (then
    the operators make one ``LinearExpression`` of ``MonomialTermExpression`` terms, the same tree, in about
    a quarter of the time); ``coefs`` None: ``sum(xs)`` (of Vars: one ``LinearExpression`` of them)."""
    linear, monomial, var = _LINEAR_TYPES or _linear_types()
    if coefs is None:
        return linear(list(xs)) if len(xs) > 1 and all(x.__class__ is var for x in xs) else sum(xs)
    if len(xs) > 1 and all(x.__class__ is var and c.__class__ is float and c != 0 and c != 1
                           for c, x in zip(coefs, xs)):
        return linear([monomial((c, x)) for c, x in zip(coefs, xs)])
    return sum(c * x for c, x in zip(coefs, xs))


def _linear_types():
    """Pyomo's (LinearExpression, MonomialTermExpression, VarData), imported at the first use (``import
    pympc.identify`` stays Pyomo-free)."""
    from pyomo.core.base.var import VarData
    from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression
    _LINEAR_TYPES[:] = [LinearExpression, MonomialTermExpression, VarData]
    return _LINEAR_TYPES


_LINEAR_TYPES = []
