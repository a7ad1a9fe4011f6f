"""IPOPT through cyipopt for any Pyomo NLP or MPEC, with no ASL and no ipopt executable.

:func:`run` extracts the NLP with :class:`~pympc.mpec.nlp.CompiledNLP` (exact
gradients, sparse Jacobian and Hessian) and hands it to ``cyipopt.Problem``.
A model with ``pyomo.mpec`` complementarity conditions is first cloned and
transformed by ``mpec.simple_nonlinear``; the relaxation bound of the products
(``mpec_bound``) is driven to zero by continuation; after each stage an
active-set polish fixes the smaller member of each pair at zero and solves the
rest (a linear solve when that is a linear system, IPOPT otherwise), so that
complementarity holds exactly; a polish that does not verify sends the
continuation on.  The caller's model is never transformed.  A plain NLP's
answer is called optimal only after its KKT conditions were checked
(:func:`kkt_residual`).  The Pyomo solver interface is in
:mod:`pympc.mpec.solvers`.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import numpy as np
import pyomo.environ as pyo
from pyomo.common.collections import ComponentMap
from pyomo.mpec import Complementarity
from pyomo.mpec.complementarity import ComplementarityData

from ..errors import OptionError, SolverNotFound
from .checks import check_components, domain_violations
from .nlp import CompiledNLP, CompileTimeout
from .polish import (_box_residual, _choice, _degenerate, _factors, _linear_polish, _pair_residual,  # noqa: F401
                     _polish_in_place, _polish_plan, _restore, _separated)

__all__ = ["run", "solve_nlp", "kkt_residual", "RELAXATION", "NLP_DEFAULTS", "CALLBACK_ERROR", "TIME_OUT"]

#: the continuation schedule of the complementarity relaxation bound, relative to the square of the
#: data's scale (:func:`_data_scale`).  After every stage the active-set polish is tried: directly (a
#: linear solve) when the polished problem is a linear system, by IPOPT after a stage whose pairs are
#: clearly separated (and after the last); it is kept only if it verifies.  On 180 random P-matrix LCPs
#: (n = 2..30) and 40 HLCPs, with |q| from 1e-6 to 1e6: no failure, 1.00 relaxation stages on average.
RELAXATION = (1e-6, 1e-10, 1e-12)

#: IPOPT options pympc sets for a plain NLP (the caller's options override them).  The adaptive barrier
#: update, measured on the 32 Hock–Schittkowski problems of tests/hock_schittkowski.py: monotone (IPOPT's
#: default) solves 31 and stops at the iteration limit (3000) on HS109; adaptive solves all 32 (HS109 in 19
#: iterations), 414 iterations in all on the other 31 against 350 (fewer on 11, more on 6: HS081 68 against
#: 7, HS092 37 against 19).
NLP_DEFAULTS = {"mu_strategy": "adaptive"}

#: pseudo IPOPT statuses of pympc's own: an exception inside a callback ended the solve; the time limit ran out
#: before IPOPT started (while the NLP was being built)
CALLBACK_ERROR, TIME_OUT = -1000, -1001


def _cyipopt():
    try:
        import cyipopt
    except ImportError:  # pragma: no cover - cyipopt-wheels is a dependency
        raise SolverNotFound("cyipopt is not importable: pip install cyipopt-wheels") from None
    return cyipopt


def _openblas_threads():
    """``(get, set)`` of the thread count of every OpenBLAS that NumPy and SciPy's wheels bundle and the process
    load (ctypes functions; an OpenBLAS built otherwise, or another BLAS, is left out)."""
    global _OPENBLAS
    if _OPENBLAS is None:
        import ctypes
        import glob
        import os

        import scipy
        _OPENBLAS = []
        for pkg in (np, scipy):
            root = os.path.dirname(os.path.dirname(pkg.__file__))
            for path in sorted(glob.glob(os.path.join(root, pkg.__name__ + ".libs", "libscipy_openblas*"))):
                try:
                    lib = ctypes.CDLL(path)    # the library NumPy (SciPy) loads, or will
                except OSError:
                    continue
                for suffix in ("64_", ""):
                    get = getattr(lib, "scipy_openblas_get_num_threads" + suffix, None)
                    put = getattr(lib, "scipy_openblas_set_num_threads" + suffix, None)
                    if get is not None and put is not None:
                        get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
                        _OPENBLAS.append((get, put))
                        break
    return _OPENBLAS


_OPENBLAS = None


@contextmanager
def _one_blas_thread():
    """Run IPOPT with NumPy's and SciPy's OpenBLAS on one thread (restored after).

    The callbacks' NumPy calls wake OpenBLAS's other thread, which then spins while MUMPS factors and solves
    the KKT systems: on the FESD fit of the 30 s oscillator record (``benchmarks/fesd_speed.py``) that doubled
    IPOPT's CPU time (0.85 and 0.54 s against 0.43 and 0.29 s for the two walks) for no shorter wall time, with
    the same iterations and estimate.
    """
    global _BLAS_USERS, _BLAS_BEFORE
    with _BLAS_LOCK:            # concurrent solves (threads): the first sets one thread, the last restores the count
        libs = _openblas_threads()
        if _BLAS_USERS == 0:
            _BLAS_BEFORE = [get() for get, _ in libs]
            for _, put in libs:
                put(1)
        _BLAS_USERS += 1
    try:
        yield
    finally:
        with _BLAS_LOCK:
            _BLAS_USERS -= 1
            if _BLAS_USERS == 0:
                for (_, put), n in zip(libs, _BLAS_BEFORE):
                    put(n)


_BLAS_LOCK = threading.Lock()
_BLAS_USERS, _BLAS_BEFORE = 0, []


class _Guarded:
    """cyipopt's problem object around an NLP: an exception in any callback is never swallowed.

    cyipopt catches exceptions raised in callbacks and lets IPOPT go on with
    the values it had (an int64 Hessian accumulator once made IPOPT iterate
    on unfilled Hessians).  Here the first exception is kept, the failing
    callback and every later one answer NaN, and the next ``intermediate``
    call stops IPOPT; :func:`solve_nlp` then reports it as
    :data:`CALLBACK_ERROR`, naming the callback and the exception.  ``stop``
    (optional): ``stop(x, iteration)`` of each accepted iterate outside the
    restoration phase; True ends the solve (``stopped``: that iteration).
    """

    def __init__(self, nlp, stop=None):
        self.nlp, self.error, self.stop, self.stopped, self.problem = nlp, None, stop, None, None

    def _call(self, name, size, *args):
        if self.error is None:
            try:
                return getattr(self.nlp, name)(*args)
            except Exception as exc:  # noqa: BLE001 - ends the solve with an error status that names it
                self.error = (name, exc)
        return np.nan if size is None else np.full(size, np.nan)

    def objective(self, u):
        return self._call("objective", None, u)

    def gradient(self, u):
        return self._call("gradient", self.nlp.n, u)

    def constraints(self, u):
        return self._call("constraints", self.nlp.m, u)

    def jacobian(self, u):
        return self._call("jacobian", len(self.nlp.jacobianstructure()[0]), u)

    def jacobianstructure(self):
        return self.nlp.jacobianstructure()

    def hessian(self, u, lagrange, obj_factor):
        return self._call("hessian", len(self.nlp.hessianstructure()[0]), u, lagrange, obj_factor)

    def hessianstructure(self):
        return self.nlp.hessianstructure()

    def intermediate(self, alg_mod, iter_count, *args):
        if self.stop is not None and self.error is None and alg_mod == 0:
            try:
                it = self.problem.get_current_iterate()
                if it is not None and self.stop(np.asarray(it["x"], float), iter_count):
                    self.stopped = iter_count
                    return False
            except Exception as exc:  # noqa: BLE001 - as a failing callback
                self.error = ("stop", exc)
        return self.error is None


def solve_nlp(nlp, u0, options, tee=False, scaling=None, stop=None):
    """Solve a :class:`CompiledNLP` with IPOPT from ``u0``; returns ``(u, info)`` of cyipopt.

    ``stop``: optional ``stop(x, iteration) -> bool``, asked after every iteration (outside the restoration
    phase) with IPOPT's current iterate ``x``; True ends the solve there: IPOPT's status 5 (user requested
    stop), ``u`` that iterate and ``info["stopped"]`` the iteration (None when the solve was not stopped).

    ``scaling``: optional ``(x_scaling, g_scaling)``, IPOPT's user scaling of
    the variables and rows (unless ``options`` choose ``nlp_scaling_method``).
    An exception in a callback ends the solve with ``info["status"] ==
    CALLBACK_ERROR`` and a message naming it.  IPOPT's banner and log are
    silenced by its own options (``print_level=0``, ``sb=yes``) unless ``tee``.
    """
    cyipopt = _cyipopt()
    if nlp.violated:
        names = ", ".join(c.name for c in nlp.violated[:5]) + (" ..." if len(nlp.violated) > 5 else "")
        return u0, {"status": 2, "status_msg": f"infeasible: constant constraint(s) {names} violated".encode(),
                    "mult_g": np.zeros(nlp.m)}
    if nlp.n == 0:   # every variable fixed (cyipopt refuses n = 0): the rows were checked above
        return np.zeros(0), {"status": 0, "status_msg": b"no free variables", "mult_g": np.zeros(nlp.m)}
    guard = _Guarded(nlp, stop)
    prob = cyipopt.Problem(n=nlp.n, m=nlp.m, problem_obj=guard, lb=nlp.lb, ub=nlp.ub, cl=nlp.cl, cu=nlp.cu)
    prob.add_option("print_level", 5 if tee else 0)
    if not tee:
        prob.add_option("sb", "yes")
    if scaling is not None and "nlp_scaling_method" not in options:
        prob.set_problem_scaling(1.0, *scaling)
        prob.add_option("nlp_scaling_method", "user-scaling")
    for key, val in options.items():
        try:
            prob.add_option(key, val)
        except TypeError as exc:
            raise OptionError(f"IPOPT option {key}={val!r}: {exc}") from None
    guard.problem = prob if stop is not None else None     # (unset after the solve, whatever happens in it)
    try:
        with np.errstate(all="ignore"), _one_blas_thread():   # overflow -> inf, log(-1) -> nan: IPOPT backtracks
            u, info = prob.solve(u0)
    finally:
        guard.problem = None
    info["stopped"] = guard.stopped
    if guard.error is not None:
        name, exc = guard.error
        info = {**info, "status": CALLBACK_ERROR,
                "status_msg": f"exception in the {name} callback: {type(exc).__name__}: {exc}".encode()}
    return u, info


def kkt_residual(nlp, u, info, tol=1e-6):
    """The KKT (stationarity) residual of IPOPT's answer ``u`` of a plain NLP, relative to ``1 + |∇f|``.

    ``∇f + Jᵀλ - z_L + z_U`` with IPOPT's multipliers; when that exceeds
    ``tol``, the multipliers are re-estimated by bounded least squares on the
    active set (equality rows free, active inequality rows and bounds with
    their sign), as they are not unique when rows are redundant.  Returns the
    smaller of the two residuals (0 for an empty problem).
    """
    if nlp.n == 0:
        return 0.0
    with np.errstate(all="ignore"):
        grad = nlp.gradient(u)
        r, c = nlp.jacobianstructure()
        vals = nlp.jacobian(u)
        g = nlp.constraints(u)
    scale = 1.0 + float(np.abs(grad).max(initial=0))
    lam = np.asarray(info.get("mult_g", np.zeros(nlp.m)), float)
    zl = np.asarray(info.get("mult_x_L", np.zeros(nlp.n)), float)
    zu = np.asarray(info.get("mult_x_U", np.zeros(nlp.n)), float)
    res = grad + np.bincount(c, vals * lam[r], minlength=nlp.n) - zl + zu
    first = float(np.abs(res).max()) / scale
    if not np.isfinite(first) or first <= tol or nlp.n * (nlp.m + 2 * nlp.n) > 4_000_000:
        return first
    from scipy.optimize import lsq_linear

    J = np.zeros((nlp.m, nlp.n))
    np.add.at(J, (r, c), vals)
    near = lambda a, b: np.abs(a - b) <= 1e-6 * (1.0 + np.abs(b))  # noqa: E731
    eq = nlp.cl == nlp.cu
    at_lo, at_up = ~eq & near(g, nlp.cl), ~eq & near(g, nlp.cu)
    rows = eq | at_lo | at_up
    lo = np.where(eq[rows], -np.inf, np.where(at_up[rows], 0.0, -np.inf))
    hi = np.where(eq[rows], np.inf, np.where(at_lo[rows], 0.0, np.inf))
    blo, bup = near(u, nlp.lb), near(u, nlp.ub)
    cols = [J[rows].T, -np.eye(nlp.n)[:, blo], np.eye(nlp.n)[:, bup]]
    K = np.hstack(cols)
    if K.shape[1] == 0:
        return first
    lb = np.concatenate([lo, np.zeros(blo.sum()), np.zeros(bup.sum())])
    ub = np.concatenate([hi, np.full(blo.sum(), np.inf), np.full(bup.sum(), np.inf)])
    sol = lsq_linear(K, -grad, bounds=(lb, ub), method="bvls")
    return min(first, float(np.abs(K @ sol.x + grad).max()) / scale)


def _pairs(tmodel):
    """``(block, c, v, products)`` of every complementarity condition that ``simple_nonlinear`` transformed.

    ``c`` is the expression side, ``v`` the variable side; ``products`` is
    ``[ccon]`` (``v >= lb``, ``c >= its bound``) or ``[ccon_l, ccon_u]``
    (``lb <= v <= ub`` against a free ``c``, a box pair).
    """
    out = []
    for block in tmodel.component_data_objects(pyo.Block, active=True, descend_into=True):
        if isinstance(block, ComplementarityData):
            products = [p for p in (block.component(k) for k in ("ccon", "ccon_l", "ccon_u")) if p is not None]
            if products:
                out.append((block, block.component("c"), block.component("v"), products))
    return out


def _polish(tmodel, nlp_options, tee, clock, deadline):
    """Put every pair on the face its values point to, drop the products, solve again.

    A one-sided pair fixes its smaller factor at zero.  A box pair
    ``lb <= v <= ub ⊥ c`` fixes ``v`` at the bound it is nearest to, unless
    ``|c|`` is smaller than both distances, when ``c == 0`` instead.
    """
    for block, c, v, products in _pairs(tmodel):
        for p in products:
            p.deactivate()
        if len(products) == 1:
            f, g = products[0].body.args
            small = f if abs(pyo.value(f)) <= abs(pyo.value(g)) else g
        else:
            lb, ub = v.bounds
            dl, du, fc = v.value - lb, ub - v.value, abs(pyo.value(c.body))
            small = (v - lb) if dl <= min(du, fc) else (v - ub) if du <= fc else c.body
        if small.is_variable_type():
            small.fix(0.0)
        else:
            block.add_component("polish", pyo.Constraint(expr=small == 0.0))
    with clock("extract"):
        nlp = CompiledNLP(tmodel, deadline)
    with clock("ipopt"):
        u, info = solve_nlp(nlp, nlp.start(), nlp_options, tee)
    return nlp, u, info


def _complementarity_residual(tmodel):
    """The worst residual of every pair that ``simple_nonlinear`` made, from the model's values."""
    one, box = [], []
    for _, c, v, products in _pairs(tmodel):
        if len(products) == 1:
            one.append([pyo.value(a) for a in products[0].body.args])
        else:
            box.append((v.value, *v.bounds, pyo.value(c.body)))
    one = np.array(one, dtype=float).reshape(-1, 2)
    box = np.array(box, dtype=float).reshape(-1, 4)
    return max(_pair_residual(one[:, 0], one[:, 1]), _box_residual(*box.T))


class _Clock:
    """Seconds spent per named part of a solve: ``with clock("ipopt"): ...`` adds to ``clock.times["ipopt"]``."""

    def __init__(self):
        self.times = {"transform": 0.0, "extract": 0.0, "ipopt": 0.0, "polish": 0.0, "load": 0.0}

    @contextmanager
    def __call__(self, name):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.times[name] += time.perf_counter() - t


def run(model, options, *, mpec_tol=1e-9, polish=True, relaxation=RELAXATION, kkt_tol=1e-6, tee=False,
        time_limit=None):
    """Solve a Pyomo NLP or MPEC with IPOPT; returns the :class:`_Run` (point, IPOPT info, verdict, timing).

    Parameters
    ----------
    model : pyomo Block
        Not modified (an MPEC is solved on a transformed clone).
    options : dict
        IPOPT's own options.
    mpec_tol : float
        Complementarity residual and infeasibility accepted for an MPEC.
    polish : bool
        The active-set polish after each relaxation stage.
    relaxation : sequence of float
        The continuation schedule of ``mpec_bound``, relative to the data's scale squared.
    kkt_tol : float
        Stationarity residual (relative to ``1 + |∇f|``) required of a plain NLP's answer before it is optimal.
    time_limit : float, optional
        Seconds for the whole solve, building the NLP included.
    """
    t0 = time.perf_counter()
    opts = dict(options)
    if time_limit is not None:
        opts["max_wall_time"] = float(time_limit)
    deadline = None if "max_wall_time" not in opts else t0 + float(opts["max_wall_time"])
    clock = _Clock()
    check_components(model, "pympc.ipopt")
    is_mpec = next(model.component_data_objects(Complementarity, active=True, descend_into=True), None) is not None
    try:
        if is_mpec:
            out = _solve_mpec(model, opts, mpec_tol, polish, tee, clock, tuple(relaxation), deadline)
        else:
            with clock("extract"):
                nlp = CompiledNLP(model, deadline, drop_redundant=True)
            if deadline is not None:
                opts["max_wall_time"] = max(deadline - time.perf_counter(), 1e-9)
            with clock("ipopt"):
                u, info = solve_nlp(nlp, nlp.start(), {**NLP_DEFAULTS, **opts}, tee)
            out = _Run(nlp, u, info)
            if int(info["status"]) in (0, 1):
                out.kkt = kkt_residual(nlp, u, info, kkt_tol)
    except CompileTimeout as exc:
        out = _Run(None, None, {"status": TIME_OUT, "status_msg": str(exc).encode()})
    out.clock = clock
    out.verdict(mpec_tol, kkt_tol)
    if out.outcome[1]:
        bad = domain_violations(out.values())
        if bad:   # a strict bound (PositiveReals) that IPOPT could only impose closed
            v, x = bad[0]
            out.outcome = ("unknown", False, f"{out.outcome[2]}; but variable {v.name} = {x:g} lies outside its domain "
                                             f"{v.domain.name} ({len(bad)} variable(s) so)")
    clock.times["total"] = time.perf_counter() - t0
    return out


class _Run:
    """The outcome of one solve: the NLP solved last, its point and IPOPT's info, and how to load it back.

    For an MPEC the NLP belongs to the transformed clone: ``back`` maps the
    clone's variables (by id) to the caller's, and ``model_polish`` says the
    general polish fixed some of the clone's variables on the model itself.
    """

    def __init__(self, nlp, u, info, stages=(), complementarity=None, tmodel=None, back=None, model_polish=False):
        self.nlp, self.u, self.info, self.stages = nlp, u, info, list(stages)
        self.complementarity, self.tmodel, self.back, self.model_polish = complementarity, tmodel, back, model_polish
        # the largest row or bound violation of the NLP solved last (for an MPEC the links v == side included)
        self.infeasibility = None if u is None else nlp.violation(u)
        self.kkt = None            # a plain NLP's stationarity residual, when IPOPT said it converged
        self.clock = None
        self.status = int(info["status"])
        msg = info["status_msg"]
        self.message = msg.decode() if isinstance(msg, bytes) else str(msg)
        if self.status == -5:      # cyipopt has no text for this newer Ipopt status
            self.message = "maximum wall time (timelimit) exceeded"
        self.outcome = None

    @property
    def has_point(self):
        return self.u is not None

    def verdict(self, mpec_tol, kkt_tol):
        """Set :attr:`outcome`: ``(kind, verified, message)`` with kind one of ``optimal``, ``acceptable``,
        ``infeasible``, ``proven_infeasible``, ``iteration_limit``, ``time_limit``, ``error``, ``unknown``.

        Only a checked point is ``optimal``/``acceptable`` (``verified``): an MPEC's complementarity and
        feasibility within ``mpec_tol``; a plain NLP's KKT residual within ``kkt_tol`` and its rows within
        ``mpec_tol`` relative to the point's size.
        """
        st, msg = self.status, self.message
        mpec = self.complementarity is not None
        kind = {0: "optimal", 1: "acceptable", 2: "infeasible", -1: "iteration_limit", -4: "time_limit",
                -5: "time_limit", TIME_OUT: "time_limit", CALLBACK_ERROR: "error"}.get(st, "error")
        if kind == "infeasible" and self.nlp is not None and self.nlp.violated:
            kind = "proven_infeasible"
        if kind in ("optimal", "acceptable"):
            if mpec and self.complementarity > mpec_tol:
                kind, msg = "unknown", msg + f"; complementarity residual {self.complementarity:.2e} exceeds mpec_tol {mpec_tol:g}"
            elif not self.feasible(mpec_tol if mpec else max(mpec_tol, 1e-6)):
                kind, msg = "unknown", msg + f"; a row or bound is violated by {self.infeasibility:.2e} (more than mpec_tol {mpec_tol:g})"
            elif self.kkt is not None and not self.kkt <= kkt_tol:
                kind, msg = "unknown", msg + (f"; but the KKT conditions do not hold at the point: stationarity residual "
                                              f"{self.kkt:.2e} (relative) exceeds kkt_tol {kkt_tol:g}")
        if mpec and kind not in ("optimal", "acceptable", "proven_infeasible", "time_limit", "iteration_limit", "error"):
            msg = f"MPEC not solved (stages {self.stages}): {msg}"
            kind = "unknown"
        elif mpec and kind == "error" and st != CALLBACK_ERROR:
            # a failed relaxation or polish proves nothing about the MPEC itself
            kind, msg = "unknown", f"MPEC not solved (stages {self.stages}): {msg}"
        self.outcome = (kind, kind in ("optimal", "acceptable"), msg)

    def feasible(self, tol):
        """Rows and bounds hold within ``tol`` (relative to the point's size)."""
        return self.infeasibility is not None and self.infeasibility <= tol * (1.0 + float(np.abs(self.u).max(initial=0)))

    def values(self):
        """``{caller's VarData: value}`` of the point (empty without one)."""
        if self.u is None:
            return ComponentMap()
        if self.tmodel is None:
            return ComponentMap(zip(self.nlp.variables, (float(x) for x in self.u)))
        back, out = self.back, ComponentMap()
        for v, val in zip(self.nlp.variables, self.u):
            orig = back.get(id(v))
            if orig is not None:
                out[orig] = float(val)
        if self.model_polish:
            for v in self.tmodel.component_data_objects(pyo.Var, descend_into=True):
                orig = back.get(id(v)) if v.fixed else None
                if orig is not None and not orig.fixed:
                    out[orig] = v.value
        return out

    def load(self):
        """Write the point into the caller's variables."""
        if self.u is None:
            return
        if self.tmodel is None:
            self.nlp.load(self.u)
            return
        back = self.back
        for v, val in zip(self.nlp.variables, self.u):
            orig = back.get(id(v))
            if orig is not None:
                orig.set_value(float(val), skip_validation=True)
        if self.model_polish:
            for v in self.tmodel.component_data_objects(pyo.Var, descend_into=True):
                orig = back.get(id(v)) if v.fixed else None
                if orig is not None and not orig.fixed:
                    orig.set_value(v.value, skip_validation=True)


def _data_scale(nlp, plan):
    """``max(1, |constant|)`` over the finite row bounds of the NLP, the pairs' product rows left out.

    The relaxation bounds are relative to its square and IPOPT is given
    variables and rows scaled by it: an LCP whose ``q`` is of size 1e4 has
    products of size 1e8 away from the solution, and a first bound of 1e-6
    made IPOPT's restoration fail (measured: up to ``|q|`` = 1e2 the plain
    schedule worked, from 1e4 on it did not; scaled, 1e-8 to 1e7 work).
    """
    keep = np.ones(nlp.m, bool)
    if plan is not None:
        keep[plan[2]] = False
    rows = np.concatenate([nlp.cl[keep], nlp.cu[keep]])
    rows = rows[np.abs(rows) < 1e19]
    return max(1.0, float(np.abs(rows).max(initial=0)))


def _solve_mpec(model, opts, mpec_tol, polish, tee, clock, relaxation, deadline):
    """Clone, ``mpec.simple_nonlinear``, continuation on ``mpec_bound`` with the polish after each stage."""
    # a time limit (max_wall_time) is the budget of the whole solve: each IPOPT call gets what is left

    def left(o):
        return o if deadline is None else {**o, "max_wall_time": max(deadline - time.perf_counter(), 1e-9)}

    with clock("transform"):
        memo = {}
        tmodel = model.clone(memo)
        pyo.TransformationFactory("mpec.simple_nonlinear").apply_to(tmodel)
    with clock("load"):
        back = {id(memo[id(v)]): v for v in model.component_data_objects(pyo.Var, descend_into=True) if id(v) in memo}
    bound = tmodel.component("mpec_bound")
    # adaptive barrier update (25% faster on random SPD LCPs); the relaxed stages only need to find the
    # active set, the polish makes the answer exact (tol 1e-8 here: 15% faster, no failure in 120 LCPs)
    nlp_opts = {"bound_relax_factor": 0.0, "tol": 1e-8, "mu_strategy": "adaptive", **opts}
    popts = {**nlp_opts, "tol": 1e-13, "constr_viol_tol": 1e-13}
    stages = []
    good = None
    with clock("extract"):
        nlp = CompiledNLP(tmodel, deadline)
        plan = _polish_plan(nlp)
        scale = _data_scale(nlp, plan)
        scale2, scaling = scale ** 2, None
        if scale > 1.0 and plan is not None:   # IPOPT works on variables and rows of size one
            scaling = (np.full(nlp.n, 1.0 / scale), np.full(nlp.m, 1.0 / scale))
            scaling[1][plan[2]] = 1.0 / scale2
            popts["constr_viol_tol"] = popts["constr_viol_tol"] * scale   # it is not scaled by IPOPT
    for eps in relaxation:
        bound.set_value(eps * scale2)
        with clock("extract"):
            nlp.refresh_bounds()
        with clock("ipopt"):
            u, info = solve_nlp(nlp, nlp.start() if good is None else np.clip(good, nlp.lb, nlp.ub), left(nlp_opts), tee,
                                scaling)
        stages.append((eps * scale2, int(info["status"])))
        if info["status"] not in (0, 1):
            break  # a tighter relaxation failed: polish from the last one that solved
        good = u
        if not (polish and plan is not None):
            continue
        # polish already from this stage; keep it if it solves and is complementary, else go on
        with clock("polish"):
            saved = (nlp.cl.copy(), nlp.cu.copy(), nlp.lb.copy(), nlp.ub.copy())
            f, g = _factors(nlp, plan, good)
            fix_c = _choice(f, g)
            linear = _linear_polish(nlp, plan, fix_c, saved, 1e-12)
            if linear is None:   # perhaps a degenerate solution (both sides of some pairs zero)
                both = _degenerate(f, g, eps * scale2)
                if both.any():
                    linear = _linear_polish(nlp, plan, fix_c, saved, 1e-12, both=both)
        pu, pg = linear if linear is not None else (None, None)
        if pu is not None:   # a linear active-set system, solved directly
            pinfo = {"status": 0, "status_msg": b"active-set polish: linear system solved", "mult_g": np.zeros(nlp.m)}
        elif eps == relaxation[-1] or _separated(f, g):
            _polish_in_place(nlp, plan, fix_c, saved)
            with clock("ipopt"):
                pu, pinfo = solve_nlp(nlp, np.clip(good, nlp.lb, nlp.ub), left(popts), tee, scaling)
        else:
            _restore(nlp, saved)
            continue
        res = _pair_residual(*_factors(nlp, plan, pu, pg))
        stages.append(("polish", int(pinfo["status"])))
        run = _Run(nlp, pu, pinfo, stages, res, tmodel, back)
        if pinfo["status"] in (0, 1) and res <= mpec_tol and run.feasible(mpec_tol):
            return run
        _restore(nlp, saved)
    if good is None:   # the first stage failed: report its point
        nlp.load(u)
        return _Run(nlp, u, info, stages, _complementarity_residual(tmodel), tmodel, back)
    nlp.load(good)
    if polish and plan is None:
        nlp, u, info = _polish(tmodel, left(popts), tee, clock, deadline)
        nlp.load(u)
        stages.append(("polish", int(info["status"])))
        return _Run(nlp, u, info, stages, _complementarity_residual(tmodel), tmodel, back, model_polish=True)
    return _Run(nlp, good, info, stages, _complementarity_residual(tmodel), tmodel, back)
