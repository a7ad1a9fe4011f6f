"""Complementarity problems as Pyomo MPEC models, and back.

:func:`to_pyomo` writes an LCP/HLCP as a fresh ``ConcreteModel`` with
``pyomo.mpec.Complementarity`` conditions; :func:`from_pyomo` reads any model
made of linear equalities and complementarity conditions back into an HLCP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression
from pyomo.core.expr.relational_expr import EqualityExpression, InequalityExpression, RangedExpression
from pyomo.mpec import Complementarity, complements
from pyomo.repn.linear import LinearRepnVisitor

from ..complementarity import HLCP, LCP
from ..errors import ProblemError
from .checks import check_components, check_domains

__all__ = ["to_pyomo", "from_pyomo", "PyomoHLCP"]


def to_pyomo(problem):
    """A fresh Pyomo ``ConcreteModel`` of an LCP or HLCP.

    LCP(M, q): variables ``z[i]``, conditions
    ``compl[i] = complements(z[i] >= 0, sum_j M[i,j] z[j] + q[i] >= 0)``.
    A zero row of M gets a variable ``w[i]`` with ``w[i] == q[i]`` as its side.
    HLCP(A, B, c): variables ``x[i]``, ``y[i]``, equalities
    ``eq[i]: sum_j A[i,j] x[j] + B[i,j] y[j] == c[i]`` and
    ``compl[i] = complements(x[i] >= 0, y[i] >= 0)``.  The model has no
    objective (a feasibility problem).

    Examples
    --------
    >>> import pympc
    >>> from pympc.mpec import to_pyomo
    >>> m = to_pyomo(pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]))
    >>> sorted(c.name for c in m.component_objects(descend_into=False))
    ['compl', 'pairs', 'z']
    """
    m = pyo.ConcreteModel(name=problem.name or type(problem).__name__)
    n = problem.n
    m.pairs = pyo.Set(initialize=range(n), ordered=True, doc="complementarity pairs")
    if isinstance(problem, LCP):
        M, q = problem.M, problem.q
        m.z = pyo.Var(m.pairs, initialize=0.0, doc="z of w = M z + q")
        zero = [i for i in range(n) if not M[i].any()]
        if zero:  # w_i = q_i is a constant: Pyomo cannot take it as a complementarity side, a variable can
            m.w = pyo.Var(zero, initialize=0.0, doc="w of the rows of M that are zero")
            m.w_def = pyo.Constraint(zero, rule=lambda m, i: m.w[i] == float(q[i]), doc="w = q on the zero rows of M")
        m.compl = Complementarity(
            m.pairs,
            rule=lambda m, i: complements(m.z[i] >= 0, (_row(q[i], (M, m.z), i) if M[i].any() else m.w[i]) >= 0),
            doc="0 <= z ⊥ M z + q >= 0",
        )
        return m
    if not isinstance(problem, HLCP):
        raise ProblemError(f"problem must be a pympc.LCP or pympc.HLCP, got {type(problem).__name__}.")
    A, B, c = problem.A, problem.B, problem.c
    m.x = pyo.Var(m.pairs, initialize=0.0)
    m.y = pyo.Var(m.pairs, initialize=0.0)
    m.eq = pyo.Constraint(m.pairs, rule=lambda m, i: _row(0.0, (A, m.x), i, (B, m.y)) == c[i], doc="A x + B y == c")
    m.compl = Complementarity(m.pairs, rule=lambda m, i: complements(m.x[i] >= 0, m.y[i] >= 0), doc="0 <= x ⊥ y >= 0")
    return m


def _row(const, first, i, *more):
    """Row ``i`` of ``const + Σ matrix @ variables`` over ``(matrix, variables)`` blocks, as one LinearExpression.

    Only the nonzero coefficients appear; a row with none keeps ``0*v[i]`` of
    the first block, so that ``row == c`` stays a constraint (a constant would
    make it a plain bool); solvers see it as the constant row it is.
    """
    coefs, variables = [], []
    for M, v in (first, *more):
        nz = np.flatnonzero(M[i])
        coefs.extend(M[i, nz].tolist())
        variables.extend(v[j] for j in nz)
    if not coefs:
        coefs, variables = [0.0], [first[1][i]]
    return LinearExpression(constant=float(const), linear_coefs=coefs, linear_vars=variables)


@dataclass
class PyomoHLCP:
    """The HLCP read from a Pyomo model, with the map back to the model's variables.

    The model's variables ``u`` (``variables``, in order) relate to the HLCP
    point by ``u = R @ concat(x, y) + r0``.

    Attributes
    ----------
    problem : HLCP
    variables : list of pyomo VarData
    pair_names : list of str
        The name of the complementarity condition behind each pair.
    R, r0 : ndarray
    """

    problem: HLCP
    variables: list
    pair_names: list
    R: np.ndarray
    r0: np.ndarray

    def values(self, x, y):
        """The values of :attr:`variables` at the HLCP point ``(x, y)``."""
        return self.R @ np.concatenate([x, y]) + self.r0

    def load(self, x, y):
        """Write the point ``(x, y)`` into the model's variables."""
        for v, val in zip(self.variables, self.values(x, y)):
            v.set_value(float(val), skip_validation=True)


def _repn(expr):
    """Pyomo's linear repn of ``expr`` and its variables by id (``LinearRepnVisitor``: no recursion on depth).

    Fixed variables and Params are folded at their current values.
    """
    visitor = LinearRepnVisitor({})
    return visitor.walk_expression(expr), visitor.var_map


def _linear(expr, where, index):
    """``(coefs by var id, constant)`` of a linear expression, or a ProblemError naming ``where``."""
    repn, var_map = _repn(expr)
    if repn.nonlinear is not None:
        raise ProblemError(f"{where} is not linear in the model's variables; pympc can only read linear "
                           "complementarity models (use SolverFactory('pympc.ipopt') for nonlinear ones).")
    mult = float(repn.multiplier)
    coefs = {}
    for vid, a in repn.linear.items():
        v = var_map[vid]
        index.setdefault(id(v), v)
        coefs[id(v)] = coefs.get(id(v), 0.0) + mult * float(a)
    return coefs, mult * float(repn.constant)


def _nonneg_side(arg, where, index):
    """A complementarity side ``g(u) >= 0`` as ``(coefs, const)`` of ``g``."""
    if isinstance(arg, RangedExpression):
        raise ProblemError(f"{where}: ranged (mixed) complementarity sides are not supported; "
                           "write each side as 'expr >= 0'.")
    if isinstance(arg, EqualityExpression):
        raise ProblemError(f"{where}: an equality cannot be a complementarity side; write 'expr >= 0'.")
    if isinstance(arg, InequalityExpression):
        lhs, rhs = arg.args
        # lhs <= rhs  =>  rhs - lhs >= 0
        return _linear(rhs - lhs, where, index)
    raise ProblemError(f"{where}: each side must be an inequality such as 'x >= 0' or 'expr >= 0', got {arg!r}.")


def from_pyomo(model, solver="pympc.mpec.from_pyomo"):
    """Read a Pyomo model of linear equalities and complementarity conditions into an HLCP.

    Every complementarity ``complements(g(u) >= 0, h(u) >= 0)`` (either side a
    variable or a linear expression; ``0 <= expr`` and ``expr >= b`` forms
    too) gives a pair ``x_i = g(u)``, ``y_i = h(u)``; every active equality
    ``E u = f`` is kept.  The model's variables must then be determined by the
    pairs: with ``K = [G; H; E]`` of full column rank, the consistency
    conditions of ``K u = (x - g0, y - h0, f)`` are the HLCP's equations.

    The model is not modified.  ``solver`` (the name of the solver that reads
    the model) is named in the errors.  Integer and binary domains, strict
    bounds and component types other than the above are refused
    (:mod:`pympc.mpec.checks`).

    Returns
    -------
    PyomoHLCP

    Raises
    ------
    ProblemError
        Naming the component that cannot be expressed: nonlinear terms,
        inequalities outside complementarity, ranged sides, bounds on
        variables other than those implied by the pairs, an objective that
        is not constant, or variables the pairs do not determine.

    Examples
    --------
    >>> import pyomo.environ as pyo
    >>> from pyomo.mpec import Complementarity, complements
    >>> from pympc.mpec import from_pyomo
    >>> m = pyo.ConcreteModel()
    >>> m.z = pyo.Var([0, 1])
    >>> m.c0 = Complementarity(expr=complements(m.z[0] >= 0, 2 * m.z[0] + m.z[1] - 5 >= 0))
    >>> m.c1 = Complementarity(expr=complements(m.z[1] >= 0, m.z[0] + 2 * m.z[1] - 6 >= 0))
    >>> import pympc
    >>> r = from_pyomo(m); s = pympc.solve(r.problem)
    >>> r.values(s.x, s.y).round(6)
    array([1.333333, 2.333333])
    """
    check_components(model, solver)
    index = {}
    G, g0, H, h0, names, E, f = [], [], [], [], [], [], []
    for comp in model.component_data_objects(Complementarity, active=True, descend_into=True):
        a, b = comp.args if hasattr(comp, "args") else comp._args
        ga = _nonneg_side(a, f"complementarity {comp.name} (first side)", index)
        gb = _nonneg_side(b, f"complementarity {comp.name} (second side)", index)
        G.append(ga[0]); g0.append(ga[1]); H.append(gb[0]); h0.append(gb[1]); names.append(comp.name)
    if not names:
        raise ProblemError("the model has no active Complementarity condition; nothing to read.")
    for con in model.component_data_objects(pyo.Constraint, active=True, descend_into=True):
        if not con.equality:
            raise ProblemError(f"constraint {con.name} is an inequality outside any complementarity condition; "
                               "an HLCP has only equalities and pairs (write it as a complementarity or an equality).")
        coefs, const = _linear(con.body, f"constraint {con.name}", index)
        E.append(coefs)
        f.append(float(pyo.value(con.upper)) - const)
    for obj in model.component_data_objects(pyo.Objective, active=True, descend_into=True):
        if not _is_constant(obj.expr):
            raise ProblemError(f"objective {obj.name} is not constant; a complementarity solver would ignore it. "
                               "Deactivate it (model.{0}.deactivate()) or use SolverFactory('pympc.ipopt').".format(obj.name))
    variables = list(index.values())
    check_domains(variables, solver)
    col = {id(v): k for k, v in enumerate(variables)}
    pair_vars = set()
    for coefs, const in zip(G + H, g0 + h0):
        if len(coefs) == 1 and const == 0.0:
            pair_vars.update(coefs)
    for v in variables:
        if (v.has_lb() or v.has_ub()) and not (id(v) in pair_vars and v.lb in (None, 0) and not v.has_ub()):
            raise ProblemError(f"variable {v.name} has bounds ({v.lb}, {v.ub}) that no complementarity pair implies; "
                               "pympc reads bounds only as sides of complementarity conditions.")

    nv, n, me = len(variables), len(names), len(E)

    def dense(rows):
        out = np.zeros((len(rows), nv))
        for i, coefs in enumerate(rows):
            for k, a in coefs.items():
                out[i, col[k]] = a
        return out

    K = np.vstack([dense(G), dense(H), dense(E)])
    # equilibrated by powers of two (exact) before the rank and the SVD: S K D, with the answers mapped back;
    # coefficients of 1e-100 next to 1e100 are not round-off to the rank test then
    D = _power_of_two(np.abs(K).max(axis=0, initial=0))
    S = _power_of_two(np.abs(K * D).max(axis=1, initial=0))
    K2 = S[:, None] * K * D
    try:
        U, s, Vt = np.linalg.svd(K2)
    except np.linalg.LinAlgError as exc:   # pragma: no cover - K2 is finite with entries of size one at most
        raise ProblemError(f"the model's coefficients could not be factorized ({exc}); rescale its variables.") from None
    if nv != n + me or (s > s.max(initial=0) * max(K2.shape) * np.finfo(float).eps).sum() < nv:
        raise ProblemError(
            f"the model has {nv} variable(s), {n} complementarity pair(s) and {me} equalit(y/ies): its variables are "
            "not determined by the pairs (need variables = pairs + equalities and the pair expressions and equalities "
            "independent). Fix free variables or add the equalities that define them."
        )
    # K u = t + t0 with t = (x, y, 0) and t0 = (-g0, -h0, f).  With the SVD of S K D and its left null space:
    # u = D (S K D)⁺ S (t + t0), and N (t + t0) = 0 are the n equations (N = N' S, N' (S K D) = 0).
    rank = nv
    U[np.abs(U) < 1e-150] = 0.0   # round-off of an orthonormal basis, not data: kept out of the HLCP's magnitudes
    N = U[:, rank:].T * S  # (2n + me - nv) = n rows
    Kpinv = (D[:, None] * ((Vt.T / s) @ U[:, :rank].T)) * S
    t0 = np.concatenate([-np.array(g0), -np.array(h0), np.array(f)])
    A = N[:, :n]
    B = N[:, n:2 * n]
    c = -N @ t0
    R = Kpinv[:, : 2 * n]
    r0 = Kpinv @ t0
    return PyomoHLCP(HLCP(A, B, c, name=model.name), variables, names, R, r0)


def _power_of_two(mags):
    """``2**-round(log2(m))`` for every positive ``m`` (1 for zeros): an exact scaling to size one."""
    out = np.ones(mags.shape)
    ok = mags > 0
    out[ok] = np.exp2(-np.round(np.log2(mags[ok])))
    return out


def _is_constant(expr):
    repn, _ = _repn(expr)
    return repn.nonlinear is None and not any(a != 0 for a in repn.linear.values())
