"""Batch readers for out-of-core tables: CSV and Parquet files streamed in row batches."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np


@dataclass
class Batch:
    X: np.ndarray
    y: np.ndarray
    weights: Optional[np.ndarray]
    rows_done: int  # rows read so far, for the progress bar


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
            return list(self.features)
        return [name for name in header if name not in (self.target, self.weight_column)]

    def batches(self) -> Iterator[tuple[list[str], Batch]]:
        if self.is_parquet:
            yield from self._parquet_batches()
        else:
            yield from self._csv_batches()

    def _split(self, table: dict[str, np.ndarray], features: list[str], rows_done: int) -> Batch:
        X = np.column_stack([np.asarray(table[name], dtype=np.float64) for name in features])
        y = np.asarray(table[self.target], dtype=np.float64)
        w = np.asarray(table[self.weight_column], dtype=np.float64) if self.weight_column else None
        return Batch(X, y, w, rows_done)

    def _parquet_batches(self) -> Iterator[tuple[list[str], Batch]]:
        import pyarrow.parquet as pq

        file = pq.ParquetFile(self.path)
        features = self.columns(file.schema_arrow.names)
        wanted = features + [self.target] + ([self.weight_column] if self.weight_column else [])
        rows = 0
        for record_batch in file.iter_batches(batch_size=self.batch_size, columns=wanted):
            rows += record_batch.num_rows
            table = {name: record_batch.column(name).to_numpy(zero_copy_only=False) for name in wanted}
            yield features, self._split(table, features, rows)

    def _csv_batches(self) -> Iterator[tuple[list[str], Batch]]:
        try:
            import pyarrow.csv as pacsv
        except ImportError:
            yield from self._csv_batches_stdlib()
            return
        block = max(1 << 20, self.batch_size * 64)
        reader = pacsv.open_csv(self.path, read_options=pacsv.ReadOptions(block_size=block))
        features = self.columns(reader.schema.names)
        wanted = features + [self.target] + ([self.weight_column] if self.weight_column else [])
        pending: dict[str, list[np.ndarray]] = {name: [] for name in wanted}
        pending_rows = rows_done = 0
        for record_batch in reader:
            for name in wanted:
                pending[name].append(record_batch.column(name).to_numpy(zero_copy_only=False))
            pending_rows += record_batch.num_rows
            while pending_rows >= self.batch_size:
                merged = {name: np.concatenate(parts) for name, parts in pending.items()}
                head = {name: values[: self.batch_size] for name, values in merged.items()}
                pending = {name: [values[self.batch_size :]] for name, values in merged.items()}
                pending_rows -= self.batch_size
                rows_done += self.batch_size
                yield features, self._split(head, features, rows_done)
        if pending_rows:
            merged = {name: np.concatenate(parts) for name, parts in pending.items()}
            yield features, self._split(merged, features, rows_done + pending_rows)

    def _csv_batches_stdlib(self) -> Iterator[tuple[list[str], Batch]]:
        with self.path.open(newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader)
            features = self.columns(header)
            index = {name: header.index(name) for name in header}
            wanted = features + [self.target] + ([self.weight_column] if self.weight_column else [])
            rows: list[list[str]] = []
            rows_done = 0
            for row in reader:
                rows.append(row)
                if len(rows) == self.batch_size:
                    rows_done += len(rows)
                    yield features, self._rows_to_batch(rows, wanted, index, features, rows_done)
                    rows = []
            if rows:
                yield features, self._rows_to_batch(rows, wanted, index, features, rows_done + len(rows))

    def _rows_to_batch(self, rows, wanted, index, features, rows_done: int) -> Batch:
        table = {name: np.array([float(row[index[name]]) for row in rows]) for name in wanted}
        return self._split(table, features, rows_done)
