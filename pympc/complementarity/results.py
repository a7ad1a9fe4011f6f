"""Results of complementarity solvers: a status enum and self-checking results."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["Status", "LCPResult", "HLCPResult"]


class _DocIntEnum(IntEnum):
    """IntEnum whose members carry their own docstring: ``NAME = value, "doc"``.

    A member prints as its name (``str``, ``print``, f-strings); a numeric
    format spec (``f"{s:d}"``) still gives the number.

    Examples
    --------
    >>> from pympc import Status
    >>> print(Status.SOLVED)
    SOLVED
    >>> f"[{Status.SOLVED:>8}] {Status.SOLVED:d}"
    '[  SOLVED] 0'
    """

    def __new__(cls, value, doc=""):
        obj = int.__new__(cls, value)
        obj._value_ = value
        obj.__doc__ = doc
        return obj

    def __str__(self):
        return self.name

    def __format__(self, spec):
        if spec and spec[-1] in "bcdoxXneEfFgG%":
            return int.__format__(int(self), spec)
        return format(self.name, spec)


class Status(_DocIntEnum):
    """How a complementarity solve ended.  Only ``SOLVED`` carries a solution."""

    SOLVED = 0, "A point was found and verified: nonnegative, complementary and satisfying the equations within tolerance."
    RAY_TERMINATION = 1, (
        "Lemke's method ended on a secondary ray: no solution was found.  This does not prove that none "
        "exists (unless the matrix class guarantees it); use certify=True to decide."
    )
    PIVOT_LIMIT = 2, "The pivot limit was reached before a solution or a ray; raise max_pivots or rescale the data."
    NUMERICAL_FAILURE = 3, (
        "The solver finished but its point failed verification (or became non-finite): rounding has "
        "spoiled the tableau (even after equilibration).  Cross-check with another solver."
    )
    INFEASIBLE = 4, "The problem was proved to have no solution (by exact enumeration of the complementary supports)."
    NO_BASIS = 5, "The HLCP has no nonsingular complementary basis, so it has no LCP form for Lemke's method."
    UNDECIDED = 6, "The solver ended with neither a verified point nor a proof of infeasibility (see the message)."


class _Result:
    status: Status

    @property
    def success(self):
        """True only if the returned point was verified to be a solution."""
        return self.status == Status.SOLVED

    def __repr__(self):
        """A one-line summary (status, size, pivots, residual, method), never the arrays."""
        try:
            res = f"{max(self.relative_residual()):.1e}"
        except Exception:  # a user-spoiled point (wrong length, not numeric) must not break the repr
            res = "n/a"
        return (f"<{type(self).__name__} {self.status.name}: n={self.problem.n}, pivots={self.pivots}, "
                f"relative residual {res}, method={self.method!r}>")

    def __str__(self):
        """The summary and the message."""
        return f"{self!r}\n{self.message}"


class LCPResult(_Result):
    """Result of solving an :class:`~pympc.LCP`.

    Attributes
    ----------
    status : Status
    message : str
    z, w : ndarray
        The point (meaningful as a solution only if ``success``).
    pivots : int
    problem : LCP
    method : str
    info : dict
        Solver-specific details (pivot log, certificate, ...).
    """

    def __init__(self, problem, status, message, z, w, pivots=0, method="lemke", info=None):
        self.problem = problem
        self.status = status if type(status) is Status else Status(status)
        self.message = message
        self.z = z
        self.w = w
        self.pivots = pivots
        self.method = method
        self.info = {} if info is None else info

    def residual(self):
        """:class:`~pympc.complementarity.problems.Residual` of ``(z, w)``."""
        return self.problem.residual(self.z, self.w)

    def relative_residual(self):
        """Componentwise relative residual of ``(z, w)`` (the acceptance measure; see ``LCP.relative_residual``)."""
        return self.problem.relative_residual(self.z, self.w)

    def is_solution(self, tol=1e-9):
        """True if ``(z, w)`` solves the problem within ``tol`` (componentwise relative residual)."""
        return self.problem.is_solution(self.z, self.w, tol)


class HLCPResult(_Result):
    """Result of solving an :class:`~pympc.HLCP`: attributes as :class:`LCPResult` with ``x, y``."""

    def __init__(self, problem, status, message, x, y, pivots=0, method="lemke", info=None):
        self.problem = problem
        self.status = status if type(status) is Status else Status(status)
        self.message = message
        self.x = x
        self.y = y
        self.pivots = pivots
        self.method = method
        self.info = {} if info is None else info

    def residual(self):
        """:class:`~pympc.complementarity.problems.Residual` of ``(x, y)``."""
        return self.problem.residual(self.x, self.y)

    def relative_residual(self):
        """Componentwise relative residual of ``(x, y)`` (the acceptance measure; see ``HLCP.relative_residual``)."""
        return self.problem.relative_residual(self.x, self.y)

    def is_solution(self, tol=1e-9):
        """True if ``(x, y)`` solves the problem within ``tol`` (componentwise relative residual)."""
        return self.problem.is_solution(self.x, self.y, tol)
