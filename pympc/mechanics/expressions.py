"""Safe arithmetic expressions of named parameters, time and state.

Model files write quantities such as ``"F0*sin(omega*t)"``.  They are parsed
with :mod:`ast` and checked against a whitelist (numbers, names, ``+ - * / **``,
unary minus and a fixed set of functions); nothing is ever passed to ``eval``.
An :class:`Expression` evaluates itself by walking that tree and can
differentiate itself with respect to any of its variables, which is what
prescribed (rheonomic) motions need for their velocity and acceleration terms.
"""

from __future__ import annotations

import ast
import math
import operator

from ..errors import ModelError

__all__ = ["Expression", "constant", "parse"]

_FUNCS = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp, "log": math.log,
    "sqrt": math.sqrt, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "abs": abs,
}
_CONSTS = {"pi": math.pi, "e": math.e}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.Pow: operator.pow}


class Expression:
    """A parsed expression: callable with keyword variables, differentiable.

    Parameters are folded in at parse time, so what is left depends only on
    the variables (e.g. ``t``).

    Examples
    --------
    >>> f = parse("A*sin(w*t)", {"A": 2.0, "w": 3.0}, variables=("t",))
    >>> round(f(t=0.5), 12) == round(2 * math.sin(1.5), 12)
    True
    >>> f.diff("t").diff("t")(t=0.5) == -18 * math.sin(1.5)
    True
    """

    __slots__ = ("node", "text", "_fn")

    def __init__(self, node, text=None):
        self.node = node
        self.text = text if text is not None else ast.unparse(node)
        self._fn = _closure(node)

    def __call__(self, **variables):
        return self._fn(variables)

    def diff(self, var):
        """The derivative with respect to the variable ``var`` (an Expression)."""
        return Expression(_fold(_diff(self.node, var)))

    @property
    def is_constant(self):
        return isinstance(self.node, ast.Constant)

    @property
    def value(self):
        """The number, for a constant expression."""
        if not self.is_constant:
            raise ModelError(f"expression {self.text!r} is not constant")
        return float(self.node.value)

    def __repr__(self):
        return f"Expression({self.text!r})"


def constant(value):
    """A constant Expression."""
    return Expression(ast.Constant(float(value)))


def parse(text, parameters=None, variables=("t",), where="expression"):
    """Parse ``text`` (a string or a number) into an :class:`Expression`.

    Parameters
    ----------
    text : str or float
    parameters : dict of str to float
        Names replaced by their values.
    variables : sequence of str
        Names left free (evaluated at call time).
    where : str
        Location used in error messages (file, table, key).

    Raises
    ------
    ModelError
        For syntax errors, unknown names or functions, or disallowed syntax.
    """
    if isinstance(text, bool):
        raise ModelError(f"{where}: expected a number or an expression string, got {text!r}")
    if isinstance(text, (int, float)):
        return constant(text)
    if isinstance(text, Expression):
        return text
    if not isinstance(text, str):
        raise ModelError(f"{where}: expected a number or an expression string, got {type(text).__name__}")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ModelError(f"{where}: cannot parse {text!r}: {exc.msg}") from None
    params = dict(parameters or {})
    clash = sorted(set(params) & set(variables))
    if clash:
        raise ModelError(f"{where}: {', '.join(map(repr, clash))} is both a parameter and a variable of this "
                         f"expression ({', '.join(variables)}); rename the parameter")
    node = _check(tree, params, set(variables), where, text)
    return Expression(_fold(node), text)


def _check(node, params, variables, where, text):
    rec = lambda n: _check(n, params, variables, where, text)  # noqa: E731
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return ast.Constant(float(node.value))
    if isinstance(node, ast.Name):
        if node.id in variables:
            return ast.Name(node.id)
        if node.id in params:
            return ast.Constant(float(params[node.id]))
        if node.id in _CONSTS:
            return ast.Constant(_CONSTS[node.id])
        known = sorted(set(params) | variables)
        raise ModelError(f"{where}: unknown name {node.id!r} in {text!r} (known: {', '.join(known) or 'none'})")
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        return ast.BinOp(rec(node.left), node.op, rec(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = rec(node.operand)
        return operand if isinstance(node.op, ast.UAdd) else ast.UnaryOp(ast.USub(), operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id not in _FUNCS:
            raise ModelError(f"{where}: unknown function {node.func.id!r} in {text!r} "
                             f"(allowed: {', '.join(sorted(_FUNCS))})")
        if len(node.args) != 1:
            raise ModelError(f"{where}: {node.func.id}() takes one argument in {text!r}")
        return ast.Call(ast.Name(node.func.id), [rec(node.args[0])], [])
    raise ModelError(f"{where}: {type(node).__name__} is not allowed in expressions ({text!r}); "
                     "use numbers, names, + - * / ** and functions")


def _closure(node):
    """The checked tree as nested Python closures (built once; no eval, no code objects)."""
    if isinstance(node, ast.Constant):
        v = node.value
        return lambda env: v
    if isinstance(node, ast.Name):
        name = node.id

        def var(env):
            try:
                return env[name]
            except KeyError:
                raise ModelError(f"expression needs the variable {name!r}") from None
        return var
    if isinstance(node, ast.BinOp):
        op, a, b = _BIN[type(node.op)], _closure(node.left), _closure(node.right)
        return lambda env: op(a(env), b(env))
    if isinstance(node, ast.UnaryOp):
        a = _closure(node.operand)
        return lambda env: -a(env)
    f, a = _FUNCS[node.func.id], _closure(node.args[0])
    return lambda env: f(a(env))


def _c(v):
    return ast.Constant(float(v))


def _bin(a, op, b):
    return ast.BinOp(a, op, b)


def _diff(node, var):
    """Symbolic derivative of a checked tree (chain rule by node type)."""
    if isinstance(node, ast.Constant):
        return _c(0)
    if isinstance(node, ast.Name):
        return _c(1.0 if node.id == var else 0.0)
    if isinstance(node, ast.UnaryOp):
        return ast.UnaryOp(ast.USub(), _diff(node.operand, var))
    if isinstance(node, ast.BinOp):
        a, b, da, db = node.left, node.right, _diff(node.left, var), _diff(node.right, var)
        op = type(node.op)
        if op in (ast.Add, ast.Sub):
            return _bin(da, node.op, db)
        if op is ast.Mult:
            return _bin(_bin(da, ast.Mult(), b), ast.Add(), _bin(a, ast.Mult(), db))
        if op is ast.Div:
            num = _bin(_bin(da, ast.Mult(), b), ast.Sub(), _bin(a, ast.Mult(), db))
            return _bin(num, ast.Div(), _bin(b, ast.Pow(), _c(2)))
        # power: constant exponent, else the general a**b (log a * db + b*da/a)
        if isinstance(b, ast.Constant):
            return _bin(_bin(b, ast.Mult(), _bin(a, ast.Pow(), _c(b.value - 1))), ast.Mult(), da)
        log_a = ast.Call(ast.Name("log"), [a], [])
        inner = _bin(_bin(db, ast.Mult(), log_a), ast.Add(), _bin(_bin(b, ast.Mult(), da), ast.Div(), a))
        return _bin(node, ast.Mult(), inner)
    f, u = node.func.id, node.args[0]
    du = _diff(u, var)
    call = lambda name, arg: ast.Call(ast.Name(name), [arg], [])  # noqa: E731
    outer = {
        "sin": lambda: call("cos", u),
        "cos": lambda: ast.UnaryOp(ast.USub(), call("sin", u)),
        "tan": lambda: _bin(_c(1), ast.Div(), _bin(call("cos", u), ast.Pow(), _c(2))),
        "exp": lambda: call("exp", u),
        "log": lambda: _bin(_c(1), ast.Div(), u),
        "sqrt": lambda: _bin(_c(0.5), ast.Div(), call("sqrt", u)),
        "asin": lambda: _bin(_c(1), ast.Div(), call("sqrt", _bin(_c(1), ast.Sub(), _bin(u, ast.Pow(), _c(2))))),
        "acos": lambda: _bin(_c(-1), ast.Div(), call("sqrt", _bin(_c(1), ast.Sub(), _bin(u, ast.Pow(), _c(2))))),
        "atan": lambda: _bin(_c(1), ast.Div(), _bin(_c(1), ast.Add(), _bin(u, ast.Pow(), _c(2)))),
        "sinh": lambda: call("cosh", u),
        "cosh": lambda: call("sinh", u),
        "tanh": lambda: _bin(_c(1), ast.Sub(), _bin(call("tanh", u), ast.Pow(), _c(2))),
        "abs": lambda: _bin(u, ast.Div(), call("abs", u)),
    }[f]()
    return _bin(outer, ast.Mult(), du)


def _fold(node):
    """Constant folding and the obvious 0/1 simplifications."""
    if isinstance(node, ast.BinOp):
        a, b = _fold(node.left), _fold(node.right)
        ca, cb = isinstance(a, ast.Constant), isinstance(b, ast.Constant)
        op = type(node.op)
        if ca and cb:
            try:
                return _c(_BIN[op](a.value, b.value))
            except (ZeroDivisionError, OverflowError, ValueError):
                return ast.BinOp(a, node.op, b)
        if op is ast.Mult and ((ca and a.value == 0) or (cb and b.value == 0)):
            return _c(0)
        if op is ast.Mult and ca and a.value == 1:
            return b
        if op in (ast.Mult, ast.Div, ast.Pow) and cb and b.value == 1:
            return a
        if op is ast.Add and ca and a.value == 0:
            return b
        if op in (ast.Add, ast.Sub) and cb and b.value == 0:
            return a
        if op is ast.Sub and ca and a.value == 0:
            return ast.UnaryOp(ast.USub(), b)
        if op is ast.Div and ca and a.value == 0:
            return _c(0)
        return ast.BinOp(a, node.op, b)
    if isinstance(node, ast.UnaryOp):
        a = _fold(node.operand)
        if isinstance(a, ast.Constant):
            return _c(-a.value)
        return ast.UnaryOp(ast.USub(), a)
    if isinstance(node, ast.Call):
        a = _fold(node.args[0])
        if isinstance(a, ast.Constant):
            try:
                return _c(_FUNCS[node.func.id](a.value))
            except (ValueError, OverflowError):
                pass
        return ast.Call(node.func, [a], [])
    return node
