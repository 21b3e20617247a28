"""Paired, interleaved benchmark of backend="native_cpu" against "numpy"
through the public estimator API (PERFORMANCE.md): per round both engines fit
the same stream (order alternating A B / B A), and the quoted number is the
median of the per-round ratios numpy_time / native_time. Lifecycle (--lifecycle):
steady (default; one model per engine primed once, each timed stream starts
with `fit`, which restarts from the empty state on the model's warm engine)
or cold (a new estimator, hence a new engine, inside the timer).

    .venv/bin/python scripts/benchmarks/benchmark_native_cpu_paired.py \
        --rounds 9 --out docs/benchmarks/native_cpu_paired.json [--classes latency reference] \
        [--rounds-large 5]   # fewer rounds for the wide and streaming classes

--settle-ms (default 300) pauses before each timed run and --prime (default 1)
/ --prime-ms (default 20) run the same engine untimed right before it (at
least that many runs and for at least that long), all outside the timer:
after an idle pause this VM's core needs milliseconds of work to reach full
speed (a 0.7 ms native latency stream measured 1.89 ms right after a 300 ms
pause, 1.16-1.27 ms after one priming run, 0.94 ms after five), which a 7 ms
NumPy stream absorbs inside its own run but a short one does not. And: an
OpenBLAS pool keeps its idle threads spinning for ~0.1 s after its last call
(2^28 cycles), so without the pause each engine is measured while the other
library's threads still spin on the second core of this 2-core machine, and
without the priming run the pause itself would leave the engine cold (docs/
native-cpu.md, "Threads"). --settle-ms 0 --prime 0 --prime-ms 0 measures the
plain interleaving; the record says which setting was used.

Each case also records the native engine's kernel path ("fast" or
"reference_order", chosen by kernel="auto" from rows * d * d) and its last
batch's solve route and Gram update counts.

Writes schema "renewable-huber-shape-sweep" version 2 records.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import time
import warnings

import numpy as np

from renewable_huber import RenewableHuberRegressor

CLASSES = {
    "latency": (4096, 16, 4096),
    "reference": (100_000, 90, 32_768),
    "wide": (16_384, 256, 4096),
    "streaming": (1_000_000, 32, 65_536),
    "latency-smoke": (2048, 8, 1024),
    "reference-smoke": (8192, 32, 4096),
}


def make_stream(samples, features, batch, dtype, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(samples, features))
    coef = rng.normal(size=features)
    y = X @ coef + rng.normal(scale=0.2, size=samples)
    if samples >= 100:
        every = max(100, samples // 100)
        y[::every] += rng.normal(scale=8.0, size=len(y[::every]))
    X, y = X.astype(dtype), y.astype(dtype)
    batches = [(X[i : i + batch], y[i : i + batch]) for i in range(0, samples, batch)]
    digest = hashlib.sha256()
    for bx, by in batches:
        for a in (bx, by):
            digest.update(a.dtype.str.encode())
            digest.update(repr(a.shape).encode())
            digest.update(np.ascontiguousarray(a).tobytes())
    return batches, digest.hexdigest()


def native_details(model):
    """Kernel path and Gram/solve counters of the native engine's last batch."""
    backend = model._current_backend() if hasattr(model, "_current_backend") else None
    diagnostics = getattr(backend, "last_native_diagnostics", None)
    if diagnostics is None:
        return {"kernel_path": getattr(backend, "last_kernel_path", "unavailable")}
    return {"kernel_path": diagnostics.kernel_path, "solve_route": diagnostics.solve_route,
            "gram_full_updates": diagnostics.gram_full_updates,
            "gram_incremental_updates": diagnostics.gram_incremental_updates,
            "gram_changed_rows": diagnostics.gram_changed_rows,
            "parallel_dispatches": diagnostics.parallel_dispatches, "late_dispatches": diagnostics.late_dispatches,
            "threads_at_end": diagnostics.threads_at_end}


def device_finish(device):
    """What ends a timed stream on `device`, inside the timer (run_stream's
    `finish`): the CUDA device synchronized, since a GPU update may return
    before its last kernels end; nothing on the CPU."""
    if device != "cuda":
        return None
    import cupy

    return cupy.cuda.Device().synchronize


def run_stream(model, batches, lifecycle="steady", make=None, finish=None, observe=None):
    """Times one whole stream through the public API.

    steady: `model` was primed; `fit` on the first batch starts the stream from
    the empty state on the model's warm engine (fit keeps an engine of the same
    backend, dtype and threads), `partial_fit` absorbs the rest.
    cold: a new estimator (and so a new engine) is built inside the timer.
    finish: called last inside the timer (a device synchronization).
    observe: called with the model after each batch, inside the timer (keep it
    to reading a few attributes).
    The stream ends with its outcome read (``coef_``), inside the timer: a
    backend with deferred results (native_cuda, amendment 0004) reads each
    batch at the next call, and its last batch there. The batches'
    diagnostics are collected as they are read, never by forcing a read.
    """
    start = time.perf_counter()
    if lifecycle == "cold":
        model = make()
    read: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for index, (bx, by) in enumerate(batches):
            if index == 0:
                model.fit(bx, by)
            else:
                model.partial_fit(bx, by)
            note_read_diagnostics(model, read)
            if observe is not None:
                observe(model)
        getattr(model, "coef_", None)  # the last batch read (a test's stand-in estimator may have none)
        note_read_diagnostics(model, read)
        if finish is not None:
            finish()
    seconds = time.perf_counter() - start
    converged = all(bool(d.converged) for d in read.values())
    iterations = sum(int(d.iterations) for d in read.values())
    return seconds, converged, iterations, model


def note_read_diagnostics(model, read: dict) -> None:
    """The diagnostics of the model's last batch read so far, by batch
    number, into ``read``: without reading a batch left pending. (An
    estimator of another package, which has no stream, is read at once.)"""
    stream = model.__dict__.get("_stream", False)
    if stream is False:
        read[len(read) + 1] = model.diagnostics_
        return
    if stream is not None and stream.diagnostics is not None:
        read[int(stream.state.batch_count)] = stream.diagnostics


def fresh(backend, dtype, penalty, n_jobs):
    return RenewableHuberRegressor(backend=backend, device="cpu", dtype=dtype, penalty=penalty, n_jobs=n_jobs)


def environment():
    import _renewable_huber_native_cpu as native
    from threadpoolctl import threadpool_info

    def git_revision():
        try:
            return subprocess.check_output(["git", "rev-parse", "HEAD"], text=True).strip()
        except Exception:
            return "unavailable"

    cpu = "unavailable"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except Exception:
        pass
    return {
        "git_revision": git_revision(),
        "python": platform.python_version(),
        "os": platform.platform(),
        "cpu_model": cpu,
        "cores": os.cpu_count(),
        "numpy": np.__version__,
        "numpy_blas": [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads", "filepath")}
                       for i in threadpool_info()],
        "thread_env": {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS") or k.startswith("OPENBLAS")},
        "native_cpu": {"version": native.__version__, "abi": native.ABI_VERSION, "blas_provider": native.blas_provider(),
                       "blas_config": native.blas_config(), "blas_threads": native.blas_threads(),
                       "isa_level": native.isa_level()},
        "native_cuda": "unavailable", "cupy": "unavailable", "cuda_runtime": "unavailable", "gpu": "unavailable",
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--classes", nargs="+", default=["latency", "reference", "wide", "streaming"])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--penalties", nargs="+", default=["none", "l1"])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--rounds-large", type=int, default=None,
                        help="rounds for the wide and streaming classes (default: --rounds)")
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--settle-ms", type=float, default=300.0,
                        help="pause before each timed run (outside the timer) so idle BLAS threads stop spinning")
    parser.add_argument("--prime", type=int, default=1,
                        help="untimed runs of the same engine right before each timed run")
    parser.add_argument("--prime-ms", type=float, default=20.0,
                        help="keep priming (untimed runs of the same engine) until this many ms have passed, so a "
                             "short stream starts on a core as warm as a long one does")
    parser.add_argument("--lifecycle", choices=["steady", "cold"], default="steady",
                        help="steady: one primed model per engine, each stream starts with fit (warm engine, "
                             "empty state); cold: a new estimator inside the timer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    cases = []
    for name in args.classes:
        samples, features, batch = CLASSES[name]
        for dtype in args.dtypes:
            batches, sha = make_stream(samples, features, batch, dtype, args.seed)
            for penalty in args.penalties:
                models = {b: fresh(b, dtype, penalty, args.n_jobs) for b in ("numpy", "native_cpu")}
                makers = {b: (lambda b=b: fresh(b, dtype, penalty, args.n_jobs)) for b in models}
                timings = {b: [] for b in models}
                info = {}
                for b, model in models.items():  # warm-up and priming (outside the timings)
                    for _ in range(max(1, args.warmups)):
                        run_stream(model, batches)
                rounds = args.rounds
                if args.rounds_large is not None and name in ("wide", "streaming"):
                    rounds = args.rounds_large
                details = {}
                round_threads = []  # threads the native engine's last batch ended on, per round
                for r in range(rounds):
                    order = ("numpy", "native_cpu") if r % 2 == 0 else ("native_cpu", "numpy")
                    for b in order:
                        if args.settle_ms > 0:
                            time.sleep(args.settle_ms / 1e3)
                        primed, start = 0, time.perf_counter()
                        while primed < args.prime or (time.perf_counter() - start) * 1e3 < args.prime_ms:
                            run_stream(models[b], batches)
                            primed += 1
                        seconds, converged, iterations, model = run_stream(models[b], batches, args.lifecycle,
                                                                           makers[b])
                        timings[b].append(seconds)
                        info[b] = (converged, iterations)
                        if b == "native_cpu":
                            details = native_details(model)
                            round_threads.append(details.get("threads_at_end"))
                ratios = [a / b for a, b in zip(timings["numpy"], timings["native_cpu"])]
                case = {"class": name, "shape": [samples, features], "batch": batch, "dataset_seed": args.seed,
                        "dataset_sha256": sha, "dtype": dtype, "penalty": penalty, "lifecycle": args.lifecycle,
                        "operation": "fit first batch + partial_fit stream", "median_ratio_numpy_over_native": float(np.median(ratios)),
                        "ratios": ratios, "rounds": rounds, "native_cpu_last_batch": details,
                        "native_cpu_threads_at_end_per_round": round_threads, "engines": {}}
                for b in models:
                    t = np.array(timings[b])
                    case["engines"][b] = {"timings_s": t.tolist(), "median_s": float(np.median(t)),
                                          "min_s": float(t.min()), "max_s": float(t.max()),
                                          "throughput_rows_per_s": samples / float(np.median(t)),
                                          "iterations": info[b][1], "all_batches_converged": info[b][0]}
                cases.append(case)
                print(f"{name:10s} {dtype} {penalty:4s} numpy {np.median(timings['numpy'])*1e3:9.2f} ms  "
                      f"native {np.median(timings['native_cpu'])*1e3:9.2f} ms  ratio {np.median(ratios):6.2f}x  "
                      f"[{details.get('kernel_path')}]", flush=True)
    record = {"schema": "renewable-huber-shape-sweep", "schema_version": 2, "environment": environment(),
              "arguments": {"warmups": args.warmups, "repeats": args.rounds, "repeats_large": args.rounds_large,
                            "max_iter": 100, "tol": 1e-6,
                            "seed": args.seed, "lifecycles": [args.lifecycle], "operations": ["fit first batch + partial_fit stream"],
                            "pairing": "interleaved, alternating order", "n_jobs": args.n_jobs,
                            "settle_ms": args.settle_ms, "prime_runs": args.prime, "prime_ms": args.prime_ms},
              "cases": cases}
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
