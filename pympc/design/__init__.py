"""Experiment design for friction identification: which record determines μ and μ_s best.

>>> from pympc.design import load_design, evaluate, explore, optimize, plot_design_map   # doctest: +SKIP
>>> spec = load_design("examples/design_oscillator.toml")                             # doctest: +SKIP
>>> print(evaluate(spec, {"F0": 5.0}).summary())                                      # doctest: +SKIP
>>> df = explore(spec)                  # the [grid] or [sample] on Dask                # doctest: +SKIP
>>> best = optimize(spec)               # multistart Nelder–Mead over [optimize]        # doctest: +SKIP

:mod:`~pympc.design.fim` computes the Fisher information from the simulator's
sensitivities through events and the criteria D, A, E, ME;
:mod:`~pympc.design.spec` reads a design spec; :mod:`~pympc.design.explore`
evaluates points, grids and samples (Dask) and optimizes;
:mod:`~pympc.design.plots` draws criterion maps with the friction regimes.
"""

from .explore import OptimizationResult, evaluate, explore, optimize
from .fim import CRITERIA, Information, SingularInformation, criteria, criterion, information, regimes
from .plots import plot_design_map, plot_ellipses
from .spec import RECORD_VARIABLES, DesignSpec, load_design

__all__ = ["load_design", "DesignSpec", "evaluate", "explore", "optimize", "OptimizationResult", "information",
           "Information", "criteria", "criterion", "regimes", "CRITERIA", "SingularInformation", "RECORD_VARIABLES",
           "plot_design_map", "plot_ellipses"]
