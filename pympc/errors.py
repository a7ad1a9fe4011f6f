"""Exceptions raised by pympc.

Every error pympc raises on purpose is a :class:`PympcError`; its message names
the offending argument (or file, table and key) and says what to do.
"""


class PympcError(Exception):
    """Base class of every error raised on purpose by pympc."""


class ProblemError(PympcError, ValueError):
    """A problem's data (matrix, vector, shape, dtype) is not acceptable."""


class OptionError(PympcError, TypeError):
    """An option passed to a solver or driver is unknown or has a bad value."""


class SolverError(PympcError):
    """A solver could not be run or failed in a way that is not a problem status."""


class SolverNotFound(SolverError):
    """The requested solver or method does not exist or is not installed."""


class ModelError(PympcError, ValueError):
    """A mechanism (built in Python or read from a model file) is invalid."""


class SimulationError(PympcError):
    """The simulation driver was asked something it cannot do."""
