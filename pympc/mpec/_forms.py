"""Rows read once per form: the rows of a collocation model repeat a few forms over other variables.

:func:`form` writes a row's body as a key — its tree in preorder (node class, function name, arity), numbers,
fixed variables and Params by value, each free variable by the place it first appears — and its free
variables in that order.  Two rows with equal keys are the same function of their own variables, so
:class:`~pympc.mpec.nlp.CompiledNLP`'s reading of one (its constant, linear, quadratic and nonlinear parts,
through Pyomo's repn or pympc's own reader) holds for the other with the variables renamed: :func:`read`
reads the first row of a form (the variables it numbers noted, in order) and makes the others from that
reading (:class:`_Form`), numbering their variables in the same order, so the NLP is the one read row by row
(the same columns, entries and numbers).  On the FESD fit of the 30 s oscillator record
(``benchmarks/fesd_speed.py``) 16 211 of the 21 585 rows of a walk have 30 forms (the others, linear nodes, are
read directly as before): reading the NLP 0.45 → 0.36 s CPU.

A caller that compiles one model again (the FESD fit's walks restart their models in place) keeps the rows it
read (``CompiledNLP(model, rows=kept)``, :class:`_Row`): a row found as it was — the same expression, its free
variables still free, its fixed variables, Params and named expressions as the key took them — is not walked
again (a restarted FESD walk: 0.34 → 0.25 s).  A new row on the body of a kept one (the FESD polish replaces
the law row ``c >= 0`` by ``c == 0``: ~4 000 rows of a restarted walk) takes its form while the body is as it
was, without a walk (the rows are noted by their body too; a walk 2 of the 30 s record: 4 311 → 78 rows walked).
"""

from __future__ import annotations

import numpy as np
from pyomo.common.numeric_types import native_numeric_types, value
from pyomo.core.base.var import VarData
from pyomo.core.expr.numeric_expr import (AbsExpression, DivisionExpression, LinearExpression,
                                          MonomialTermExpression, NegationExpression, PowExpression,
                                          ProductExpression, SumExpression, UnaryFunctionExpression)

__all__ = ["form", "read"]

#: the operator nodes a key holds (True: with the function's name); any other node: the row is read alone
_NODES = {SumExpression: False, LinearExpression: False, MonomialTermExpression: False, ProductExpression: False,
          NegationExpression: False, DivisionExpression: False, PowExpression: False, UnaryFunctionExpression: True,
          AbsExpression: True}

#: the nodes whose argument list may be longer than their arguments (``args`` slices it)
_SUMS = {SumExpression, LinearExpression}

#: per operator node of :data:`_NODES`: 2 a sum (``args`` sliced), 1 with the function's name, 0 else
_KINDS = {cls: 2 if cls in _SUMS else int(named) for cls, named in _NODES.items()}

#: longest key (tokens) of a row read by form
_LONGEST = 5000

#: a form whose reading cannot be renamed (a nonlinear part without a template): its rows are read alone
_ALONE = object()


def form(expr, leaves=None):
    """``(key, variables)`` of a row's body (see the module notes), or None (an operator node outside
    :data:`_NODES`, a key longer than :data:`_LONGEST`).  ``leaves`` (a list): the fixed variables, the
    constant leaves (Params, expressions of them) and the named expressions met are appended to it as
    ``(node, value)`` and ``(node, argument, True)``, what the key took from them (:class:`_Row`)."""
    out, pos, free = [], {}, []
    put = out.append
    note = leaves.append if leaves is not None else None
    stack = [expr]
    push, pop = stack.extend, stack.pop
    nodes, named_classes, places, var_cls, numbers = _KINDS, _NAMED, _PLACES, VarData, native_numeric_types
    getpos = pos.get
    while stack:
        node = pop()
        cls = node.__class__
        kind = nodes.get(cls)
        if kind is not None:                    # an operator node (the most common, then variables)
            put(cls)
            if kind == 2:                       # node.args without the property: a sum's list may be longer
                args = node._args_[:node._nargs]
                if len(out) > _LONGEST:         # (checked at sums, the nodes that make keys long, and at the end)
                    return None
            else:
                args = node._args_
                if kind:
                    put(node.getname())
            put(len(args))
            push(args[::-1])
            continue
        if cls is var_cls:
            fixed = node._fixed
        elif cls in numbers:
            put(float(node))
            continue
        elif cls not in named_classes and node.is_variable_type():
            fixed = node.fixed
        else:
            fixed = None
        if fixed is not None:
            if fixed:
                x = node.value
                x = float(x if x is not None else value(node))    # (value(): Pyomo's error for None)
                put(x)
                if note is not None:
                    note((node, x))
                continue
            k = getpos(id(node))
            if k is None:
                k = pos[id(node)] = len(free)
                free.append(node)
                if k == len(places):
                    places.append((None, k))
            put(places[k])               # a variable: (None, its place); numbers are floats, nodes classes
            continue
        if cls in named_classes or node.is_named_expression_type():   # seen through, as the readers do
            named_classes.add(cls)
            inner = node.args[0]
            stack.append(inner)
            if note is not None:
                note((node, inner, True))
            continue
        if not node.is_potentially_variable():
            x = float(value(node))
            put(x)
            if note is not None:
                note((node, x))
            continue
        return None
    if len(out) > _LONGEST:
        return None
    return tuple(out), free


#: the classes of named expressions met (their test is a property of the class)
_NAMED = set()

#: the tokens of the variables' places
_PLACES = []


class _Form:
    """The reading of a form's first row with its columns as places of the form's variables."""

    __slots__ = ("part", "first", "fields", "nl_places", "nl_key")

    def __init__(self, part, calls, free, template):
        place = {id(v): k for k, v in enumerate(free)}
        at = {}
        self.first = []                           # places in the order the reading numbered them
        for v, col in calls:
            k = place[id(v)]
            if col not in at:
                at[col] = k
                self.first.append(k)
        self.part = part
        # each field's entries as positions in ``first`` (the columns a row's make numbers, in that order); an
        # empty field is left out (the copy keeps the first row's empty array)
        order = {k: i for i, k in enumerate(self.first)}
        self.fields = {name: np.array([order[at[c]] for c in np.asarray(getattr(part, name)).tolist()], int)
                       for name in ("lin_idx", "qa", "qb") + (("nl_idx",) if part.nl is not None else ())
                       if name == "nl_idx" or np.asarray(getattr(part, name)).size}
        self.nl_places = [self.first[i] for i in self.fields["nl_idx"]] if part.nl is not None else None
        self.nl_key = template(*part.nl) if part.nl is not None else None

    def make(self, free, index, where):
        """The reading of a row of this form whose variables are ``free``."""
        # numbered in the first row's order: the same columns
        cols = np.array([index(free[k], where) for k in self.first], int)
        part = object.__new__(self.part.__class__)      # a copy of the first row's reading
        part.__dict__.update(self.part.__dict__)
        shared = part.lin_idx is getattr(part, "idx", None)
        for name, places in self.fields.items():
            setattr(part, name, cols[places])
        if shared:
            part.idx = part.lin_idx
        if part.nl is not None:
            part.nl_idx = part.nl_idx.tolist()
            part.nl = (None, [free[k] for k in self.nl_places])  # the expression: the first row's form
            part.nl_key = self.nl_key
        return part


class _Row:
    """What :func:`read` found of one row (kept by the caller between reads of the same model): its
    expression and body, bounds, form key and free variables, and the leaves the key took values from."""

    __slots__ = ("con", "expr", "body", "lower", "upper", "key", "free", "leaves")

    def __init__(self, con, lower, body, upper, key, free, leaves):
        self.con, self.expr, self.body, self.lower, self.upper = con, con.expr, body, lower, upper
        self.key, self.free, self.leaves = key, free, leaves

    def holds(self, con):
        """Is the row as it was: the same expression, its free variables free, every fixed variable fixed
        and every constant leaf at the value the key took, every named expression with the same argument?"""
        if con is not self.con or con.expr is not self.expr:
            return False
        return self._leaves_hold()

    def holds_body(self, body):
        """Is ``body`` this row's body as it was (:meth:`holds` of the body alone: another row on it)?"""
        return body is self.body and self._leaves_hold()

    def _leaves_hold(self):
        for v in self.free:
            if v.fixed:
                return False
        for leaf in self.leaves:
            node, x = leaf[0], leaf[1]
            if len(leaf) == 3:                              # a named expression: the same argument
                if node.args[0] is not x:
                    return False
            elif node.__class__ is VarData and node._value is not None:   # value() of a Var without its call
                if not node._fixed or float(node._value) != x:
                    return False
            elif (node.is_variable_type() and not node.fixed) or float(value(node)) != x:
                return False
        return True


def read(con, index, forms, parse, template, rows=None):
    """``(lower, upper, reading)`` of the row ``con``: its body read by ``parse(body, index, con)`` for the
    first row of its form (noted in ``forms``, a dict) and for rows read alone, the others made from their
    form's first row.  ``template``: the key of a nonlinear part (:func:`~pympc.mpec.nlp._template`), which
    the grouping of nonlinear rows uses.  ``rows`` (a dict, optional, the caller's between reads of one
    model): a row found there as it was (:meth:`_Row.holds`), or a row on the body of one found there as it was
    (:meth:`_Row.holds_body`), is not walked again; the rows read are noted, by constraint and by body."""
    hit = rows.get(id(con)) if rows is not None else None
    if hit is not None and hit.holds(con):
        known = forms.get(hit.key)
        if known is not None and known is not _ALONE:
            return hit.lower, hit.upper, known.make(hit.free, index, con)
    lower, expr, upper = con.to_bounded_expression()
    cls = expr.__class__
    if cls is LinearExpression or cls is ProductExpression or cls is VarData or cls in native_numeric_types:
        return lower, upper, parse(expr, index, con)    # read directly anyway (products: their factors shared)
    if rows is not None:
        same = rows.get(id(expr))       # another row on this body, read before (a law row c >= 0, now c = 0)
        if same is not None and same.holds_body(expr):
            key, free, leaves = same.key, same.free, same.leaves
        else:
            leaves = []
            found = form(expr, leaves)
            if found is None:
                return lower, upper, parse(expr, index, con)
            key, free = found
        rows[id(con)] = rows[id(expr)] = _Row(con, lower, expr, upper, key, free, leaves)
    else:
        found = form(expr)
        if found is None:
            return lower, upper, parse(expr, index, con)
        key, free = found
    known = forms.get(key)
    if known is None:
        calls = []

        def noting(v, w):
            col = index(v, w)
            calls.append((v, col))
            return col
        part = parse(expr, noting, con)
        try:
            known = forms[key] = _Form(part, calls, free, template)
        except KeyError:                          # a column of a variable not in the tree: not renamed
            forms[key] = _ALONE
            return lower, upper, part
        if known.nl_key is None and part.nl is not None:
            forms[key] = _ALONE                   # no template: the rows are compiled alone, with their own trees
        elif part.nl is not None:
            part.nl_key = known.nl_key
        return lower, upper, part
    if known is _ALONE:
        return lower, upper, parse(expr, index, con)
    return lower, upper, known.make(free, index, con)
