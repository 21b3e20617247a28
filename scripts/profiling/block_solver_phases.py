"""Where the block solver's launch spends its time (issue 28's first question
about small batches): the phase clocks of an engine built with
RH_BLOCK_PHASE_CLOCKS (native/cuda/src/phase_clocks.cuh), per case the median
over updates of each phase's cycles and entries, its share of the launch,
and the drivers' own cycles (the launch minus its timed phases, before the
batch's closing).

Each case: a backend forced to the block solver (RH_CUDA_SOLVER=block), one
device-resident batch (CuPy, consumed through DLPack) as PERFORMANCE.md's
classes make it, `--updates` updates from the empty state after two
warm-ups, each ending with a device synchronization (its wall time beside
the launch's cycles). The device's printf lines are read from a worker
process's standard output.

    bash scripts/profiling/block_solver_phases.sh OUT_DIR   # builds the clocked engine, then this
    python scripts/profiling/block_solver_phases.py --rows 4096 --features 16 --out phases.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

PHASES = ("residual_rows", "residual_sum", "score_rows", "gram_tiles", "gram_sum", "system", "cholesky", "value_check",
          "memory", "gradient", "handoff", "driver_reads", "driver_sums", "command_end")
CASE_MARK, PHASE_MARK = "RH_CASE ", "RH_PHASES "


def worker(cases: list[dict], updates: int) -> None:
    """Runs the cases, printing a case mark before each one's timed updates
    and the wall times after; the device prints a phase line per launch."""
    import ctypes

    import cupy

    from benchmark_block_solver import backend_for
    from benchmark_native_cpu_paired import make_stream
    from renewable_huber.config import SolverConfig
    from renewable_huber.state import RenewableHuberState

    libc = ctypes.CDLL(None)
    for case in cases:
        (batch,), _ = make_stream(case["rows"], case["features"], case["rows"], case["dtype"], case["seed"])
        X, y = cupy.asarray(batch[0]), cupy.asarray(batch[1])
        config = SolverConfig(tau=1.345, penalty=case["penalty"], lambda_scale=1.0, bandwidth_scale=1.0,
                              fit_intercept=True, max_iter=100, tol=1e-6, ridge=1e-8)
        backend = backend_for("block", case["dtype"], case.get("block_tiles", 1), case["features"])
        empty = RenewableHuberState.empty(case["features"], True)

        def once() -> float:
            # A fresh device state each time: the engine takes an update only
            # from its current state, and each timed update starts empty.
            start_state = backend.as_backend_state(empty)
            start = time.perf_counter()
            backend.update(start_state, X, y, None, config)
            cupy.cuda.Device().synchronize()
            return time.perf_counter() - start

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            once(), once()
            print(CASE_MARK + json.dumps(case), flush=True)
            walls = [once() for _ in range(updates)]
        native = backend.last_native_diagnostics
        libc.fflush(None)  # the device's lines, out of the C library's buffer
        print("RH_WALL " + json.dumps({"walls_s": walls, "solver_path": native.solver_path,
                                       "host_syncs": native.host_syncs}), flush=True)


def summarize(case: dict, lines: list[dict], wall: dict, clock_khz: float) -> dict:
    """Medians over the case's launches: cycles, microseconds at the device's
    clock, share of the launch, entries per launch."""
    def median(key):
        return statistics.median(line[key] for line in lines)

    total = median("total")
    phases = {}
    for name in (*PHASES, "driver_own", "closing"):
        values = [line.get(name, [0, 0]) for line in lines]  # (an engine built before a phase existed: none)
        cycles = statistics.median((v[0] if isinstance(v, list) else v) for v in values)
        entry = {"cycles": cycles, "us": cycles / clock_khz * 1e3, "share": cycles / total if total else 0.0}
        if isinstance(values[0], list):
            entry["entries"] = statistics.median(v[1] for v in values)
        phases[name] = entry
    return {**case, "launches": len(lines), "blocks": lines[0]["blocks"], "iterations": median("iterations"),
            "total_cycles": total, "total_us": total / clock_khz * 1e3,
            "update_wall_ms": statistics.median(wall["walls_s"]) * 1e3, "solver_path": wall["solver_path"],
            "host_syncs": wall["host_syncs"], "phases": phases}


def sm_clock_khz(cupy) -> float:
    """The SM clock clock64 counts (kHz): the device attribute (13,
    cudaDevAttrClockRate), else the properties' field (gone in CUDA 13's
    cudaDeviceProp), else nvidia-smi's maximum SM clock."""
    try:
        return float(cupy.cuda.runtime.deviceGetAttribute(13, 0))
    except Exception:
        pass
    try:
        return float(cupy.cuda.runtime.getDeviceProperties(0)["clockRate"])
    except Exception:
        pass
    smi = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True)
    return float(smi.stdout.split()[0]) * 1e3


def case_key(rows: int, d: int, element_bytes: int, l1: int) -> tuple:
    return rows, d, element_bytes, l1


def parse(output: str, updates: int) -> list[tuple[dict, list[dict], dict]]:
    """(case, its launches' phase lines, its wall times) per case. The
    device's lines go through the C library's stdout buffer and the
    Python's marks do not, so lines are matched to cases by their shape, not
    their place: a case's launches are the last `updates` of its shape."""
    cases, walls, launches = [], [], {}
    for raw in output.splitlines():
        if raw.startswith(CASE_MARK):
            cases.append(json.loads(raw[len(CASE_MARK):]))
        elif raw.startswith("RH_WALL "):
            walls.append(json.loads(raw[len("RH_WALL "):]))
        elif raw.startswith(PHASE_MARK):
            line = json.loads(raw[len(PHASE_MARK):])
            launches.setdefault(case_key(line["rows"], line["d"], line["element_bytes"], line["l1"]), []).append(line)
    runs = []
    for case, wall in zip(cases, walls):
        key = case_key(case["rows"], case["features"] + 1, 8 if case["dtype"] == "float64" else 4,
                       1 if case["penalty"] == "l1" else 0)
        runs.append((case, launches.get(key, [])[-updates:], wall))
    return runs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[4096, 16384])
    parser.add_argument("--features", type=int, nargs="+", default=[8, 16, 31])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--penalties", nargs="+", default=["none", "l1"])
    parser.add_argument("--updates", type=int, default=15)
    parser.add_argument("--block-tiles", type=int, nargs="+", default=[1],
                        help="RH_CUDA_BLOCK_TILES values (tiles of rows per block at least), each in a worker of its own")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker), args.updates)
        return 0

    import cupy

    from benchmark_shape_sweep import environment

    runs = []
    # One worker per tiles value: the device's lines are matched to cases by
    # shape, and the same shape at two tile counts would share a key.
    for tiles in args.block_tiles:
        cases = [{"rows": r, "features": f, "dtype": t, "penalty": p, "seed": args.seed, "block_tiles": tiles}
                 for t, p, f, r in itertools.product(args.dtypes, args.penalties, args.features, args.rows)]
        done = subprocess.run([sys.executable, __file__, "--updates", str(args.updates), "--worker", json.dumps(cases)],
                              capture_output=True, text=True, env=os.environ.copy())
        if done.returncode != 0:
            sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
            return done.returncode
        found = parse(done.stdout, args.updates)
        if not found or not all(lines for _, lines, _ in found):
            sys.stderr.write("block_solver_phases: no phase lines: is the engine built with RH_BLOCK_PHASE_CLOCKS?\n")
            sys.stderr.write(done.stdout[-2000:])
            return 3
        runs += found
    clock_khz = sm_clock_khz(cupy)
    record = {"schema": "renewable-huber-block-solver-phases", "schema_version": 1, "environment": environment(),
              "clock_khz": clock_khz, "arguments": vars(args),
              "cases": [summarize(case, lines, wall, clock_khz) for case, lines, wall in runs]}
    for c in record["cases"]:
        top = sorted(c["phases"].items(), key=lambda kv: -kv[1]["cycles"])[:4]
        print(f"{c['dtype']} {c['penalty']:4} {c['rows']:6} x {c['features']:3} tiles {c['block_tiles']}: launch {c['total_us']:.0f} us "
              f"({c['iterations']:.0f} it, {c['blocks']} blocks), update {c['update_wall_ms']:.3f} ms | "
              + ", ".join(f"{name} {v['share']:.0%}" for name, v in top), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
