"""The streaming class's floor (issue 28's target: the whole stream within
4x of "the bytes the engine reads divided by the copy bandwidth measured in
the same run"), in three steps that streaming_floor.sh runs on the GPU:

    python streaming_floor.py --bandwidth OUT.json     # the device's copy rate (CuPy, device to device)
    ncu ... python streaming_floor.py --stream          # one stream, nothing else: every kernel's DRAM bytes
    python streaming_floor.py --summarize NCU.csv --bandwidth-json OUT.json --out floor.json

The bandwidth: a 1 GiB device-to-device copy, the median of 20 after 3
warm-ups, timed with CUDA events. Its DRAM traffic (the bytes it reads plus
the bytes it writes, per second) is the memory's throughput the floor
divides by. The engine's bytes: dram__bytes_read.sum over every kernel
launch of one whole stream (a new estimator: its first batch's kernels
included), as Nsight Compute measured them. The floor in ms is those
bytes over that throughput. The stream's own time comes from the shape
sweep (`benchmark_shape_sweep.py`), and the record says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

from profile_cuda_update import ncu_csv_rows  # noqa: E402

#: Nsight Compute's byte units (with --print-units base they are all "byte")
UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
         "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024.0, "MiB": 1024.0 ** 2, "GiB": 1024.0 ** 3}
READ_METRIC = "dram__bytes_read.sum"


def dram_bytes(text: str, metric: str = READ_METRIC) -> tuple[float, int]:
    """(total bytes, kernel launches) of `metric` in Nsight Compute's
    metric-per-row CSV (--csv --metrics ...), each value in its unit."""
    rows = ncu_csv_rows(text)
    if not rows:
        raise ValueError("no CSV rows: was the stream run under ncu --csv?")
    header = rows[0]
    try:
        at = {name: header.index(name) for name in ("ID", "Metric Name", "Metric Unit", "Metric Value")}
    except ValueError as exc:
        raise ValueError(f"not a metric-per-row CSV (header {header[:8]}...)") from exc
    total, launches = 0.0, set()
    for row in rows[1:]:
        if len(row) < len(header) or row[at["Metric Name"]] != metric:
            continue
        unit = row[at["Metric Unit"]]
        if unit not in UNITS:
            raise ValueError(f"{metric} in an unknown unit {unit!r}")
        total += float(row[at["Metric Value"]].replace(",", "")) * UNITS[unit]
        launches.add(row[at["ID"]])
    if not launches:
        raise ValueError(f"no {metric} rows in the CSV")
    return total, len(launches)


def floor_record(bytes_read: float, launches: int, bandwidth: dict) -> dict:
    """The floor (ms) from the stream's DRAM reads and the copy's DRAM traffic rate."""
    rate = bandwidth["dram_bytes_per_s"]
    return {"schema": "renewable-huber-streaming-floor", "schema_version": 1,
            "engine_dram_bytes_read": bytes_read, "kernel_launches": launches,
            "copy": bandwidth, "floor_ms": bytes_read / rate * 1e3,
            "definition": "the stream's DRAM bytes read (Nsight Compute, every kernel of one whole stream) over "
                          "the DRAM traffic rate (reads plus writes per second) of a 1 GiB device-to-device copy "
                          "in the same run; the stream's time is the shape sweep's"}


def measure_bandwidth(gib: float = 1.0, repeats: int = 20) -> dict:
    import cupy

    n = int(gib * 2 ** 30) // 8
    source, target = cupy.ones(n, dtype=cupy.float64), cupy.empty(n, dtype=cupy.float64)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for k in range(3 + repeats):
        start.record()
        cupy.copyto(target, source)
        stop.record()
        stop.synchronize()
        if k >= 3:
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    seconds = statistics.median(times)
    copied = n * 8
    return {"bytes_copied": copied, "median_s": seconds, "copy_bytes_per_s": copied / seconds,
            "dram_bytes_per_s": 2 * copied / seconds, "repeats": repeats}


def run_stream(dtype: str, penalty: str, inference: bool) -> None:
    """One whole streaming-class stream, device-fed (the batches uploaded first), on a new estimator
    (inference as the shape sweep runs it: off unless asked)."""
    import warnings

    import cupy

    from benchmark_native_cpu_paired import CLASSES, make_stream
    from renewable_huber import RenewableHuberRegressor

    samples, features, batch = CLASSES["streaming"]
    batches, _ = make_stream(samples, features, batch, dtype, 0)
    batches = [(cupy.asarray(X), cupy.asarray(y)) for X, y in batches]
    cupy.cuda.Device().synchronize()
    model = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty, inference=inference)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, (X, y) in enumerate(batches):
            (model.fit if index == 0 else model.partial_fit)(X, y)
    cupy.cuda.Device().synchronize()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bandwidth", metavar="OUT", help="measure the copy rate into OUT (JSON)")
    parser.add_argument("--stream", action="store_true", help="run one stream (under ncu)")
    parser.add_argument("--summarize", metavar="NCU_CSV")
    parser.add_argument("--bandwidth-json")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--penalty", default="none")
    parser.add_argument("--inference", choices=("off", "on"), default="off")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.bandwidth:
        Path(args.bandwidth).write_text(json.dumps(measure_bandwidth(), indent=1))
    if args.stream:
        run_stream(args.dtype, args.penalty, args.inference == "on")
    if args.summarize:
        bytes_read, launches = dram_bytes(Path(args.summarize).read_text())
        record = floor_record(bytes_read, launches, json.loads(Path(args.bandwidth_json).read_text()))
        record.update(dtype=args.dtype, penalty=args.penalty, inference=args.inference)
        text = json.dumps(record, indent=1)
        print(text)
        if args.out:
            Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
