"""Friction-parameter identification: fit μ, μ_s and any model parameter to measured motion.

:class:`Experiment` (a model file, fixed parameter values, data),
:class:`Parameter` (name, initial value, bounds) and :func:`estimate`
(shooting: event-driven simulations fitted by ``scipy.optimize.least_squares``,
multistart from a Sobol sample) returning an :class:`IdentificationResult`
(estimates, Wald and profile intervals, identifiability report, plots, save/load).
"""

from .estimate import METHODS, estimate
from .experiment import Experiment, friction_pairs, output_names, read_data, synthetic_record
from .parameters import FRICTION_BOUNDS, Parameter, Parametrization
from .result import IdentificationResult
from .shooting import JACOBIANS, ShootingProblem

__all__ = ["Experiment", "Parameter", "estimate", "IdentificationResult", "ShootingProblem", "Parametrization",
           "output_names", "friction_pairs", "read_data", "synthetic_record", "METHODS", "JACOBIANS", "FRICTION_BOUNDS"]
