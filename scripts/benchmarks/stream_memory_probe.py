"""Peak memory of one file stream, measured in this (fresh) process.

    python scripts/benchmarks/stream_memory_probe.py reader FILE BATCH_SIZE
    python scripts/benchmarks/stream_memory_probe.py cli FILE BATCH_SIZE

reader: every batch of the CLI's TableSource read and dropped; cli: the
whole `renewable-huber fit FILE --target y --batch-size B --backend numpy`.
Prints one JSON line: arrow's peak allocation (the default pool's
max_memory) and the resident set's peak growth over the stream.

The growth is VmHWM - VmRSS around the stream after the peak was reset
(writing 5 to /proc/self/clear_refs); where that is refused, the peak since
exec before the stream is the base. getrusage's ru_maxrss is not used: it
survives fork and exec, so a child of a large process starts with its
parent's peak (the growth of a stream read under pytest measured 0).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
from pathlib import Path


def _status_mib(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def main() -> int:
    mode, path, batch_size = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    import pyarrow as pa

    from renewable_huber.cli import main as cli_main
    from renewable_huber.data_sources import TableSource

    reset = _reset_peak()
    base = _status_mib("VmRSS") if reset else _status_mib("VmHWM")
    start = time.perf_counter()
    rows = 0
    if mode == "reader":
        for _, batch in TableSource(path, "y", None, None, batch_size).batches():
            rows += batch.X.shape[0]
    elif mode == "cli":
        with contextlib.redirect_stdout(io.StringIO()):
            code = cli_main(["fit", str(path), "--target", "y", "--batch-size", str(batch_size), "--backend", "numpy"])
        if code != 0:
            return code
        rows = None
    else:
        raise SystemExit(f"unknown mode {mode!r}: reader or cli")
    seconds = time.perf_counter() - start
    peak = _status_mib("VmHWM")
    print(json.dumps({
        "rows": rows, "seconds": seconds, "arrow_peak_mib": pa.default_memory_pool().max_memory() / 2**20,
        "rss_base_mib": base, "rss_peak_mib": peak, "rss_growth_mib": peak - base, "peak_reset": reset,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
