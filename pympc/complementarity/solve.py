"""``pympc.solve``: one entry point for every complementarity method."""

from __future__ import annotations

from ..errors import SolverNotFound
from .lemke import lemke

__all__ = ["solve", "METHODS"]

#: Methods of :func:`solve`; the Pyomo-based ones (``ipopt``, ``milp``) are in ``pympc.mpec``.
METHODS = {"lemke": lemke}


def solve(problem, method="lemke", **options):
    """Solve an LCP or HLCP.

    Parameters
    ----------
    problem : LCP or HLCP
    method : str
        ``"lemke"`` (the native lexicographic pivoting solver).
    **options
        Passed to the method; unknown options raise :class:`~pympc.errors.OptionError`.

    Returns
    -------
    LCPResult or HLCPResult

    Examples
    --------
    >>> import pympc
    >>> r = pympc.solve(pympc.LCP([[2.0]], [-4.0]))
    >>> r.success, r.z
    (True, array([2.]))
    """
    try:
        fn = METHODS[method]
    except (KeyError, TypeError):
        raise SolverNotFound(f"unknown method {method!r}; available: {sorted(METHODS)} "
                             "(the Pyomo solvers are reached through pympc.crosscheck or SolverFactory)") from None
    return fn(problem, **options)
