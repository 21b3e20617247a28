#!/usr/bin/env python3
"""The shape sweep of PERFORMANCE.md (schema "renewable-huber-shape-sweep",
version 2): every shape class (or the smoke profile), both dtypes and
penalties, every engine installed and usable here, cold and steady
lifecycles, engines interleaved round by round (the order rotates and
reverses every round), each engine's timings kept individually.

Engines (names as the records and the performance gates use them):

  numpy                     the NumPy reference (host)
  native_cpu                the C++ CPU engine on --n-jobs threads (default: every core)
  torch_cpu                 the reference update on PyTorch CPU tensors
  cupy_host_input           the reference update on CuPy, fed NumPy batches (transfer inside the timer)
  cupy_device_input         the same, fed CuPy batches uploaded before the timer
  native_cuda_host_input    the CUDA engine fed NumPy batches (transfer inside the timer)
  native_cuda_device_input  the CUDA engine fed CuPy batches uploaded before the timer (DLPack, zero copy)
  torch_cuda_device_input   the reference update on PyTorch CUDA tensors uploaded before the timer

Lifecycles: steady (one model per engine primed with one whole stream; each
timed stream starts with `fit`, which restarts the warm engine from the empty
state, and `partial_fit`s the rest) and cold (a new estimator, hence a new
engine, inside the timer; CUDA context creation stays outside: the process
made its context during warm-up). A device-fed stream ends with a device
synchronization inside the timer. Excluded from both: data generation, dtype
conversion, uploads of device-resident batches, warm-up.

Each case: class, shape, batch, dataset seed and SHA-256 fingerprint (per
batch, X then y: dtype string, repr(shape), raw bytes), dtype, penalty,
lifecycle, operation, and per engine: every timing, median, min, max,
throughput, per-update time, iterations summed over the stream, whether every
batch converged, the transfer label, and, where its paired reference ran in
the same rounds, the median of the per-round ratios reference / engine (the
number to quote). Engines requested but not usable here are listed in the
record with the reason. A run whose data would exceed --max-host-gib is
refused before anything runs.

    python scripts/benchmarks/benchmark_shape_sweep.py --profile smoke --out sweep.json
    python scripts/benchmarks/benchmark_shape_sweep.py --classes latency reference --repeats 9 --out sweep.json
    python scripts/benchmarks/benchmark_shape_sweep.py --validate sweep.json
    python scripts/benchmarks/benchmark_shape_sweep.py --table sweep.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

from benchmark_native_cpu_paired import CLASSES, make_stream, run_stream  # noqa: E402

SCHEMA, SCHEMA_VERSION = "renewable-huber-shape-sweep", 2
PROFILES = {"standard": ["latency", "reference", "wide", "streaming"], "smoke": ["latency-smoke", "reference-smoke"]}
OPERATION = "fit first batch + partial_fit stream"
LIFECYCLES = ("steady", "cold")


@dataclass(frozen=True)
class EngineSpec:
    backend: str
    device: str
    transfer: str  # "host" | "host_input" | "device_input"
    reference: Optional[str]  # the engine the paired ratio is taken against
    converter: Optional[str] = None  # "cupy" | "torch": batches uploaded before the timer


ENGINES = {
    "numpy": EngineSpec("numpy", "cpu", "host", None),
    "native_cpu": EngineSpec("native_cpu", "cpu", "host", "numpy"),
    "torch_cpu": EngineSpec("torch", "cpu", "host", "numpy"),
    "cupy_host_input": EngineSpec("cupy", "cuda", "host_input", None),
    "cupy_device_input": EngineSpec("cupy", "cuda", "device_input", None, "cupy"),
    "native_cuda_host_input": EngineSpec("native_cuda", "cuda", "host_input", "cupy_host_input"),
    "native_cuda_device_input": EngineSpec("native_cuda", "cuda", "device_input", "cupy_device_input", "cupy"),
    "torch_cuda_device_input": EngineSpec("torch", "cuda", "device_input", "cupy_device_input", "torch"),
}
TRANSFER_LABELS = {"host": "host arrays", "host_input": "host batches, transfer inside the timer",
                   "device_input": "device-resident batches uploaded before the timer"}


# ---------------------------------------------------------------- environment

def _probe(function: Callable[[], Any]) -> Any:
    try:
        return function()
    except Exception as exc:  # a missing module or device: recorded, never fatal
        return f"unavailable ({type(exc).__name__}: {exc})"


def environment() -> dict:
    def revision():
        if os.environ.get("RH_SOURCE_REVISION"):
            return os.environ["RH_SOURCE_REVISION"]
        return subprocess.check_output(["git", "-C", str(ROOT), "rev-parse", "HEAD"], text=True).strip()

    def cpu_model():
        with open("/proc/cpuinfo") as cpuinfo:
            return next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))

    def numpy_blas():
        from threadpoolctl import threadpool_info

        return [{k: i.get(k) for k in ("internal_api", "version", "num_threads")} for i in threadpool_info()]

    def native_cpu():
        import _renewable_huber_native_cpu as m

        return {"version": m.__version__, "abi": m.ABI_VERSION, "blas_provider": m.blas_provider(),
                "blas_threads": m.blas_threads(), "isa_level": m.isa_level()}

    def native_cuda():
        import _renewable_huber_native_cuda as m

        return {"version": m.__version__, "abi": m.ABI_VERSION, "runtime": m.runtime_info()}

    def gpu():
        import _renewable_huber_native_cuda as m

        info = m.device_info(0)
        info["compute_capability"] = list(info["compute_capability"])
        return info

    def cupy_info():
        import cupy

        return {"version": cupy.__version__, "runtime": cupy.cuda.runtime.runtimeGetVersion(),
                "driver": cupy.cuda.runtime.driverGetVersion()}

    def torch_info():
        import torch

        return {"version": torch.__version__, "cuda": torch.version.cuda}

    return {"git_revision": _probe(revision), "python": platform.python_version(), "os": platform.platform(),
            "cpu_model": _probe(cpu_model), "cores": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "numpy": np.__version__, "numpy_blas": _probe(numpy_blas),
            "thread_env": {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")},
            "native_cpu": _probe(native_cpu), "native_cuda": _probe(native_cuda), "gpu": _probe(gpu),
            "cupy": _probe(cupy_info), "torch": _probe(torch_info)}


# ---------------------------------------------------------------- engines

def usable(name: str) -> tuple[bool, str]:
    """(usable here, why not): installed, and a CUDA device for the GPU engines."""
    from renewable_huber.backends.registry import availability

    spec = ENGINES[name]
    ok, why = availability(spec.backend)
    if not ok:
        return False, why
    if spec.device == "cuda":
        has_device = _probe(lambda: __import__("cupy").cuda.runtime.getDeviceCount() > 0)
        if has_device is not True:
            return False, "no CUDA device (CuPy sees none)"
        if spec.backend == "torch" and _probe(lambda: __import__("torch").cuda.is_available()) is not True:
            return False, "PyTorch has no CUDA device"
    return True, "available"


def upload(batches: list, converter: Optional[str]) -> list:
    if converter == "cupy":
        import cupy

        out = [(cupy.asarray(X), cupy.asarray(y)) for X, y in batches]
        cupy.cuda.Device().synchronize()
        return out
    if converter == "torch":
        import torch

        out = [(torch.as_tensor(X, device="cuda"), torch.as_tensor(y, device="cuda")) for X, y in batches]
        torch.cuda.synchronize()
        return out
    return batches


def synchronize(spec: EngineSpec) -> None:
    if spec.device != "cuda":
        return
    if spec.converter == "torch":
        import torch

        torch.cuda.synchronize()
    else:
        import cupy

        cupy.cuda.Device().synchronize()


def new_model(spec: EngineSpec, dtype: str, penalty: str, n_jobs: Optional[int], max_iter: int, tol: float,
              inference: bool = False):
    from renewable_huber import RenewableHuberRegressor

    return RenewableHuberRegressor(backend=spec.backend, device=spec.device, dtype=dtype, penalty=penalty,
                                   n_jobs=n_jobs if spec.backend == "native_cpu" else None, max_iter=max_iter,
                                   tol=tol, inference=inference)


def timed_stream(spec: EngineSpec, model: Any, make: Callable[[], Any], batches: list, lifecycle: str):
    """(seconds, iterations summed, every batch converged) of one whole stream
    (run_stream, with the device synchronized inside the timer)."""
    seconds, converged, iterations, _ = run_stream(model, batches, lifecycle, make, lambda: synchronize(spec))
    return seconds, iterations, converged


# ---------------------------------------------------------------- the sweep

def host_bytes(samples: int, features: int, batch: int, engines: list[str]) -> int:
    """What one class holds on the host at once: the float64 generation and its
    cast, and each host engine's batch-sized workspaces (a few copies of a batch)."""
    data = 2 * samples * (features + 1) * 8
    workspaces = sum(6 * batch * (features + 1) * 8 for e in engines if ENGINES[e].device == "cpu")
    return data + workspaces


def rotation(names: list[str], round_: int) -> list[str]:
    """Round r: the engines rotated by r, reversed every other round."""
    k = round_ % len(names)
    order = names[k:] + names[:k]
    return order if round_ % 2 == 0 else order[::-1]


def run_case(name, dtype, penalty, lifecycle, engines, args, batches, digest, progress):
    samples, features, batch = CLASSES[name]
    data = {e: upload(batches, ENGINES[e].converter) for e in engines}
    makers = {e: (lambda e=e: new_model(ENGINES[e], dtype, penalty, args.n_jobs, args.max_iter, args.tol,
                                        args.inference == "on"))
              for e in engines}
    models = {e: makers[e]() for e in engines}
    for e in engines:  # warm-up: engines, workspaces, kernels, the CUDA context
        for _ in range(max(1, args.warmups)):
            timed_stream(ENGINES[e], models[e], makers[e], data[e], "steady")
    times = {e: [] for e in engines}
    result = {e: (0, True) for e in engines}
    for round_ in range(args.repeats):
        for e in rotation(engines, round_):
            seconds, iterations, converged = timed_stream(ENGINES[e], models[e], makers[e], data[e], lifecycle)
            times[e].append(seconds)
            result[e] = (iterations, result[e][1] and converged)
        progress()
    case = {"class": name, "shape": [samples, features], "batch": batch, "batches": len(batches),
            "dataset_seed": args.seed, "dataset_sha256": digest, "dtype": dtype, "penalty": penalty,
            "lifecycle": lifecycle, "operation": OPERATION, "engines": {}}
    for e in engines:
        t = times[e]
        median = statistics.median(t)
        entry = {"transfer": TRANSFER_LABELS[ENGINES[e].transfer], "timings_s": t, "median_s": median,
                 "min_s": min(t), "max_s": max(t), "throughput_rows_per_s": samples / median,
                 "per_update_ms": median / len(batches) * 1e3, "iterations": result[e][0],
                 "all_batches_converged": result[e][1]}
        reference = ENGINES[e].reference
        if reference in times:
            ratios = [a / b for a, b in zip(times[reference], t)]
            entry["paired"] = {"reference": reference, "ratios": ratios, "median_ratio": statistics.median(ratios)}
        case["engines"][e] = entry
    return case


def sweep(args, on_case: Optional[Callable[[dict], None]] = None) -> dict:
    """The record; ``on_case(record so far)`` after each finished case (the
    command line writes it, so a run stopped midway keeps what it measured)."""
    classes = args.classes or PROFILES[args.profile]
    requested = args.engines or list(ENGINES)
    engines, skipped = [], {}
    for e in requested:
        ok, why = usable(e)
        (engines.append(e) if ok else skipped.__setitem__(e, why))
    if not engines:
        raise SystemExit(f"no requested engine is usable here: {skipped}")
    cap = args.max_host_gib * 2**30
    too_big = [(c, host_bytes(*CLASSES[c], engines)) for c in classes if host_bytes(*CLASSES[c], engines) > cap]
    if too_big:
        raise SystemExit("refused: " + "; ".join(f"class {c} needs ~{b / 2**30:.2f} GiB of host memory"
                                                  for c, b in too_big)
                         + f", over --max-host-gib {args.max_host_gib}")
    total = len(classes) * len(args.dtypes) * len(args.penalties) * len(args.lifecycles) * args.repeats
    done, started = [0], time.perf_counter()

    def progress():
        done[0] += 1
        elapsed = time.perf_counter() - started
        eta = elapsed / done[0] * (total - done[0])
        print(f"\r[{done[0]}/{total} rounds] {elapsed:7.1f} s elapsed, ~{eta:6.1f} s left", end="", file=sys.stderr,
              flush=True)

    cases = []
    record = {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "environment": environment(),
              "arguments": {"warmups": args.warmups, "repeats": args.repeats, "max_iter": args.max_iter,
                            "tol": args.tol, "seed": args.seed, "lifecycles": list(args.lifecycles),
                            "operations": [OPERATION], "classes": classes, "dtypes": list(args.dtypes),
                            "penalties": list(args.penalties), "engines_requested": requested,
                            "n_jobs": args.n_jobs, "max_host_gib": args.max_host_gib, "inference": args.inference,
                            "pairing": "interleaved; order rotated and reversed every round"},
              "engines_unavailable": skipped, "cases": cases}
    for name in classes:
        samples, features, batch = CLASSES[name]
        for dtype in args.dtypes:
            batches, digest = make_stream(samples, features, batch, dtype, args.seed)
            for penalty in args.penalties:
                for lifecycle in args.lifecycles:
                    case = run_case(name, dtype, penalty, lifecycle, engines, args, batches, digest, progress)
                    cases.append(case)
                    print("\n" + summary_line(case), file=sys.stderr, flush=True)
                    if on_case is not None:
                        on_case(record)
    return record


def summary_line(case: dict) -> str:
    parts = []
    for e, r in case["engines"].items():
        paired = f" ({r['paired']['median_ratio']:.2f}x {r['paired']['reference']})" if "paired" in r else ""
        parts.append(f"{e} {r['per_update_ms']:.2f}{paired}")
    return (f"{case['class']} {case['dtype']} {case['penalty']} {case['lifecycle']}: "
            + "; ".join(parts) + " ms/update")


# ---------------------------------------------------------------- validation and tables

CASE_FIELDS = ("class", "shape", "batch", "batches", "dataset_seed", "dataset_sha256", "dtype", "penalty",
               "lifecycle", "operation", "engines")
RESULT_FIELDS = ("transfer", "timings_s", "median_s", "min_s", "max_s", "throughput_rows_per_s", "per_update_ms",
                 "iterations", "all_batches_converged")
ARGUMENT_FIELDS = ("warmups", "repeats", "max_iter", "tol", "seed", "lifecycles", "operations")
ENVIRONMENT_FIELDS = ("git_revision", "python", "os", "cpu_model", "cores", "numpy", "numpy_blas", "thread_env",
                      "native_cpu", "native_cuda", "gpu", "cupy")


def validate(record: dict) -> list[str]:
    """Problems in a schema-v2 record (empty: it validates)."""
    problems = []
    if record.get("schema") != SCHEMA or record.get("schema_version") != SCHEMA_VERSION:
        problems.append(f"schema must be {SCHEMA!r} version {SCHEMA_VERSION}")
    for section, fields in (("environment", ENVIRONMENT_FIELDS), ("arguments", ARGUMENT_FIELDS)):
        missing = [f for f in fields if f not in record.get(section, {})]
        if missing:
            problems.append(f"{section} lacks {missing}")
    repeats = record.get("arguments", {}).get("repeats")
    if not record.get("cases"):
        problems.append("no cases")
    for index, case in enumerate(record.get("cases", [])):
        where = f"case {index}"
        missing = [f for f in CASE_FIELDS if f not in case]
        if missing:
            problems.append(f"{where} lacks {missing}")
            continue
        if case["lifecycle"] not in LIFECYCLES:
            problems.append(f"{where}: lifecycle {case['lifecycle']!r} is not one of {LIFECYCLES}")
        if len(str(case["dataset_sha256"])) != 64:
            problems.append(f"{where}: dataset_sha256 is not a SHA-256 digest")
        for engine, result in case["engines"].items():
            at = f"{where} {engine}"
            missing = [f for f in RESULT_FIELDS if f not in result]
            if missing:
                problems.append(f"{at} lacks {missing}")
                continue
            t = result["timings_s"]
            if len(t) != repeats:
                problems.append(f"{at}: {len(t)} timings, {repeats} repeats")
            elif not (result["min_s"] == min(t) and result["max_s"] == max(t)
                      and result["median_s"] == statistics.median(t)):
                problems.append(f"{at}: median/min/max do not match its timings")
            if any(not (s > 0) for s in t):
                problems.append(f"{at}: a timing is not positive")
            if "paired" in result and result["paired"]["reference"] not in case["engines"]:
                problems.append(f"{at}: paired with {result['paired']['reference']}, which the case lacks")
    return problems


def table(record: dict) -> str:
    """Markdown: per case, each engine's ms per update and its paired ratio."""
    engines = sorted({e for c in record["cases"] for e in c["engines"]}, key=list(ENGINES).index)
    lines = ["| class | dtype | penalty | lifecycle | " + " | ".join(engines) + " |",
             "|---|---|---|---|" + "---|" * len(engines)]
    for c in record["cases"]:
        cells = []
        for e in engines:
            r = c["engines"].get(e)
            if r is None:
                cells.append("")
                continue
            ratio = f" ({r['paired']['median_ratio']:.1f}x)" if "paired" in r else ""
            cells.append(f"{r['per_update_ms']:.2f}{ratio}")
        lines.append(f"| {c['class']} | {c['dtype']} | {c['penalty']} | {c['lifecycle']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=list(PROFILES), default="standard")
    parser.add_argument("--classes", nargs="+", choices=list(CLASSES), help="instead of the profile's classes")
    parser.add_argument("--engines", nargs="+", choices=list(ENGINES), help="default: every engine usable here")
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"], choices=["float64", "float32"])
    parser.add_argument("--penalties", nargs="+", default=["none", "l1"], choices=["none", "l1"])
    parser.add_argument("--lifecycles", nargs="+", default=list(LIFECYCLES), choices=list(LIFECYCLES))
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=-1, help="native_cpu threads (-1: every core)")
    parser.add_argument("--inference", choices=("off", "on"), default="off",
                        help="the models' inference parameter (off: the point estimates alone, as the baselines "
                             "before issue 27 measured them; its cost: benchmark_inference_overhead.py)")
    parser.add_argument("--max-host-gib", type=float, default=8.0,
                        help="refuse a run whose data and host workspaces would need more than this")
    parser.add_argument("--out")
    parser.add_argument("--validate", metavar="RECORD", help="validate a record and exit")
    parser.add_argument("--table", metavar="RECORD", help="print a record's markdown table and exit")
    args = parser.parse_args(argv)
    if args.validate or args.table:
        record = json.loads(Path(args.validate or args.table).read_text())
        if args.table:
            print(table(record))
            return 0
        problems = validate(record)
        print("\n".join(problems) if problems else f"{args.validate}: valid schema-v2 record")
        return 1 if problems else 0
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if not args.out:
        parser.error("--out is required for a sweep")
    out = Path(args.out)

    def write(record: dict) -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".partial")
        partial.write_text(json.dumps(record, indent=1, default=str))
        partial.replace(out)

    record = sweep(args, write)
    problems = validate(record)
    if problems:
        raise SystemExit("the record does not validate: " + "; ".join(problems))
    print(table(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
