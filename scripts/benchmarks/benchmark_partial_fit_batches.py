#!/usr/bin/env python3
"""Streams, not calls (issue 28): a whole stream absorbed as the loop of
``partial_fit`` over its batches against one ``partial_fit_batches(X, y,
batch_size=b)`` over the same rows, paired: the two alternate within each
round (the order reverses every round), each stream on a new estimator
(engine creation inside the timer for both), after one unrecorded round of
each. The two give the same bits (tests/test_partial_fit_batches.py); the
difference is the per-call work: validation, engine dispatch, the GIL, and
on native_cpu the native call per batch. Record (schema
"renewable-huber-partial-fit-batches"): every timing, the medians and the
median of the per-round ratios loop / batches (above 1: batches faster).

    python scripts/benchmarks/benchmark_partial_fit_batches.py --engines native_cpu numpy --out batches.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))

from benchmark_native_cpu_paired import device_finish, make_stream  # noqa: E402
from benchmark_shape_sweep import environment  # noqa: E402

import numpy as np  # noqa: E402

from renewable_huber import RenewableHuberRegressor, __version__  # noqa: E402

#: (rows, features, batch): many small batches (per-call work dominates) to the issue's streaming class
CASES = {
    "tiny-batches": (16_384, 8, 128),
    "small-batches": (65_536, 16, 1024),
    "reference": (100_000, 90, 32_768),
    "streaming": (1_000_000, 32, 65_536),
}
ENGINES = {"numpy": ("numpy", "cpu"), "native_cpu": ("native_cpu", "cpu"), "native_cuda": ("native_cuda", "cuda")}


def stream_loop(make, batches):
    model = make()
    for X, y in batches:
        model.partial_fit(X, y)
    model.coef_  # noqa: B018  (the last batch read, as partial_fit_batches reads its last slice)
    return model


def stream_batches(make, X, y, batch):
    return make().partial_fit_batches(X, y, batch_size=batch)


def measure(engine, case, dtype, rounds):
    backend, device = ENGINES[engine]
    rows, features, batch = CASES[case]
    batches, fingerprint = make_stream(rows, features, batch, dtype, seed=0)
    X, y = np.concatenate([b[0] for b in batches]), np.concatenate([b[1] for b in batches])

    def make():
        return RenewableHuberRegressor(backend=backend, device=device, dtype=dtype)

    ways = {"loop": lambda: stream_loop(make, batches), "batches": lambda: stream_batches(make, X, y, batch)}
    finals = {name: way().coef_ for name, way in ways.items()}  # the unrecorded round
    finish = device_finish(device) or (lambda: None)  # (CuPy imported outside the timer)
    finish()
    if not np.array_equal(finals["loop"], finals["batches"]) and engine != "native_cuda":
        raise SystemExit(f"{engine} {case} {dtype}: partial_fit_batches differs from the loop")
    times = {name: [] for name in ways}
    for index in range(rounds):
        for name in (("loop", "batches") if index % 2 == 0 else ("batches", "loop")):
            start = time.perf_counter()
            ways[name]()
            finish()
            times[name].append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(times["loop"], times["batches"])]
    return {"engine": engine, "case": case, "rows": rows, "features": features, "batch": batch,
            "calls_in_loop": len(batches), "dtype": dtype, "fingerprint": fingerprint,
            "seconds_loop": times["loop"], "seconds_batches": times["batches"],
            "median_loop_ms": 1e3 * statistics.median(times["loop"]),
            "median_batches_ms": 1e3 * statistics.median(times["batches"]),
            "median_ratio_loop_over_batches": statistics.median(ratios), "ratios": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", nargs="+", default=["native_cpu"], choices=sorted(ENGINES))
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=sorted(CASES))
    parser.add_argument("--dtypes", nargs="+", default=["float64"], choices=["float64", "float32"])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    record = {"schema": "renewable-huber-partial-fit-batches", "version": 1, "package_version": __version__,
              "environment": environment(), "command": " ".join(sys.argv), "rounds": args.rounds, "cases": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for engine in args.engines:
        for case in args.cases:
            for dtype in args.dtypes:
                result = measure(engine, case, dtype, args.rounds)
                record["cases"].append(result)
                out.write_text(json.dumps(record, indent=1) + "\n")  # kept after every case
                print(f"{engine:12} {case:14} {dtype}: loop {result['median_loop_ms']:9.3f} ms ({result['calls_in_loop']} "
                      f"calls)  batches {result['median_batches_ms']:9.3f} ms  loop/batches "
                      f"{result['median_ratio_loop_over_batches']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
