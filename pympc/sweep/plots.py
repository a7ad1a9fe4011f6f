"""Regime maps: any observable over one parameter (a curve) or two (a map), from a sweep's results.

Matplotlib's object API only (``matplotlib.figure.Figure``): no backend is
selected and nothing process-wide changes; save with ``fig.savefig(path)``.
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionError
from .observables import CATEGORICAL

__all__ = ["plot_regime"]

_COLOURS = {  # fixed colours for the categories that mean the same in every map
    "SUCCESS": "#4c9f50", "PARADOX": "#d1495b", "ZENO": "#edae49", "EVENT_LIMIT": "#8d6a9f",
    "INTEGRATION_FAILED": "#6b4226", "MODE_FAILURE": "#f08a4b", "SOLVER_FAILURE": "#a0a0a0", "ERROR": "#444444",
    "INTERRUPTED": "#cccccc", "FAILED": "#000000",
    "UNIQUE": "#3a7ca5", "FINITE": "#f4a259", "NONE": "#bc4b51", "CONTINUUM": "#8e7dbe", "not enumerated": "#bbbbbb",
}
_LABELS = {"UNIQUE": "UNIQUE (one solution)", "FINITE": "FINITE (several)", "NONE": "NONE (no solution)"}


def plot_regime(results, observable, x=None, y=None, ax=None, title=None):
    """Draw ``observable`` over the swept parameters.

    Parameters
    ----------
    results : pandas.DataFrame or str or Path
        :func:`~pympc.sweep.load_results`'s frame, or the store directory.
    observable : str
        A result column (``status``, ``start_hlcp``, ``n_SLIP_STOP``, ``stick.slot``, ...).
    x, y : str, optional
        Parameters for the axes (default: the swept ones; one gives a curve,
        two a map).
    ax : matplotlib.axes.Axes, optional
        Draw here; default: a new :class:`matplotlib.figure.Figure`.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Categorical columns (statuses, classifications, strings) get one
        colour per category and a legend; numbers a colour bar (maps) or a
        line (curves).  Runs without a value (failed) are left blank.
    """
    from .store import load_results
    df = results if hasattr(results, "columns") else load_results(results)
    axes = list(df.attrs.get("parameters") or [])
    if x is None:
        if not axes or len(axes) > 2:
            raise OptionError(f"plot_regime: give x (and y): the swept parameters are {axes}")
        x, y = axes[0], (axes[1] if len(axes) == 2 else None)
    for name in (x, y, observable):
        if name is not None and name not in df.columns:
            what = "observable" if name == observable else "parameter"
            cols = [c for c in df.columns if c not in ("traceback", "key", "model", "model_hash", "pympc_version")]
            raise OptionError(f"plot_regime: no {what} column {name!r} in the results; columns: {cols}")
    if ax is None:
        from matplotlib.figure import Figure
        fig = Figure(figsize=(7.0, 5.0) if y is not None else (7.0, 4.0), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    vals = df[observable]
    categorical = observable in CATEGORICAL or not np.issubdtype(vals.dtype, np.number) or vals.dtype == bool
    xs = df[x].to_numpy(float)
    if categorical:
        v = vals.astype(object).where(vals.notna(), None)
        cats = sorted({c for c in v if c is not None and c == c}, key=lambda c: (c not in _COLOURS, str(c)))
        fallback = iter(["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#17becf", "#e377c2", "#7f7f7f", "#bcbd22"] * 4)
        colours = {c: _COLOURS.get(str(c)) or next(fallback) for c in cats}
        code = np.array([cats.index(c) if c in colours else np.nan for c in v], float)
    else:
        code = vals.to_numpy(float)
    if y is None:
        order = np.argsort(xs, kind="stable")
        if categorical:
            for i, c in enumerate(cats):
                m = code[order] == i
                ax.scatter(xs[order][m], np.full(m.sum(), i), color=colours[c], label=_LABELS.get(str(c), str(c)), s=25)
            ax.set_yticks(range(len(cats)), [str(c) for c in cats])
        else:
            ax.plot(xs[order], code[order], "o-", ms=3)
            ax.set_ylabel(observable)
        ax.set_xlabel(x)
    else:
        ys = df[y].to_numpy(float)
        ux, uy = np.unique(xs), np.unique(ys)
        is_grid = len(set(zip(xs, ys))) == len(df) and len(df) >= 0.5 * ux.size * uy.size   # a grid, maybe unfinished
        if is_grid:
            Z = np.full((uy.size, ux.size), np.nan)
            Z[np.searchsorted(uy, ys), np.searchsorted(ux, xs)] = code
        if categorical:
            from matplotlib.colors import BoundaryNorm, ListedColormap
            from matplotlib.patches import Patch
            cmap = ListedColormap([colours[c] for c in cats] or ["#ffffff"])
            norm = BoundaryNorm(np.arange(len(cats) + 1) - 0.5, max(1, len(cats)))
            if is_grid:
                ax.pcolormesh(_edges(ux), _edges(uy), np.ma.masked_invalid(Z), cmap=cmap, norm=norm)
            else:
                ax.scatter(xs, ys, c=code, cmap=cmap, norm=norm, s=30)
            ax.legend(handles=[Patch(color=colours[c], label=_LABELS.get(str(c), str(c))) for c in cats],
                      loc="upper left", bbox_to_anchor=(1.01, 1.0), title=observable, frameon=False)
        else:
            art = (ax.pcolormesh(_edges(ux), _edges(uy), np.ma.masked_invalid(Z), cmap="viridis") if is_grid
                   else ax.scatter(xs, ys, c=code, s=30, cmap="viridis"))
            fig.colorbar(art, ax=ax, label=observable)
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        if _geometric(uy):
            _log_axis(ax.yaxis, ax.set_yscale)
    if _geometric(np.unique(xs)):
        _log_axis(ax.xaxis, ax.set_xscale)
    ax.set_title(title or (f"{observable} over ({x}, {y})" if y else f"{observable} over {x}"))
    return fig


def _geometric(v):
    """Values spaced evenly on a log scale (and not on a linear one): draw that axis logarithmic."""
    v = np.unique(np.asarray(v, float))
    if v.size < 3 or np.any(v <= 0):
        return False
    r, d = v[1:] / v[:-1], np.diff(v)
    return bool(np.allclose(r, r[0], rtol=1e-6) and not np.allclose(d, d[0], rtol=1e-6))


def _edges(v):
    """Cell edges around grid values: midpoints (geometric ones on a log-spaced axis)."""
    v = np.asarray(v, float)
    if v.size == 1:
        return v[0] + np.array([-0.5, 0.5]) * (0.2 * abs(v[0]) or 1.0)
    w = np.log(v) if _geometric(v) else v
    mid = 0.5 * (w[1:] + w[:-1])
    e = np.concatenate([[2 * w[0] - mid[0]], mid, [2 * w[-1] - mid[-1]]])
    return np.exp(e) if _geometric(v) else e


def _log_axis(axis, set_scale):
    from matplotlib.ticker import NullFormatter
    set_scale("log")
    axis.set_minor_formatter(NullFormatter())
