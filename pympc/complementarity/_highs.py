"""A HiGHS instance that is quiet from its first call, through highspy's public class only.

``highspy.Highs()`` enables its callbacks in its constructor (``Highs.__init__``
calls ``self.enableCallbacks()``), and that first call into HiGHS prints the
banner ("Running HiGHS ...") once per process, before any option can be set.
No public option or constructor argument prevents it (checked with highspy
1.16).  :class:`QuietHighs` is a subclass that defers its own
``enableCallbacks`` until ``output_flag`` and ``log_to_console`` are set,
then enables the callbacks as the base class does: the banner then obeys
``output_flag``.  Only public names of highspy are used; if a later highspy
stops enabling callbacks in its constructor, the deferral is merely unused.
Nothing process-wide is touched (no file-descriptor swaps).
"""

from __future__ import annotations

import highspy
import numpy as np

__all__ = ["QuietHighs", "add_dense_rows"]


class QuietHighs(highspy.Highs):
    """``highspy.Highs`` whose output (banner included) is governed by ``verbose`` from the start.

    Parameters
    ----------
    verbose : bool
        HiGHS's ``output_flag`` and ``log_to_console``.
    """

    def __init__(self, verbose=False):
        self._defer_callbacks = True
        super().__init__()
        self.setOptionValue("output_flag", bool(verbose))
        self.setOptionValue("log_to_console", bool(verbose))
        self._defer_callbacks = False
        self.enableCallbacks()

    def enableCallbacks(self):
        """Enable the callbacks (as ``highspy.Highs``), unless the constructor has not yet set the output options."""
        if not getattr(self, "_defer_callbacks", False):
            super().enableCallbacks()


def add_dense_rows(h, rows, lower, upper):
    """Add the dense ``rows`` (2-D array) with bounds ``lower <= rows @ x <= upper`` to the HiGHS model ``h``."""
    nz = rows != 0.0
    starts = np.concatenate([[0], np.cumsum(nz.sum(axis=1))[:-1]]).astype(np.int32)
    idx = np.nonzero(nz)[1].astype(np.int32)
    vals = rows[nz]
    h.addRows(rows.shape[0], lower, upper, int(nz.sum()), starts, idx, vals)
