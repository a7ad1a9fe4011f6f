"""Everything in pympc that imports Pyomo: MPEC models, SolverFactory plugins, cross-checks.

Importing :mod:`pympc` imports this package, which registers the solvers
``pympc.lemke``, ``pympc.milp`` and ``pympc.ipopt`` with Pyomo's ``SolverFactory``.
"""

from .mip import milp
from .models import PyomoHLCP, from_pyomo, to_pyomo
from .crosscheck import CrossCheckReport, SolverAnswer, crosscheck
from .ipopt import IpoptSolver
from .nlp import PyomoNLP
from .plugins import LemkeSolver, MILPSolver, pyomo_status

__all__ = ["to_pyomo", "from_pyomo", "PyomoHLCP", "milp", "LemkeSolver", "MILPSolver", "pyomo_status", "IpoptSolver", "PyomoNLP", "crosscheck", "CrossCheckReport", "SolverAnswer"]
