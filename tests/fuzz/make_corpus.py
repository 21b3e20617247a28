"""Writes the seed corpora under tests/fuzz/corpus/ (committed; rerun to regenerate).

    python tests/fuzz/make_corpus.py
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np

from renewable_huber import RenewableHuberRegressor

CORPUS = Path(__file__).resolve().parent / "corpus"


def checkpoints() -> dict[str, bytes]:
    rng = np.random.default_rng(0)
    out = {}
    for name, params, names in [("f64_none", {}, False), ("f32_l1", {"dtype": "float32", "penalty": "l1"}, False),
                                ("f64_names_weights", {"fit_intercept": False}, True)]:
        model = RenewableHuberRegressor(backend="numpy", **params)
        for _ in range(2):
            X = rng.normal(size=(40, 3))
            y = X @ [1.0, -1.0, 0.5] + rng.standard_t(3, size=40)
            if names:
                import pandas as pd

                X = pd.DataFrame(X, columns=["a", "b", "c"])
            model.partial_fit(X, y, rng.integers(1, 3, size=40).astype(float) if names else None)
        buffer = io.BytesIO()
        path = CORPUS / "checkpoint" / f"{name}.npz"
        model.save(path)
        out[name] = path.read_bytes()
        buffer.close()
    return out


def validation() -> None:
    rng = random.Random(0)
    for i in range(12):
        (CORPUS / "validation" / f"seed{i:02d}.bin").write_bytes(bytes(rng.randrange(256) for _ in range(8 + 12 * i)))


def checkpoint_fields() -> None:
    rng = random.Random(1)
    for i in range(12):
        data = bytes(rng.randrange(256) for _ in range(8 + 4 * i))
        (CORPUS / "checkpoint_fields" / f"seed{i:02d}.bin").write_bytes(data)


def readers() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (CORPUS / "readers" / "plain.csv.bin").write_bytes(b"C\x03a,b,y\n1,2,3\n4.5,-6,7e-3\n8,9,10\n")
    (CORPUS / "readers" / "missing.csv.bin").write_bytes(b"C\x01a,y\n1,\n,2\n")
    (CORPUS / "readers" / "quoted.csv.bin").write_bytes(b'C\x02"a","y"\r\n"1.5","2"\r\n3,nan\r\n')
    table = pa.table({"a": [1.0, 2.0, 3.0, 4.0], "b": [1, 2, 3, 4], "y": [0.5, 0.25, 0.0, -1.0]})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=3)
    (CORPUS / "readers" / "small.parquet.bin").write_bytes(b"P" + sink.getvalue())


if __name__ == "__main__":
    for folder in ("checkpoint", "checkpoint_fields", "validation", "readers"):
        (CORPUS / folder).mkdir(parents=True, exist_ok=True)
    checkpoints()
    checkpoint_fields()
    validation()
    readers()
