"""The runtime CPU selector behind backend="auto": NumPy or the native engine.

It decides from bounded runtime evidence: on the first batch of a stream it
times both engines on a probe of that batch's shape (a few rows, at most
``CALIBRATION_BUDGET_SECONDS``), and picks the native engine only when it is
predicted at least ``NATIVE_MARGIN`` faster. Results are cached per process,
keyed by the problem's shape class, dtype, penalty and the thread environment,
and never persisted: a change of thread variables, CPU affinity or the
observed BLAS/OpenMP pool sizes invalidates them, and a forked child starts
without them.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np

from ..config import SolverConfig
from ..state import RenewableHuberState
from .registry import create_backend

NATIVE_MARGIN = 1.10
CALIBRATION_BUDGET_SECONDS = 0.25
PROBE_ROWS = 2048
MAX_PROBES = 5
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RH_NUM_THREADS")

_cache: dict[tuple, dict[str, Any]] = {}


def cpu_dispatch_record(backend: str, reason: str, work_units: int, **measured: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "backend": backend,
        "reason": reason,
        "work_units": int(work_units),
        "calibrated": False,
        "predicted_ratio": None,
        "ratio_upper_bound": None,
        "calibration_seconds": 0.0,
        "probe_count": 0,
    }
    record.update(measured)
    return record


def _observed_pool_sizes() -> tuple:
    """The thread pools the process has now (BLAS and OpenMP libraries, as
    threadpoolctl sees them; the native engine's BLAS): a change invalidates
    calibrations made with other sizes."""
    sizes: list = []
    try:
        from threadpoolctl import threadpool_info

        sizes += sorted((info.get("internal_api"), info.get("num_threads")) for info in threadpool_info())
    except Exception:  # threadpoolctl absent or failing: the variables and affinity still count
        pass
    try:
        import _renewable_huber_native_cpu as native

        sizes.append(("native_cpu", native.blas_threads()))
    except Exception:
        pass
    return tuple(sizes)


def _thread_environment() -> tuple:
    """What a calibration depends on besides the problem: the thread
    variables, the CPU affinity, the observed pool sizes and the process (a
    forked child calibrates again)."""
    affinity: tuple = ()
    if hasattr(os, "sched_getaffinity"):
        affinity = tuple(sorted(os.sched_getaffinity(0)))
    return tuple(os.environ.get(name) for name in THREAD_VARIABLES) + (affinity, _observed_pool_sizes(), os.getpid())


def _shape_class(n_rows: int, n_parameters: int) -> tuple[int, int]:
    """Powers of two: calibrations are shared by problems of the same order of size."""
    return (int(np.log2(max(n_rows, 1))), int(np.log2(max(n_parameters, 1))))


def _time_update(backend: Any, state: RenewableHuberState, X: np.ndarray, y: np.ndarray, config: SolverConfig) -> float:
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backend.update(state, X, y, None, config)
    return time.perf_counter() - started


def select_cpu_engine(n_rows: int, n_parameters: int, dtype: str, penalty: str, n_jobs: Any) -> tuple[str, dict]:
    key = (_shape_class(n_rows, n_parameters), dtype, penalty, n_jobs, _thread_environment())
    work_units = n_rows * n_parameters
    cached = _cache.get(key)
    if cached is not None:
        return cached["backend"], dict(cached, work_units=work_units, reason=cached["reason"] + " (cached)")

    started = time.perf_counter()
    native = create_backend("native_cpu", "cpu", dtype, n_jobs)
    reference = create_backend("numpy", "cpu", dtype, n_jobs)
    rows = min(n_rows, PROBE_ROWS)
    fit_intercept = True
    p = max(n_parameters - 1, 1)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, p)).astype(dtype)
    y = (X @ rng.normal(size=p) + rng.standard_t(3, size=rows)).astype(dtype)
    config = SolverConfig(1.345, penalty, 1.0, 1.0, fit_intercept, 20, 1e-6, 1e-8)
    state = RenewableHuberState.empty(p, fit_intercept, dtype)
    ratios = []
    _time_update(native, native.as_backend_state(state), X, y, config)  # warm-up: workspaces, threads
    for _ in range(MAX_PROBES):
        reference_seconds = _time_update(reference, state, X, y, config)
        native_seconds = _time_update(native, native.as_backend_state(state), X, y, config)
        ratios.append(reference_seconds / max(native_seconds, 1e-9))
        if time.perf_counter() - started > CALIBRATION_BUDGET_SECONDS:
            break
    predicted = float(np.median(ratios))
    chosen = "native_cpu" if predicted >= NATIVE_MARGIN else "numpy"
    reason = (
        f"native_cpu predicted {predicted:.2f}x the NumPy reference on a {rows}x{n_parameters} probe; "
        f"{'above' if chosen == 'native_cpu' else 'below'} the {NATIVE_MARGIN:.2f}x margin"
    )
    record = cpu_dispatch_record(
        chosen,
        reason,
        work_units,
        calibrated=True,
        predicted_ratio=predicted,
        ratio_upper_bound=float(max(ratios)),
        calibration_seconds=time.perf_counter() - started,
        probe_count=len(ratios),
    )
    _cache[key] = record
    return chosen, dict(record)
