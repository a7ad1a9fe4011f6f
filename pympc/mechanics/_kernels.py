"""Compiled (numba) loops of the assembly: friction slots, springs and dampers.

These are the parts of a system that come in numbers (a chain of 50 slots, 50
springs): one plain loop over the elements, compiled, instead of a Python loop
of small numpy operations.  Bodies are given by the columns of their ``x`` and
``phi`` coordinates (``-1`` for the ground, ``phi = -1`` for a particle).
"""

import math

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

_PLAIN = {"cache": True, "_nrt": False}
"""Options of the kernels that only read and write arrays their callers own: compiled without numba's reference
counting (NRT), which would otherwise cost two atomic operations for every array view they take or pass on —
about half of a small model's mode solve (2.2 → 1.1 µs for the friction oscillator).  Such a kernel must not
allocate (numba refuses to compile it) and must not return an array, not even one it was given (a caller with
NRT would release it); what it calls without options of its own is compiled the same way.

The parts of the mode solve (:func:`slot_into`, :func:`pair_forces`, :func:`apply_point_forces`, :func:`mode_rows`,
:func:`band_solve`) are inlined into :func:`general_mode` (``inline="always"``, numba IR inlining; each is called once
there, so the machine code is no larger): a call of a compiled function passes every array as its seven fields, and
these calls of 13-18 arrays each cost about a third of a small model's mode solve (260 -> 185 ns for the friction
oscillator)."""


@intrinsic
def _rows(typingctx, a, ncols):
    """``a.reshape(a.size // ncols, ncols)`` of a C-contiguous 1-D array: the same view, made without numba's
    reshape helper (an external call that checks the strides, ~15 ns: the mode solve of a small model takes
    16 such views per evaluation, ~40 % of its time)."""
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" and isinstance(ncols, types.Integer)):
        return None
    sig = types.Array(a.dtype, 2, "C", readonly=not a.mutable)(a, ncols)

    def codegen(context, builder, sig, args):
        src = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(sig.return_type)(context, builder)
        c = context.cast(builder, args[1], sig.args[1], types.intp)
        item = src.itemsize
        shape = cgutils.pack_array(builder, [builder.sdiv(builder.extract_value(src.shape, 0), c), c])
        strides = cgutils.pack_array(builder, [builder.mul(c, item), item])
        populate_array(out, data=src.data, shape=shape, strides=strides, itemsize=item, meminfo=src.meminfo,
                       parent=src.parent)
        return impl_ret_borrowed(context, builder, sig.return_type, out._getvalue())
    return sig, codegen


@intrinsic
def _span(typingctx, a, start, length):
    """``a[start:start + length]`` of a 1-D array: the same view, made without numba's slice normalization (negative
    and out-of-range bounds; the caller guarantees ``0 <= start`` and ``start + length <= a.size``).  The mode solve
    of a small model takes about 50 such views per evaluation: a fifth of its time (316 → 250 ns for the friction
    oscillator)."""
    if not (isinstance(a, types.Array) and a.ndim == 1 and a.layout in "CA" and isinstance(start, types.Integer)
            and isinstance(length, types.Integer)):
        return None
    sig = types.Array(a.dtype, 1, a.layout, readonly=not a.mutable)(a, start, length)

    def codegen(context, builder, sig, args):
        src = make_array(sig.args[0])(context, builder, args[0])
        out = make_array(sig.return_type)(context, builder)
        s = context.cast(builder, args[1], sig.args[1], types.intp)
        n = context.cast(builder, args[2], sig.args[2], types.intp)
        stride = builder.extract_value(src.strides, 0)
        data = builder.bitcast(cgutils.pointer_add(builder, src.data, builder.mul(s, stride)), src.data.type)
        populate_array(out, data=data, shape=cgutils.pack_array(builder, [n]),
                       strides=cgutils.pack_array(builder, [stride]), itemsize=src.itemsize, meminfo=src.meminfo,
                       parent=src.parent)
        return impl_ret_borrowed(context, builder, sig.return_type, out._getvalue())
    return sig, codegen


@njit(**_PLAIN)
def _frame(q, qd, bx, bphi, b):
    """(x, y, phi, vx, vy, omega) of body b (b < 0: the ground)."""
    if b < 0:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    i, j = bx[b], bphi[b]
    if j < 0:
        return q[i], q[i + 1], 0.0, qd[i], qd[i + 1], 0.0
    return q[i], q[i + 1], q[j], qd[i], qd[i + 1], qd[j]


@njit(cache=True)
def slot_rows(q, qd, bx, bphi, slider, guide, point, origin, direction, n):
    """Gaps, normal/tangential Jacobian rows (dense), velocities and acceleration biases of every slot."""
    ns = slider.size
    gN, bN, vN = np.empty(ns), np.empty(ns), np.empty(ns)
    bT, vT = np.empty(ns), np.empty(ns)
    idx, nnz = np.empty((ns, 6), np.int64), np.empty(ns, np.int64)
    nv, tv = np.empty((ns, 6)), np.empty((ns, 6))
    slot_into(q, qd, bx, bphi, slider, guide, point, origin, direction, idx, nv, tv, nnz, gN, bN, vN, bT, vT)
    WN, WT = np.zeros((ns, n)), np.zeros((ns, n))
    for k in range(ns):
        for e in range(nnz[k]):
            WN[k, idx[k, e]] += nv[k, e]
            WT[k, idx[k, e]] += tv[k, e]
    return gN, WN, bN, vN, WT, bT, vT


@njit(**_PLAIN)
def _end(q, qd, bx, bphi, body, sx, sy):
    """Position, velocity and the phi column (E R s) of a body-fixed point."""
    x, y, ph, vx, vy, w = _frame(q, qd, bx, bphi, body)
    cc, ss = math.cos(ph), math.sin(ph)
    px, py = cc * sx - ss * sy, ss * sx + cc * sy
    return x + px, y + py, vx - w * py, vy + w * px, -py, px


@njit(**_PLAIN, inline="always")
def pair_forces(q, qd, bx, bphi, a, b, pa, pb, is_spring, k, L0, c, Q):
    """Add spring and damper forces to Q; returns (potential, damper power, index of a degenerate spring or -1)."""
    V, P = 0.0, 0.0
    for e in range(a.size):
        rxa, rya, vxa, vya, exa, eya = _end(q, qd, bx, bphi, a[e], pa[e, 0], pa[e, 1])
        rxb, ryb, vxb, vyb, exb, eyb = _end(q, qd, bx, bphi, b[e], pb[e, 0], pb[e, 1])
        dx, dy = rxa - rxb, rya - ryb
        ddx, ddy = vxa - vxb, vya - vyb
        L = math.hypot(dx, dy)
        if is_spring[e]:
            if L0[e] == 0.0:
                mag = -k[e]
            elif L < 1e-12:
                return V, P, e
            else:
                mag = -k[e] * (L - L0[e]) / L
            V += 0.5 * k[e] * (L - L0[e]) ** 2
        else:
            if L < 1e-12:
                continue
            mag = -c[e] * (dx * ddx + dy * ddy) / (L * L)
        Fx, Fy = mag * dx, mag * dy
        if not is_spring[e]:
            P += Fx * ddx + Fy * ddy
        for side in range(2):
            body = a[e] if side == 0 else b[e]
            if body < 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            ex, ey = (exa, eya) if side == 0 else (exb, eyb)
            Q[bx[body]] += sign * Fx
            Q[bx[body] + 1] += sign * Fy
            if bphi[body] >= 0:
                Q[bphi[body]] += sign * (Fx * ex + Fy * ey)
    return V, P, -1


# ---------------------------------------------------------------------------- the mode system, compiled
#
# A fixed mode's equations with a diagonal mass matrix are solved through the
# Schur complement S = C M⁻¹ Gᵀ of its constraint rows C and force columns G.
# Each row touches a few coordinates (a slot: its slider's and its guide's), so
# rows are kept sparse: ``idx[r, :nnz[r]]`` the coordinates, ``cv`` the entries
# of C, ``gv`` those of G.  In the row order ``perm`` (reverse Cuthill–McKee on
# "rows sharing a body", chosen once per mode) S is banded with ``kl`` sub- and
# ``ku`` super-diagonals; it is factorized in band storage with partial
# pivoting: O(rows · band²), no BLAS call (whose threads are a liability for
# these small systems on a loaded machine).


@njit(**_PLAIN, inline="always")
def slot_into(q, qd, bx, bphi, slider, guide, point, origin, direction, idx, nv, tv, nnz, gN, bN, vN, bT, vT):
    """Slot rows in sparse form (coordinates ``idx``, normal ``nv`` and tangential ``tv`` entries, ``nnz`` per
    row), gaps, velocities and acceleration biases, written into the given arrays."""
    ns = slider.size
    for k in range(ns):
        bs, bg = slider[k], guide[k]
        x, y, ph, vx, vy, ws = _frame(q, qd, bx, bphi, bs)
        c, s = math.cos(ph), math.sin(ph)
        px, py = c * point[k, 0] - s * point[k, 1], s * point[k, 0] + c * point[k, 1]
        ex, ey = -py, px
        rPx, rPy = x + px, y + py
        vPx, vPy = vx + ws * ex, vy + ws * ey
        cPx, cPy = -ws * ws * px, -ws * ws * py
        gx, gy, gph, gvx, gvy, wg = _frame(q, qd, bx, bphi, bg)
        cg, sg = math.cos(gph), math.sin(gph)
        ux = cg * direction[k, 0] - sg * direction[k, 1]
        uy = sg * direction[k, 0] + cg * direction[k, 1]
        nx, ny = -uy, ux
        Ax = gx + cg * origin[k, 0] - sg * origin[k, 1]
        Ay = gy + sg * origin[k, 0] + cg * origin[k, 1]
        dx, dy = rPx - gx, rPy - gy
        dvx, dvy = vPx - gvx, vPy - gvy
        ud, nd = ux * dx + uy * dy, nx * dx + ny * dy
        uv, nv_ = ux * dvx + uy * dvy, nx * dvx + ny * dvy
        gN[k] = nx * (rPx - Ax) + ny * (rPy - Ay)
        vN[k] = nv_ - wg * ud
        vT[k] = uv + wg * nd
        bN[k] = nx * cPx + ny * cPy - 2.0 * wg * uv - wg * wg * nd
        bT[k] = ux * cPx + uy * cPy + 2.0 * wg * nv_ - wg * wg * ud
        i = bx[bs]
        e = 0
        idx[k, 0], nv[k, 0], tv[k, 0] = i, nx, ux
        idx[k, 1], nv[k, 1], tv[k, 1] = i + 1, ny, uy
        e = 2
        if bphi[bs] >= 0:
            idx[k, e], nv[k, e], tv[k, e] = bphi[bs], nx * ex + ny * ey, ux * ex + uy * ey
            e += 1
        if bg >= 0:
            i = bx[bg]
            idx[k, e], nv[k, e], tv[k, e] = i, -nx, -ux
            idx[k, e + 1], nv[k, e + 1], tv[k, e + 1] = i + 1, -ny, -uy
            e += 2
            if bphi[bg] >= 0:
                idx[k, e], nv[k, e], tv[k, e] = bphi[bg], -ud, nd
                e += 1
        nnz[k] = e


@njit(**_PLAIN, inline="always")
def apply_point_forces(q, qd, bx, bphi, body, point, F, Q):
    """Add point forces ``F[i]`` (absolute components) at body-fixed points to Q; returns their power."""
    P = 0.0
    for i in range(body.size):
        b = body[i]
        if b < 0:
            continue
        x, y, ph, vx, vy, w = _frame(q, qd, bx, bphi, b)
        c, s = math.cos(ph), math.sin(ph)
        px, py = c * point[i, 0] - s * point[i, 1], s * point[i, 0] + c * point[i, 1]
        Fx, Fy = F[i, 0], F[i, 1]
        Q[bx[b]] += Fx
        Q[bx[b] + 1] += Fy
        if bphi[b] >= 0:
            Q[bphi[b]] += -py * Fx + px * Fy
        P += Fx * (vx - w * py) + Fy * (vy + w * px)
    return P


@njit(**_PLAIN, inline="always")
def band_solve(minv, h, idx, cv, gv, nnz, b, perm, kl, ku, work, S, rhs, y, qdd, nu):
    """Solve ``M q̈ = h + Gᵀ ν``, ``C q̈ + b = 0`` (M = diag(1/minv)) for (q̈, ν) in the band order ``perm``.

    Writes ``qdd`` and ``nu`` (row order); ``S`` (rows × (2 kl + ku + 1)), ``rhs``
    and ``y`` are scratch, ``work`` a zero scratch vector of the coordinates'
    length (left zero).  Returns False when S is (numerically) singular.
    """
    R = perm.size
    S[:, :] = 0.0
    for i in range(minv.size):
        qdd[i] = minv[i] * h[i]
    scale = 0.0
    for p in range(R):
        i = perm[p]
        for e in range(nnz[i]):
            work[idx[i, e]] = cv[i, e] * minv[idx[i, e]]
        acc = -b[i]
        for e in range(nnz[i]):
            acc -= cv[i, e] * qdd[idx[i, e]]
        rhs[p] = acc
        for p2 in range(max(0, p - kl), min(R - 1, p + ku) + 1):
            j = perm[p2]
            s = 0.0
            for e in range(nnz[j]):
                s += work[idx[j, e]] * gv[j, e]
            S[p, p2 - p + kl] = s
            scale = max(scale, abs(s))
        for e in range(nnz[i]):
            work[idx[i, e]] = 0.0
    tiny = 1e-13 * scale
    for k in range(R):                       # banded LU, partial pivoting (rows k..k+kl)
        last = min(R - 1, k + kl)
        piv, best = k, abs(S[k, kl])
        for i in range(k + 1, last + 1):
            v = abs(S[i, k - i + kl])
            if v > best:
                piv, best = i, v
        if not best > tiny:
            nu[:] = 0.0
            return False
        cend = min(R - 1, k + kl + ku)
        if piv != k:
            for j in range(k, cend + 1):
                a1, a2 = S[k, j - k + kl], S[piv, j - piv + kl]
                S[k, j - k + kl], S[piv, j - piv + kl] = a2, a1
            rhs[k], rhs[piv] = rhs[piv], rhs[k]
        d = S[k, kl]
        for i in range(k + 1, last + 1):
            f = S[i, k - i + kl] / d
            if f != 0.0:
                for j in range(k + 1, cend + 1):
                    S[i, j - i + kl] -= f * S[k, j - k + kl]
                rhs[i] -= f * rhs[k]
    for k in range(R - 1, -1, -1):
        s = rhs[k]
        for j in range(k + 1, min(R - 1, k + kl + ku) + 1):
            s -= S[k, j - k + kl] * y[j]
        y[k] = s / S[k, kl]
    for p in range(R):
        i = perm[p]
        nu[i] = y[p]
        for e in range(nnz[i]):
            qdd[idx[i, e]] += minv[idx[i, e]] * gv[i, e] * y[p]
    return True


def mode_layout(n, m, ns, R, W):
    """Offsets of the pieces of a mode's float buffer (see :func:`general_mode`), and its length."""
    names = (("qdd", n), ("nu", R), ("lam", ns), ("F", ns), ("aT", ns), ("Q", n), ("gN", ns), ("bN", ns),
             ("vN", ns), ("bT", ns), ("vT", ns), ("snv", 6 * ns), ("stv", 6 * ns), ("b", R), ("rhs", R), ("y", R),
             ("cv", 6 * R), ("gv", 6 * R), ("S", R * W))
    out, o = {}, 0
    for k, size in names:
        out[k] = (o, size)
        o += size
    return out, o


@njit(**_PLAIN, inline="always")
def mode_rows(ns, m, jidx, jv, jnnz, sidx, snv, stv, snnz, fric, stick, idx, cv, gv, nnz):
    """Rows of a mode: joints (C = G = J), slots (C = WN, G = WN + fric WT), sticking slots (C = G = WT)."""
    r = 0
    for i in range(m):
        for e in range(jnnz[i]):
            idx[r, e], cv[r, e], gv[r, e] = jidx[i, e], jv[i, e], jv[i, e]
        nnz[r] = jnnz[i]
        r += 1
    for k in range(ns):
        for e in range(snnz[k]):
            idx[r, e], cv[r, e], gv[r, e] = sidx[k, e], snv[k, e], snv[k, e] + fric[k] * stv[k, e]
        nnz[r] = snnz[k]
        r += 1
    for k in stick:
        for e in range(snnz[k]):
            idx[r, e], cv[r, e], gv[r, e] = sidx[k, e], stv[k, e], stv[k, e]
        nnz[r] = snnz[k]
        r += 1


@njit(cache=True)
def dense_rows(J, idx, val, nnz):
    """The nonzeros of the rows of a dense matrix, in the sparse row form (``idx``, ``val``, ``nnz``)."""
    for i in range(J.shape[0]):
        e = 0
        for c in range(J.shape[1]):
            if J[i, c] != 0.0:
                idx[i, e], val[i, e] = c, J[i, c]
                e += 1
        nnz[i] = e


@njit(**_PLAIN, inline="always")
def _model_tables(sf, si):
    """The static tables of :func:`pack_model` as views of ``sf``, ``si``: ``(bx, bphi, slider, guide, pair body a,
    pair body b, is_spring, tbody, point, origin, direction, pair point a, pair point b, k, L0, c, tpoint, gravity,
    minv)``."""
    n, ns, npair, nt, nb = si[0], si[1], si[2], si[3], si[4]
    o = 5
    bx = _span(si, o, nb); o += nb                                             # noqa: E702
    bphi = _span(si, o, nb); o += nb                                           # noqa: E702
    slider = _span(si, o, ns); o += ns                                         # noqa: E702
    guide = _span(si, o, ns); o += ns                                          # noqa: E702
    pa_ = _span(si, o, npair); o += npair                                      # noqa: E702
    pb_ = _span(si, o, npair); o += npair                                      # noqa: E702
    is_spring = _span(si, o, npair); o += npair                                # noqa: E702
    tbody = _span(si, o, nt)
    o = 0
    point = _rows(_span(sf, o, 2 * ns), 2); o += 2 * ns                   # noqa: E702
    origin = _rows(_span(sf, o, 2 * ns), 2); o += 2 * ns                  # noqa: E702
    direction = _rows(_span(sf, o, 2 * ns), 2); o += 2 * ns               # noqa: E702
    ppa = _rows(_span(sf, o, 2 * npair), 2); o += 2 * npair           # noqa: E702
    ppb = _rows(_span(sf, o, 2 * npair), 2); o += 2 * npair           # noqa: E702
    pk = _span(sf, o, npair); o += npair                                       # noqa: E702
    pL0 = _span(sf, o, npair); o += npair                                      # noqa: E702
    pc = _span(sf, o, npair); o += npair                                       # noqa: E702
    tpoint = _rows(_span(sf, o, 2 * nt), 2); o += 2 * nt                 # noqa: E702
    gravity = _span(sf, o, n); o += n                                          # noqa: E702
    minv = _span(sf, o, n)
    return (bx, bphi, slider, guide, pa_, pb_, is_spring, tbody, point, origin, direction, ppa, ppb, pk, pL0, pc,
            tpoint, gravity, minv)


@njit(**_PLAIN)
def general_assembly(q, qd, t, sf, si, prog, consts, tF0, iw, buf, jf, ji):
    """What ``AbsoluteModel.evaluate`` computes for a model whose joints are pins and whose forces of the state are
    constant torques (or none), in one call, in the same arithmetic (the same loops: :func:`slot_into`,
    :func:`pair_forces`, :func:`apply_point_forces`, the point forces of time alone by :func:`run_time_program`,
    the pins' own :func:`revolute_rows`, the torques added after the point forces as ``AbsoluteModel._applied`` adds
    them): into ``buf`` (:func:`assembly_layout`) the generalized forces ``Q``, the slots' ``gN, bN, vN, bT, vT``,
    the dense rows ``WN``, ``WT``, copies of ``q``, ``q̇`` and the joint rows ``g``, ``J``, ``w``, ``ġ``; ``iw`` (7
    per slot) is scratch, and so are the ends of ``buf`` and ``consts`` (the program's stack).  ``ji``, ``jf``: the
    pins' and torques' tables (:func:`pack_joints`; empty: none).  Returns ``(code, dV, P)``: code −1, the springs'
    potential and the power of the pairs, point forces and torques; code −2 (a point force not finite) or the index
    of a spring of zero length: nothing is decided, the Python evaluation says why."""
    n, ns, npair, nt = si[0], si[1], si[2], si[3]
    (bx, bphi, slider, guide, pa_, pb_, is_spring, tbody, point, origin, direction, ppa, ppb, pk, pL0, pc, tpoint,
     gravity, _) = _model_tables(sf, si)
    Q = _span(buf, 0, n)
    gN, bN, vN = _span(buf, n, ns), _span(buf, n + ns, ns), _span(buf, n + 2 * ns, ns)
    bT, vT = _span(buf, n + 3 * ns, ns), _span(buf, n + 4 * ns, ns)
    o = n + 5 * ns
    WN = _rows(_span(buf, o, ns * n), n)
    WT = _rows(_span(buf, o + ns * n, ns * n), n)
    o += 2 * ns * n
    qc, qdc = _span(buf, o, n), _span(buf, o + n, n)
    o += 2 * n
    m, nj, ntq = (ji[0], ji[1], ji[2]) if ji.size else (0, 0, 0)
    g, gd, w = _span(buf, o, m), _span(buf, o + m, m), _span(buf, o + 2 * m, m)
    J = _rows(_span(buf, o + 3 * m, m * n), n)
    o += 3 * m + m * n
    nv = _rows(_span(buf, o, 6 * ns), 6)
    tv = _rows(_span(buf, o + 6 * ns, 6 * ns), 6)
    tF = _rows(_span(buf, o + 12 * ns, 2 * nt), 2)
    idx = _rows(_span(iw, 0, 6 * ns), 6)
    nnz = _span(iw, 6 * ns, ns)
    for i in range(2 * nt):
        tF[i // 2, i % 2] = tF0[i // 2, i % 2]
    if prog[0] and not run_time_program(t, prog, consts, tF):
        return -2, 0.0, 0.0
    slot_into(q, qd, bx, bphi, slider, guide, point, origin, direction, idx, nv, tv, nnz, gN, bN, vN, bT, vT)
    for k in range(ns):
        for c in range(n):
            WN[k, c] = 0.0
            WT[k, c] = 0.0
        for e in range(nnz[k]):
            WN[k, idx[k, e]] += nv[k, e]
            WT[k, idx[k, e]] += tv[k, e]
    for i in range(n):
        Q[i] = gravity[i]
        qc[i] = q[i]
        qdc[i] = qd[i]
    dV, P = 0.0, 0.0
    if npair:
        dV, dP, bad = pair_forces(q, qd, bx, bphi, pa_, pb_, ppa, ppb, is_spring, pk, pL0, pc, Q)
        if bad >= 0:
            return bad, 0.0, 0.0
        P += dP
    Pa = 0.0
    if nt:
        Pa += apply_point_forces(q, qd, bx, bphi, tbody, tpoint, tF, Q)
    for k in range(ntq):          # the constant torques: on the angle column tcol[k], power τ ω
        c = ji[3 + 3 * nj + k]
        tau = jf[4 * nj + k]
        Q[c] += tau
        Pa += tau * qd[c]
    P += Pa
    if m:
        pin_rows(q, qd, bx, bphi, jf, ji, g, J, w, gd)
    return -1, dV, P


@njit(**_PLAIN)
def pin_rows(q, qd, bx, bphi, jf, ji, g, J, w, gd):
    """The rows ``g``, ``J``, ``ŵ``, ``ġ`` of the pins of :func:`pack_joints`' tables ``jf``, ``ji`` (not empty),
    zeroed, then filled by :func:`revolute_rows`."""
    n = J.shape[1]
    for r in range(g.shape[0]):
        g[r] = 0.0
        w[r] = 0.0
        gd[r] = 0.0
        for c in range(n):
            J[r, c] = 0.0
    nj = ji[1]
    if nj:
        revolute_rows(q, qd, bx, bphi, _span(ji, 3, nj), _span(ji, 3 + nj, nj), _rows(_span(jf, 0, 2 * nj), 2),
                      _span(ji, 3 + 2 * nj, nj), _rows(_span(jf, 2 * nj, 2 * nj), 2), g, J, w, gd)


def assembly_layout(n, ns, nt, m=0):
    """The length of :func:`general_assembly`'s ``buf`` (the arrays it hands back, then its scratch) and of ``iw``
    (``m`` joint rows)."""
    return n + 5 * ns + 2 * ns * n + 2 * n + 3 * m + m * n + 12 * ns + 2 * nt, 7 * ns


def pack_joints(m, pins, torques):
    """:func:`general_assembly`'s tables ``(jf, ji)`` of ``m`` joint rows: ``pins`` the arguments of
    :func:`revolute_rows` (``Revolute.batch``'s: first rows, bodies and points a, b; None: no pin) and ``torques``
    pairs ``(angle column, constant value)``.  Empty arrays where there are neither (a model of slots alone)."""
    if not m and not torques:
        return np.zeros(0), np.zeros(0, np.int64)
    rows, ba, pa, bb, pb = pins if pins is not None else (np.zeros(0, np.int64),) * 2 + (np.zeros((0, 2)),) + \
        (np.zeros(0, np.int64), np.zeros((0, 2)))
    ji = np.concatenate([[m, rows.size, len(torques)], rows, ba, bb, [c for c, _ in torques]]).astype(np.int64)
    jf = np.concatenate([pa.ravel(), pb.ravel(), [v for _, v in torques]]).astype(float)
    return jf, ji


@njit(**_PLAIN)
def general_mode(q, qd, tF, Qx, bI, alpha, beta, sf, si, pf, pi, fb, ib, work, out):
    """Applied forces, slot rows, the solve of one mode's equations (diagonal mass) and the state derivative.

    The static tables are packed by :func:`pack_model` (``sf``, ``si``), the mode's by :func:`pack_mode`
    (``pf``, ``pi``); unpacked here as views (one function: a call that passed them on as arrays would pass
    every array as its seven fields, about a third of a small model's mode solve).
    The forces: the pair table (springs, dampers: :func:`pair_forces`), point
    forces ``tF`` at ``tbody``/``tpoint``, uniform ``gravity`` and any other
    generalized forces ``Qx`` (empty: none).  ``jidx``/``jv``/``jnnz`` are the
    joint rows and ``bI`` their (stabilized) biases; ``fric`` the friction per
    unit λ of each slot, ``stick`` the sticking slots, ``perm``/``kl``/``ku``
    the band order of the mode's rows (:func:`band_solve`).  Everything is
    written into the mode's buffers ``fb`` (floats, :func:`mode_layout`) and
    ``ib`` (ints: slot row coordinates and counts, then the mode's rows), and
    ``out = (q̇, q̈, friction dissipation rate, power put in)``.  Returns
    ``(ok, bad_spring, T, V, P)``.
    """
    n, ns = si[0], si[1]
    (bx, bphi, slider, guide, pa_, pb_, is_spring, tbody, point, origin, direction, ppa, ppb, pk, pL0, pc, tpoint,
     gravity, minv) = _model_tables(sf, si)
    R, kl, ku, nst, m = pi[0], pi[1], pi[2], pi[3], pi[4]
    perm = _span(pi, 5, R)
    stick = _span(pi, 5 + R, nst)
    o = 5 + R + nst
    jidx = _rows(_span(pi, o, 6 * m), 6)
    jnnz = _span(pi, o + 6 * m, m)
    fric = _span(pf, 0, ns)
    jv = _rows(_span(pf, ns, 6 * m), 6)
    W = 2 * kl + ku + 1
    o = 0
    qdd = _span(fb, o, n); o += n                                      # noqa: E702
    nu = _span(fb, o, R); o += R                                       # noqa: E702
    lam = _span(fb, o, ns); o += ns                                    # noqa: E702
    F = _span(fb, o, ns); o += ns                                      # noqa: E702
    aT = _span(fb, o, ns); o += ns                                     # noqa: E702
    Q = _span(fb, o, n); o += n                                        # noqa: E702
    gN = _span(fb, o, ns); o += ns                                     # noqa: E702
    bN = _span(fb, o, ns); o += ns                                     # noqa: E702
    vN = _span(fb, o, ns); o += ns                                     # noqa: E702
    bT = _span(fb, o, ns); o += ns                                     # noqa: E702
    vT = _span(fb, o, ns); o += ns                                     # noqa: E702
    snv = _rows(_span(fb, o, 6 * ns), 6); o += 6 * ns            # noqa: E702
    stv = _rows(_span(fb, o, 6 * ns), 6); o += 6 * ns            # noqa: E702
    b = _span(fb, o, R); o += R                                        # noqa: E702
    rhs = _span(fb, o, R); o += R                                      # noqa: E702
    y = _span(fb, o, R); o += R                                        # noqa: E702
    cv = _rows(_span(fb, o, 6 * R), 6); o += 6 * R                # noqa: E702
    gv = _rows(_span(fb, o, 6 * R), 6); o += 6 * R                # noqa: E702
    S = _rows(_span(fb, o, R * W), W)
    sidx = _rows(_span(ib, 0, 6 * ns), 6)
    snnz = _span(ib, 6 * ns, ns)
    idx = _rows(_span(ib, 7 * ns, 6 * R), 6)
    nnz = _span(ib, 7 * ns + 6 * R, R)

    V, T = 0.0, 0.0
    for i in range(n):
        Q[i] = gravity[i] + (Qx[i] if Qx.size else 0.0)
        V -= gravity[i] * q[i]
        T += 0.5 * qd[i] * qd[i] / minv[i]
    dV, P, bad = pair_forces(q, qd, bx, bphi, pa_, pb_, ppa, ppb, is_spring, pk, pL0, pc, Q)
    if bad >= 0:
        return False, bad, T, V, P
    V += dV
    P += apply_point_forces(q, qd, bx, bphi, tbody, tpoint, tF, Q)
    slot_into(q, qd, bx, bphi, slider, guide, point, origin, direction, sidx, snv, stv, snnz, gN, bN, vN, bT, vT)
    mode_rows(ns, m, jidx, jv, jnnz, sidx, snv, stv, snnz, fric, stick, idx, cv, gv, nnz)
    for i in range(m):
        b[i] = bI[i]
    for k in range(ns):
        b[m + k] = bN[k] + 2.0 * alpha * vN[k] + beta * beta * gN[k]
    for j in range(stick.size):
        k = stick[j]
        b[m + ns + j] = bT[k] + 2.0 * alpha * vT[k]
    ok = band_solve(minv, Q, idx, cv, gv, nnz, b, perm, kl, ku, work, S, rhs, y, qdd, nu)
    diss = 0.0
    work_in = P
    for k in range(ns):
        lam[k] = nu[m + k]
        F[k] = fric[k] * lam[k]
    for j in range(stick.size):
        F[stick[j]] = nu[m + ns + j]
    for k in range(ns):
        s = bT[k]
        for e in range(snnz[k]):
            s += stv[k, e] * qdd[sidx[k, e]]
        aT[k] = s
        diss -= F[k] * vT[k]
        work_in += lam[k] * vN[k]
    for i in range(m):                 # joints do work when driven: ν·(J q̇)
        s = 0.0
        for e in range(jnnz[i]):
            s += jv[i, e] * qd[jidx[i, e]]
        work_in += nu[i] * s
    for i in range(n):
        out[i] = qd[i]
        out[n + i] = qdd[i]
    out[2 * n] = diss
    out[2 * n + 1] = work_in
    return ok, -1, T, V, P


@njit(cache=True)
def banded_lu_solve(A, kl, ku, X):
    """Solve ``A Y = X`` in place (A: n×n with ``kl`` sub- and ``ku`` super-diagonals, X: n×k; both overwritten,
    X by Y) by LU with partial pivoting inside the band, O(n·kl·(kl + ku + k)).  Returns False when A is
    (numerically) singular."""
    n = A.shape[0]
    k_ = X.shape[1]
    scale = 0.0
    for i in range(n):
        for j in range(max(0, i - kl), min(n, i + ku + 1)):
            scale = max(scale, abs(A[i, j]))
    tiny = 1e-13 * scale
    for k in range(n):
        last = min(n - 1, k + kl)
        piv, best = k, abs(A[k, k])
        for i in range(k + 1, last + 1):
            if abs(A[i, k]) > best:
                piv, best = i, abs(A[i, k])
        if not best > tiny:
            return False
        cend = min(n - 1, k + kl + ku)
        if piv != k:
            for j in range(k, cend + 1):
                A[k, j], A[piv, j] = A[piv, j], A[k, j]
            for j in range(k_):
                X[k, j], X[piv, j] = X[piv, j], X[k, j]
        d = A[k, k]
        for i in range(k + 1, last + 1):
            f = A[i, k] / d
            if f != 0.0:
                for j in range(k + 1, cend + 1):
                    A[i, j] -= f * A[k, j]
                for j in range(k_):
                    X[i, j] -= f * X[k, j]
    for k in range(n - 1, -1, -1):
        d = A[k, k]
        for j in range(k + 1, min(n - 1, k + kl + ku) + 1):
            f = A[k, j]
            if f != 0.0:
                for c in range(k_):
                    X[k, c] -= f * X[j, c]
        for c in range(k_):
            X[k, c] /= d
    return True


def pack_model(slot_table, pair_table, bx, bphi, tbody, tpoint, gravity, minv):
    """The static tables of :func:`general_mode` in one float and one int array (fewer arguments per call)."""
    slider, guide, point, origin, direction = slot_table
    a, b, pa, pb, is_spring, k, L0, c = pair_table
    sf = np.concatenate([point.ravel(), origin.ravel(), direction.ravel(), pa.ravel(), pb.ravel(), k, L0, c,
                         tpoint.ravel(), gravity, minv]).astype(float)
    si = np.concatenate([[minv.size, slider.size, a.size, tbody.size, bx.size], bx, bphi, slider, guide, a, b,
                         is_spring.astype(np.int64), tbody]).astype(np.int64)
    return sf, si


def pack_mode(fric, stick, perm, kl, ku, m):
    """The per-mode tables of :func:`general_mode` (``pf``, ``pi``), and views of their joint rows to fill."""
    R = perm.size
    pf = np.zeros(fric.size + 6 * m)
    pf[:fric.size] = fric
    pi = np.zeros(5 + R + stick.size + 7 * m, np.int64)
    pi[:5] = R, kl, ku, stick.size, m
    pi[5:5 + R] = perm
    pi[5 + R:5 + R + stick.size] = stick
    o = 5 + R + stick.size
    return pf, pi, (pi[o:o + 6 * m].reshape(m, 6), pf[fric.size:].reshape(m, 6), pi[o + 6 * m:o + 7 * m])


# opcodes of a time program (see assembly.time_program): push constant, push t, binary operators, negation,
# then the functions of the expression layer in this order
OP_CONST, OP_T, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_NEG = range(8)
FUNCTIONS = ("sin", "cos", "tan", "exp", "log", "sqrt", "asin", "acos", "atan", "sinh", "cosh", "tanh", "abs")


@njit(**_PLAIN)
def _function(k, x):
    if k == 0:
        return math.sin(x)
    if k == 1:
        return math.cos(x)
    if k == 2:
        return math.tan(x)
    if k == 3:
        return math.exp(x)
    if k == 4:
        return math.log(x) if x > 0 else math.nan
    if k == 5:
        return math.sqrt(x) if x >= 0 else math.nan
    if k == 6:
        return math.asin(x) if abs(x) <= 1 else math.nan
    if k == 7:
        return math.acos(x) if abs(x) <= 1 else math.nan
    if k == 8:
        return math.atan(x)
    if k == 9:
        return math.sinh(x)
    if k == 10:
        return math.cosh(x)
    if k == 11:
        return math.tanh(x)
    return abs(x)


@njit(**_PLAIN, error_model="numpy")
def run_time_program(t, prog, consts, tF):
    """Evaluate the time functions of ``prog`` at ``t`` into ``tF`` (entries ``tF[i, j]``).

    ``prog`` = [count, stack depth, then per function: i, j, length, (opcode, argument) × length], a postfix
    program of the opcodes above.  Returns False if some value is not finite (the caller then evaluates the
    expressions in Python, which say what is wrong).  The last ``max(prog[1], 1)`` entries of ``consts`` are the
    program's stack (scratch; :func:`pympc.mechanics.assembly.time_program` puts them there)."""
    stack = consts[consts.size - max(prog[1], 1):]
    o = 2
    ok = True
    for _ in range(prog[0]):
        i, j, L = prog[o], prog[o + 1], prog[o + 2]
        o += 3
        sp = 0
        for _e in range(L):
            op, arg = prog[o], prog[o + 1]
            o += 2
            if op == OP_CONST:
                stack[sp] = consts[arg]
                sp += 1
            elif op == OP_T:
                stack[sp] = t
                sp += 1
            elif op <= OP_POW:
                b = stack[sp - 1]
                a = stack[sp - 2]
                sp -= 1
                if op == OP_ADD:
                    r = a + b
                elif op == OP_SUB:
                    r = a - b
                elif op == OP_MUL:
                    r = a * b
                elif op == OP_DIV:
                    r = a / b if b != 0.0 else math.nan
                else:
                    r = a ** b if (a > 0.0 or b == math.floor(b)) and not (a == 0.0 and b < 0.0) else math.nan
                stack[sp - 1] = r
            elif op == OP_NEG:
                stack[sp - 1] = -stack[sp - 1]
            else:
                stack[sp - 1] = _function(op - OP_NEG - 1, stack[sp - 1])
        v = stack[0]
        if not math.isfinite(v):
            ok = False
        tF[i, j] = v
    return ok


@njit(**_PLAIN)
def general_mode_timed(t, q, qd, tF, Qx, bI, alpha, beta, sf, si, pf, pi, fb, ib, work, out, prog, consts):
    """:func:`general_mode` with the point forces of time alone evaluated first by
    :func:`run_time_program` into ``tF``; ``bad`` = −2 when one of them is not finite (nothing else is done)."""
    if prog[0] and not run_time_program(t, prog, consts, tF):
        return False, -2, 0.0, 0.0, 0.0
    return general_mode(q, qd, tF, Qx, bI, alpha, beta, sf, si, pf, pi, fb, ib, work, out)


def joint_layout(n, m):
    """The length of :func:`joint_mode`'s float scratch ``jw``: the joint rows ``g``, ``ġ``, ``ŵ`` (``m`` each),
    ``J`` (``m × n``), their stabilized biases (``m``) and the torques' generalized forces (``n``)."""
    return 4 * m + m * n + n


@njit(**_PLAIN)
def joint_mode(t, q, qd, tF, jw, alpha, beta, sf, si, pf, pi, fb, ib, work, out, prog, consts, jf, ji):
    """:func:`general_mode_timed` for a model whose joints are pins and whose forces of the state are constant
    torques (the tables of :func:`pack_joints`; ``ji`` empty: neither), with what
    ``AbsoluteModel.python_parts`` computes for it done here, in its arithmetic: the pins' rows by
    :func:`revolute_rows` into ``jw`` (:func:`joint_layout`: ``g``, ``ġ``, ``ŵ``, ``J``), their biases
    ``ŵ + 2α ġ + β² g`` (every pin row is position-level), their nonzeros into the mode's joint rows (as
    :func:`dense_rows`), the torques' generalized forces (summed from zero, as ``Qx``) and their power, added to
    ``out``'s last entry and to the returned power as the caller adds ``Px``.  Returns ``(ok, bad, T, V, P)``
    as :func:`general_mode_timed`."""
    n, ns = si[0], si[1]
    m, nj, ntq = (ji[0], ji[1], ji[2]) if ji.size else (0, 0, 0)
    g, gd, w = _span(jw, 0, m), _span(jw, m, m), _span(jw, 2 * m, m)
    J = _rows(_span(jw, 3 * m, m * n), n)
    o = 3 * m + m * n
    bI = _span(jw, o, m)
    Qx = _span(jw, o + m, n)
    if prog[0] and not run_time_program(t, prog, consts, tF):
        return False, -2, 0.0, 0.0, 0.0
    if m:
        nb = si[4]
        pin_rows(q, qd, _span(si, 5, nb), _span(si, 5 + nb, nb), jf, ji, g, J, w, gd)
    for r in range(m):
        bI[r] = w[r] + 2.0 * alpha * gd[r] + beta * beta * g[r]
    R, nst = pi[0], pi[3]
    oj = 5 + R + nst
    jidx = _rows(_span(pi, oj, 6 * m), 6)
    jnnz = _span(pi, oj + 6 * m, m)
    jv = _rows(_span(pf, ns, 6 * m), 6)
    for r in range(m):
        e = 0
        for c in range(n):
            if J[r, c] != 0.0:
                jidx[r, e], jv[r, e] = c, J[r, c]
                e += 1
        jnnz[r] = e
    Px = 0.0
    for i in range(n):
        Qx[i] = 0.0
    for k in range(ntq):          # the constant torques: on the angle column, power τ ω
        c = ji[3 + 3 * nj + k]
        tau = jf[4 * nj + k]
        Qx[c] += tau
        Px += tau * qd[c]
    ok, bad, T, V, P = general_mode(q, qd, tF, Qx, bI, alpha, beta, sf, si, pf, pi, fb, ib, work, out)
    if ok and bad == -1 and Px != 0.0:
        out[2 * n + 1] += Px
    return ok, bad, T, V, P + Px


@njit(cache=True)
def dense_to_csr(A):
    """``(data, indices, indptr)`` of the nonzero entries of the dense matrix ``A``, row by row (what
    ``scipy.sparse.csr_matrix(A)`` stores, without its temporary arrays of every index)."""
    k, n = A.shape
    indptr = np.zeros(k + 1, np.int64)
    for i in range(k):
        c = 0
        for j in range(n):
            if A[i, j] != 0.0:
                c += 1
        indptr[i + 1] = indptr[i] + c
    indices = np.empty(indptr[k], np.int64)
    data = np.empty(indptr[k])
    e = 0
    for i in range(k):
        for j in range(n):
            if A[i, j] != 0.0:
                indices[e] = j
                data[e] = A[i, j]
                e += 1
    return data, indices, indptr


@njit(cache=True)
def permute_into(data, indices, indptr, pos, out):
    """``out[pos[i], pos[j]] = S[i, j]`` for the stored entries of the CSR matrix S (``out`` zero on entry);
    returns the lower and upper bandwidths ``(kl, ku)`` of the permuted matrix."""
    kl, ku = 0, 0
    for i in range(indptr.size - 1):
        for e in range(indptr[i], indptr[i + 1]):
            r, c = pos[i], pos[indices[e]]
            out[r, c] = data[e]
            if r - c > kl:
                kl = r - c
            if c - r > ku:
                ku = c - r
    return kl, ku


@njit(cache=True)
def _point_into(q, qd, bx, bphi, b, sx, sy, row, sign, r0, g, J, w, gd):
    """Add ``sign`` × (position, velocity, Jacobian, q̇-quadratic acceleration) of the point (sx, sy) of body b
    to the two rows ``r0``, ``r0 + 1`` of a revolute joint (b < 0: the ground; the point is fixed)."""
    if b < 0:
        g[r0] += sign * sx
        g[r0 + 1] += sign * sy
        return
    i, j = bx[b], bphi[b]
    if j < 0:
        g[r0] += sign * (q[i] + sx)
        g[r0 + 1] += sign * (q[i + 1] + sy)
        gd[r0] += sign * qd[i]
        gd[r0 + 1] += sign * qd[i + 1]
        J[r0, i] += sign * 1.0
        J[r0 + 1, i + 1] += sign * 1.0
        return
    c, s = math.cos(q[j]), math.sin(q[j])
    rx, ry = c * sx + -s * sy, s * sx + c * sy
    om = qd[j]
    g[r0] += sign * (q[i] + rx)
    g[r0 + 1] += sign * (q[i + 1] + ry)
    gd[r0] += sign * (qd[i] + om * -ry)
    gd[r0 + 1] += sign * (qd[i + 1] + om * rx)
    w[r0] += sign * (-om * om * rx)
    w[r0 + 1] += sign * (-om * om * ry)
    J[r0, i] += sign * 1.0
    J[r0, j] += sign * -ry
    J[r0 + 1, i + 1] += sign * 1.0
    J[r0 + 1, j] += sign * rx


@njit(cache=True)
def revolute_rows(q, qd, bx, bphi, rows, ba, pa, bb, pb, g, J, w, gd):
    """The two rows of each revolute joint k (from row ``rows[k]``): g = r_a − r_b, its Jacobian, ġ and the
    acceleration bias ŵ = a_a − a_b (``g``, ``J``, ``w``, ``gd`` zero in those rows on entry)."""
    for k in range(rows.size):
        r0 = rows[k]
        _point_into(q, qd, bx, bphi, ba[k], pa[k, 0], pa[k, 1], r0, 1.0, r0, g, J, w, gd)
        _point_into(q, qd, bx, bphi, bb[k], pb[k, 0], pb[k, 1], r0, -1.0, r0, g, J, w, gd)


FLAT_HEADER = 20
"""Length of the header of the int array of :func:`general_mode_flat` (offsets and lengths, see :func:`pack_flat`)."""


def pack_flat(alpha, beta, sf, pf, fb_size, n, tF, consts, si, pi, ib_size, prog):
    """One float and one int array holding everything :func:`general_mode_timed` reads besides the state, and
    the offsets of the mode's buffers in them: ``(fl, il, (o_fb, o_ib))``.

    For a model without Python parts (no joints, no forces of the state): the evaluation is then
    :func:`general_mode_flat` with five arguments (a compiled call costs about as many µs as it has
    arrays to check and unpack)."""
    fpieces = [np.array([alpha, beta], float), sf, pf, np.zeros(fb_size), np.zeros(n), tF.ravel(), consts]
    ipieces = [si, pi, np.zeros(ib_size, np.int64), prog]
    fo = np.cumsum([0] + [p.size for p in fpieces])
    io = np.cumsum([FLAT_HEADER] + [p.size for p in ipieces])
    head = np.zeros(FLAT_HEADER, np.int64)
    head[:2] = n, tF.shape[0]
    head[2:2 + 2 * 6] = np.column_stack([fo[1:7], fo[2:8] - fo[1:7]]).ravel()      # sf, pf, fb, work, tF, consts
    head[14:14 + 2 * 3] = np.column_stack([io[:3], io[1:4] - io[:3]]).ravel()      # si, pi, ib
    fl = np.concatenate(fpieces).astype(float)
    il = np.concatenate([head] + ipieces).astype(np.int64)
    return fl, il, (int(fo[3]), int(io[2]))


@njit(**_PLAIN)
def general_mode_flat(t, x, fl, il, out):
    """:func:`general_mode_timed` at ``(t, q = x[:n], q̇ = x[n:2n])`` on the arrays of :func:`pack_flat`
    (no joints, no other generalized forces)."""
    n, nt = il[0], il[1]
    sf = _span(fl, il[2], il[3])
    pf = _span(fl, il[4], il[5])
    fb = _span(fl, il[6], il[7])
    work = _span(fl, il[8], il[9])
    tF = _rows(_span(fl, il[10], il[11]), 2)
    consts = _span(fl, il[12], il[13])
    si = _span(il, il[14], il[15])
    pi = _span(il, il[16], il[17])
    ib = _span(il, il[18], il[19])
    prog = _span(il, il[18] + il[19], il.size - il[18] - il[19])
    none = _span(fl, 0, 0)
    return general_mode_timed(t, _span(x, 0, n), _span(x, n, n), tF, none, none, fl[0], fl[1], sf, si, pf, pi, fb, ib, work,
                              out, prog, consts)


from .._compiling import cache_by_content  # noqa: E402  (the cache keyed by all kernel sources)

cache_by_content(globals())
