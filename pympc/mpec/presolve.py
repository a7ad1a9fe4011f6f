"""Presolve of a :class:`~pympc.mpec.nlp.CompiledNLP`: variables that linear equality rows pin alone.

A linear equality row with one free variable left (``c·u_k = b``: a coordinate a slot holds at 0, the
first node of an element equal to the last stage of the one before, a velocity that is zero in a stick
phase) determines that variable; :class:`Presolved` fixes it at ``b / c``, drops the row and repeats
(a fixed variable is a constant of the rows it is in).  IPOPT then sees the rest only: the same problem
(every dropped row holds exactly at the fixed values, every other row is evaluated at them), with fewer
columns and rows in its KKT system.  A variable whose pinned value breaks its bounds is not fixed (IPOPT
then meets the contradiction as before); a row whose variables are all fixed and that does not hold is
reported in ``violated``, one that holds is dropped.

On the FESD fit of the 30 s oscillator record (``benchmarks/fesd_speed.py``): the slot's normal coordinate
and velocity, their continuity rows, the element start times of the sample times and the stuck velocities.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Presolved"]


class Presolved:
    """The NLP ``nlp`` (a :class:`~pympc.mpec.nlp.CompiledNLP`) with the variables its linear equality rows pin
    alone fixed and those rows left out; the cyipopt interface over the remaining variables and rows.

    Attributes
    ----------
    nlp : CompiledNLP
    n, m : int
        Free variables and rows left.
    fixed : array of int
        The columns of ``nlp`` fixed, in the order they were found.
    violated : list of pyomo ConstraintData
        ``nlp.violated`` and the dropped rows that do not hold at the fixed values.
    """

    def __init__(self, nlp, tol=1e-9):
        self.nlp = nlp
        N, M = nlp.n, nlp.m
        value = np.zeros(N)
        free = np.ones(N, bool)
        keep = np.ones(M, bool)
        self.violated = list(nlp.violated)
        # the pure linear equality rows, as a sparse matrix (duplicates summed)
        from scipy.sparse import csr_matrix
        linear = np.array([p.nl is None and not p.qc.size for p in nlp.cons], bool) & (nlp.cl == nlp.cu)
        r, c, v = nlp._lin
        pick = linear[r] & (v != 0)
        A = csr_matrix((v[pick], (r[pick], c[pick])), shape=(M, N))
        A.sum_duplicates()
        A.eliminate_zeros()
        At = A.tocsc()
        left = np.diff(A.indptr)
        queue = np.flatnonzero(linear & (left <= 1)).tolist()
        fixed = []
        while queue:
            i = queue.pop()
            if not keep[i]:
                continue
            cols, coef = A.indices[A.indptr[i]:A.indptr[i + 1]], A.data[A.indptr[i]:A.indptr[i + 1]]
            on = free[cols]
            n_on = int(on.sum())
            if n_on > 1:
                continue
            rest = float(nlp.cl[i] - coef[~on] @ value[cols[~on]])
            if n_on == 0:                               # every variable fixed: the row holds or not
                keep[i] = False
                if abs(rest) > tol * (1.0 + abs(float(nlp.cl[i]))):
                    self.violated.append(nlp.constraints_data[i])
                continue
            k, ck = int(cols[on][0]), float(coef[on][0])
            x = rest / ck
            if not (nlp.lb[k] <= x <= nlp.ub[k]):         # left to IPOPT, which meets the contradiction
                continue
            value[k], free[k], keep[i] = x, False, False
            fixed.append(k)
            for j in At.indices[At.indptr[k]:At.indptr[k + 1]].tolist():
                left[j] -= 1
                if keep[j] and left[j] <= 1:
                    queue.append(j)
        self.fixed = np.array(fixed, int)
        self._free, self._keep, self._value = free, keep, value
        self._cols = np.flatnonzero(free)
        self._rows = np.flatnonzero(keep)
        self.n, self.m = self._cols.size, self._rows.size
        self.lb, self.ub = nlp.lb[free], nlp.ub[free]
        self.cl, self.cu = nlp.cl[keep], nlp.cu[keep]
        newcol = np.full(N, -1)
        newcol[self._cols] = np.arange(self.n)
        newrow = np.full(M, -1)
        newrow[self._rows] = np.arange(self.m)
        jr, jc = nlp.jacobianstructure()
        self._jmask = keep[jr] & free[jc]
        self._jstruct = (newrow[jr[self._jmask]], newcol[jc[self._jmask]])
        hr, hc = nlp.hessianstructure()
        self._hmask = free[hr] & free[hc]
        self._hstruct = (newcol[hr[self._hmask]], newcol[hc[self._hmask]])

    def full(self, x):
        """The vector of ``nlp``'s variables: ``x`` in the free columns, the fixed values in the others."""
        u = self._value.copy()
        u[self._cols] = x
        return u

    # -- the cyipopt interface ----------------------------------------------------
    def objective(self, x):
        return self.nlp.objective(self.full(x))

    def gradient(self, x):
        return self.nlp.gradient(self.full(x))[self._cols]

    def constraints(self, x):
        return self.nlp.constraints(self.full(x))[self._rows]

    def jacobianstructure(self):
        return self._jstruct

    def jacobian(self, x):
        return self.nlp.jacobian(self.full(x))[self._jmask]

    def hessianstructure(self):
        return self._hstruct

    def hessian(self, x, lagrange, obj_factor):
        lam = np.zeros(self.nlp.m)
        lam[self._rows] = lagrange
        return self.nlp.hessian(self.full(x), lam, obj_factor)[self._hmask]

    # -- helpers ------------------------------------------------------------------
    def start(self):
        """``nlp.start()`` in the free columns."""
        return self.nlp.start()[self._cols]

    def load(self, x):
        """Write ``x`` and the fixed values into the model's variables."""
        self.nlp.load(self.full(x))
