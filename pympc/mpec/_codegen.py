"""Pyomo expressions compiled to straight-line Python code over numpy scalars.

:func:`compile_functions` writes one Python function ``f(u)`` that returns the
values of several Pyomo expressions at the variable vector ``u``.  The code is
three-address code: every expression node is evaluated once into a temporary
``t<k>``, so that

* subexpressions shared between the expressions (derivatives made by Pyomo's
  reverse symbolic differentiation share most of their nodes) are evaluated
  once, and so is an operation written twice on the same operands (the
  second derivatives, differentiated one gradient entry at a time, repeat
  each other's terms);
* no line nests more than one operation, whatever the depth of the
  expression (a nested string of 2000 products made Python's parser raise
  ``RecursionError``), and a sum of many terms is added up :data:`_CHUNK`
  terms a line (Python's compiler nests ``a + b + c ...`` one level per
  term: the 3719-term sums of the Hessian of HS092 made it raise
  ``RecursionError``);
* the tree is walked with an explicit stack, never by recursion.

Arithmetic happens on ``numpy.float64`` scalars with numpy's functions
(``u`` is a numpy array), so that overflow gives ``inf``, a log of a
negative number ``nan``, ``0 ** -1`` ``inf`` — values IPOPT treats as an
evaluation error and backtracks from — instead of raising ``OverflowError``,
``ValueError`` or ``ZeroDivisionError`` out of a callback (or a complex
number from ``(-1.0) ** 0.5``).  Callers evaluate under
``numpy.errstate(all="ignore")``.
"""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from pyomo.common.numeric_types import native_numeric_types
from pyomo.core.expr import numeric_expr as ne

from ..errors import ProblemError

__all__ = ["compile_functions", "share_subexpressions"]

_UNARY = {
    "exp": "exp", "log": "log", "log10": "log10", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
    "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "sqrt": "sqrt", "ceil": "ceil", "floor": "floor",
}
_NAMESPACE = {f"_{name}": getattr(np, fn) for name, fn in _UNARY.items()}
_NAMESPACE.update(_abs=np.abs, _max=max, _min=min, _f64=np.float64)


#: terms of a sum written on one line (Python's compiler recursed past its limit at about 2000)
_CHUNK = 64


def _literal(value):
    return f"({float(value)!r})"


class _Writer:
    """Three-address code of expressions over the variables numbered by ``column`` (id(var) -> k)."""

    def __init__(self, column, where):
        self.column, self.where = column, where
        self.lines, self.names, self.keep, self.written = [], {}, [], {}
        self.count = 0

    def leaf(self, node):
        """Code of a node without variable children (number, variable, Param, constant expression), else None."""
        if node.__class__ in native_numeric_types:
            return _literal(node)
        if node.is_variable_type():
            if node.fixed:
                return _literal(pyo.value(node))
            k = self.column.get(id(node))
            if k is None:
                raise ProblemError(f"{self.where}: variable {node.name} is not a column of the NLP")
            return f"u[{k}]"
        if not node.is_potentially_variable():   # Params, NPV expressions: their current value
            return _literal(pyo.value(node))
        return None

    def operation(self, node, args):
        cls = node.__class__
        if node.is_named_expression_type():
            return args[0]
        if issubclass(cls, ne.SumExpression):
            return " + ".join(args)
        if issubclass(cls, (ne.ProductExpression, ne.MonomialTermExpression)):
            return f"{args[0]} * {args[1]}"
        if issubclass(cls, ne.DivisionExpression):
            return f"{args[0]} / {args[1]}"
        if issubclass(cls, ne.PowExpression):
            return f"_f64({args[0]}) ** {args[1]}"
        if issubclass(cls, ne.NegationExpression):
            return f"-{args[0]}"
        if issubclass(cls, ne.AbsExpression):
            return f"_abs({args[0]})"
        if issubclass(cls, ne.UnaryFunctionExpression):
            name = node.getname()
            if name not in _UNARY:
                raise ProblemError(f"{self.where}: function {name}() is not supported by pympc.ipopt")
            return f"_{name}({args[0]})"
        if issubclass(cls, (ne.MaxExpression, ne.MinExpression)):
            return f"_{'max' if issubclass(cls, ne.MaxExpression) else 'min'}({', '.join(args)})"
        raise ProblemError(f"{self.where}: expressions of type {cls.__name__} are not supported by pympc.ipopt "
                           "(no derivatives); reformulate with arithmetic and the usual functions")

    def name(self, root):
        """The code (a temporary, a variable or a literal) of ``root``, writing the lines it needs."""
        names = self.names
        leaf = self.leaf(root)
        if leaf is not None:
            return leaf
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if id(node) in names:
                continue
            if not ready:
                stack.append((node, True))
                for arg in node.args:
                    if id(arg) not in names:
                        code = self.leaf(arg)
                        if code is None:
                            stack.append((arg, False))
                        else:
                            names[id(arg)] = code
                            self.keep.append(arg)
                continue
            args = [names[id(a)] for a in node.args]
            if len(args) <= _CHUNK or not issubclass(node.__class__, ne.SumExpression):
                code = self.operation(node, args)
                t = self.written.get(code)    # the same operation on the same operands: the same value
                if t is None:
                    t = self.written[code] = f"t{self.count}"
                    self.count += 1
                    self.lines.append(f"    {t} = {code}")
                names[id(node)] = t
                self.keep.append(node)
                continue
            t = f"t{self.count}"
            self.count += 1
            # a long sum, ((t + a) + b) + ...: the same order of additions as a + b + ... on one line
            for k in range(0, len(args), _CHUNK):
                code = " + ".join(args[k: k + _CHUNK])
                self.lines.append(f"    {t} = {code}" if k == 0 else f"    {t} = {t} + {code}")
            names[id(node)] = t
            self.keep.append(node)   # ids stay unique while the writer lives
        return names[id(root)]


#: expression classes equal when their class and arguments are (a function call also by its name)
_STRUCTURAL = (ne.NegationExpression, ne.PowExpression, ne.ProductExpression, ne.DivisionExpression,
               ne.SumExpression, ne.UnaryFunctionExpression, ne.MaxExpression, ne.MinExpression)


def share_subexpressions(expr, table=None):
    """``expr`` with structurally equal subexpressions made one node (hash-consing), the same value.

    A model written as a formula is often a tree that builds the same
    subexpression afresh in many places (HS088–HS092 build each ``rho_j``
    inside every one of 900 terms).  Pyomo's reverse symbolic differentiation
    handles a node once however many parents it has, so on the shared form its
    cost and the size of the derivatives follow the number of *distinct*
    subexpressions, not the size of the written tree.

    Two nodes are equal when they have the same class (and function name) and
    the same arguments: the same variable or Param object, equal numbers, or
    equal nodes.  Named expressions are replaced by their bodies; anything that
    is not arithmetic (Params, constant subexpressions, other node types) is
    kept as it is, by identity.  ``table`` (a dict, optional) carries the
    shared nodes from call to call.
    The walk uses an explicit stack (deep expressions are fine).
    """
    table = {} if table is None else table
    keys = table.setdefault("keys", {})        # id(node) -> structural key (for nodes already seen)
    nodes = table.setdefault("nodes", {})      # structural key -> the shared node
    keep = table.setdefault("keep", [])        # the nodes whose ids are keys (ids stay unique)

    def leaf_key(a):
        if a.__class__ in native_numeric_types:
            return ("n", a.__class__ is bool, float(a)) if a == a else ("id", id(a))
        return None

    stack = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if id(node) in keys:
            continue
        if leaf_key(node) is not None:
            keys[id(node)] = (leaf_key(node), node)
            keep.append(node)
            continue
        if not node.is_expression_type() or not node.is_potentially_variable():
            keys[id(node)] = (("id", id(node)), node)
            keep.append(node)
            continue
        if not ready:
            stack.append((node, True))
            stack.extend((a, False) for a in node.args if id(a) not in keys)
            continue
        if node.is_named_expression_type():
            keys[id(node)] = keys[id(node.args[0])]
            keep.append(node)
            continue
        # an argument by its number, or by the identity of its shared node (flat keys: hashing a nested
        # key would walk the whole subexpression, and recurse on its depth)
        arg_keys = tuple(k if k[0] == "n" else id(x) for k, x in (keys[id(a)] for a in node.args))
        cls = node.__class__
        if isinstance(node, _STRUCTURAL):
            extra = node.getname() if isinstance(node, ne.UnaryFunctionExpression) else None
            key = (cls, extra, arg_keys)
        else:
            key = ("id", id(node))
        shared = nodes.get(key)
        if shared is None:
            new_args = [keys[id(a)][1] for a in node.args]
            if any(x is not a for x, a in zip(new_args, node.args)):
                shared = node.create_node_with_local_data(tuple(new_args))
                keep.append(shared)
            else:
                shared = node
            nodes[key] = shared
        keys[id(node)] = (key, shared)
        keep.append(node)
    return keys[id(expr)][1]


def compile_functions(groups, column, where="expression"):
    """Compile lists of expressions into functions of ``u`` sharing nothing but their source.

    Parameters
    ----------
    groups : list of list
        Each inner list (Pyomo expressions or numbers) becomes one function
        ``f(u)`` returning the tuple of their values.
    column : dict
        ``id(variable) -> k``: the variable's position in ``u``.
    where : str
        Named in errors (the constraint or objective).

    Returns
    -------
    list of callables
    """
    out = []
    for exprs in groups:
        w = _Writer(column, where)   # written now: an unsupported node is an error of the build, not of a call
        results = [w.name(e) for e in exprs]
        src = "def _f(u):\n" + "\n".join(w.lines + [f"    return ({', '.join(results)}{',' if results else ''})"])
        out.append(_compiled(src, where) if len(w.lines) < _LAZY else _Lazy(src, where))
    return out


#: a function of at least this many lines is compiled when first called (Python compiles ~50,000 lines a second)
_LAZY = 20_000


def _compiled(src, where):
    ns = dict(_NAMESPACE)
    exec(compile(src, f"<pympc nlp: {where}>", "exec"), ns)  # noqa: S102 - code written by pympc from Pyomo nodes
    return ns["_f"]


class _Lazy:
    """A long generated function, compiled on its first call (an NLP whose Hessian is never asked for, e.g.
    one built to evaluate its objective and gradient, never pays the Hessian's compilation, often the most
    of it); the same code, the same values."""

    __slots__ = ("_src", "_where", "_f")

    def __init__(self, src, where):
        self._src, self._where, self._f = src, where, None

    def __call__(self, u):
        f = self._f
        if f is None:
            f = self._f = _compiled(self._src, self._where)
            self._src = None
        return f(u)
