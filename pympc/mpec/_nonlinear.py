"""Nonlinear rows of :class:`~pympc.mpec.nlp.CompiledNLP`: their derivatives, their templates and their groups.

:func:`_derivatives` differentiates a nonlinear part symbolically (Pyomo's reverse mode) to first and second
order; :func:`_template` is a hashable key of a nonlinear part (the same function of its own variables: equal
keys); :class:`_Group` evaluates the rows of one template at once, vectorized (one compiled function for all).
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from pyomo.common.numeric_types import native_numeric_types
from pyomo.core.expr.calculus.derivatives import Modes, differentiate
from pyomo.core.expr.calculus.diff_with_pyomo import DifferentiationException

from ..errors import ProblemError
from ._codegen import compile_functions, share_subexpressions


def _derivatives(expr, nl_vars, where, check):
    """``(expr, grads, pairs)``: ``expr`` with its repeated subexpressions made one node each
    (:func:`~pympc.mpec._codegen.share_subexpressions`: Pyomo differentiates a shared node once), its gradient
    by ``nl_vars`` and its second derivatives ``(i, j, d²/dx_i dx_j)`` for j <= i that are not zero (Pyomo's
    reverse symbolic differentiation); ``check()`` is called between rows (the build's deadline)."""
    expr = share_subexpressions(expr)
    try:
        grads = differentiate(expr, wrt_list=nl_vars, mode=Modes.reverse_symbolic)
    except DifferentiationException as exc:
        raise ProblemError(f"{where}: Pyomo cannot differentiate it ({exc}); pympc.ipopt needs exact "
                           "derivatives: rewrite it with +, -, *, /, **, exp, log, log10, sin, cos, tan, asin, "
                           "acos, atan, sqrt, abs") from None
    pairs = []
    for i, gi in enumerate(grads):
        check()
        if gi.__class__ in native_numeric_types:
            continue
        second = differentiate(gi, wrt_list=nl_vars, mode=Modes.reverse_symbolic)
        pairs += [(i, j, second[j]) for j in range(i + 1)
                  if not (second[j].__class__ in native_numeric_types and second[j] == 0)]
    return expr, grads, pairs


def _template(expr, nl_vars):
    """A hashable key of a nonlinear part: its tree in preorder (node class, function name, arity), each free
    variable by its position in ``nl_vars``, numbers (and fixed variables, Params) by value; None when the
    tree holds a node that does not evaluate elementwise on arrays (max, min) or is too large to be worth it.
    Equal keys: the same function of the rows' own variables (an explicit stack, no recursion)."""
    pos = {id(v): k for k, v in enumerate(nl_vars)}
    out = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if node.__class__ in native_numeric_types:
            out.append(float(node))
            continue
        if node.is_variable_type():
            out.append(("v", pos[id(node)]) if not node.fixed else float(pyo.value(node)))
            continue
        if not node.is_potentially_variable():
            out.append(float(pyo.value(node)))
            continue
        if node.is_named_expression_type():
            stack.append(node.args[0])
            continue
        cls = node.__class__
        if cls.__name__ in ("MaxExpression", "MinExpression") or len(out) > 5000:
            return None
        name = node.getname() if hasattr(node, "getname") else None
        args = node.args
        out.append((cls, name, len(args)))
        stack.extend(reversed(args))
    return tuple(out)


class _Group:
    """Rows whose nonlinear parts share one template: the first one is differentiated and compiled with its
    variables as the rows of ``X = u[idx]`` (``idx``: variables × rows), so that one call of each generated
    function evaluates every row (numpy arrays through the same straight-line code)."""

    def __init__(self, nlp, rows, idx, expr, nl_vars, where):
        self.rows = np.asarray(rows, int)
        self.idx = np.ascontiguousarray(idx, int)                                # (variables, rows)
        nv, R = self.idx.shape
        local = {id(v): k for k, v in enumerate(nl_vars)}
        expr, grads, pairs = _derivatives(expr, nl_vars, where, nlp._check_deadline)
        hess = [h for _, _, h in pairs]
        pairs = [(i, j) for i, j, _ in pairs]
        self._f, self._g, self._h = compile_functions([[expr], grads, hess], local, where)
        self.shape = R
        self.jac_rows = np.tile(self.rows, nv)
        self.jac_cols = self.idx.ravel()
        a = np.array([self.idx[i] for i, _ in pairs], int).reshape(len(pairs), R)
        b = np.array([self.idx[j] for _, j in pairs], int).reshape(len(pairs), R)
        self.hess_rows, self.hess_cols = np.maximum(a, b).ravel(), np.minimum(a, b).ravel()
        self._npairs = len(pairs)

    def _stack(self, vals):
        R = self.shape
        if not vals:
            return np.zeros(0)
        return np.concatenate([np.broadcast_to(np.asarray(v, float), (R,)) for v in vals])

    def value(self, u):
        return np.broadcast_to(np.asarray(self._f(u[self.idx])[0], float), (self.shape,))

    def jacobian(self, u):
        return self._stack(self._g(u[self.idx]))

    def hessian(self, u, lagrange):
        if not self._npairs:
            return np.zeros(0)
        return (self._stack(self._h(u[self.idx])).reshape(self._npairs, self.shape) * lagrange[self.rows]).ravel()
