"""Readers of problem files: the Siconos dense ``.dat`` format and pympc's ``.npz``."""

from __future__ import annotations

from pathlib import Path

from ..errors import ProblemError
from .problems import LCP, load_problem

__all__ = ["read_siconos", "read_problem"]


def read_siconos(path):
    """Read an LCP in the Siconos dense ``.dat`` format.

    The file holds ``n``, the storage type (0 = dense), the sizes (three
    lines), the ``n*n`` entries of M in column-major order (each printed line
    of the block is one column of M), the ``n`` entries of q, then free text.

    Returns
    -------
    LCP
        ``name`` is the file stem, ``comment`` the trailing text.

    Examples
    --------
    >>> import pympc, pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.dat"
    >>> _ = f.write_text("2\\n0\\n2\\n2\\n2 2\\n1 0\\n2 1\\n-1 -1\\nan example\\n")
    >>> p = pympc.read_siconos(f); p.M, p.comment
    (array([[1., 2.],
           [0., 1.]]), 'an example')
    """
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ProblemError(f"cannot read Siconos file {str(path)!r}: {exc}") from None
    where = f"Siconos file {str(path)!r}"
    if len(lines) < 6:
        raise ProblemError(f"{where} is too short: expected a 5-line header (n, storage, sizes) and data.")
    try:
        n = int(lines[0].split()[0])
        storage = int(lines[1].split()[0])
    except (ValueError, IndexError):
        raise ProblemError(f"{where}: line 1 must be n and line 2 the storage type (0 = dense).") from None
    if n < 1:
        raise ProblemError(f"{where}: n = {n} must be positive.")
    if storage != 0:
        raise ProblemError(f"{where}: storage type {storage} is not supported; only dense (0) is.")
    need = n * n + n
    vals, k = [], 5
    while len(vals) < need and k < len(lines):
        for tok in lines[k].split():
            try:
                vals.append(float(tok))
            except ValueError:
                raise ProblemError(f"{where}, line {k + 1}: {tok!r} is not a number (M and q need {need} numbers).") from None
        k += 1
    if len(vals) < need:
        raise ProblemError(f"{where}: found {len(vals)} numbers, M and q need {need}.")
    if len(vals) > need:
        raise ProblemError(f"{where}, line {k}: more numbers on the line than M and q need.")
    import numpy as np

    M = np.array(vals[: n * n]).reshape(n, n).T
    q = vals[n * n:]
    comment = "\n".join(l.strip() for l in lines[k:] if l.strip()) or None
    return LCP(M, q, name=path.stem, comment=comment)


def read_problem(path):
    """Read a problem file by its suffix: ``.npz`` (pympc) or ``.dat`` (Siconos)."""
    path = Path(path)
    if path.suffix == ".npz":
        return load_problem(path)
    if path.suffix == ".dat":
        return read_siconos(path)
    raise ProblemError(f"unknown problem file type {path.suffix!r} for {str(path)!r}; use .npz or a Siconos .dat file.")
