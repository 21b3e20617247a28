"""Bit-identity check of a native engine between two builds (the C++ CPU
engine, or with --engine native_cuda the CUDA engine).

A refactoring of the engine (or a change meant to be numerically neutral)
must leave every result bit for bit as it was. This script streams a fixed
set of problems through the installed `_renewable_huber_native_cpu` module
and records, per update, a SHA-256 of the next state's bytes (coefficients,
information, counters) and the diagnostics that do not depend on timing
(iterations, converged, objective as a hex float, lambda, bandwidth, solve
counts, Gram update counts). Dump with one build, dump with the other,
compare:

    base/.venv/bin/python scripts/native_bit_identity.py dump --out /tmp/before.json
    .venv/bin/python scripts/native_bit_identity.py dump --out /tmp/after.json
    .venv/bin/python scripts/native_bit_identity.py compare /tmp/before.json /tmp/after.json

With --engine native_cuda (on a GPU machine; gpu_check.sh's `bits` section
dumps with the engine of RH_BASELINE_REVISION and with this tree's) each
problem runs through the CUDA backend once per solver path it may take
(RH_CUDA_SOLVER: "pipeline" for every problem, "auto", and "block" where
the block solver serves d), and the record is the same: a SHA-256 of the
state's bytes after each update and the diagnostics above that the CUDA
engine reports.

The problems: both golden corpora (project and external) and the randomized
differential scenarios of tests/backends/test_native_cpu.py, each with
kernel "auto", "reference_order" and "fast"; the demo's stream; and the
first batches of the four benchmark shape classes on the fast path; each
with 1, 2 and 3 threads (3 parts on a 2-core machine: more parts than
cores), both dtypes and both penalties. The thread-timing counters
(parallel and late dispatches, threads at end) are not compared: they
depend on scheduling, never the result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {
    "project": ROOT / "tests" / "golden" / "native_core_v1.json",
    # (on the GPU machine gpu_check.sh names the carried copy)
    "external": Path(os.environ.get("RH_EXTERNAL_CORPUS", ROOT.parent / "shared" / "golden" / "contract_corpus_v1.json")),
}
THREADS = (1, 2, 3)
BLOCK_SOLVER_WIDEST = 64  # native/cuda/src/block_solver.cuh: the widest d the block solver serves
COMPARED_DIAGNOSTICS = (
    "iterations",
    "converged",
    "objective",
    "lambda_value",
    "bandwidth",
    "solve_route",
    "cholesky_solves",
    "lu_solves",
    "least_squares_solves",
    "kernel_path",
    "gram_full_updates",
    "gram_incremental_updates",
    "gram_changed_rows",
)


def _native():
    import _renewable_huber_native_cpu as native

    return native


def _value(x):
    if isinstance(x, float):
        return float.hex(x)
    if isinstance(x, (bool, int, str)):
        return x
    return str(x)


class Streamer:
    """Runs batches through one engine; every update's record goes to `records`."""

    def __init__(self, native, dtype, threads, kernel, config):
        self.native = native
        self.dtype = np.dtype(dtype)
        engine_type = native.EngineFloat64 if self.dtype == np.float64 else native.EngineFloat32
        self.engine = engine_type(threads, kernel)
        self.config = native.SolverConfig(**config)
        self.fit_intercept = config["fit_intercept"]

    def stream(self, batches):
        native, dtype = self.native, self.dtype
        records = []
        p = np.asarray(batches[0][0]).shape[1]
        d = p + int(self.fit_intercept)
        coefficients = np.zeros(d, dtype=dtype)
        information = np.zeros((d, d), dtype=dtype)
        counters = native.StateCounters(p, self.fit_intercept, 0, 0, 0.0, 0.0)
        for X, y, w in batches:
            X = np.ascontiguousarray(X, dtype=dtype)
            y = np.ascontiguousarray(y, dtype=dtype)
            w = None if w is None else np.ascontiguousarray(w, dtype=dtype)
            next_coefficients = np.empty(d, dtype=dtype)
            next_information = np.empty((d, d), dtype=dtype)
            diagnostics, counters = self.engine.update(
                coefficients, information, counters, X, y, w, self.config, next_coefficients, next_information
            )
            coefficients, information = next_coefficients, next_information
            digest = hashlib.sha256()
            digest.update(coefficients.tobytes())
            digest.update(information.tobytes())
            for field in ("n_samples_seen", "batch_count", "previous_lambda", "weight_sum"):
                digest.update(repr(_value(getattr(counters, field))).encode())
            record = {"state": digest.hexdigest()}
            for field in COMPARED_DIAGNOSTICS:
                record[field] = _value(getattr(diagnostics, field))
            records.append(record)
        return records


def _cuda_backend_module():
    """The CUDA backend of the renewable_huber on the path (a baseline's
    tree and engine come first on PYTHONPATH), else of this tree's src."""
    try:
        import renewable_huber  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "src"))
    from renewable_huber.backends import native_cuda_backend

    return native_cuda_backend


class CudaStreamer:
    """Runs batches through the CUDA backend on one solver path; every
    update's record as Streamer's."""

    def __init__(self, dtype, solver, config):
        native_cuda_backend = _cuda_backend_module()
        from renewable_huber.config import SolverConfig

        saved = os.environ.get("RH_CUDA_SOLVER")
        os.environ["RH_CUDA_SOLVER"] = solver  # read when the backend is made
        try:
            self.backend = native_cuda_backend.NativeCudaBackend(dtype)
        finally:
            if saved is None:
                os.environ.pop("RH_CUDA_SOLVER", None)
            else:
                os.environ["RH_CUDA_SOLVER"] = saved
        self.dtype = np.dtype(dtype)
        self.config = SolverConfig(**config)

    def stream(self, batches):
        dtype, backend = self.dtype, self.backend
        records = []
        p = np.asarray(batches[0][0]).shape[1]
        state = backend.empty_state(p, self.config.fit_intercept, dtype.name, meat=False)
        for X, y, w in batches:
            X = np.ascontiguousarray(X, dtype=dtype)
            y = np.ascontiguousarray(y, dtype=dtype)
            w = None if w is None else np.ascontiguousarray(w, dtype=dtype)
            state, diagnostics = backend.update(state, X, y, w, self.config)
            backend.settle()
            host = backend.to_host_state(state)
            digest = hashlib.sha256()
            digest.update(np.ascontiguousarray(host.coefficients, dtype=dtype).tobytes())
            digest.update(np.ascontiguousarray(host.information, dtype=dtype).tobytes())
            for field in ("n_samples_seen", "batch_count", "previous_lambda", "weight_sum"):
                digest.update(repr(_value(getattr(host, field))).encode())
            record = {"state": digest.hexdigest()}
            for field in COMPARED_DIAGNOSTICS:
                if hasattr(diagnostics, field):
                    record[field] = _value(getattr(diagnostics, field))
            records.append(record)
        return records


def cuda_solvers(batches, config):
    """The solver paths a CUDA problem runs on: the pipeline, auto, and the
    block solver where it serves the problem's parameter count."""
    d = np.asarray(batches[0][0]).shape[1] + int(config["fit_intercept"])
    return ("pipeline", "auto", "block") if d <= BLOCK_SOLVER_WIDEST else ("pipeline", "auto")


def corpus_problems():
    for corpus, path in CORPORA.items():
        if not path.exists():
            continue
        for case in json.loads(path.read_text())["cases"]:
            config = {k: case["config"][k] for k in (
                "tau", "penalty", "lambda_scale", "bandwidth_scale", "fit_intercept", "max_iter", "tol", "ridge")}
            batches = [
                (np.asarray(b["X"]), np.asarray(b["y"]), None if b.get("sample_weight") is None
                 else np.asarray(b["sample_weight"]))
                for b in case["batches"]
            ]
            yield f"{corpus}/{case['id']}", case["config"]["dtype"], config, batches


def differential_problems():
    """tests/backends/test_native_cpu.py's scenarios, regenerated the same way."""
    scenarios = {
        "plain": dict(),
        "weights_with_zeros": dict(weights=True),
        "no_intercept": dict(fit_intercept=False),
        "many_batches": dict(batches=8, n=40),
        "rank_deficient": dict(rank_deficient=True, tau=100.0, ridge=0.0),
    }
    for scenario, options in scenarios.items():
        for penalty in ("none", "l1"):
            for dtype in ("float64", "float32"):
                for seed in (0, 1, 2):
                    options_ = dict(options)
                    batches_count, n, p = options_.pop("batches", 3), options_.pop("n", 120), 4
                    fit_intercept = options_.pop("fit_intercept", True)
                    weights = options_.pop("weights", False)
                    rank_deficient = options_.pop("rank_deficient", False)
                    config = dict(tau=1.345, penalty=penalty, lambda_scale=1.0, bandwidth_scale=1.0,
                                  fit_intercept=fit_intercept, max_iter=200,
                                  tol=1e-10 if dtype == "float64" else 1e-5, ridge=1e-8)
                    config.update(options_)
                    rng = np.random.default_rng(1000 * seed + len(scenario))
                    coef = rng.normal(size=p)
                    batches = []
                    for _ in range(batches_count):
                        X = rng.normal(size=(n, p))
                        if rank_deficient:
                            X[:, -1] = X[:, 0]
                        y = X @ coef + 0.3 + rng.normal(scale=0.3, size=n)
                        k = max(1, n // 20)
                        y[rng.choice(n, size=k, replace=False)] += rng.normal(scale=10, size=k)
                        w = None
                        if weights:
                            w = rng.uniform(0.2, 2.0, size=n)
                            w[rng.choice(n, size=n // 5, replace=False)] = 0.0
                        batches.append((X, y, w))
                    yield f"differential/{scenario}/{penalty}/{dtype}/{seed}", dtype, config, batches


def demo_problems():
    sys.path.insert(0, str(ROOT / "src"))
    from renewable_huber.demo import DemoSettings, synthetic_stream

    settings = DemoSettings()
    X, y, _, _ = synthetic_stream(settings)
    batches = [(X[i : i + settings.batch_size], y[i : i + settings.batch_size], None)
               for i in range(0, settings.n_samples, settings.batch_size)]
    for penalty in ("none", "l1"):
        for dtype in ("float64", "float32"):
            config = dict(tau=1.345, penalty=penalty, lambda_scale=1.0, bandwidth_scale=1.0, fit_intercept=True,
                          max_iter=100, tol=1e-6, ridge=1e-8)
            yield f"demo/{penalty}/{dtype}", dtype, config, batches


def class_problems(max_batches):
    sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))
    from benchmark_native_cpu_paired import CLASSES, make_stream

    for name in ("latency", "reference", "wide", "streaming"):
        samples, features, batch = CLASSES[name]
        samples = min(samples, batch * max_batches)
        for dtype in ("float64", "float32"):
            batches, _ = make_stream(samples, features, batch, dtype, 0)
            for penalty in ("none", "l1"):
                config = dict(tau=1.345, penalty=penalty, lambda_scale=1.0, bandwidth_scale=1.0,
                              fit_intercept=True, max_iter=100, tol=1e-6, ridge=1e-8)
                yield f"class/{name}/{penalty}/{dtype}", dtype, config, [(X, y, None) for X, y in batches]


def dump_cuda(args):
    native_cuda_backend = _cuda_backend_module()
    results, system_sizes = {}, {}
    problems = [*corpus_problems(), *differential_problems(), *demo_problems(), *class_problems(args.class_batches)]
    for index, (name, dtype, config, batches) in enumerate(problems):
        for solver in cuda_solvers(batches, config):
            key = f"{name}|{solver}"
            results[key] = CudaStreamer(dtype, solver, config).stream(batches)
            system_sizes[key] = np.asarray(batches[0][0]).shape[1] + int(config["fit_intercept"])
        print(f"\r{index + 1}/{len(problems)} problems", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    version = native_cuda_backend.runtime_info()
    Path(args.out).write_text(json.dumps({"module_version": repr(version), "results": results, "d": system_sizes},
                                         indent=0))
    print(f"{len(results)} streams, {sum(len(v) for v in results.values())} updates -> {args.out}")


def dump(args):
    if args.engine == "native_cuda":
        return dump_cuda(args)
    native = _native()
    results = {}
    problems = []
    for name, dtype, config, batches in corpus_problems():
        problems.append((name, dtype, config, batches, ("auto", "reference_order", "fast")))
    for name, dtype, config, batches in differential_problems():
        problems.append((name, dtype, config, batches, ("auto", "reference_order", "fast")))
    for name, dtype, config, batches in demo_problems():
        problems.append((name, dtype, config, batches, ("auto",)))
    for name, dtype, config, batches in class_problems(args.class_batches):
        problems.append((name, dtype, config, batches, ("fast",)))
    for index, (name, dtype, config, batches, kernels) in enumerate(problems):
        for kernel in kernels:
            for threads in THREADS:
                key = f"{name}|{kernel}|threads={threads}"
                results[key] = Streamer(native, dtype, threads, kernel, config).stream(batches)
        print(f"\r{index + 1}/{len(problems)} problems", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    Path(args.out).write_text(json.dumps({"module_version": native.__version__, "results": results}, indent=0))
    print(f"{len(results)} streams, {sum(len(v) for v in results.values())} updates -> {args.out}")


def _d_range(text):
    low, high = (int(part) for part in text.split(":"))
    return low, high


def compare(args):
    """0 when every stream's records are equal; streams whose system size d
    lies in --allow-changed-d LO:HI (a change meant to move exactly those:
    another factorization for some d) may differ and are counted apart."""
    before = json.loads(Path(args.before).read_text())
    a, b = before["results"], json.loads(Path(args.after).read_text())["results"]
    sizes = before.get("d", {})
    allowed = getattr(args, "allow_changed_d", None)
    if allowed is not None and not sizes:
        raise SystemExit("--allow-changed-d needs dumps that record each stream's d")
    ignored = set(args.ignore or ())
    missing = sorted(set(a) ^ set(b))
    differing = []
    fields_seen = {}
    for key in sorted(set(a) & set(b)):
        if len(a[key]) != len(b[key]):
            differing.append((key, "count", ["updates"]))
            continue
        for index, (x, y) in enumerate(zip(a[key], b[key])):
            fields = sorted(f for f in x.keys() | y.keys() if x.get(f) != y.get(f) and f not in ignored)
            if fields:
                differing.append((key, index, fields))
                for f in fields:
                    fields_seen[f] = fields_seen.get(f, 0) + 1
                break
    for key in missing:
        print(f"only in one dump: {key}")
    expected = []
    if allowed is not None:
        low, high = allowed
        in_range = {key for key in a if low <= sizes.get(key, -1) <= high}
        expected = [entry for entry in differing if entry[0] in in_range]
        differing = [entry for entry in differing if entry[0] not in in_range]
        print(f"d in [{low}, {high}]: {len(in_range)} streams, {len(expected)} differ (allowed)")
    for key, first, fields in differing:
        print(f"differs: {key} (d = {sizes.get(key, '?')}; first at update {first}: {', '.join(fields)})")
    updates = sum(len(v) for v in a.values())
    print(f"{len(a)} streams, {updates} updates compared: {len(differing)} differ, {len(missing)} unmatched"
          + (f" (ignoring {', '.join(sorted(ignored))})" if ignored else "")
          + (f" (outside d in [{allowed[0]}, {allowed[1]}])" if allowed is not None else ""))
    if fields_seen:
        print("first differing fields: " + ", ".join(f"{f} x{n}" for f, n in sorted(fields_seen.items())))
    return 1 if differing or missing else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--out", required=True)
    d.add_argument("--class-batches", type=int, default=3, help="batches of each shape class (default 3)")
    d.add_argument("--engine", choices=("native_cpu", "native_cuda"), default="native_cpu")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--ignore", nargs="*", help="diagnostics fields not compared (e.g. a documented change)")
    c.add_argument("--allow-changed-d", type=_d_range, metavar="LO:HI",
                   help="streams whose system size d is in [LO, HI] may differ (CUDA dumps record d)")
    args = parser.parse_args(argv)
    return dump(args) if args.command == "dump" else compare(args)


if __name__ == "__main__":
    sys.exit(main() or 0)
