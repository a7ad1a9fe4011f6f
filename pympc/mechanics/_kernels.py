"""Compiled (numba) loops of the assembly: friction slots, springs and dampers.

These are the parts of a system that come in numbers (a chain of 50 slots, 50
springs): one plain loop over the elements, compiled, instead of a Python loop
of small numpy operations.  Bodies are given by the columns of their ``x`` and
``phi`` coordinates (``-1`` for the ground, ``phi = -1`` for a particle).
"""

import math

import numpy as np
from numba import njit


@njit(cache=True)
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
    """Gaps, normal/tangential Jacobian rows, velocities and acceleration biases of every slot."""
    ns = slider.size
    gN, bN, vN = np.zeros(ns), np.zeros(ns), np.zeros(ns)
    bT, vT = np.zeros(ns), np.zeros(ns)
    WN, WT = np.zeros((ns, n)), np.zeros((ns, n))
    for k in range(ns):
        bs, bg = slider[k], guide[k]
        x, y, ph, vx, vy, ws = _frame(q, qd, bx, bphi, bs)
        c, s = math.cos(ph), math.sin(ph)
        px, py = c * point[k, 0] - s * point[k, 1], s * point[k, 0] + c * point[k, 1]
        ex, ey = -py, px                                   # E R s: the slider's phi column
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
        uv, nv = ux * dvx + uy * dvy, nx * dvx + ny * dvy
        gN[k] = nx * (rPx - Ax) + ny * (rPy - Ay)
        vN[k] = nv - wg * ud
        vT[k] = uv + wg * nd
        bN[k] = nx * cPx + ny * cPy - 2.0 * wg * uv - wg * wg * nd
        bT[k] = ux * cPx + uy * cPy + 2.0 * wg * nv - wg * wg * ud
        i = bx[bs]
        WN[k, i] += nx
        WN[k, i + 1] += ny
        WT[k, i] += ux
        WT[k, i + 1] += uy
        if bphi[bs] >= 0:
            WN[k, bphi[bs]] += nx * ex + ny * ey
            WT[k, bphi[bs]] += ux * ex + uy * ey
        if bg >= 0:
            i = bx[bg]
            WN[k, i] -= nx
            WN[k, i + 1] -= ny
            WT[k, i] -= ux
            WT[k, i + 1] -= uy
            if bphi[bg] >= 0:
                WN[k, bphi[bg]] -= ud
                WT[k, bphi[bg]] += nd
    return gN, WN, bN, vN, WT, bT, vT


@njit(cache=True)
def pair_forces(q, qd, bx, bphi, a, b, pa, pb, is_spring, k, L0, c, Q):
    """Add spring and damper forces to Q; returns (potential, damper power, index of a degenerate spring or -1)."""
    V, P = 0.0, 0.0
    for e in range(a.size):
        ends = ((a[e], pa[e, 0], pa[e, 1]), (b[e], pb[e, 0], pb[e, 1]))
        rx, ry, vx_, vy_ = np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2)
        ex, ey = np.zeros(2), np.zeros(2)
        for side in range(2):
            body, sx, sy = ends[side]
            x, y, ph, vx, vy, w = _frame(q, qd, bx, bphi, body)
            cc, ss = math.cos(ph), math.sin(ph)
            px, py = cc * sx - ss * sy, ss * sx + cc * sy
            ex[side], ey[side] = -py, px
            rx[side], ry[side] = x + px, y + py
            vx_[side], vy_[side] = vx - w * py, vy + w * px
        dx, dy = rx[0] - rx[1], ry[0] - ry[1]
        ddx, ddy = vx_[0] - vx_[1], vy_[0] - vy_[1]
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
            Q[bx[body]] += sign * Fx
            Q[bx[body] + 1] += sign * Fy
            if bphi[body] >= 0:
                Q[bphi[body]] += sign * (Fx * ex[side] + Fy * ey[side])
    return V, P, -1
