"""The results store: a directory of Parquet part files, one per finished batch, plus a manifest.

Why Parquet: the results are a table (one row per run, a column per parameter
and observable, mixed numbers and strings) that is written in pieces and read
whole.  Parquet stores exactly that — typed columns, compressed, self-describing,
read by pandas, pyarrow, polars, DuckDB and Spark without pympc — and a
directory of part files is its usual dataset layout, so every batch is one
immutable file.  Zarr suits large n-dimensional arrays (trajectories on a grid);
a sweep's rows of scalars and strings are not that.

A part is written to a hidden temporary file in the same directory and renamed
into place (``os.replace``, atomic on POSIX): a reader, a crash or a SIGKILL
sees a whole part or none.  Finished runs are found by their ``key`` column
(content-derived, see :meth:`SweepSpec.key`), so a rerun skips them.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from ..errors import OptionError

__all__ = ["ResultStore", "load_results"]

MANIFEST = "sweep.json"


class ResultStore:
    """A results directory (created on the first write)."""

    def __init__(self, path):
        self.path = Path(path)

    def parts(self):
        """The finished part files, oldest first."""
        if not self.path.is_dir():
            return []
        return sorted(self.path.glob("part-*.parquet"), key=lambda p: (p.stat().st_mtime_ns, p.name))

    def finished(self, include_failed=True):
        """Keys of the runs stored (``include_failed=False``: only those that did not raise)."""
        import pyarrow.parquet as pq
        keys = {}
        for part in self.parts():
            t = pq.read_table(part, columns=["key", "status"])
            for k, s in zip(t.column("key").to_pylist(), t.column("status").to_pylist()):
                keys[k] = s           # a later part (a retried run) supersedes
        return {k for k, s in keys.items() if include_failed or s != "FAILED"}

    def write_manifest(self, manifest):
        self.path.mkdir(parents=True, exist_ok=True)
        self._atomic(self.path / MANIFEST, json.dumps(manifest, indent=1).encode("utf-8"))

    def manifest(self):
        try:
            return json.loads((self.path / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def write_part(self, rows):
        """Write the rows of one batch as a new part file, atomically; returns its path."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        self.path.mkdir(parents=True, exist_ok=True)
        names = list(dict.fromkeys(k for r in rows for k in r))     # every column, in first-seen order
        cols = {n: [r.get(n) for r in rows] for n in names}
        arrays = {}
        for n, v in cols.items():
            try:
                arrays[n] = pa.array(v)
            except (pa.ArrowInvalid, pa.ArrowTypeError):    # a user observable of mixed types: kept as text
                arrays[n] = pa.array([None if x is None else str(x) for x in v])
        table = pa.table(arrays)
        final = self.path / f"part-{uuid.uuid4().hex}.parquet"
        tmp = self.path / f".{final.name}.tmp"
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final)
        return final

    def _atomic(self, path, data):
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)


def load_results(store, as_xarray=False):
    """Read a sweep's results in one call.

    Parameters
    ----------
    store : str or Path
        The results directory of a sweep.
    as_xarray : bool
        Return an :class:`xarray.Dataset` indexed by the swept parameters
        (needs xarray; meant for grids) instead of a DataFrame.

    Returns
    -------
    pandas.DataFrame
        One row per run (a retried run's latest row), in run order:
        parameters, observables, ``status``, ``message``, ``error``,
        ``traceback``, ``wall_time``, ``cpu_time`` (of the worker process), ``pympc_version``, ``model_hash``,
        ``key``.  ``df.attrs["parameters"]`` lists the swept parameters.
    """
    import pandas as pd
    import pyarrow.parquet as pq
    st = ResultStore(store)
    parts = st.parts()
    if not parts:
        raise OptionError(f"{st.path}: no sweep results here (no part-*.parquet files); run the sweep first")
    frames = [pq.read_table(p).to_pandas() for p in parts]
    df = pd.concat(frames, ignore_index=True, sort=False)
    df = df.drop_duplicates("key", keep="last").sort_values("run", kind="stable").reset_index(drop=True)
    manifest = st.manifest()
    axes = list(manifest.get("axes", []))
    df.attrs.update(parameters=axes, kind=manifest.get("kind"), model=manifest.get("model"))
    if not as_xarray:
        return df
    try:
        import xarray  # noqa: F401
    except ImportError:
        raise OptionError("as_xarray=True needs xarray: pip install xarray") from None
    if manifest.get("kind") != "grid":
        return df.set_index("run").to_xarray()
    return df.set_index(axes).to_xarray()
