"""Silence output written by C libraries (HiGHS's and Ipopt's banners) to the process's stdout."""

import contextlib
import os
import sys


@contextlib.contextmanager
def c_stdout_silenced(active=True):
    """Redirect file descriptor 1 to /dev/null while the block runs (if ``active``)."""
    if not active:
        yield
        return
    sys.stdout.flush()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # e.g. captured by pytest: nothing to redirect
        fd = 1
    saved = os.dup(fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
        yield
    finally:
        os.dup2(saved, fd)
        os.close(saved)
        os.close(devnull)
