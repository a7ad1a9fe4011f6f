"""PNG plots of a :class:`~pympc.dynamics.Trajectory` (matplotlib, non-interactive backend)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["plot_trajectory"]


def _figure(rows):
    import matplotlib
    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(rows, 1, figsize=(9, 2.6 * rows), sharex=True, squeeze=False)
    return plt, fig, axes[:, 0]


def _events(ax, tr):
    for e in tr.events[1:]:
        ax.axvline(e.time, color="0.8", lw=0.6, zorder=0)


def plot_trajectory(tr, out_dir, prefix=""):
    """Write coordinates, velocities, slot forces, mode timeline and energy balance as PNGs.

    Returns
    -------
    list of Path
        The files written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = []

    def save(fig, plt, name):
        fig.tight_layout()
        path = out / f"{prefix}{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)

    for name, data, label in (("coordinates", tr.q, "coordinate"), ("velocities", tr.qd, "velocity")):
        plt, fig, (ax,) = _figure(1)
        for i, n in enumerate(tr.coordinate_names):
            ax.plot(tr.t, data[:, i], label=n)
        _events(ax, tr)
        ax.set_ylabel(label)
        ax.set_xlabel("t [s]")
        ax.legend(fontsize=7, ncol=4)
        save(fig, plt, name)
    s = len(tr.slot_names)
    if s:
        plt, fig, axes = _figure(2)
        for k, n in enumerate(tr.slot_names):
            axes[0].plot(tr.t, tr.normal_force[:, k], label=f"{n} λ")
            axes[1].plot(tr.t, tr.friction_force[:, k], label=f"{n} F")
        for ax, lab in zip(axes, ("normal force λ [N]", "friction force F [N]")):
            _events(ax, tr)
            ax.axhline(0, color="k", lw=0.5)
            ax.set_ylabel(lab)
            ax.legend(fontsize=7)
        axes[-1].set_xlabel("t [s]")
        save(fig, plt, "forces")
        plt, fig, (ax,) = _figure(1)
        colors = {-1: "tab:blue", 0: "tab:red", 1: "tab:green"}
        for k in range(s):
            m = tr.motions[:, k]
            for val, col in colors.items():
                sel = m == val
                ax.scatter(tr.t[sel], np.full(sel.sum(), k) + 0.15 * tr.walls[sel, k], s=4, color=col,
                           label={-1: "slip backward", 0: "stick", 1: "slip forward"}[val] if k == 0 else None)
        for e in tr.events[1:]:
            ax.axvline(e.time, color="0.6", lw=0.6, ls="--")
        ax.set_yticks(range(s), tr.slot_names)
        ax.set_xlabel("t [s]  (dashed: events; offset up/down: wall +/−)")
        ax.legend(fontsize=7, loc="upper right")
        save(fig, plt, "modes")
    plt, fig, (ax,) = _figure(1)
    for lab, v in (("kinetic", tr.kinetic), ("potential", tr.potential), ("dissipated by friction", tr.dissipated),
                   ("work put in", tr.work), ("kinetic + potential + dissipated − work", tr.energy_balance)):
        ax.plot(tr.t, v, label=lab)
    _events(ax, tr)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("energy [J]")
    ax.legend(fontsize=7)
    save(fig, plt, "energy")
    return files
