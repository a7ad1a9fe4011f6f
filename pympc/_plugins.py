"""What a room offers to a room below it, by dotted name: the one documented upward arrow of the package.

The complementarity core (``pympc.complementarity``) imports nothing above it; its
:func:`~pympc.complementarity.solve` reaches the ``ipopt`` method, which lives in
:mod:`pympc.mpec` (it needs Pyomo), through this table, and imports it only when a
caller asks for that method.  The other direction of the same arrow is
:mod:`pympc._pyomo_hook`, which registers pympc's solvers with Pyomo's factories.
This module holds data only and imports nothing.
"""

SOLVE_METHODS = {"ipopt": "pympc.mpec.methods:solve_ipopt"}
"""Complementarity methods implemented above ``pympc.complementarity``: name → ``"module:function"``."""
