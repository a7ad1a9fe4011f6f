"""``pympc.solve``: one entry point, one registry of complementarity methods.

:data:`METHODS` maps a name to a function ``f(problem, **options)`` returning
a :class:`~pympc.complementarity.results.Result` (one type for LCPs and HLCPs) whose ``SOLVED``
status means a verified point: ``lemke`` (native pivoting), ``enumerate``
(every support, small problems), ``milp`` (exact: convex QP or support search
by HiGHS) and ``ipopt`` (IPOPT on the Pyomo MPEC model, offered by :mod:`pympc.mpec` through
:data:`pympc._plugins.SOLVE_METHODS` and imported only when used: this package imports nothing above
it).  :func:`pympc.crosscheck` loops over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module

import numpy as np

from .._plugins import SOLVE_METHODS
from ..errors import OptionError, ProblemError, SolverNotFound
from .enumeration import enumerate_solutions
from .lemke import lemke, lemke_default, lemke_lcp_default
from .milp import milp
from .problems import HLCP, LCP
from .results import Result, Status

__all__ = ["solve", "METHODS", "ENUMERATION_LIMIT", "check_time_limit"]


def check_time_limit(value, name="time_limit"):
    """A time limit in seconds: None (no limit) or a number > 0 (``inf``: no limit); NaN and the rest are refused."""
    if value is None:
        return None
    if type(value) is float and value > 0.0:   # the usual case (NaN fails the comparison)
        return value
    if isinstance(value, (bool, str)) or not isinstance(value, (int, float, np.number)) or not value > 0:
        raise OptionError(f"{name} must be a number of seconds > 0 (or None for no limit), got {value!r}")
    return float(value)

#: problems with at most this many pairs are enumerated when Lemke's method ends without an answer
ENUMERATION_LIMIT = 12


def _result(problem, status, message, first, second, method, info):
    """The result from a point in the problem's own variables (``(z, w)`` or ``(x, y)``)."""
    return Result(problem, status, message, first, second, 0, method, info)


def _enumerate(problem, max_pairs=16, tol=1e-9):
    """Every solution by enumeration of the supports; the result carries the first (``info["solution_set"]``)."""
    sols = enumerate_solutions(problem, max_pairs=max_pairs, tol=tol)
    info = {"solution_set": sols}
    if not sols.points:
        zeros = np.zeros(problem.n)
        return _result(problem, Status.INFEASIBLE, "enumeration of every complementary support: no solution",
                       zeros, zeros, "enumerate", info)
    first, second = sols.points[0]
    return _result(problem, Status.SOLVED, f"enumeration: {sols.kind.name.lower()} solution set, "
                   f"{len(sols.points)} point(s) listed; the first is returned", first, second, "enumerate", info)


class _Methods(Mapping):
    """name -> function(problem, **options); an entry given as ``"module:function"`` is imported when first looked up."""

    def __init__(self, entries):
        self._entries = dict(entries)

    def __getitem__(self, name):
        fn = self._entries[name]
        if isinstance(fn, str):
            module, _, attr = fn.partition(":")
            fn = self._entries[name] = getattr(import_module(module), attr)
        return fn

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def register(self, name, function):
        """Add (or replace) method ``name``: a function ``f(problem, **options)`` returning a Result."""
        if not isinstance(name, str) or not callable(function):
            raise OptionError(f"register(name, function): a name and a callable, got {name!r}, {function!r}")
        self._entries[name] = function


#: name -> function(problem, **options) of every complementarity method; the rooms above offer theirs through
#: :data:`pympc._plugins.SOLVE_METHODS` (``ipopt``, in :mod:`pympc.mpec`), imported only when used
METHODS = _Methods({"lemke": lemke, "enumerate": _enumerate, "milp": milp, **SOLVE_METHODS})


#: how Lemke's method can end undecided: ``solve`` decides these exactly (its ``fallback``)
_UNDECIDED_BY_LEMKE = (Status.RAY_TERMINATION, Status.NO_BASIS, Status.NUMERICAL_FAILURE)
_SOLVED = Status.SOLVED
#: the registry's dict itself (``solve`` looks a name up on every call)
_ENTRIES = METHODS._entries


def _after_lemke(problem, r, time_limit):
    """Lemke ended without a point: decide exactly where that is affordable, and say which method did."""
    sols = r.info.get("certificate")
    if sols is not None and sols.points:
        first, second = sols.points[0]
        out = _result(problem, Status.SOLVED, r.message + "; the point returned is enumeration's", first, second,
                      "enumerate", dict(r.info))
    elif problem.n <= ENUMERATION_LIMIT:
        out = _enumerate(problem)
        out.message = f"Lemke: {r.status.name} ({r.message}); then {out.message}"
    else:
        out = milp(problem, time_limit=time_limit)
        out.message = f"Lemke: {r.status.name} ({r.message}); then the exact method: {out.message}"
    if out.status == Status.UNDECIDED:
        within = "" if time_limit is None else f" within {time_limit:g} s"
        r.message += (f"; the exact method did not decide{within}: run pympc.solve(problem, "
                      "method='milp', time_limit=...) with more time, or pympc.crosscheck(problem)")
        return r
    out.info["lemke"] = r
    out.info["found_by"] = out.method
    return out


#: the name and the default fallback time limit of ``solve``'s usual call, as objects: ``solve`` tells its
#: defaults by identity (``is``), the cheapest test (an equal value made elsewhere takes the general way)
_LEMKE = "lemke"
_FALLBACK_TIME_LIMIT = 10.0


def lemke_by_default():
    """Whether ``solve(problem)`` with the defaults calls pympc's own :func:`lemke` (the registry's ``lemke``
    not replaced): a caller with a compiled path to its answer takes it only then."""
    return _ENTRIES[_LEMKE] is lemke


def solve(problem, method=_LEMKE, *, fallback=True, fallback_time_limit=_FALLBACK_TIME_LIMIT, **options):
    """Solve an LCP or HLCP.

    Parameters
    ----------
    problem : LCP or HLCP
    method : {"lemke", "enumerate", "milp", "ipopt"} or callable
        A name of :data:`METHODS`, or a function ``f(problem, **options)`` returning a
        :class:`~pympc.complementarity.results.Result` (as scipy takes a method name or an object).
    fallback : bool
        With ``method="lemke"``: when Lemke's method ends on a secondary ray
        (or finds no basis, or fails numerically), decide exactly — by
        enumeration for up to :data:`ENUMERATION_LIMIT` pairs, else by the
        exact ``milp`` method within ``fallback_time_limit`` seconds — and
        return its verified point (``method`` and ``info["found_by"]`` say
        which method found it; ``info["lemke"]`` is Lemke's own result) or its
        proof that there is none.  Undecided: Lemke's result, whose message
        says what to run.  ``certify=False`` (Lemke's option: no
        enumeration on a ray) asks for Lemke's own answer: no fallback either.
    **options
        Passed to the method; unknown options raise :class:`~pympc.errors.OptionError`.

    Returns
    -------
    Result

    Examples
    --------
    >>> import pympc
    >>> r = pympc.solve(pympc.LCP([[2.0]], [-4.0]))
    >>> r.success, r.z
    (True, array([2.]))
    >>> pympc.solve(pympc.LCP([[2.0]], [-4.0]), method="milp").z
    array([2.])
    """
    if (method is _LEMKE and (type(problem) is LCP or type(problem) is HLCP)
            and fallback_time_limit is _FALLBACK_TIME_LIMIT and not options and _ENTRIES[_LEMKE] is lemke):
        # the usual call (an LCP or HLCP, the defaults, pympc's own Lemke): its compiled calls at once
        r = lemke_lcp_default(problem) if type(problem) is LCP else lemke_default(problem)
        if r.status is _SOLVED:
            return r
    else:
        if isinstance(method, str):
            fn = _ENTRIES.get(method)      # the function itself, once looked up (a name is imported first)
            if type(fn) is str:
                fn = METHODS[method]
        elif callable(method):
            fn, method = method, getattr(method, "__name__", "callable")
        else:
            fn = None
        if fn is None:
            raise SolverNotFound(f"unknown method {method!r}; available: {sorted(METHODS)} or a function "
                                 "f(problem, **options) returning a Result")
        if not isinstance(problem, (LCP, HLCP)):
            raise ProblemError(f"solve: expected a complementarity problem, got {type(problem).__name__}; wrap the "
                               "data in pympc.LCP(M, q) or pympc.HLCP(A, B, c)")
        fallback_time_limit = check_time_limit(fallback_time_limit, "fallback_time_limit")
        if options:
            if "time_limit" in options:
                options["time_limit"] = check_time_limit(options["time_limit"])
            r = fn(problem, **options)
        else:
            r = fn(problem)
    if (r.status is not _SOLVED and method == "lemke" and fallback and options.get("certify") is not False
            and r.status in _UNDECIDED_BY_LEMKE):
        return _after_lemke(problem, r, fallback_time_limit)
    return r
