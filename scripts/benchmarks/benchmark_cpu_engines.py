#!/usr/bin/env python3
"""Engines against each other, each in its own process (issue 29): this
package's native_cpu, the NumPy reference, and any other installation of a
renewable-huber estimator (the predecessor's Rust wheel, in a virtual
environment of its own; another build of this package, for a paired
before/after of a change), over the four shape classes, both penalties and
dtypes. GPU backends too (native_cuda, cupy: device "cuda"; a BACKEND ending
in "@device" feeds CuPy arrays, the stream timed to a device
synchronization; "@device+graphs" the same with cuda_graphs=True). A BACKEND ending in "%N" runs with
n_jobs=N (native_cpu's thread scaling: ``ours4=python3:native_cpu%4``);
native_cpu streams also record their threads' counters per round
(row-split dispatches, late ones, batches that ended on one thread).
``--settle S`` idles S seconds before a stream whose engine differs from
the last one's: a BLAS pool's threads spin on every core for about 0.1 s
after a call (OpenBLAS's thread timeout, NumPy's too), and without the
pause that spinning is charged to whichever engine runs next (on the GPU
machine's 16 cores it turned native_cpu's row-split passes serial in the
rounds after NumPy's: docs/performance-log.md). Each engine lives in one worker process for the whole run; every
round asks each worker, in an order that rotates and reverses, for one whole
stream of the case (the cold lifecycle: a new estimator inside the timer, its
engine's creation included; one untimed warm-up stream per case first;
``--lifecycle steady``: one estimator per case, primed by the warm-up
stream, and each timed stream starts from the empty state on its warm
engine, so an engine's construction and the estimator's are outside the
timer: the update path alone, with less of the run-to-run spread). The
record keeps every timing, the medians, and the median of the per-round
ratios against the first engine (the number to quote: 2.0 means the first
engine is twice as fast).

    python scripts/benchmarks/benchmark_cpu_engines.py \\
        --engine ours=.venv/bin/python:native_cpu --engine numpy=.venv/bin/python:numpy \\
        --engine predecessor=/tmp/rustvenv/bin/python:native_cpu --rounds 9 --out cpu_engines.json

An engine is NAME=PYTHON:BACKEND; ``--engine-path NAME=DIR`` puts DIR first
on that engine's PYTHONPATH (a source tree's ``src`` whose package should
be imported instead of the installed one); ``--inference off`` passes
inference=False to the estimators that have the parameter (the point
estimates alone, what an estimator without inference computes).

    # the CUDA engine before and after a change, on one GPU machine (scripts/device/gpu_check.sh ab_builds:
    # the baseline's src and a folder holding its CUDA wheel first on that worker's path)
    python scripts/benchmarks/benchmark_cpu_engines.py --engine after=python3:native_cuda@device \\
        --engine before=python3:native_cuda@device --engine-path before=/tmp/base/src:/tmp/base-site ...
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------- the worker (in the engine's interpreter)
def worker(backend: str) -> int:
    sys.path.insert(0, str(HERE))
    backend, _, jobs = backend.partition("%")
    backend, _, feed = backend.partition("@")
    feed, _, option = feed.partition("+")  # "device+graphs": device-fed, cuda_graphs=True
    device = "cuda" if backend in ("native_cuda", "cupy") or feed == "device" else "cpu"
    import inspect

    from benchmark_native_cpu_paired import CLASSES, device_finish, make_stream, run_stream

    from renewable_huber import RenewableHuberRegressor, __version__

    has_inference = "inference" in inspect.signature(RenewableHuberRegressor.__init__).parameters
    cases: dict = {}
    models: dict = {}  # steady: the primed estimator of each case
    print(json.dumps({"ready": True, "version": __version__, "has_inference": has_inference}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        lifecycle = request.get("lifecycle", "cold")
        key = (request["class"], request["dtype"], request["penalty"], request["inference"], lifecycle)
        params = {"backend": backend, "device": device, "dtype": request["dtype"], "penalty": request["penalty"]}
        if has_inference:
            params["inference"] = request["inference"]
        if jobs:
            params["n_jobs"] = int(jobs)
        if option == "graphs":
            params["cuda_graphs"] = True
        finish = device_finish(device)  # the device, inside the timer
        if key not in cases:
            samples, features, batch = CLASSES[request["class"]]
            cases[key] = make_stream(samples, features, batch, request["dtype"], seed=0)[0]
            if feed == "device":
                import cupy

                cases[key] = [(cupy.asarray(bx), cupy.asarray(by)) for bx, by in cases[key]]
                finish()
            # warm-up (steady: it primes the estimator the timed streams reuse)
            primed = RenewableHuberRegressor(**params) if lifecycle == "steady" else None
            run_stream(primed, cases[key], lifecycle, lambda: RenewableHuberRegressor(**params), finish)
            models[key] = primed
        threads = ThreadCounts()
        seconds, converged, iterations, model = run_stream(models[key], cases[key], lifecycle,
                                                           lambda: RenewableHuberRegressor(**params), finish,
                                                           threads.observe)
        print(json.dumps({"seconds": seconds, "converged": converged, "iterations": iterations, "estimator": id(model),
                          "coef_checksum": float(sum(abs(float(c)) for c in model.coef_)),
                          **threads.summary()}), flush=True)
    return 0


class ThreadCounts:
    """How a native_cpu stream's threads went, batch by batch (its engine's
    own counters, cpu_diagnostics.hpp): row-split dispatches, those whose
    worker parts the caller ran (a worker without a core), and the batches
    that ended on one thread (two late dispatches stop the splitting)."""

    def __init__(self) -> None:
        self.dispatches = self.late = self.serial_batches = self.batches = 0

    def observe(self, model) -> None:
        current = getattr(model, "_current_backend", None)  # another package's estimator may lack it
        diagnostics = getattr(current(), "last_native_diagnostics", None) if current is not None else None
        if diagnostics is None or not hasattr(diagnostics, "parallel_dispatches"):
            return
        self.batches += 1
        self.dispatches += diagnostics.parallel_dispatches
        self.late += diagnostics.late_dispatches
        self.serial_batches += int(diagnostics.threads_at_end == 1 and diagnostics.parallel_dispatches > 0)

    def summary(self) -> dict:
        if not self.batches:
            return {}
        return {"threads": {"batches": self.batches, "parallel_dispatches": self.dispatches,
                            "late_dispatches": self.late, "serial_batches": self.serial_batches}}


# ---------------------------------------------------------------- the driver
class Engine:
    def __init__(self, spec: str, paths: dict, variables: dict | None = None) -> None:
        self.name, rest = spec.split("=", 1)
        self.python, self.backend = rest.rsplit(":", 1)
        self.variables = dict((variables or {}).get(self.name, {}))
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.variables)
        if self.name in paths:
            env["PYTHONPATH"] = os.pathsep.join([paths[self.name]] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        self.process = subprocess.Popen([self.python, __file__, "--worker", self.backend], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
        self.info = json.loads(self.process.stdout.readline())

    def stream(self, request: dict) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"engine {self.name} stopped")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        return worker(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", action="append", required=True, help="NAME=PYTHON:BACKEND (the first is the reference of the ratios)")
    parser.add_argument("--engine-path", action="append", default=[], help="NAME=DIR: DIR first on NAME's PYTHONPATH")
    parser.add_argument("--engine-env", action="append", default=[],
                        help="NAME=VAR=VALUE: VAR set to VALUE in NAME's worker only (the same build on another "
                             "path: RH_CUDA_SOLVER=block, say)")
    parser.add_argument("--classes", nargs="+", default=["latency", "reference", "wide", "streaming"])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--penalties", nargs="+", default=["none", "l1"])
    parser.add_argument("--inference", choices=("on", "off"), default="on")
    parser.add_argument("--lifecycle", choices=("cold", "steady"), default="cold",
                        help="cold: a new estimator inside the timer; steady: one primed estimator per case")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--settle", type=float, default=0.0,
                        help="seconds of idle before each stream whose engine differs from the last one's (0: none)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    paths = dict(item.split("=", 1) for item in args.engine_path)
    variables: dict = {}
    for item in args.engine_env:
        name, _, assignment = item.partition("=")
        variable, equals, value = assignment.partition("=")
        if not equals or not variable:
            parser.error(f"--engine-env wants NAME=VAR=VALUE, got {item!r}")
        variables.setdefault(name, {})[variable] = value
    engines = [Engine(spec, paths, variables) for spec in args.engine]
    first = engines[0]
    sys.path.insert(0, str(HERE))
    from benchmark_shape_sweep import environment

    record = {"schema": "renewable-huber-cpu-engines", "version": 2, "environment": environment(),
              "command": " ".join(sys.argv), "lifecycle": args.lifecycle, "rounds": args.rounds, "inference": args.inference,
              "settle_seconds": args.settle,
              "engines": {e.name: {"python": e.python, "backend": e.backend, **({"env": e.variables} if e.variables else {}),
                                  **e.info} for e in engines}, "cases": []}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for cls in args.classes:
        for dtype in args.dtypes:
            for penalty in args.penalties:
                request = {"class": cls, "dtype": dtype, "penalty": penalty, "inference": args.inference == "on",
                           "lifecycle": args.lifecycle}
                times = {e.name: [] for e in engines}
                threads = {}
                estimators = {e.name: set() for e in engines}  # steady: one per engine
                last = None
                for index in range(args.rounds):
                    order = engines[index % len(engines):] + engines[:index % len(engines)]
                    for engine in (order if index % 2 == 0 else order[::-1]):
                        if args.settle > 0 and engine is not last:
                            time.sleep(args.settle)
                        last = engine
                        answer = engine.stream(request)
                        times[engine.name].append(answer["seconds"])
                        estimators[engine.name].add(answer.get("estimator"))
                        if "threads" in answer:
                            threads.setdefault(engine.name, []).append(answer["threads"])
                case = {"class": cls, "dtype": dtype, "penalty": penalty, "seconds": times,
                        **({"threads": threads} if threads else {}),
                        "estimators": {n: len(ids) for n, ids in estimators.items()},
                        "median_ms": {n: 1e3 * statistics.median(t) for n, t in times.items()},
                        "ratio_to_first": {n: statistics.median(a / b for a, b in zip(t, times[first.name]))
                                           for n, t in times.items() if n != first.name}}
                record["cases"].append(case)
                out.write_text(json.dumps(record, indent=1) + "\n")
                ratios = "  ".join(f"{n}/{first.name} {r:.2f}x" for n, r in case["ratio_to_first"].items())
                print(f"{cls:10} {dtype} {penalty:4}  " +
                      "  ".join(f"{n} {m:8.2f} ms" for n, m in case["median_ms"].items()) + f"   {ratios}",
                      flush=True)
    for engine in engines:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
