"""The results store: a directory that is a Parquet dataset, one part file per finished batch.

Why Parquet: the results are a table (one row per run, a column per parameter
and observable, mixed numbers and strings) that is written in pieces and read
whole.  Parquet stores exactly that — typed columns, compressed, self-describing
— and a directory of part files is its usual dataset layout, so every batch is
one immutable file and ``pandas.read_parquet(store)``,
``pyarrow.dataset.dataset(store)``, ``polars.scan_parquet(f"{store}/*.parquet")``
and DuckDB's ``read_parquet('store/*.parquet')`` read it without pympc: one row
per run.  What is not data has a name those readers skip (a leading underscore):
``_sweep.json`` (the manifest: which spec the store belongs to), ``_sweep.lock``
(the writer's lock) and ``_damaged/`` (part files that could not be read).

Invariants kept by the one writer (:meth:`ResultStore.writer`, which holds an
OS lock on ``_sweep.lock``; a second writer is refused with the first one's
host and pid; a writer killed with SIGKILL releases it with its process):

* a part is written to a hidden temporary file (``.part-*.tmp``) and renamed
  into place (``os.replace``, atomic on POSIX): a reader or a crash sees a whole
  part or none; leftovers of a killed writer are removed by the next one;
* every part has the same schema (a new column or a wider type rewrites the
  older parts, each atomically), so a dataset reader sees every column;
* every ``key`` (content-derived, see :meth:`SweepSpec.key`) is in one row: a
  retried run's new row removes its old one from the older part;
* a part that cannot be read (truncated, garbage) is named, moved to
  ``_damaged/`` and its runs are not counted as stored, so the rerun redoes them.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
import uuid
import warnings
from contextlib import contextmanager
from pathlib import Path

from ..errors import OptionError

try:
    import fcntl
except ImportError:          # Windows: an exclusive-create lock file, stale when its pid is gone
    fcntl = None

__all__ = ["ResultStore", "load_results", "MANIFEST", "LOCK", "DAMAGED", "RETRYABLE"]

MANIFEST = "_sweep.json"
LOCK = "_sweep.lock"
DAMAGED = "_damaged"
OLD_MANIFEST = "sweep.json"          # stores written before the manifest moved out of the readers' way
RETRYABLE = ("FAILED", "TIMEOUT")
"""Statuses that ``retry_failed`` runs again (an exception, the time limit); the others are the simulation's answer."""

_NEW = re.compile(r"part-(\d{8})-[0-9a-f]+\.parquet$")


class ResultStore:
    """A results directory (created by its first writer); reading needs no lock."""

    def __init__(self, path):
        self.path = Path(path)
        self._schema = None          # the dataset schema (known to the writer)
        self._where = {}             # key -> part holding it (known to the writer)
        self._seq = 0

    # ------------------------------------------------------------------ reading
    def parts(self):
        """The part files, in write order (new parts by their sequence number; parts of older stores by time)."""
        if not self.path.is_dir():
            return []

        def order(p):
            m = _NEW.match(p.name)
            return (1, int(m.group(1)), p.name) if m else (0, p.stat().st_mtime_ns, p.name)
        return sorted(self.path.glob("part-*.parquet"), key=order)

    def manifest(self):
        """The manifest (``{}`` if there is none); a store of an older pympc has it as ``sweep.json``."""
        for name in (MANIFEST, OLD_MANIFEST):
            try:
                return json.loads((self.path / name).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
        return {}

    def read_parts(self, columns=None):
        """``(tables, damaged)``: each readable part as a pyarrow Table (oldest first) and the unreadable ones."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        tables, damaged = [], []
        for part in self.parts():
            try:
                tables.append((part, pq.read_table(part, columns=columns)))
            except (pa.ArrowException, OSError, ValueError) as exc:
                damaged.append((part, f"{type(exc).__name__}: {exc}"))
        return tables, damaged

    def latest(self, columns=("key", "status")):
        """``{key: row}`` of the stored runs (a later part supersedes), skipping damaged parts."""
        cols = list(dict.fromkeys(["key", *columns]))
        out = {}
        for _, t in self.read_parts(cols)[0]:
            for r in t.to_pylist():
                out[r["key"]] = r
        return out

    def finished(self, include_failed=True):
        """Keys of the runs stored (``include_failed=False``: without those stored as FAILED or TIMEOUT)."""
        return {k for k, r in self.latest().items() if include_failed or r["status"] not in RETRYABLE}

    # ------------------------------------------------------------------ writing
    @contextmanager
    def writer(self):
        """Hold the store's writer lock, repair what a crash left, yield the notes of the repair.

        Raises :class:`~pympc.errors.OptionError` naming the host and pid of the
        writer that holds it.  A lock left by a killed writer is taken over (said in the notes).
        """
        self.path.mkdir(parents=True, exist_ok=True)
        lock = _Lock(self.path / LOCK)
        notes = lock.acquire()
        try:
            notes += self._repair()
            yield notes
        finally:
            lock.release()

    def _repair(self):
        """Under the lock: migrate an old manifest, remove temporary leftovers, set damaged parts aside,
        drop superseded rows, give every part the dataset schema."""
        notes = []
        old = self.path / OLD_MANIFEST
        if old.exists() and not (self.path / MANIFEST).exists():
            os.replace(old, self.path / MANIFEST)
            notes.append(f"moved the manifest {OLD_MANIFEST} to {MANIFEST} (readers of the Parquet dataset skip it)")
        for tmp in self.path.glob(".part-*.tmp"):
            tmp.unlink()
            notes.append(f"removed {tmp.name}, a part a killed writer did not finish (its runs are redone)")
        tables, damaged = self.read_parts()
        for part, why in damaged:
            (self.path / DAMAGED).mkdir(exist_ok=True)
            os.replace(part, self.path / DAMAGED / part.name)
            notes.append(f"{part.name} is damaged ({why}); moved to {DAMAGED}/, its runs are redone")
        self._seq = max([int(m.group(1)) for p, _ in tables if (m := _NEW.match(p.name))], default=0)
        self._where, self._schema = {}, _unify([t.schema for _, t in tables]) if tables else None
        for i, (part, t) in enumerate(tables):
            later = {k for _, u in tables[i + 1:] for k in u.column("key").to_pylist()}
            keys = t.column("key").to_pylist()
            dup = len(set(keys)) != len(keys)
            if later.intersection(keys) or dup:
                import pyarrow as pa
                seen, keep = set(), []
                for j in range(len(keys) - 1, -1, -1):      # the last row of a key within a part wins
                    keep.append(keys[j] not in later and keys[j] not in seen)
                    seen.add(keys[j])
                t = t.filter(pa.array(keep[::-1]))
                notes.append(f"{part.name}: dropped {len(keys) - t.num_rows} superseded row(s)")
                tables[i] = (part, t)
                if t.num_rows == 0:
                    part.unlink()
                    continue
                self._rewrite(part, t)
            elif t.schema != self._schema:
                self._rewrite(part, t)
            for k in t.column("key").to_pylist():
                self._where[k] = part
        return notes

    def write_manifest(self, manifest):
        """Write the manifest (atomically)."""
        self.path.mkdir(parents=True, exist_ok=True)
        _atomic(self.path / MANIFEST, json.dumps(manifest, indent=1).encode("utf-8"))

    def write_part(self, rows):
        """Write the rows of one batch as a new part file, atomically; returns its path.

        Only inside :meth:`writer`.  Older parts get the new columns (or wider
        types), and lose the rows of the keys written now.
        """
        import pyarrow as pa
        names = list(dict.fromkeys(k for r in rows for k in r))     # every column, in first-seen order
        arrays = {}
        for n in names:
            v = [r.get(n) for r in rows]
            try:
                arrays[n] = pa.array(v)
            except (pa.ArrowInvalid, pa.ArrowTypeError):    # a user observable of mixed types: kept as text
                arrays[n] = pa.array([None if x is None else str(x) for x in v])
        table = pa.table(arrays)
        schema = table.schema if self._schema is None else _unify([self._schema, table.schema])
        if self._schema is not None and schema != self._schema:
            for part in sorted(set(self._where.values()), key=lambda p: p.name):
                import pyarrow.parquet as pq
                self._rewrite(part, pq.read_table(part), schema)
        self._schema = schema
        self._seq += 1
        final = self.path / f"part-{self._seq:08d}-{uuid.uuid4().hex[:16]}.parquet"
        self._write(final, _conform(table, schema))
        keys = table.column("key").to_pylist()
        for part in {self._where[k] for k in keys if k in self._where}:
            import pyarrow.compute as pc
            import pyarrow.parquet as pq
            t = pq.read_table(part)
            t = t.filter(pc.invert(pc.is_in(t.column("key"), pa.array(keys))))
            if t.num_rows:
                self._write(part, t)
            else:
                part.unlink()
        for k in keys:
            self._where[k] = final
        return final

    def _rewrite(self, part, table, schema=None):
        self._write(part, _conform(table, schema or self._schema))

    def _write(self, final, table):
        import pyarrow.parquet as pq
        tmp = self.path / f".{final.name}.tmp"
        pq.write_table(table, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final)


def _atomic(path, data):
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _merge(a, b):
    """The type that holds values of both: itself, the other one for nulls, float64 for numbers, else text."""
    import pyarrow as pa
    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    number = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in number) and any(f(b) for f in number):
        return pa.float64()
    return pa.string()


def _unify(schemas):
    import pyarrow as pa
    fields = {}
    for s in schemas:
        for f in s:
            fields[f.name] = f.type if f.name not in fields else _merge(fields[f.name], f.type)
    return pa.schema(list(fields.items()))


def _conform(table, schema):
    """``table`` with exactly the columns of ``schema``, in its order and types (missing ones null)."""
    import pyarrow as pa
    cols = []
    for f in schema:
        if f.name in table.column_names:
            c = table.column(f.name)
            cols.append(c if c.type == f.type else c.cast(f.type))
        else:
            cols.append(pa.nulls(table.num_rows, f.type))
    return pa.table(cols, schema=schema)


class _Lock:
    """The store's writer lock: an OS lock (``flock``) on ``_sweep.lock``, which holds the writer's host, pid and
    start time for the message a second writer gets.  The OS releases it when its process dies (even by SIGKILL):
    a lock file with contents but no lock is stale, and taken over."""

    def __init__(self, path):
        self.path, self.fd = Path(path), None

    def _info(self):
        return {"host": socket.gethostname(), "pid": os.getpid(),
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}

    def _refuse(self, text):
        try:
            who = json.loads(text)
            holder = f"host {who.get('host')}, pid {who.get('pid')}, since {who.get('since')}"
        except ValueError:
            holder = "a writer that left no host/pid"
        raise OptionError(f"{self.path.parent}: another sweep is writing this store ({holder}; lock file "
                          f"{self.path}); wait for it to finish, or give another --store")

    def acquire(self):
        """Take the lock; the notes say whether a stale lock was taken over."""
        if fcntl is None:
            return self._acquire_exclusive()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            os.close(fd)
            self._refuse(text)
        before = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(self._info()).encode("utf-8"), 0)
        os.fsync(fd)
        self.fd = fd
        return [f"took over a stale lock ({before}): its writer is gone"] if before else []

    def _acquire_exclusive(self):
        """Without flock: create the lock file exclusively; one of a process gone from this host is stale."""
        notes = []
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                text = self.path.read_text(encoding="utf-8", errors="replace")
                try:
                    who = json.loads(text)
                except ValueError:
                    who = {}
                if who.get("host") == socket.gethostname() and not _alive(who.get("pid")):
                    self.path.unlink(missing_ok=True)
                    notes.append(f"took over a stale lock ({text.strip()}): its writer is gone")
                    continue
                self._refuse(text)
            os.write(fd, json.dumps(self._info()).encode("utf-8"))
            os.close(fd)
            self.fd = -1
            return notes
        self._refuse(self.path.read_text(encoding="utf-8", errors="replace"))

    def release(self):
        """Empty the lock file and release the lock."""
        if self.fd is None:
            return
        if self.fd == -1:
            self.path.unlink(missing_ok=True)
        else:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)           # releases the flock
        self.fd = None


def _alive(pid):
    try:
        os.kill(int(pid), 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


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

    Warns
    -----
    UserWarning
        Naming each damaged part file (truncated, not Parquet): its runs are
        missing here; rerunning the sweep (``--resume``) sets it aside and redoes them.
    """
    import pandas as pd
    st = ResultStore(store)
    tables, damaged = st.read_parts()
    for part, why in damaged:
        warnings.warn(f"{part}: damaged part file, skipped ({why}); its runs are missing: rerun the sweep "
                      "(pympc sweep SPEC --resume) to set it aside and redo them", stacklevel=2)
    if not tables:
        raise OptionError(f"{st.path}: no sweep results here (no readable part-*.parquet files); run the sweep first")
    df = pd.concat([t.to_pandas() for _, t in tables], ignore_index=True, sort=False)
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
