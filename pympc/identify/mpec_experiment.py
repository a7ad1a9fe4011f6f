"""pympc's trajectory MPEC as an experiment of ``pyomo.contrib.parmest``.

``pyomo.contrib.parmest.parmest.Estimator(exp_list, obj_function=...)`` takes
a list of objects with a ``get_labeled_model()`` method: a Pyomo model with
the Suffixes ``experiment_outputs`` (predicted output → measured value),
``unknown_parameters`` (parameter Var → its ComponentUID) and
``measurement_error`` (predicted output → its noise standard deviation).
:class:`MpecExperiment` is that object for one :class:`~pympc.identify.Experiment`
and pympc's trajectory model, so parmest's ``theta_est``, ``cov_est``,
``theta_est_bootstrap`` and ``likelihood_ratio_test`` run on it as they are
(several experiments: a list of them, the parameters shared by name).

parmest solves a nonlinear program; the trajectory MPEC's complementarity
pairs are not one.  The labeled model therefore holds the pairs on one branch:

* ``branch="walk"`` (default): the time stepping of
  :mod:`pympc.identify.mpec_stepping` at the parameter values ``at`` decides
  which side of every pair is zero (and the steps where a stuck slot breaks
  away), and :func:`fix_branch` replaces every pair by that branch — the NLP
  that :func:`pympc.identify.mpec_route.walk_modes` solves last.  Take ``at``
  from pympc's own MPEC estimate (``estimate(..., Mpec(step=h)).optimum``):
  where the walk converged, the branch at the answer is the branch of the
  answer, and parmest's estimate is pympc's.  Away from ``at`` the branch is
  held, not re-decided: a point found by parmest is a solution of the MPEC
  only while the time stepping there has the same branches (check it:
  :meth:`MpecExperiment.branch_holds`).
* ``branch=f``: a function that turns the builder's model into an NLP in
  place (a builder without the first-order model's bookkeeping brings its own).
  The switch-detecting model has one:
  ``builder=fesd_experiment.fesd_builder(), branch=fesd_experiment.fesd_branch``
  (:mod:`pympc.identify.fesd_experiment`; its parameters are ``theta[name]``).

Relaxing the pairs instead (``a·c ≤ σ`` for a final σ, an NLP of any model)
was measured and is not offered: on a 2 s oscillator record with μ and μ_s
fitted (h = 0.02 s, the walk's answer μ = 0.29957, μ_s = 0.38913, SSE 6.61e-4)
parmest's estimate from that point went to μ_s = 0.564 (σ = 1e-6, SSE 6.80e-4)
and 0.742 (σ = 1e-8, SSE 3.47e-3): the relaxation lets a stuck slot break away
early (the closure of Coulomb's law), so it does not hold the static coefficient.

parmest chooses its solver by name, and ``theta_est`` asks Pyomo's legacy
``SolverFactory`` for ``"ipopt"`` (an executable pympc does not need).  Run it
inside :func:`pympc.mpec.ipopt_as`, which lets ``pympc.ipopt`` answer to
that name until the ``with`` block ends; ``cov_est`` takes the solver's name
(``solver="pympc.ipopt"``).  Give IPOPT ``bound_relax_factor = 0`` through
``Estimator(..., solver_options=...)`` so that the branch rows hold exactly.

The model builder is an argument: any function with the keywords of
:func:`pympc.identify.mpec_model.trajectory_model` (``system, t, data,
outputs, fit=, step=, t0=, sigma=, warm_start=``) whose model has
``theta[name]`` (the parameters as Vars; μ_s as ``excess[mu_s]`` where the
first-order model splits it) and, on block ``experiment[0]``,
``residual[sample, output]`` = (prediction − data) / σ.  ``branch="walk"``
also needs the first-order model's branch bookkeeping; a model without it
brings its own branch function.
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionError
from .options import STEP
from .parameters import Parametrization

__all__ = ["MpecExperiment", "fix_branch"]


def _block(m):
    """The builder's experiment block (the contract in the module notes), or a clear error."""
    block = getattr(m, "experiment", None)
    block = block[0] if block is not None and 0 in block else None
    if block is None or not hasattr(block, "residual"):
        raise OptionError("MpecExperiment: the builder's model has no block experiment[0] with residual[sample, "
                          "output] = (prediction − data)/σ; see pympc.identify.mpec_experiment for the contract")
    return block


def fix_branch(m):
    """Replace every complementarity pair of the first-order trajectory model ``m`` by the branch of its current
    point (the time stepping it was warm-started from): :func:`pympc.identify.mpec_branches.fix_modes` of
    :func:`~pympc.identify.mpec_branches.modes`, and the pairs removed.  ``m`` becomes a plain NLP in place."""
    from .mpec_branches import fix_modes, modes

    fix_modes(m, modes(m))
    for b in m.experiment.values():
        b.del_component("pairs")
    m._lifted, m._fixed = [], []      # the branch is the model now, not a state to undo


class MpecExperiment:
    """One experiment for ``pyomo.contrib.parmest``: pympc's trajectory MPEC with its pairs on one branch.

    Parameters
    ----------
    experiment : pympc.identify.Experiment
        The model file, the values held fixed and the record (its noise levels become ``measurement_error``;
        without them σ = 1).
    parameters : list of pympc.identify.Parameter
        The unknown parameters: their start values and bounds become the model's.
    step : float
        Time step of the trajectory model [s] (default :data:`pympc.identify.options.STEP`).
    at : dict, optional
        Parameter values ``{name: value}`` whose time stepping decides the branch (default: the start values).
    branch : "walk" or callable
        ``"walk"``: the pairs fixed on the branch of the time stepping at ``at`` (:func:`fix_branch`); a
        function ``branch(model)`` that replaces the pairs of the builder's model by a branch in place (for a
        builder without the first-order model's bookkeeping).
    builder : callable, optional
        The trajectory model builder (default :func:`pympc.identify.mpec_model.trajectory_model`).

    Notes
    -----
    ``get_labeled_model()`` returns a new model at each call.  The unknown parameters are the model's own
    Vars: ``fitted[name]`` for each parameter, and when both coefficients of a slot are fitted
    ``excess[mu_s]`` = μ_s − μ ≥ 0 for the static one (parmest reports them under those names;
    :meth:`parameter_values` turns parmest's answer into ``{name: value}``).  The predicted outputs are
    Vars ``prediction[sample, output]`` held equal to the model's prediction (the linear interpolation of the
    grid at the data times).
    """

    def __init__(self, experiment, parameters, *, step=STEP, at=None, branch="walk", builder=None):
        if not (isinstance(step, (int, float)) and step > 0):
            raise OptionError(f"MpecExperiment: step must be a positive time step in seconds, got {step!r}")
        if branch != "walk" and not callable(branch):
            raise OptionError(f"MpecExperiment: branch must be 'walk' or a function of the model that replaces its "
                              f"complementarity pairs by a branch, got {branch!r}")
        self.experiment = experiment
        self.parametrization_parameters = list(parameters)
        self.parametrization = Parametrization(parameters, [experiment])
        self.names = list(self.parametrization.names)
        at = dict(zip(self.names, (float(v) for v in self.parametrization.theta0))) if at is None else dict(at)
        missing = [n for n in self.names if n not in at]
        if missing:
            raise OptionError(f"MpecExperiment: at has no value for {missing}; give every unknown parameter "
                              f"({self.names})")
        self.at = {n: float(at[n]) for n in self.names}
        self.step = float(step)
        self.branch = branch
        self.builder = builder
        self._stepping = None

    def _system(self, values):
        e = self.experiment
        return e.system.bind({n: v for n, v in values.items() if n in e.parameters})

    def time_stepping(self, values=None):
        """The time stepping of the model's grid at ``values`` (default ``at``), as
        :func:`pympc.identify.mpec_stepping.time_stepping` returns it."""
        from .mpec_stepping import time_stepping

        e = self.experiment
        return time_stepping(self._system(self.at if values is None else values), float(e.t[-1]), self.step,
                             t0=e.t_span[0])

    def _model(self):
        """The builder's model at ``at``, warm-started from the time stepping there, pairs not yet touched."""
        from .mpec_model import trajectory_model

        e, par = self.experiment, self.parametrization
        builder = trajectory_model if self.builder is None else self.builder
        fit = {n: (lo, hi) for n, lo, hi in zip(par.names, par.theta_lo, par.theta_hi)}
        m = builder(self._system(self.at), e.t, e.y, e.outputs, fit=fit, step=self.step, t0=e.t_span[0],
                    sigma=e.sigma)
        block = _block(m)
        if hasattr(block, "warm"):           # the first-order model: its variables from the time stepping at `at`
            if self._stepping is None:
                self._stepping = self.time_stepping()
            if hasattr(m, "fitted"):
                from .mpec_branches import set_theta
                set_theta(m, self.at)
            block.warm(self._stepping)
        return m

    def get_labeled_model(self):
        """A new Pyomo model of the experiment, an NLP (pairs on their branch), labeled for parmest."""
        import pyomo.environ as pyo
        from pyomo.mpec import Complementarity

        m = self._model()
        if self.branch == "walk":
            if not (hasattr(m.experiment[0], "sides") and hasattr(m.experiment[0], "pattern")):
                raise OptionError("MpecExperiment: branch='walk' needs the first-order trajectory model's pair "
                                  "bookkeeping (blocks with `sides`, `pattern`, `warm`); give this builder's model a "
                                  "branch function, branch=callable(model)")
            fix_branch(m)
        else:
            self.branch(m)
        left = [c.name for c in m.component_data_objects(Complementarity, active=True, descend_into=True)]
        if left:
            raise OptionError(f"MpecExperiment: the labeled model still holds {len(left)} complementarity pairs "
                              f"({left[:3]}...): parmest solves NLPs; the branch function must replace every pair")
        for b in m.experiment.values():      # Python helpers of the builder that a clone must not carry
            for name in ("ctx", "warm"):
                if hasattr(b, name):
                    delattr(b, name)
        self._label(m)
        return m

    def _label(self, m):
        import pyomo.environ as pyo
        from pyomo.core.base.componentuid import ComponentUID

        e = self.experiment
        block = _block(m)
        sigma = np.ones(len(e.outputs)) if e.sigma is None else np.asarray(e.sigma, dtype=float)
        keys = list(block.residual.keys())
        data = {(d, o): float(e.y[d, o]) for d, o in keys}
        pred = {(d, o): data[d, o] + float(sigma[o]) * block.residual[d, o] for d, o in keys}
        m.prediction = pyo.Var(keys, initialize={k: pyo.value(pred[k]) for k in keys})
        m.prediction_rows = pyo.Constraint(keys, rule=lambda _, d, o: m.prediction[d, o] == pred[d, o])
        m.experiment_outputs = pyo.Suffix(direction=pyo.Suffix.LOCAL)
        m.measurement_error = pyo.Suffix(direction=pyo.Suffix.LOCAL)
        m.unknown_parameters = pyo.Suffix(direction=pyo.Suffix.LOCAL)
        for k in keys:
            m.experiment_outputs[m.prediction[k]] = data[k]
            m.measurement_error[m.prediction[k]] = float(sigma[k[1]])
        for var in self._parameter_vars(m).values():
            m.unknown_parameters[var] = ComponentUID(var)

    def _parameter_vars(self, m):
        """``{Var name: Var}`` of the unknown parameters (``fitted[...]``, ``excess[...]`` or the builder's)."""
        out = {}
        for n in self.names:
            if hasattr(m, "excess") and n in m.excess:
                v = m.excess[n]
            else:
                v = m.theta[n]
            if not getattr(v, "is_variable_type", lambda: False)():
                raise OptionError(f"MpecExperiment: the builder's parameter {n!r} is an expression, not a Var; "
                                  "parmest estimates Vars")
            out[v.name] = v
        return out

    def parameter_values(self, theta):
        """parmest's estimate (``{Var name: value}`` or a pandas Series) as ``{parameter name: value}``
        (μ_s = μ + ``excess[mu_s]`` where both are fitted)."""
        theta = dict(theta)
        kinetic = {s: k for _, k, s in self.experiment.friction_pairs if s is not None}
        out = {n: float(theta[f"fitted[{n}]"]) for n in self.names if f"fitted[{n}]" in theta}
        for n in self.names:
            if f"excess[{n}]" in theta and kinetic.get(n) in out:
                out[n] = out[kinetic[n]] + float(theta[f"excess[{n}]"])
            elif n not in out and f"theta[{n}]" in theta:      # a builder whose parameters are theta[name]
                out[n] = float(theta[f"theta[{n}]"])
            elif n not in out and n in theta:
                out[n] = float(theta[n])
        missing = [n for n in self.names if n not in out]
        if missing:
            raise OptionError(f"parameter_values: no value for {missing} in {sorted(theta)}")
        return out

    def branch_holds(self, values):
        """True when the time stepping at ``values`` (``{name: value}``) has the branches of the one at ``at``:
        the labeled model's NLP is then the MPEC there, and its answer an MPEC solution."""
        from .mpec_branches import modes, set_theta

        if self.branch != "walk":
            raise OptionError("branch_holds applies to branch='walk'")
        m = self._model()
        chosen, pattern = modes(m), dict(m.experiment[0].pattern)
        set_theta(m, values)
        m.experiment[0].warm(self.time_stepping(values))
        return modes(m) == chosen and m.experiment[0].pattern == pattern

