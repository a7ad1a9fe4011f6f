"""Piecewise-constant inputs of the FESD model (:func:`pympc.identify.fesd.trajectory_model` with ``controls``).

:func:`simulate_inputs` replays an input history with :func:`pympc.simulate`, one sample interval at a
time (each run starts from the previous one's final state, given to the model through the parameters
its initial state is written in), so an optimal-control answer of the FESD model is verified by the
event-driven simulator, not by the model that produced it.
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionError, SolverError

__all__ = ["inputs_of", "simulate_inputs"]


def inputs_of(m):
    """``{name: array (K,)}``: the model's piecewise-constant inputs ``u[k, name]`` at their current values."""
    import pyomo.environ as pyo
    names = m.fesd.get("controls") or []
    if not names:
        raise OptionError("the model has no controls: build it with trajectory_model(..., controls=[...])")
    return {n: np.array([pyo.value(m.u[k, n]) for k in m.intervals]) for n in names}


def simulate_inputs(system, t, inputs, state, *, params=None, rtol=1e-12, atol=1e-14, samples=41):
    """Simulate ``system`` with inputs held constant on each sample interval [t_k, t_k+1].

    Parameters
    ----------
    system : System or path
    t : array (K + 1,)
        Sample times (the intervals of the inputs).
    inputs : dict
        ``name -> array (K,)``: a parameter's value per interval (e.g. :func:`inputs_of`).
    state : dict
        ``parameter -> output``: the parameters the model's initial state is written in, and the
        coordinate (``body.x``) or velocity (``body.x_dot``) each one takes from the previous interval's end.
    params : dict, optional
        Other parameter values (bound for every interval).
    rtol, atol, samples
        Passed to :func:`pympc.simulate` (``samples`` per interval).

    Returns
    -------
    list of Trajectory
        One per interval; raises SolverError (naming the interval) when a run fails.
    """
    from ..dynamics import simulate
    from ..mechanics import System, load_model
    t = np.asarray(t, float).ravel()
    K = t.size - 1
    if K < 1 or not np.all(np.diff(t) > 0):
        raise OptionError("t must hold at least two strictly increasing sample times")
    for n, u in inputs.items():
        if np.asarray(u).shape != (K,):
            raise OptionError(f"inputs[{n!r}] must hold one value per interval ({K}), got shape {np.shape(u)}")
    sy = system if isinstance(system, System) else load_model(system)
    fixed = dict(params or {})
    runs, now = [], {}
    for k in range(K):
        values = {**fixed, **{n: float(u[k]) for n, u in inputs.items()}, **now}
        tr = simulate(sy, (float(t[k]), float(t[k + 1])), params=values, rtol=rtol, atol=atol, samples=samples)
        if not tr.success:
            raise SolverError(f"simulate_inputs: interval {k} [{t[k]:g}, {t[k + 1]:g}] failed "
                              f"({tr.status.name}: {tr.message})")
        runs.append(tr)
        names = list(tr.coordinate_names)
        now = {}
        for p, o in state.items():
            c, dot = (o[:-4], True) if o.endswith("_dot") else (o, False)
            if c not in names:
                raise OptionError(f"state: {o!r} is not a coordinate (or '<coordinate>_dot') of {sy.name}")
            now[p] = float((tr.qd if dot else tr.q)[-1, names.index(c)])
    return runs
