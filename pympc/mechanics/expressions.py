"""Safe arithmetic expressions of named parameters, time and state.

Model files write quantities such as ``"F0*sin(omega*t)"``.  They are parsed
with :mod:`ast` and checked against a whitelist (numbers, names, ``+ - * / **``,
unary minus and a fixed set of functions); nothing is ever passed to ``eval``.
An :class:`Expression` evaluates itself by walking that tree and can
differentiate itself with respect to any of its names (time for the velocity
and acceleration terms of prescribed motions; parameters for sensitivities).

Parameters stay *symbolic* in an Expression (``expr.parameters``) until they
are bound (:meth:`Expression.bind`), which folds their values in without
parsing again.  Expressions pickle with the standard library (the checked tree
travels, the evaluation closures are rebuilt on arrival).

Cheap to make: the evaluation closures are built on the first call (a model
file of 200,000 slots is written without evaluating anything), and the checked
tree of a text already parsed with the same parameters and variables is reused
(trees are never modified after checking, so Expressions may share them).
"""

from __future__ import annotations

import ast
import math
import operator
import re

from ..errors import ModelError

__all__ = ["Expression", "constant", "parse", "MAX_DEPTH"]

MAX_DEPTH = 200
"""Deepest expression tree accepted (deeper ones are refused with a ModelError, never a RecursionError)."""

_FUNCS = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp, "log": math.log,
    "sqrt": math.sqrt, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "abs": abs,
}
_CONSTS = {"pi": math.pi, "e": math.e}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.Pow: operator.pow}


class Expression:
    """A parsed expression: callable with keyword names, bindable, differentiable.

    ``variables`` (e.g. ``t`` and state) are given at call time; ``parameters``
    are the parameter names it refers to, folded in by :meth:`bind`.

    Examples
    --------
    >>> f = parse("A*sin(w*t)", {"A": 2.0, "w": 3.0}, variables=("t",))
    >>> round(f(t=0.5), 12) == round(2 * math.sin(1.5), 12)
    True
    >>> f.diff("t").diff("t")(t=0.5) == -18 * math.sin(1.5)
    True
    >>> g = parse("A*sin(w*t)", ("A", "w"))
    >>> sorted(g.parameters), g.bind({"A": 2.0, "w": 3.0})(t=0.5) == f(t=0.5)
    (['A', 'w'], True)
    >>> g.diff("A").bind({"A": 2.0, "w": 3.0})(t=0.5) == math.sin(1.5)
    True
    """

    __slots__ = ("node", "text", "where", "parameters", "_fn")

    def __init__(self, node, text=None, where="expression", parameters=None):
        self.node = node
        self.text = text if text is not None else ast.unparse(node)
        self.where = where
        self.parameters = frozenset(_names(node) if parameters is None else parameters)
        self._fn = None                     # the evaluation closures, built on the first call

    def __reduce__(self):
        return (Expression, (self.node, self.text, self.where, self.parameters))

    def __call__(self, **variables):
        fn = self._fn
        if fn is None:
            fn = self._fn = _closure(self.node)
        try:
            v = fn(variables)
            if math.isfinite(v):
                return v
            exc = f"the value is {v}"
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as e:
            exc = str(e)
        raise ModelError(f"{self.where}: {self.text!r} cannot be evaluated at "
                         f"{_show(variables)} ({exc}); check the expression and its parameters")

    def bind(self, values):
        """This expression with the parameters in ``values`` replaced by their numbers (no re-parsing)."""
        if not self.parameters:
            return self
        missing = sorted(self.parameters - set(values))
        if missing:
            raise ModelError(f"{self.where}: {self.text!r} needs the parameter(s) {missing}")
        node = _fold(_substitute(self.node, values), self.where, self.text)
        return Expression(node, self.text, self.where, ())

    def diff(self, var):
        """The derivative with respect to the variable or parameter ``var`` (an Expression)."""
        node = _fold(_diff(self.node, var), self.where, self.text)
        return Expression(node, None, f"{self.where} (d/d{var})", None)

    def build(self, env, ops=math):
        """The expression rebuilt with other arithmetic: names from ``env``, functions from ``ops``.

        The same checked tree, walked once: ``env`` maps every name the
        expression uses (parameters and variables) to a number or to any object
        with Python arithmetic (a Pyomo variable or expression); ``ops`` is a
        namespace with the functions (``math`` for floats, ``pyomo.environ``
        for Pyomo expressions; ``abs`` is Python's).  No second parser: this is
        how the mechanics' equations are emitted as Pyomo expressions
        (:mod:`pympc.mechanics.equations`).

        Examples
        --------
        >>> parse("A*sin(w*t)", ("A", "w")).build({"A": 2.0, "w": 3.0, "t": 0.5}) == 2 * math.sin(1.5)
        True
        """
        return _build(self.node, env, ops, self)

    def depends_on(self, name):
        """Does the expression contain the name (a variable or a parameter)?"""
        return name in _names(self.node, variables=True)

    @property
    def is_constant(self):
        return isinstance(self.node, ast.Constant)

    @property
    def value(self):
        """The number, for a constant expression."""
        if not self.is_constant:
            raise ModelError(f"{self.where}: expression {self.text!r} is not constant")
        return float(self.node.value)

    def __repr__(self):
        return f"Expression({self.text!r})"


def _show(env):
    return ", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in env.items()) or "no variables"


def _names(node, variables=False):
    """The parameter names of a checked tree (ast.Name nodes marked as parameters), or every name."""
    out = set()
    stack = [node]
    while stack:
        n = stack.pop()
        t = type(n)
        if t is ast.BinOp:
            stack += (n.left, n.right)
        elif t is ast.Name:
            if variables or getattr(n, "param", False):
                out.add(n.id)
        elif t is ast.UnaryOp:
            stack.append(n.operand)
        elif t is ast.Call:
            stack += n.args
    return out


def _substitute(node, values):
    if isinstance(node, ast.Name) and getattr(node, "param", False):
        return ast.Constant(float(values[node.id]))
    if isinstance(node, ast.BinOp):
        return ast.BinOp(_substitute(node.left, values), node.op, _substitute(node.right, values))
    if isinstance(node, ast.UnaryOp):
        return ast.UnaryOp(node.op, _substitute(node.operand, values))
    if isinstance(node, ast.Call):
        return ast.Call(node.func, [_substitute(node.args[0], values)], [])
    return node


def _param(name):
    n = ast.Name(name)
    n.param = True
    return n


def constant(value, where="expression"):
    """A constant Expression."""
    return Expression(ast.Constant(float(value)), None, where, ())


def parse(text, parameters=None, variables=("t",), where="expression"):
    """Parse ``text`` (a string or a number) into an :class:`Expression`.

    Parameters
    ----------
    text : str or float
    parameters : None, collection of str, or dict of str to float
        A dict: names replaced by their values (folded now).  A collection of
        names (a set, list, tuple): parameter names kept symbolic (see
        :meth:`Expression.bind`); other names are refused.  None: every name
        that is not a variable, a constant or a function is a symbolic
        parameter (checked later, e.g. by :meth:`System.validate`).
    variables : sequence of str
        Names left free (evaluated at call time).
    where : str
        Location used in error messages (file, table, key).

    Raises
    ------
    ModelError
        For syntax errors, unknown names or functions, disallowed syntax,
        trees deeper than :data:`MAX_DEPTH`, and constants that are not finite
        (``1/0``, ``sqrt(-1)``, ``10**10**10``).
    """
    if isinstance(text, bool):
        raise ModelError(f"{where}: expected a number or an expression string, got {text!r}")
    if isinstance(text, (int, float)):
        if not math.isfinite(text):
            raise ModelError(f"{where}: must be finite, got {text}")
        return constant(text, where)
    if isinstance(text, Expression):
        return text
    if not isinstance(text, str):
        raise ModelError(f"{where}: expected a number or an expression string, got {type(text).__name__}")
    if parameters is None:
        values, names = {}, None
        key = (text, tuple(variables))
    else:
        if isinstance(parameters, dict) or hasattr(parameters, "items"):
            values, names = dict(parameters), set()
        else:
            values, names = {}, set(parameters)
        key = (text, frozenset(names), tuple(sorted(values.items())), tuple(variables))
    try:
        node, params = _PARSED[key]
        return Expression(node, text, where, params)
    except KeyError:
        pass
    except TypeError:                       # unhashable or unorderable values: parse without the cache
        key = None
    node = _parse_shape(text, values, names, variables) if key is not None else None
    if node is None:
        node = _parse_checked(text, values, names, variables, where)
    if key is not None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        expr = Expression(node, text, where)
        _PARSED[key] = (node, expr.parameters)
        return expr
    return Expression(node, text, where)


_PARSED = {}
"""Checked trees by (text, parameter names, parameter values, variables): a text is checked once."""
_PARSED_MAX = 20000

# Texts that differ only in their numbers ("v0*0.54", "v0*-1.3", as a generated model writes them) share
# one checked tree, the "shape", whose numbers are placeholder variables; plain decimal numbers in texts of
# names, numbers, + - * / ** and parentheses only (anything else, or any problem, takes the full parse).
_NUMBER = re.compile(r"(?<![\w.])(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![\w.])")
_PLAIN = re.compile(r"[A-Za-z0-9_\s.+\-*/()]*\Z")
_SLOT = "_pympc_number_"
_SHAPES = {}


def _parse_shape(text, values, names, variables):
    """The checked tree of ``text`` from the cached tree of its shape, or None (then parse it in full)."""
    if values or not _PLAIN.match(text) or _SLOT in text:
        return None
    numbers = _NUMBER.findall(text)
    if not numbers or len(numbers) > 16:
        return None
    slots = [f"{_SLOT}{k}" for k in range(len(numbers))]
    it = iter(slots)
    shape = _NUMBER.sub(lambda m: next(it), text)
    key = (shape, None if names is None else frozenset(names), tuple(variables))
    tree = _SHAPES.get(key)
    if tree is None:
        try:
            tree = _parse_checked(shape, values, names, (*variables, *slots), "", fold=False)
        except ModelError:
            return None
        if len(_SHAPES) >= _PARSED_MAX:
            _SHAPES.clear()
        _SHAPES[key] = tree
    nums = {}
    for slot, literal in zip(slots, numbers):
        v = float(literal)
        if not math.isfinite(v):
            return None
        nums[slot] = v
    try:        # the tree the full parse checks, folded as it folds it
        return _folded(_put_numbers(tree, nums), "", text)
    except ModelError:
        return None


def _put_numbers(node, nums):
    """The shape's tree with its placeholder variables replaced by their numbers."""
    t = type(node)
    if t is ast.Name:
        v = nums.get(node.id)
        return node if v is None else ast.Constant(v)
    if t is ast.BinOp:
        return ast.BinOp(_put_numbers(node.left, nums), node.op, _put_numbers(node.right, nums))
    if t is ast.UnaryOp:
        return ast.UnaryOp(node.op, _put_numbers(node.operand, nums))
    if t is ast.Call:
        return ast.Call(node.func, [_put_numbers(node.args[0], nums)], [])
    return node


def _parse_checked(text, values, names, variables, where, fold=True):
    """The checked, folded tree of ``text`` (raises ModelError naming ``where``); checked only if not ``fold``."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ModelError(f"{where}: cannot parse {text!r}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ModelError(f"{where}: the expression ({len(text)} characters) is too deeply nested to parse; "
                         "split it using parameters") from None
    # every level of nesting takes a character of text (the leaves' context nodes one more): short texts
    # cannot be too deep, and most texts are short
    depth = _depth(tree) if 2 * len(text) + 2 > MAX_DEPTH else 0
    if depth > MAX_DEPTH:
        raise ModelError(f"{where}: the expression ({len(text)} characters) is nested {depth} levels deep, more than "
                         f"{MAX_DEPTH}; split it into parameters (derived parameters may be expressions)")
    clash = sorted((set(values) | (names or set())) & set(variables))
    if clash:
        raise ModelError(f"{where}: {', '.join(map(repr, clash))} is both a parameter and a variable of this "
                         f"expression ({', '.join(variables)}); rename the parameter")
    node = _check(tree, values, names, set(variables), where, text)
    return _folded(node, where, text) if fold else node


def _folded(node, where, text):
    node = _fold(node, where, text)
    if isinstance(node, ast.Constant) and not math.isfinite(node.value):
        raise ModelError(f"{where}: {text!r} is not a finite number")
    return node


def _depth(tree):
    deepest, stack = 0, [(tree, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            break
        stack.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return deepest


def _check(node, values, names, variables, where, text):
    rec = lambda n: _check(n, values, names, variables, where, text)  # noqa: E731
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        try:
            return ast.Constant(float(node.value))
        except OverflowError:
            raise ModelError(f"{where}: the number {node.value!r} in {text!r} is too large") from None
    if isinstance(node, ast.Name):
        if node.id in variables:
            return ast.Name(node.id)
        if node.id in values:
            v = float(values[node.id])
            if not math.isfinite(v):
                raise ModelError(f"{where}: parameter {node.id!r} = {v} is not finite (in {text!r})")
            return ast.Constant(v)
        if node.id in _CONSTS:
            return ast.Constant(_CONSTS[node.id])
        if names is None or node.id in names:
            if node.id in _FUNCS:
                raise ModelError(f"{where}: {node.id!r} is a function; call it as {node.id}(...) in {text!r}")
            return _param(node.id)
        known = sorted(set(values) | names | variables)
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


def _build(node, env, ops, expr):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        try:
            return env[node.id]
        except KeyError:
            raise ModelError(f"{expr.where}: {expr.text!r} needs {node.id!r}, which was not given") from None
    if isinstance(node, ast.BinOp):
        return _BIN[type(node.op)](_build(node.left, env, ops, expr), _build(node.right, env, ops, expr))
    if isinstance(node, ast.UnaryOp):
        return -_build(node.operand, env, ops, expr)
    f = abs if node.func.id == "abs" else getattr(ops, node.func.id)
    return f(_build(node.args[0], env, ops, expr))


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
        if var not in _names(b, variables=True):
            return _bin(_bin(b, ast.Mult(), _bin(a, ast.Pow(), _bin(b, ast.Sub(), _c(1)))), ast.Mult(), da)
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


def _not_finite(node, where, text, what, exc=None):
    why = f" ({exc})" if exc else ""
    return ModelError(f"{where}: {text or ast.unparse(node)!r}: {what} is not a finite number{why}")


def _fold(node, where="expression", text=""):
    """Constant folding and the obvious 0/1 simplifications; a constant part that is not finite is an error."""
    t = type(node)
    if t is ast.BinOp:
        a, b = _fold(node.left, where, text), _fold(node.right, where, text)
        ca, cb = type(a) is ast.Constant, type(b) is ast.Constant
        op = type(node.op)
        if ca and cb:
            try:
                v = _BIN[op](a.value, b.value)
            except (ZeroDivisionError, OverflowError, ValueError) as exc:
                raise _not_finite(node, where, text, ast.unparse(ast.BinOp(a, node.op, b)), exc) from None
            if isinstance(v, complex) or not math.isfinite(v):
                raise _not_finite(node, where, text, ast.unparse(ast.BinOp(a, node.op, b)))
            return _c(v)
        if not (ca or cb):
            return node if a is node.left and b is node.right else ast.BinOp(a, node.op, b)
        if op is ast.Mult and ((ca and a.value == 0) or (cb and b.value == 0)):
            return _c(0)
        if op is ast.Mult and ca and a.value == 1:
            return b
        if op in (ast.Mult, ast.Div, ast.Pow) and cb and b.value == 1:
            return a
        if op is ast.Pow and cb and b.value == 0:
            return _c(1)
        if op is ast.Add and ca and a.value == 0:
            return b
        if op in (ast.Add, ast.Sub) and cb and b.value == 0:
            return a
        if op is ast.Sub and ca and a.value == 0:
            return ast.UnaryOp(ast.USub(), b)
        if op is ast.Div and ca and a.value == 0:
            return _c(0)
        return ast.BinOp(a, node.op, b)
    if t is ast.UnaryOp:
        a = _fold(node.operand, where, text)
        if type(a) is ast.Constant:
            return _c(-a.value)
        return ast.UnaryOp(ast.USub(), a)
    if t is ast.Call:
        a = _fold(node.args[0], where, text)
        if type(a) is ast.Constant:
            try:
                v = _FUNCS[node.func.id](a.value)
            except (ValueError, OverflowError) as exc:
                raise _not_finite(node, where, text, f"{node.func.id}({a.value!r})", exc) from None
            if not math.isfinite(v):
                raise _not_finite(node, where, text, f"{node.func.id}({a.value!r})")
            return _c(v)
        return ast.Call(node.func, [a], [])
    return node
