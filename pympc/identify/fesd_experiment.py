"""The FESD model (:mod:`pympc.identify.fesd`) under ``pyomo.contrib.parmest``.

:class:`~pympc.identify.mpec_experiment.MpecExperiment` takes a model builder and a branch function;
these are the FESD ones::

    pe = MpecExperiment(exp, params, at=at, builder=fesd_builder(elements=4), branch=fesd_branch)
    with pympc.mpec.ipopt_as():
        obj, theta = parmest.Estimator([pe], obj_function="SSE").theta_est()

:func:`fesd_builder` adapts :func:`~pympc.identify.fesd.trajectory_model` to the builder contract (the
experiment's record, the fitted parameters' bounds, the residuals on block ``experiment[0]``);
:func:`fesd_branch` makes the model an NLP: it solves the forward problem at the parameters the model was
built at (``at``: take them from :func:`pympc.identify.fesd_fit.fit`), fixes the active set of that answer
(:func:`~pympc.identify.fesd_solve.fix_active_set`: the side of every pair that is zero, the switch
boundaries pinned) and frees the parameters again.  As with the first-order route's walk, the branch is
held, not re-decided: parmest's estimate is a solution of the FESD MPEC while the simulation at it has
the same event sequence (``fesd_fit.fit`` checks that; check parmest's answer with a simulation too).
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionError, SolverError

__all__ = ["fesd_builder", "fesd_branch"]


def fesd_builder(elements=4, stages=3):
    """A model builder for :class:`~pympc.identify.mpec_experiment.MpecExperiment` that builds the FESD model
    with ``elements`` finite elements per sample interval and ``stages`` Radau IIA stages.

    The experiment's sample times are the model's grid (the first one must be the initial time);
    ``fit`` (``{name: (low, high)}``) frees ``theta[name]`` within those bounds; the residuals
    ``(prediction − data)/σ`` are ``experiment[0].residual[sample, output index]``.  ``step`` is ignored.
    """
    def build(system, t, y, outputs, fit=None, step=None, t0=None, sigma=None, **_):
        import pyomo.environ as pyo

        from .fesd import trajectory_model
        t = np.asarray(t, float)
        if t0 is not None and abs(float(t0) - t[0]) > 1e-12 * max(1.0, abs(t[0])):
            raise OptionError(f"fesd_builder: the record starts at t = {t[0]:g} but the experiment at {t0:g}; the "
                              "FESD model needs a sample at the initial time (give the record's first row there)")
        fit = dict(fit or {})
        noise = None if sigma is None else np.broadcast_to(np.asarray(sigma, float), (len(outputs),))
        m = trajectory_model(system, t, y, outputs, list(fit), elements=elements, stages=stages, noise=noise)
        for n, (lo, hi) in fit.items():
            m.theta[n].setlb(None if lo is None or not np.isfinite(lo) else float(lo))
            m.theta[n].setub(None if hi is None or not np.isfinite(hi) else float(hi))
        col = {o: i for i, o in enumerate(outputs)}
        keys = [(k, col[o]) for k, o in m.residual]
        m.experiment = pyo.Block([0])
        m.experiment[0].residual = pyo.Expression(keys, rule=lambda _, k, i: m.residual[k, outputs[i]])
        return m
    return build


def fesd_branch(m, options=None):
    """Make the FESD model ``m`` an NLP in place: solve it forward at its current parameters, fix the active set
    of the answer, free the fitted parameters; the cross-complementarity rows are deactivated.

    Raises SolverError when the forward solve does not verify (the branch would be a guess).
    """
    import pyomo.environ as pyo

    from .fesd_solve import fix_active_set, solve
    fit = list(m.fesd["fit"])
    for n in fit:
        m.theta[n].fix()
    res = solve(m, options=options)
    if not res.ok:
        raise SolverError(f"fesd_branch: the forward FESD solve at {({n: pyo.value(m.theta[n]) for n in fit})} "
                          f"did not verify ({res.status}: {res.checks}); no branch to fix")
    fix_active_set(m)
    for n in fit:
        m.theta[n].unfix()
    del m.fesd                           # the branch is the model now; parmest clones it
