"""Peak memory of the CLI's file readers against the file size (issue 18, item 6).

For each size (1x, 4x, 16x a base number of rows) and format (Parquet with
row groups of --row-group rows, CSV) it writes a float64 table of 20 features
and a target, then measures in fresh processes:

- reader: TableSource alone (every batch read and dropped);
- cli: `renewable-huber fit FILE --target y --batch-size B --backend numpy`
  end to end;

each time arrow's peak allocation and the peak growth of the resident set
over the stream (stream_memory_probe.py says how).

Memory bounded by the batch shows as figures that do not grow with the size.

    .venv/bin/python scripts/benchmarks/benchmark_file_stream_memory.py \
        --out docs/benchmarks/file_stream_memory.json [--base-rows 250000] [--batch-size 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

NAMES = [f"x{i}" for i in range(20)] + ["y"]

PROBE = Path(__file__).with_name("stream_memory_probe.py")


def write_files(folder: Path, rows: int, row_group: int, seed: int) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    paths = {"parquet": folder / "data.parquet", "csv": folder / "data.csv"}
    parquet = csv = None
    chunk = 250_000
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        table = pa.table({name: rng.normal(size=n) for name in NAMES})
        if parquet is None:
            parquet = pq.ParquetWriter(paths["parquet"], table.schema)
            csv = pacsv.CSVWriter(paths["csv"], table.schema)
        parquet.write_table(table, row_group_size=row_group)
        csv.write_table(table)
    parquet.close()
    csv.close()
    return paths


def measure(mode: str, path: Path, batch_size: int) -> dict:
    """One fresh process per measurement (stream_memory_probe.py)."""
    child = subprocess.run([sys.executable, str(PROBE), mode, str(path), str(batch_size)], capture_output=True,
                           text=True, check=True)
    return json.loads(child.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--base-rows", type=int, default=250_000)
    parser.add_argument("--multiples", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--batch-size", type=int, default=50_000)
    parser.add_argument("--row-group", type=int, default=100_000)
    parser.add_argument("--no-cli", action="store_true", help="measure the readers only")
    parser.add_argument("--workdir", type=Path, default=None, help="where the files are written (default: a temp dir)")
    args = parser.parse_args()

    import pyarrow as pa

    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "src"], capture_output=True, text=True).stdout.strip())
    record = {
        "schema": "renewable-huber-file-stream-memory",
        "version": 1,
        "source_revision": revision + ("+dirty" if dirty else ""),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "pyarrow": pa.__version__, "numpy": np.__version__},
        "columns": len(NAMES), "batch_size": args.batch_size, "row_group": args.row_group,
        "batch_mib": args.batch_size * len(NAMES) * 8 / 2**20,
        "runs": [],
    }
    with tempfile.TemporaryDirectory(dir=args.workdir) as folder:
        for multiple in args.multiples:
            rows = args.base_rows * multiple
            paths = write_files(Path(folder), rows, args.row_group, seed=multiple)
            for fmt, path in paths.items():
                run = {"multiple": multiple, "format": fmt, "rows": rows,
                       "file_mib": path.stat().st_size / 2**20, "reader": measure("reader", path, args.batch_size)}
                if not args.no_cli:
                    run["cli"] = measure("cli", path, args.batch_size)
                assert run["reader"]["rows"] == rows
                record["runs"].append(run)
                print(json.dumps(run), flush=True)
            for path in paths.values():
                path.unlink()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
