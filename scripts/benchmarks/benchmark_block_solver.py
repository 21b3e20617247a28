"""The CUDA engine's block solver (a small batch's whole update in one
launch) against its multi-kernel pipeline, paired on one GPU: where does
the block solver pay, and where should `auto` stop choosing it?

Two backends per case, one forced to each path (RH_CUDA_SOLVER=block /
pipeline when it is created), fed the same device-resident batch (CuPy,
consumed through DLPack); each timing is one update from the empty state
(backend.update, steady engines, warmed) ending with a device
synchronization. Rounds alternate the order (A B, B A, ...); the number to
quote is the median of the per-round ratios pipeline / block. Data as
PERFORMANCE.md's classes make it (benchmark_native_cpu_paired.make_stream).

    python scripts/benchmarks/benchmark_block_solver.py --out block_solver.json
    python scripts/benchmarks/benchmark_block_solver.py --rows 4096 --features 16 --rounds 9
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

from benchmark_native_cpu_paired import make_stream  # noqa: E402
from benchmark_shape_sweep import environment  # noqa: E402

PATHS = ("block", "pipeline")


def backend_for(path: str, dtype: str, block_tiles: int, features: int):
    """A backend forced to `path`, its engine created now (RH_CUDA_SOLVER and
    RH_CUDA_BLOCK_TILES are read when the engine is)."""
    from renewable_huber.backends import native_cuda_backend

    saved = {name: os.environ.get(name) for name in ("RH_CUDA_SOLVER", "RH_CUDA_BLOCK_TILES")}
    os.environ["RH_CUDA_SOLVER"] = path
    os.environ["RH_CUDA_BLOCK_TILES"] = str(block_tiles)
    try:
        backend = native_cuda_backend.NativeCudaBackend(dtype)
        backend._engine_for(features, True)
        return backend
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_case(rows: int, features: int, dtype: str, penalty: str, rounds: int, seed: int,
             block_tiles: int = 1) -> dict:
    import cupy

    from renewable_huber.config import SolverConfig
    from renewable_huber.state import RenewableHuberState

    (batch,), digest = make_stream(rows, features, rows, dtype, seed)
    X, y = cupy.asarray(batch[0]), cupy.asarray(batch[1])
    config = SolverConfig(tau=1.345, penalty=penalty, lambda_scale=1.0, bandwidth_scale=1.0, fit_intercept=True,
                          max_iter=200, tol=1e-8, ridge=1e-8)
    empty = RenewableHuberState.empty(features, True)
    backends = {path: backend_for(path, dtype, block_tiles, features) for path in PATHS}
    timings: dict[str, list[float]] = {path: [] for path in PATHS}
    details: dict[str, dict] = {}

    def once(path: str) -> float:
        backend = backends[path]
        start = time.perf_counter()
        state, diagnostics = backend.update(backend.as_backend_state(empty), X, y, None, config)
        cupy.cuda.Device().synchronize()
        elapsed = time.perf_counter() - start
        native = backend.last_native_diagnostics
        details[path] = {"solver_path": native.solver_path, "iterations": diagnostics.iterations,
                         "converged": bool(diagnostics.converged), "host_syncs": native.host_syncs,
                         "coefficients": backend.to_host_state(state).coefficients.tolist()}
        return elapsed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            for path in PATHS:
                once(path)
        ratios = []
        for round_ in range(rounds):
            order = PATHS if round_ % 2 == 0 else PATHS[::-1]
            seen = {path: once(path) for path in order}
            for path in PATHS:
                timings[path].append(seen[path])
            ratios.append(seen["pipeline"] / seen["block"])
    block, pipeline = (np.asarray(details[p]["coefficients"]) for p in PATHS)
    return {
        "rows": rows, "features": features, "dtype": dtype, "penalty": penalty, "seed": seed, "sha256": digest,
        "block_tiles": block_tiles,
        "gram_work": rows * (features + 1) * (features + 2) // 2,
        "paths": {path: {"timings_s": timings[path], "median_ms": statistics.median(timings[path]) * 1e3,
                         "min_ms": min(timings[path]) * 1e3,
                         **{k: v for k, v in details[path].items() if k != "coefficients"}}
                  for path in PATHS},
        "ratio_pipeline_over_block": statistics.median(ratios),
        "largest_coefficient_difference": float(np.max(np.abs(block - pipeline))),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1024, 4096, 16384, 65536])
    parser.add_argument("--features", type=int, nargs="+", default=[8, 16, 31])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--penalties", nargs="+", default=["none", "l1"])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--block-tiles", type=int, nargs="+", default=[1],
                        help="RH_CUDA_BLOCK_TILES values to measure the block solver at (tiles of rows per block)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    record = {"schema": "renewable-huber-block-solver", "schema_version": 1, "environment": environment(),
              "arguments": vars(args), "cases": []}
    cases = itertools.product(args.dtypes, args.penalties, args.features, args.rows, args.block_tiles)
    for dtype, penalty, features, rows, tiles in cases:
        case = run_case(rows, features, dtype, penalty, args.rounds, args.seed, tiles)
        record["cases"].append(case)
        block, pipeline = case["paths"]["block"], case["paths"]["pipeline"]
        print(f"{dtype} {penalty:4} {rows:6} x {features:3} tiles {tiles}: block {block['median_ms']:.3f} ms "
              f"({block['solver_path']}, {block['iterations']} it), pipeline {pipeline['median_ms']:.3f} ms -> "
              f"{case['ratio_pipeline_over_block']:.2f}x, max |diff| {case['largest_coefficient_difference']:.1e}",
              flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
