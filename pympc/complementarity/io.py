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
    for k in (2, 3, 4):  # the size lines repeat n (``n``, ``n``, ``n n``)
        sizes = lines[k].split()
        if sizes and all(t.lstrip("+-").isdigit() for t in sizes) and any(int(t) != n for t in sizes):
            raise ProblemError(f"{where}, line {k + 1}: size {lines[k].strip()!r} disagrees with n = {n} in line 1; "
                               "fix the header so that every size is n.")
    need = n * n + n
    vals, k = [], 5
    while len(vals) < need and k < len(lines):
        for tok in lines[k].split():
            try:
                vals.append(float(tok))
            except ValueError:
                raise ProblemError(
                    f"{where}, line {k + 1}: {tok!r} is not a number, after {len(vals)} of the {need} numbers "
                    f"that M and q need for n = {n} (line 1); is n in line 1 right?") from None
        k += 1
    if len(vals) < need:
        raise ProblemError(f"{where}: found {len(vals)} numbers, M and q need {need} for n = {n} (line 1); "
                           "is n in line 1 right?")
    if len(vals) > need:
        raise ProblemError(f"{where}, line {k}: more numbers on the line than M and q need for n = {n} (line 1).")
    rest = next((j for j in range(k, len(lines)) if lines[j].strip()), None)
    if rest is not None and _all_numbers(lines[rest]):
        raise ProblemError(
            f"{where}, line {rest + 1}: numbers left over after the {need} numbers of M and q for n = {n} "
            "(line 1); the header's n is smaller than the data. Fix n in line 1.")
    import numpy as np

    M = np.array(vals[: n * n]).reshape(n, n).T
    q = vals[n * n:]
    comment = "\n".join(l.strip() for l in lines[k:] if l.strip()) or None
    return LCP(M, q, name=path.stem, comment=comment)


def _all_numbers(line):
    """True if every token of ``line`` is a number."""
    try:
        [float(t) for t in line.split()]
    except ValueError:
        return False
    return True


def read_problem(path):
    """Read a problem file by its suffix: ``.npz`` (pympc) or ``.dat`` (Siconos)."""
    path = Path(path)
    if path.suffix == ".npz":
        return load_problem(path)
    if path.suffix == ".dat":
        return read_siconos(path)
    raise ProblemError(f"unknown problem file type {path.suffix!r} for {str(path)!r}; use .npz or a Siconos .dat file.")
