"""PNG plots of a :class:`~pympc.dynamics.Trajectory` (matplotlib's object API, nothing process-wide).

Figures are :class:`matplotlib.figure.Figure` objects drawn by the Agg canvas
directly: no ``pyplot``, no ``matplotlib.use``, so a caller's backend and
interactive figures are left alone.  Every axis carries its unit.  Curves of one
quantity whose ranges differ by more than a factor :data:`SPLIT_RATIO` go to
separate panels (a body falling 180 m does not flatten a slider moving 1 cm);
a panel shows at most :data:`MAX_CURVES` labelled curves (the largest ranges)
and the band of the others; with many slots the forces and modes are drawn as
heat maps over time and slot.  Legends sit outside the data, right of the axes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_trajectory", "trajectory_figures", "MAX_CURVES", "SPLIT_RATIO", "HEATMAP_SLOTS"]

MAX_CURVES = 8
"""Labelled curves per panel at most; the rest are drawn as a grey band (their min..max)."""
SPLIT_RATIO = 20.0
"""Curves whose range is smaller than the largest one's by more than this get a panel of their own."""
HEATMAP_SLOTS = 6
"""With more slots than this, normal/friction forces and modes are heat maps (time × slot)."""


def _figure(rows, height=2.4):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 0.6 + height * rows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, axes


def _events(ax, tr, many=200):
    times = [e.time for e in tr.events[1:]]
    if len(times) > many:                # a rug instead of hundreds of lines
        ax.plot(times, np.zeros(len(times)), "|", color="0.6", ms=6, transform=ax.get_xaxis_transform(), zorder=0)
        return
    for t in times:
        ax.axvline(t, color="0.85", lw=0.6, zorder=0)


def _legend(ax, n):
    if n:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)


def _split(data):
    """Column groups whose ranges are within SPLIT_RATIO of each other (largest first); constant columns last."""
    rng = np.ptp(data, axis=0) if data.size else np.zeros(data.shape[1])
    rng = np.where(rng <= 1e-9 * rng.max(initial=0), 0.0, rng)      # round-off wiggles count as constant
    order = [int(i) for i in np.argsort(-rng)]
    groups, current, top = [], [], None
    for i in order:
        if top is not None and rng[i] * SPLIT_RATIO < top and rng[i] > 0:
            groups.append(current)
            current, top = [], None
        if top is None and rng[i] > 0:
            top = rng[i]
        current.append(i)
    if current:
        groups.append(current)
    while len(groups) > 3:          # at most three panels per quantity: the smallest ranges share the last
        groups[-2:] = [groups[-2] + groups[-1]]
    return groups


def _curves(ax, t, data, names, cols, unit):
    """Up to MAX_CURVES labelled curves of ``cols`` (largest range first), the rest as a band."""
    shown, rest = cols[:MAX_CURVES], cols[MAX_CURVES:]
    for i in shown:
        ax.plot(t, data[:, i], lw=1.1, label=names[i])
    if rest:
        lo, hi = data[:, rest].min(axis=1), data[:, rest].max(axis=1)
        ax.fill_between(t, lo, hi, color="0.7", alpha=0.6, lw=0, label=f"{len(rest)} others (min..max)")
    ax.set_ylabel(unit)
    _legend(ax, len(shown) + bool(rest))


def _quantity_panels(tr, data, names, unit_of):
    """(columns, unit) per panel: split by unit, then by range."""
    panels = []
    for unit in dict.fromkeys(unit_of(n) for n in names):
        cols = [i for i, n in enumerate(names) if unit_of(n) == unit]
        for g in _split(data[:, cols]):
            panels.append(([cols[j] for j in g], unit))
    return panels


def _coordinate_unit(name, rate=False):
    rot = name.endswith(".phi") or name.endswith(".angle")
    base = "rad" if rot else "m"
    return f"{base}/s" if rate else base


def _heatmap(fig, ax, tr, values, label, cmap, vmin=None, vmax=None, ticks=None, ticklabels=None, extend="neither"):
    s = values.shape[1]
    t = tr.t
    edges = np.concatenate([[t[0]], 0.5 * (t[1:] + t[:-1]), [t[-1]]]) if len(t) > 1 else np.array([t[0], t[0] + 1])
    mesh = ax.pcolormesh(edges, np.arange(s + 1) - 0.5, values.T, cmap=cmap, vmin=vmin, vmax=vmax, shading="flat")
    step = max(1, int(np.ceil(s / 12)))
    ax.set_yticks(range(0, s, step), [tr.slot_names[k] for k in range(0, s, step)], fontsize=7)
    ax.set_ylabel("slot")
    cb = fig.colorbar(mesh, ax=ax, pad=0.01, ticks=ticks, extend=extend)
    cb.set_label(label, fontsize=8)
    if ticklabels is not None:
        cb.ax.set_yticklabels(ticklabels, fontsize=7)


def plot_trajectory(tr, out_dir, prefix=""):
    """Write coordinates, velocities, slot forces, the mode timeline and the energy balance as PNGs.

    Parameters
    ----------
    tr : Trajectory
    out_dir : path
        Directory (created if needed).
    prefix : str
        Prepended to the file names.

    Returns
    -------
    list of Path
        The files written: ``coordinates.png``, ``velocities.png``, ``energy.png`` and, with slots,
        ``forces.png`` and ``modes.png``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, fig in trajectory_figures(tr).items():
        path = out / f"{prefix}{name}.png"
        fig.savefig(path, dpi=100)
        files.append(path)
    return files


def trajectory_figures(tr):
    """The figures of :func:`plot_trajectory` as ``{name: matplotlib.figure.Figure}`` (Agg canvas, not shown)."""
    figures = {}

    def save(fig, name, axes):
        axes[-1].set_xlabel("t [s]")
        figures[name] = fig

    names = list(tr.coordinate_names)
    for name, data, rate, title in (("coordinates", tr.q, False, "coordinates"),
                                    ("velocities", tr.qd, True, "velocities")):
        panels = _quantity_panels(tr, data, names, lambda n: _coordinate_unit(n, rate)) or [([], "m")]
        fig, axes = _figure(len(panels))
        for ax, (cols, unit) in zip(axes, panels):
            _curves(ax, tr.t, data, names, cols, f"{title} [{unit}]")
            _events(ax, tr)
        save(fig, name, axes)

    s = len(tr.slot_names)
    if s:
        fig, axes = _figure(2)
        if s > HEATMAP_SLOTS:
            for ax, data, lab, cmap in ((axes[0], tr.normal_force, "normal force λ [N]", "RdBu_r"),
                                        (axes[1], tr.friction_force, "friction force F [N]", "PuOr_r")):
                # the colour scale follows most slots; one far larger slot saturates (arrow on the colour bar)
                lim = max(1e-300, float(np.percentile(np.abs(data), 98)) if data.size else 1.0)
                big = data.size and np.abs(data).max() > lim
                _heatmap(fig, ax, tr, data, lab + (" (beyond the arrows: saturated)" if big else ""), cmap,
                         -lim, lim, extend="both" if big else "neither")
        else:
            for ax, data, lab, sym in ((axes[0], tr.normal_force, "normal force λ [N]", "λ"),
                                       (axes[1], tr.friction_force, "friction force F [N]", "F")):
                for k, n in enumerate(tr.slot_names):
                    ax.plot(tr.t, data[:, k], lw=1.1, label=f"{n} {sym}")
                ax.axhline(0, color="k", lw=0.5)
                ax.set_ylabel(lab)
                _legend(ax, s)
                _events(ax, tr)
        save(fig, "forces", axes)

        from matplotlib.colors import ListedColormap
        fig, axes = _figure(2 if s > HEATMAP_SLOTS else 1, height=max(2.4, min(6.0, 0.35 * s)) if s <= HEATMAP_SLOTS
                            else 2.8)
        motion_cmap = ListedColormap(["tab:blue", "tab:red", "tab:green"])
        if s > HEATMAP_SLOTS:
            _heatmap(fig, axes[0], tr, tr.motions, "motion", motion_cmap, -1.5, 1.5, [-1, 0, 1],
                     ["slip backward", "stick", "slip forward"])
            _heatmap(fig, axes[1], tr, tr.walls, "wall σ", ListedColormap(["0.35", "0.85"]), -2, 2, [-1, 1],
                     ["− wall", "+ wall"])
        else:
            ax = axes[0]
            labels = {-1: "slip backward", 0: "stick", 1: "slip forward"}
            for k in range(s):
                m, w = tr.motions[:, k], tr.walls[:, k]
                for val in (-1, 0, 1):
                    sel = m == val
                    ax.scatter(tr.t[sel], np.full(sel.sum(), k) + 0.15 * w[sel], s=4,
                               color=motion_cmap.colors[val + 1], label=labels[val] if k == 0 else None)
            ax.set_yticks(range(s), tr.slot_names)
            ax.set_ylim(-0.6, s - 0.4)
            ax.set_ylabel("slot (offset ↑/↓: wall +/−)")
            _events(ax, tr)
            _legend(ax, 3)
        save(fig, "modes", axes)

    enames = ["kinetic", "potential", "dissipated by friction", "work put in"]
    energies = np.column_stack([tr.kinetic, tr.potential, tr.dissipated, tr.work])
    groups = _split(energies)
    fig, axes = _figure(len(groups) + 1)
    for ax, cols in zip(axes, groups):
        _curves(ax, tr.t, energies, enames, cols, "energy [J]")
        _events(ax, tr)
    ax = axes[-1]
    bal = tr.energy_balance
    ax.plot(tr.t, bal - bal[0], color="k", lw=1.0, label="kinetic + potential + dissipated − work,\nchange from t₀")
    ax.set_ylabel("balance error [J]")
    _legend(ax, 1)
    _events(ax, tr)
    save(fig, "energy", axes)
    return figures
