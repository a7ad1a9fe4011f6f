"""Cross-validation of one complementarity problem by independent solvers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..complementarity import LCP, Status, enumerate_solutions
from ..complementarity.solve import METHODS, check_time_limit
from ..errors import SolverNotFound

__all__ = ["crosscheck", "CrossCheckReport", "SolverAnswer", "SOLVERS"]

SOLVERS = ("lemke", "ipopt", "milp")


@dataclass
class SolverAnswer:
    """One solver's answer: its status, point (``x, y``, HLCP variables), residual and time."""

    solver: str
    status: str
    success: bool
    x: np.ndarray | None
    y: np.ndarray | None
    residual: tuple | None
    seconds: float
    message: str = ""


@dataclass
class CrossCheckReport:
    """Answers of several solvers on one problem and whether they agree.

    ``agree`` is True when every successful answer is the same point (within
    ``tol``) or, for a problem with several solutions, lies in the enumerated
    solution set; ``explanation`` says why not otherwise.
    """

    problem: object
    answers: list = field(default_factory=list)
    agree: bool = True
    explanation: str = ""
    solution_set: object = None

    def table(self):
        """The report as a printable table."""
        lines = [f"{'solver':8s} {'status':18s} {'equation':>10s} {'negativity':>10s} {'compl.':>10s} {'time':>11s}"]
        for a in self.answers:
            r = a.residual or (float("nan"),) * 3
            lines.append(f"{a.solver:8s} {a.status:18s} {r[0]:10.2e} {r[1]:10.2e} {r[2]:10.2e} {a.seconds * 1e3:9.3f}ms")
        lines.append(("AGREE: " if self.agree else "DISAGREE: ") + self.explanation)
        lines.append("(time: wall time of the call; Lemke's of a second call, as the first compiles its kernels)")
        return "\n".join(lines)

    def __str__(self):
        return self.table()


def crosscheck(problem, solvers=SOLVERS, tol=1e-7, verbose=False, time_limit=60.0):
    """Solve ``problem`` with several solvers and compare their answers.

    Parameters
    ----------
    problem : LCP or HLCP
    solvers : sequence of the names of :data:`pympc.complementarity.solve.METHODS`
        (``"lemke"``, ``"ipopt"``, ``"milp"``, ``"enumerate"``); each is run on its own, without fallback.
    tol : float
        Points closer than ``tol`` (relative to their size) are the same.
    verbose : bool
        Print the table.
    time_limit : float or None
        Seconds allowed to IPOPT and to the MILP each (the MILP is exponential
        in the worst case).  A MILP that runs out of time is ``UNDECIDED``: it
        is reported and left out of the comparison, which then rests on the
        other answers.

    Returns
    -------
    CrossCheckReport

    Examples
    --------
    >>> import pympc
    >>> rep = pympc.crosscheck(pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]), solvers=("lemke", "milp"))
    >>> rep.agree
    True
    """
    unknown = set(solvers) - set(METHODS)
    if unknown:
        raise SolverNotFound(f"unknown cross-check solver(s) {sorted(unknown)}; choose from {sorted(METHODS)}")
    time_limit = check_time_limit(time_limit)
    h = problem.to_hlcp() if isinstance(problem, LCP) else problem
    rep = CrossCheckReport(problem)
    for name in solvers:
        options = {} if name in ("lemke", "enumerate") else {"time_limit": time_limit}
        if name == "lemke":   # numba compiles the kernels on a first call: time a second one
            METHODS[name](problem)
        t0 = time.perf_counter()
        r = METHODS[name](problem, **options)   # each method on its own: no fallback from one to another
        dt = time.perf_counter() - t0
        x, y = r.x, r.y   # HLCP variables for every problem (an LCP's: x = w, y = z)
        ok = r.success and h.is_solution(x, y, 1e-8)
        status = r.status.name if name != "ipopt" else ("SOLVED" if ok else "NOT_SOLVED")
        rep.answers.append(SolverAnswer(name, status, ok, x, y, tuple(h.residual(x, y)) if x is not None else None, dt,
                                        r.message))
    good = [a for a in rep.answers if a.success]
    undecided = [a for a in rep.answers if a.status == Status.UNDECIDED.name]
    failed = [a for a in rep.answers if not a.success and a not in undecided]
    aside = [f"{a.solver} undecided ({a.message}): not compared" for a in undecided]
    scale = lambda a: 1.0 + max(np.abs(a.x).max(), np.abs(a.y).max())  # noqa: E731
    same = all(np.abs(a.x - good[0].x).max() + np.abs(a.y - good[0].y).max() <= tol * scale(a) for a in good)
    if not good and not failed:
        rep.agree, rep.explanation = False, "no solver decided: nothing to compare"
        return _finish(rep, verbose, aside)
    if good and same and not failed:
        rep.explanation = f"{len(good)} solver(s) found the same verified point"
        return _finish(rep, verbose, aside)
    # several answers or failures: let the complete solution set judge, where it can be had
    if h.n <= 12:
        sols = enumerate_solutions(h)
        rep.solution_set = sols
        pts = [(x, y) for x, y in sols.points]
        in_set = [any(np.abs(a.x - x).max() + np.abs(a.y - y).max() <= tol * scale(a) for x, y in pts)
                  or sols.kind.name == "CONTINUUM" for a in good]
        notes = [f"solution set: {sols.kind.name.lower()} ({len(pts)} point(s) listed)"]
        if not same and good:
            notes.append("the solvers found different points" + (", each in the solution set" if all(in_set) else
                         ", NOT all in the enumerated set"))
        for a in failed:
            exp = "correctly: there is no solution" if sols.kind.name == "NONE" else "although solutions exist"
            notes.append(f"{a.solver} failed ({a.status}) {exp}")
        rep.agree = all(in_set) and (not failed or sols.kind.name == "NONE") and (same or sols.kind.name != "UNIQUE")
        rep.explanation = "; ".join(notes)
    else:
        rep.agree = same and not failed
        rep.explanation = ("different points; problem too large to enumerate its solution set" if not same else
                           "failed: " + ", ".join(f"{a.solver} ({a.status})" for a in failed))
    return _finish(rep, verbose, aside)


def _finish(rep, verbose, aside):
    rep.explanation = "; ".join([rep.explanation] + aside)
    if verbose:
        print(rep.table())
    return rep
