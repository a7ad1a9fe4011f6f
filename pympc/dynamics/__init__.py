"""Event-driven simulation of mechanisms with friction slots.

:func:`simulate` is a driver: it advances a phase in a fixed mode (:class:`~.stepper.PhaseStepper`),
locates its first event (:class:`~.locate.EventLocator`), solves the transition there (one event HLCP,
:class:`~.transition.Transition`) and records it; its options are one validated object,
:class:`SimulateOptions`.  It returns a :class:`Trajectory` with its :class:`Event` list.
"""

from .events import EventProblem, SparseHLCP, event_problem, read_mode
from .modes import Baumgarte, Mode, ModeSolution, Motion, solve_mode
from .options import SimulateOptions
from .simulate import AMBIGUITY_RULES, make_formulation, simulate
from .trajectory import Event, EventKind, SimulationStatus, Trajectory

__all__ = [
    "simulate", "Trajectory", "Event", "EventKind", "SimulationStatus", "Mode", "Motion", "Baumgarte",
    "ModeSolution", "solve_mode", "EventProblem", "event_problem", "read_mode", "SparseHLCP", "AMBIGUITY_RULES",
    "make_formulation", "SimulateOptions",
]
