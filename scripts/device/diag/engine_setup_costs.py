"""Diagnosis (device only, about 20 s): what a new CUDA engine costs before
its first update, to tell whether the latency class's cold stream (a new
estimator per stream, issue 28's table) pays for pinning host memory. The
engine holds eight small pinned arrays (device_passes.cuh, cuda_engine.cuh);
the pending exchange patch folds five of them into one allocation.

Prints and writes (``--out``) the medians of:
- cudaHostAlloc + cudaFreeHost of 64 B to 24 MiB (CuPy's runtime bindings);
- a native engine's construction and destruction (d = 17, both dtypes);
- a latency-class stream (4,096 x 16, float64, device-fed): one partial_fit
  on a new estimator (cold), and one more partial_fit on the same model
  (warm). The difference is roughly the engine's first-use costs.

    PYTHONPATH=src python3 scripts/device/diag/engine_setup_costs.py --out $OUT/engine_setup_costs.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import numpy as np


def median_seconds(action, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--out")
    args = parser.parse_args()

    import cupy
    import _renewable_huber_native_cuda as native
    from renewable_huber import RenewableHuberRegressor

    runtime = cupy.cuda.runtime
    record: dict = {"pinned_alloc_free_us": {}, "engine_construct_destroy_us": {}, "latency_stream_ms": {}}
    for size in (64, 4096, 65536, 1 << 20, 2 << 20, 8 << 20, 24 << 20):
        def pin_and_free(size=size):
            pointer = runtime.hostAlloc(size, 0)
            runtime.freeHost(pointer)
        pin_and_free()
        record["pinned_alloc_free_us"][str(size)] = median_seconds(pin_and_free, args.repeats) * 1e6

    for dtype in ("float64", "float32"):
        def construct(dtype=dtype):
            engine = native.Engine(0, dtype, 16, True, False, False)
            del engine
        construct()
        record["engine_construct_destroy_us"][dtype] = median_seconds(construct, args.repeats) * 1e6

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4096, 16))
    y = X @ rng.normal(size=16) + rng.standard_t(3, size=4096)
    dX, dy = cupy.asarray(X), cupy.asarray(y)

    def cold():
        model = RenewableHuberRegressor(backend="native_cuda")
        model.partial_fit(dX, dy)
        cupy.cuda.runtime.deviceSynchronize()

    warm_model = RenewableHuberRegressor(backend="native_cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cold()
        warm_model.partial_fit(dX, dy)

        def warm():
            warm_model.partial_fit(dX, dy)
            cupy.cuda.runtime.deviceSynchronize()

        record["latency_stream_ms"]["cold_new_estimator"] = median_seconds(cold, args.repeats) * 1e3
        record["latency_stream_ms"]["warm_same_estimator"] = median_seconds(warm, args.repeats) * 1e3
    print(json.dumps(record, indent=2))
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(record, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
