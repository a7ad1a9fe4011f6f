"""An IntEnum whose members carry their own docstring (the status and kind enums of every package)."""

from enum import IntEnum

__all__ = ["DocIntEnum"]


class DocIntEnum(IntEnum):
    """IntEnum whose members carry their own docstring: ``NAME = value, "doc"``.

    A member prints as its name (``str``, ``print``, f-strings); a numeric
    format spec (``f"{s:d}"``) still gives the number.

    Examples
    --------
    >>> from pympc import Status
    >>> print(Status.SOLVED)
    SOLVED
    >>> f"[{Status.SOLVED:>8}] {Status.SOLVED:d}"
    '[  SOLVED] 0'
    """

    def __new__(cls, value, doc=""):
        obj = int.__new__(cls, value)
        obj._value_ = value
        obj.__doc__ = doc
        return obj

    def __str__(self):
        return self.name

    def __format__(self, spec):
        if spec and spec[-1] in "bcdoxXneEfFgG%":
            return int.__format__(int(self), spec)
        return format(self.name, spec)
