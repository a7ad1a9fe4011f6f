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

__all__ = ["plot_trajectory", "trajectory_figures", "event_lines", "output_unit", "parameter_title", "MAX_CURVES",
           "SPLIT_RATIO", "HEATMAP_SLOTS", "EVENT_STYLE"]

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


EVENT_STYLE = {"SLIP_STOP": ("tab:green", "--", "slip stops (event)"),
               "BREAKAWAY": ("tab:red", "--", "breakaway (event)"),
               "WALL_SWITCH": ("tab:purple", ":", "normal force zero (event)")}
"""Colour, line style and legend label of the event lines, by :class:`~pympc.dynamics.EventKind` name."""

_UNITS = {"normal_force": "N", "friction_force": "N", "slip_velocity": "m/s", "position": "m",
          "kinetic": "J", "potential": "J", "dissipated": "J", "work": "J", "t": "s"}


def output_unit(name):
    """The SI unit of an output named like a :meth:`Trajectory.to_dataframe` column (``"mass.x"`` → ``"m"``,
    ``"crank.phi_dot"`` → ``"rad/s"``, ``"slot.normal_force"`` → ``"N"``); ``"-"`` for wall and motion flags."""
    base, _, last = name.rpartition(".")
    if name in _UNITS or last in _UNITS:
        return _UNITS.get(name) or _UNITS[last]
    if last in ("wall", "motion"):
        return "-"
    rate = last.endswith("_dot")
    return _coordinate_unit(name[:-4] if rate else name, rate)


def parameter_title(tr, name=None, width=140):
    """A figure title: ``name`` (the model) and the parameter values of the run, wrapped at ``width`` characters
    (never inside ``name = value``)."""
    import textwrap
    params = ", ".join(f"{k}\u00a0=\u00a0{v:.6g}" for k, v in tr.parameters.items())
    head = f"{name}: " if name else ""
    return "\n".join(textwrap.wrap(head + (params or "(no parameters)"), width))


def event_lines(ax, events, many=200):
    """Vertical lines at the events (``(time, kind name)`` pairs; the start is left out), coloured and dashed by
    kind (:data:`EVENT_STYLE`); more than ``many`` become a rug of ticks.  Returns legend handles, one per kind drawn."""
    from matplotlib.lines import Line2D
    events = [(float(t), str(k)) for t, k in events if str(k) != "START"]
    handles = []
    for kind in dict.fromkeys(k for _, k in events):
        color, ls, label = EVENT_STYLE.get(kind, ("0.5", "-.", f"{kind.lower()} (event)"))
        times = [t for t, k in events if k == kind]
        if len(events) > many:               # a rug instead of hundreds of lines
            ax.plot(times, np.zeros(len(times)), "|", color=color, ms=6, transform=ax.get_xaxis_transform(), zorder=0)
            handles.append(Line2D([], [], color=color, marker="|", ls="", label=label))
            continue
        for t in times:
            ax.axvline(t, color=color, ls=ls, lw=0.7, alpha=0.6, zorder=0)
        handles.append(Line2D([], [], color=color, ls=ls, lw=0.7, label=label))
    return handles


def _events(ax, tr):
    ax._pympc_events = event_lines(ax, [(e.time, e.kind.name) for e in tr.events])


def _legend(ax, n=1):
    """The axes' labelled artists and its event lines, right of the axes (off the data)."""
    handles, labels = ax.get_legend_handles_labels()
    extra = getattr(ax, "_pympc_events", [])
    if handles or extra:
        ax.legend(handles=handles + extra, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0, frameon=False)


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


_STYLES = ("-", "--", ":", "-.")
_COLORS = ("tab:blue", "tab:orange", "tab:brown", "tab:cyan", "tab:olive", "tab:pink", "k", "tab:gray")
"""Curve colours: none of the event lines' colours (:data:`EVENT_STYLE`)."""


def _curves(ax, t, data, names, cols, unit):
    """Up to MAX_CURVES labelled curves of ``cols`` (largest range first), the rest as a band.

    Curves are told apart by colour and line style; a curve that coincides with one
    drawn before (within 1e-6 of the panel's range) is drawn dashed on top of it and
    says so in its label."""
    shown, rest = cols[:MAX_CURVES], cols[MAX_CURVES:]
    scale = max(1e-300, float(np.ptp(data[:, shown])) if data.size and shown else 1.0)
    for n, i in enumerate(shown):
        twin = next((j for j in shown[:n] if np.allclose(data[:, i], data[:, j], rtol=0, atol=1e-6 * scale)), None)
        label = names[i] if twin is None else f"{names[i]} (= {names[twin]})"
        ax.plot(t, data[:, i], lw=1.1 if twin is None else 1.6, ls=(0, (4, 3)) if twin is not None
                else _STYLES[n % len(_STYLES)], color=_COLORS[i % len(_COLORS)], label=label,
                zorder=3 if twin is not None else 2)
    if rest:
        lo, hi = data[:, rest].min(axis=1), data[:, rest].max(axis=1)
        ax.fill_between(t, lo, hi, color="0.7", alpha=0.6, lw=0, label=f"{len(rest)} others (min..max)")
    ax.set_ylabel(unit)
    _legend(ax)


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


def plot_trajectory(tr, out_dir, prefix="", title=None):
    """Write coordinates, velocities, slot forces and motion, the mode timeline and the energy balance as PNGs.

    Parameters
    ----------
    tr : Trajectory
    out_dir : path
        Directory (created if needed).
    prefix : str
        Prepended to the file names.
    title : str, optional
        Named in every figure's title (e.g. the model), before the run's parameter values.

    Returns
    -------
    list of Path
        The files written: ``coordinates.png``, ``velocities.png``, ``energy.png`` and, with slots,
        ``forces.png``, ``slots.png`` (along-slot coordinate and slip velocity) and ``modes.png``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return _write_figures(tr, out, prefix, title)


def _write_figures(tr, out_dir, prefix="", title=None, names=None):
    """Draw and write the figures ``names`` (default: all that ``tr`` has) of :func:`plot_trajectory`
    into the existing directory ``out_dir``, one at a time; the paths written, in the order of ``names``."""
    heading = parameter_title(tr, title)
    files = []
    for name in _figure_names(tr) if names is None else names:
        path = Path(out_dir) / f"{prefix}{name}.png"
        _BUILDERS[name](tr, heading).savefig(path, dpi=100)
        files.append(path)
    return files


_COST = {"coordinates": 3, "velocities": 3, "forces": 4, "slots": 4, "modes": 2, "energy": 4}
"""Rough relative drawing times of the figures (for :func:`_split_figures`)."""


def _split_figures(tr, parts):
    """:func:`_figure_names` of ``tr`` in ``parts`` groups of about equal drawing time (largest first, each to the
    least loaded group); empty groups left out."""
    groups = [[] for _ in range(max(1, parts))]
    load = [0] * len(groups)
    for name in sorted(_figure_names(tr), key=lambda n: -_COST[n]):
        k = load.index(min(load))
        groups[k].append(name)
        load[k] += _COST[name]
    return [g for g in groups if g]


def _figure_input(tr):
    """What the figures read of ``tr`` as plain data (arrays, names, events as time and kind), small and picklable:
    the input of :func:`_write_figures` in another process."""
    from types import SimpleNamespace
    fields = {k: getattr(tr, k) for k in ("t", "q", "qd", "normal_force", "friction_force", "slip_velocity", "walls",
                                          "motions", "kinetic", "potential", "dissipated", "work", "slot_position",
                                          "energy_balance", "parameters", "coordinate_names", "slot_names")}
    fields["events"] = [SimpleNamespace(time=float(e.time), kind=SimpleNamespace(name=e.kind.name)) for e in tr.events]
    return SimpleNamespace(**fields)


def _import_matplotlib():
    """Import what drawing the figures needs (matplotlib's Figure, the Agg canvas and its fonts)."""
    from matplotlib import font_manager
    from matplotlib.backends import backend_agg  # noqa: F401
    from matplotlib import figure  # noqa: F401
    font_manager.get_font(font_manager.findfont(font_manager.FontProperties()))


_MOTION = {-1: ("tab:blue", "slip backward"), 0: ("0.6", "stick"), 1: ("tab:orange", "slip forward")}
_WALL = {1: ("tab:brown", "load on wall σ = +1 (λ ≥ 0, the −n side)"),
         -1: ("tab:cyan", "load on wall σ = −1 (λ < 0, the +n side)")}


def _runs(t, values):
    """(start, width, value) of the stretches of constant ``values`` over the sample times ``t``."""
    cut = np.flatnonzero(np.diff(values) != 0) + 1
    starts, ends = np.concatenate([[0], cut]), np.concatenate([cut, [len(t) - 1]])
    return [(t[a], t[max(b, a)] - t[a], values[a]) for a, b in zip(starts, ends)]


def _timeline(ax, tr):
    """One lane per slot: a thick bar coloured by the motion over time, a thin bar under it by the wall."""
    s = len(tr.slot_names)
    for k in range(s):
        for t0, w, v in _runs(tr.t, tr.motions[:, k]):
            ax.broken_barh([(t0, w)], (k - 0.05, 0.4), color=_MOTION[int(v)][0], lw=0)
        for t0, w, v in _runs(tr.t, tr.walls[:, k]):
            ax.broken_barh([(t0, w)], (k - 0.3, 0.15), color=_WALL[1 if v >= 0 else -1][0], lw=0)
    ax.set_yticks(range(s), tr.slot_names)
    ax.set_ylim(-0.6, s - 0.4)
    ax.set_xlim(tr.t[0], tr.t[-1])
    ax.set_ylabel("slot: motion (thick), wall (thin)")
    used_m = sorted({int(v) for v in np.unique(tr.motions)})
    used_w = sorted({1 if v >= 0 else -1 for v in np.unique(tr.walls)}, reverse=True)
    for v in used_m:
        ax.bar(0, 0, color=_MOTION[v][0], label=_MOTION[v][1])
    for v in used_w:
        ax.bar(0, 0, color=_WALL[v][0], label=_WALL[v][1])


def _figure_names(tr):
    """The names of the figures of :func:`plot_trajectory` for ``tr``, in the order they are written: coordinates,
    velocities, then (with slots) forces, slots and modes, then energy."""
    return (["coordinates", "velocities"] + (["forces", "slots", "modes"] if len(tr.slot_names) else [])
            + ["energy"])


def trajectory_figures(tr, title=None, names=None):
    """The figures of :func:`plot_trajectory` as ``{name: matplotlib.figure.Figure}`` (Agg canvas, not shown).

    Every figure's title names ``title`` (if given) and the run's parameter values.  ``names`` (a list of those
    names; default: all that ``tr`` has) picks some of them."""
    heading = parameter_title(tr, title)
    return {name: _BUILDERS[name](tr, heading) for name in (_figure_names(tr) if names is None else names)}


def _finish(fig, axes, heading):
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(heading, fontsize=8, x=0.01, ha="left")
    return fig


def _state_figure(tr, heading, data, rate, quantity):
    """Coordinates (``rate`` False) or velocities: panels split by unit and range."""
    names = list(tr.coordinate_names)
    panels = _quantity_panels(tr, data, names, lambda n: _coordinate_unit(n, rate)) or [([], "m")]
    fig, axes = _figure(len(panels))
    for ax, (cols, unit) in zip(axes, panels):
        _events(ax, tr)
        _curves(ax, tr.t, data, names, cols, f"{quantity} [{unit}]")
    return _finish(fig, axes, heading)


def _slot_position(tr):
    return tr.slot_position if tr.slot_position is not None else np.full((len(tr.t), len(tr.slot_names)), np.nan)


def _slot_figure(tr, heading, quantities):
    """Forces or slots with at most HEATMAP_SLOTS slots: ``quantities`` ((data, axis label, symbol), ...)."""
    panels = [(data, lab, sym, g) for data, lab, sym in quantities for g in _split(np.nan_to_num(data))]
    fig, axes = _figure(len(panels))
    for ax, (data, lab, sym, g) in zip(axes, panels):
        _events(ax, tr)
        ax.axhline(0, color="k", lw=0.5)
        _curves(ax, tr.t, data, [f"{n} {sym}" for n in tr.slot_names], g, lab)
    return _finish(fig, axes, heading)


def _forces(tr, heading):
    if len(tr.slot_names) <= HEATMAP_SLOTS:
        return _slot_figure(tr, heading, ((tr.normal_force, "normal force λ [N]", "λ"),
                                          (tr.friction_force, "friction force F [N]", "F")))
    fig, axes = _figure(2)
    for ax, data, lab, cmap in ((axes[0], tr.normal_force, "normal force λ [N]", "RdBu_r"),
                                (axes[1], tr.friction_force, "friction force F [N]", "PuOr_r")):
        # the colour scale follows most slots; one far larger slot saturates (arrow on the colour bar)
        lim = max(1e-300, float(np.percentile(np.abs(data), 98)) if data.size else 1.0)
        big = data.size and np.abs(data).max() > lim
        _heatmap(fig, ax, tr, data, lab + (" (beyond the arrows: saturated)" if big else ""), cmap,
                 -lim, lim, extend="both" if big else "neither")
    return _finish(fig, axes, heading)


def _slots(tr, heading):
    pos = _slot_position(tr)
    if len(tr.slot_names) <= HEATMAP_SLOTS:
        return _slot_figure(tr, heading, ((pos, "along-slot coordinate s [m]", "s"),
                                          (tr.slip_velocity, "slip velocity v [m/s]", "v")))
    fig, axes = _figure(2)
    for ax, data, lab in ((axes[0], pos, "along-slot coordinate s [m]"),
                          (axes[1], tr.slip_velocity, "slip velocity v [m/s]")):
        lim = max(1e-300, float(np.nanmax(np.abs(data))) if np.isfinite(data).any() else 1.0)
        _heatmap(fig, ax, tr, data, lab, "RdBu_r", -lim, lim)
    return _finish(fig, axes, heading)


def _modes(tr, heading):
    from matplotlib.colors import ListedColormap
    s = len(tr.slot_names)
    fig, axes = _figure(2 if s > HEATMAP_SLOTS else 1, height=max(2.4, min(6.0, 0.6 * s)) if s <= HEATMAP_SLOTS
                        else 2.8)
    if s > HEATMAP_SLOTS:
        _heatmap(fig, axes[0], tr, tr.motions, "motion", ListedColormap([_MOTION[v][0] for v in (-1, 0, 1)]),
                 -1.5, 1.5, [-1, 0, 1], [_MOTION[v][1] for v in (-1, 0, 1)])
        _heatmap(fig, axes[1], tr, tr.walls, "wall σ (λ ≥ 0: σ = +1)",
                 ListedColormap([_WALL[-1][0], _WALL[1][0]]), -2, 2,
                 [-1, 1], ["σ = −1", "σ = +1"])
    else:
        _timeline(axes[0], tr)
        _events(axes[0], tr)
        _legend(axes[0])
    return _finish(fig, axes, heading)


def _energy(tr, heading):
    enames = ["kinetic", "potential", "dissipated by friction", "work put in"]
    energies = np.column_stack([tr.kinetic, tr.potential, tr.dissipated, tr.work])
    groups = _split(energies)
    fig, axes = _figure(len(groups) + 1)
    for ax, cols in zip(axes, groups):
        _events(ax, tr)
        _curves(ax, tr.t, energies, enames, cols, "energy [J]")
    ax = axes[-1]
    bal = tr.energy_balance
    _events(ax, tr)
    ax.plot(tr.t, bal - bal[0], color="k", lw=1.0, label="kinetic + potential + dissipated − work,\nchange from t₀")
    ax.set_ylabel("balance error [J]")
    _legend(ax)
    return _finish(fig, axes, heading)


_BUILDERS = {"coordinates": lambda tr, heading: _state_figure(tr, heading, tr.q, False, "coordinates"),
             "velocities": lambda tr, heading: _state_figure(tr, heading, tr.qd, True, "velocities"),
             "forces": _forces, "slots": _slots, "modes": _modes, "energy": _energy}
