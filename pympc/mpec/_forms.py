"""Rows read once per form: the rows of a collocation model repeat a few forms over other variables.

:func:`form` writes a row's body as a key — its tree in preorder (node class, function name, arity), numbers,
fixed variables and Params by value, each free variable by the place it first appears — and its free
variables in that order.  Two rows with equal keys are the same function of their own variables, so
:class:`~pympc.mpec.nlp.CompiledNLP`'s reading of one (its constant, linear, quadratic and nonlinear parts,
through Pyomo's repn or pympc's own reader) holds for the other with the variables renamed: :func:`read`
reads the first row of a form (:class:`_Form`: its entries as places of the form's variables) and notes of
every other row only its form and its variables (as keys of a :class:`Table`).  :func:`assemble` then makes
the NLP's arrays form by form — each form's rows at once, their columns renumbered in one array operation —
numbering the columns as the rows read one by one would (by first appearance, row after row, in the order
each row's reading meets them), so the NLP is the one read row by row (the same columns, entries and
numbers).  On the FESD fit of the 30 s oscillator record (``benchmarks/fesd_speed.py``) the 21 586 rows of a
walk have 34 forms: walk 1's compile 333 -> ~255 ms CPU.

A caller that compiles one model again (the FESD fit's walks restart their models in place) keeps the rows it
read (``CompiledNLP(model, rows=kept)``, :class:`_Row`): a row found on the same expression, or a new row on
the body of a kept one (the FESD polish replaces the law row ``c >= 0`` by ``c == 0``), is not walked again
while its free variables are free and its fixed variables, Params and named expressions are as the key took
them — the variables of all kept rows checked at once (:meth:`Table.stale`), the rows that changed read again.
Walk 2 of the 30 s record takes 21 192 of its 21 586 rows as kept (33 of them changed since: read again) and
walks the 362 new ones: its compile 218 -> ~81 ms.
"""

from __future__ import annotations

import numpy as np
from pyomo.common.numeric_types import native_numeric_types, value
from pyomo.core.base.var import VarData
from pyomo.core.expr.numeric_expr import (AbsExpression, DivisionExpression, LinearExpression,
                                          MonomialTermExpression, NegationExpression, PowExpression,
                                          ProductExpression, SumExpression, UnaryFunctionExpression)

__all__ = ["form", "walk", "read", "reread", "assemble", "Table"]

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


def form(expr):
    """``(key, variables)`` of a row's body (see the module notes), or None (an operator node outside
    :data:`_NODES`, a key longer than :data:`_LONGEST`)."""
    found = walk(expr)
    return None if found is None else found[:2]


def walk(expr, leaves=None, table=None):
    """:func:`form` of ``expr`` noting what the key took: ``(key, variables, at, nleaf)`` or None.  With a
    :class:`Table` ``table``, the keys of the variables, then of the fixed variables the key took values from
    (``nleaf`` of them), are noted in ``table.flat`` from offset ``at`` (the values beside them in
    ``table.vals``).  ``leaves`` (a list): the other leaves the key took values from (Params, expressions of
    them; named expressions) are appended to it as ``(node, value)`` and ``(node, argument, True)``
    (:class:`_Row`)."""
    out, pos, free = [], {}, []
    put = out.append
    note = leaves.append if leaves is not None else None
    # preorder by iterators: each node's arguments are taken in turn from its iterator (the parents' iterators
    # wait on ``stack``), a leaf handled where it is met, without a push and a pop of its own
    stack = []
    push, pop = stack.append, stack.pop
    nodes, named_classes, places, var_cls, numbers = _KINDS, _NAMED, _PLACES, VarData, native_numeric_types
    getpos = pos.get
    lk, lv = [], []                      # the fixed variables, their values
    mono = MonomialTermExpression
    it = iter((expr,))
    while True:
        for node in it:
            cls = node.__class__
            if cls is mono:                     # c·v (the most common node): its tokens here, v's below
                c, v = node._args_
                if c.__class__ in numbers and v.__class__ is var_cls:
                    put(cls)
                    put(2)
                    put(float(c))
                    node, cls = v, var_cls
            if cls is var_cls:                  # a variable (the most common leaf)
                fixed = node._fixed
            else:
                kind = nodes.get(cls)
                if kind is not None:            # an operator node
                    put(cls)
                    if kind == 2:               # node.args without the property: a sum's list may be longer
                        args = node._args_[:node._nargs]
                        if len(out) > _LONGEST:     # (checked at sums, the nodes that make keys long, and at the end)
                            return None
                    else:
                        args = node._args_
                        if kind:
                            put(node.getname())
                    put(len(args))
                    push(it)
                    it = iter(args)
                    break
                if cls in numbers:
                    put(float(node))
                    continue
                fixed = node.fixed if cls not in named_classes and node.is_variable_type() else None
            if fixed is not None:
                if fixed:
                    x = node.value
                    x = float(x if x is not None else value(node))    # (value(): Pyomo's error for None)
                    put(x)
                    lk.append(node)
                    lv.append(x)
                    continue
                k = getpos(id(node))
                if k is None:
                    k = pos[id(node)] = len(free)
                    free.append(node)
                    if k == len(places):
                        places.append((None, k))
                put(places[k])           # a variable: (None, its place); numbers are floats, nodes classes
                continue
            if cls in named_classes or node.is_named_expression_type():   # seen through, as the readers do
                named_classes.add(cls)
                inner = node.args[0]
                if note is not None:
                    note((node, inner, True))
                push(it)
                it = iter((inner,))
                break
            if not node.is_potentially_variable():
                x = float(value(node))
                put(x)
                if note is not None:
                    note((node, x))
                continue
            return None
        else:                                   # this node's arguments done: its parent's next
            if not stack:
                break
            it = pop()
    if len(out) > _LONGEST:
        return None
    if table is None:
        return tuple(out), free, None, 0
    at = len(table.flat)
    tkey, tvars, flat = table.key, table.vars, table.flat
    tget = tkey.get
    for v in free + lk:                  # their keys (a new one for a variable first met)
        t = tget(id(v))
        if t is None:
            t = tkey[id(v)] = len(tvars)
            tvars.append(v)
        flat.append(t)
    table.vals += [np.nan] * len(free)
    table.vals += lv
    return tuple(out), free, at, len(lk)


#: the classes of named expressions met (their test is a property of the class)
_NAMED = set()

#: the tokens of the variables' places
_PLACES = []



class Table:
    """The variables met reading one model, each numbered by a key (kept with the caller's rows between compiles
    of the model, so that a row's keys hold from one compile to the next): the keys of every row's free
    variables, then of its fixed variables' leaves, in one flat list (a row's at its offset ``at``), the
    values the leaves had beside them.  Columns are not keys: :func:`assemble` numbers the columns afresh
    at each compile, by first appearance, from the keys of the rows read."""

    con = None                                  # (not a row: the caller's rows dict holds it beside them)

    def __init__(self):
        self.key, self.vars = {}, []
        self.canon = {}                         # key -> the one object of that key (forms: by its id)
        self.owned = {}                         # id(con) -> the entries of the caller's rows made for it
        self.flat, self.vals = [], []
        self._arr = np.zeros(0, int)
        self._vals = np.zeros(0)

    def own(self, con, entry):
        """Note that the caller's rows hold entries ``id(con)`` and ``entry`` made for ``con``."""
        k = id(con)
        known = self.owned.get(k)
        self.owned[k] = (k, entry) if known is None else known + (entry,)

    def forget(self, rows, seen):
        """Delete from ``rows`` the entries made for the constraints not in ``seen`` (ids: the rows read)."""
        for k in self.owned.keys() - seen:
            for entry in self.owned.pop(k):
                row = rows.get(entry)
                if row is not None and id(row.con) == k:      # (not since made for another row)
                    del rows[entry]

    def index(self, v, where=None):
        """The key of variable ``v`` (a new one when first met)."""
        k = self.key.get(id(v))
        if k is None:
            k = self.key[id(v)] = len(self.vars)
            self.vars.append(v)
        return k

    def keys(self):
        """:attr:`flat` as an array (extended by the entries noted since the last call)."""
        n = self._arr.size
        if len(self.flat) != n:
            self._arr = np.concatenate([self._arr, np.array(self.flat[n:], int)])
        return self._arr

    def values(self):
        """:attr:`vals` as an array (extended likewise)."""
        n = self._vals.size
        if len(self.vals) != n:
            self._vals = np.concatenate([self._vals, np.array(self.vals[n:], float)])
        return self._vals

    def stale(self, kept):
        """Which of the rows ``kept`` (:class:`_Row`, a list) no longer hold: a free variable fixed since, a
        fixed variable leaf freed or at another value (all rows at once, one look at each variable)."""
        R = len(kept)
        if not R:
            return np.zeros(0, bool)
        flat, vals = self.keys(), self.values()
        starts = np.array([r.at for r in kept], int)
        lens = np.array([r.nfree + r.nleaf for r in kept], int)
        nfree = np.repeat(np.array([r.nfree for r in kept], int), lens)
        owner = np.repeat(np.arange(R), lens)
        local = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
        pos = np.repeat(starts, lens) + local
        keys = flat[pos]
        used = np.flatnonzero(np.bincount(keys, minlength=len(self.vars)))
        fixed = np.zeros(len(self.vars), bool)
        value = np.full(len(self.vars), np.nan)
        got = [self.vars[k] for k in used.tolist()]
        fixed[used] = [v.fixed for v in got]
        value[used] = [np.nan if x is None else x for x in (v.value for v in got)]
        leaf = local >= nfree
        bad = np.where(leaf, ~fixed[keys] | (value[keys] != vals[pos]), fixed[keys])
        return np.bincount(owner[bad], minlength=R) > 0


class _Row:
    """What :func:`read` found of one row (kept by the caller between reads of the same model): its
    expression and body, bounds, form key and free variables, where its keys are in the :class:`Table`
    (``at``: its free variables', then ``nleaf`` fixed variable leaves'), the other leaves the key took
    values from (Params, named expressions: ``other``)."""

    __slots__ = ("con", "expr", "body", "lower", "upper", "bounds", "key", "free", "at", "nfree", "nleaf", "other")

    def __init__(self, con, lower, body, upper, key, free, at, nleaf, other):
        self.con, self.expr, self.body, self.lower, self.upper = con, con.expr, body, lower, upper
        self.bounds = (lower, upper)
        self.key, self.free, self.at, self.nfree, self.nleaf, self.other = key, free, at, len(free), nleaf, other

    def moved(self, con, lower, upper):
        """This row's reading for another row ``con`` on the same body (the FESD polish's ``c == 0`` on a
        law row ``c >= 0``'s body)."""
        return _Row(con, lower, self.body, upper, self.key, self.free, self.at, self.nleaf, self.other)

    def others_hold(self):
        """Are the leaves other than variables as the key took them (a named expression with the same
        argument, a Param at the same value)?"""
        for leaf in self.other:
            node, x = leaf[0], leaf[1]
            if len(leaf) == 3:
                if node.args[0] is not x:
                    return False
            elif float(value(node)) != x:
                return False
        return True

    def holds(self, table):
        """The whole check, for one row (:meth:`Table.stale` does it for many, with arrays)."""
        flat, vals, tvars = table.flat, table.vals, table.vars
        for v in self.free:
            if v.fixed:
                return False
        for p in range(self.at + self.nfree, self.at + self.nfree + self.nleaf):
            v = tvars[flat[p]]
            if not v.fixed or v.value is None or float(v.value) != vals[p]:
                return False
        return self.others_hold()


class _Form:
    """The reading of a form's first row with its keys as places of the form's free variables: ``first`` the
    places in the order the reading met them (the columns are numbered in that order), ``lin``, ``qa``,
    ``qb``, ``nl`` the places of its fields' entries; its numbers (``const``, ``lin_coef``, ``qc``) and its
    nonlinear part (``part.nl``: the first row's expression over its variables) shared by the form's rows."""

    __slots__ = ("id", "part", "first", "lin", "qa", "qb", "nl", "nl_key", "const", "lin_coef", "qc", "nfree",
                 "renamed")

    def __init__(self, fid, part, calls, keys, template):
        place = {k: p for p, k in enumerate(keys)}
        first, seen = [], set()
        for k in calls:
            if k not in seen:
                seen.add(k)
                first.append(place[k])          # KeyError: a variable not in the tree (the caller: read alone)
        self.id, self.part, self.nfree = fid, part, len(keys)
        self.first = np.array(first, int)
        self.lin, self.qa, self.qb = (np.array([place[k] for k in np.asarray(getattr(part, f)).tolist()], int)
                                      for f in ("lin_idx", "qa", "qb"))
        self.nl = np.array([place[k] for k in part.nl_idx], int) if part.nl is not None else None
        self.nl_key = template(*part.nl) if part.nl is not None else None
        self.const, self.lin_coef, self.qc = part.const, np.asarray(part.lin_coef, float), np.asarray(part.qc, float)
        self.renamed = bool(self.nfree) and not part.constant   # (a constant row: read alone, checked alone)


def _parse(expr, table, parse, con):
    """``(part, calls)``: the reading of ``expr`` with its variables as keys, and the keys in the order met."""
    calls = []
    index = table.index

    def noting(v, w):
        k = index(v)
        calls.append(k)
        return k
    return parse(expr, noting, con), calls


def read(con, table, forms, parse, template, rows=None):
    """``(lower, upper, form, at, kept)`` of the row ``con``: its form (a :class:`_Form`, noted in ``forms``:
    id(key) -> form, each key made one object by ``table.canon``; its first row read by
    ``parse(body, index, con)``) and the offset of its keys in ``table``;
    or ``(lower, upper, None, (part, calls), None)`` for a row read alone (no form, or a form whose reading
    cannot be renamed), its reading's columns as keys.  ``rows`` (a dict, optional, the caller's between
    reads of one model): a row found there on the same expression, or a new row on the body of one found
    there, is not walked again: ``kept`` is that row (:class:`_Row`), whose variables the caller checks,
    all rows at once (:meth:`Table.stale`), reading again (:func:`reread`) those that changed."""
    row = None
    if rows is not None:
        hit = rows.get(id(con))
        if hit is not None and hit.con is con and con.expr is hit.expr:
            row, lower, expr, upper = hit, hit.lower, hit.body, hit.upper
        else:
            lower, expr, upper = con.to_bounded_expression()
            same = rows.get(id(expr))           # another row on this body, read before (a law row c >= 0, now c = 0)
            if same is not None and same.body is expr:
                row = rows[id(con)] = same.moved(con, lower, upper)
                table.own(con, id(con))
    else:
        lower, expr, upper = con.to_bounded_expression()
    if row is not None and (not row.other or row.others_hold()):
        known = forms.get(id(row.key))
        if known is not None and known is not _ALONE and known.renamed:
            return lower, upper, known, row.at, row
        if known is None and row.holds(table):   # the first row of its form at this compile: read (checked first)
            known = _first(expr, row.key, row.free, row.at, table, forms, parse, template, con)
            if known.__class__ is _Form and known.renamed:
                return lower, upper, known, row.at, None
    return reread(con, table, forms, parse, template, rows, lower, expr, upper)


def reread(con, table, forms, parse, template, rows=None, lower=None, expr=None, upper=None):
    """:func:`read` of ``con`` walking its body (``lower, expr, upper``: its bounded expression, when known)."""
    if expr is None:
        lower, expr, upper = con.to_bounded_expression()
    other = [] if rows is not None else None
    found = walk(expr, other, table)
    if found is None:
        return lower, upper, None, _parse(expr, table, parse, con), None
    key, free, at, nleaf = found
    key = table.canon.setdefault(key, key)      # one object per key: the forms looked up by its id
    if rows is not None:
        rows[id(con)] = rows[id(expr)] = _Row(con, lower, expr, upper, key, free, at, nleaf, other)
        table.own(con, id(expr))
    known = forms.get(id(key))
    if known is None:
        known = _first(expr, key, free, at, table, forms, parse, template, con)
    if known.__class__ is _Form and known.renamed:
        return lower, upper, known, at, None
    if known.__class__ is tuple:                # the first row, read, its form not renamed: its own reading
        return lower, upper, None, known, None
    return lower, upper, None, _parse(expr, table, parse, con), None


def _first(expr, key, free, at, table, forms, parse, template, con):
    """Read the first row of a form and note the form; the form, or the reading ``(part, calls)`` when the form
    cannot be renamed (its rows then read alone: ``forms[key]`` is :data:`_ALONE`)."""
    part, calls = _parse(expr, table, parse, con)
    keys = table.flat[at: at + len(free)]
    try:
        known = _Form(len(forms), part, calls, keys, template)
    except KeyError:                            # a column of a variable not in the tree: not renamed
        forms[id(key)] = _ALONE
        return part, calls
    if known.nl_key is None and part.nl is not None:
        forms[id(key)] = _ALONE                 # no template: the rows are compiled alone, with their own trees
        return part, calls
    forms[id(key)] = known
    return known


def assemble(fids, ats, parts, forms, table, extra=()):
    """The NLP's columns and rows from the rows read (:func:`read`), vectorized form by form.

    ``fids``, ``ats``: per row its form's ``id`` and its keys' offset in ``table``, or -1 and its index in
    ``parts`` (``(part, calls)``: a row read alone, columns as keys).  ``extra``: the keys met after the rows
    (the objective's).  The columns are numbered as reading the rows one by one numbers them: by first
    appearance of their variables, row after row, in the order each row's reading met them.

    Returns ``(variables, col, lin, q, const, nl)``: the columns' variables, ``col`` (key -> column, -1 for
    keys not in the NLP), ``lin = (rows, cols, coefs)`` and ``q = (rows, a, b, coefs)`` in row order (each row's
    entries in its reading's order), the rows' constants and their nonlinear parts as pieces
    ``(rows, idx, nl_key, (expr, variables), made)``: ``idx`` (rows × variables) the columns of each row's
    nonlinear variables, ``(expr, variables)`` a reading of that form (``made``: not each row's own tree).
    """
    flat = table.keys()
    m = len(fids)
    fid, at = np.array(fids, int), np.array(ats, int)
    flist = [None] * (max((f.id for f in forms.values() if f.__class__ is _Form), default=-1) + 1)
    for f in forms.values():
        if f.__class__ is _Form:
            flist[f.id] = f
    isf = fid >= 0
    prows = np.flatnonzero(~isf).tolist()
    order = np.argsort(fid, kind="stable")
    present, cut = np.unique(fid[order], return_index=True)
    cut = np.append(cut, m)
    blocks = [(flist[f], order[cut[k]:cut[k + 1]]) for k, f in enumerate(present.tolist()) if f >= 0]
    keyat = {id(f): at[r][:, None] for f, r in blocks}     # each block's rows' offsets, as a column

    def sizes(per_form, per_part):
        n = np.zeros(m, int)
        for f, r in blocks:
            n[r] = per_form(f)
        for r in prows:
            n[r] = per_part(parts[at[r]])
        return n, np.cumsum(n) - n

    def gather(f, r, places, n, off, out, values=None):
        if places.size:
            pos = off[r][:, None] + np.arange(places.size)
            out[pos] = values if values is not None else flat[keyat[id(f)] + places]
    # the keys in the order met: each row's in its first row's order (a row read alone: as its reading met them)
    slen, soff = sizes(lambda f: f.first.size, lambda p: len(p[1]))
    S = np.empty(int(slen.sum()) + len(extra), int)
    for f, r in blocks:
        gather(f, r, f.first, slen, soff, S)
    for r in prows:
        S[soff[r]: soff[r] + slen[r]] = parts[at[r]][1]
    S[S.size - len(extra):] = extra
    seen = np.full(len(table.vars), S.size)          # each key's first place in S (S.size: not in S)
    np.minimum.at(seen, S, np.arange(S.size))
    keys = np.flatnonzero(seen < S.size)
    keys = keys[np.argsort(seen[keys])]
    col = np.full(len(table.vars), -1)
    col[keys] = np.arange(keys.size)
    variables = list(map(table.vars.__getitem__, keys.tolist()))
    # linear and quadratic entries in row order, the rows of a form gathered at once
    lin_n, lin_off = sizes(lambda f: f.lin.size, lambda p: p[0].lin_idx.size)
    lin_cols, lin_coef = np.zeros(int(lin_n.sum()), int), np.empty(int(lin_n.sum()))
    q_n, q_off = sizes(lambda f: f.qa.size, lambda p: p[0].qa.size)
    qa, qb, qc = np.zeros(int(q_n.sum()), int), np.zeros(int(q_n.sum()), int), np.empty(int(q_n.sum()))
    const = np.zeros(m)
    nl = []
    for f, r in blocks:
        gather(f, r, f.lin, lin_n, lin_off, lin_cols)
        gather(f, r, f.lin, lin_n, lin_off, lin_coef, f.lin_coef)
        gather(f, r, f.qa, q_n, q_off, qa)
        gather(f, r, f.qb, q_n, q_off, qb)
        gather(f, r, f.qa, q_n, q_off, qc, f.qc)
        const[r] = f.const
        if f.nl is not None:
            nl.append((r, col[flat[keyat[id(f)] + f.nl]], f.nl_key, f.part.nl, True))
    lin_cols, qa, qb = col[lin_cols], col[qa], col[qb]     # (a row read alone: its columns mapped below)
    for r in prows:
        p = parts[at[r]][0]
        lo, ln, qo, qn = lin_off[r], lin_n[r], q_off[r], q_n[r]
        lin_cols[lo: lo + ln], lin_coef[lo: lo + ln] = col[p.lin_idx], p.lin_coef
        qa[qo: qo + qn], qb[qo: qo + qn], qc[qo: qo + qn] = col[p.qa], col[p.qb], p.qc
        const[r] = p.const
        if p.nl is not None:
            nl.append((np.array([r]), col[np.array(p.nl_idx, int)][None, :], getattr(p, "nl_key", False),
                       p.nl, False))
    rows = np.arange(m)
    return (variables, col, (np.repeat(rows, lin_n), lin_cols, lin_coef), (np.repeat(rows, q_n), qa, qb, qc),
            const, nl)
