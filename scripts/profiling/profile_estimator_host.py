"""Where a stream's host time goes outside the engine's kernels (issue 28's
"streams, not calls"): cProfile over whole streams through the public API,
as the A/B benchmarks time them (benchmark_native_cpu_paired.run_stream:
a cold stream builds a new estimator inside the timer, a steady one reuses a
primed estimator), for one shape class, dtype, penalty, backend and feed.

The record keeps, per lifecycle, the wall time per stream without the
profiler (median of --streams), the same under the profiler, and the
functions with the most own time and the most cumulative time (calls, own
and cumulative seconds per stream). A native call's own time includes the
device work it waits for, so read the engine's update call beside the
kernel's time (block_solver_phases.py, profile_cuda_update.py).

    python scripts/profiling/profile_estimator_host.py --backend native_cuda --feed device \\
        --class latency --dtype float64 --penalty l1 --out latency_host.json
    python scripts/profiling/profile_estimator_host.py --backend native_cpu --class latency   # any backend
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))


def function_name(key: tuple) -> str:
    filename, line, name = key
    for marker in ("/renewable_huber/", "/scripts/"):
        if marker in filename:
            filename = filename[filename.index(marker) + 1:]
            break
    return f"{filename}:{line}({name})" if line else name


def top(stats: pstats.Stats, key: str, count: int, streams: int) -> list[dict]:
    """The `count` functions with the largest `key` ("tottime" or "cumtime"),
    their figures per stream."""
    rows = []
    for func, (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": function_name(func), "calls_per_stream": calls / streams,
                     "own_ms_per_stream": own / streams * 1e3, "cumulative_ms_per_stream": cumulative / streams * 1e3})
    rows.sort(key=lambda row: -row["own_ms_per_stream" if key == "tottime" else "cumulative_ms_per_stream"])
    return rows[:count]


def profile(args: argparse.Namespace) -> dict:
    from benchmark_native_cpu_paired import CLASSES, device_finish, make_stream, run_stream

    from renewable_huber import RenewableHuberRegressor

    device = "cuda" if args.backend in ("native_cuda", "cupy") or args.feed == "device" else "cpu"
    params = {"backend": args.backend, "device": device, "dtype": args.dtype, "penalty": args.penalty,
              "inference": args.inference}
    samples, features, batch = CLASSES[args.shape_class]
    batches = make_stream(samples, features, batch, args.dtype, seed=0)[0][:args.max_batches]
    finish = device_finish(device)
    if args.feed == "device":
        import cupy

        batches = [(cupy.asarray(bx), cupy.asarray(by)) for bx, by in batches]
        finish()

    def make():
        return RenewableHuberRegressor(**params)

    result = {}
    for lifecycle in args.lifecycles:
        primed = make() if lifecycle == "steady" else None
        for _ in range(3):  # warm-up (steady: primes the estimator the timed streams reuse)
            run_stream(primed, batches, lifecycle, make, finish)
        walls = [run_stream(primed, batches, lifecycle, make, finish)[0] for _ in range(args.streams)]
        profiler = cProfile.Profile()
        profiled = []
        for _ in range(args.streams):
            profiler.enable()
            start = time.perf_counter()
            run_stream(primed, batches, lifecycle, make, finish)
            profiled.append(time.perf_counter() - start)
            profiler.disable()
        stats = pstats.Stats(profiler)
        result[lifecycle] = {"ms_per_stream": statistics.median(walls) * 1e3,
                             "ms_per_stream_profiled": statistics.median(profiled) * 1e3,
                             "by_own_time": top(stats, "tottime", args.top, args.streams),
                             "by_cumulative_time": top(stats, "cumtime", args.top, args.streams)}
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="native_cuda")
    parser.add_argument("--feed", choices=("host", "device"), default="host")
    parser.add_argument("--class", dest="shape_class", default="latency")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--penalty", default="none")
    parser.add_argument("--inference", type=lambda v: v.lower() in ("1", "true", "yes"), default=True,
                        help="the estimator's inference option (true or false; default true, the default's)")
    parser.add_argument("--lifecycles", nargs="+", choices=("cold", "steady"), default=["cold", "steady"])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--max-batches", type=int, default=1, help="the class's first batches only")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--out")
    args = parser.parse_args(argv)

    from benchmark_shape_sweep import environment

    record = {"schema": "renewable-huber-estimator-host-profile", "schema_version": 1, "environment": environment(),
              "arguments": vars(args), "lifecycles": profile(args)}
    lines = []
    for lifecycle, entry in record["lifecycles"].items():
        lines.append(f"{args.backend}@{args.feed} {args.shape_class} {args.dtype} {args.penalty} {lifecycle}: "
                     f"{entry['ms_per_stream']:.3f} ms a stream ({entry['ms_per_stream_profiled']:.3f} profiled)")
        for title, key in (("own", "by_own_time"), ("cumulative", "by_cumulative_time")):
            lines.append(f"  by {title} time (ms a stream, calls a stream):")
            for row in entry[key]:
                lines.append(f"    {row['own_ms_per_stream']:8.4f} own {row['cumulative_ms_per_stream']:8.4f} cum "
                             f"{row['calls_per_stream']:7.1f}x  {row['function']}")
    text = "\n".join(lines)
    print(text, flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1))
        Path(args.out).with_suffix(".txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
