"""The CLI's file readers (data_sources.py): exact batches, bounded memory.

The memory test streams files several times larger than its budget in a
fresh process (scripts/benchmarks/stream_memory_probe.py) and reads two
high-water marks there: arrow's peak allocation (the memory pool's
max_memory) and the growth of the process's peak resident set over the
stream. Both are byte counts, not timings; the budgets hold whatever the file
size (measured figures in docs/benchmarks/file_stream_memory.json: ~9 MiB of
arrow memory and 36-56 MiB of growth for 1.7 MB batches, from 20,000 to
1,200,000 rows; the previous readers: 242 MiB of arrow memory for the
Parquet file, 39 MiB for the CSV file).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from renewable_huber.data_sources import TableSource

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pacsv = pytest.importorskip("pyarrow.csv")

NAMES = [f"x{i}" for i in range(20)] + ["y"]
BATCH = 10_000  # rows; 21 float64 columns: 1.7 MB a batch
ARROW_BUDGET_MIB = 24
RSS_BUDGET_MIB = 64


@pytest.fixture(scope="module")
def big_files(tmp_path_factory):
    """1.2 million rows x 21 columns: Parquet (row groups of 10,000) ~246 MB, CSV ~495 MB."""
    folder = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(0)
    parquet_writer = csv_writer = None
    for _ in range(20):
        table = pa.table({name: rng.normal(size=60_000) for name in NAMES})
        if parquet_writer is None:
            parquet_writer = pq.ParquetWriter(folder / "big.parquet", table.schema)
            csv_writer = pacsv.CSVWriter(folder / "big.csv", table.schema)
        parquet_writer.write_table(table, row_group_size=10_000)
        csv_writer.write_table(table)
    parquet_writer.close()
    csv_writer.close()
    return folder


PROBE = Path(__file__).resolve().parents[1] / "scripts" / "benchmarks" / "stream_memory_probe.py"


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_streaming_a_file_larger_than_the_budget_stays_within_it(big_files, fmt):
    """Defect 4 of issue 18: the Parquet reader pre-buffered and kept what it
    read (arrow's allocation grew with the file); the CSV reader read blocks
    of 64 bytes per batch row, ahead by dozens of blocks."""
    path = big_files / f"big.{fmt}"
    assert path.stat().st_size > 3 * RSS_BUDGET_MIB * 2**20  # several times the budget
    child = subprocess.run([sys.executable, str(PROBE), "reader", str(path), str(BATCH)], capture_output=True,
                           text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    measured = json.loads(child.stdout.strip().splitlines()[-1])
    assert measured["rows"] == 1_200_000
    assert measured["arrow_peak_mib"] < ARROW_BUDGET_MIB, measured
    assert measured["rss_growth_mib"] < RSS_BUDGET_MIB, measured


@pytest.mark.parametrize("fmt", ["parquet", "csv", "csv-stdlib"])
def test_batches_have_exactly_batch_size_rows_whatever_the_file_layout(tmp_path, fmt, monkeypatch):
    rng = np.random.default_rng(1)
    values = {name: rng.normal(size=2_345) for name in ["a", "b", "y", "w"]}
    table = pa.table(values)
    path = tmp_path / ("data.parquet" if fmt == "parquet" else "data.csv")
    if fmt == "parquet":
        pq.write_table(table, path, row_group_size=1000)  # row groups that do not divide the batches
    else:
        pacsv.write_csv(table, path)
    if fmt == "csv-stdlib":
        import builtins

        real_import = builtins.__import__

        def no_pyarrow(name, *args, **kwargs):
            if name.startswith("pyarrow"):
                raise ImportError("blocked for the test")
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    source = TableSource(path, "y", ["a", "b"], "w", 700)
    batches = [batch for _, batch in source.batches()]
    assert [b.X.shape[0] for b in batches] == [700, 700, 700, 245]
    assert [b.rows_done for b in batches] == [700, 1400, 2100, 2345]
    X = np.vstack([b.X for b in batches])
    np.testing.assert_array_equal(X, np.column_stack([values["a"], values["b"]]))
    np.testing.assert_array_equal(np.concatenate([b.y for b in batches]), values["y"])
    np.testing.assert_array_equal(np.concatenate([b.weights for b in batches]), values["w"])


def test_assembler_batches_do_not_share_memory():
    from renewable_huber.data_sources import BatchAssembler

    assembler = BatchAssembler(["a"], "y", None, 3)
    first = list(assembler.add({"a": np.arange(5.0), "y": np.arange(5.0)}, 5))
    second = list(assembler.add({"a": np.arange(5.0, 7.0), "y": np.arange(2.0)}, 2))
    assert len(first) == 1 and len(second) == 1
    assert not np.shares_memory(first[0].X, second[0].X)
    np.testing.assert_array_equal(first[0].X[:, 0], [0, 1, 2])
    np.testing.assert_array_equal(second[0].X[:, 0], [3, 4, 5])
    assert assembler.finish().X[:, 0].tolist() == [6.0]


@pytest.mark.parametrize("content, message", [
    ("a,y\n1,2\nx,3\n", "not numeric|conversion error|could not convert"),
    ("a,y\n1,2\n,3\n", "missing value|empty|could not convert"),
    ("", "empty"),
])
def test_bad_csv_files_give_a_value_error(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        list(TableSource(path, "y", None, None, 10).batches())


@pytest.mark.parametrize("size", [0, -1, 1.5, True])
def test_batch_size_must_be_a_positive_integer(tmp_path, size):
    path = tmp_path / "d.csv"
    path.write_text("a,y\n1,2\n")
    with pytest.raises(ValueError, match="batch size must be a positive integer"):
        list(TableSource(path, "y", None, None, size).batches())


def test_a_csv_column_of_integers_with_decimals_after_the_first_block_reads(tmp_path):
    """The reader inferred each column's type from its first block: integers
    there and a decimal in a later block failed with 'conversion error to
    int64'. Every wanted column is now read as float64."""
    path = tmp_path / "late_decimals.csv"
    rows = 200_000  # ~2.4 MB: many blocks
    with path.open("w") as handle:
        handle.write("a,y\n")
        handle.writelines(f"{i},{i % 7}\n" for i in range(rows - 1))
        handle.write("0.5,1.25\n")
    batches = [batch for _, batch in TableSource(path, "y", None, None, 10_000).batches()]
    assert [b.X.shape[0] for b in batches] == [10_000] * 20
    assert batches[-1].X[-1, 0] == 0.5 and batches[-1].y[-1] == 1.25
    assert batches[0].X[:3, 0].tolist() == [0.0, 1.0, 2.0]
