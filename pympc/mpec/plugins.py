"""pympc's solvers registered with Pyomo's ``SolverFactory``.

``SolverFactory('pympc.lemke')`` (native pivoting) and ``SolverFactory('pympc.milp')``
(exact big-M MILP by HiGHS) solve models made of linear equalities and
``pyomo.mpec`` complementarity conditions (read by :func:`~pympc.mpec.from_pyomo`;
the model itself is never transformed).  They behave like Pyomo solvers:
``solve(model, tee=..., load_solutions=..., options=...)`` returns a
``SolverResults`` whose termination condition reflects the pympc status.
"""

from __future__ import annotations

import time

from pyomo.common.collections import Bunch
from pyomo.opt import SolverFactory, SolverResults, SolverStatus, TerminationCondition

from .. import __version__
from ..complementarity import Status, lemke
from ..errors import OptionError
from .mip import milp
from .models import from_pyomo

__all__ = ["LemkeSolver", "MILPSolver", "SolverBase", "pyomo_status"]

_MAP = {
    Status.SOLVED: (SolverStatus.ok, TerminationCondition.optimal),
    Status.RAY_TERMINATION: (SolverStatus.warning, TerminationCondition.other),
    Status.PIVOT_LIMIT: (SolverStatus.aborted, TerminationCondition.maxIterations),
    Status.NUMERICAL_FAILURE: (SolverStatus.error, TerminationCondition.error),
    Status.INFEASIBLE: (SolverStatus.warning, TerminationCondition.infeasible),
    Status.NO_BASIS: (SolverStatus.warning, TerminationCondition.other),
    Status.UNDECIDED: (SolverStatus.warning, TerminationCondition.unknown),
}


def pyomo_status(status):
    """``(SolverStatus, TerminationCondition)`` of a pympc :class:`~pympc.Status`.

    Only ``SOLVED`` (a verified point) maps to ``optimal``; a ray is ``other``, never optimal.
    """
    return _MAP[Status(status)]


class SolverBase:
    """What every pympc solver plugin shares: the options Bunch and Pyomo's solver queries."""

    name = None

    def __init__(self, **kwds):
        self.options = Bunch()
        self.options.update(kwds.pop("options", {}) or {})
        if kwds:
            raise OptionError(f"unknown keyword(s) {sorted(kwds)} for SolverFactory('{self.name}'); pass solver "
                              "options as options={...}")

    def available(self, exception_flag=True):
        """Always available: pympc's own solvers ship with it."""
        return True

    def license_is_valid(self):
        return True

    def version(self):
        return tuple(int(p) for p in __version__.split(".")[:3])

    def warm_start_capable(self):
        return False


class _ComplementaritySolver(SolverBase):
    """Pyomo solver interface of the solvers that read a model into an HLCP."""

    def _run(self, problem, options, timelimit):
        raise NotImplementedError

    def solve(self, model, tee=False, load_solutions=True, options=None, timelimit=None, **kwds):
        """Solve ``model`` (not transformed); load the verified solution into it if ``load_solutions``."""
        opts = dict(self.options)
        opts.update(options or {})
        opts.update(kwds)
        t0 = time.perf_counter()
        if tee:
            opts["verbose"] = True
        read = from_pyomo(model)
        r = self._run(read.problem, opts, timelimit)
        wall = time.perf_counter() - t0
        results = SolverResults()
        results.problem.name = model.name
        results.problem.number_of_variables = len(read.variables)
        results.problem.number_of_constraints = read.problem.n
        results.solver.name = self.name
        results.solver.status, results.solver.termination_condition = pyomo_status(r.status)
        results.solver.message = results.solver.termination_message = f"{r.status.name}: {r.message}"
        results.solver.wallclock_time = wall
        results.pympc = r  # the pympc result, with its residual() and is_solution()
        if r.success and load_solutions:
            read.load(r.x, r.y)
        return results


@SolverFactory.register("pympc.lemke", doc="pympc's lexicographic Lemke solver for linear complementarity models")
class LemkeSolver(_ComplementaritySolver):
    """Lemke's method on a Pyomo complementarity model; ``tee=True`` prints the pivot log."""

    name = "pympc.lemke"

    def _run(self, problem, opts, timelimit):
        return lemke(problem, **opts)


@SolverFactory.register("pympc.milp", doc="exact big-M MILP (HiGHS) for linear complementarity models")
class MILPSolver(_ComplementaritySolver):
    """The big-M MILP of :func:`~pympc.mpec.milp` on a Pyomo complementarity model."""

    name = "pympc.milp"

    def _run(self, problem, opts, timelimit):
        if timelimit is not None:
            opts["time_limit"] = timelimit
        return milp(problem, **opts)
