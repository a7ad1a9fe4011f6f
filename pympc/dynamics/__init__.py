"""Event-driven simulation of mechanisms with friction slots.

:func:`simulate` drives smooth phases (fixed mode, ``scipy.integrate.solve_ivp``)
and transitions (one event HLCP each, solved by the native pivoting solver);
it returns a :class:`Trajectory` with its :class:`Event` list.
"""

from .events import EventProblem, event_problem, read_mode
from .modes import Baumgarte, Mode, ModeSolution, Motion, solve_mode
from .simulate import AMBIGUITY_RULES, make_formulation, simulate
from .trajectory import Event, EventKind, SimulationStatus, Trajectory

__all__ = [
    "simulate", "Trajectory", "Event", "EventKind", "SimulationStatus", "Mode", "Motion", "Baumgarte",
    "ModeSolution", "solve_mode", "EventProblem", "event_problem", "read_mode", "AMBIGUITY_RULES",
    "make_formulation",
]
