"""Everything in pympc that imports Pyomo: MPEC models, Pyomo solver interfaces, cross-checks.

Importing this package registers the solvers ``pympc.lemke``, ``pympc.milp``
and ``pympc.ipopt`` with Pyomo's solver factories (``pyomo.contrib.solver``'s
and the legacy ``pyomo.environ.SolverFactory``), see :mod:`pympc.mpec.solvers`.
"""

from .models import PyomoHLCP, from_pyomo, to_pyomo
from .nlp import CompiledNLP
from .presolve import Presolved
from .solvers import IpoptSolver, LemkeSolver, MILPSolver, ipopt_as, pyomo_status
from .crosscheck import CrossCheckReport, SolverAnswer, crosscheck
from ..complementarity.milp import milp

__all__ = ["to_pyomo", "from_pyomo", "PyomoHLCP", "milp", "LemkeSolver", "MILPSolver", "IpoptSolver", "pyomo_status", "ipopt_as",
           "CompiledNLP", "Presolved", "crosscheck", "CrossCheckReport", "SolverAnswer"]
