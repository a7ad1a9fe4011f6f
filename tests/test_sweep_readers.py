"""The sweep store is a Parquet dataset: pandas, pyarrow, polars and DuckDB read it without pympc, one row per run."""

import numpy as np
import pandas as pd
import pytest
from test_sweep import cross_spec

from pympc.sweep import load_results, run_sweep
from pympc.sweep.store import ResultStore


def mixed(tr):
    """A user observable of two types: text for mu1 > 1, a number otherwise."""
    return "high" if tr.parameters["mu1"] > 1 else 1.5


@pytest.fixture(scope="module")
def store(client, tmp_path_factory):
    """A store that went through every schema change: batches that all failed first (no observable columns),
    a column of mixed types, and retried runs (their old rows superseded)."""
    path = tmp_path_factory.mktemp("readers") / "s"
    grid = {"m2": [-1.0, 1.0], "mu1": [0.5, 2.0, 8.0], "mu2": [0.1, 3.0]}    # the m2 < 0 runs come first and fail
    spec = cross_spec(grid, observables=[mixed])
    first = run_sweep(spec, path, client=client, batch_size=1)
    assert first.counts["FAILED"] >= 6
    again = run_sweep(spec, path, client=client, retry_failed=True, batch_size=2)
    assert again.ran == first.counts["FAILED"]                   # they fail again: new rows supersede the old
    return path, load_results(path)


def check(df, reference):
    """One row per run, with the values pympc reads."""
    df = df.sort_values("run").reset_index(drop=True)
    assert len(df) == len(reference) == 12 and df["key"].is_unique and list(df["run"]) == list(range(12))
    assert set(reference.columns) <= set(df.columns)
    for col in ("key", "status", "start_hlcp", "mixed", "error"):
        assert list(df[col].fillna("")) == list(reference[col].fillna("")), col
    np.testing.assert_array_equal(df["dissipated"].to_numpy(float), reference["dissipated"].to_numpy(float))
    np.testing.assert_array_equal(df["mu1"].to_numpy(float), reference["mu1"].to_numpy(float))


def test_the_store_went_through_schema_changes(store):
    path, ref = store
    assert (ref.status == "FAILED").sum() == 6 and (ref.status != "FAILED").sum() == 6
    import pyarrow.parquet as pq
    ok = ref[ref.status != "FAILED"]
    assert list(ok.mixed) == ["high" if m > 1 else "1.5" for m in ok.mu1]      # a mixed column is kept as text
    assert ref.dissipated[ref.status == "FAILED"].isna().all()
    schemas = {str(pq.read_schema(p)) for p in ResultStore(path).parts()}
    assert len(schemas) == 1                               # every part has the dataset's schema


def test_pandas(store):
    path, ref = store
    check(pd.read_parquet(path), ref)


def test_pyarrow_dataset(store):
    import pyarrow.dataset as ds
    path, ref = store
    check(ds.dataset(path, format="parquet").to_table().to_pandas(), ref)


def test_polars(store):
    pl = pytest.importorskip("polars")
    path, ref = store
    check(pl.scan_parquet(f"{path}/*.parquet").collect().to_pandas(), ref)


def test_duckdb(store):
    duckdb = pytest.importorskip("duckdb")
    path, ref = store
    check(duckdb.sql(f"select * from read_parquet('{path}/*.parquet')").df(), ref)
