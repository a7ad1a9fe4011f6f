"""Design maps: a criterion over two design variables with the friction regimes drawn on it, and confidence ellipses."""

from __future__ import annotations

import numpy as np

from ..errors import OptionError

__all__ = ["plot_design_map", "plot_ellipses"]

_REGIME_STYLE = {"never sticks": ("o", "#d1495b"), "stick-slip": ("s", "#ffffff"), "always sticks": ("^", "#3a7ca5")}


def plot_design_map(results, x, y, criterion=None, slot=None, ax=None, title=None):
    """The criterion over design variables ``x`` and ``y`` with the regimes of ``slot`` drawn on it.

    Parameters
    ----------
    results : DataFrame
        :func:`~pympc.design.explore`'s rows (a grid gives a filled map, a sample a scatter).
    x, y : str
        Design variables (columns).
    criterion : str, optional
        D, A, E, ME or any numeric column (default: the spec's criterion).  Singular
        and failed designs are left blank.
    slot : str, optional
        Whose regime to draw (default: the first ``regime.<slot>`` column): a marker per
        design (never sticks / stick-slip / always sticks) and the boundaries between regimes.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..sweep.plots import plot_regime
    criterion = criterion or results.attrs.get("criterion", "D")
    cols = [c for c in results.columns if c.startswith("regime.")]
    if slot is None and cols:
        slot = cols[0][len("regime."):]
    rcol = f"regime.{slot}"
    for c in (x, y, criterion) + ((rcol,) if slot else ()):
        if c not in results.columns:
            raise OptionError(f"plot_design_map: no column {c!r} in the results; columns: {list(results.columns)}")
    df = results.copy()
    df[criterion] = df[criterion].astype(float).replace([np.inf, -np.inf], np.nan)
    fig = plot_regime(df, criterion, x, y, ax=ax, title=title or f"{criterion} over ({x}, {y}); regimes of {slot}")
    ax = fig.axes[0] if ax is None else ax
    if slot:
        xs, ys, reg = df[x].to_numpy(float), df[y].to_numpy(float), df[rcol].astype(str).to_numpy()
        for r, (marker, colour) in _REGIME_STYLE.items():
            m = reg == r
            if m.any():
                ax.scatter(xs[m], ys[m], marker=marker, facecolor=colour, edgecolor="k", s=28, label=r, zorder=3)
        ux, uy = np.unique(xs), np.unique(ys)
        if len(df) == ux.size * uy.size and ux.size > 1 and uy.size > 1:   # a full grid: regime boundaries
            code = np.full((uy.size, ux.size), np.nan)
            levels = {r: i for i, r in enumerate(_REGIME_STYLE)}
            code[np.searchsorted(uy, ys), np.searchsorted(ux, xs)] = [levels.get(r, np.nan) for r in reg]
            if np.unique(code[np.isfinite(code)]).size > 1:
                ax.contour(ux, uy, code, levels=[0.5, 1.5], colors="k", linewidths=1.5, linestyles="--")
                ax.plot([], [], color="k", linewidth=1.5, linestyle="--", label="boundary between regimes")
        if df[criterion].isna().any():
            ax.fill([], [], facecolor="white", edgecolor="0.5", label=f"blank: no {criterion} (singular or failed)")
        ax.legend(loc="lower left", bbox_to_anchor=(1.01, 0.0), title=f"regime ({slot})", frameon=False, fontsize=8)
    return fig


def plot_ellipses(named, names, ax=None, confidence=0.95, title=None):
    """Confidence ellipses of two parameters, one per ``(label, centre, covariance[, colour])`` in ``named``.

    ``names`` labels the axes; the ellipse is {θ : (θ − c)ᵀ C⁻¹ (θ − c) ≤ χ²₂(confidence)}.
    Extra points (e.g. replicate estimates) can be drawn on the returned figure's axes.
    """
    from scipy.stats import chi2
    if ax is None:
        from matplotlib.figure import Figure
        fig = Figure(figsize=(5.5, 4.5), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    r = np.sqrt(chi2.ppf(confidence, 2))
    a = np.linspace(0, 2 * np.pi, 200)
    for item in named:
        label, c, C = item[:3]
        w, V = np.linalg.eigh(np.asarray(C, float))
        pts = np.asarray(c, float)[:, None] + r * V @ (np.sqrt(np.clip(w, 0, None))[:, None] * np.vstack([np.cos(a), np.sin(a)]))
        ax.plot(pts[0], pts[1], label=label, color=item[3] if len(item) > 3 else None)
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    ax.legend(frameon=False)
    ax.set_title(title or f"{int(100 * confidence)} % confidence ellipses")
    return fig
