"""backend="auto": which engine runs a stream, and why (``auto_dispatch_``).

On CUDA devices the first available GPU backend is used. On the CPU the
choice is between the NumPy reference and the native CPU engine; it is made
once per stream, on its first batch, and recorded with its reason.
"""

from __future__ import annotations

from typing import Any

from ..exceptions import BackendUnavailableError
from .registry import BACKEND_SPECS, GPU_PREFERENCE, availability


def choose_gpu_backend() -> str:
    for name in GPU_PREFERENCE:
        available, _ = availability(name)
        if available:
            return name
    hints = ", ".join(f"{name}: {availability(name)[1]}" for name in GPU_PREFERENCE)
    raise BackendUnavailableError(f"backend='auto' with a CUDA device found no usable GPU backend ({hints})")


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


def choose_cpu_backend(n_rows: int, n_parameters: int, dtype: str, penalty: str, n_jobs: Any) -> tuple[str, dict]:
    """Pick numpy or native_cpu for a stream whose first batch is n_rows x n_parameters."""
    work_units = n_rows * n_parameters
    available, hint = availability("native_cpu")
    if not available:
        reason = f"native_cpu is not available here ({hint}); using the NumPy reference"
        return "numpy", cpu_dispatch_record("numpy", reason, work_units)
    from .cpu_selector import select_cpu_engine  # only when the native engine exists

    return select_cpu_engine(n_rows, n_parameters, dtype, penalty, n_jobs)


__all__ = ["choose_gpu_backend", "choose_cpu_backend", "cpu_dispatch_record", "BACKEND_SPECS"]
