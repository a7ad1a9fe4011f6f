"""pympc: planar multibody dynamics with friction in translational joints.

Complementarity problems (LCP/HLCP) and their native pivoting solver, Pyomo
MPEC models and solver plugins (``pympc.mpec``), planar mechanisms
(``pympc.mechanics``) and the event-driven simulator (``pympc.dynamics``).
"""

from .complementarity import (
    HLCP, LCP, Classification, HLCPResult, LCPResult, Residual, SetKind, SolutionSet, Status,
    classify, enumerate_solutions, is_p_matrix, lemke, load_problem, read_problem, read_siconos, solve,
)
from .errors import ModelError, OptionError, ProblemError, PympcError, SimulationError, SolverError, SolverNotFound

__version__ = "0.1.0"

from . import mpec  # noqa: E402  registers pympc.lemke, pympc.milp, pympc.ipopt with Pyomo's SolverFactory
from .mpec import crosscheck  # noqa: E402
from .mechanics import GeneralMethod, System, TreeMethod, load_model  # noqa: E402
from .dynamics import Event, SimulationStatus, Trajectory, simulate  # noqa: E402

__all__ = [
    "LCP", "HLCP", "solve", "crosscheck", "lemke", "enumerate_solutions", "classify", "is_p_matrix",
    "read_siconos", "read_problem", "load_problem",
    "Status", "LCPResult", "HLCPResult", "Residual", "SetKind", "SolutionSet", "Classification",
    "System", "GeneralMethod", "TreeMethod", "load_model", "simulate", "Trajectory", "Event", "SimulationStatus",
    "PympcError", "ProblemError", "OptionError", "SolverError", "SolverNotFound", "ModelError", "SimulationError",
]
