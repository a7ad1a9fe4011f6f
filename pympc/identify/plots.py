"""Plots of an :class:`~pympc.identify.IdentificationResult` (matplotlib's object API; no backend is selected).

Every function returns a :class:`matplotlib.figure.Figure`; :func:`write_plots`
saves them all as PNG.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy import stats

from ..dynamics.plots import event_lines, output_unit

__all__ = ["plot_fit", "plot_residuals", "plot_profiles", "plot_region", "write_plots"]


def _figure(rows, cols=1, height=2.4, width=8.5):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height * rows))
    FigureCanvasAgg(fig)                 # drawn by Agg directly: no pyplot, the caller's backend is left alone
    axes = fig.subplots(rows, cols, squeeze=False)
    return fig, axes


def _outputs(result):
    return [(f, j, o) for f in result.fits for j, o in enumerate(f["outputs"])]


def _events(ax, f):
    """The fitted simulation's events, by kind (:func:`pympc.dynamics.plots.event_lines`); legend handles."""
    return event_lines(ax, [(t, kind) for t, kind, *_ in f["events"]])


def _legend(ax, extra=()):
    """Every labelled line of ``ax`` and the event kinds, right of the axes (off the data)."""
    handles, _ = ax.get_legend_handles_labels()
    if handles or extra:
        ax.legend(handles=handles + list(extra), fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0, frameon=False)


def plot_fit(result):
    """Data and the fitted simulation per experiment and output, with units; the simulation's events as lines by
    kind (breakaway red, slip stop green, normal force zero purple), explained in a legend beside each panel."""
    items = _outputs(result)
    fig, axes = _figure(max(1, len(items)), width=10.5)
    for ax, (f, j, o) in zip(axes[:, 0], items):
        t = np.asarray(f["t"])
        ax.plot(t, np.asarray(f["data"])[:, j], ".", ms=2.5, color="0.35", label="data")
        ax.plot(t, np.asarray(f["predicted"])[:, j], "-", color="tab:blue", lw=1.2, label="fit")
        _legend(ax, _events(ax, f))
        ax.set_ylabel(f"{o} [{output_unit(o)}]")
        ax.set_title(f["name"], fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("t [s]")
    fig.tight_layout()
    return fig


def plot_residuals(result):
    """Residuals (fit − data) per output, with ±2σ when the noise is known."""
    items = _outputs(result)
    fig, axes = _figure(max(1, len(items)), height=1.9, width=10.5)
    for ax, (f, j, o) in zip(axes[:, 0], items):
        t = np.asarray(f["t"])
        r = np.asarray(f["predicted"])[:, j] - np.asarray(f["data"])[:, j]
        ax.plot(t, r, ".", ms=2.5, color="tab:blue", label="fit − data")
        if f["sigma"] is not None:
            for s in (-2, 2):
                ax.axhline(s * f["sigma"][j], color="0.5", ls="--", lw=0.8,
                           label="±2σ (stated noise)" if s > 0 else None)
        _legend(ax, _events(ax, f))
        ax.set_ylabel(f"residual\n{o} [{output_unit(o)}]")
    axes[-1, 0].set_xlabel("t [s]")
    fig.tight_layout()
    return fig


def plot_profiles(result):
    """Profile likelihood of each profiled parameter: (SSE − SSE*)/σ² against its value, χ²₁ threshold dashed."""
    names = list(result.profiles)
    fig, axes = _figure(1, max(1, len(names)), height=3.0, width=4.0 * max(1, len(names)))
    for ax, n in zip(axes[0], names):
        pr = result.profiles[n]
        ax.plot(pr["values"], pr["deviance"], "o-", ms=3, label="profile")
        ax.axhline(pr["threshold"], color="tab:red", ls="--", lw=0.8, label="χ²₁ threshold")
        for k, v in enumerate(v for v in pr["interval"] if np.isfinite(v)):
            ax.axvline(v, color="0.5", ls=":", lw=0.8, label="interval" if k == 0 else None)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
        ax.set_xlabel(n)
        ax.set_title(f"{n}: {pr['kind']}", fontsize=9)
    axes[0, 0].set_ylabel("(SSE − SSE*)/σ² [-]")
    if not names:
        axes[0, 0].text(0.5, 0.5, "no profiles computed (result.profile(name))", ha="center",
                        transform=axes[0, 0].transAxes)
    fig.tight_layout()
    return fig


def plot_region(result, a=None, b=None):
    """The Wald confidence region of two parameters (ellipse at the result's level) and the multistart end points."""
    names = result.names
    a = a or names[0]
    b = b or (names[1] if len(names) > 1 else names[0])
    i, j = names.index(a), names.index(b)
    fig, axes = _figure(1, height=4.0, width=8.0)
    ax = axes[0, 0]
    C = result.covariance[np.ix_([i, j], [i, j])]
    c = result.optimum[[i, j]]
    if i != j and np.all(np.isfinite(C)):
        w, V = np.linalg.eigh(C)
        r = np.sqrt(stats.chi2.ppf(result.confidence, 2) * np.maximum(w, 0))
        s = np.linspace(0, 2 * np.pi, 200)
        pts = c[:, None] + V @ (r[:, None] * np.vstack([np.cos(s), np.sin(s)]))
        ax.plot(pts[0], pts[1], "-", color="tab:blue", label=f"{int(100 * result.confidence)}% Wald region")
        lo, hi = pts.min(axis=1), pts.max(axis=1)
        pad = 0.5 * (hi - lo) + 1e-12
        ax.set_xlim(lo[0] - pad[0], hi[0] + pad[0])
        ax.set_ylim(lo[1] - pad[1], hi[1] + pad[1])
    st = result.starts
    if st is not None and len(st):
        ends = st[[f"{a}_end", f"{b}_end"]].to_numpy(dtype=float)
        near = st["at_best"].to_numpy(dtype=bool)
        ax.plot(ends[near, 0], ends[near, 1], "x", color="0.4",
                label=f"start ends at the best cost ({int(near.sum())} of {len(st)})")
    ax.plot(*c, "o", color="tab:blue", label="estimate")
    ax.set_xlabel(a)
    ax.set_ylabel(b)
    _legend(ax)
    fig.tight_layout()
    return fig


def write_plots(result, out_dir):
    """Save fit, residuals, profiles (if any) and the first pair's region as PNG files; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figs = {"fit": plot_fit(result), "residuals": plot_residuals(result)}
    if result.profiles:
        figs["profiles"] = plot_profiles(result)
    if len(result.names) > 1:
        figs["region"] = plot_region(result)
    paths = []
    for name, fig in figs.items():
        path = out / f"identify_{name}.png"
        fig.savefig(path, dpi=100)
        paths.append(path)
    return paths
