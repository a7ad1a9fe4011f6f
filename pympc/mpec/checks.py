"""What pympc's Pyomo solvers accept of a model, checked in one place before they solve.

Every solver calls :func:`check_components` on the model it is given and
:func:`check_domains` on the variables it will solve for; what a solver does
not handle is refused with a :class:`~pympc.errors.ProblemError` naming the
component and saying what to do, never ignored:

* component types: only blocks, variables, parameters, sets, named
  expressions, constraints, objectives, suffixes and complementarity
  conditions (``pyomo.dae`` sets and derivatives once discretized).
  Disjunctions, logical constraints, Boolean variables, SOS constraints,
  external functions and anything else are refused;
* variable domains: every solver is continuous.  An integer or binary
  domain is refused (``pympc.ipopt`` is an NLP solver; ``pympc.lemke`` and
  ``pympc.milp`` read an HLCP, whose variables are continuous: the MILP's
  binaries are its own, not the model's).  A strict bound (``PositiveReals``:
  ``x > 0``) is refused by the linear solvers, and checked on the answer by
  ``pympc.ipopt`` (:func:`domain_violations`).

The checks on the rows (linear or not, inequalities, objectives) are the
readers' own: :func:`pympc.mpec.from_pyomo` and
:class:`pympc.mpec.CompiledNLP`.
"""

from __future__ import annotations

import pyomo.environ as pyo
from pyomo.mpec import Complementarity

from ..errors import ProblemError

__all__ = ["check_components", "check_domains", "domain_violations"]


#: the component types every solver reads or may ignore (anything else is refused)
_ALLOWED = frozenset({pyo.Block, pyo.Var, pyo.Param, pyo.Set, pyo.RangeSet, pyo.Expression, pyo.Constraint,
                      pyo.Objective, pyo.Suffix, Complementarity})


_ADVICE = {
    "Disjunct": "transform the model first (TransformationFactory('gdp.bigm') or 'gdp.hull'); the result has "
                "binary variables, which pympc's solvers do not take either: use a MILP/MINLP solver",
    "Disjunction": "transform the model first (TransformationFactory('gdp.bigm') or 'gdp.hull'); the result has "
                   "binary variables, which pympc's solvers do not take either: use a MILP/MINLP solver",
    "LogicalConstraint": "logical constraints need a MILP/MINLP solver (TransformationFactory('core.logical_to_linear'))",
    "BooleanVar": "Boolean variables need a MILP/MINLP solver",
    "SOSConstraint": "SOS constraints need a MILP solver",
    "ExternalFunction": "pympc needs exact derivatives of expressions it can read; write the function with "
                        "Pyomo's operators",
    "ContinuousSet": "discretize the model first (TransformationFactory('dae.finite_difference') or 'dae.collocation')",
    "DerivativeVar": "discretize the model first (TransformationFactory('dae.finite_difference') or 'dae.collocation')",
}


def _discretized(comp):
    """A ``pyomo.dae`` set or derivative that a discretization has turned into plain rows and variables."""
    name = comp.ctype.__name__
    if name == "ContinuousSet":
        return bool(comp.get_discretization_info())
    if name == "DerivativeVar":
        return comp.is_fully_discretized()
    return False


def check_components(model, solver):
    """Refuse a model with an active component of a type ``solver`` does not handle (see the module).

    Raises
    ------
    ProblemError
        Naming the first such component, its type and what to do.
    """
    for comp in model.component_objects(active=True, descend_into=True):
        if comp.ctype in _ALLOWED or _discretized(comp):
            continue
        kind = comp.ctype.__name__
        advice = _ADVICE.get(kind, "deactivate it or use a solver that handles it")
        raise ProblemError(f"{solver}: component {comp.name} is a {kind}, which {solver} does not handle; {advice}.")


def check_domains(variables, solver, strict_bounds=False):
    """Refuse unfixed variables whose domain ``solver`` would not honour.

    An integer or binary domain is always refused; a strict bound (a domain
    such as ``PositiveReals`` whose interval is open at a finite end) only
    when ``strict_bounds`` is False (the linear solvers); ``pympc.ipopt``
    checks it on its answer instead (:func:`domain_violations`).
    """
    for v in variables:
        if v.fixed:
            continue
        if not v.is_continuous():
            raise ProblemError(
                f"{solver}: variable {v.name} has domain {v.domain.name}, which takes discrete values; {solver} "
                "solves continuous problems and would ignore it. Use a MILP/MINLP solver, or relax the domain "
                f"(model.{v.parent_component().name}.domain = pyomo.environ.Reals, or NonNegativeReals), or fix "
                "the variable.")
        if not strict_bounds:
            for end, bound in (("lower", v.lb), ("upper", v.ub)):
                if bound is not None and bound not in v.domain and _is_domain_bound(v, bound):
                    raise ProblemError(
                        f"{solver}: variable {v.name} has domain {v.domain.name}, whose {end} bound {bound:g} is "
                        f"strict; {solver} can only impose closed bounds. Use a closed domain (NonNegativeReals "
                        "for PositiveReals) or a bound of your own.")


def _is_domain_bound(v, bound):
    lo, hi, _ = v.domain.get_interval()
    return bound in (lo, hi)


def domain_violations(values):
    """``[(VarData, value)]`` of the variables in ``{VarData: value}`` whose value breaks a strict bound of their
    domain (``x > 0`` of ``PositiveReals`` at ``x <= 0``); closed bounds are the solver's own to check."""
    out = []
    for v, x in values.items():
        if x is None:
            continue
        lo, hi, _ = v.domain.get_interval()
        if (lo is not None and lo not in v.domain and x <= lo) or (hi is not None and hi not in v.domain and x >= hi):
            out.append((v, x))
    return out
