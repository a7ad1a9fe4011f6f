"""pympc's solvers on Pyomo's solver interface (``pyomo.contrib.solver``).

Three solvers, each a :class:`pyomo.contrib.solver.common.base.SolverBase`
with a ``CONFIG`` derived from Pyomo's ``SolverConfig``:

``pympc.lemke``
    Lemke's method on a model of linear equalities and complementarity
    conditions (read by :func:`~pympc.mpec.from_pyomo`; the model is not transformed).
``pympc.milp``
    The exact big-M MILP (HiGHS) on the same kind of model.
``pympc.ipopt``
    IPOPT through cyipopt on any NLP or MPEC (:func:`pympc.mpec.ipopt.run`).

They are registered with ``pyomo.contrib.solver.common.factory.SolverFactory``
under these names, which also registers them with Pyomo's legacy
``pyomo.environ.SolverFactory`` (same names) through :class:`_Legacy`, a
``LegacySolverWrapper`` that keeps pympc's messages and statuses and loads a
solution of a model without objective when ``load_solutions=False`` is
followed by ``model.solutions.load_from(results)``.

Results: ``termination_condition`` and ``solution_status`` (``optimal`` only
for a verified point), a solution loader (primal values; IPOPT's duals of a
plain NLP), ``timing_info`` (seconds per part) and ``extra_info``:
``message``, ``status`` (pympc's status name or IPOPT's status code) and the
solver's own facts (``residual``, ``exact``, ``big_m``, ``pivots`` for
Lemke/MILP; ``stages``, ``complementarity``, ``infeasibility``, ``kkt``,
``multipliers`` for IPOPT).
"""

from __future__ import annotations

import contextlib
import datetime
import time

import numpy as np

from pyomo.common.collections import ComponentMap
from pyomo.common.config import Bool, ConfigValue, PositiveFloat, PositiveInt
from pyomo.contrib.solver.common.base import Availability, LegacySolverWrapper, SolverBase
from pyomo.contrib.solver.common.config import SolverConfig
from pyomo.contrib.solver.common.factory import SolverFactory
from pyomo.contrib.solver.common.results import Results, SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.solution_loader import SolutionLoader
from pyomo.contrib.solver.common.util import NoOptimalSolutionError, NoSolutionError
from pyomo.core.staleflag import StaleFlagManager
from pyomo.opt import SolverStatus
from pyomo.opt import TerminationCondition as LegacyTC

from .. import __version__
from ..complementarity import Status, lemke, milp

__all__ = ["LemkeSolver", "MILPSolver", "IpoptSolver", "pyomo_status", "PympcSolverConfig", "ipopt_as"]

_LEGACY = {
    Status.SOLVED: (SolverStatus.ok, LegacyTC.optimal),
    Status.RAY_TERMINATION: (SolverStatus.warning, LegacyTC.other),
    Status.PIVOT_LIMIT: (SolverStatus.aborted, LegacyTC.maxIterations),
    Status.NUMERICAL_FAILURE: (SolverStatus.error, LegacyTC.error),
    Status.INFEASIBLE: (SolverStatus.warning, LegacyTC.infeasible),
    Status.NO_BASIS: (SolverStatus.warning, LegacyTC.other),
    Status.UNDECIDED: (SolverStatus.warning, LegacyTC.unknown),
}

_NEW = {
    Status.SOLVED: TerminationCondition.convergenceCriteriaSatisfied,
    Status.RAY_TERMINATION: TerminationCondition.locallyInfeasible,   # no point found, nothing proved
    Status.PIVOT_LIMIT: TerminationCondition.iterationLimit,
    Status.NUMERICAL_FAILURE: TerminationCondition.error,
    Status.INFEASIBLE: TerminationCondition.provenInfeasible,
    Status.NO_BASIS: TerminationCondition.error,
    Status.UNDECIDED: TerminationCondition.unknown,
}


def pyomo_status(status):
    """``(SolverStatus, TerminationCondition)`` of Pyomo's legacy results for a pympc :class:`~pympc.Status`.

    Only ``SOLVED`` (a verified point) maps to ``optimal``; a ray is ``other``, never optimal.
    """
    return _LEGACY[Status(status)]


class PympcSolverConfig(SolverConfig):
    """Pyomo's ``SolverConfig`` with pympc's ``time_limit`` (positive seconds for the whole solve, model reading
    and NLP compilation included)."""

    def __init__(self, description=None, doc=None, implicit=False, implicit_domain=None, visibility=0):
        super().__init__(description=description, doc=doc, implicit=implicit, implicit_domain=implicit_domain,
                         visibility=visibility)
        del self["time_limit"]
        self.time_limit = self.declare("time_limit", ConfigValue(
            domain=PositiveFloat, default=None,
            description="Seconds allowed to the whole solve (reading and compiling the model included)."))


class LemkeConfig(PympcSolverConfig):
    """Options of ``pympc.lemke`` (see :func:`pympc.lemke`)."""

    def __init__(self, **kwds):
        super().__init__(**kwds)
        self.max_pivots = self.declare("max_pivots", ConfigValue(domain=PositiveInt, default=None,
                                                                 description="Pivot limit (default 1000 + 100 n)."))
        self.piv_tol = self.declare("piv_tol", ConfigValue(domain=PositiveFloat, default=1e-10,
                                                           description="Smallest pivot, relative to the data."))
        self.tol = self.declare("tol", ConfigValue(domain=PositiveFloat, default=1e-9,
                                                   description="Verification tolerance, scaled by the data."))
        self.certify = self.declare("certify", ConfigValue(domain=Bool, default=None,
                                                           description="On a ray, decide by enumeration."))


class MILPConfig(PympcSolverConfig):
    """Options of ``pympc.milp`` (see :func:`pympc.complementarity.milp`)."""

    def __init__(self, **kwds):
        super().__init__(**kwds)
        self.big_m = self.declare("big_m", ConfigValue(
            domain=PositiveFloat, default=None,
            description="Big-M policy: None (default) proves a bound from the data (exact MILP) and falls back "
                        "to 1e3 (1 + |c|), marked inexact, when none is proved; a number is used where no bound "
                        "is proved."))
        self.tol = self.declare("tol", ConfigValue(domain=PositiveFloat, default=1e-9,
                                                   description="Verification tolerance."))
        self.all_solutions = self.declare("all_solutions", ConfigValue(
            domain=Bool, default=False, description="List every complementary support with a solution."))
        self.max_solutions = self.declare("max_solutions", ConfigValue(
            domain=PositiveInt, default=64, description="Supports listed at most when all_solutions."))


def _schedule(value):
    out = tuple(float(v) for v in value)
    if not out or any(not v > 0 for v in out):
        raise ValueError("the relaxation schedule must be a non-empty sequence of positive numbers")
    return out


class IpoptConfig(PympcSolverConfig):
    """Options of ``pympc.ipopt``; IPOPT's own options go in ``solver_options``."""

    def __init__(self, **kwds):
        from .ipopt import RELAXATION

        super().__init__(**kwds)
        self.mpec_tol = self.declare("mpec_tol", ConfigValue(
            domain=PositiveFloat, default=1e-9,
            description="Complementarity residual and infeasibility accepted for an MPEC's answer."))
        self.relaxation = self.declare("relaxation", ConfigValue(
            domain=_schedule, default=RELAXATION,
            description="Continuation schedule of the complementarity relaxation bound, relative to the "
                        "data's scale squared."))
        self.polish = self.declare("polish", ConfigValue(
            domain=Bool, default=True, description="Active-set polish after each relaxation stage."))
        self.kkt_tol = self.declare("kkt_tol", ConfigValue(
            domain=PositiveFloat, default=1e-6,
            description="Stationarity residual (relative to 1 + |grad f|) required before a plain NLP's "
                        "answer is called optimal."))


class _Loader(SolutionLoader):
    """The one solution of a pympc solve: primal values (and duals where there are any)."""

    def __init__(self, model, values, duals=None, solver="pympc", has_solution=None):
        self._pyomo_model = model
        self._values = ComponentMap(values)
        self._has = bool(self._values) if has_solution is None else has_solution
        self._duals = duals
        self._solver = solver

    def get_number_of_solutions(self):
        return 1 if self._has else 0

    def get_solution_ids(self):
        return [0] if self._has else []

    def get_vars(self, vars_to_load=None):
        if not self._has:
            raise NoSolutionError()
        if vars_to_load is None:
            return ComponentMap(self._values)
        return ComponentMap((v, self._values[v]) for v in vars_to_load)

    def get_duals(self, cons_to_load=None):
        if self._duals is None:
            raise NotImplementedError(f"{self._solver} gives no duals for this model")
        if cons_to_load is None:
            return ComponentMap(self._duals)
        return ComponentMap((c, self._duals[c]) for c in cons_to_load)

    def get_reduced_costs(self, vars_to_load=None):
        raise NotImplementedError(f"{self._solver} gives no reduced costs")

    def load_import_suffixes(self):
        """Fill an import ``dual`` suffix when there are duals (cleared otherwise); ``rc`` stays empty."""
        suffixes = self._collect_and_clear_import_suffixes()
        if "dual" in suffixes and self._duals is not None:
            suffixes["dual"].update(self._duals)


class _PympcSolver(SolverBase):
    """What the three solvers share: configuration, results, raising and loading as Pyomo specifies."""

    _legacy_api = False   # the legacy wrapper loads a solution when there is one, and raises nothing for none

    def available(self):
        return Availability.FullLicense

    def version(self):
        return tuple(int(p) for p in __version__.split(".")[:3])

    def solve(self, model, **kwds):
        """Solve ``model``; keywords are entries of :attr:`CONFIG` (Pyomo's and pympc's)."""
        t0 = time.perf_counter()
        start = datetime.datetime.now(datetime.timezone.utc)
        config = self.config(value=kwds, preserve_implicit=True)
        for key in list(config.solver_options):   # pympc's own options given among the solver options
            if key in config and key != "solver_options":
                config[key] = config.solver_options[key]
                del config.solver_options[key]
        StaleFlagManager.mark_all_as_stale()
        results = Results()
        results.solver_name = self.name
        results.solver_version = self.version()
        results.solver_config = config
        results.timing_info.start_timestamp = start
        values, objective = self._solve(model, config, results)
        results.timing_info.wall_time = time.perf_counter() - t0
        if config.raise_exception_on_nonoptimal_result and results.solution_status != SolutionStatus.optimal:
            raise NoOptimalSolutionError(f"{self.name}: {results.termination_condition.name}: "
                                         f"{results.extra_info.message}")
        if results.solution_status != SolutionStatus.noSolution:
            results.incumbent_objective = objective
        if config.load_solutions:
            if results.solution_status == SolutionStatus.noSolution:
                if not self._legacy_api:
                    raise NoSolutionError(f"{self.name}: {results.extra_info.message}")
            else:
                results.solution_loader.load_solution()
        return results

    def _solve(self, model, config, results):   # pragma: no cover - abstract
        raise NotImplementedError


class _ComplementaritySolver(_PympcSolver):
    """Lemke and the MILP: read the model into an HLCP, solve, map the verified point back."""

    def _options(self, config):
        raise NotImplementedError

    def _run(self, problem, options):
        raise NotImplementedError

    def _solve(self, model, config, results):
        from .models import from_pyomo   # (not at import: this module may be imported while models imports Pyomo)

        t = time.perf_counter()
        read = from_pyomo(model, self.name)
        results.timing_info.read = time.perf_counter() - t
        options = {k: v for k, v in self._options(config).items() if v is not None}
        options.update(config.solver_options.value())
        if config.tee:
            options["verbose"] = True
        t = time.perf_counter()
        r = self._run(read.problem, options)
        results.timing_info.solve = time.perf_counter() - t
        term = _NEW[r.status]
        if r.status == Status.UNDECIDED and r.info.get("highs_status", "").lower().startswith("time limit"):
            term = TerminationCondition.maxTimeLimit
        results.termination_condition = term
        ok = r.success
        results.solution_status = SolutionStatus.optimal if ok else SolutionStatus.noSolution
        values = ComponentMap(zip(read.variables, (float(v) for v in read.values(r.x, r.y)))) if ok else ComponentMap()
        results.solution_loader = _Loader(model, values, solver=self.name)
        extra = results.extra_info
        extra.message, extra.status, extra.result = r.message, r.status.name, r
        extra.residual = tuple(r.residual()) if ok else None
        extra.pivots = r.pivots
        for key in ("exact", "big_m"):
            if key in r.info:
                extra[key] = r.info[key]
        return values, None


class LemkeSolver(_ComplementaritySolver):
    """Lemke's method (lexicographic) on a Pyomo complementarity model; ``tee=True`` prints the pivot log.

    ``time_limit`` is accepted and not needed (a pivot limit bounds the work).
    """

    CONFIG = LemkeConfig()

    def _options(self, config):
        return {"max_pivots": config.max_pivots, "piv_tol": config.piv_tol, "tol": config.tol,
                "certify": config.certify}

    def _run(self, problem, options):
        return lemke(problem, **options)


class MILPSolver(_ComplementaritySolver):
    """The exact big-M MILP (HiGHS) on a Pyomo complementarity model; ``tee=True`` shows HiGHS's log."""

    CONFIG = MILPConfig()

    def _options(self, config):
        return {"big_m": config.big_m, "tol": config.tol, "all_solutions": config.all_solutions,
                "max_solutions": config.max_solutions, "time_limit": config.time_limit}

    def _run(self, problem, options):
        return milp(problem, **options)


_IPOPT_NEW = {
    "optimal": TerminationCondition.convergenceCriteriaSatisfied,
    "acceptable": TerminationCondition.convergenceCriteriaSatisfied,
    "infeasible": TerminationCondition.locallyInfeasible,
    "proven_infeasible": TerminationCondition.provenInfeasible,
    "iteration_limit": TerminationCondition.iterationLimit,
    "time_limit": TerminationCondition.maxTimeLimit,
    "error": TerminationCondition.error,
    "unknown": TerminationCondition.unknown,
}
_IPOPT_LEGACY = {
    "optimal": (SolverStatus.ok, LegacyTC.optimal),
    "acceptable": (SolverStatus.warning, LegacyTC.locallyOptimal),
    "infeasible": (SolverStatus.warning, LegacyTC.infeasible),
    "proven_infeasible": (SolverStatus.warning, LegacyTC.infeasible),
    "iteration_limit": (SolverStatus.aborted, LegacyTC.maxIterations),
    "time_limit": (SolverStatus.aborted, LegacyTC.maxTimeLimit),
    "error": (SolverStatus.error, LegacyTC.error),
    "unknown": (SolverStatus.warning, LegacyTC.other),
}


class IpoptSolver(_PympcSolver):
    """IPOPT (cyipopt, exact derivatives, no ASL) for Pyomo NLPs and MPECs; IPOPT's options in ``solver_options``.

    ``time_limit`` is the budget of the whole solve (compiling the NLP and
    every relaxation stage included).  An MPEC's answer is optimal only if its
    complementarity residual and infeasibility are within ``mpec_tol``; a
    plain NLP's only if its KKT residual is within ``kkt_tol``.  An exception
    raised inside a callback ends the solve with ``TerminationCondition.error``
    and a message naming it.  ``tee=True`` shows IPOPT's log (print level 5).
    """

    CONFIG = IpoptConfig()

    def available(self):
        from .ipopt import _cyipopt

        try:
            _cyipopt()
        except Exception:  # noqa: BLE001 - not importable: not available
            return Availability.NotFound
        return Availability.FullLicense

    def _solve(self, model, config, results):
        from .ipopt import run

        out = run(model, config.solver_options.value(), mpec_tol=config.mpec_tol, polish=config.polish,
                  relaxation=config.relaxation, kkt_tol=config.kkt_tol, tee=bool(config.tee),
                  time_limit=config.time_limit)
        kind, verified, msg = out.outcome
        results.termination_condition = _IPOPT_NEW[kind]
        values = out.values()
        if not values and not (out.has_point and out.nlp.n == 0):
            status = SolutionStatus.noSolution
        elif verified:
            status = SolutionStatus.optimal
        elif out.nlp.violated:                     # constant rows that break their bounds: nothing is feasible
            status = SolutionStatus.infeasible
        elif out.feasible(max(config.mpec_tol, 1e-6)):
            status = SolutionStatus.feasible
        else:
            status = SolutionStatus.infeasible
        results.solution_status = status
        duals = None
        if out.tmodel is None and out.has_point and "mult_g" in out.info:
            sense = out.nlp.sense
            duals = ComponentMap((c, -sense * float(lam)) for c, lam in zip(out.nlp.constraints_data, out.info["mult_g"]))
        results.solution_loader = _Loader(model, values, duals, solver=self.name,
                                          has_solution=status != SolutionStatus.noSolution)
        extra = results.extra_info
        extra.message, extra.status, extra.kind = msg, out.status, kind
        extra.stages, extra.complementarity, extra.infeasibility = out.stages, out.complementarity, out.infeasibility
        extra.kkt, extra.multipliers = out.kkt, out.info.get("mult_g")
        extra.number_of_variables = out.nlp.n if out.nlp is not None else 0
        extra.number_of_constraints = out.nlp.m if out.nlp is not None else 0
        for part, seconds in out.clock.times.items():
            results.timing_info[part] = seconds
        objective = None
        if out.has_point and out.nlp.obj is not None and status != SolutionStatus.noSolution:
            with np.errstate(all="ignore"):
                objective = float(out.nlp.sense * out.nlp.objective(out.u))
        return values, objective


class _Legacy(LegacySolverWrapper):
    """Pyomo's legacy wrapper, keeping pympc's statuses and message, and ``results.pympc`` (the ``extra_info``)."""

    _legacy_api = True

    def solve(self, model, *args, **kwds):
        """Pyomo's legacy ``solve``; the keywords of one call do not outlive it.

        Pyomo's wrapper writes them into ``self.config`` for good (a
        ``timelimit`` given once limited every later solve of the same
        solver object); the configuration is put back after the call.
        """
        saved = self.config.value()
        try:
            return super().solve(model, *args, **kwds)
        finally:
            self.config.set_value(saved)

    def _map_results(self, model, results):
        legacy, soln = super()._map_results(model, results)
        extra = results.extra_info
        if "kind" in extra:
            status, term = _IPOPT_LEGACY[extra.kind]
        elif "status" in extra:
            status, term = pyomo_status(Status[extra.status])
        else:  # pragma: no cover
            status, term = legacy.solver.status, legacy.solver.termination_condition
        legacy.solver.status, legacy.solver.termination_condition = status, term
        legacy.solver.name = self.name
        legacy.solver.message = legacy.solver.termination_message = extra.message
        legacy.solver.wallclock_time = results.timing_info.wall_time
        if "number_of_variables" in extra:
            legacy.problem.number_of_variables = extra.number_of_variables
            legacy.problem.number_of_constraints = extra.number_of_constraints
        legacy.pympc = extra
        return legacy, soln

    def _solution_handler(self, load_solutions, model, results, legacy_results, legacy_soln):
        legacy_results = super()._solution_handler(load_solutions, model, results, legacy_results, legacy_soln)
        if (not load_solutions and results.incumbent_objective is None
                and results.solution_status != SolutionStatus.noSolution):
            # Pyomo's wrapper keeps the solution only when it has an objective value: an LCP model has none
            smap = legacy_soln.symbol_map
            for var, val in results.solution_loader.get_vars().items():
                legacy_soln.variable[smap.getSymbol(var)] = {"Value": val}
            legacy_results.solution.insert(legacy_soln)
            legacy_results._smap_id = id(smap)
            legacy_results._smap = smap
        return legacy_results

    def warm_start_capable(self):
        return isinstance(self, IpoptSolver)


def register():
    """Register the three solvers with Pyomo's factories (new and legacy); idempotent."""
    docs = {"pympc.lemke": (LemkeSolver, "pympc's lexicographic Lemke solver for linear complementarity models"),
            "pympc.milp": (MILPSolver, "exact solver (HiGHS: convex QP, support search or big-M MILP) for linear "
                                          "complementarity models"),
            "pympc.ipopt": (IpoptSolver, "IPOPT via cyipopt with exact derivatives (no ASL); MPECs by continuation")}
    for name, (cls, doc) in docs.items():
        legacy = type(f"Legacy{cls.__name__}", (_Legacy, cls), {"__doc__": f"Legacy interface of {name}."})
        SolverFactory.register(name, legacy_name=name, doc=doc)(cls, legacy)


register()


@contextlib.contextmanager
def ipopt_as(name="ipopt"):
    """Inside the ``with`` block, Pyomo's legacy ``SolverFactory(name)`` gives ``pympc.ipopt``; afterwards what it
    gave before.

    For code that asks for a solver by a fixed name: ``pyomo.contrib.parmest``'s
    ``Estimator.theta_est`` (and bootstrap, likelihood-ratio tests) calls
    ``SolverFactory("ipopt")``, the IPOPT executable, which a pip install of
    Pyomo does not have.  Only the legacy factory (``pyomo.opt.SolverFactory``,
    the one ``pyomo.environ.SolverFactory`` is) and only that name are changed,
    only for the block, and the previous registration (or none) is put back on
    exit, also when the block raises::

        with pympc.mpec.ipopt_as():
            obj, theta = estimator.theta_est()
    """
    from pyomo.opt import SolverFactory as Legacy

    if not isinstance(name, str) or not name:
        raise ValueError(f"ipopt_as: name must be a solver name, got {name!r}")
    cls = Legacy.get_class("pympc.ipopt")
    saved = (Legacy._cls.get(name), Legacy._doc.get(name)) if name in Legacy._cls else None
    Legacy._cls[name], Legacy._doc[name] = cls, f"pympc.ipopt, standing in for {name!r} (pympc.mpec.ipopt_as)"
    try:
        yield cls
    finally:
        if saved is None:
            Legacy.unregister(name)
        else:
            Legacy._cls[name], Legacy._doc[name] = saved
