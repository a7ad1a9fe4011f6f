"""Rows a model builder declares by family, read without walking each one (:class:`Declared`).

A builder that makes many rows by one piece of code over other variables (the FESD trajectory model's
collocation, continuity, dynamics, position, velocity, slot and friction-law rows: the same function at every
element) knows which rows are the same function of which variables.  It notes each such row's expression with a
*family* (the rows of one family are made by the same code, with the same numbers, from their own *arguments*),
the row's arguments (tuples of Vars, of one length in a family, among them every variable of the row's tree,
those of its named expressions included) and the named expressions its tree holds.
:class:`~pympc.mpec.nlp.CompiledNLP` then reads the families at each compile (:func:`family_rows`) instead of
walking every row (:func:`~pympc.mpec._forms.walk`):

* a row is found by its expression: a row whose ConstraintData holds another expression (a user's
  ``set_value``), a row a user added, is read by the general path; a deactivated row is not read at all; rows
  whose named expressions name other expressions than when declared are read by the general path;
* the family's rows are split by the current state of their arguments (which are fixed, at which values: the
  form's key holds fixed variables by value); rows whose arguments are not distinct variables are left out;
* one row of each part is walked: its key, and the places of its free variables and fixed leaves among its
  arguments; a part whose row holds a variable outside its arguments, a Param or a named expression not declared
  (the key takes those by value or sees through them: other rows may differ) is left to the general path;
* every other row of the part has the walked row's key, with its own arguments at those places (noted in the
  :class:`~pympc.mpec._forms.Table` as a walk would note them), and the walked row's bounds;
* from one compile to the next, a row whose arguments are as they were keeps its reading, and a part whose
  state was read before is not walked again.

The NLP is the one the general reading makes (the same columns, rows, entries, Jacobian and Hessian:
``tests/test_nlp_declared.py`` compares them on FESD models of one and of several slots).  What is trusted is
the declaration: the rows of one family are one function of their arguments.  On the FESD fit of the 30 s
oscillator record (``benchmarks/fesd_speed.py``) 22 076 of the model's 24 435 rows are declared, in 36 families
(not: the clock rows, which hold the sample times, and the rows a restart makes again: switch, equilibration,
cross); walk 1's compile (``CompiledNLP``) ~226 -> ~130 ms CPU, walk 2's ~78 -> ~78 ms.
"""

from __future__ import annotations

from itertools import chain, repeat
from operator import attrgetter

import numpy as np
from pyomo.common.numeric_types import native_numeric_types
from pyomo.core.base.constraint import ConstraintData

from ._forms import walk

__all__ = ["Declared", "family_rows"]

_FIXED, _VALUE = attrgetter("_fixed"), attrgetter("value")     # (VarData's fixed flag, as walk() reads it)


class Declared:
    """The rows a builder declares (see the module notes), by family: their ``ConstraintData``, expressions and
    arguments, each row's a tuple of its own and a tuple ``shared`` with other rows (the same object: its keys are
    looked up once)."""

    def __init__(self):
        self.families = {}                      # family -> ([ConstraintData], [expression], [own], [shared])
        self._table, self._keys = None, {}      # the arguments' keys in one Table (made at its first compile)
        self._used = None                       # (all the keys in them)
        self._last = {}                         # family -> its _Family: its reading at the last compile

    def add(self, declared):
        """Note rows: ``declared`` a list of ``(expression, family, own, shared, named)`` per row: its
        expression (the one its ConstraintData holds), its family (a number >= 0; -1: a row not declared),
        arguments ``own`` and ``shared`` (tuples of Vars) and the named expressions its tree holds (a tuple,
        each noted with the expression it names now)."""
        if not declared:
            return
        exprs, families, own, shared, named = zip(*declared)
        families = np.array(families, int)
        order = np.argsort(families, kind="stable")
        count = np.bincount(families[order] - families[order[0]])
        for idx in np.split(order, np.cumsum(count)[:-1]):
            if not idx.size or families[idx[0]] < 0:
                continue
            idx = idx.tolist()
            family = int(families[idx[0]])
            fam = self.families.get(family)
            if fam is None:
                fam = self.families[family] = ([], [], [], [], [])
            for into, src in zip(fam, (exprs, own, shared, named)):
                into.extend(map(src.__getitem__, idx))
            names = fam[3][len(fam[3]) - len(idx):]
            fam[4].extend([tuple(x.args[0] for x in n) for n in names] if any(names) else names)

    def keys(self, table):
        """Per family, its rows' arguments as keys of ``table`` (rows × arguments), made once per table."""
        if self._table is not table:
            self._table, self._keys, self._last = table, {}, {}
            blocks, owns = [], []               # per family: (family, own rows, width, shared width, row -> tuple)
            shared_at = {}                      # width -> {id(shared tuple): its place}, each tuple once
            held = {}                           # width -> the shared tuples in their places
            for family, (_, own, shared, _, _) in self.families.items():
                wo, ws = set(map(len, own)), set(map(len, shared))
                if len(wo) == 1 and len(ws) == 1:
                    ws = ws.pop()
                    at, tuples = shared_at.setdefault(ws, {}), held.setdefault(ws, [])
                    ids = list(map(id, shared))
                    for k, t in dict(zip(ids, shared)).items():
                        if k not in at:
                            at[k] = len(tuples)
                            tuples.append(t)
                    blocks.append((family, len(own), wo.pop(), ws, list(map(at.__getitem__, ids))))
                    owns.append(own)
            widths = sorted(held)
            flat = list(chain.from_iterable(chain.from_iterable(owns + [held[w] for w in widths])))
            K, self._used = _keys(flat, table)
            pos = 0
            for family, n, wo, _, _ in blocks:
                blocks_own = K[pos: pos + n * wo].reshape(n, wo)
                self._keys[family] = blocks_own
                pos += n * wo
            shared = {}
            for w in widths:
                n = len(held[w])
                shared[w] = K[pos: pos + n * w].reshape(n, w)
                pos += n * w
            for family, _, _, ws, which in blocks:
                self._keys[family] = np.concatenate([self._keys[family], shared[ws][which]], axis=1)
        return self._keys


def _keys(flat, table):
    """The keys of the variables ``flat`` in ``table`` (a new one for a variable first met, in the order met), and
    the keys met (sorted)."""
    ids = np.fromiter(map(id, flat), np.int64, len(flat))
    uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
    tkey, tvars = table.key, table.vars
    keys = np.fromiter(map(tkey.get, uniq.tolist(), repeat(-1)), int, uniq.size)
    new = np.flatnonzero(keys < 0)
    if new.size:
        new = new[np.argsort(first[new])]
        keys[new] = np.arange(len(tvars), len(tvars) + new.size)
        for k, i in zip(keys[new].tolist(), first[new].tolist()):
            v = flat[i]
            tkey[id(v)] = k
            tvars.append(v)
    return keys[inv.ravel()], np.sort(keys)


class _Part:
    """Rows of one family with one key: their bounds, the places of the free variables among the arguments."""

    __slots__ = ("bounds", "free", "own", "shared")

    def __init__(self, bounds, free, own, shared):
        self.bounds, self.free, self.own, self.shared = bounds, free, own, shared

    def variables(self, i):
        """The free variables of the family's row ``i``, in the order of its form."""
        args = self.own[i] + self.shared[i]
        return [args[p] for p in self.free]


def family_rows(declared, table):
    """``{id(con): (key, at, i, part)}`` of the declared rows read by family at this compile (see the module
    notes): the row's form key (one object per key, ``table.canon``), the offset ``at`` of its keys in ``table``,
    its position ``i`` among its family's rows and its :class:`_Part`.  Rows as at the last compile (the same
    expression valid, the arguments fixed or free as then, at the same values) keep their reading; a part read
    before (the same state of the arguments) is not walked again."""
    keys = declared.keys(table)
    if not keys:
        return {}
    tvars = table.vars
    used = declared._used                       # the keys of all arguments
    fixed = np.zeros(len(tvars), bool)
    value = np.full(len(tvars), np.nan)
    got = list(map(tvars.__getitem__, used.tolist()))
    fixed[used] = np.fromiter(map(_FIXED, got), bool, len(got))
    held = used[fixed[used]]                    # (a free variable's value is not in the key)
    value[held] = [np.nan if x is None else x for x in map(_VALUE, map(tvars.__getitem__, held.tolist()))]
    out = {}
    for family, K in keys.items():
        fam = declared._last.get(family)
        if fam is None:
            fam = declared._last[family] = _Family(declared.families[family], K)
        out.update(fam.read(fixed, value, table))
    return out


class _Family:
    """One family's reading, kept from compile to compile (with one Table): the entries of the rows read by
    family, the state of the arguments then, and the parts read (by the state of the arguments)."""

    def __init__(self, family, K):
        self.exprs, self.own, self.shared, self.named, self.inner = family
        self.has_named = any(self.named)
        self.K = K
        self.ids = list(map(id, self.exprs))
        S = np.sort(K, axis=1)
        self.distinct = ~(S[:, 1:] == S[:, :-1]).any(axis=1)
        self.valid = self.F = self.V = None
        self.known = {}                         # id(con) -> entry, of the rows read by family
        self.parts = {}                         # the arguments' state -> (key, perm, width, vals, part) or None

    def read(self, fixed, value, table):
        K = self.K
        if not K.size:
            return {}
        R = len(self.exprs)
        valid = np.ones(R, bool)
        if self.has_named:                      # the named expressions still name what they named
            valid = np.fromiter((all(x.args[0] is y for x, y in zip(n, i)) for n, i in zip(self.named, self.inner)),
                                bool, R)
        F = fixed[K]
        V = np.where(F, value[K], 0.0)
        if self.F is None:
            rows = np.arange(R)
        else:
            rows = np.flatnonzero((valid != self.valid) | (F != self.F).any(axis=1) | (V != self.V).any(axis=1))
            if not rows.size:
                return self.known
        known, ids = self.known, self.ids
        if self.F is not None:                  # the rows that changed: read below
            pop = known.pop
            for r in rows.tolist():
                pop(ids[r], None)
        self.valid, self.F, self.V = valid, F, V
        rows = rows[valid[rows] & self.distinct[rows] & ~np.isnan(V[rows]).any(axis=1)]
        if not rows.size:
            return known
        state = np.concatenate([F[rows], V[rows]], axis=1)
        state = state[:, (state != state[0]).any(axis=0)]          # the arguments whose state varies
        groups = [rows]
        if state.shape[1]:                      # the rows by state: a few states, each split off in turn
            groups, left = [], np.arange(rows.size)
            while left.size and len(groups) < 16:
                same = (state[left] == state[left[0]]).all(axis=1)
                groups.append(rows[left[same]])
                left = left[~same]
            if left.size:                       # (many states: sorted at once)
                _, inv = np.unique(state[left], axis=0, return_inverse=True)
                inv = inv.ravel()
                order = np.argsort(inv, kind="stable")
                groups += np.split(rows[left[order]], np.flatnonzero(np.diff(inv[order])) + 1)
        for group in groups:
            rep = int(group[0])
            sig = (F[rep].tobytes(), V[rep].tobytes())
            part = self.parts.get(sig, _UNREAD)
            if part is _UNREAD:
                part = self.parts[sig] = self._part(rep, table)
            if part is None:
                continue
            key, perm, width, vals, part = part
            group = group.tolist()
            base = len(table.flat)
            table.flat += K[group][:, perm].ravel().tolist()
            table.vals += vals * len(group)
            known.update(zip(map(ids.__getitem__, group),
                             zip(repeat(key), range(base, base + width * len(group), width), group, repeat(part))))
        return known

    def _part(self, rep, table):
        """Walk row ``rep``: ``(key, perm, width, vals, part)`` of the rows with its arguments' state (``perm``
        the places of its keys among the arguments, ``vals`` the values noted beside them), or None when the
        rows cannot be read by family."""
        con = ConstraintData()                 # (Pyomo's bounds and body of the expression)
        con.set_value(self.exprs[rep])
        lower, body, upper = con.to_bounded_expression()
        if not all(b is None or b.__class__ in native_numeric_types for b in (lower, upper)):
            return None
        other = []
        found = walk(body, other, table)
        named = {id(x) for x in self.named[rep]}
        if found is None or not all(len(x) == 3 and id(x[0]) in named for x in other):   # a Param, another name
            return None
        key, free, at, nleaf = found
        width = len(free) + nleaf
        place = {k: p for p, k in enumerate(self.K[rep].tolist())}
        perm = [place.get(k) for k in table.flat[at: at + width]]
        if None in perm:                        # a variable of the tree that is not an argument
            return None
        key = table.canon.setdefault(key, key)
        return key, perm, width, table.vals[at: at + width], _Part((lower, upper), perm[:len(free)], self.own,
                                                                    self.shared)


_UNREAD = object()
