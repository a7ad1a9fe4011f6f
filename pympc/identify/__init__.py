"""Friction-parameter identification: fit μ, μ_s and any model parameter to measured motion.

:class:`Experiment` (a model file, the parameter values held fixed, data),
:class:`Parameter` (name, initial value, bounds) and
``estimate(experiments, parameters, method)`` with ``method`` a name or an
options object, as in scipy: :class:`Shooting` (event-driven simulations fitted
by ``scipy.optimize.least_squares``, multistart from a Sobol sample; the
default), :class:`Mpec` (the whole trajectory as one Pyomo MPEC) or :class:`Fesd` (the
switch-detecting Radau IIA trajectory model).  It returns
an :class:`IdentificationResult`: estimates, verdicts, Wald intervals, the
identifiability report, plots, save/load, and the questions asked afterwards,
:meth:`IdentificationResult.profile` and
:meth:`IdentificationResult.confidence_intervals`.  The MPEC route's own
entry is :func:`fit_mpec` (its result an :class:`MpecFit`), and
:class:`MpecExperiment` hands its model to ``pyomo.contrib.parmest``.
"""

from .estimate import METHODS, estimate
from .experiment import Experiment, friction_pairs, output_names, read_data, synthetic_record
from .options import JACOBIANS, Fesd, Mpec, Shooting
from .parameters import FRICTION_BOUNDS, Parameter, Parametrization
from .result import IdentificationResult
from .shooting import ShootingProblem
from .mpec_route import MpecFit, fit_mpec
from .mpec_experiment import MpecExperiment

__all__ = ["Experiment", "Parameter", "estimate", "Shooting", "Mpec", "Fesd", "IdentificationResult", "ShootingProblem",
           "Parametrization", "output_names", "friction_pairs", "read_data", "synthetic_record", "METHODS",
           "JACOBIANS", "FRICTION_BOUNDS", "fit_mpec", "MpecFit", "MpecExperiment"]
