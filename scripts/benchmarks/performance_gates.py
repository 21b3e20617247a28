#!/usr/bin/env python3
"""The performance policy's three tools (docs/native-performance-policy.md,
PERFORMANCE.md "Gates"), over benchmark records whose cases carry
``class``, ``dtype``, ``penalty`` and ``engines: {name: {timings_s: [...]}}``
(the shape-sweep schema of benchmark_native_cpu_paired.py and the CUDA
benchmark's).

    performance_gates.py regression --baseline OLD.json --candidate NEW.json
    performance_gates.py competitor --record R.json [--require]
    performance_gates.py advise --record R.json --class latency --dtype float64 --penalty l1 --device cuda

regression: a candidate engine may not be more than 10% (CPU) / 15% (GPU)
slower than the baseline on the same hardware fingerprint, both measured
with >= 9 repeats and relative MAD <= 5% (CPU) / 10% (GPU), every batch
converged; a pair that fails the preconditions is reported as not
comparable (a gate cannot pass on bad measurements). Exit 1 on any
regression or non-comparable pair.

competitor: per shape, a native engine is promoted only if its median is at
most its paired reference's (NumPy for native_cpu; the cupy backend fed
device batches for native_cuda, both device-fed and host-fed, as the GPU
targets name them). --require: exit 1 unless every shape is.

advise: for one workload, the backend to use from a record: the reference
unless a native engine is at least 10% faster (median).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Iterable, Optional

#: (native engine, its paired reference) as the records name them: the
#: shape sweep's names (benchmark_shape_sweep.py) and the first CUDA benchmark's
PAIRS = (("native_cpu", "numpy"), ("native_cuda_device_input", "cupy_device_input"),
         ("native_cuda_host_input", "cupy_host_input"), ("native_cuda_device", "cupy"), ("native_cuda", "cupy"))
GPU_ENGINES = frozenset({"native_cuda", "native_cuda_device", "native_cuda_device_graphs", "cupy", "torch_cuda",
                         "native_cuda_host_input", "native_cuda_device_input", "cupy_host_input", "cupy_device_input",
                         "torch_cuda_device_input"})
MIN_REPEATS = 9
ADVISOR_MARGIN = 0.10


def is_gpu(engine: str) -> bool:
    return engine in GPU_ENGINES


def slowdown_margin(engine: str) -> float:
    return 0.15 if is_gpu(engine) else 0.10


def mad_limit(engine: str) -> float:
    return 0.10 if is_gpu(engine) else 0.05


def relative_mad(timings: list[float]) -> float:
    median = statistics.median(timings)
    return statistics.median(abs(t - median) for t in timings) / median


def fingerprint(record: dict) -> tuple:
    """What must match for two records to be compared: the CPU, its core count, the GPU."""
    env = record.get("environment", {})
    gpu = env.get("gpu") or {}
    return (env.get("cpu_model") or env.get("machine"), env.get("cores") or env.get("cpu_count"),
            gpu.get("name") if isinstance(gpu, dict) else gpu)


def cases(record: dict) -> dict[tuple, dict]:
    """Cases by (class, dtype, penalty, lifecycle); a record without lifecycles is steady."""
    return {(c["class"], c["dtype"], c["penalty"], c.get("lifecycle", "steady")): c for c in record["cases"]}


def label(key: tuple) -> str:
    """class/dtype/penalty, and /cold for the cold lifecycle."""
    return "/".join(key[:3]) + ("" if key[3] == "steady" else f"/{key[3]}")


def converged(case: dict, engine: str) -> bool:
    """False only where the record says a batch did not converge."""
    last = case.get(f"{engine}_last_batch") or (case.get("native_cuda_last_batch") if engine.startswith("native_cuda")
                                                 else None)
    flags = [case["engines"][engine].get("all_batches_converged")]
    if isinstance(last, dict):
        flags.append(last.get("converged"))
    return all(flag is not False for flag in flags)


def regression(baseline: dict, candidate: dict) -> list[str]:
    """Problems found (empty: the gate passes)."""
    if fingerprint(baseline) != fingerprint(candidate):
        return [f"different hardware: baseline {fingerprint(baseline)}, candidate {fingerprint(candidate)}"]
    problems, old, new = [], cases(baseline), cases(candidate)
    for key in sorted(set(old) & set(new)):
        for engine in sorted(set(old[key]["engines"]) & set(new[key]["engines"])):
            where = f"{label(key)} {engine}"
            before, after = old[key]["engines"][engine]["timings_s"], new[key]["engines"][engine]["timings_s"]
            if min(len(before), len(after)) < MIN_REPEATS:
                problems.append(f"{where}: not comparable: {min(len(before), len(after))} repeats < {MIN_REPEATS}")
                continue
            noisy = [name for name, t in (("baseline", before), ("candidate", after))
                     if relative_mad(t) > mad_limit(engine)]
            if noisy:
                problems.append(f"{where}: not comparable: relative MAD over {mad_limit(engine):.0%} in "
                                + " and ".join(noisy))
                continue
            if not converged(new[key], engine):
                problems.append(f"{where}: a batch did not converge")
                continue
            ratio = statistics.median(after) / statistics.median(before)
            if ratio > 1.0 + slowdown_margin(engine):
                problems.append(f"{where}: {ratio - 1.0:.1%} slower (limit {slowdown_margin(engine):.0%})")
    return problems


def competitor(record: dict) -> list[tuple[str, str, str, bool, float]]:
    """(shape, native, reference, promoted, reference median / native median) per shape and pair."""
    out = []
    for key, case in sorted(cases(record).items()):
        for native, reference in PAIRS:
            engines = case["engines"]
            if native in engines and reference in engines:
                ratio = statistics.median(engines[reference]["timings_s"]) / statistics.median(
                    engines[native]["timings_s"])
                out.append((label(key), native, reference, ratio >= 1.0, ratio))
    return out


def advise(record: dict, workload: tuple, device: str) -> tuple[str, str]:
    """(backend, why) for one workload (class, dtype, penalty[, lifecycle: steady
    by default]) on 'cpu' or 'cuda'."""
    workload = tuple(workload) + (("steady",) if len(workload) == 3 else ())
    case = cases(record).get(workload)
    if case is None:
        raise KeyError(f"the record has no case {label(workload)}")
    engines = case["engines"]
    pairs = [(n, r) for n, r in PAIRS if (device == "cuda") == is_gpu(n) and r in engines and n in engines]
    if not pairs:
        raise KeyError(f"the record has no native/reference pair for {device} on {label(workload)}")
    native, reference = pairs[0]
    ratio = statistics.median(engines[reference]["timings_s"]) / statistics.median(engines[native]["timings_s"])
    backend = native.split("_host_input")[0].split("_device")[0] if ratio >= 1.0 + ADVISOR_MARGIN else reference
    return backend, (f"{native} is {ratio:.2f}x {reference} on {label(workload)} "
                     f"({'at least' if backend != reference else 'under'} the {ADVISOR_MARGIN:.0%} margin)")


def main(argv: Optional[Iterable[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    gate = commands.add_parser("regression")
    gate.add_argument("--baseline", required=True, type=Path)
    gate.add_argument("--candidate", required=True, type=Path)
    versus = commands.add_parser("competitor")
    versus.add_argument("--record", required=True, type=Path)
    versus.add_argument("--require", action="store_true")
    advisor = commands.add_parser("advise")
    advisor.add_argument("--record", required=True, type=Path)
    advisor.add_argument("--class", dest="shape_class", required=True)
    advisor.add_argument("--dtype", required=True)
    advisor.add_argument("--penalty", required=True)
    advisor.add_argument("--device", choices=("cpu", "cuda"), required=True)
    advisor.add_argument("--lifecycle", choices=("steady", "cold"), default="steady")
    args = parser.parse_args(None if argv is None else list(argv))
    load = lambda path: json.loads(Path(path).read_text())  # noqa: E731
    if args.command == "regression":
        problems = regression(load(args.baseline), load(args.candidate))
        for problem in problems:
            print(problem)
        print("regression gate:", "FAILED" if problems else "passed")
        return 1 if problems else 0
    if args.command == "competitor":
        rows = competitor(load(args.record))
        for shape, native, reference, promoted, ratio in rows:
            print(f"{shape:34s} {native:24s} vs {reference:17s} {ratio:7.2f}x  {'promoted' if promoted else 'not promoted'}")
        return 1 if args.require and not all(row[3] for row in rows) else 0
    backend, why = advise(load(args.record), (args.shape_class, args.dtype, args.penalty, args.lifecycle),
                          args.device)
    print(f"{backend}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
