"""Numba kernel of Lemke's method with the lexicographic minimum-ratio rule.

The full tableau of ``w - M z - d z0 = q`` is ``[ I | -M | -d | q ]``; its
``w`` block always holds the inverse of the current basis, which is what the
lexicographic rule compares.  The kernel keeps it condensed (non-basic
columns only), which halves the work of a pivot.
"""

import numpy as np
from numba import njit, types

# numba's own LAPACK wrapper (what its np.linalg.solve calls), private: a numba without it loses solve_hlcp_default
try:
    from numba.np.linalg import _LAPACK, F_INT_nptype, ensure_lapack
except ImportError:         # pragma: no cover - depends on the numba release
    _LAPACK, F_INT_nptype = None, np.int32

from .._linalg import lu_solve, pivot_row, rcond_1, subtract_row

KERNEL_SOLVED = 0
KERNEL_RAY = 1
KERNEL_PIVOT_LIMIT = 2
KERNEL_NUMERICAL = 3
KERNEL_SINGULAR = 4

#: Lemke's default options (:data:`pympc.complementarity.lemke.LEMKE_OPTIONS`), constants of the kernels that
#: take no options: pivot limit ``MAX_PIVOTS_BASE + MAX_PIVOTS_PER_PAIR * n``, pivot and verification tolerances
MAX_PIVOTS_BASE = 1000
MAX_PIVOTS_PER_PAIR = 100
PIV_TOL = 1e-10
VERIFY_TOL = 1e-9
#: tie tolerance of the ratio tests, and sweeps of Ruiz's equilibration (it stops earlier once settled)
TIE_TOL = 1e-12
RUIZ_SWEEPS = 20
#: an LCP's equilibration stops at the first balanced sweep (see :func:`_ruiz_step`) when the largest of its
#: data's nonzero row and column norms (of M) is at most this many times the smallest (:func:`_narrow_spread`)
RUIZ_EARLY_SPREAD = 256.0


@njit(cache=True, nogil=True)
def _lex_rows(T, s, cand, ncand, n, tie_tol, colpos, rowpos, initial, d, live):
    """Reduce the candidate rows by the lexicographic rule over the columns of B⁻¹.

    The column of a basic ``w_j`` is the unit vector at its row: its values are 0 but at that row
    (``1/div > 0``, divisors being positive), so it removes that row if it is a candidate (unless
    ``1/div <= tie_tol``) and nothing else — in O(1), with no pass over the candidates.  A degenerate
    vertex with many tied rows (a diagonal M, equal q) then costs O(n) per pivot, not O(n · ncand)
    strided reads.  Same choice as the plain rule, always.  ``live`` is a zeroed integer array of
    length n (left zeroed)."""
    if ncand <= 1:
        return cand[0]
    for k in range(ncand):
        live[cand[k]] = 1
    size = ncand   # entries of cand in their order, removed ones (live 0) included until compacted
    for j in range(n):
        if ncand <= 1:
            break
        c = colpos[j]
        if c < 0:
            i = rowpos[j]
            if live[i] == 1:
                div = d[i] if initial else T[i, s]
                if not (1.0 / div <= tie_tol):
                    live[i] = 0
                    ncand -= 1
            continue
        if size > ncand:
            keep = 0
            for k in range(size):
                i = cand[k]
                if live[i] == 1:
                    cand[keep] = i
                    keep += 1
            size = keep
        best = np.inf
        for k in range(size):
            i = cand[k]
            v = T[i, c] / (d[i] if initial else T[i, s])
            if v < best:
                best = v
        keep = 0
        for k in range(size):
            i = cand[k]
            if T[i, c] / (d[i] if initial else T[i, s]) <= best + tie_tol:
                cand[keep] = i
                keep += 1
            else:
                live[i] = 0
        ncand = keep
        size = keep
    r = -1
    for k in range(size):
        i = cand[k]
        if live[i] == 1 and r < 0:
            r = i
        live[i] = 0
    return r


@njit(cache=True, nogil=True)
def lemke_kernel(M, q, d, max_pivots, piv_rel, tie_tol):
    """Run Lemke's method on LCP(M, q) with covering vector ``d > 0``.

    The tableau is condensed: it keeps only the ``n + 1`` non-basic columns
    and the right-hand side (``n x (n + 2)``); the columns of ``B⁻¹`` needed
    by the lexicographic rule are read from it (a basic ``w_j`` has a unit
    column).  Variables: ``0..n-1`` are w, ``n..2n-1`` z, ``2n`` is z0.

    Returns ``(code, pivots, z, w, enter_log, leave_log)``; the logs hold the
    variables entering and leaving at each pivot.
    """
    n = q.shape[0]
    T = np.empty((n, n + 2))
    scale = 1.0
    for i in range(n):
        scale = max(scale, d[i])
        for j in range(n):
            T[i, j] = -M[i, j]
            scale = max(scale, abs(M[i, j]))
        T[i, n] = -d[i]
        T[i, n + 1] = q[i]
    return lemke_tableau(T, d, max_pivots, piv_rel * scale, tie_tol)


@njit(cache=True, nogil=True)
def lemke_tableau(T, d, max_pivots, piv_tol, tie_tol):
    """Lemke's method on the condensed tableau ``T = [-M | -d | q]`` (overwritten), the body of
    :func:`lemke_kernel` (``piv_tol`` is the absolute pivot tolerance); returns like it."""
    n = T.shape[0]
    nv = 2 * n + 1
    rhs = n + 1
    # few allocations carved into the work arrays (an allocation costs more than these small loops);
    # the pivot log [entering | leaving] has room for L pivots, doubled when full (up to max_pivots + 1): room
    # for the limit at once was a large allocation (tens of kB, malloc's slow path) on every call
    L = min(max_pivots + 1, 4 * n + 16)
    log = np.empty(2 * L, np.int64)
    # [colpos (nv) | rowpos (nv) | basis (n) | cand (n) | nzcol (n + 2) | live (n)] and [z | w | prow (n + 2) |
    # ratio (n)], read by offsets (each view costs atomic reference counts)
    ints = np.empty(2 * nv + 4 * n + 2, np.int64)
    RP, BS = nv, 2 * nv
    CD = BS + n
    NZ = CD + n
    LV = NZ + n + 2
    for i in range(n):
        ints[LV + i] = 0
    floats = np.zeros(5 * n + 2)
    PR, RA = 2 * n, 3 * n + 2
    qmin = T[0, rhs]
    for i in range(n):
        if T[i, rhs] < qmin:
            qmin = T[i, rhs]
    if qmin >= 0.0:
        for i in range(n):
            floats[n + i] = T[i, rhs]
        return KERNEL_SOLVED, 0, floats[:n], floats[n:2 * n], log[:0], log[L:L]

    # condensed tableau [-M | -d | q]: column j < n holds z_j, column n holds z0
    for j in range(2 * nv):
        ints[j] = -1
    for i in range(n):
        ints[BS + i] = i
        ints[RP + i] = i
    for j in range(n):
        ints[n + j] = j
    ints[2 * n] = n

    # Initial pivot: z0 enters at the level that makes every rhs >= 0; the
    # leaving row is the lexicographic minimum of (q_i, e_i) / d_i.
    best = np.inf
    for i in range(n):
        v = T[i, rhs] / d[i]
        if v < best:
            best = v
    ncand = 0
    for i in range(n):
        if T[i, rhs] / d[i] <= best + tie_tol * (1.0 + abs(best)):
            ints[CD + ncand] = i
            ncand += 1
    # (a call passing arrays costs atomic reference counts: one candidate, the usual case, needs none)
    r = ints[CD] if ncand == 1 else _lex_rows(T, n, ints[CD:CD + n], ncand, n, tie_tol, ints[:nv], ints[RP:RP + nv],
                                              True, d, ints[LV:LV + n])
    entering = 2 * n
    pivots = 0
    code = KERNEL_PIVOT_LIMIT
    m = n + 2
    done = False
    while not done:
        if pivots == L and L <= max_pivots:     # the log is full: room for more
            grown = np.empty(4 * L if 2 * L <= max_pivots + 1 else 2 * (max_pivots + 1), np.int64)
            L2 = grown.shape[0] // 2
            grown[:L] = log[:L]
            grown[L2:L2 + L] = log[L:]
            log = grown
            L = L2
        # the pivots while the log has room: no array is assigned in this loop (an array assigned in a loop
        # costs atomic reference counts on every pass)
        while True:
            s = ints[entering]
            # the exchange pivot at (r, s), written here (a call passing the arrays costs atomic reference counts,
            # about as much as the arithmetic at n = 20).  A sparse pivot row (at most half its entries nonzero)
            # changes only the columns where it is nonzero (nzcol), so it costs its nonzeros per row, not the
            # width; a dense one updates whole rows in a plain loop (which vectorizes).  An entry skipped would
            # have become T[i, j] - f * 0.0, itself: the same tableau bit for bit.
            p = T[r, s]
            nnz = 0
            for j in range(m):
                v = T[r, j] / p
                floats[PR + j] = v
                nnz += v != 0.0
            floats[PR + s] = 1.0 / p
            if 2 * nnz > m + 2:     # dense: more than half the entries but column s's are nonzero
                for i in range(n):
                    if i != r:
                        f = T[i, s]
                        if f != 0.0:
                            for j in range(m):
                                T[i, j] -= f * floats[PR + j]
                            T[i, s] = -f / p
            else:
                nnz = 0
                for j in range(m):
                    if floats[PR + j] != 0.0 and j != s:
                        ints[NZ + nnz] = j
                        nnz += 1
                for i in range(n):
                    if i != r:
                        f = T[i, s]
                        if f != 0.0:
                            for k in range(nnz):
                                j = ints[NZ + k]
                                T[i, j] -= f * floats[PR + j]
                            T[i, s] = -f / p
            for j in range(m):
                T[r, j] = floats[PR + j]
            leaving = ints[BS + r]
            ints[BS + r] = entering
            ints[RP + entering] = r
            ints[entering] = -1
            ints[RP + leaving] = -1
            ints[leaving] = s
            if pivots < L:
                log[pivots] = entering
                log[L + pivots] = leaving
            pivots += 1
            if leaving == 2 * n:
                code = KERNEL_SOLVED
                done = True
                break
            if pivots > max_pivots:
                done = True
                break
            entering = leaving + n if leaving < n else leaving - n
            s = ints[entering]
            # minimum ratio over rows with a positive entry in the entering column (each ratio computed once)
            best = np.inf
            for i in range(n):
                a = T[i, s]
                if a > piv_tol:
                    v = T[i, rhs] / a
                    floats[RA + i] = v
                    if v < best:
                        best = v
                else:
                    floats[RA + i] = np.nan       # not a candidate (NaN passes no comparison)
            if best == np.inf:
                code = KERNEL_RAY
                done = True
                break
            ncand = 0
            z0row = -1
            lim = best + tie_tol * (1.0 + abs(best))
            for i in range(n):
                if floats[RA + i] <= lim:
                    ints[CD + ncand] = i
                    ncand += 1
                    if ints[BS + i] == 2 * n:
                        z0row = i
            if z0row >= 0:
                r = z0row
            else:
                r = ints[CD] if ncand == 1 else _lex_rows(T, s, ints[CD:CD + n], ncand, n, tie_tol, ints[:nv],
                                                          ints[RP:RP + nv], False, d, ints[LV:LV + n])
            if pivots == L and L <= max_pivots:
                break
    for i in range(n):
        v = T[i, rhs]
        if not np.isfinite(v):
            code = KERNEL_NUMERICAL
        if v < 0.0 and v > -tie_tol * (1.0 + abs(qmin)):
            v = 0.0  # rounding below zero of a basic variable at a degenerate vertex
        b = ints[BS + i]
        if b < n:
            floats[n + b] = v
        elif b < 2 * n:
            floats[b - n] = v
    m = min(pivots, max_pivots + 1)
    return code, pivots, floats[:n], floats[n:2 * n], log[:m], log[L:L + m]


@njit(cache=True, nogil=True)
def _singular_diagonal(D):
    """Is the smallest |D_ii| below 1e-12 times the largest (a numerically singular triangular/diagonal factor)?"""
    dmin = np.inf
    dmax = 0.0
    for i in range(D.shape[0]):
        v = abs(D[i, i])
        dmin = min(dmin, v)
        dmax = max(dmax, v)
    return not dmin > 1e-12 * dmax


@njit(cache=True, nogil=True)
def _singular_result(n):
    e = np.zeros(0, np.int64)
    return KERNEL_SINGULAR, 0, np.zeros(n), np.zeros(n), e, e


@njit(cache=True, nogil=True)
def solve_hlcp_kernel(A, B, c, basis, S, lu, d, max_pivots, piv_rel, tie_tol):
    """Lemke on the LCP form ``S = [M | q]`` of HLCP(A, B, c) through ``basis``;
    the point mapped back to (x, y).

    ``lu`` holds the LU factors of the basis matrix; if their pivots show it
    (numerically) singular, nothing is solved and ``KERNEL_SINGULAR`` returned.
    """
    n = c.shape[0]
    if _singular_diagonal(lu):
        return _singular_result(n)
    M = np.ascontiguousarray(S[:, :n])
    q = np.ascontiguousarray(S[:, n])
    code, pivots, z, w, el, ll = lemke_kernel(M, q, d, max_pivots, piv_rel, tie_tol)
    x = np.empty(n)
    y = np.empty(n)
    for i in range(n):
        if basis[i]:
            x[i] = w[i]
            y[i] = z[i]
        else:
            x[i] = z[i]
            y[i] = w[i]
    return code, pivots, x, y, el, ll


@njit(cache=True, nogil=True)
def _lcp_form(A, B, c):
    """``LCP(-B/a, c/a)``, row by row: the LCP form of HLCP(A, B, c) with a diagonal A of nonzero entries ``a``."""
    n = c.shape[0]
    M = np.empty((n, n))
    q = np.empty(n)
    for i in range(n):
        a = A[i, i]
        q[i] = c[i] / a
        for j in range(n):
            M[i, j] = -B[i, j] / a
    return M, q


@njit(cache=True, nogil=True)
def solve_diagonal_hlcp_kernel(A, B, c, d, max_pivots, piv_rel, tie_tol):
    """Lemke on HLCP(A, B, c) with a diagonal A: ``M = -B/a``, ``q = c/a`` row by row (O(n²)).

    Returns like :func:`solve_hlcp_kernel`; ``KERNEL_SINGULAR`` if a diagonal entry is
    (numerically) zero.
    """
    n = c.shape[0]
    if _singular_diagonal(A):
        return _singular_result(n)
    M, q = _lcp_form(A, B, c)
    code, pivots, z, w, el, ll = lemke_kernel(M, q, d, max_pivots, piv_rel, tie_tol)
    return code, pivots, w, z, el, ll


#: the bits of a double but its sign: ``bits & _MAGNITUDE`` of finite doubles compare as their magnitudes do
#: (and integer maxima vectorize where floating-point ones, with their NaN rules, do not)
_MAGNITUDE = 0x7FFFFFFFFFFFFFFF


@njit(cache=True, nogil=True)
def _ruiz_scales_each(norms, scales):
    """One step of Ruiz's method on one side, norm by norm (see :func:`_ruiz_step`); True if no scale changed."""
    bits = norms.view(np.int64)
    sbits = scales.view(np.int64)
    done = True
    for i in range(norms.shape[0]):
        if norms[i] > 0.0:
            e = (bits[i] >> 52) & 0x7FF
            frac = bits[i] & 0xFFFFFFFFFFFFF
            k = -((e - 1022) >> 1)
            se = ((sbits[i] >> 52) & 0x7FF) + k
            if e != 0 and 45036 < frac < 4503599627325460 and 0 < se < 2047:
                if k != 0:
                    sbits[i] += k << 52
                    done = False
            else:
                f = 2.0 ** np.round(-0.5 * np.log2(norms[i]))
                if f != 1.0:
                    scales[i] *= f
                    done = False
    return done


@njit(cache=True, nogil=True)
def _ruiz_step(sweep, W, Wb, n, m, rhs, early=False):
    """After sweep ``sweep`` has measured the row and column norms: settle the scaling or take a step of
    Ruiz's method.  True if it is settled (nothing to change).

    ``W = [r (n) | s (m) | rn (n) | cn (m) | ...]`` holds the scales of the rows and columns and the norms
    (``Wb`` is its int64 view): one array, since each array passed to a compiled function costs atomic
    reference counts, which here cost more than the arithmetic at n = 20.

    Sweep 0 of balanced data (nonzero row and column norms between 1/8 and 8; the right-hand side, the last
    column if ``rhs``, not counted) is settled as it is, with the right-hand side brought to the size of the
    largest column; with ``early``, any sweep that finds the data so balanced settles it so (Ruiz's steps
    stop there instead of at their fixed point, norms between 1/2 and 2: a random SPD LCP(M, q) of 20–100
    pairs then takes two sweeps instead of four).  Otherwise each scale (a power of two) is multiplied by ``2 ** round(-log2(norm) / 2)``,
    the power of two that brings its nonzero norm nearest 1; settled when no scale changes.  The power is
    read from the bits of the norm where that is exact (a normal norm whose mantissa is not within 1e-11 of
    a power of two: there ``log2`` lies strictly between two integers) and added to the exponent of the
    scale: where every positive norm allows that (the usual case), in one branch-free pass (which
    vectorizes); otherwise norm by norm (:func:`_ruiz_scales_each`), with ``log2`` and ``round`` where the
    bits do not settle it (the same answer, bit for bit).
    """
    k0 = n + m                 # the norms [rn | cn]; the scales [r | s] are W[:k0]
    if sweep == 0 or early:
        balanced = True
        for k in range(k0, 2 * k0 - 1 if rhs else 2 * k0):
            v = W[k]
            if v > 0.0 and not 0.125 <= v <= 8.0:
                balanced = False
        if balanced:
            if rhs and W[2 * k0 - 1] > 0.0 and m > 1:
                big = 0.0
                for j in range(k0 + n, 2 * k0 - 1):
                    big = max(big, W[j])
                if big > 0.0:
                    W[k0 - 1] *= 2.0 ** np.round(np.log2(big / W[2 * k0 - 1]))
            return True
    other = False
    for i in range(k0):
        b = Wb[k0 + i]
        e = (b >> 52) & 0x7FF
        frac = b & 0xFFFFFFFFFFFFF
        se = ((Wb[i] >> 52) & 0x7FF) - ((e - 1022) >> 1)
        exact = (e != 0) & (e != 2047) & (45036 < frac) & (frac < 4503599627325460) & (0 < se) & (se < 2047)
        other |= (b > 0) & (not exact)     # a positive norm (NaN included) that the bits do not settle
    if other:
        return _ruiz_scales_each(W[k0:2 * k0], W[:k0])
    changed = 0
    for i in range(k0):
        b = Wb[k0 + i]
        k = -((((b >> 52) & 0x7FF) - 1022) >> 1) if b > 0 else 0     # (b > 0: a positive norm, not 0 or -0)
        Wb[i] += k << 52
        changed |= k
    return changed == 0


@njit(cache=True, nogil=True)
def _narrow_spread(W, k0, rhs):
    """Are the nonzero row and column norms that sweep 0 measured (``W[k0:2 k0]`` as :func:`_ruiz_step` reads
    them, the right-hand side's left out if ``rhs``) within a factor :data:`RUIZ_EARLY_SPREAD` of each other?
    Then an LCP's Ruiz steps may stop early (badly scaled data take them to their fixed point: stopping
    early there cost Lemke answers on random problems with rows and columns scaled by 10^±4)."""
    lo = np.inf
    hi = 0.0
    for k in range(k0, 2 * k0 - 1 if rhs else 2 * k0):
        v = W[k]
        if v > 0.0:
            lo = min(lo, v)
            hi = max(hi, v)
    return hi <= RUIZ_EARLY_SPREAD * lo


@njit(cache=True, nogil=True)
def ruiz_scaling(X, sweeps, rhs, early=False):
    """Row and column scalings (powers of two) that equilibrate ``X`` (Ruiz's method).

    After the scaling, every nonzero row and column of ``diag(r) X diag(s)`` has
    its largest magnitude within a factor of about two of 1.  Powers of two make the
    scaling exact in floating point; zero rows and columns keep scale 1.  Data whose
    row and column norms are already between 1/8 and 8 are left unscaled; if
    ``rhs``, the last column is a right-hand side: it is not counted in that test
    and is then brought to the size of the largest column (one factor).  With ``early`` (what LCP(M, q)
    takes), data whose norms are within :data:`RUIZ_EARLY_SPREAD` of each other stop at the first sweep
    that finds them so balanced (see :func:`_ruiz_step`).
    """
    n, m = X.shape
    W = np.ones(2 * (n + m))       # [r | s | rn | cn] (see _ruiz_step)
    Wb = W.view(np.int64)
    r, s = W[:n], W[n:n + m]
    rn0, cn0 = n + m, 2 * n + m
    buf = np.empty((1, m))
    bufb = buf.view(np.int64)
    for sweep in range(sweeps):
        for j in range(m):
            W[cn0 + j] = 0.0
        for i in range(n):
            ri = W[i]
            for j in range(m):
                buf[0, j] = X[i, j] * ri * W[n + j]
            rm = 0
            for j in range(m):    # magnitudes by their bits: integer maxima vectorize (see _MAGNITUDE)
                b = bufb[0, j] & _MAGNITUDE
                rm = max(rm, b)
                Wb[cn0 + j] = max(Wb[cn0 + j], b)
            Wb[rn0 + i] = rm
        if sweep == 0:
            early = early and _narrow_spread(W, n + m, rhs)
        if _ruiz_step(sweep, W, Wb, n, m, rhs, early):
            break
    return r, s


@njit(cache=True, nogil=True)
def _equilibrated_tableau(M, q, sweeps, T):
    """:func:`equilibrate_lcp` written straight into Lemke's condensed tableau ``T = [-M' | · | q']`` (column
    ``n``, the covering vector's, is left to the caller).

    Ruiz's sweeps on ``[M | q]`` (as :func:`ruiz_scaling` with ``rhs`` and ``early``) write ``-diag(r) M diag(s)`` into
    ``T`` as they measure it (from the second on), so the sweep that finds the scaling settled has built the
    tableau.  Returns ``(W, largest |M'|)``: ``W[4n + 2:5n + 2]`` and ``W[5n + 2:6n + 2]`` hold the scales
    ``rs, ss`` of :func:`equilibrate_lcp` (``z = ss z'``, ``w = w' / rs``).  (One work array read by offsets,
    no views: each array made or passed costs atomic reference counts.)
    """
    n = q.shape[0]
    W = np.ones(6 * n + 2)      # [r (n) | s (n + 1) | rn (n) | cn (n + 1)] as _ruiz_step takes them, then rs, ss
    Wb = W.view(np.int64)
    Tb, Mb = T.view(np.int64), M.view(np.int64)
    s0, rn0, cn0, rs0, ss0 = n, 2 * n + 1, 3 * n + 1, 4 * n + 2, 5 * n + 2
    settled = False
    early = False              # may the steps stop at a balanced sweep (data of a narrow spread)?
    written = False            # does T hold -diag(r) M diag(s) of the current scales?
    mmax = 0
    for sweep in range(sweeps):
        for j in range(n + 1):
            W[cn0 + j] = 0.0
        mmax = 0
        written = sweep > 0    # sweep 0 (unit scales) measures M itself and writes nothing
        for i in range(n):
            ri = W[i]
            rm = 0
            if written:
                for j in range(n):
                    T[i, j] = -(M[i, j] * ri) * W[s0 + j]
                for j in range(n):    # magnitudes by their bits, as in ruiz_scaling
                    b = Tb[i, j] & _MAGNITUDE
                    rm = max(rm, b)
                    Wb[cn0 + j] = max(Wb[cn0 + j], b)
            else:
                for j in range(n):
                    b = Mb[i, j] & _MAGNITUDE
                    rm = max(rm, b)
                    Wb[cn0 + j] = max(Wb[cn0 + j], b)
            Wb[rn0 + i] = rm
            mmax = max(mmax, rm)
            v = abs(q[i]) * ri * W[s0 + n]
            W[cn0 + n] = max(W[cn0 + n], v)
            W[rn0 + i] = max(W[rn0 + i], v)
        if sweep == 0:
            early = _narrow_spread(W, 2 * n + 1, True)
        if _ruiz_step(sweep, W, Wb, n, n + 1, True, early):
            settled = True
            break
    if not (settled and written):    # settled by sweep 0, or the sweeps ran out (the last step changed the scales)
        mmax = 0
        for i in range(n):
            for j in range(n):
                T[i, j] = -(M[i, j] * W[i]) * W[s0 + j]
                mmax = max(mmax, Tb[i, j] & _MAGNITUDE)
    Wb[rn0] = mmax                  # the largest |M'| from its bits
    mabs = W[rn0]
    g = W[s0 + n]
    for i in range(n):
        W[rs0 + i] = W[i] * g
        W[ss0 + i] = W[s0 + i] / g
        T[i, n + 1] = q[i] * W[rs0 + i]
    return W, mabs


@njit(cache=True, nogil=True)
def _abs_max(x, y):
    """``max(|x|, |y|)``, or ``inf`` if an entry is not finite."""
    m = 0.0
    for j in range(x.shape[0]):
        if not (np.isfinite(x[j]) and np.isfinite(y[j])):
            return np.inf
        m = max(m, abs(x[j]), abs(y[j]))
    return m


@njit(cache=True, nogil=True)
def relative_residual(A, B, c, x, y):
    """Componentwise (scale-invariant) residual of a point of HLCP(A, B, c).

    Each row is measured against the size of its own terms,
    ``t_i = sum_j |A_ij x_j| + |B_ij y_j| + |c_i|``; a variable's *weight* is the
    largest share of a row it carries (``max_i |A_ij x_j| / t_i``).  Returns
    ``(equation, negativity, complementarity)``: the largest relative row error,
    the largest weight of a negative variable, and the largest weight of the
    lighter member of a pair.  A variable whose column is zero is weighed by
    ``|v| / (1 + max|x, y|)`` instead.  All three are unchanged by positive
    row and column scalings of the problem.  A non-finite point gives ``inf``.
    """
    n = c.shape[0]
    t = np.empty(n)
    umax = _abs_max(x, y)
    if not umax < np.inf:
        return np.inf, np.inf, np.inf
    eq = 0.0
    for i in range(n):
        s = -c[i]
        a = abs(c[i])
        for j in range(n):
            s += A[i, j] * x[j] + B[i, j] * y[j]
            a += abs(A[i, j] * x[j]) + abs(B[i, j] * y[j])
        t[i] = a
        if s != 0.0:
            eq = max(eq, abs(s) / a if a > 0.0 else np.inf)
    neg = 0.0
    comp = 0.0
    for j in range(n):
        both = x[j] != 0.0 and y[j] != 0.0
        if not (both or x[j] < 0.0 or y[j] < 0.0):
            continue                  # no weight of column j counts (a nonnegative point with a zero member)
        wx = 0.0
        wy = 0.0
        zx = True
        zy = True
        for i in range(n):
            if A[i, j] != 0.0:
                zx = False
                if t[i] > 0.0:
                    wx = max(wx, abs(A[i, j] * x[j]) / t[i])
            if B[i, j] != 0.0:
                zy = False
                if t[i] > 0.0:
                    wy = max(wy, abs(B[i, j] * y[j]) / t[i])
        if zx:
            wx = abs(x[j]) / (1.0 + umax)
        if zy:
            wy = abs(y[j]) / (1.0 + umax)
        if x[j] < 0.0:
            neg = max(neg, wx)
        if y[j] < 0.0:
            neg = max(neg, wy)
        if x[j] != 0.0 and y[j] != 0.0:
            comp = max(comp, min(wx, wy))
    return eq, neg, comp


@njit(cache=True, nogil=True)
def lcp_relative_residual(M, q, z, w):
    """:func:`relative_residual` of LCP(M, q) as HLCP(I, -M, q) with ``x = w``, ``y = z`` (row-major loops)."""
    n = q.shape[0]
    u = np.empty(2 * n)
    for j in range(n):
        u[j] = z[j]
        u[n + j] = w[j]
    return _lcp_residual(M, q, u)


@njit(cache=True, nogil=True)
def _lcp_residual(M, q, u):
    """:func:`lcp_relative_residual` of the point ``z = u[:n]``, ``w = u[n:2n]`` (read by offsets: no views,
    each of which costs atomic reference counts)."""
    n = q.shape[0]
    umax = 0.0                # _abs_max(z, w)
    for j in range(2 * n):
        if not np.isfinite(u[j]):
            return np.inf, np.inf, np.inf
        umax = max(umax, abs(u[j]))
    t = np.empty(n)
    # the terms of a zero z_j are zero: the sums run over the others (the same sums, in the same order)
    cols = np.empty(n, np.int64)
    nnz = 0
    weights = False           # does a weight of z count (a negative z_j, or a pair with both members nonzero)?
    for j in range(n):
        if u[j] != 0.0:
            cols[nnz] = j
            nnz += 1
            weights = weights or u[j] < 0.0 or u[n + j] != 0.0
    eq = 0.0
    for i in range(n):
        s = u[n + i] - q[i]
        a = abs(u[n + i]) + abs(q[i])
        for k in range(nnz):
            v = M[i, cols[k]] * u[cols[k]]
            s -= v
            a += abs(v)
        t[i] = a
        if s != 0.0:
            eq = max(eq, abs(s) / a if a > 0.0 else np.inf)
    neg = 0.0
    comp = 0.0
    if not weights:
        for j in range(n):
            if u[n + j] < 0.0:
                neg = max(neg, abs(u[n + j]) / t[j] if t[j] > 0.0 else 0.0)
        return eq, neg, comp
    wz = np.zeros(n)  # weight of z_j: the largest share of a row it carries
    nz = np.zeros(n, np.bool_)  # column j of M has a nonzero
    for i in range(n):
        for j in range(n):
            if M[i, j] != 0.0:
                nz[j] = True
                if t[i] > 0.0:
                    wz[j] = max(wz[j], abs(M[i, j] * u[j]) / t[i])
    for j in range(n):
        ww = abs(u[n + j]) / t[j] if t[j] > 0.0 else 0.0
        if u[n + j] < 0.0:
            neg = max(neg, ww)
        if not nz[j]:
            wz[j] = abs(u[j]) / (1.0 + umax)
        if u[j] < 0.0:
            neg = max(neg, wz[j])
        if u[n + j] != 0.0 and u[j] != 0.0:
            comp = max(comp, min(ww, wz[j]))
    return eq, neg, comp




@njit(cache=True, nogil=True)
def equilibrate_lcp(M, q, sweeps):
    """LCP(M, q) with ``[M | q]`` equilibrated: ``(M', q', r, s)`` with ``M' = diag(r) M diag(s)``,
    ``q' = r q``; a point maps back by ``z = s z'``, ``w = w' / r``."""
    n = q.shape[0]
    X = np.empty((n, n + 1))
    X[:, :n] = M
    X[:, n] = q
    r, s = ruiz_scaling(X, sweeps, True, True)
    g = s[n]
    Ms = np.empty((n, n))
    rs = np.empty(n)
    ss = np.empty(n)
    for i in range(n):
        rs[i] = r[i] * g
        ss[i] = s[i] / g
        for j in range(n):
            Ms[i, j] = M[i, j] * r[i] * s[j]
    return Ms, q * rs, rs, ss


@njit(cache=True, nogil=True)
def equilibrate_hlcp(A, B, c, a_diagonal, sweeps):
    """HLCP(A, B, c) with rows and columns scaled by powers of two (Ruiz): ``(A', B', c', dx, dy)``
    with ``x = dx x'``, ``y = dy y'``.

    ``[A | B | c]`` is equilibrated as one matrix; for a diagonal ``A`` with a
    nonzero diagonal (the LCP form), ``[A⁻¹B | A⁻¹c]`` is, and ``A'`` is the
    identity (a row is then not held at scale 1 by its lone entry of ``A``).
    """
    n = c.shape[0]
    if a_diagonal:
        nonzero = True
        for i in range(n):
            if A[i, i] == 0.0:
                nonzero = False
        if nonzero:
            Ma = np.empty((n, n))
            qa = np.empty(n)
            for i in range(n):
                qa[i] = c[i] / A[i, i]
                for j in range(n):
                    Ma[i, j] = B[i, j] / A[i, i]
            Ms, qs, rs, ss = equilibrate_lcp(Ma, qa, sweeps)
            return np.eye(n), Ms, qs, 1.0 / rs, ss
    X = np.empty((n, 2 * n + 1))
    X[:, :n] = A
    X[:, n:2 * n] = B
    X[:, 2 * n] = c
    r, s = ruiz_scaling(X, sweeps, True)
    g = s[2 * n]
    As = np.empty((n, n))
    Bs = np.empty((n, n))
    cs = np.empty(n)
    for i in range(n):
        cs[i] = c[i] * r[i] * g
        for j in range(n):
            As[i, j] = A[i, j] * r[i] * s[j]
            Bs[i, j] = B[i, j] * r[i] * s[n + j]
    return As, Bs, cs, s[:n] / g, s[n:2 * n] / g


@njit(cache=True, nogil=True)
def gesv_rhs(B, c):
    """The right-hand sides ``[−B | c]`` of an HLCP's LCP form through A, in Fortran order (as LAPACK's
    ``gesv`` takes them)."""
    n = c.shape[0]
    R = np.empty((n + 1, n))
    for j in range(n):
        for i in range(n):
            R[j, i] = -B[i, j]
    for i in range(n):
        R[n, i] = c[i]
    return R.T


@njit(cache=True, nogil=True)
def mapped_point(xs, ys, dx, dy, A, B, c):
    """``(x, y, relative residual in HLCP(A, B, c), negative)`` of the point ``(x', y')`` of the equilibrated
    problem: ``x = dx x'``, ``y = dy y'``; ``negative`` whether ``x'`` or ``y'`` has a negative entry."""
    x = xs * dx
    y = ys * dy
    negative = False
    for i in range(xs.shape[0]):
        if xs[i] < 0.0 or ys[i] < 0.0:
            negative = True
    return x, y, relative_residual(A, B, c, x, y), negative


@njit(cache=True, nogil=True)
def solve_lcp(M, q, d, max_pivots, piv_rel, tie_tol, sweeps, tol):
    """Lemke's method on LCP(M, q) in one call: equilibrate (:func:`equilibrate_lcp`), pivot
    (:func:`lemke_tableau`), map the point back and verify it on the original data
    (:func:`lcp_relative_residual`).

    ``d`` is the covering vector of the original rows (scaled with them); an
    empty ``d`` means all ones in the equilibrated problem.  Returns ``(code,
    pivots, clean, out)``: ``clean`` says that Lemke ended on a complementary
    basis whose point is nonnegative and passes ``tol`` (nothing is left to
    check), and ``out`` holds ``[z | w | r | s | residual (3) | entering |
    leaving]`` (the scales of the rows and columns, and the pivot log as floats).
    """
    n = q.shape[0]
    T = np.empty((n, n + 2))
    W, mmax = _equilibrated_tableau(M, q, sweeps, T)
    r0, s0 = 4 * n + 2, 5 * n + 2    # the scales r, s in W (read by offsets: a view costs reference counts)
    scale = max(1.0, mmax)
    if d.shape[0] == 0:
        ds = np.ones(n)
    else:
        ds = np.empty(n)
        for i in range(n):
            ds[i] = d[i] * W[r0 + i]
            scale = max(scale, ds[i])
    for i in range(n):
        T[i, n] = -ds[i]
    code, pivots, zs, ws, el, ll = lemke_tableau(T, ds, max_pivots, piv_rel * scale, tie_tol)
    m = el.shape[0]
    out = np.empty(4 * n + 3 + 2 * m)
    clean = code == KERNEL_SOLVED
    for i in range(n):
        z = zs[i] * W[s0 + i]
        w = ws[i] / W[r0 + i]
        out[i] = z
        out[n + i] = w
        out[2 * n + i] = W[r0 + i]
        out[3 * n + i] = W[s0 + i]
        clean = clean and z >= 0.0 and w >= 0.0
    eq, neg, comp = _lcp_residual(M, q, out)
    out[4 * n] = eq
    out[4 * n + 1] = neg
    out[4 * n + 2] = comp
    for k in range(m):
        out[4 * n + 3 + k] = el[k]
        out[4 * n + 3 + m + k] = ll[k]
    clean = clean and max(eq, max(neg, comp)) <= tol
    return code, pivots, clean, out


#: the empty covering vector (all ones after equilibration), a constant of the compiled code (no allocation)
_NO_COVERING = np.empty(0)


@njit(cache=True, nogil=True)
def solve_lcp_default(M, q):
    """:func:`solve_lcp` with Lemke's default options (two arguments: each costs the call from Python time)."""
    return solve_lcp(M, q, _NO_COVERING, MAX_PIVOTS_BASE + MAX_PIVOTS_PER_PAIR * q.shape[0], PIV_TOL, TIE_TOL,
                     RUIZ_SWEEPS, VERIFY_TOL)


@njit(cache=True, nogil=True)
def solve_lcp_form_default(A, B, c):
    """Lemke with the default options on HLCP(A, B, c) with a diagonal A, through its LCP form
    ``LCP(-B/a, c/a)`` (row by row; ``x = w``, ``y = z``), in one call.

    Returns like :func:`solve_lcp`, with ``clean`` also requiring that the point passes the tolerance in the
    HLCP itself (:func:`relative_residual`); ``KERNEL_SINGULAR`` (nothing solved) if a diagonal entry of A is 0.
    """
    n = c.shape[0]
    for i in range(n):
        if A[i, i] == 0.0:
            return KERNEL_SINGULAR, 0, False, np.empty(0)
    M, q = _lcp_form(A, B, c)
    code, pivots, clean, out = solve_lcp_default(M, q)
    if clean:
        eq, neg, comp = relative_residual(A, B, c, out[n:2 * n], out[:n])
        clean = max(eq, max(neg, comp)) <= VERIFY_TOL
    return code, pivots, clean, out


@njit(cache=True, nogil=True, inline="always")
def _column_norm(V, j):
    """``np.sqrt(np.sum(V[:, j] ** 2))`` without the temporary (the same sum, in the same order)."""
    s = 0.0
    for i in range(V.shape[0]):
        s += V[i, j] ** 2
    return np.sqrt(s)


@njit(cache=True, nogil=True)
def range_residual(C, c):
    """``max |C u − c|`` of the least-squares ``u`` (what ``lstsq`` leaves): the part of ``c`` outside the range
    of C, by Gram–Schmidt with column pivoting (twice) over the columns above ``n ε`` of the largest."""
    return range_part(C, c)[0]


@njit(cache=True, nogil=True)
def range_part(C, c):
    """``(range_residual(C, c), rank)``: the residual and the number of columns the Gram–Schmidt kept (the rank
    it found)."""
    n, m = C.shape
    V = C.copy()
    Qb = np.empty((n, m))
    used = np.zeros(m, np.bool_)
    big = 0.0
    for j in range(m):
        big = max(big, _column_norm(V, j))
    rank = 0
    for _ in range(m):
        best, bn = -1, 0.0
        for j in range(m):
            if not used[j]:
                nj = _column_norm(V, j)
                if nj > bn:
                    best, bn = j, nj
        if best < 0 or bn <= n * 2.220446049250313e-16 * big:
            break
        used[best] = True
        for i in range(n):
            Qb[i, rank] = V[i, best] / bn
        for j in range(m):
            if not used[j]:
                for _twice in range(2):
                    p = 0.0
                    for i in range(n):
                        p += Qb[i, rank] * V[i, j]
                    for i in range(n):
                        V[i, j] -= p * Qb[i, rank]
        rank += 1
    res = c.copy()
    for _twice in range(2):
        for k in range(rank):
            p = 0.0
            for i in range(n):
                p += Qb[i, k] * res[i]
            for i in range(n):
                res[i] -= p * Qb[i, k]
    return np.abs(res).max(), rank


OPPOSITE_RCOND = 1e-15
""":func:`batched_leaves` decides a support with opposite columns (see there) that is not exactly singular (no zero
pivot) only when its exact reciprocal condition is at most this (else −1, the caller's).  The enumeration's
test of such a support (:func:`~pympc.complementarity.enumeration.nearly_singular_empty`) finds it empty when
LAPACK's estimate of its reciprocal condition is at most 1e-11 (at most 1e-14: no LU point to look at) and ``c``
is outside its range; on 11,988 such supports of event-like random and real event HLCPs the exact values were
at most 4.6e-17 and LAPACK's estimates at most 7.3e-17."""


SHARED_FROM = 6
"""From this many pairs :func:`batched_leaves` shares the eliminations along the walk's tree; below it, the
bookkeeping costs more than it saves (the same bits either way)."""


@njit(cache=True, nogil=True)
def batched_leaves(A, B, c, xs, tol, lp_tol):
    """Every support of a small HLCP solved directly (see ``enumeration._batched_leaves``).

    Support ``k``: column ``j`` of ``C_k`` from A where ``xs[k, j]``, else from B.  Returns ``(rc, U,
    status)``: ``rc[k]`` the exact reciprocal 1-norm condition number of ``C_k`` (0 if singular),
    ``U[k] = (x, y)`` its point (clipped at 0, or the second try of ``support_solution``: entries below
    ``tol max|u|`` zeroed) and ``status[k]``: −1 nearly singular (``rc ≤ 1e-10`` or a non-finite point:
    the caller decides; but see below), 0 no point (the wrong sign, or no try verified), 1 a verified point, 2 a point
    whose two tries failed ``relative_residual`` and that the caller checks with the noise rule of
    ``HLCP.is_solution``.  ``C_k`` exactly singular (a zero pivot): −3 when ``c`` is within ``lp_tol (1 +
    max|c|)`` of its range (:func:`range_residual`), else −2.

    Every ``C_k`` is factorized by :func:`~pympc._linalg.lu_solve`'s elimination into the identity and back
    substitution (its inverse), one by one; or, all the supports in the walk's order (``enumeration._SUPPORTS``,
    the usual argument) of at least :data:`SHARED_FROM` pairs, with the eliminations shared along the walk's
    tree (:func:`_walk_step`; the back substitution then reads each support's pivot rows where they were made).
    The same operations on the same numbers either way: the same bits.

    A support that takes a column of B that is exactly the negative of a column of A it takes too (an event
    HLCP's stick candidate: its a⁻ and a⁺) is singular by construction; in the walk's order its status −2 is
    decided without :func:`range_residual` where :func:`_outside_range` proves ``c`` beyond the threshold from the
    support that takes A's column instead (visited earlier), else by :func:`range_residual` as any other.  Such a
    support that round-off leaves without an exact zero pivot (``rc`` at most :data:`OPPOSITE_RCOND`) is −2 too
    where :func:`_outside_range` proves it (what the enumeration's test of a nearly singular support finds), else −1.
    """
    N, n = xs.shape
    rc = np.zeros(N)
    U = np.zeros((N, 2 * n))
    status = np.zeros(N, np.int64)
    C = np.empty((n, n))
    W = np.empty((n, n))
    Ci = np.empty((n, n))
    I = np.eye(n)
    v = np.empty(n)
    cmax = np.abs(c).max() if n else 0.0
    walk = _walk_order(xs)
    shared = n >= SHARED_FROM and walk
    neg = _negated_columns(A, B) if walk else np.full(0, -1, np.int64)   # B's column q = −A's column neg[q]
    kept = walk and (neg >= 0).any()      # the inverses and points of every support, for _outside_range
    Cis = np.empty((N if kept else 0, n, n))
    Vs = np.empty((N if kept else 0, n))
    inverted = np.zeros(N, np.bool_)
    bound = 2.0 * lp_tol * (1.0 + cmax)      # _outside_range's: twice the range test's threshold
    # the walk's tree: S[d] the state after d elimination steps of the supports on the current branch (see
    # _walk_step), ok[d] no zero pivot in them
    S = np.empty((n + 1, n, 3 * n) if shared else (0, 0, 0))
    ok = np.ones(n + 1, np.bool_)
    colA = np.zeros(n)      # the column sums of |A| and |B|: rcond_1's ‖C‖₁ of every support (_rcond_of_support)
    colB = np.zeros(n)
    if shared:
        for j in range(n):
            for i in range(n):
                colA[j] += abs(A[i, j])
                colB[j] += abs(B[i, j])
        for i in range(n):
            for j in range(n):
                S[0, i, j] = A[i, j]
                S[0, i, n + j] = B[i, j]
                S[0, i, 2 * n + j] = I[i, j]
    for k in range(N):
        if shared:
            d = n - _bit_length(k ^ (k - 1)) if k else 0     # the first pair in which support k differs from k − 1
            for d in range(d, n):
                ok[d + 1] = ok[d] and _walk_step(S[d], S[d + 1], d, d if xs[k, d] else n + d)
            if ok[n]:
                _shared_back_substitute(S, xs[k], Ci)
        if not shared or not ok[n]:
            for i in range(n):
                for j in range(n):
                    C[i, j] = A[i, j] if xs[k, j] else B[i, j]
        if not shared:
            W[:, :] = C
            Ci[:, :] = I
            ok[n] = lu_solve(W, Ci)
        if not ok[n]:      # an exact zero pivot: LAPACK's estimate is 0 as well
            if kept and _outside_range(xs, k, neg, Cis, Vs, inverted, rc, bound, cmax):
                status[k] = -2
                continue
            r = range_residual(C, c)
            status[k] = -3 if r <= lp_tol * (1.0 + cmax) else -2
            continue
        rc[k] = _rcond_of_support(colA, colB, xs[k], Ci) if shared else rcond_1(C, Ci)
        finite = True
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += Ci[i, j] * c[j]
            v[i] = s
            finite = finite and np.isfinite(s)
        if kept:
            Cis[k] = Ci
            Vs[k] = v
            inverted[k] = finite
        if not (rc[k] > 1e-10) or not finite:
            # singular to working precision by its opposite columns, c provably outside its range: empty (−2)
            opposite = finite and kept and rc[k] <= OPPOSITE_RCOND
            status[k] = -2 if opposite and _outside_range(xs, k, neg, Cis, Vs, inverted, rc, bound, cmax) else -1
            continue
        big = 0.0
        low = np.inf
        for j in range(n):
            big = max(big, abs(v[j]))
            low = min(low, v[j])
        if min(low, 0.0) < -tol * (1.0 + big):          # negative beyond round-off: the wrong sign
            continue
        for j in range(n):
            if xs[k, j]:
                U[k, j] = max(v[j], 0.0)
            else:
                U[k, n + j] = max(v[j], 0.0)
        status[k] = 1 if max(relative_residual(A, B, c, U[k, :n], U[k, n:])) <= tol else 2
    return rc, U, status


@njit(cache=True, nogil=True)
def _negated_columns(A, B):
    """``neg[q]``: the first ``p ≠ q`` with B's column ``q`` exactly the negative of A's column ``p``, else −1."""
    n = A.shape[0]
    neg = np.full(n, -1, np.int64)
    for q in range(n):
        for p in range(n):
            if p == q:
                continue
            same = True
            for i in range(n):
                if B[i, q] != -A[i, p]:
                    same = False
                    break
            if same:
                neg[q] = p
                break
    return neg


@njit(cache=True, nogil=True)
def _outside_range(xs, k, neg, Cis, Vs, inverted, rc, bound, cmax):
    """Is ``c`` provably farther than ``bound`` (max norm) from the range of support ``k`` (rows of ``xs`` in the
    walk's order), singular because it takes B's column ``q`` and A's column ``neg[q]`` for the ``q`` of a set Q?

    Its range is that of its columns outside Q, which the support ``k'`` taking A's column at every ``q`` of Q
    (an earlier row: those bits cleared) shares; where ``k'`` was inverted (``Cis[k']``, its point ``Vs[k'] =
    C⁻¹ c``, ``rc[k'] > 1e-10``), row ``q`` of its inverse, ``w``, is orthogonal to those columns, so every
    residual ``r = c − C u`` of support ``k`` has ``‖r‖_∞ ≥ |wᵀc| / ‖w‖₁``.  ``wᵀc`` is taken less a bound
    of its round-off (``16 n² ε κ₁ ‖C⁻¹‖₁ max|c|``, κ₁ = 1 / rc[k']).  False: not proved (the caller's
    :func:`range_residual` decides)."""
    N, n = xs.shape
    kp = k
    for q in range(n):
        if not xs[k, q] and neg[q] >= 0 and xs[k, neg[q]]:
            kp -= 1 << (n - 1 - q)
    if kp == k or not inverted[kp] or not rc[kp] > 1e-10:
        return False
    Ci = Cis[kp]
    ninv = 0.0
    for j in range(n):
        s = 0.0
        for i in range(n):
            s += abs(Ci[i, j])
        ninv = max(ninv, s)
    err = 16.0 * n * n * 2.220446049250313e-16 * ninv * cmax / rc[kp]
    for q in range(n):
        if not xs[k, q] and neg[q] >= 0 and xs[k, neg[q]]:
            w1 = 0.0
            for j in range(n):
                w1 += abs(Ci[q, j])
            if abs(Vs[kp, q]) - err > bound * w1 * (1.0 + 4.0 * n * 2.220446049250313e-16):
                return True
    return False


@njit(cache=True, nogil=True)
def _rcond_of_support(colA, colB, choice, Ci):
    """:func:`~pympc._linalg.rcond_1` of the support ``choice`` (its inverse ``Ci``) with ‖C‖₁ from the column
    sums of |A| and |B| (the same sums, in the same order: the same bits, without the support's matrix)."""
    n = Ci.shape[0]
    nc = 0.0
    ni = 0.0
    for j in range(n):
        si = 0.0
        for i in range(n):
            si += abs(Ci[i, j])
        nc = max(nc, colA[j] if choice[j] else colB[j])
        ni = max(ni, si)
    return 1.0 / (nc * ni)


@njit(cache=True, nogil=True, inline="always")
def _bit_length(x):
    """``int.bit_length`` of ``x ≥ 0``."""
    b = 0
    while x:
        b += 1
        x >>= 1
    return b


@njit(cache=True, nogil=True)
def _walk_order(xs):
    """Are the rows of ``xs`` every support of its pairs in the walk's order (``enumeration._SUPPORTS``: row ``k``
    takes pair ``j`` from A where bit ``n − 1 − j`` of ``k`` is 0)?"""
    N, n = xs.shape
    if n == 0 or N != 1 << n:
        return False
    for k in range(N):
        for j in range(n):
            if xs[k, j] != (((k >> (n - 1 - j)) & 1) == 0):
                return False
    return True


@njit(cache=True, nogil=True)
def _walk_step(P, Q, d, cd):
    """Step ``d`` of :func:`~pympc._linalg.lu_solve`'s elimination shared by the supports that take their first
    ``d + 1`` columns alike (column ``d`` the candidate ``cd``: A's ``d`` or B's ``n + d``), from the state ``P``
    after ``d`` steps into ``Q``; False on an exact zero pivot.

    The step (pivot search in column ``d``, row swap, the rows below updated) reads columns ``d`` and after only.
    A state holds the rows from ``d`` on of both candidates (A's, B's) of every later column and of the
    right-hand side (the identity, from column ``2n``); row ``d`` is final after step ``d`` (a pivot row), so a
    support's factors are read in the states along its branch (:func:`_shared_back_substitute`)."""
    n = P.shape[0]
    w = P.shape[1]
    for i in range(d, n):
        Q[i, cd] = P[i, cd]
        for j in range(d + 1, n):
            Q[i, j] = P[i, j]
        for j in range(n + d + 1, w):
            Q[i, j] = P[i, j]
    p, big = pivot_row(Q, cd, d)
    if big == 0.0:
        return False
    if p != d:
        Q[d, cd], Q[p, cd] = Q[p, cd], Q[d, cd]
        for j in range(d + 1, n):
            Q[d, j], Q[p, j] = Q[p, j], Q[d, j]
        for j in range(n + d + 1, w):
            Q[d, j], Q[p, j] = Q[p, j], Q[d, j]
    for i in range(d + 1, n):
        f = Q[i, cd] / Q[d, cd]
        if f != 0.0:
            subtract_row(Q, i, d, f, d + 1, n)
            subtract_row(Q, i, d, f, n + d + 1, w)
    return True


@njit(cache=True, nogil=True)
def _shared_back_substitute(S, choice, Ci):
    """The inverse of the support ``choice`` into ``Ci``: ``back_substitute``'s arithmetic on its pivot rows (row
    ``i`` in ``S[i + 1]``, :func:`_walk_step`) and the eliminated identity, row by row, the columns side by side."""
    n = Ci.shape[0]
    for i in range(n - 1, -1, -1):
        R = S[i + 1]
        for j in range(n):
            Ci[i, j] = R[i, 2 * n + j]
        for m in range(i + 1, n):
            u = R[i, m] if choice[m] else R[i, n + m]
            for j in range(n):
                Ci[i, j] -= u * Ci[m, j]
        dv = R[i, i] if choice[i] else R[i, n + i]
        for j in range(n):
            Ci[i, j] = Ci[i, j] / dv


def _numba_dgesv():
    """LAPACK's dgesv as numba's own ``np.linalg.solve`` calls it (scipy's ``cython_lapack``: the routine that
    ``scipy.linalg.lapack.dgesv`` wraps, so the factors and the solutions are the same to the bit), or None where
    this numba has not that private wrapper (then :data:`HLCP_DEFAULT_KERNEL` is False: :func:`pympc.lemke` takes
    scipy's dgesv between its compiled calls, the same numbers)."""
    if _LAPACK is None:
        return None
    try:
        ensure_lapack()
        return _LAPACK().numba_xgesv(types.float64)
    except Exception:       # pragma: no cover - depends on the numba release
        return None


_dgesv = _numba_dgesv()
HLCP_DEFAULT_KERNEL = _dgesv is not None
"""Whether :func:`solve_hlcp_default` can run here (numba's private LAPACK wrapper found)."""
_D = ord("d")


@njit(cache=True, nogil=True)
def solve_hlcp_default(A, B, c):
    """Lemke with the default options on an HLCP(A, B, c) with a non-diagonal A (an event HLCP) in one call: what
    :func:`pympc.lemke`'s usual path does in five (:func:`equilibrate_hlcp`, ``[−B | c]`` through LAPACK's dgesv,
    :func:`solve_hlcp_kernel` with the basis "every x basic" and the covering vector of ones,
    :func:`mapped_point`), the same arithmetic.

    Returns ``(decided, code, pivots, el, ll, x, y, residual, negative, dx, dy)``; ``decided`` False when the basis
    is singular (dgesv's ``info`` or the kernel's pivots): the general path then decides."""
    n = c.shape[0]
    As, Bs, cs, dx, dy = equilibrate_hlcp(A, B, c, False, RUIZ_SWEEPS)
    S = gesv_rhs(Bs, cs)               # a fresh Fortran-ordered array: dgesv overwrites it with the solutions
    lu = np.empty((n, n)).T            # dgesv factorizes a Fortran-ordered copy of As in place
    lu[:, :] = As
    piv = np.empty(n, F_INT_nptype)
    info = _dgesv(_D, n, n + 1, lu.ctypes, n, piv.ctypes, S.ctypes, n)
    if info != 0:
        e = np.zeros(0, np.int64)
        return False, KERNEL_SINGULAR, 0, e, e, np.zeros(n), np.zeros(n), (0.0, 0.0, 0.0), False, dx, dy
    code, pivots, xs, ys, el, ll = solve_hlcp_kernel(As, Bs, cs, np.ones(n, np.bool_), S, lu, np.ones(n),
                                                     MAX_PIVOTS_BASE + MAX_PIVOTS_PER_PAIR * n, PIV_TOL, TIE_TOL)
    if code == KERNEL_SINGULAR:
        return False, code, pivots, el, ll, xs, ys, (0.0, 0.0, 0.0), False, dx, dy
    x, y, res, negative = mapped_point(xs, ys, dx, dy, A, B, c)
    return True, code, pivots, el, ll, x, y, res, negative, dx, dy


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
