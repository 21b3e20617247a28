"""A first benchmark of backend="native_cuda" (host-fed NumPy input) on the
four shape classes of PERFORMANCE.md, both dtypes and penalties, against the
engines available on the same host (native_cpu on all its cores, the NumPy
reference for the classes where it finishes in seconds).

Steady lifecycle: one model per engine is primed with one whole stream, then
each timed stream starts with `fit` (the warm engine restarts from the empty
state) and `partial_fit`s the rest; the host-to-device transfer of every
batch is inside the timer. Where CuPy is installed, `native_cuda_device` is
the same engine fed CuPy arrays uploaded before the timer (device-resident
data, consumed in place through DLPack: issue 14), and
`native_cuda_device_graphs` the same with cuda_graphs=True, and `cupy` the
reference update on CuPy (backend="cupy") fed the same device batches. Engines alternate per
round. Also recorded: the CUDA engine's host synchronizations per update and
per iteration.

    python scripts/benchmarks/benchmark_native_cuda.py --rounds 5 --out cuda.json [--classes latency ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

from benchmark_native_cpu_paired import CLASSES, make_stream  # noqa: E402

from renewable_huber import RenewableHuberRegressor  # noqa: E402
from renewable_huber.backends.registry import availability  # noqa: E402


def synchronize_device():
    try:
        import cupy
    except ImportError:  # no CuPy: nothing to wait for that this process could see
        return
    cupy.cuda.Device().synchronize()


def stream_seconds(model, batches):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(*batches[0])
        for X, y in batches[1:]:
            model.partial_fit(X, y)
        model.coef_  # noqa: B018  (the last batch read: with deferred results, amendment 0004, it is read here)
    synchronize_device()  # an update may return before its last kernels end
    return time.perf_counter() - start


def _git_revision():
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", "HEAD"]).returncode != 0
    except OSError:
        return "unknown"
    revision = out.stdout.strip() or "unknown"
    return revision + ("+uncommitted" if dirty else "")


def environment():
    env = {"python": platform.python_version(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
           "numpy": np.__version__, "threads_env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS",
                                                                                 "OPENBLAS_NUM_THREADS")}}
    # The GPU machine's copy of the tree carries the landed main's git metadata,
    # not the commit that runs: gpu_check.sh passes that as RH_SOURCE_REVISION.
    env["revision"] = os.environ.get("RH_SOURCE_REVISION") or _git_revision()
    try:
        import _renewable_huber_native_cuda as cuda

        env["cuda_runtime"] = cuda.runtime_info()
        env["gpu"] = cuda.device_info(0) if env["cuda_runtime"]["device_count"] else "unavailable"
        if isinstance(env["gpu"], dict):
            env["gpu"]["compute_capability"] = list(env["gpu"]["compute_capability"])
    except ImportError:
        env["cuda_runtime"] = "unavailable"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            env["cpu"] = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
                              "unknown")
    except OSError:
        env["cpu"] = "unknown"
    return env


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classes", nargs="*", default=["latency", "reference", "wide", "streaming"])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--numpy-classes", nargs="*", default=["latency", "reference"],
                        help="classes the NumPy reference is timed on (the others take minutes on a server)")
    parser.add_argument("--out")
    args = parser.parse_args(argv)

    engines = ["native_cuda"] + [name for name in ("native_cpu",) if availability(name)[0]]
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        engines[1:1] = ["native_cuda_device", "native_cuda_device_graphs"]
        if availability("cupy")[0]:
            engines.append("cupy")  # the reference update on CuPy arrays, fed the same device-resident batches
    cases = []
    for name in args.classes:
        samples, features, batch = CLASSES[name]
        for dtype in ("float64", "float32"):
            batches, digest = make_stream(samples, features, batch, dtype, 0)
            for penalty in ("none", "l1"):
                names = engines + (["numpy"] if name in args.numpy_classes else [])
                models = {e: RenewableHuberRegressor(backend=e.replace("_device", "").replace("_graphs", ""),
                                                     device="cpu" if e in ("native_cpu", "numpy") else "cuda",
                                                     dtype=dtype, penalty=penalty, cuda_graphs=e.endswith("_graphs"),
                                                     n_jobs=-1 if e == "native_cpu" else None) for e in names}
                data = {e: batches for e in names}
                if "native_cuda_device" in names:
                    on_device = [(cupy.asarray(X), cupy.asarray(y)) for X, y in batches]
                    cupy.cuda.Device().synchronize()
                    for e in ("native_cuda_device", "native_cuda_device_graphs", "cupy"):
                        data[e] = on_device
                for e, model in models.items():
                    stream_seconds(model, data[e])  # prime: engine, workspaces, kernels loaded
                times = {e: [] for e in names}
                for round_ in range(args.rounds):
                    order = names if round_ % 2 == 0 else names[::-1]
                    for e in order:
                        times[e].append(stream_seconds(models[e], data[e]))
                cuda_model = models["native_cuda"]
                native = cuda_model._current_backend().last_native_diagnostics
                case = {"class": name, "shape": [samples, features], "batch": batch, "batches": len(batches),
                        "dtype": dtype, "penalty": penalty, "dataset_seed": 0, "dataset_sha256": digest,
                        "lifecycle": "steady", "transfer": "host-fed (inside the timer); native_cuda_device: "
                        "device-resident CuPy batches (uploaded before the timer)", "engines": {}}
                for e in names:
                    case["engines"][e] = {"timings_s": times[e], "median_s": statistics.median(times[e]),
                                          "min_s": min(times[e]), "max_s": max(times[e]),
                                          "per_update_ms": statistics.median(times[e]) / len(batches) * 1e3,
                                          "last_batch_iterations": int(models[e].n_iter_)}
                case["native_cuda_last_batch"] = {"host_syncs": int(native.host_syncs),
                                                  "iterations": int(native.iterations),
                                                  "solve_route": str(native.solve_route),
                                                  "converged": bool(native.converged)}
                cuda_features = cuda_model.cuda_features_
                case["native_cuda_features"] = {k: cuda_features[k] for k in (
                    "workspace_allocations", "workspace_bytes", "host_syncs", "updates")}
                if "native_cuda_device_graphs" in models:
                    graphs = models["native_cuda_device_graphs"].cuda_features_
                    case["native_cuda_graph_counters"] = {k: graphs[k] for k in (
                        "graph_captures", "graph_replays", "graph_fallbacks", "updates")}
                cases.append(case)
                line = f"{name:10s} {dtype} {penalty:4s} " + "  ".join(
                    f"{e} {case['engines'][e]['per_update_ms']:8.2f}" for e in names) + " ms/update"
                line += (f"  | cuda syncs {native.host_syncs} for {native.iterations} iterations"
                         f" ({native.solve_route})")
                print(line, flush=True)
                del data
    record = {"schema": "renewable-huber-native-cuda-benchmark", "schema_version": 1, "environment": environment(),
              "arguments": vars(args), "cases": cases}
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
