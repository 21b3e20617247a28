#!/usr/bin/env python3
"""What inference costs (issue 27): whole streams of the four shape classes
with ``inference=True`` (the meat accumulated: one more weighted Gram per
batch) against ``inference=False``, paired: the two models alternate within
each round (the order reverses every round), both primed, each timed stream
starting with ``fit`` on its warm engine. Penalty "none" only: an L1 stream
keeps no meat. Record (schema "renewable-huber-inference-overhead"): per
engine, class and dtype every timing, the medians and the median of the
per-round ratios on / off (the number to quote: 1.10 is 10% overhead).

    python scripts/benchmarks/benchmark_inference_overhead.py --engines native_cpu numpy --out overhead.json
    python scripts/benchmarks/benchmark_inference_overhead.py --engines native_cuda_device_input --out overhead_h200.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))

from benchmark_native_cpu_paired import CLASSES, device_finish, make_stream, run_stream  # noqa: E402
from benchmark_shape_sweep import environment  # noqa: E402

from renewable_huber import RenewableHuberRegressor, __version__  # noqa: E402

#: engine -> (backend, device, how batches are fed)
ENGINES = {"numpy": ("numpy", "cpu", "host"), "native_cpu": ("native_cpu", "cpu", "host"),
           "native_cuda_host_input": ("native_cuda", "cuda", "host"),
           "native_cuda_device_input": ("native_cuda", "cuda", "cupy"),
           "cupy_device_input": ("cupy", "cuda", "cupy")}


def feed(batches, how, device):
    """The batches as the engine gets them, and what ends a timed stream: the
    device synchronized for a GPU engine (an update may return before its
    last kernels end, the meat's pass among them), whatever the feed."""
    finish = device_finish(device)
    if how == "host":
        return batches, finish
    import cupy

    uploaded = [(cupy.asarray(bx), cupy.asarray(by)) for bx, by in batches]
    cupy.cuda.Device().synchronize()
    return uploaded, finish


def measure(engine, cls, dtype, rounds):
    backend, device, how = ENGINES[engine]
    samples, features, batch = CLASSES[cls]
    host, fingerprint = make_stream(samples, features, batch, dtype, seed=0)
    batches, finish = feed(host, how, device)
    models = {on: RenewableHuberRegressor(backend=backend, device=device, dtype=dtype, inference=on)
              for on in (True, False)}
    for on, model in models.items():  # primed: engines, workspaces, kernels
        run_stream(model, batches, finish=finish)
    times = {True: [], False: []}
    for index in range(rounds):
        for on in ((True, False) if index % 2 == 0 else (False, True)):
            seconds, _, _, _ = run_stream(models[on], batches, finish=finish)
            times[on].append(seconds)
    ratios = [a / b for a, b in zip(times[True], times[False])]
    return {"engine": engine, "class": cls, "rows": samples, "features": features, "batch": batch, "dtype": dtype,
            "fingerprint": fingerprint, "seconds_on": times[True], "seconds_off": times[False],
            "median_on_ms": 1e3 * statistics.median(times[True]), "median_off_ms": 1e3 * statistics.median(times[False]),
            "median_ratio": statistics.median(ratios), "ratios": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", nargs="+", default=["native_cpu"], choices=sorted(ENGINES))
    parser.add_argument("--classes", nargs="+", default=["latency", "reference", "wide", "streaming"],
                        choices=sorted(CLASSES))
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"], choices=["float64", "float32"])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    record = {"schema": "renewable-huber-inference-overhead", "version": 2, "package_version": __version__,
              "environment": environment(), "command": " ".join(sys.argv), "rounds": args.rounds, "cases": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for engine in args.engines:
        for cls in args.classes:
            for dtype in args.dtypes:
                case = measure(engine, cls, dtype, args.rounds)
                record["cases"].append(case)
                out.write_text(json.dumps(record, indent=1) + "\n")  # kept after every case
                print(f"{engine:26} {cls:10} {dtype}: off {case['median_off_ms']:8.3f} ms  on "
                      f"{case['median_on_ms']:8.3f} ms  on/off {case['median_ratio']:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
