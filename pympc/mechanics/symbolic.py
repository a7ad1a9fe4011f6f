"""A small symbolic layer: a joint's residuals, evaluated on symbols, give its numeric rows.

A joint writes its position-level residuals once, for any arithmetic
(:meth:`~pympc.mechanics.joints.Joint.residuals`: floats, Pyomo).  Evaluated on
:class:`Sym` coordinates ``q0, q1, ...`` and time ``t`` with the functions of
:data:`OPS`, they become :class:`~pympc.mechanics.expressions.Expression` trees;
their symbolic derivatives (:meth:`Expression.diff`, no second differentiator)
give the Jacobian row, ġ = J q̇ + g_t and the acceleration term
w = (J q̇ + g_t)_q q̇ + (J q̇ + g_t)_t with g̈ = J q̈ + w.  This is what a joint
class without its own :meth:`~pympc.mechanics.joints.Joint.evaluate` uses: one
definition, two evaluators.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace

from .expressions import _FUNCS, Expression, _fold

__all__ = ["Sym", "OPS", "DerivedRows"]


class Sym:
    """A symbolic value: an expression tree with Python arithmetic.

    Examples
    --------
    >>> import math
    >>> x = Sym.var("x")
    >>> e = Sym.expression(2 * OPS.sin(x) ** 2 + 1, "example")
    >>> e(x=0.5) == 2 * math.sin(0.5) ** 2 + 1, abs(e.diff("x")(x=0.5) - 4 * math.sin(0.5) * math.cos(0.5)) < 1e-15
    (True, True)
    """

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    @staticmethod
    def var(name):
        """The symbol ``name``."""
        return Sym(ast.Name(name))

    @staticmethod
    def tree(v):
        """The tree of a Sym or a number."""
        return v.node if isinstance(v, Sym) else ast.Constant(float(v))

    @staticmethod
    def expression(v, where):
        """A Sym or a number as a folded :class:`Expression` (``where`` names it in error messages)."""
        return Expression(_fold(Sym.tree(v), where), None, where, ())

    def _op(self, op, other, reverse=False):
        a, b = Sym.tree(self), Sym.tree(other)
        return Sym(ast.BinOp(b, op(), a) if reverse else ast.BinOp(a, op(), b))

    def __neg__(self):
        return Sym(ast.UnaryOp(ast.USub(), self.node))

    def __pos__(self):
        return self

    def __abs__(self):
        return Sym(ast.Call(ast.Name("abs"), [self.node], []))


for _name, _node in (("add", ast.Add), ("sub", ast.Sub), ("mul", ast.Mult), ("truediv", ast.Div), ("pow", ast.Pow)):
    setattr(Sym, f"__{_name}__", lambda self, o, _node=_node: self._op(_node, o))         # self ∘ o
    setattr(Sym, f"__r{_name}__", lambda self, o, _node=_node: self._op(_node, o, True))  # o ∘ self


def _function(name):
    return lambda a: Sym(ast.Call(ast.Name(name), [Sym.tree(a)], []))


OPS = SimpleNamespace(**{name: _function(name) for name in _FUNCS})
"""The functions of the expression language on :class:`Sym` (the ``ops`` of a symbolic evaluation)."""


class DerivedRows:
    """The numeric rows of position-level residuals given as :class:`Sym` expressions of ``q0..q{n-1}`` and ``t``.

    Parameters
    ----------
    residuals : list of Sym or float
    n : int
        Number of coordinates.
    where : str
        The joint's name, for error messages.

    Examples
    --------
    >>> q0, t = Sym.var("q0"), Sym.var("t")
    >>> rows = DerivedRows([q0 * q0 - t * t], 1, "circle")
    >>> import numpy as np
    >>> g, J, w, gd = np.zeros(1), np.zeros((1, 1)), np.zeros(1), np.zeros(1)
    >>> rows.evaluate(np.array([2.0]), np.array([3.0]), 1.0, g, J, w, gd)
    >>> g.tolist(), J.tolist(), gd.tolist(), w.tolist()           # g̈ = 2 q q̈ + 2 q̇² − 2
    ([3.0], [[4.0]], [10.0], [16.0])
    """

    def __init__(self, residuals, n, where):
        q = [f"q{c}" for c in range(n)]
        v = [Sym.var(f"v{c}") for c in range(n)]
        self.rows = []
        for i, r in enumerate(residuals):
            at = f"{where}: row {i}"
            g = Sym.expression(r, at)
            cols = [c for c in range(n) if g.depends_on(q[c])]
            J = [(c, g.diff(q[c])) for c in cols]
            gd = Sym(g.diff("t").node)
            for c, Jc in J:
                gd = gd + Sym(Jc.node) * v[c]
            gdot = Sym.expression(gd, f"{at} (velocity)")
            w = Sym(gdot.diff("t").node)
            for c in range(n):
                if gdot.depends_on(q[c]):
                    w = w + Sym(gdot.diff(q[c]).node) * v[c]
            self.rows.append((g, J, gdot, Sym.expression(w, f"{at} (acceleration)")))
        self.n = n

    def evaluate(self, q, qd, t, g, J, w, gd):
        """Write g, J, w (g̈ = J q̈ + w) and ġ at (q, q̇, t), from the first row of each array on."""
        env = {f"q{c}": float(q[c]) for c in range(self.n)}
        env.update({f"v{c}": float(qd[c]) for c in range(self.n)})
        env["t"] = float(t)
        for i, (gi, Ji, gdi, wi) in enumerate(self.rows):
            g[i], gd[i], w[i] = gi(**env), gdi(**env), wi(**env)
            for c, e in Ji:
                J[i, c] = e(**env)
