"""A :class:`~pympc.dynamics.Trajectory` as a table: DataFrame, CSV, Parquet and xarray, at the requested times.

:class:`TableExport` is the part of ``Trajectory`` that writes it out for other tools; it reads the
trajectory's arrays (``t``, ``q``, ``qd``, slot forces, energies, ``sample_rows()``) and writes nothing back.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import SimulationError

__all__ = ["TableExport"]


class TableExport:
    """The exports of a :class:`~pympc.dynamics.Trajectory` (a base class of it: use them on a trajectory)."""

    def to_dataframe(self, events=False):
        """The trajectory as a pandas DataFrame, one row per sample time (needs pandas).

        Parameters
        ----------
        events : bool
            False (default): exactly the requested output times (``simulate``'s
            ``samples`` or ``t_eval``, as far as the run reached; :meth:`sample_rows`),
            each once — a table that :class:`pympc.identify.Experiment` reads as data.
            True: every row the simulation recorded, i.e. also the two rows of each
            event (the state before the transition, then after it, at the same time)
            and the ends of the span; then two more columns say which row is which.

        Returns
        -------
        pandas.DataFrame
            Columns (SI units; angles in rad):

            - ``t`` [s];
            - per coordinate of the bodies (``coordinate_names``: ``body.x``,
              ``body.y`` [m], ``body.phi`` [rad]) the value and its rate ``_dot``
              [m/s, rad/s];
            - per slot ``slot.normal_force`` λ [N] (signed: > 0 on the −n wall),
              ``slot.friction_force`` F [N] (along the slot's direction, on the
              slider), ``slot.slip_velocity`` [m/s], ``slot.position`` [m] (along
              the slot from the guide's origin), ``slot.wall`` (±1: the wall that
              carries the load) and ``slot.motion`` (−1 slip backward, 0 stick,
              +1 slip forward);
            - ``kinetic``, ``potential``, ``dissipated`` (by friction, growing) and
              ``work`` (put in by applied forces and driven motion) [J];
            - with ``events=True``: ``sample`` (True on the requested output
              times) and ``event`` (the event's kind, ``"START"``,
              ``"SLIP_STOP"``, ..., on both rows of each event; ``""`` elsewhere).

            The names are the outputs :class:`pympc.identify.Experiment` fits.
        """
        try:
            import pandas as pd
        except ImportError:
            raise SimulationError("to_dataframe needs pandas: pip install pandas") from None
        return pd.DataFrame(self._table(events))

    def _table(self, events=False):
        """The columns of :meth:`to_dataframe`, in order: ``{name: 1-d array}``."""
        rows = slice(None) if events else self.sample_rows()
        cols = {"t": self.t[rows]}
        for i, n in enumerate(self.coordinate_names):
            cols[n], cols[n + "_dot"] = self.q[rows, i], self.qd[rows, i]
        for k, n in enumerate(self.slot_names):
            cols[f"{n}.normal_force"] = self.normal_force[rows, k]
            cols[f"{n}.friction_force"] = self.friction_force[rows, k]
            cols[f"{n}.slip_velocity"] = self.slip_velocity[rows, k]
            if self.slot_position is not None:
                cols[f"{n}.position"] = self.slot_position[rows, k]
            cols[f"{n}.wall"], cols[f"{n}.motion"] = self.walls[rows, k], self.motions[rows, k]
        for n in ("kinetic", "potential", "dissipated", "work"):
            cols[n] = getattr(self, n)[rows]
        if events:
            sample = np.zeros(len(self.t), dtype=bool)
            sample[self.sample_rows()] = True
            kind = np.full(len(self.t), "", dtype=object)
            for e in self.events:
                at = np.abs(self.t - e.time) <= 1e-12 * (1.0 + abs(e.time))
                kind[at] = e.kind.name
            cols["sample"], cols["event"] = sample, kind
        return cols

    def to_csv(self, path, events=False, float_format=None):
        """Write :meth:`to_dataframe` to a CSV file, after ``#`` comment lines naming the run.

        The comments (model hash, parameters, status, units) are skipped by
        ``pandas.read_csv(path, comment="#")`` and by ``pympc identify``, which
        reads the file as data.  ``float_format`` (default: the shortest text that reads back the same number)
        is passed to :meth:`pandas.DataFrame.to_csv`; without it the file is written without pandas (the same
        text ``DataFrame.to_csv`` writes, without importing pandas: a quarter second of a command's start).
        Returns the path.
        """
        path = Path(path)
        cols = self._table(events)
        params = ", ".join(f"{k}={v:.10g}" for k, v in self.parameters.items()) or "none"
        head = [f"# pympc trajectory: {self.status.name}, {len(cols['t'])} rows "
                f"({'every row, events twice' if events else 'the requested sample times'})",
                f"# parameters: {params}", f"# model hash: {self.model_hash or 'unknown'}",
                "# units: t s; positions m; angles rad; rates m/s, rad/s; forces N; energies J"]
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write("\n".join(head) + "\n")
            if float_format is None:
                _write_csv(f, cols)
            else:
                self.to_dataframe(events=events).to_csv(f, index=False, float_format=float_format,
                                                        lineterminator="\n")
        return path

    def _metadata(self):
        """What names the run: status, parameters, model hash, pympc's version (text, for file metadata)."""
        from .. import __version__
        return {"status": self.status.name, "message": self.message, "model_hash": self.model_hash or "",
                "parameters": json.dumps({k: float(v) for k, v in self.parameters.items()}),
                "pympc_version": __version__}

    def to_parquet(self, path, events=False):
        """Write :meth:`to_dataframe` as a Parquet file that pandas, pyarrow, polars and DuckDB read as it is.

        The run (status, parameters as JSON, model hash, pympc's version) is in the
        file's key-value metadata under ``pympc``, and each column's SI unit in its
        field metadata (``unit``).  Returns the path.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        from .plots import output_unit
        path = Path(path)
        table = pa.Table.from_pandas(self.to_dataframe(events=events), preserve_index=False)
        fields = [f.with_metadata({"unit": output_unit(f.name)}) if f.name not in ("sample", "event") else f
                  for f in table.schema]
        meta = {**(table.schema.metadata or {}), b"pympc": json.dumps(self._metadata()).encode()}
        pq.write_table(table.cast(pa.schema(fields, metadata=meta)), path)
        return path

    def to_xarray(self, events=False):
        """The trajectory as an :class:`xarray.Dataset` over the dimension ``t`` (needs xarray).

        One variable per column of :meth:`to_dataframe` (``events=True`` keeps both
        rows of each event, so ``t`` then repeats), each with its ``units``
        attribute; the run (status, parameters, model hash) in the dataset's attributes.
        """
        try:
            import xarray  # noqa: F401
        except ImportError:
            raise SimulationError("to_xarray needs xarray: pip install xarray") from None
        from .plots import output_unit
        ds = self.to_dataframe(events=events).set_index("t").to_xarray()
        ds["t"].attrs["units"] = "s"
        for name in ds.data_vars:
            if name not in ("sample", "event"):
                ds[name].attrs["units"] = output_unit(name)
        ds.attrs.update(self._metadata())
        return ds


def _write_csv(f, cols):
    """``cols`` (name → 1-d array) as ``pandas.DataFrame(cols).to_csv(f, index=False, lineterminator="\\n")`` writes
    them: numbers as NumPy's shortest round-trip text (``astype(str)``, pandas' own rule), NaN as an empty field,
    fields quoted only where the CSV dialect needs it (pandas writes through :mod:`csv` too)."""
    import csv

    text = []
    for v in cols.values():
        v = np.asarray(v)
        if v.dtype.kind == "f":
            s = v.astype(str).astype(object)
            s[np.isnan(v)] = ""
        elif v.dtype.kind in "iub":
            s = v.astype(str)
        else:                                    # text (the event column)
            s = ["" if x is None else str(x) for x in v]
        text.append(s)
    w = csv.writer(f, lineterminator="\n")
    w.writerow(list(cols))
    w.writerows(zip(*text))
