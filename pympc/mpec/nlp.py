"""An ASL-free evaluator of Pyomo NLPs: exact first and second derivatives for cyipopt.

Each active objective and constraint is split by Pyomo's own
``generate_standard_repn`` into a constant, a linear part, a quadratic part
(both kept as coefficient arrays and evaluated exactly, vectorized) and a
general nonlinear remainder.  The remainder is differentiated symbolically by
Pyomo (``differentiate``, reverse symbolic mode) to first and second order,
and the expressions (written by Pyomo, not by a user) are compiled once to
Python functions of the variable vector.  Jacobian and Hessian are sparse,
with their structure fixed at construction and duplicates summed.
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.calculus.derivatives import Modes, differentiate
from pyomo.core.expr.symbol_map import SymbolMap
from pyomo.core.expr.visitor import expression_to_string
from pyomo.repn import generate_standard_repn

from ..errors import ProblemError

__all__ = ["PyomoNLP"]

_INF = 1e20
_NAMESPACE = {name: getattr(math, name) for name in (
    "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "sqrt", "ceil", "floor")}
_NAMESPACE["abs"] = abs


def _bound(v, default):
    return default if v is None else float(v)


class _Part:
    """One function (objective or constraint) split into linear, quadratic and nonlinear parts."""

    def __init__(self, expr, index, where):
        repn = generate_standard_repn(expr, compute_values=True, quadratic=True)
        self.const = float(pyo.value(repn.constant))
        self.lin = [(index(v, where), float(c)) for v, c in zip(repn.linear_vars, repn.linear_coefs)]
        self.quad = [(index(a, where), index(b, where), float(c))
                     for (a, b), c in zip(repn.quadratic_vars, repn.quadratic_coefs)]
        self.nl = None
        if repn.nonlinear_expr is not None:
            nl_vars = list(repn.nonlinear_vars)
            self.nl_idx = [index(v, where) for v in nl_vars]
            self.nl = (repn.nonlinear_expr, nl_vars)


class PyomoNLP:
    """The NLP of a Pyomo model, in the shape ``cyipopt.Problem`` expects.

    ``min f(u)`` subject to ``cl <= g(u) <= cu`` and ``lb <= u <= ub``, over
    the unfixed variables of the active objective and constraints.

    Parameters
    ----------
    model : pyomo Block
        Read, never modified.  Complementarity conditions must already have
        been transformed (``mpec.simple_nonlinear``).
    """

    def __init__(self, model):
        self.variables = []
        self._col = {}

        def index(v, where):
            k = self._col.get(id(v))
            if k is None:
                if v.fixed:
                    raise ProblemError(f"{where}: fixed variable {v.name} reached the NLP")  # repn folds fixed vars
                k = self._col[id(v)] = len(self.variables)
                self.variables.append(v)
            return k

        objs = list(model.component_data_objects(pyo.Objective, active=True, descend_into=True))
        if len(objs) > 1:
            raise ProblemError(f"the model has {len(objs)} active objectives; deactivate all but one.")
        self.sense = 1.0
        self.obj = None
        if objs:
            self.sense = 1.0 if objs[0].sense == pyo.minimize else -1.0
            self.obj = _Part(objs[0].expr, index, f"objective {objs[0].name}")
        self.cons, self._con_datas = [], []
        for con in model.component_data_objects(pyo.Constraint, active=True, descend_into=True):
            part = _Part(con.body, index, f"constraint {con.name}")
            if not (part.lin or part.quad or part.nl):
                continue  # a constant constraint: nothing for the solver to do
            self.cons.append(part)
            self._con_datas.append(con)
        self.n, self.m = len(self.variables), len(self.cons)
        self.refresh_bounds()
        self.lb = np.array([_bound(v.lb, -_INF) for v in self.variables])
        self.ub = np.array([_bound(v.ub, _INF) for v in self.variables])
        self._symbols = SymbolMap()
        for k, v in enumerate(self.variables):
            self._symbols.addSymbol(v, f"u[{k}]")
        self._build()

    @property
    def constraint_names(self):
        """Names of the constraint rows, in order."""
        return [c.name for c in self._con_datas]

    @property
    def constraints_data(self):
        """The Pyomo constraint of every row, in order."""
        return list(self._con_datas)

    # -- assembly ---------------------------------------------------------------
    def _compile(self, part):
        """Compiled value, gradient and Hessian (lower triangle) of a nonlinear part."""
        expr, nl_vars = part.nl
        loc = part.nl_idx
        grads = differentiate(expr, wrt_list=nl_vars, mode=Modes.reverse_symbolic)
        hess = []  # (row var, col var) in global numbering, row >= col
        hess_exprs = []
        for i, gi in enumerate(grads):
            if isinstance(gi, (int, float)):
                continue
            second = differentiate(gi, wrt_list=nl_vars, mode=Modes.reverse_symbolic)
            for j in range(len(nl_vars)):
                a, b = loc[i], loc[j]
                if a >= b and not (isinstance(second[j], (int, float)) and second[j] == 0):
                    hess.append((a, b))
                    hess_exprs.append(second[j])
        src = lambda e: repr(float(e)) if isinstance(e, (int, float)) else expression_to_string(  # noqa: E731
            e, smap=self._symbols, compute_values=True)
        code = (f"lambda u: {src(expr)}",
                f"lambda u: ({', '.join(src(g) for g in grads)},)",
                f"lambda u: ({', '.join(src(h) for h in hess_exprs)},)")
        f, g, h = (eval(compile(c, "<pympc nlp>", "eval"), dict(_NAMESPACE)) for c in code)  # noqa: S307
        return f, g, h, hess

    def _build(self):
        n = self.n
        # Jacobian entries: (row, col) of every linear, quadratic and nonlinear term
        lin_r, lin_c, lin_v = [], [], []
        q_r, q_a, q_b, q_c = [], [], [], []
        self._nl_cons = []
        for i, part in enumerate(self.cons):
            for k, a in part.lin:
                lin_r.append(i); lin_c.append(k); lin_v.append(a)
            for a, b, c in part.quad:
                q_r.append(i); q_a.append(a); q_b.append(b); q_c.append(c)
            if part.nl is not None:
                self._nl_cons.append((i, part.nl_idx, *self._compile(part)))
        self._lin = (np.array(lin_r, int), np.array(lin_c, int), np.array(lin_v, float))
        self._q = (np.array(q_r, int), np.array(q_a, int), np.array(q_b, int), np.array(q_c, float))
        jr = np.concatenate([self._lin[0], self._q[0], self._q[0]] + [np.full(len(idx), i) for i, idx, *_ in self._nl_cons])
        jc = np.concatenate([self._lin[1], self._q[1], self._q[2]] + [np.array(idx, int) for _, idx, *_ in self._nl_cons])
        self._jrow, self._jcol, self._jslot = _unique_pairs(jr.astype(int), jc.astype(int), n)
        self._jlin = np.zeros(len(self._jrow))
        np.add.at(self._jlin, self._jslot[: len(lin_v)], self._lin[2])
        # objective
        ob = self.obj
        self._olin = np.zeros(n)
        self._oq = (np.zeros(0, int), np.zeros(0, int), np.zeros(0))
        self._onl = None
        if ob is not None:
            for k, a in ob.lin:
                self._olin[k] += a
            if ob.quad:
                a, b, c = zip(*ob.quad)
                self._oq = (np.array(a, int), np.array(b, int), np.array(c, float))
            if ob.nl is not None:
                self._onl = (ob.nl_idx, *self._compile(ob))
        # Hessian of the Lagrangian, lower triangle: quadratic terms and nonlinear entries
        hr, hc = [], []
        qa, qb = self._q[1], self._q[2]
        hr.append(np.maximum(qa, qb)); hc.append(np.minimum(qa, qb))
        oa, obb = self._oq[0], self._oq[1]
        hr.append(np.maximum(oa, obb)); hc.append(np.minimum(oa, obb))
        for _, _, _, _, _, hess in self._nl_cons:
            hr.append(np.array([p[0] for p in hess], int)); hc.append(np.array([p[1] for p in hess], int))
        if self._onl is not None:
            hess = self._onl[4]
            hr.append(np.array([p[0] for p in hess], int)); hc.append(np.array([p[1] for p in hess], int))
        self._hrow, self._hcol, self._hslot = _unique_pairs(np.concatenate(hr).astype(int), np.concatenate(hc).astype(int), n)
        # constant Hessian weights of quadratic terms: c u_a u_b -> c at (a,b), 2c at (a,a)
        self._qh = np.where(qa == qb, 2.0, 1.0) * self._q[3]
        self._oqh = np.where(oa == obb, 2.0, 1.0) * self._oq[2]

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
        r, c, v = self._lin
        g = np.bincount(r, v * u[c], minlength=self.m).astype(float)
        qr, qa, qb, qc = self._q
        if qr.size:
            g += np.bincount(qr, qc * u[qa] * u[qb], minlength=self.m)
        for i, _idx, f, _g, _h, _hs in self._nl_cons:
            g[i] += f(u)
        return g

    def jacobianstructure(self):
        return self._jrow, self._jcol

    def jacobian(self, u):
        """Values of the sparse Jacobian, in the order of :meth:`jacobianstructure`."""
        qr, qa, qb, qc = self._q
        entry_vals = [qc * u[qb], qc * u[qa]] + [np.array(g(u), float) for _, _, _, g, _, _ in self._nl_cons]
        extra = np.concatenate(entry_vals)
        if extra.size == 0:
            return self._jlin.copy()
        return self._jlin + np.bincount(self._jslot[self._lin[0].size:], extra, minlength=self._jlin.size)

    def hessianstructure(self):
        return self._hrow, self._hcol

    def hessian(self, u, lagrange, obj_factor):
        """Lower triangle of ``obj_factor ∇²f + Σ λ_i ∇²g_i``."""
        parts = [lagrange[self._q[0]] * self._qh, obj_factor * self.sense * self._oqh]
        for i, _idx, _f, _g, h, _hs in self._nl_cons:
            parts.append(lagrange[i] * np.array(h(u), float))
        if self._onl is not None:
            parts.append(obj_factor * self.sense * np.array(self._onl[3](u), float))
        vals = np.concatenate(parts)
        if vals.size == 0:
            return np.zeros(len(self._hrow))
        return np.bincount(self._hslot, vals, minlength=len(self._hrow))

    # -- helpers ------------------------------------------------------------------
    def refresh_bounds(self):
        """Re-read the constraint bounds (they may hold mutable Params, e.g. ``mpec_bound``)."""
        self.cl = np.array([_bound(pyo.value(c.lower), -_INF) - p.const for c, p in zip(self._con_datas, self.cons)])
        self.cu = np.array([_bound(pyo.value(c.upper), _INF) - p.const for c, p in zip(self._con_datas, self.cons)])

    def start(self):
        """The model's current values (0 where none), clipped into the bounds."""
        u = np.array([0.0 if v.value is None else float(v.value) for v in self.variables])
        return np.clip(u, self.lb, self.ub)

    def load(self, u):
        """Write ``u`` into the model's variables."""
        for v, val in zip(self.variables, u):
            v.set_value(float(val), skip_validation=True)


def _unique_pairs(rows, cols, n):
    """Unique (row, col) pairs and, for every entry, the slot of its pair (duplicates are summed)."""
    if rows.size == 0:
        return rows, cols, np.zeros(0, int)
    key = rows.astype(np.int64) * (n + 1) + cols
    uniq, slot = np.unique(key, return_inverse=True)
    return (uniq // (n + 1)).astype(int), (uniq % (n + 1)).astype(int), slot
