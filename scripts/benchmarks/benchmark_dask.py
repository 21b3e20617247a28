#!/usr/bin/env python3
"""Scaling of the Dask parallel-batch mode (issue 17): one batch of the
streaming class grown to `--rows` x `--features`, its sums spread over 1, 2,
4, ... process workers of a LocalCluster (one thread each, native_cpu on the
workers), against the single-process update of the same batch with native_cpu
on one thread and on every core.

The data are generated on the workers (a seeded block per partition) and
persisted before timing, and one untimed fit of a small batch warms the
workers (imports, engines) per cluster: the timed call is `renewable_huber.dask.fit_batch`
on a batch already held by the cluster, as after a Dask ETL step. Its wall
time includes validating each partition and forming its design Z
(`seconds_preparing`) and the solve's rounds over the workers
(`seconds_solving`). The local baselines take the concatenated arrays from
this process's memory.

  python scripts/benchmarks/benchmark_dask.py --workers 1 2 --out docs/benchmarks/dask_scaling_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def block(seed: int, index: int, rows: int, features: int):
    """The streaming class's rows: Gaussian features, t(3) noise, every twentieth row an outlier (+25)."""
    coefficients = np.random.default_rng(seed).normal(size=features)
    rng = np.random.default_rng([seed, index])
    X = rng.normal(size=(rows, features))
    y = X @ coefficients + 0.5 + rng.standard_t(3, size=rows)
    y[::20] += 25.0
    return X, y


def partition_rows(rows: int, partitions: int) -> list[int]:
    base, extra = divmod(rows, partitions)
    return [base + (i < extra) for i in range(partitions)]


def dask_batch(rows, features, partitions, seed):
    import dask
    import dask.array as da

    X_blocks, y_blocks = [], []
    for index, size in enumerate(partition_rows(rows, partitions)):
        made = dask.delayed(block, nout=2, pure=True)(seed, index, size, features)
        X_blocks.append(da.from_delayed(made[0], shape=(size, features), dtype=np.float64))
        y_blocks.append(da.from_delayed(made[1], shape=(size,), dtype=np.float64))
    return da.concatenate(X_blocks), da.concatenate(y_blocks)


def timed(function, repeats):
    seconds, result = [], None
    for _ in range(repeats):
        result = None  # the previous run's model (and its engine's workspaces) is freed first
        started = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - started)
    return seconds, result


def summary(seconds):
    return {"seconds": seconds, "median": statistics.median(seconds), "min": min(seconds), "max": max(seconds)}


def relative_difference(a, b):
    return float(np.max(np.abs(a - b) / (1.0 + np.abs(b))))


def environment():
    """The shape sweep's environment record (every probe, "unavailable" where
    missing), with Dask's versions."""
    import dask
    import distributed

    from benchmark_shape_sweep import environment as sweep_environment

    return {**sweep_environment(), "dask": dask.__version__, "distributed": distributed.__version__}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--features", type=int, default=32)
    parser.add_argument("--partitions", type=int, default=32)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--penalties", nargs="+", default=["none", "l1"], choices=["none", "l1"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import distributed

    from renewable_huber import RenewableHuberRegressor
    from renewable_huber import dask as rh_dask

    record = {"schema": "renewable-huber-dask-scaling", "version": 1, "environment": environment(),
              "arguments": vars(args), "local": [], "dask": []}
    cores = len(os.sched_getaffinity(0))
    print(f"{cores} cores; {args.rows} x {args.features} in {args.partitions} partitions", flush=True)

    # 1. The local update of the concatenated batch (this process's memory).
    blocks = [block(args.seed, i, size, args.features) for i, size in
              enumerate(partition_rows(args.rows, args.partitions))]
    X = np.concatenate([b[0] for b in blocks])
    y = np.concatenate([b[1] for b in blocks])
    del blocks
    local_fits = {}
    for penalty in args.penalties:
        for n_jobs in sorted({1, cores}):
            seconds, model = timed(lambda: RenewableHuberRegressor(backend="native_cpu", penalty=penalty,
                                                                   n_jobs=n_jobs).fit(X, y), args.repeats)
            print(f"local native_cpu {penalty} n_jobs={n_jobs}: {statistics.median(seconds):.3f} s", flush=True)
            # the state only: a fitted native model keeps its engine's batch-sized workspaces
            local_fits[penalty, n_jobs] = (model.state_.coefficients.copy(), model.state_.information.copy())
            iterations = model.n_iter_
            del model
            record["local"].append({"engine": "native_cpu", "penalty": penalty, "n_jobs": n_jobs,
                                    "iterations": iterations, **summary(seconds)})
            write(args.out, record)
    del X, y

    # 2. The same batch on 1, 2, 4, ... workers.
    for workers in args.workers:
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           memory_limit=0, dashboard_address=None)
        with distributed.Client(cluster) as client:
            # warm-up, untimed: every worker imports the package and creates its
            # engines on a small batch spread over all of them
            small = dask_batch(4_000 * workers, args.features, workers, args.seed + 1)
            rh_dask.fit_batch(RenewableHuberRegressor(backend="numpy"), *small, client=client, engine="native_cpu",
                              n_jobs=1)
            dX, dy = dask_batch(args.rows, args.features, args.partitions, args.seed)
            started = time.perf_counter()
            dX, dy = client.persist([dX, dy])
            distributed.wait([dX, dy])
            generated = time.perf_counter() - started
            for penalty in args.penalties:
                runs = []

                def fit():
                    report = rh_dask.BatchReport()
                    model = RenewableHuberRegressor(backend="numpy", penalty=penalty)
                    rh_dask.fit_batch(model, dX, dy, client=client, engine="native_cpu", n_jobs=1, report=report)
                    runs.append(report)
                    return model

                seconds, model = timed(fit, args.repeats)
                local_coefficients, local_information = local_fits[penalty, 1]
                entry = {"workers": workers, "penalty": penalty, "generate_and_persist_seconds": generated,
                         "iterations": model.n_iter_, "rounds": runs[-1].rounds, "partitions": runs[-1].partitions,
                         "engines": list(runs[-1].engines),
                         "seconds_preparing": [r.seconds_preparing for r in runs],
                         "seconds_solving": [r.seconds_solving for r in runs],
                         "coefficients_vs_local": relative_difference(model.state_.coefficients, local_coefficients),
                         "information_vs_local": relative_difference(model.state_.information, local_information),
                         **summary(seconds)}
                record["dask"].append(entry)
                write(args.out, record)  # what a run stopped midway measured is kept
                print(f"dask {workers} worker(s) {penalty}: {entry['median']:.3f} s ({entry['rounds']} rounds; "
                      f"coefficients vs local {entry['coefficients_vs_local']:.1e})", flush=True)
        cluster.close()

    write(args.out, record)
    print(table(record))
    return 0


def with_ratios(record: dict) -> dict:
    """Each Dask entry's speed-ups: vs the fewest workers measured, vs the local engine."""
    cores = record["environment"]["affinity"]
    local_median = {(e["penalty"], e["n_jobs"]): e["median"] for e in record["local"]}
    fewest = min((e["workers"] for e in record["dask"]), default=None)
    one_worker = {e["penalty"]: e["median"] for e in record["dask"] if e["workers"] == fewest}
    for entry in record["dask"]:
        entry["speedup_vs_fewest_workers"] = one_worker[entry["penalty"]] / entry["median"]
        entry["speedup_vs_local_native_cpu_1_thread"] = local_median[entry["penalty"], 1] / entry["median"]
        entry["speedup_vs_local_native_cpu_all_cores"] = local_median[entry["penalty"], cores] / entry["median"]
    return record


def write(path: str, record: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    partial = path + ".partial"
    with open(partial, "w") as handle:
        json.dump(with_ratios(record), handle, indent=1)
    os.replace(partial, path)


def table(record) -> str:
    """The markdown table of a record (docs/dask.md)."""
    cores = record["environment"]["affinity"]
    lines = ["| penalty | workers | fit_batch s (median) | preparing s | rounds | vs fewest workers | "
             f"vs local native_cpu 1 thread | vs local native_cpu {cores} threads |",
             "|---|---|---|---|---|---|---|---|"]
    for e in record["dask"]:
        lines.append(f"| {e['penalty']} | {e['workers']} | {e['median']:.2f} | "
                     f"{statistics.median(e['seconds_preparing']):.2f} | {e['rounds']} | "
                     f"{e['speedup_vs_fewest_workers']:.2f}x | {e['speedup_vs_local_native_cpu_1_thread']:.2f}x | "
                     f"{e['speedup_vs_local_native_cpu_all_cores']:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print(table(json.load(open(sys.argv[2]))))
        raise SystemExit(0)
    raise SystemExit(main())
