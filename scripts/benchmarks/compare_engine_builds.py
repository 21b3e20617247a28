"""Paired A/B of two builds of the C++ CPU engine, without Python or NumPy in
the timed process: the profiling driver (native/bench/update_profile_driver.cpp)
of each build replays the first batch of a shape class in a loop, the two
builds alternate (A B, B A, ...), and the quoted number is the median of the
per-round ratios candidate / base (below 1: the candidate is faster).

    # each build: scripts/profiling/profile_native_cpu_update.sh builds its driver
    .venv/bin/python scripts/benchmarks/compare_engine_builds.py \\
        --base /work/base/native/build-profile/bench/rh_update_profile_driver \\
        --candidate native/build-profile/bench/rh_update_profile_driver \\
        --rounds 8 --seconds 0.6 --threads 2 --out docs/benchmarks/restructure_engine_ab.json

The NumPy-paired benchmark (benchmark_native_cpu_paired.py) answers "how
much faster than the reference"; on this 2-core VM its ratios move 30-50%
between runs with NumPy's own timings, too much to tell two builds of the
engine apart. This script times only the engine.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

from benchmark_native_cpu_paired import CLASSES, make_stream  # noqa: E402


def git_revision(path: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def time_driver(driver: str, X: Path, y: Path, shape, dtype: str, penalty: str, threads: int, seconds: float) -> float:
    out = subprocess.run([driver, str(X), str(y), str(shape[0]), str(shape[1]), dtype, penalty, str(threads),
                          str(seconds)], capture_output=True, text=True, check=True).stdout
    return float(re.search(r": ([0-9.]+) us/update", out).group(1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the base build's rh_update_profile_driver")
    parser.add_argument("--candidate", required=True, help="the candidate build's rh_update_profile_driver")
    parser.add_argument("--classes", nargs="*", default=["latency", "reference", "wide", "streaming"])
    parser.add_argument("--dtypes", nargs="*", default=["float64", "float32"])
    parser.add_argument("--penalties", nargs="*", default=["none", "l1"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=0.6, help="seconds of updates per timed run")
    parser.add_argument("--out")
    args = parser.parse_args(argv)

    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.classes:
            samples, features, batch = CLASSES[name]
            for dtype in args.dtypes:
                (X, y), *_ = make_stream(min(samples, batch), features, batch, dtype, 0)[0]
                x_path, y_path = Path(tmp) / f"{name}_{dtype}_X.bin", Path(tmp) / f"{name}_{dtype}_y.bin"
                X.tofile(x_path)
                y.tofile(y_path)
                for penalty in args.penalties:
                    times = {"base": [], "candidate": []}
                    for round_ in range(args.rounds):
                        order = ("base", "candidate") if round_ % 2 == 0 else ("candidate", "base")
                        for which in order:
                            driver = args.base if which == "base" else args.candidate
                            times[which].append(time_driver(driver, x_path, y_path, X.shape, dtype, penalty,
                                                            args.threads, args.seconds))
                    ratios = [c / b for c, b in zip(times["candidate"], times["base"])]
                    case = {"class": name, "shape": list(X.shape), "dtype": dtype, "penalty": penalty,
                            "threads": args.threads, "base_us": times["base"], "candidate_us": times["candidate"],
                            "median_base_us": statistics.median(times["base"]),
                            "median_candidate_us": statistics.median(times["candidate"]),
                            "median_ratio_candidate_over_base": statistics.median(ratios),
                            "ratio_range": [min(ratios), max(ratios)]}
                    cases.append(case)
                    print(f"{name:10s} {dtype} {penalty:4s}  base {case['median_base_us']:10.1f} us  candidate "
                          f"{case['median_candidate_us']:10.1f} us  candidate/base {case['median_ratio_candidate_over_base']:.3f}"
                          f"  (rounds {min(ratios):.2f}-{max(ratios):.2f})", flush=True)
    ratios = [c["median_ratio_candidate_over_base"] for c in cases]
    print(f"median over the cases {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")
    if args.out:
        record = {"schema": "renewable-huber-engine-ab", "schema_version": 1,
                  "environment": {"machine": platform.machine(), "python": platform.python_version(),
                                  "revision": git_revision(ROOT), "cpu": platform.processor()},
                  "arguments": vars(args), "cases": cases,
                  "median_ratio_candidate_over_base": statistics.median(ratios)}
        Path(args.out).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
