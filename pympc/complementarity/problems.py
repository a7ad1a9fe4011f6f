"""Linear complementarity problems that validate themselves.

Conventions (DESIGN.md §2):

* ``LCP(M, q)``: find ``z >= 0`` with ``w = M z + q >= 0`` and ``z'w = 0``.
* ``HLCP(A, B, c)``: find ``x, y >= 0`` with ``A x + B y = c`` and
  ``x_i y_i = 0`` for every ``i``.  ``LCP(M, q)`` is ``HLCP(I, -M, q)`` with
  ``x = w`` and ``y = z``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.linalg import lapack as _lapack

from ..errors import ProblemError
from ._kernel import equilibrate_hlcp, lcp_relative_residual, relative_residual
from .support import lu_rcond, solve_columns

__all__ = ["LCP", "HLCP", "Residual", "Reduction", "as_matrix", "as_vector", "load_problem", "lu_rcond"]


def as_matrix(name, value, shape=None):
    """Return ``value`` as a finite 2-D float array or raise :class:`ProblemError`.

    Parameters
    ----------
    name : str
        Argument name used in the error message.
    value : array_like
        The data.
    shape : tuple of int, optional
        Required shape.
    """
    try:
        arr = np.array(value, dtype=float, order="C")
    except (TypeError, ValueError) as exc:
        raise ProblemError(f"{name} must be a numeric matrix; could not convert it to float ({exc}).") from None
    if arr.ndim != 2:
        raise ProblemError(f"{name} must be a 2-D matrix, got an array with {arr.ndim} dimension(s) of shape {arr.shape}.")
    if arr.size == 0:
        raise ProblemError(f"{name} is empty (shape {arr.shape}); a complementarity problem needs at least one pair.")
    if shape is not None and arr.shape != tuple(shape):
        raise ProblemError(f"{name} must have shape {tuple(shape)}, got {arr.shape}.")
    if not np.isfinite(arr).all():
        i, j = np.argwhere(~np.isfinite(arr))[0]
        raise ProblemError(f"{name} has a non-finite entry ({arr[i, j]}) at [{i}, {j}]; replace NaN/inf by finite values.")
    return arr


def as_vector(name, value, size=None):
    """Return ``value`` as a finite 1-D float array or raise :class:`ProblemError`."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ProblemError(f"{name} must be a numeric vector; could not convert it to float ({exc}).") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ProblemError(f"{name} must be a 1-D vector, got shape {arr.shape}.")
    if arr.size == 0:
        raise ProblemError(f"{name} is empty; a complementarity problem needs at least one pair.")
    if size is not None and arr.size != size:
        raise ProblemError(f"{name} must have length {size} to conform with the matrix, got {arr.size}.")
    if not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ProblemError(f"{name} has a non-finite entry ({arr[i]}) at [{i}]; replace NaN/inf by finite values.")
    return arr


#: The window of nonzero magnitudes a problem's data may have: products and ratios of two entries stay
#: finite and normal doubles inside it.  ``LCP([[1e300, 0], [0, 1e-300]], q)`` (outside) made LAPACK print
#: DLASCL lines and enumeration call a solvable problem unsolvable.
MAGNITUDES = (1e-150, 1e150)


def check_magnitudes(name, arr):
    """Raise :class:`ProblemError` when a nonzero entry of ``arr`` lies outside :data:`MAGNITUDES`."""
    mags = np.abs(arr)
    bad = (mags > 0) & ((mags < MAGNITUDES[0]) | (mags > MAGNITUDES[1]))
    if bad.any():
        where = np.argwhere(bad)[0] if arr.ndim > 1 else np.flatnonzero(bad)[:1]
        idx = ", ".join(str(int(k)) for k in where)
        raise ProblemError(
            f"{name} has an entry of magnitude {mags[tuple(where)]:.3g} at [{idx}]; pympc solves problems whose nonzero "
            f"entries lie between {MAGNITUDES[0]:g} and {MAGNITUDES[1]:g} in size (beyond, products and ratios of "
            "two entries overflow or underflow doubles). Rescale the problem's units (a row, or a variable, by a "
            "power of ten) or set negligible entries to zero.")
    return arr


#: Relative size, in the units of the equilibrated problem, below which an entry of a point
#: counts as rounding noise of a zero (see :meth:`HLCP.is_solution`).
NOISE = 1e-12


def _point(name, value, n):
    """A point's part as a contiguous float vector of length ``n`` (non-finite entries are kept: they fail)."""
    try:
        arr = np.ascontiguousarray(value, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise ProblemError(f"{name} must be a numeric vector ({exc}).") from None
    if arr.size != n:
        raise ProblemError(f"{name} must have length {n} to match the problem, got {arr.size}.")
    return arr


class Residual(NamedTuple):
    """How far a point is from solving a complementarity problem.

    ``residual()`` gives the absolute measures below; ``relative_residual()``
    the componentwise relative ones that decide acceptance (each row against the
    size of its own terms, each variable by the share of a row it carries; see
    :meth:`HLCP.relative_residual`).

    Attributes
    ----------
    equation : float
        ``||A x + B y - c||_inf`` (for an LCP, ``||w - (M z + q)||_inf``).
    negativity : float
        ``max(0, -min(x, y))``.
    complementarity : float
        ``max_i |x_i y_i|``.
    """

    equation: float
    negativity: float
    complementarity: float

    def ok(self, tol, scale=1.0):
        """True if every part is within ``tol`` (see :func:`within`)."""
        return within(self.equation, self.negativity, self.complementarity, tol, scale)


def within(equation, negativity, complementarity, tol, scale):
    """The acceptance test of every pympc solution: equation and negativity within
    ``tol (1 + scale)``, complementarity within ``tol (1 + scale)²``."""
    s = 1.0 + scale
    return equation <= tol * s and negativity <= tol * s and complementarity <= tol * s * s


@dataclass(frozen=True)
class Reduction:
    """The map from an HLCP to an equivalent LCP through a complementary basis.

    ``basis[i]`` is True where ``x_i`` is basic (column ``i`` of ``C`` taken
    from ``A``) and False where ``y_i`` is basic.  The LCP variables are
    ``z`` = the non-basic member of each pair and ``w`` = the basic member.
    """

    hlcp: "HLCP"
    lcp: "LCP"
    basis: np.ndarray

    def to_hlcp_point(self, z, w):
        """Map an LCP point ``(z, w)`` back to the HLCP point ``(x, y)``."""
        b = self.basis
        x = np.where(b, w, z)
        y = np.where(b, z, w)
        return x, y

    def to_lcp_point(self, x, y):
        """Map an HLCP point ``(x, y)`` to the LCP point ``(z, w)``."""
        b = self.basis
        return np.where(b, y, x), np.where(b, x, y)


class _Problem:
    """Shared behaviour of LCP and HLCP."""

    def __len__(self):
        return self.n

    def __repr__(self):
        return f"{type(self).__name__}(n={self.n}{', name=' + repr(self.name) if self.name else ''})"


class HLCP(_Problem):
    """Horizontal linear complementarity problem ``A x + B y = c``, ``0 <= x ⊥ y >= 0``.

    Parameters
    ----------
    A, B : array_like, shape (n, n)
        Coefficient matrices.
    c : array_like, shape (n,)
        Right-hand side.
    name : str, optional
        A label carried into results and reports.

    Examples
    --------
    >>> import pympc
    >>> p = pympc.HLCP([[1.0]], [[-2.0]], [-1.0])   # x - 2 y = -1
    >>> r = pympc.solve(p)
    >>> r.success, r.x, r.y
    (True, array([0.]), array([0.5]))
    """

    def __init__(self, A, B, c, *, name=None):
        self.A = as_matrix("A", A)
        n = self.A.shape[0]
        if self.A.shape != (n, n):
            raise ProblemError(f"A must be square, got shape {self.A.shape}.")
        self.B = as_matrix("B", B, (n, n))
        self.c = as_vector("c", c, n)
        for key in ("A", "B", "c"):
            check_magnitudes(key, getattr(self, key))
        self.name = name
        self._seal()

    def _seal(self):
        for arr in (self.A, self.B, self.c):
            arr.flags.writeable = False

    @property
    def _a_diagonal(self):
        """Is A diagonal?  (The LCP form HLCP(I, -M, q), or a scaling of it, reduces in O(n²).)"""
        d = self.__dict__.get("_a_diag")
        if d is None:
            d = self._a_diag = bool(np.count_nonzero(self.A) == np.count_nonzero(np.diagonal(self.A)))
        return d

    @classmethod
    def _trusted(cls, A, B, c, name=None, a_diagonal=None):
        """The problem of arrays pympc built itself, without the copies and checks of user input.

        For internal use only: ``A``, ``B`` (n×n) and ``c`` (n) must be finite C-contiguous float64
        arrays that nothing else writes to (they are made read-only, as the constructor's copies are);
        ``a_diagonal``, when the caller knows it, whether A is diagonal.
        """
        self = cls.__new__(cls)
        self.A, self.B, self.c, self.name = A, B, c, name
        self._seal()
        if a_diagonal is not None:
            self._a_diag = bool(a_diagonal)
        return self

    @property
    def n(self):
        """Number of complementarity pairs."""
        return self.c.size

    def scale(self):
        """Magnitude of the data, used to scale tolerances."""
        return max(1.0, float(np.abs(self.c).max()))

    def residual(self, x, y):
        """The :class:`Residual` of the point ``(x, y)``."""
        x = np.asarray(x, float)
        y = np.asarray(y, float)
        eq = float(np.abs(self.A @ x + self.B @ y - self.c).max())
        neg = float(max(0.0, -min(x.min(), y.min())))
        comp = float(np.abs(x * y).max())
        return Residual(eq, neg, comp)

    def relative_residual(self, x, y):
        """The componentwise relative :class:`Residual` of ``(x, y)``, unchanged by scaling rows or columns.

        With ``t_i = sum_j (|A_ij x_j| + |B_ij y_j|) + |c_i|`` the size of the terms
        of row ``i`` and the *weight* of a variable the largest share
        ``|A_ij x_j| / t_i`` of a row it carries: ``equation`` is
        ``max_i |A x + B y - c|_i / t_i``, ``negativity`` the largest weight of
        a negative variable and ``complementarity`` the largest weight of the
        lighter member of a pair with both members nonzero.  When all three are
        at most ``tol``, zeroing the negative and the lighter members gives an
        exact solution of a problem whose data differ by at most ``(n + 1) tol``
        relative to each entry: a verified answer never breaks a row of its own
        problem, however the rows and columns are scaled.
        """
        x = _point("x", x, self.n)
        y = _point("y", y, self.n)
        return Residual(*relative_residual(self.A, self.B, self.c, x, y))

    def is_solution(self, x, y, tol=1e-9):
        """True if ``(x, y)`` solves the problem within ``tol`` (see :meth:`relative_residual`).

        Rounding noise is forgiven: if the point fails, its entries below
        ``NOISE (1 + max|x', y', c'|)`` in the units of the equilibrated problem
        (:meth:`equilibrated`) are zeroed, and the point passes if that cleaned
        point does (a row whose terms are all zero can hold 1e-17 of noise).
        """
        x = _point("x", x, self.n)
        y = _point("y", y, self.n)
        if max(relative_residual(self.A, self.B, self.c, x, y)) <= tol:
            return True
        h, dx, dy = self.equilibrated()
        xs, ys = x / dx, y / dy
        floor = NOISE * (1.0 + max(float(np.abs(xs).max()), float(np.abs(ys).max()), float(np.abs(h.c).max())))
        xc, yc = np.where(np.abs(xs) <= floor, 0.0, x), np.where(np.abs(ys) <= floor, 0.0, y)
        return max(relative_residual(self.A, self.B, self.c, xc, yc)) <= tol

    def equilibrated(self):
        """The same problem with rows and columns scaled by powers of two (Ruiz), and the column scales.

        ``[A | B | c]`` is equilibrated as one matrix, so the right-hand side is
        balanced against the columns too; for a diagonal ``A`` (the LCP form)
        ``[A⁻¹B | A⁻¹c]`` is, and ``A`` becomes the identity.  Returns ``(hlcp, dx, dy)``:
        ``x = dx * x'`` and ``y = dy * y'`` map a point of the equilibrated
        problem back to this one (the scales are exact powers of two).
        """
        As, Bs, cs, dx, dy = equilibrate_hlcp(self.A, self.B, self.c, self._a_diagonal, 20)
        return HLCP._trusted(As, Bs, cs, name=self.name), dx, dy

    def column_matrix(self, basis):
        """The column-representative matrix ``C_α`` (column ``i`` from A where ``basis[i]``)."""
        basis = np.asarray(basis, bool)
        return np.where(basis[None, :], self.A, self.B)

    def support_point(self, basis, rcond=1e-12):
        """The point of the support ``basis`` from ``C_α v = c``, or None if ``C_α`` is singular.

        ``basis[i]`` True: ``x_i = v_i``, ``y_i = 0``; False: ``y_i = v_i``, ``x_i = 0``.
        The point is not checked for sign: that is the caller's question.
        """
        basis = np.asarray(basis, bool)
        if basis.shape != (self.n,):
            raise ProblemError(f"basis must be a boolean vector of length {self.n}.")
        n = self.n
        free = np.where(basis, np.arange(n), n + np.arange(n))   # C_α: column i from A or from B
        v = solve_columns(np.hstack([self.A, self.B]), self.c, free, rcond)
        if v is None:
            return None
        u = np.zeros(2 * n)
        u[free] = v
        return u[:n], u[n:]

    def find_basis(self, rcond=1e-12):
        """A nonsingular complementary basis, found by a pivoted factorization.

        ``A`` itself is used when it is well conditioned (the natural LCP
        orientation).  Otherwise Gaussian elimination chooses, step by step,
        the column (from A or B) with the largest pivot among the pairs not
        yet chosen: complete pivoting restricted to one column per pair.

        Returns
        -------
        ndarray of bool or None
            ``basis[i]`` True where ``x_i`` is basic; None if no nonsingular
            basis was found.
        """
        n = self.n
        if lu_rcond(self.A)[2] > rcond:
            return np.ones(n, bool)
        cols = np.hstack([self.A, self.B])
        scale = max(1.0, float(np.abs(cols).max()))
        rows = np.ones(n, bool)
        open_cols = np.ones(2 * n, bool)
        basis = np.zeros(n, bool)
        for _ in range(n):
            sub = np.abs(cols[np.ix_(rows, open_cols)])
            k = int(sub.argmax())
            r_loc, j_loc = divmod(k, sub.shape[1])
            if sub[r_loc, j_loc] <= rcond * scale:
                return None
            r = np.flatnonzero(rows)[r_loc]
            j = np.flatnonzero(open_cols)[j_loc]
            pair = j % n
            basis[pair] = j < n
            open_cols[[pair, pair + n]] = False
            rows[r] = False
            others = np.flatnonzero(rows)
            cols[others] -= np.outer(cols[others, j] / cols[r, j], cols[r])
        if lu_rcond(self.column_matrix(basis))[2] <= rcond:
            return None
        return basis

    def to_lcp(self, basis=None):
        """An equivalent LCP through a nonsingular complementary basis.

        With ``C`` the column-representative matrix of ``basis`` and ``N`` the
        other columns, ``C u + N v = c`` gives ``u = C⁻¹c - C⁻¹N v``: the LCP
        ``w = u``, ``z = v``, ``M = -C⁻¹N``, ``q = C⁻¹c``.

        Returns
        -------
        Reduction
            ``.lcp`` and the maps of points back and forth.

        Raises
        ------
        ProblemError
            If no nonsingular complementary basis exists (or the given one is singular).
        """
        if basis is None:
            basis = self.find_basis()
            if basis is None:
                raise ProblemError(
                    "no nonsingular complementary basis was found for this HLCP, so it has no LCP form; "
                    "use pympc.enumerate_solutions or the MILP cross-check instead."
                )
        basis = np.asarray(basis, bool)
        if basis.shape != (self.n,):
            raise ProblemError(f"basis must be a boolean vector of length {self.n}.")
        C = self.column_matrix(basis)
        N = np.where(basis[None, :], self.B, self.A)
        lu, piv, rc = lu_rcond(C)
        if rc <= 1e-14:
            raise ProblemError("basis gives a singular column-representative matrix; choose another basis.")
        sol = _lapack.dgetrs(lu, piv, np.column_stack([N, self.c]))[0]
        return Reduction(self, LCP(-sol[:, :-1], sol[:, -1], name=self.name), basis)

    def save(self, path):
        """Save to ``.npz`` (arrays ``A``, ``B``, ``c``)."""
        np.savez(path, kind="HLCP", A=self.A, B=self.B, c=self.c, name=str(self.name or ""))


class LCP(_Problem):
    """Linear complementarity problem ``w = M z + q``, ``0 <= z ⊥ w >= 0``.

    Parameters
    ----------
    M : array_like, shape (n, n)
    q : array_like, shape (n,)
    name : str, optional

    Examples
    --------
    >>> import pympc
    >>> r = pympc.solve(pympc.LCP([[2.0, 1.0], [1.0, 2.0]], [-5.0, -6.0]))
    >>> r.status.name, r.z.round(6)
    ('SOLVED', array([1.333333, 2.333333]))
    """

    def __init__(self, M, q, *, name=None, comment=None):
        self.M = as_matrix("M", M)
        n = self.M.shape[0]
        if self.M.shape != (n, n):
            raise ProblemError(f"M must be square, got shape {self.M.shape}.")
        self.q = as_vector("q", q, n)
        check_magnitudes("M", self.M)
        check_magnitudes("q", self.q)
        self.name = name
        self.comment = comment
        self.M.flags.writeable = False
        self.q.flags.writeable = False

    @property
    def n(self):
        """Number of complementarity pairs."""
        return self.q.size

    def scale(self):
        """Magnitude of the data, used to scale tolerances."""
        return max(1.0, float(np.abs(self.q).max()))

    def residual(self, z, w=None):
        """The :class:`Residual` of ``z`` (``w`` defaults to ``M z + q``)."""
        z = np.asarray(z, float)
        mzq = self.M @ z + self.q
        w = mzq if w is None else np.asarray(w, float)
        eq = float(np.abs(w - mzq).max())
        neg = float(max(0.0, -min(z.min(), w.min())))
        comp = float(np.abs(z * w).max())
        return Residual(eq, neg, comp)

    def relative_residual(self, z, w=None):
        """The componentwise relative :class:`Residual` of ``z`` (``w`` defaults to ``M z + q``);
        see :meth:`HLCP.relative_residual` (the LCP is ``HLCP(I, -M, q)``)."""
        z = _point("z", z, self.n)
        w = self.M @ z + self.q if w is None else _point("w", w, self.n)
        return Residual(*lcp_relative_residual(self.M, self.q, z, w))

    def is_solution(self, z, w=None, tol=1e-9):
        """True if ``z`` (and ``w``) solve the problem within ``tol`` (see :meth:`relative_residual`;
        rounding noise is forgiven as in :meth:`HLCP.is_solution`)."""
        z = _point("z", z, self.n)
        w = self.M @ z + self.q if w is None else _point("w", w, self.n)
        if max(lcp_relative_residual(self.M, self.q, z, w)) <= tol:
            return True
        return self.to_hlcp().is_solution(w, z, tol)

    def to_hlcp(self):
        """The same problem as ``HLCP(I, -M, q)`` with ``x = w`` and ``y = z``."""
        return HLCP(np.eye(self.n), -self.M, self.q, name=self.name)

    def save(self, path):
        """Save to ``.npz`` (arrays ``M``, ``q``)."""
        np.savez(path, kind="LCP", M=self.M, q=self.q, name=str(self.name or ""))


def load_problem(path):
    """Load an :class:`LCP` or :class:`HLCP` saved with ``.save`` (``.npz``).

    Examples
    --------
    >>> import pympc, tempfile, os
    >>> p = pympc.LCP([[1.0]], [-1.0])
    >>> f = os.path.join(tempfile.mkdtemp(), "p.npz"); p.save(f)
    >>> pympc.load_problem(f).M
    array([[1.]])
    """
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ProblemError(f"could not read problem file {path!r}: {exc}") from None
    with data:
        kind = str(data["kind"]) if "kind" in data else ("LCP" if "M" in data else "HLCP")
        name = str(data["name"]) if "name" in data else None
        try:
            if kind == "LCP":
                return LCP(data["M"], data["q"], name=name or None)
            if kind == "HLCP":
                return HLCP(data["A"], data["B"], data["c"], name=name or None)
        except KeyError as exc:
            raise ProblemError(f"problem file {path!r} lacks array {exc}; it needs M, q (LCP) or A, B, c (HLCP).") from None
    raise ProblemError(f"problem file {path!r} has unknown kind {kind!r}; expected 'LCP' or 'HLCP'.")
