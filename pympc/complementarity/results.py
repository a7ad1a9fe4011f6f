"""Results of complementarity solvers: a status enum and self-checking results."""

from __future__ import annotations

from .._enum import DocIntEnum
from .problems import LCP

__all__ = ["Status", "Result", "LCPResult", "HLCPResult"]




class Status(DocIntEnum):
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


class Result:
    """Result of a complementarity solve, the one type every pympc method returns (LCP or HLCP alike).

    The point is held in HLCP variables ``x, y``.  An LCP(M, q) is
    ``HLCP(I, -M, q)`` with ``x = w`` and ``y = z`` (DESIGN.md §2), so for an
    LCP's result ``z`` *is* ``y`` and ``w`` *is* ``x``: the same arrays, not
    copies (``np.shares_memory(r.z, r.y)``), and assigning ``r.z`` assigns
    ``r.y``.  An HLCP's result has no ``z, w``.  ``LCPResult`` and
    ``HLCPResult`` are other names of this class.

    Parameters
    ----------
    problem : LCP or HLCP
    status : Status or int
    message : str
    first, second : ndarray
        The point in the problem's own variables: ``(z, w)`` for an LCP,
        ``(x, y)`` for an HLCP (see :meth:`from_hlcp_point` for an LCP's
        point in HLCP variables).
    pivots : int
    method : str
    info : dict, optional

    Attributes
    ----------
    status : Status
    message : str
    x, y : ndarray
        The point (meaningful as a solution only if ``success``) in the
        variables of :attr:`hlcp`.
    z, w : ndarray
        An LCP's point: ``y`` and ``x`` themselves.
    pivots : int
    problem : LCP or HLCP
    method : str
    info : dict
        Solver-specific details (pivot log, certificate, ...).
    """

    def __init__(self, problem, status, message, first, second, pivots=0, method="lemke", info=None):
        self.problem = problem
        self.status = status if type(status) is Status else Status(status)
        self.message = message
        if isinstance(problem, LCP):
            self.x, self.y = second, first      # x = w, y = z
        else:
            self.x, self.y = first, second
        self.pivots = pivots
        self.method = method
        self._info = {} if info is None else info

    @classmethod
    def _lazy(cls, problem, status, message, x, y, pivots, method, info_from):
        """A result built without the checks of ``__init__`` (for pympc's own solvers: ``status`` a
        :class:`Status`, ``(x, y)`` the point in HLCP variables), whose ``info`` is made when first read:
        ``info_from[0](*info_from[1:])``."""
        self = cls.__new__(cls)
        self.problem, self.status, self.message, self.x, self.y = problem, status, message, x, y
        self.pivots, self.method, self._info, self._info_from = pivots, method, None, info_from
        return self

    @classmethod
    def _packed(cls, problem, out, pivots, message, make_info):
        """A verified Lemke result (``SOLVED``, method ``"lemke"``) whose point is packed in the kernel's answer
        ``out = [y | x | ...]`` (an LCP's ``[z | w | ...]``): ``x, y`` are its slices, made when first read (see
        :meth:`__getattr__`), and ``info`` is ``make_info(out, problem)``, made when first read."""
        self = cls.__new__(cls)
        self.problem = problem
        self.status = _SOLVED
        self.message = message
        self.pivots = pivots
        self.method = "lemke"
        self._info = None
        self._info_from = make_info, out, problem
        self._point_from = out
        return self

    def __getattr__(self, name):
        """``x`` and ``y`` of a result made by :meth:`_packed`, sliced from the packed answer when first read
        (a value assigned before stays).  Python calls it for any attribute not found, and also when a property
        raises AttributeError: the property's own error is raised again (an HLCP result's ``z``)."""
        if name == "x" or name == "y":
            out = self.__dict__.pop("_point_from", None)
            if out is not None:
                n = self.problem.n
                self.__dict__.setdefault("x", out[n:2 * n])
                self.__dict__.setdefault("y", out[:n])
                return self.__dict__[name]
        prop = getattr(type(self), name, None)
        if isinstance(prop, property):
            return prop.__get__(self)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def info(self):
        """Solver-specific details (pivot log, certificate, ...): a dict."""
        info = self._info
        if info is None:
            make = self.__dict__.pop("_info_from", None)
            info = self._info = {} if make is None else make[0](*make[1:])
        return info

    @info.setter
    def info(self, value):
        self._info = value

    @classmethod
    def from_hlcp_point(cls, problem, status, message, x, y, pivots=0, method="lemke", info=None):
        """A result from a point in HLCP variables (for an LCP: those of ``problem.to_hlcp()``)."""
        if isinstance(problem, LCP):
            return cls(problem, status, message, y, x, pivots, method, info)
        return cls(problem, status, message, x, y, pivots, method, info)

    def _lcp_only(self, name):
        if not isinstance(self.problem, LCP):
            raise AttributeError(f"{name!r}: an HLCP's result has the point x, y; z and w exist for an LCP's result")

    @property
    def z(self):
        """An LCP's ``z``: the array ``y`` itself."""
        self._lcp_only("z")
        return self.y

    @z.setter
    def z(self, value):
        self._lcp_only("z")
        self.y = value

    @property
    def w(self):
        """An LCP's ``w``: the array ``x`` itself."""
        self._lcp_only("w")
        return self.x

    @w.setter
    def w(self, value):
        self._lcp_only("w")
        self.x = value

    @property
    def hlcp(self):
        """The HLCP whose variables ``x, y`` are: the problem itself, or an LCP's ``to_hlcp()``."""
        return self.problem.to_hlcp() if isinstance(self.problem, LCP) else self.problem

    def _own_point(self):
        return (self.y, self.x) if isinstance(self.problem, LCP) else (self.x, self.y)

    @property
    def success(self):
        """True only if the returned point was verified to be a solution."""
        return self.status == Status.SOLVED

    def residual(self):
        """:class:`~pympc.complementarity.problems.Residual` of the point in the problem's own variables."""
        return self.problem.residual(*self._own_point())

    def relative_residual(self):
        """Componentwise relative residual of the point (the acceptance measure; see ``HLCP.relative_residual``)."""
        return self.problem.relative_residual(*self._own_point())

    def is_solution(self, tol=1e-9):
        """True if the point solves the problem within ``tol`` (componentwise relative residual)."""
        first, second = self._own_point()
        return self.problem.is_solution(first, second, tol)

    def __repr__(self):
        """A one-line summary (status, size, pivots, residual, method), never the arrays."""
        try:
            res = f"{max(self.relative_residual()):.1e}"
        except Exception:  # a user-spoiled point (wrong length, not numeric) must not break the repr
            res = "n/a"
        kind = "LCPResult" if isinstance(self.problem, LCP) else "HLCPResult"
        return (f"<{kind} {self.status.name}: n={self.problem.n}, pivots={self.pivots}, "
                f"relative residual {res}, method={self.method!r}>")

    def __str__(self):
        """The summary and the message."""
        return f"{self!r}\n{self.message}"


_SOLVED = Status.SOLVED

#: other names of :class:`Result` (one type for LCPs and HLCPs)
LCPResult = HLCPResult = Result
