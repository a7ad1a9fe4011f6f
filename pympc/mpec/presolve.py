"""Presolve of a :class:`~pympc.mpec.nlp.CompiledNLP`: variables that linear equality rows pin alone.

A linear equality row with one free variable left (``c·u_k = b``: a coordinate a slot holds at 0, the
first node of an element equal to the last stage of the one before, a velocity that is zero in a stick
phase) determines that variable; :class:`Presolved` fixes it at ``b / c``, drops the row and repeats
(a fixed variable is a constant of the rows it is in).  Then a linear equality row left with two variables
(``a u_k + b u_j = c``: the first node of an element and the last stage before it, an element's start time and
length) that holds at the start point makes the one without bounds an affine function of the other
(*aggregation*: the rows it is in see ``u_k = -(b/a) u_j + c/a``, the chain rule carries the derivatives) and is
left out; a row that does not hold at the start is kept (aggregating it would move IPOPT's start point: on the
slider-crank's 0.5 s record that doubled the iterations of a solve).  IPOPT then sees the rest only: the same problem
(every dropped row holds exactly at the fixed values, every other row is evaluated at them), with fewer
columns and rows in its KKT system.  A variable whose pinned value breaks its bounds is not fixed (IPOPT
then meets the contradiction as before); a row whose variables are all fixed and that does not hold is
reported in ``violated``, one that holds is dropped.

On the FESD fit of the 30 s oscillator record (``benchmarks/fesd_speed.py``) the fixed ones are the slot's normal
coordinate and velocity, their continuity rows, the element start times at the sample times and the stuck
velocities; the aggregated ones the other nodes' continuity, start times and equal element lengths: 17 195 × 21 586
→ 9 159 × 13 550, the same IPOPT iterations and estimate, 40 % less IPOPT time.
"""

from __future__ import annotations

import numpy as np

from .nlp import _unique_pairs

__all__ = ["Presolved"]


class Presolved:
    """The NLP ``nlp`` (a :class:`~pympc.mpec.nlp.CompiledNLP`) with the variables its linear equality rows pin
    alone fixed, with ``aggregate`` the unbounded variables of two-variable rows that hold at the start made
    functions of the other, those rows left out; the cyipopt interface over the remaining variables and rows
    (``full(x)``: every variable of ``nlp``; ``load(x)`` writes them into the model).

    Attributes
    ----------
    nlp : CompiledNLP
    n, m : int
        Free variables and rows left.
    fixed : array of int
        The columns of ``nlp`` fixed, in the order they were found.
    aggregated : list of int
        The columns of ``nlp`` made affine functions of others.
    violated : list of pyomo ConstraintData
        ``nlp.violated`` and the dropped rows that do not hold at the fixed values.
    """

    def __init__(self, nlp, tol=1e-9, aggregate=True):
        self.nlp = nlp
        N, M = nlp.n, nlp.m
        value = np.zeros(N)
        free = np.ones(N, bool)
        keep = np.ones(M, bool)
        self.violated = list(nlp.violated)
        # the pure linear equality rows, as a sparse matrix (duplicates summed)
        from scipy.sparse import csr_matrix
        linear = nlp.linear_rows() & (nlp.cl == nlp.cu)
        r, c, v = nlp._lin
        pick = linear[r] & (v != 0)
        A = csr_matrix((v[pick], (r[pick], c[pick])), shape=(M, N))
        A.sum_duplicates()
        A.eliminate_zeros()
        At = A.tocsc()
        # the loops below run over rows of a few entries: Python lists, not NumPy's per-call overhead on tiny arrays
        ptr, idx, dat = A.indptr.tolist(), A.indices.tolist(), A.data.tolist()
        tptr, tidx = At.indptr.tolist(), At.indices.tolist()
        cl, lb, ub = nlp.cl.tolist(), nlp.lb.tolist(), nlp.ub.tolist()
        value, free, keep = value.tolist(), free.tolist(), keep.tolist()
        left = np.diff(A.indptr)
        queue = np.flatnonzero(linear & (left <= 1)).tolist()
        left = left.tolist()
        fixed = []
        while queue:
            i = queue.pop()
            if not keep[i]:
                continue
            on, fixed_sum = [], 0                        # (summed as sum() would: from the int 0)
            for j in range(ptr[i], ptr[i + 1]):
                if free[idx[j]]:
                    on.append(j)
                else:
                    fixed_sum += dat[j] * value[idx[j]]
            if len(on) > 1:
                continue
            rest = cl[i] - fixed_sum
            if not on:                                  # every variable fixed: the row holds or not
                keep[i] = False
                if abs(rest) > tol * (1.0 + abs(cl[i])):
                    self.violated.append(nlp.constraints_data[i])
                continue
            k, ck = idx[on[0]], dat[on[0]]
            x = rest / ck
            if not (lb[k] <= x <= ub[k]):               # left to IPOPT, which meets the contradiction
                continue
            value[k], free[k], keep[i] = x, False, False
            fixed.append(k)
            for j in tidx[tptr[k]:tptr[k + 1]]:
                left[j] -= 1
                if keep[j] and left[j] <= 1:
                    queue.append(j)
        value, free, keep = np.array(value, float), np.array(free, bool), np.array(keep, bool)
        self.fixed = np.array(fixed, int)
        # u_c = alpha[c] u_rep[c] + beta[c]: a free column its own representative, a fixed one a constant
        rep = np.where(free, np.arange(N), -1)
        alpha, beta = free.astype(float), np.where(free, 0.0, value)
        self.aggregated = []
        if aggregate:
            self._aggregate(A, linear, keep, free, rep, alpha, beta)
        own = free & (rep == np.arange(N))
        self._cols = np.flatnonzero(own)
        self._rows = np.flatnonzero(keep)
        self.n, self.m = self._cols.size, self._rows.size
        self.lb, self.ub = nlp.lb[own], nlp.ub[own]
        self.cl, self.cu = nlp.cl[keep], nlp.cu[keep]
        newcol = np.full(N, -1)
        newcol[self._cols] = np.arange(self.n)
        xcol = np.where(free, newcol[np.maximum(rep, 0)], -1)
        newrow = np.full(M, -1)
        newrow[self._rows] = np.arange(self.m)
        # the free columns as positions (the callbacks index with them: a mask is read whole at each call)
        self._at = np.flatnonzero(free)
        self._xcol, self._alpha, self._beta = xcol[self._at], alpha[self._at], beta
        # the Jacobian and Hessian entries of the kept rows and free columns, moved to the representatives
        # (chain rule: J_x = J_u P, H_x = P^T H_u P, P the columns' alpha), duplicates summed
        jr, jc = nlp.jacobianstructure()
        self._jat = np.flatnonzero(keep[jr] & free[jc])
        rows, cols = newrow[jr[self._jat]], xcol[jc[self._jat]]
        self._jfactor = alpha[jc[self._jat]]
        self._jrow, self._jcol, self._jslot = _unique_pairs(rows, cols, self.n)
        hr, hc = nlp.hessianstructure()
        self._hat = np.flatnonzero(free[hr] & free[hc])
        a, b = hr[self._hat], hc[self._hat]
        p, q = xcol[a], xcol[b]
        self._hfactor = alpha[a] * alpha[b] * np.where((a != b) & (p == q), 2.0, 1.0)
        self._hrow, self._hcol, self._hslot = _unique_pairs(np.maximum(p, q), np.minimum(p, q), self.n)

    def _aggregate(self, A, linear, keep, free, rep, alpha, beta):
        """Linear equality rows left with two representatives that hold at the start point: the representative
        without bounds and without columns mapped onto it yet is made an affine function of the other
        (``u_k = alpha u_j + beta``), the row left out."""
        nlp = self.nlp
        u0 = np.where(free, nlp.start(), beta)
        gap = np.abs(A @ u0 - nlp.cl)
        # the rows that hold at the start: gap <= 1e-12 (1 + the largest |a u| of the row), all rows at once
        terms = np.abs(A.data * u0[A.indices])
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        largest = np.zeros(A.shape[0])
        np.maximum.at(largest, rows, terms)
        holding = ~(gap > 1e-12 * (1.0 + largest))
        ptr, idx, dat = A.indptr.tolist(), A.indices.tolist(), A.data.tolist()
        cl = nlp.cl.tolist()
        lb, ub, free = nlp.lb.tolist(), nlp.ub.tolist(), free.tolist()
        reps, alphas, betas = rep.tolist(), alpha.tolist(), beta.tolist()
        has_dep = [False] * len(free)
        for i in np.flatnonzero(linear & keep & holding).tolist():
            form, const = {}, 0.0
            for j in range(ptr[i], ptr[i + 1]):
                c, a = idx[j], dat[j]
                if free[c]:
                    r = reps[c]
                    form[r] = form.get(r, 0.0) + a * alphas[c]
                const += a * betas[c]
            form = {k: a for k, a in form.items() if a != 0.0}
            if len(form) != 2:
                continue
            pair = tuple(form)
            for k, j in (pair, pair[::-1]):
                if lb[k] <= -1e19 and ub[k] >= 1e19 and not has_dep[k]:
                    reps[k], alphas[k], betas[k] = j, -form[j] / form[k], (cl[i] - const) / form[k]
                    has_dep[j] = True
                    keep[i] = False
                    self.aggregated.append(k)
                    break
        rep[:], alpha[:], beta[:] = reps, alphas, betas

    def full(self, x):
        """The vector of ``nlp``'s variables: ``x`` (the representatives) mapped to every free column, the
        fixed values in the others."""
        u = self._beta.copy()
        u[self._at] += self._alpha * x[self._xcol]
        return u

    # -- the cyipopt interface ----------------------------------------------------
    def objective(self, x):
        return self.nlp.objective(self.full(x))

    def gradient(self, x):
        g = self.nlp.gradient(self.full(x))
        return np.bincount(self._xcol, self._alpha * g[self._at], minlength=self.n)

    def constraints(self, x):
        return self.nlp.constraints(self.full(x))[self._rows]

    def jacobianstructure(self):
        return self._jrow, self._jcol

    def jacobian(self, x):
        vals = self.nlp.jacobian(self.full(x))[self._jat] * self._jfactor
        return np.bincount(self._jslot, vals, minlength=self._jrow.size)

    def hessianstructure(self):
        return self._hrow, self._hcol

    def hessian(self, x, lagrange, obj_factor):
        lam = np.zeros(self.nlp.m)
        lam[self._rows] = lagrange
        vals = self.nlp.hessian(self.full(x), lam, obj_factor)[self._hat] * self._hfactor
        return np.bincount(self._hslot, vals, minlength=self._hrow.size)

    # -- helpers ------------------------------------------------------------------
    def start(self):
        """``nlp.start()`` in the free columns."""
        return self.nlp.start()[self._cols]

    def load(self, x):
        """Write ``x`` and the fixed values into the model's variables."""
        self.nlp.load(self.full(x))
