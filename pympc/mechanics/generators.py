"""Generated mechanisms for scaling studies."""

from __future__ import annotations

import inspect
import itertools
import math
import shutil
import tempfile

import numpy as np

from ..errors import ModelError
from .system import Gravity, Particle, PointForce, Slot, Spring, System, _parse_field
from .tomlwriter import _toml_value, element_lines, header_lines, simulation_lines

__all__ = ["slider_chain", "write_slider_chain"]


def slider_chain(n, mu=0.3, mu_s=None, mass=1.0, k=20.0, g=9.81, force=15.0, omega=3.0, v0=0.5, t_end=1.0):
    """A chain of ``n`` sliders: slider k moves in a slot carried by slider k−1.

    Slider 1 runs in a fixed slot; the slot of slider k is turned by ``0.9 k`` rad,
    so every slot's normal force depends on the accelerations of the whole
    chain.  Each slider is tied to the ground by a spring (stiffness ``k``,
    anchored at the origin), gravity acts downward, the last slider is driven
    by ``force*sin(omega t)`` horizontally, and the sliders start with
    alternating slip velocities ``±v0`` in their slots.

    Parameters
    ----------
    n : int
        Number of sliders (= degrees of freedom = friction slots).
    mu, mu_s : float
        Friction coefficients of every slot (μ_s defaults to μ).  Like ``mass``,
        ``k``, ``g``, ``force``, ``omega`` and ``v0`` they become the System's
        parameters (``m``, ``mu``, ``mu_s``, ``k``, ``g``, ``force``, ``omega``,
        ``v0``), so a written model file is an expression of them and
        ``--set mu=0.9`` changes every slot.
    t_end : float
        The model's default end time (its ``[simulation]`` table).

    Returns
    -------
    System

    Examples
    --------
    >>> s = slider_chain(3)
    >>> len(s.slots), len(s.bodies)
    (3, 3)
    """
    n = _count(n, "slider_chain")
    s = _chain_frame(n, mass, mu, mu_s, k, g, force, omega, v0, t_end)
    for body, joint, spring, _ in _chain_parts(n):
        s.add(Particle(body["name"], position=body["position"], velocity=tuple(map(_velocity, body["velocity"])),
                       **_CONSTANT["bodies"]))
        s.add(Slot(**joint, **_CONSTANT["joints"]))
        s.add(Spring(**spring, **_CONSTANT["forces"]))
    s.add(Gravity("gravity", g=(0.0, "-g")))
    s.add(PointForce("drive", f"s{n}", value=("force*sin(omega*t)", 0.0)))
    return s


_CONSTANT = {"bodies": {"mass": "m"}, "joints": {"mu": "mu", "mu_s": "mu_s"},
             "forces": {"body_b": "ground", "k": "k"}}
"""The fields of a slider, its slot and its spring that are the same all along the chain."""


def _count(n, where):
    n = int(n)
    if n < 1:
        raise ModelError(f"{where}: n must be at least 1, got {n}")
    return n


def _chain_frame(n, mass, mu, mu_s, k, g, force, omega, v0, t_end):
    """The chain's System without elements: name, description, parameters, ``[simulation]``."""
    params = {"m": mass, "mu": mu, "mu_s": "mu" if mu_s is None else mu_s, "k": k, "g": g, "force": force,
              "omega": omega, "v0": v0}
    try:
        t_end = float(t_end)
    except (TypeError, ValueError):
        raise ModelError(f"slider_chain: t_end must be a number of seconds, got {t_end!r}") from None
    return System(f"slider_chain_{n}", parameters=params,
                  description=f"chain of {n} sliders, each in a slot carried by the previous one",
                  simulation={"t_end": t_end})


def _velocity(c):
    """A slider's initial velocity component: ``v0`` times the coefficient ``c``."""
    return f"v0*{c!r}"


def _chain_parts(n):
    """Per slider i = 1..n the fields that vary along the chain: (particle, slot, spring) keyword dicts (the
    particle's velocity as its two coefficients of ``v0``) and the row of its numbers (position, velocity
    coefficients, direction, origin) that the direct writer checks."""
    vx = vy = 0.0          # the initial velocity is v0 times this (alternating slips along turned slots)
    for i in range(1, n + 1):
        th = 0.9 * (i - 1)
        d = (math.cos(th), math.sin(th))
        sign = 1 if i % 2 else -1
        vx, vy = vx + sign * d[0], vy + sign * d[1]
        pos = (0.1 * i, 0.0)
        origin = (0.1 * i, 0.0) if i == 1 else (0.1, 0.0)
        yield ({"name": f"s{i}", "position": pos, "velocity": (vx, vy)},
               {"name": f"slot{i}", "slider": f"s{i}", "guide": "ground" if i == 1 else f"s{i - 1}",
                "direction": d, "origin": origin},
               {"name": f"spring{i}", "body_a": f"s{i}"},
               (*pos, vx, vy, *d, *origin))


def _block(table, element, varying):
    """``element``'s model-file entry as :func:`~pympc.mechanics.tomlwriter.element_lines` writes it, a
    ``%``-format with ``%(key)s`` for its name and the ``varying`` fields."""
    out = []
    for line in element_lines(table, element):
        key = line.partition(" = ")[0]
        out.append(f"{key} = %({key})s" if key == "name" or key in varying else line.replace("%", "%%"))
    return "\n".join(out)


def write_slider_chain(n, file, chunk=4096, **kw):
    """Write the model file of :func:`slider_chain` ``(n, **kw)`` to the text ``file``, in O(n) and small memory.

    The same text as ``dump_model(slider_chain(n, **kw))``, without building the System of n sliders: a chain
    of two (or one) is built and validated through :class:`~pympc.mechanics.System`, its entries become the
    templates of every slider, slot and spring, and only the numbers that change along the chain (positions,
    velocities, directions, origins) are checked, ``chunk`` sliders at a time, before their text is written.
    Raises :class:`~pympc.errors.ModelError` for bad parameters (those of :func:`slider_chain`).

    Examples
    --------
    >>> import io
    >>> from pympc.mechanics import dump_model
    >>> f = io.StringIO()
    >>> write_slider_chain(5, f)
    >>> f.getvalue() == dump_model(slider_chain(5))
    True
    """
    n = _count(n, "write_slider_chain")
    try:
        args = inspect.signature(slider_chain).bind(n, **kw)    # slider_chain's arguments and defaults
    except TypeError as exc:
        raise ModelError(f"write_slider_chain: {exc} (it takes the arguments of slider_chain)") from None
    args.apply_defaults()
    template = slider_chain(min(n, 2), **kw)
    try:
        template.validate()
    except ModelError as exc:
        raise ModelError(f"write_slider_chain: the chain of {n} sliders is invalid (its first two sliders, slots and "
                         f"springs, like all others, were checked): {exc}") from None
    frame = _chain_frame(**args.arguments)
    varying = {"bodies": ("position", "velocity"), "joints": ("slider", "guide", "direction", "origin"),
               "forces": ("body_a",)}
    blocks = {t: _block(t, template.definition(e), varying[t]) for t, e in
              (("bodies", "s1"), ("joints", "slot1"), ("forces", "spring1"))}
    zero = {}           # a zero coefficient: v0*0.0 is the constant 0.0 (asked of the parser, once per sign)

    def velocity(c):
        if c != 0.0:
            return '"v0*%r"' % c
        key = repr(c)
        if key not in zero:
            zero[key] = _toml_value(_parse_field(_velocity(c), "num", "velocity"))
        return zero[key]

    file.write("\n".join(header_lines(frame)))
    # one pass over the chain: the bodies go out at once, the joints and springs (which follow all bodies in the
    # file) wait in temporary files
    with tempfile.TemporaryFile("w+", encoding="utf-8") as joints, \
            tempfile.TemporaryFile("w+", encoding="utf-8") as springs:
        parts, start = _chain_parts(n), 1
        while start <= n:
            rows, out = [], ([], [], [])
            for body, joint, spring, numbers in itertools.islice(parts, chunk):
                rows.append(numbers)
                vx, vy = body["velocity"]
                out[0].append(blocks["bodies"] % {
                    "name": '"%s"' % body["name"], "position": "[%r, %r]" % body["position"],
                    "velocity": f"[{velocity(vx)}, {velocity(vy)}]"})
                out[1].append(blocks["joints"] % {
                    "name": '"%s"' % joint["name"], "slider": '"%s"' % joint["slider"],
                    "guide": '"%s"' % joint["guide"], "direction": "[%r, %r]" % joint["direction"],
                    "origin": "[%r, %r]" % joint["origin"]})
                out[2].append(blocks["forces"] % {"name": '"%s"' % spring["name"],
                                                  "body_a": '"%s"' % spring["body_a"]})
            _check_rows(rows, start)
            for f, texts in zip((file, joints, springs), out):
                f.write("\n" + "\n".join(texts))
            start += len(rows)
        for f in (joints, springs):
            f.seek(0)
            shutil.copyfileobj(f, file, 1 << 20)
    file.write("\n" + "\n".join(element_lines("forces", template.definition("gravity"))))
    drive = _block("forces", template.definition("drive"), ("body",))
    file.write("\n" + drive % {"name": '"drive"', "body": f'"s{n}"'})
    file.write("\n".join(["", *simulation_lines(frame), ""]))


def _check_rows(rows, start):
    """The numbers of sliders ``start``, ``start + 1``, ... are finite and their slot directions not zero (what
    :meth:`~pympc.mechanics.System.validate` asks of them); else a ModelError naming the first bad slider."""
    a = np.array(rows, dtype=float)
    good = np.isfinite(a).all(axis=1)
    good[good] = np.hypot(a[good, 4], a[good, 5]) >= 1e-12
    if not good.all():
        i = start + int(np.argmin(good))
        raise ModelError(f"write_slider_chain: slider s{i} or slot{i} has a non-finite number or a zero-length "
                         f"direction: position, velocity/v0, direction, origin = {rows[i - start]}")
