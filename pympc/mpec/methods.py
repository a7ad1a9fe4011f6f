"""The ``ipopt`` method of :func:`pympc.solve`: IPOPT on the problem's Pyomo MPEC model.

Offered to :mod:`pympc.complementarity` through :data:`pympc._plugins.SOLVE_METHODS` (the complementarity core
imports nothing above it); imported only when a caller asks for ``method="ipopt"``.
"""

from __future__ import annotations

import numpy as np

from ..complementarity import LCP, Result, Status
from .models import to_pyomo
from .solvers import IpoptSolver

__all__ = ["solve_ipopt"]


def solve_ipopt(problem, time_limit=None, tol=1e-8, **options):
    """IPOPT on :func:`~pympc.mpec.to_pyomo`'s model (``options``: entries of ``pympc.ipopt``'s CONFIG).

    A :class:`~pympc.complementarity.Result`: ``SOLVED`` only for a point IPOPT calls optimal that also
    verifies as a solution of ``problem`` (to ``tol``); ``INFEASIBLE`` only when IPOPT proves it.
    """
    m = to_pyomo(problem)
    res = IpoptSolver().solve(m, time_limit=time_limit, load_solutions=True, raise_exception_on_nonoptimal_result=False,
                              **options)
    n = problem.n
    get = lambda v: np.array([0.0 if v[i].value is None else v[i].value for i in range(n)], float)  # noqa: E731
    if isinstance(problem, LCP):
        z = get(m.z)
        first, second = z, problem.M @ z + problem.q
    else:
        first, second = get(m.x), get(m.y)
    ok = res.solution_status.name == "optimal" and problem.is_solution(first, second, tol)
    status = Status.SOLVED if ok else (Status.UNDECIDED if res.termination_condition.name != "provenInfeasible"
                                       else Status.INFEASIBLE)
    info = {"termination_condition": res.termination_condition.name, **dict(res.extra_info.items())}
    return Result(problem, status, f"{res.termination_condition.name}: {res.extra_info.message}", first, second, 0,
                  "ipopt", info)
