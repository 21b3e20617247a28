"""Batch readers for out-of-core tables: CSV and Parquet files streamed in row batches.

Memory is bounded by the batch, not by the file: the readers hold one batch
being filled (fresh arrays for every batch, so a caller may keep them), one
chunk decoded by arrow, and arrow's own read buffers:

- Parquet: ``pre_buffer=False`` (pyarrow's default pre-buffers whole row
  groups and ``iter_batches`` kept them, so arrow's allocation grew with the
  file) and a buffered column stream of ``PARQUET_READ_BUFFER`` bytes, so a
  column chunk is read page by page, whatever the row-group size: arrow
  then holds about a data page per column (pyarrow writes 1 MiB pages) and
  the rows being decoded (measured, 21 columns: 9 MiB of arrow memory with
  row groups of 10,000 rows, 52 MiB with one row group of 600,000 rows,
  where the default settings took 148 MiB, the whole row group).
- CSV: arrow's streaming reader on one thread with blocks of
  ``CSV_BLOCK_BYTES``; its I/O thread reads up to 32 blocks ahead (the
  queue of arrow's background generator: measured, 37 MiB of arrow memory
  with 1 MiB blocks, 9 MiB with 256 KiB blocks).

docs/reliability.md states the bound; docs/benchmarks/file_stream_memory.json
records the peak resident memory against the file size.
"""

from __future__ import annotations

import csv
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional, Sequence

import numpy as np

PARQUET_READ_BUFFER = 256 << 10  # bytes of one buffered column-chunk read
PARQUET_DECODE_ROWS = 16_384  # rows arrow decodes at a time (the assembler makes the batches)
# Bytes of CSV text decoded at a time (at least 16 of the file's first rows).
# Arrow's I/O thread reads up to 32 blocks ahead of the parser, so this is
# kept small: 32 x 256 KiB of read-ahead.
CSV_BLOCK_BYTES = 256 << 10


@dataclass
class Batch:
    X: np.ndarray
    y: np.ndarray
    weights: Optional[np.ndarray]
    rows_done: int  # rows read so far, for the progress bar


class BatchAssembler:
    """Cuts a stream of column chunks into batches of exactly ``batch_size`` rows.

    It holds the one batch being filled; rows are copied from each chunk
    straight into it, so nothing of a chunk is kept once it has been added.
    Every batch has its own arrays.
    """

    def __init__(self, features: Sequence[str], target: str, weight_column: Optional[str], batch_size: int) -> None:
        self.features = list(features)
        self.target = target
        self.weight_column = weight_column
        self.batch_size = batch_size
        self.rows_done = 0
        self._fill = 0
        self._X = self._y = self._w = None

    def _start(self) -> None:
        self._X = np.empty((self.batch_size, len(self.features)), dtype=np.float64)
        self._y = np.empty(self.batch_size, dtype=np.float64)
        self._w = np.empty(self.batch_size, dtype=np.float64) if self.weight_column else None
        self._fill = 0

    def add(self, columns: Mapping[str, np.ndarray], n_rows: int) -> Iterator[Batch]:
        """Copy ``n_rows`` rows of ``columns`` in; yield every batch that fills up."""
        start = 0
        while start < n_rows:
            if self._X is None:
                self._start()
            take = min(self.batch_size - self._fill, n_rows - start)
            rows = slice(self._fill, self._fill + take)
            for j, name in enumerate(self.features):
                self._X[rows, j] = columns[name][start : start + take]
            self._y[rows] = columns[self.target][start : start + take]
            if self._w is not None:
                self._w[rows] = columns[self.weight_column][start : start + take]
            self._fill += take
            start += take
            if self._fill == self.batch_size:
                yield self._take()

    def finish(self) -> Optional[Batch]:
        """The last, partial batch (None when the rows divided into full batches)."""
        if self._X is None or self._fill == 0:
            return None
        n = self._fill
        self._X, self._y = self._X[:n].copy(), self._y[:n].copy()
        self._w = None if self._w is None else self._w[:n].copy()
        return self._take()

    def _take(self) -> Batch:
        self.rows_done += self._fill
        batch = Batch(self._X, self._y, self._w, self.rows_done)
        self._X = self._y = self._w = None
        self._fill = 0
        return batch


def _batch_size(value) -> int:
    if isinstance(value, bool):
        raise ValueError(f"batch size must be a positive integer, got {value!r}")
    try:
        size = operator.index(value)
    except TypeError:
        raise ValueError(f"batch size must be a positive integer, got {value!r}") from None
    if size < 1:
        raise ValueError(f"batch size must be a positive integer, got {value!r}")
    return size


@dataclass
class TableSource:
    path: Path
    target: str
    features: Optional[Sequence[str]]
    weight_column: Optional[str]
    batch_size: int

    @property
    def is_parquet(self) -> bool:
        return self.path.suffix.lower() in (".parquet", ".pq")

    def total_rows(self) -> Optional[int]:
        """Row count when the format records it (Parquet), else None."""
        if self.is_parquet:
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(self.path).metadata.num_rows)
        return None

    def columns(self, header: Sequence[str]) -> list[str]:
        for name in [self.target, *([self.weight_column] if self.weight_column else [])]:
            if name not in header:
                raise ValueError(f"column '{name}' not found in {self.path.name}; columns: {', '.join(header)}")
        if self.features:
            missing = [name for name in self.features if name not in header]
            if missing:
                raise ValueError(f"feature column(s) not found: {', '.join(missing)}")
            features = list(self.features)
        else:
            features = [name for name in header if name not in (self.target, self.weight_column)]
        for name in dict.fromkeys(self._wanted(features)):
            if list(header).count(name) > 1:
                raise ValueError(f"column '{name}' appears {list(header).count(name)} times in {self.path.name}'s header")
        return features

    def _wanted(self, features: list[str]) -> list[str]:
        return features + [self.target] + ([self.weight_column] if self.weight_column else [])

    def batches(self) -> Iterator[tuple[list[str], Batch]]:
        batch_size = _batch_size(self.batch_size)
        if self.is_parquet:
            yield from self._parquet_batches(batch_size)
        else:
            yield from self._csv_batches(batch_size)

    def _arrow_columns(self, record_batch, wanted: list[str], rows_before: int) -> dict[str, np.ndarray]:
        import pyarrow as pa

        columns = {}
        for name in wanted:
            column = record_batch.column(name)
            kind = column.type
            if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind)):
                raise ValueError(
                    f"column '{name}' of {self.path.name} is not numeric ({kind}); encode it as numbers or leave it out "
                    "with --features"
                )
            if column.null_count:
                row = rows_before + int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0]) + 1
                raise ValueError(
                    f"column '{name}' of {self.path.name} has a missing value in data row {row}; "
                    "drop or impute missing values"
                )
            columns[name] = column.to_numpy(zero_copy_only=False)
        return columns

    def _arrow_batches(self, record_batches, features: list[str], batch_size: int) -> Iterator[tuple[list[str], Batch]]:
        import pyarrow as pa

        wanted = self._wanted(features)
        assembler = BatchAssembler(features, self.target, self.weight_column, batch_size)
        rows_read = 0
        try:
            for record_batch in record_batches:
                columns = self._arrow_columns(record_batch, wanted, rows_read)
                rows_read += record_batch.num_rows
                for batch in assembler.add(columns, record_batch.num_rows):
                    yield features, batch
        except (OSError, pa.ArrowException) as exc:
            raise self._damaged(exc) from exc
        last = assembler.finish()
        if last is not None:
            yield features, last

    def _damaged(self, error: Exception) -> Exception:
        """Arrow's errors about the file's content (ArrowInvalid, a feature it
        does not implement, and damaged metadata or pages, which it reports as
        a plain OSError) become a ValueError naming the file. Out of memory and
        the OSError subclasses (no such file, permission denied) stay what they are."""
        if isinstance(error, MemoryError) or (isinstance(error, OSError) and type(error) is not OSError):
            return error
        kind = "Parquet" if self.is_parquet else "CSV"
        return ValueError(f"{self.path.name} is not a readable {kind} file: {error}")

    def _parquet_batches(self, batch_size: int) -> Iterator[tuple[list[str], Batch]]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            file = pq.ParquetFile(self.path, pre_buffer=False, buffer_size=PARQUET_READ_BUFFER)
        except (OSError, pa.ArrowException) as exc:
            raise self._damaged(exc) from exc
        features = self.columns(file.schema_arrow.names)
        # iter_batches also ends a chunk at every row-group boundary, which the
        # assembler hides
        record_batches = file.iter_batches(
            batch_size=min(batch_size, PARQUET_DECODE_ROWS), columns=self._wanted(features), use_threads=False
        )
        yield from self._arrow_batches(record_batches, features, batch_size)

    def _csv_batches(self, batch_size: int) -> Iterator[tuple[list[str], Batch]]:
        try:
            import pyarrow as pa
            import pyarrow.csv as pacsv
        except ImportError:
            yield from self._csv_batches_stdlib(batch_size)
            return
        header, longest_line = self._csv_header()
        features = self.columns(header)
        wanted = self._wanted(features)
        # Every wanted column is read as float64: inferring types block by block
        # failed on a column of integers whose decimals start in a later block.
        read = pacsv.ReadOptions(use_threads=False, block_size=max(CSV_BLOCK_BYTES, 16 * longest_line))
        convert = pacsv.ConvertOptions(column_types={name: pa.float64() for name in wanted}, include_columns=wanted)
        try:
            reader = pacsv.open_csv(self.path, read_options=read, convert_options=convert)
        except (OSError, pa.ArrowException) as exc:
            raise self._damaged(exc) from exc
        yield from self._arrow_batches(reader, features, batch_size)

    def _csv_header(self) -> tuple[list[str], int]:
        """The header's names and the longest of the first lines in bytes (a block must hold a whole row)."""
        with self.path.open(newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), None)
        if header is None:
            raise ValueError(f"{self.path.name} is empty: no header row")
        with self.path.open("rb") as handle:
            longest = max((len(line) for _, line in zip(range(64), handle)), default=0)
        return header, longest

    def _csv_batches_stdlib(self, batch_size: int) -> Iterator[tuple[list[str], Batch]]:
        with self.path.open(newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise ValueError(f"{self.path.name} is empty: no header row")
            features = self.columns(header)
            wanted = self._wanted(features)
            index = {name: header.index(name) for name in wanted}
            assembler = BatchAssembler(features, self.target, self.weight_column, batch_size)
            rows: list[list[str]] = []
            rows_read = 0
            for row in reader:
                rows.append(row)
                if len(rows) == batch_size:
                    yield from ((features, b) for b in assembler.add(self._parse(rows, index, rows_read), len(rows)))
                    rows_read += len(rows)
                    rows = []
            if rows:
                yield from ((features, b) for b in assembler.add(self._parse(rows, index, rows_read), len(rows)))
            last = assembler.finish()
            if last is not None:
                yield features, last

    def _parse(self, rows: list[list[str]], index: Mapping[str, int], rows_before: int) -> dict[str, np.ndarray]:
        table = {}
        for name, at in index.items():
            values = np.empty(len(rows), dtype=np.float64)
            for i, row in enumerate(rows):
                text = row[at].strip() if at < len(row) else ""
                if not text:
                    raise ValueError(
                        f"column '{name}' of {self.path.name} has a missing value in data row {rows_before + i + 1}; "
                        "drop or impute missing values"
                    )
                try:
                    values[i] = float(text)
                except ValueError:
                    raise ValueError(
                        f"column '{name}' of {self.path.name} is not numeric: could not convert {text!r} "
                        f"in data row {rows_before + i + 1}"
                    ) from None
            table[name] = values
        return table
