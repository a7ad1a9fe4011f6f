"""An ASL-free evaluator of Pyomo NLPs: exact first and second derivatives for cyipopt.

Each active objective and constraint is split (:mod:`pympc.mpec._readers`:
directly, or by Pyomo's own ``generate_standard_repn``) into a constant, a
linear part, a quadratic part (both kept as coefficient arrays and evaluated
exactly, vectorized) and a general nonlinear remainder.  The remainder is
differentiated symbolically by Pyomo (``differentiate``, reverse symbolic
mode) to first and second order, and the expressions (written by Pyomo, not
by a user) are compiled once to Python functions of the variable vector.
Jacobian and Hessian are sparse, with their structure fixed at construction
and duplicates summed.
"""

from __future__ import annotations

import time
from functools import cached_property
from operator import attrgetter

import numpy as np
import pyomo.environ as pyo
from pyomo.core.base.var import VarData
from pyomo.common.numeric_types import native_numeric_types

from ..errors import ProblemError
from . import _forms
from ._codegen import compile_functions
from ._declared import family_rows
from ._nonlinear import _Group, _derivatives, _template
from ._readers import _Part
from .checks import check_domains

__all__ = ["CompiledNLP", "CompileTimeout"]

_INF = 1e20


class CompileTimeout(Exception):
    """Building the NLP (differentiating and compiling its expressions) ran past the deadline it was given."""


def _bound(v, default):
    return default if v is None else float(v)


class CompiledNLP:
    """The NLP of a Pyomo model, in the shape ``cyipopt.Problem`` expects.

    ``min f(u)`` subject to ``cl <= g(u) <= cu`` and ``lb <= u <= ub``, over
    the unfixed variables of the active objective and constraints.

    Parameters
    ----------
    model : pyomo Block
        Read, never modified.  Complementarity conditions must already have
        been transformed (``mpec.simple_nonlinear``).
    deadline : float, optional
        A ``time.perf_counter()`` instant: building past it (differentiating
        and compiling large expressions can take long) raises
        :class:`CompileTimeout`, so that a solve's time limit covers it.
    drop_redundant : bool
        Leave out linear equality rows that are combinations of the others
        (listed in :attr:`redundant`); an inconsistent one goes to
        :attr:`violated`.  IPOPT's step computation is rank-deficient with
        them (HS055: a wrong point reported optimal).
    rows : dict, optional
        Kept by the caller between compiles of one model (empty at first):
        the rows read (and a table of the variables met) are noted in it, and
        a row found there as it was (the same expression, its variables fixed
        or free as then, the fixed ones, Params and named expressions at the
        same values) is not walked again (:mod:`pympc.mpec._forms`); the same
        NLP either way.  A model's builder may put there the rows it made by
        family (``rows["declared"]``: :class:`~pympc.mpec._declared.Declared`),
        read without walking each one.

    Attributes
    ----------
    variables : list of pyomo VarData
        The columns of ``u``.
    violated : list of pyomo ConstraintData
        Constraints with no free variable left (constant bodies) that break
        their bounds: the NLP is infeasible whatever ``u`` is.  Constant
        constraints that hold are dropped.
    """

    def __init__(self, model, deadline=None, drop_redundant=False, rows=None):
        from pyomo.common.gc_manager import PauseGC
        with PauseGC():     # the cyclic GC would rescan the model's many objects again and again
            self._read(model, deadline, drop_redundant, rows)

    def _read(self, model, deadline, drop_redundant, rows):
        self._deadline = deadline
        table = rows.get(_TABLE) if rows is not None else None
        if table is None:
            table = _forms.Table()
            if rows is not None:
                rows[_TABLE] = table
        memo, forms = {}, {}
        parse = lambda expr, ix, where: _Part(expr, ix, where, memo)  # noqa: E731
        violated, dropped = [], []
        fids, ats, parts, datas, bounds, kept, at_kept = [], [], [], [], [], [], []
        read, form_cls = _forms.read, _forms._Form
        kept_row, forms_get = (rows.get, forms.get) if rows is not None else (None, None)
        declared = rows.get(_DECLARED) if rows is not None else None
        declared = family_rows(declared, table).get if declared is not None else None
        for con in model.component_data_objects(pyo.Constraint, active=True, descend_into=True):
            if declared is not None:      # a row the builder declared (pympc.mpec._declared), read by its family
                d = declared(id(con.expr))
                if d is not None:
                    key, at, i, part = d
                    form = forms_get(id(key))
                    if form is None:            # the first row of its form at this compile: read
                        form = _forms._first(con.to_bounded_expression()[1], key, part.variables(i), at, table,
                                             forms, parse, _template, con)
                    if form.__class__ is form_cls and form.renamed:
                        fids.append(form.id)
                        ats.append(at)
                        datas.append(con)
                        bounds.append(part.bounds)
                        continue
            if kept_row is not None:     # the most common row of a compile again: kept, of a form read (as read())
                row = kept_row(id(con))
                if row is not None and row.con is con and con.expr is row.expr and (
                        not row.other or row.others_hold()):
                    form = forms_get(id(row.key))
                    if form.__class__ is form_cls and form.renamed:
                        kept.append(row)
                        at_kept.append(len(fids))
                        fids.append(form.id)
                        ats.append(row.at)
                        datas.append(con)
                        bounds.append(row.bounds)
                        continue
            lower, upper, form, at, row = read(con, table, forms, parse, _template, rows)
            if row is not None:                  # kept from the last compile: its variables checked below
                kept.append(row)
                at_kept.append(len(fids))
            if form is None:
                if at[0].constant:       # nothing for the solver to do, but it may be violated
                    if _violated(at[0].const, pyo.value(lower), pyo.value(upper)):
                        violated.append((len(fids), con))
                    dropped.append(con)
                    continue
                fids.append(-1)
                ats.append(len(parts))
                parts.append(at)
            else:
                fids.append(form.id)
                ats.append(at)
            datas.append(con)
            bounds.append((lower, upper))
        gone = []
        for i in np.flatnonzero(table.stale(kept)).tolist():     # kept rows that changed: read again
            k = at_kept[i]
            con = datas[k]
            lower, upper, form, at, _ = _forms.reread(con, table, forms, parse, _template, rows)
            bounds[k] = (lower, upper)
            if form is None:
                if at[0].constant:
                    if _violated(at[0].const, pyo.value(lower), pyo.value(upper)):
                        violated.append((k, con))
                    gone.append(k)
                    dropped.append(con)
                    continue
                fids[k], ats[k] = -1, len(parts)
                parts.append(at)
            else:
                fids[k], ats[k] = form.id, at
        if gone:
            gone = set(gone)
            fids, ats, datas, bounds = ([x for k, x in enumerate(xs) if k not in gone]
                                        for xs in (fids, ats, datas, bounds))
        self.violated = [con for _, con in sorted(violated, key=lambda kc: kc[0])]
        if rows is not None:
            seen = set(map(id, datas))
            seen.update(map(id, dropped))
            table.forget(rows, seen)            # rows no longer read (deleted, deactivated): not kept alive
        objs = list(model.component_data_objects(pyo.Objective, active=True, descend_into=True))
        if len(objs) > 1:
            raise ProblemError(f"the model has {len(objs)} active objectives; deactivate all but one.")
        self.sense = 1.0
        self.obj = None
        extra = []
        if objs:
            self.sense = 1.0 if objs[0].sense == pyo.minimize else -1.0
            self.obj, extra = _forms._parse(objs[0].expr, table, lambda e, ix, w: _Part(e, ix, w, memo), objs[0])
        self.variables, col, self._lin, self._q, self._const, self._nl = _forms.assemble(
            fids, ats, parts, forms, table, extra)
        self._con_datas, self._con_bounds = datas, bounds
        if self.obj is not None:                 # the objective's columns: keys -> columns
            ob = self.obj
            ob.lin_idx, ob.qa, ob.qb = col[ob.lin_idx], col[ob.qa], col[ob.qb]
            if ob.nl is not None:
                ob.nl_idx = col[np.array(ob.nl_idx, int)].tolist()
        if any(map(attrgetter("fixed"), self.variables)):   # pragma: no cover - the readings fold fixed variables,
            v = next(v for v in self.variables if v.fixed)    # and kept rows are checked
            raise ProblemError(f"fixed variable {v.name} reached the NLP")
        check_domains(self.variables, "pympc.ipopt", strict_bounds=True)   # before the costly differentiation
        self.redundant = []
        self.n, self.m = len(self.variables), len(self._con_datas)
        if drop_redundant:
            self._drop_redundant_equalities()
        self.refresh_bounds()
        bounds = [v.bounds for v in self.variables]     # (lb, ub) with one look at the domain
        self.lb = np.array([-_INF if lo is None else float(lo) for lo, _ in bounds], float)
        self.ub = np.array([_INF if up is None else float(up) for _, up in bounds], float)
        self._build()

    @cached_property
    def _col(self):
        """``id(variable) -> column`` (made when first asked: code generation, the polish)."""
        return dict(zip(map(id, self.variables), range(len(self.variables))))

    def _index(self, v, where):
        """The column of variable ``v`` (a reading of a row with the NLP's own columns)."""
        k = self._col.get(id(v))
        if k is None:
            raise ProblemError(f"{where.ctype.__name__.lower()} {where.name}: variable {v.name} is not a column")
        return k

    @property
    def cons(self):
        """Every row's reading (``const``, ``lin_idx``, ``lin_coef``, ``qa``, ``qb``, ``qc``, ``nl``): views of
        the NLP's arrays, made when asked."""
        out = [_RowView() for _ in range(self.m)]
        lin, quad = self._row_slices()
        for i, p in enumerate(out):
            p.const = float(self._const[i])
            p.lin_idx, p.lin_coef = lin(i)
            p.qa, p.qb, p.qc = quad(i)
        for rows, idx, _key, nl, _made in self._nl:
            for k, i in enumerate(rows.tolist()):
                out[i].nl, out[i].nl_idx = nl, idx[k].tolist()
        return out

    def _row_slices(self):
        """``(lin, quad)``: functions of a row giving its linear ``(cols, coefs)`` and quadratic ``(a, b, coefs)``."""
        r, c, v = self._lin
        cut = np.searchsorted(r, np.arange(self.m + 1)).tolist()
        qr, qa, qb, qc = self._q
        qcut = np.searchsorted(qr, np.arange(self.m + 1)).tolist()
        return ((lambda i: (c[cut[i]: cut[i + 1]], v[cut[i]: cut[i + 1]])),
                (lambda i: tuple(x[qcut[i]: qcut[i + 1]] for x in (qa, qb, qc))))

    def linear_rows(self):
        """A mask of the rows without quadratic and nonlinear parts."""
        mask = np.ones(self.m, bool)
        mask[self._q[0]] = False
        for rows, *_ in self._nl:
            mask[rows] = False
        return mask

    def _keep_rows(self, keep):
        """Leave out the rows not in the mask ``keep``."""
        new = np.cumsum(keep) - 1
        r, c, v = self._lin
        at = keep[r]
        self._lin = (new[r[at]], c[at], v[at])
        r, a, b, v = self._q
        at = keep[r]
        self._q = (new[r[at]], a[at], b[at], v[at])
        self._const = self._const[keep]
        self._nl = [(new[rows], idx, key, nl, made) for rows, idx, key, nl, made in self._nl]  # (nonlinear: kept)
        self._con_datas = [c for c, k in zip(self._con_datas, keep.tolist()) if k]
        self._con_bounds = [c for c, k in zip(self._con_bounds, keep.tolist()) if k]
        self.m = len(self._con_datas)

    def _drop_redundant_equalities(self):
        """Find linear equality rows dependent on the others (pivoted QR of their coefficient matrix).

        Only the rows that can take part in a dependency go to the QR: a row with a variable no other
        remaining row has is independent of them and in no combination that makes another row (it is
        left out, and the next such row is looked for; :func:`_dependency_core`).  The rows of a
        trajectory, each with the next state's variables, mostly go this way, so the dense QR stays small.
        """
        from scipy.linalg import qr

        lin, _ = self._row_slices()
        linear = self.linear_rows().tolist()
        rows = [i for i, (lo, up) in enumerate(self._con_bounds)
                if linear[i] and lo is not None and up is not None and pyo.value(lo) == pyo.value(up)]
        rows = _dependency_core([_summed(*lin(i)) for i in rows], rows)
        cols = np.unique(np.concatenate([lin(i)[0] for i in rows] + [np.zeros(0, int)]))
        n = cols.size
        if len(rows) < 2 or len(rows) * n > 4_000_000:
            return
        E = np.zeros((len(rows), n))
        for r, i in enumerate(rows):
            idx, coef = lin(i)
            np.add.at(E[r], np.searchsorted(cols, idx), coef)
        rhs = np.array([pyo.value(self._con_bounds[i][0]) - self._const[i] for i in rows])
        _, R, piv = qr(E.T, mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        rank = int((d > 1e-10 * max(1.0, d.max(initial=0))).sum())
        if rank == len(rows):
            return
        keep, drop = piv[:rank], piv[rank:]
        coef = np.linalg.lstsq(E[keep].T, E[drop].T, rcond=None)[0]      # E[drop] = coef.T @ E[keep]
        gap = np.abs(coef.T @ rhs[keep] - rhs[drop])
        out = set()
        for k, g in zip(drop, gap):
            i = rows[k]
            (self.redundant if g <= 1e-9 * (1.0 + abs(rhs[k])) else self.violated).append(self._con_datas[i])
            out.add(i)
        keep = np.ones(self.m, bool)
        keep[list(out)] = False
        self._keep_rows(keep)

    @property
    def constraint_names(self):
        """Names of the constraint rows, in order."""
        return [c.name for c in self._con_datas]

    @property
    def constraints_data(self):
        """The Pyomo constraint of every row, in order."""
        return list(self._con_datas)

    # -- assembly ---------------------------------------------------------------
    def _check_deadline(self):
        if self._deadline is not None and time.perf_counter() > self._deadline:
            raise CompileTimeout("the time limit ran out while differentiating and compiling the model's expressions")

    def _compile(self, part, where):
        """Compiled value, gradient and Hessian (lower triangle) of a nonlinear part.

        Derivatives by Pyomo's reverse symbolic differentiation, of the
        expression with its repeated subexpressions made one node each
        (:func:`~pympc.mpec._codegen.share_subexpressions`: Pyomo differentiates
        a shared node once); the three functions are straight-line code
        (:mod:`pympc.mpec._codegen`).
        """
        expr, nl_vars = part.nl
        loc = part.nl_idx
        self._check_deadline()
        expr, grads, pairs = _derivatives(expr, nl_vars, where, self._check_deadline)
        hess = [(max(loc[i], loc[j]), min(loc[i], loc[j])) for i, j, _ in pairs]  # global numbering, row >= col
        hess_exprs = [h for _, _, h in pairs]
        self._check_deadline()
        f, g, h = compile_functions([[expr], grads, hess_exprs], self._col, where)
        return (lambda u: f(u)[0]), g, h, hess

    def _group_nonlinear(self):
        """The nonlinear rows: ``(singles, groups)``, rows whose nonlinear parts are copies of one template
        (:func:`_template`: the same tree over their own variables, the same numbers) made one
        :class:`_Group` each (differentiated once, evaluated vectorized); the others compiled one by one
        (``singles``: ``(row, reading)`` with the NLP's columns)."""
        by_key = {}
        for piece in self._nl:
            key = piece[2] if piece[2] is not False else _template(*piece[3])
            by_key.setdefault(key, []).append(piece)
        singles, groups = [], []
        for key, pieces in by_key.items():
            rows = np.concatenate([p[0] for p in pieces])
            if key is None or rows.size < _GROUP_MIN:
                for i in rows.tolist():          # read with its own tree and the NLP's columns
                    con = self._con_datas[i]
                    singles.append((i, _Part(con.to_bounded_expression()[1], self._index, con, {})))
                continue
            self._check_deadline()
            order = np.argsort(rows, kind="stable")
            idx = np.concatenate([p[1] for p in pieces])[order]
            first = min(pieces, key=lambda p: p[0][0])
            groups.append(_Group(self, rows[order], idx.T, *pieces[0][3],
                                 f"constraint {self._con_datas[int(first[0][0])].name} and "
                                 f"{rows.size - 1} rows of its form"))
        return sorted(singles, key=lambda ip: ip[0]), groups

    def _build(self):
        n = self.n
        # Jacobian entries: (row, col) of every linear, quadratic and nonlinear term (self._lin, self._q: read)
        singles, self._nl_groups = self._group_nonlinear()
        self._nl_cons = [(i, part.nl_idx, *self._compile(part, f"constraint {self._con_datas[i].name}"))
                         for i, part in singles]
        jr = np.concatenate([self._lin[0], self._q[0], self._q[0]] + [np.full(len(idx), i) for i, idx, *_ in self._nl_cons]
                            + [gr.jac_rows for gr in self._nl_groups])
        jc = np.concatenate([self._lin[1], self._q[1], self._q[2]] + [np.array(idx, int) for _, idx, *_ in self._nl_cons]
                            + [gr.jac_cols for gr in self._nl_groups])
        self._jrow, self._jcol, self._jslot = _unique_pairs(jr.astype(int), jc.astype(int), n)
        self._jlin = np.zeros(len(self._jrow))
        np.add.at(self._jlin, self._jslot[: self._lin[0].size], self._lin[2])
        # objective
        ob = self.obj
        self._olin = np.zeros(n)
        self._oq = (np.zeros(0, int), np.zeros(0, int), np.zeros(0))
        self._onl = None
        if ob is not None:
            np.add.at(self._olin, ob.lin_idx, ob.lin_coef)
            self._oq = (ob.qa, ob.qb, ob.qc)
            if ob.nl is not None:
                self._onl = (ob.nl_idx, *self._compile(ob, "the objective"))
        # Hessian of the Lagrangian, lower triangle: quadratic terms and nonlinear entries
        hr, hc = [], []
        qa, qb = self._q[1], self._q[2]
        hr.append(np.maximum(qa, qb)); hc.append(np.minimum(qa, qb))
        oa, obb = self._oq[0], self._oq[1]
        hr.append(np.maximum(oa, obb)); hc.append(np.minimum(oa, obb))
        for _, _, _, _, _, hess in self._nl_cons:
            hr.append(np.array([p[0] for p in hess], int)); hc.append(np.array([p[1] for p in hess], int))
        for gr in self._nl_groups:
            hr.append(gr.hess_rows); hc.append(gr.hess_cols)
        if self._onl is not None:
            hess = self._onl[4]
            hr.append(np.array([p[0] for p in hess], int)); hc.append(np.array([p[1] for p in hess], int))
        self._hrow, self._hcol, self._hslot = _unique_pairs(np.concatenate(hr).astype(int), np.concatenate(hc).astype(int), n)
        # constant Hessian weights of quadratic terms: c u_a u_b -> c at (a,b), 2c at (a,a)
        self._qh = np.where(qa == qb, 2.0, 1.0) * self._q[3]
        self._oqh = np.where(oa == obb, 2.0, 1.0) * self._oq[2]
        # for the callbacks: the linear rows as a dense matrix when small; the Jacobian entries of the
        # quadratic terms (entry (r, a) of c u_a u_b is c u_b); the objective's constant Hessian
        nlin, nq, noq = self._lin[0].size, qa.size, oa.size
        self._A = None
        if self.m * n <= 10_000:
            self._A = np.bincount(self._lin[0] * n + self._lin[1], self._lin[2], minlength=self.m * n).astype(float).reshape(self.m, n)
        self._jq = (self._jslot[nlin: nlin + 2 * nq], np.concatenate([qb, qa]), np.concatenate([self._q[3]] * 2))
        self._jnl_slot = self._jslot[nlin + 2 * nq:]
        self._Ho = np.bincount(self._hslot[nq: nq + noq], self._oqh, minlength=self._hrow.size).astype(float)
        self._hnl_slot = self._hslot[nq + noq:]

    # -- the cyipopt interface ----------------------------------------------------
    def objective(self, u):
        """Objective value (in minimisation sense)."""
        if self.obj is None:
            return 0.0
        a, b, c = self._oq
        val = self.obj.const + self._olin @ u + float(np.sum(c * u[a] * u[b]))
        if self._onl is not None:
            val += self._onl[1](u)
        return self.sense * val

    def gradient(self, u):
        """Objective gradient."""
        a, b, c = self._oq
        g = self._olin.copy()
        if c.size:
            g += np.bincount(a, c * u[b], minlength=self.n) + np.bincount(b, c * u[a], minlength=self.n)
        if self._onl is not None:
            g += np.bincount(np.array(self._onl[0], int), np.array(self._onl[2](u), float), minlength=self.n)
        return self.sense * g

    def constraints(self, u):
        """Constraint bodies without their constants (the bounds absorbed them)."""
        if self._A is not None:
            g = self._A @ u
        else:
            r, c, v = self._lin
            g = np.bincount(r, v * u[c], minlength=self.m).astype(float)
        qr, qa, qb, qc = self._q
        if qr.size:
            g += np.bincount(qr, qc * u[qa] * u[qb], minlength=self.m)
        for i, _idx, f, _g, _h, _hs in self._nl_cons:
            g[i] += f(u)
        for gr in self._nl_groups:
            g[gr.rows] += gr.value(u)
        return g

    def jacobianstructure(self):
        return self._jrow, self._jcol

    def jacobian(self, u):
        """Values of the sparse Jacobian, in the order of :meth:`jacobianstructure`."""
        slots, cols, coefs = self._jq
        vals = self._jlin + np.bincount(slots, coefs * u[cols], minlength=self._jlin.size).astype(float)
        if self._nl_cons or self._nl_groups:
            vals += np.bincount(self._jnl_slot, np.concatenate([np.array(g(u), float) for _, _, _, g, _, _ in self._nl_cons]
                                                               + [gr.jacobian(u) for gr in self._nl_groups]),
                                minlength=vals.size)
        return vals

    def hessianstructure(self):
        return self._hrow, self._hcol

    def hessian(self, u, lagrange, obj_factor):
        """Lower triangle of ``obj_factor ∇²f + Σ λ_i ∇²g_i``."""
        qr = self._q[0]
        # bincount of nothing is int64 zeros, whatever the weights: force float (else adding the other parts raises)
        vals = np.bincount(self._hslot[: qr.size], lagrange[qr] * self._qh, minlength=self._Ho.size).astype(float)
        if self._oqh.size:
            vals += (obj_factor * self.sense) * self._Ho
        parts = [lagrange[i] * np.array(h(u), float) for i, _idx, _f, _g, h, _hs in self._nl_cons]
        parts += [gr.hessian(u, lagrange) for gr in self._nl_groups]
        if self._onl is not None:
            parts.append(obj_factor * self.sense * np.array(self._onl[3](u), float))
        if parts:
            vals += np.bincount(self._hnl_slot, np.concatenate(parts), minlength=vals.size)
        return vals

    # -- helpers ------------------------------------------------------------------
    def refresh_bounds(self):
        """Re-read the constraint bounds (they may hold mutable Params, e.g. ``mpec_bound``)."""
        const = self._const
        nat, value = native_numeric_types, pyo.value      # a number's value is itself: no call for it
        self.cl = np.array([-_INF if lo is None else float(lo) if lo.__class__ in nat else _bound(value(lo), -_INF)
                            for lo, _ in self._con_bounds], float) - const
        self.cu = np.array([_INF if up is None else float(up) if up.__class__ in nat else _bound(value(up), _INF)
                            for _, up in self._con_bounds], float) - const

    def violation(self, u):
        """The largest violation of a row or variable bound at ``u`` (0 when ``u`` is feasible)."""
        g = self.constraints(u)
        return float(max((self.cl - g).max(initial=0), (g - self.cu).max(initial=0),
                         (self.lb - u).max(initial=0), (u - self.ub).max(initial=0), 0.0))

    def start(self):
        """The model's current values (0 where none), clipped into the bounds."""
        values = [v.value for v in self.variables]
        if None in values:
            values = [0.0 if x is None else x for x in values]
        return np.clip(np.array(values, float), self.lb, self.ub)

    def load(self, u):
        """Write ``u`` into the model's variables."""
        for v, val in zip(self.variables, u):
            v.set_value(float(val), skip_validation=True)


#: the key of the variables' :class:`~pympc.mpec._forms.Table` in the caller's rows (``CompiledNLP(rows=...)``)
_TABLE = "variables"

#: the key of the rows a model's builder declared (:class:`~pympc.mpec._declared.Declared`) in the caller's rows
_DECLARED = "declared"


class _RowView:
    """One row's reading (:attr:`CompiledNLP.cons`)."""

    __slots__ = ("const", "lin_idx", "lin_coef", "qa", "qb", "qc", "nl", "nl_idx")

    def __init__(self):
        self.nl = None


def _violated(value, lower, upper, rtol=1e-9):
    """Does a constant constraint body ``value`` break its bounds (beyond ``rtol`` of their size)?"""
    return ((lower is not None and value < lower - rtol * (1 + abs(lower)))
            or (upper is not None and value > upper + rtol * (1 + abs(upper))))


def _summed(idx, coef):
    """The variables (a list) of a linear row whose coefficients (duplicates summed) are not zero."""
    sup = idx.tolist()
    if len(set(sup)) == len(sup) and coef.all():      # the usual row: nothing to sum
        return sup
    u, inv = np.unique(idx, return_inverse=True)
    return u[np.bincount(inv, coef, minlength=u.size) != 0].tolist()


def _dependency_core(supports, labels):
    """The labels of the rows (variable sets ``supports``) that may be linearly dependent on the others.

    Peeling: a row holding a variable that no other remaining row holds is not a combination of the
    others, and no combination of rows that equals another row uses it (its coefficient would have to
    be 0), so it is removed; repeat until every variable of the remaining rows is in two rows or more.
    Linear in the number of entries.
    """
    holders = {}
    for r, sup in enumerate(supports):
        for c in sup:
            holders.setdefault(c, []).append(r)
    count = {c: len(rs) for c, rs in holders.items()}
    alive = [True] * len(supports)
    queue = [c for c, k in count.items() if k == 1]
    while queue:
        c = queue.pop()
        if count[c] != 1:
            continue
        r = next(r for r in holders[c] if alive[r])
        alive[r] = False
        for c2 in supports[r]:
            count[c2] -= 1
            if count[c2] == 1:
                queue.append(c2)
    return [lab for lab, a in zip(labels, alive) if a]


def _unique_pairs(rows, cols, n):
    """Unique (row, col) pairs and, for every entry, the slot of its pair (duplicates are summed)."""
    if rows.size == 0:
        return rows, cols, np.zeros(0, int)
    key = rows.astype(np.int64) * (n + 1) + cols
    uniq, slot = np.unique(key, return_inverse=True)
    return (uniq // (n + 1)).astype(int), (uniq % (n + 1)).astype(int), slot


#: nonlinear rows of one template evaluated as one vectorized group from this many on
_GROUP_MIN = 8
