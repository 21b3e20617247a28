"""Where the CUDA engine's time goes (PERFORMANCE.md, "Profiling"): steady
streams of one shape class through backend="native_cuda", each phase in an
NVTX range (rh/warm-up, rh/stream <k>, rh/batch <k>.<b>), traced with the
PyTorch profiler (CUPTI: every kernel and copy of the process, ours and
cuBLAS's/cuSOLVER's). nsys is not on the GPU machine; the NVTX ranges serve
the wrappers (nsys_cuda_update.sh where nsys exists, ncu_cuda_update.sh for
Nsight Compute, which runs this script with --tool none).

It answers the five questions of the first trace and writes them, with the
per-category and per-kernel table and the metadata (tools, driver, runtime,
GPU, command line, shape, revision), to --out (JSON; a .txt table beside it):

 1. time share of the weighted Gram and of the dense solve (of GPU time);
 2. host synchronizations per solver iteration;
 3. fraction of wall time in host-to-device transfer (--input host);
 4. whether the Huber kernels are memory- or divergence-bound: from an
    Nsight Compute CSV (--ncu-csv, written by ncu_cuda_update.sh);
 5. which allocations repeat after warm-up (the engine's workspace
    allocations over the traced streams, and the CUDA allocation calls CUPTI
    saw).

Beside them, where the GPU waits between its kernels (gpu_idle_gaps.py, on
the trace's Chrome export): microseconds an update after a host wait, behind
a host-bound launch, and queued (answers gpu_idle_*_us_per_update).

    python scripts/profiling/profile_cuda_update.py --class latency --dtype float64 --penalty none --out prof.json
    python scripts/profiling/profile_cuda_update.py --summarize-ncu ncu.csv
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import re
import subprocess
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Optional

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

# Kernel and copy names to the questions' categories, first match wins.
CATEGORIES = (
    ("block solver (whole update)", r"block_solver_kernel"),
    ("weighted Gram", r"narrow_gram|narrow_score_gram|weighted_rows|gemm|syrk|cutlass|splitKreduce"),
    ("dense solve", r"cholesky|small_newton_step|potr[fs]|getr[fs]|gesvd|min_norm|step_from_inverse|identity_kernel|trsm|svd"),
    ("Huber row terms", r"score_rows|start_residual|line_search_losses|step_line_search|lamm_trial_rows|start_rows|doubling_losses|lamm_trials|check_batch"),
    ("d-sized decisions", r"decide|newton_system|gradient_kernel|lamm_proposals|point_objective|majorizer_matrix|"
                          r"extrapolate|start_objective|information_update|finish_sums"),
    ("other BLAS (GEMV, dot)", r"gemv|dot_kernel|reduce_1Block|asum|nrm2"),
    ("host-to-device copy", r"Memcpy HtoD"),
    ("device-to-host copy", r"Memcpy DtoH"),
    ("device-to-device copy", r"Memcpy DtoD"),
)
HUBER_KERNELS = r"score_rows|start_residual|line_search_losses|step_line_search|lamm_trial_rows|start_rows|doubling_losses|lamm_trials"
ALLOCATION_CALLS = r"^(cudaMalloc|cudaMallocHost|cudaMallocAsync|cudaFree|cudaFreeHost|cudaHostAlloc|cuMemAlloc)"
NCU_METRICS = (
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "launch__grid_size",
)


def category(name: str) -> str:
    for label, pattern in CATEGORIES:
        if re.search(pattern, name):
            return label
    return "other"


def summarize_events(events: Iterable[tuple[str, float, int]], wall_us: float) -> dict:
    """events: (name, device microseconds, calls) of GPU kernels and copies."""
    by_category: dict[str, dict] = {}
    kernels = []
    total = 0.0
    for name, device_us, calls in events:
        if device_us <= 0:
            continue
        label = category(name)
        entry = by_category.setdefault(label, {"device_us": 0.0, "calls": 0})
        entry["device_us"] += device_us
        entry["calls"] += calls
        total += device_us
        kernels.append({"name": name[:160], "category": label, "device_us": device_us, "calls": calls})
    for entry in by_category.values():
        entry["share_of_gpu_time"] = entry["device_us"] / total if total else 0.0
        entry["share_of_wall_time"] = entry["device_us"] / wall_us if wall_us else 0.0
    kernels.sort(key=lambda k: -k["device_us"])
    return {"gpu_busy_us": total, "wall_us": wall_us, "gpu_busy_fraction": total / wall_us if wall_us else 0.0,
            "categories": dict(sorted(by_category.items(), key=lambda kv: -kv[1]["device_us"])), "kernels": kernels}


def allocation_calls(host_events: Iterable[tuple[str, int]]) -> dict:
    """CUDA allocation runtime calls seen in the trace: name -> count."""
    seen: dict[str, int] = {}
    for name, calls in host_events:
        if re.search(ALLOCATION_CALLS, name):
            seen[name] = seen.get(name, 0) + calls
    return seen


def ncu_csv_rows(text: str) -> list[list[str]]:
    """The CSV rows of Nsight Compute's output (its ==PROF== lines and the
    program's own output dropped)."""
    return list(csv.reader(io.StringIO("\n".join(line for line in text.splitlines() if line.startswith('"')))))


def parse_ncu_csv(text: str) -> list[dict]:
    """Nsight Compute's --csv --page raw or the metric-per-row CSV: one dict per kernel launch."""
    rows = ncu_csv_rows(text)
    if not rows:
        return []
    header = rows[0]
    launches: dict[str, dict] = {}
    if "Metric Name" in header:  # one metric per row
        at = {name: header.index(name) for name in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
        for row in rows[1:]:
            if len(row) < len(header):
                continue
            launch = launches.setdefault(row[at["ID"]], {"kernel": row[at["Kernel Name"]]})
            value = row[at["Metric Value"]].replace(",", "")
            try:
                launch[row[at["Metric Name"]]] = float(value)
            except ValueError:
                launch[row[at["Metric Name"]]] = value
        return list(launches.values())
    name_at = header.index("Kernel Name")
    out = []
    for row in rows[2:]:  # raw page: a units row after the header
        launch = {"kernel": row[name_at]}
        for metric in NCU_METRICS:
            if metric in header:
                try:
                    launch[metric] = float(row[header.index(metric)].replace(",", ""))
                except ValueError:
                    pass
        out.append(launch)
    return out


def huber_bound(launches: list[dict]) -> dict:
    """Question 4 from Nsight Compute: per Huber kernel, DRAM and SM throughput
    (% of peak) and active threads per executed instruction (32: no divergence)."""
    out: dict[str, dict] = {}
    for launch in launches:
        match = re.search(HUBER_KERNELS, launch["kernel"])
        if not match:
            continue
        entry = out.setdefault(match.group(0), {"launches": 0, "dram_pct": [], "sm_pct": [], "threads_per_inst": [],
                                                "duration_ns": []})
        entry["launches"] += 1
        for key, metric in (("dram_pct", NCU_METRICS[1]), ("sm_pct", NCU_METRICS[2]),
                            ("threads_per_inst", NCU_METRICS[3]), ("duration_ns", NCU_METRICS[0])):
            if isinstance(launch.get(metric), float):
                entry[key].append(launch[metric])
    for name, entry in out.items():
        for key in ("dram_pct", "sm_pct", "threads_per_inst", "duration_ns"):
            values = sorted(entry[key])
            entry[key] = values[len(values) // 2] if values else None
        dram, sm, threads = entry["dram_pct"], entry["sm_pct"], entry["threads_per_inst"]
        if threads is not None and threads < 24:
            verdict = "divergence-bound (under 24 of 32 threads active per instruction)"
        elif dram is not None and sm is not None and dram >= 60 and dram >= sm:
            verdict = "memory-bound (DRAM throughput the highest unit, over 60% of peak)"
        elif dram is not None and sm is not None and max(dram, sm) < 40:
            verdict = "latency-bound (neither memory nor compute above 40% of peak: too little work per launch)"
        else:
            verdict = "compute-bound" if (sm or 0) > (dram or 0) else "memory-bound"
        entry["verdict"] = verdict
    return out


@contextmanager
def nvtx(name: str):
    """An NVTX range through PyTorch or CuPy, whichever is here (nothing otherwise)."""
    push = pop = None
    try:
        import torch

        push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    except Exception:  # noqa: BLE001 - any failure: try CuPy, then none
        try:
            from cupy.cuda import nvtx as cupy_nvtx

            push, pop = cupy_nvtx.RangePush, cupy_nvtx.RangePop
        except Exception:  # noqa: BLE001
            pass
    if push is not None:
        push(name)
    try:
        yield
    finally:
        if pop is not None:
            pop()


def metadata(args: argparse.Namespace, argv: list[str]) -> dict:
    def probe(command: list[str]) -> str:
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
        except Exception as exc:  # noqa: BLE001 - recorded as unavailable
            return f"unavailable ({type(exc).__name__})"

    info: dict[str, Any] = {
        "command_line": [sys.executable, *sys.argv[:1], *argv],
        "revision": os.environ.get("RH_SOURCE_REVISION") or probe(["git", "-C", str(ROOT), "rev-parse", "HEAD"]),
        "python": platform.python_version(),
        "host": platform.node(),
        "shape": {"class": args.shape_class, "dtype": args.dtype, "penalty": args.penalty, "input": args.input,
                  "cuda_graphs": args.cuda_graphs},
        "nvidia_smi": probe(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem",
                             "--format=csv,noheader"]),
        "ncu": probe(["ncu", "--version"]).splitlines()[-1:] or "unavailable",
        "nsys": probe(["nsys", "--version"]) or "unavailable",
    }
    try:
        from renewable_huber.backends import native_cuda_backend

        info["cuda_runtime"] = native_cuda_backend.runtime_info()
    except Exception as exc:  # noqa: BLE001
        info["cuda_runtime"] = f"unavailable ({exc})"
    try:
        import torch

        info["torch"] = torch.__version__
        info["gpu"] = torch.cuda.get_device_name(0)
    except Exception as exc:  # noqa: BLE001
        info["torch"] = f"unavailable ({exc})"
    return info


def workload(args):
    """The batches (on the device for --input device) and a warm model."""
    from benchmark_native_cpu_paired import CLASSES, make_stream

    from renewable_huber import RenewableHuberRegressor

    samples, features, batch = CLASSES[args.shape_class]
    samples = min(samples, batch * args.max_batches)
    batches, _ = make_stream(samples, features, batch, args.dtype, 0)
    if args.input == "device":
        import cupy

        batches = [(cupy.asarray(X), cupy.asarray(y)) for X, y in batches]
    model = RenewableHuberRegressor(backend="native_cuda", dtype=args.dtype, penalty=args.penalty,
                                    cuda_graphs=args.cuda_graphs)
    return model, batches


def run_streams(model, batches, streams: int, label: str) -> list:
    """`streams` whole streams (fit, then partial_fit), NVTX ranges around each; the native diagnostics."""
    seen = []

    def note() -> None:  # the last update read (with deferred results, a partial_fit reads the one before it)
        native = model._current_backend().last_native_diagnostics
        if not seen or native is not seen[-1]:
            seen.append(native)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(streams):
            with nvtx(f"rh/{label} {k}"):
                for b, (X, y) in enumerate(batches):
                    with nvtx(f"rh/batch {k}.{b}"):
                        (model.fit if b == 0 else model.partial_fit)(X, y)
                    note()
                model.coef_  # noqa: B018  (the stream's last batch read, inside its range)
                note()
    return seen


def synchronize() -> None:
    try:
        import cupy

        cupy.cuda.Device().synchronize()
    except Exception:  # noqa: BLE001 - no CuPy: nothing else to wait for (a host-route update may return before its closing ends)
        pass


def traced_idle_gaps(trace, updates: int) -> dict:
    """The GPU's idle gaps in the profiler's Chrome trace (gpu_idle_gaps.py), an update's share of
    each kind; {"error": ...} when the trace cannot be written or read (the rest of the record stands)."""
    import tempfile

    import gpu_idle_gaps

    try:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "trace.json"
            trace.export_chrome_trace(str(path))
            gaps = gpu_idle_gaps.idle_gaps(json.loads(path.read_text()))
    except Exception as error:  # noqa: BLE001 - a diagnostic beside the record, never its failure
        return {"error": f"{type(error).__name__}: {error}"}
    gaps["us_per_update"] = gpu_idle_gaps.per_update(gaps, updates)
    return gaps


def profile(args, argv) -> dict:
    model, batches = workload(args)
    with nvtx("rh/warm-up"):
        run_streams(model, batches, 1, "warm-up")
    synchronize()
    start = time.perf_counter()
    run_streams(model, batches, args.streams, "untraced")
    synchronize()
    untraced_s = (time.perf_counter() - start) / (args.streams * len(batches))
    record: dict[str, Any] = {"schema": "renewable-huber-cuda-profile", "schema_version": 1,
                              "metadata": metadata(args, argv), "ms_per_update_untraced": untraced_s * 1e3,
                              "batches_per_stream": len(batches), "streams": args.streams}
    allocations_before = model.cuda_features_["workspace_allocations"]
    syncs_before = model.cuda_features_["host_syncs"]
    if args.tool == "none":  # under ncu or nsys: the annotated workload only
        diagnostics = run_streams(model, batches, args.streams, "stream")
        synchronize()
        record["tool"] = "none (run under an external profiler)"
    else:
        import torch
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile

        with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
            start = time.perf_counter()  # the streams only: entering and leaving the profiler take seconds
            diagnostics = run_streams(model, batches, args.streams, "stream")
            synchronize()
            wall_us = (time.perf_counter() - start) * 1e6
        averages = trace.key_averages()
        device_events = [(e.key, getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0.0)),
                          e.count) for e in averages]
        host_events = [(e.key, e.count) for e in averages]
        record["tool"] = f"torch.profiler (CUPTI), torch {torch.__version__}"
        record["trace"] = summarize_events(device_events, wall_us)
        record["allocation_calls_after_warm_up"] = allocation_calls(host_events)
        record["table"] = averages.table(sort_by="self_cuda_time_total", row_limit=40, max_name_column_width=70)
        record["idle_gaps"] = traced_idle_gaps(trace, args.streams * len(batches))
    iterations = sum(d.iterations for d in diagnostics)
    syncs = model.cuda_features_["host_syncs"] - syncs_before
    answers: dict[str, Any] = {
        "host_syncs_per_iteration": syncs / iterations if iterations else None,
        "host_syncs": syncs, "iterations": iterations,
        "solver_paths": sorted({getattr(d, "solver_path", "pipeline") for d in diagnostics}),
        "workspace_allocations_after_warm_up": model.cuda_features_["workspace_allocations"] - allocations_before,
    }
    trace = record.get("trace")
    if trace:
        categories = trace["categories"]
        answers["gram_share_of_gpu_time"] = categories.get("weighted Gram", {}).get("share_of_gpu_time", 0.0)
        answers["solve_share_of_gpu_time"] = categories.get("dense solve", {}).get("share_of_gpu_time", 0.0)
        answers["block_solver_share_of_gpu_time"] = categories.get("block solver (whole update)", {}).get(
            "share_of_gpu_time", 0.0)
        answers["host_to_device_share_of_wall_time"] = categories.get("host-to-device copy", {}).get(
            "share_of_wall_time", 0.0)
        answers["gpu_busy_fraction_of_wall_time"] = trace["gpu_busy_fraction"]
    for kind, us in record.get("idle_gaps", {}).get("us_per_update", {}).items():
        answers[f"gpu_idle_{kind.replace(' ', '_').replace('-', '_')}_us_per_update"] = us
    if args.ncu_csv:
        answers["huber_kernels"] = huber_bound(parse_ncu_csv(Path(args.ncu_csv).read_text()))
    record["answers"] = answers
    return record


def main(argv: Optional[list[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="shape_class", default="latency")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--penalty", default="none")
    parser.add_argument("--input", choices=("host", "device"), default="host")
    parser.add_argument("--cuda-graphs", action="store_true", help="the estimator with cuda_graphs=True")
    parser.add_argument("--streams", type=int, default=3)
    parser.add_argument("--max-batches", type=int, default=4)
    parser.add_argument("--tool", choices=("torch", "none"), default="torch")
    parser.add_argument("--ncu-csv", help="an Nsight Compute CSV of this workload (question 4)")
    parser.add_argument("--summarize-ncu", metavar="CSV", help="only summarize an Nsight Compute CSV and exit")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if args.summarize_ncu:
        print(json.dumps(huber_bound(parse_ncu_csv(Path(args.summarize_ncu).read_text())), indent=1))
        return 0
    record = profile(args, argv)
    answers = record["answers"]
    print(f"{args.shape_class} {args.dtype} {args.penalty} ({args.input} input): "
          f"{record['ms_per_update_untraced']:.3f} ms per update untraced; " +
          ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in answers.items()
                    if k != "huber_kernels"))
    if "table" in record:
        print(record["table"])
    if args.out:
        table = record.pop("table", "")
        Path(args.out).write_text(json.dumps(record, indent=1))
        if table:
            Path(args.out).with_suffix(".txt").write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
