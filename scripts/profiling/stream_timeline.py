"""Where a whole stream's time goes, step by step, for each CUDA solver route
(RH_CUDA_SOLVER, read when a new engine is made): a cold stream (a new
estimator, so a new engine, inside the timer) and a steady one (one primed
estimator, ``fit`` restarting on its warm engine), each timed two ways:

- ``whole``: the stream as benchmark_cpu_engines.py times it (diagnostics read
  after every batch, the device synchronized once at the end);
- ``steps``: the same stream with the device synchronized after every batch,
  so each step's time is its own: the first batch (a cold one includes the
  engine's construction and its first captures) and the median later update.

Routes alternate stream by stream, in an order that reverses each round, in
one process (each route's engines are its own: a route is fixed when an
engine is made). Prints one line per route and case; ``--out`` writes the JSON.

    python scripts/profiling/stream_timeline.py --dtypes float64 float32 --rounds 9 --out timeline.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "benchmarks"))


def synchronizer(backend: str):
    """The device's synchronization for a CUDA backend (the benchmarks'
    ``device_finish``); nothing for a CPU one."""
    from benchmark_native_cpu_paired import device_finish

    return device_finish("cuda" if backend in ("native_cuda", "cupy") else "cpu") or (lambda: None)


COUNTERS = ("host_syncs", "graph_captures", "graph_replays", "workspace_allocations")


def engine_counters(estimator) -> dict:
    """The CUDA engine's counters over its life (``cuda_features_``); {} for other backends."""
    try:
        features = estimator.cuda_features_
    except AttributeError:
        return {}
    return {name: int(features[name]) for name in COUNTERS if name in features}


def timed_stream(model, batches, synchronize, every_batch: bool) -> tuple[list[float], dict]:
    """One stream as the benchmarks time it (``run_stream``): seconds of each
    step, [construction + first batch, later batches..., final
    synchronization] when ``every_batch`` (the device synchronized after
    each), else [whole stream]; and what the engine's counters rose by over
    the stream (read outside the timer). ``model`` is a callable making the
    estimator (cold) or the primed estimator (steady)."""
    from benchmark_native_cpu_paired import run_stream

    cold = callable(model)
    before = {} if cold else engine_counters(model)
    stamps: list[float] = []

    def stamp(_model) -> None:
        synchronize()
        stamps.append(time.perf_counter())

    begun = time.perf_counter()
    seconds, _, _, estimator = run_stream(None if cold else model, batches, "cold" if cold else "steady", model,
                                          synchronize, stamp if every_batch else None)
    after = engine_counters(estimator)
    rose = {name: value - before.get(name, 0) for name, value in after.items()}
    if not every_batch:
        return [seconds], rose
    edges = [begun, *stamps, begun + seconds]
    return [b - a for a, b in zip(edges, edges[1:])], rose


def summary(samples: dict, counters: dict | None = None) -> dict:
    """Medians in milliseconds of each kind of sample (lists of step lists),
    with the median rise of each engine counter a stream where ``counters``
    (the same kinds: lists of per-stream dicts) has them."""
    out = {}
    for kind, streams in samples.items():
        if kind.endswith("steps"):
            out[kind] = {"first_batch_ms": statistics.median(s[0] for s in streams) * 1e3,
                         "later_update_ms": statistics.median(statistics.median(s[1:-1]) for s in streams) * 1e3,
                         "stream_ms": statistics.median(sum(s) for s in streams) * 1e3}
        else:
            out[kind] = {"stream_ms": statistics.median(s[0] for s in streams) * 1e3}
        rises = (counters or {}).get(kind, [])
        for name in COUNTERS:
            if rises and all(name in rise for rise in rises):
                out[kind][f"{name}_per_stream"] = statistics.median(rise[name] for rise in rises)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="native_cuda")
    parser.add_argument("--feed", choices=("device", "host"), default="device")
    parser.add_argument("--routes", nargs="+", default=["pipeline", "auto"])
    parser.add_argument("--shape-class", default="streaming")
    parser.add_argument("--dtypes", nargs="+", default=["float64"])
    parser.add_argument("--penalty", default="none")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    from benchmark_native_cpu_paired import CLASSES, make_stream

    from renewable_huber import RenewableHuberRegressor

    synchronize = synchronizer(args.backend)
    samples, features, batch = CLASSES[args.shape_class]
    record = {"schema": "renewable-huber-stream-timeline", "schema_version": 1, "command": " ".join(sys.argv),
              "backend": args.backend, "feed": args.feed, "class": args.shape_class, "penalty": args.penalty,
              "rounds": args.rounds, "cases": []}
    for dtype in args.dtypes:
        batches = make_stream(samples, features, batch, dtype, seed=0)[0]
        if args.feed == "device":
            import cupy

            batches = [(cupy.asarray(X), cupy.asarray(y)) for X, y in batches]
        params = {"backend": args.backend, "dtype": dtype, "penalty": args.penalty}
        if args.backend in ("native_cuda", "cupy"):
            params["device"] = "cuda"
        primed, taken, rose = {}, {route: {} for route in args.routes}, {route: {} for route in args.routes}
        for route in args.routes:  # warm-up: each route's primed estimator, and one cold stream
            os.environ["RH_CUDA_SOLVER"] = route
            primed[route] = RenewableHuberRegressor(**params)
            timed_stream(primed[route], batches, synchronize, True)
            timed_stream(lambda: RenewableHuberRegressor(**params), batches, synchronize, True)
        for round_ in range(args.rounds):
            order = args.routes if round_ % 2 == 0 else args.routes[::-1]
            for route in order:
                os.environ["RH_CUDA_SOLVER"] = route
                for lifecycle in ("cold", "steady"):
                    model = (lambda: RenewableHuberRegressor(**params)) if lifecycle == "cold" else primed[route]
                    for every_batch in (False, True):
                        kind = f"{lifecycle}_{'steps' if every_batch else 'whole'}"
                        steps, counters = timed_stream(model, batches, synchronize, every_batch)
                        taken[route].setdefault(kind, []).append(steps)
                        rose[route].setdefault(kind, []).append(counters)
        for route in args.routes:
            case = {"dtype": dtype, "route": route, "batches": len(batches), "samples": taken[route],
                    "counters": rose[route], "summary": summary(taken[route], rose[route])}
            record["cases"].append(case)
            print(f"{args.shape_class} {dtype} {args.penalty} {route:9s} " + "  ".join(
                f"{kind} " + " ".join(f"{name.replace('_ms', '').replace('_per_stream', '')} {value:.3f}"
                                      if name.endswith("_ms") else f"{name.replace('_per_stream', '')} {value:g}"
                                      for name, value in values.items())
                for kind, values in case["summary"].items()), flush=True)
    os.environ.pop("RH_CUDA_SOLVER", None)
    if args.out is not None:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
