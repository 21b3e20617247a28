"""What a ``partial_fit`` call costs outside the engine (issue 28's "a lean
estimator path"): the estimator and the native_cuda backend's Python over an
engine that does nothing (``NullEngine``: it answers an update at once with
fixed diagnostics and advanced counters), host-fed and device-fed, the
device arrays stood for by ``FakeDeviceArray`` (DLPack on cuda:0, a capsule
that is never read). No GPU is needed: the number is the Python layer's
alone, what an update pays before and after its engine call on any machine
(the engine's own host work and the device's are not in it).

Steady calls on one estimator (the median of --rounds blocks of --calls
calls) and cold streams (a new estimator and its fit, per stream).

    python scripts/profiling/estimator_call_overhead.py --rounds 7 --out overhead.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


class NullEngine:
    """Stands for the binding's Engine: every update is answered at once."""

    #: the binding module (install_null_engine)
    native: Any = None

    def __init__(self, device: int, dtype: str, n_features: int, fit_intercept: bool,
                 *args: Any, **kwargs: Any) -> None:
        self.stream = 7
        self.n_features, self.fit_intercept = int(n_features), bool(fit_intercept)
        self.n_samples, self.batches = 0, 0
        self.diagnostics = types.SimpleNamespace(
            iterations=3, converged=True, objective=1.0, lambda_value=0.0, bandwidth=1.0,
            used_least_squares_fallback=False, solve_route="cholesky", stop_reason="converged", deferred=False)
        self.queued = types.SimpleNamespace(deferred=True)
        self.pending = 0

    def counters(self) -> Any:
        return self.native.StateCounters(
            n_features_in=self.n_features, fit_intercept=self.fit_intercept, n_samples_seen=self.n_samples,
            batch_count=self.batches, previous_lambda=0.0, weight_sum=float(self.n_samples))

    def restore(self, *args: Any) -> None:
        pass

    def _absorbed(self, rows: int, defer: bool = False) -> tuple[Any, Any]:
        if defer:  # left queued, as the device loop's update is (deferred results): settle() reads it
            self.pending = rows
            return self.queued, None
        self.n_samples += rows
        self.batches += 1
        return self.diagnostics, self.counters()

    def update_host(self, X: Any, y: Any, sample_weight: Any, config: Any, coefficients_out: Any,
                    defer: bool = False) -> tuple[Any, Any]:
        return self._absorbed(len(y), defer)

    def update_dlpack(self, X: Any, y: Any, sample_weight: Any, config: Any, coefficients_out: Any,
                      defer: bool = False) -> tuple[Any, Any]:
        return self._absorbed(X.rows, defer)

    def settle(self, coefficients_out: Any) -> tuple[Any, Any]:
        return self._absorbed(self.pending)

    def features(self) -> dict:
        return {}


class Capsule:
    def __init__(self, rows: int) -> None:
        self.rows = rows


class FakeDeviceArray:
    """Stands for a CuPy array on cuda:0 (what the estimator asks of one)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array, self.shape, self.dtype, self.ndim = array, array.shape, array.dtype, array.ndim

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def __dlpack__(self, stream: Any = None, max_version: Any = None) -> Capsule:
        return Capsule(self.shape[0])

    def reshape(self, *shape: Any) -> "FakeDeviceArray":
        return FakeDeviceArray(self.array.reshape(*shape))

    def __len__(self) -> int:
        return self.shape[0]


FakeDeviceArray.__module__ = "cupy"  # the framework the estimator reads from the type


def install_null_engine() -> None:
    """backend="native_cuda" over NullEngine in this process (the binding module must import)."""
    from renewable_huber.backends import native_cuda_backend as backend
    from renewable_huber.config import SolverConfig

    native = backend._native
    backend.runtime_info = lambda: {"device_count": 1, "runtime_version": 13000, "driver_version": 13000}
    NullEngine.native = native
    native.Engine = NullEngine  # a class with settle: results deferred unless RH_CUDA_RESULTS=immediate
    native.SolverConfig = lambda **fields: SolverConfig(**fields)


def measure(feed: str, rows: int, features: int, calls: int, rounds: int, results: str) -> dict[str, Any]:
    previous = os.environ.get("RH_CUDA_RESULTS")
    os.environ["RH_CUDA_RESULTS"] = results  # read by each new model's backend
    try:
        return timed(feed, rows, features, calls, rounds, results)
    finally:
        if previous is None:
            del os.environ["RH_CUDA_RESULTS"]
        else:
            os.environ["RH_CUDA_RESULTS"] = previous


def timed(feed: str, rows: int, features: int, calls: int, rounds: int, results: str) -> dict[str, Any]:
    from renewable_huber import RenewableHuberRegressor

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((rows, features)), rng.standard_normal(rows)
    if feed == "device":
        X, y = FakeDeviceArray(X), FakeDeviceArray(y)
    model = RenewableHuberRegressor(backend="native_cuda", device="cuda")
    model.fit(X, y)
    for _ in range(calls):  # warm
        model.partial_fit(X, y)
    steady, cold = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            model.partial_fit(X, y)
        steady.append((time.perf_counter() - start) / calls)
        start = time.perf_counter()
        for _ in range(calls // 10):
            RenewableHuberRegressor(backend="native_cuda", device="cuda").fit(X, y)
        cold.append((time.perf_counter() - start) / (calls // 10))
    return {"feed": feed, "results": results, "rows": rows, "features": features, "calls_per_round": calls, "rounds": rounds,
            "partial_fit_us": round(statistics.median(steady) * 1e6, 2),
            "partial_fit_us_rounds": [round(s * 1e6, 2) for s in steady],
            "cold_stream_us": round(statistics.median(cold) * 1e6, 2),
            "cold_stream_us_rounds": [round(c * 1e6, 2) for c in cold]}


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--feeds", nargs="+", default=["host", "device"], choices=["host", "device"])
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--results", nargs="+", default=["deferred", "immediate"], choices=["deferred", "immediate"],
                        help="RH_CUDA_RESULTS of the measured models (amendment 0004)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    install_null_engine()
    cases = [measure(feed, args.rows, args.features, args.calls, args.rounds, results)
             for feed in args.feeds for results in args.results]
    for case in cases:
        print(f"{case['feed']}-fed, {case['results']} results: partial_fit {case['partial_fit_us']:.1f} us a call, "
              f"a cold stream (new estimator + fit) {case['cold_stream_us']:.1f} us (Python only: a null engine)")
    if args.out is not None:
        import renewable_huber

        record = {"schema": "renewable-huber-estimator-call-overhead", "schema_version": 1,
                  "what": "the estimator's and the native_cuda backend's Python per call over a null engine",
                  "renewable_huber": renewable_huber.__version__, "python": platform.python_version(),
                  "machine": platform.machine(), "processor": platform.processor() or platform.machine(),
                  "cases": cases}
        args.out.write_text(json.dumps(record, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
