"""Complementarity problems (LCP, HLCP), the native Lemke solver, enumeration and matrix classes."""

from .classes import Classification, classify, is_p_matrix
from .enumeration import SetKind, SolutionSet, enumerate_solutions
from .io import read_problem, read_siconos
from .lemke import lemke
from .milp import milp
from .problems import HLCP, LCP, Reduction, Residual, load_problem
from .results import HLCPResult, LCPResult, Result, Status
from .solve import solve

__all__ = [
    "LCP", "HLCP", "Reduction", "Residual", "load_problem", "read_siconos", "read_problem",
    "Status", "Result", "LCPResult", "HLCPResult", "lemke", "milp", "solve",
    "SetKind", "SolutionSet", "enumerate_solutions", "Classification", "classify", "is_p_matrix",
]
