"""backend="auto": which engine runs a stream, and why (``auto_dispatch_``).

On CUDA devices the first available GPU backend is used. On the CPU the
choice is between the NumPy reference and the native CPU engine; it is made
once per stream, on its first batch, and recorded with its reason.
"""

from __future__ import annotations

from typing import Any

from ..exceptions import BackendUnavailableError
from .cpu_selector import cpu_dispatch_record, select_cpu_engine
from .registry import BACKEND_SPECS, GPU_PREFERENCE, availability


def choose_gpu_backend() -> str:
    for name in GPU_PREFERENCE:
        available, _ = availability(name)
        if available:
            return name
    hints = ", ".join(f"{name}: {availability(name)[1]}" for name in GPU_PREFERENCE)
    raise BackendUnavailableError(f"backend='auto' with a CUDA device found no usable GPU backend ({hints})")


def choose_cpu_backend(n_rows: int, n_parameters: int, dtype: str, penalty: str, n_jobs: Any) -> tuple[str, dict]:
    """Pick numpy or native_cpu for a stream whose first batch is n_rows x n_parameters."""
    work_units = n_rows * n_parameters
    available, hint = availability("native_cpu")
    if not available:
        reason = f"native_cpu is not available here ({hint}); using the NumPy reference"
        return "numpy", cpu_dispatch_record("numpy", reason, work_units)
    return select_cpu_engine(n_rows, n_parameters, dtype, penalty, n_jobs)


__all__ = ["choose_gpu_backend", "choose_cpu_backend", "cpu_dispatch_record", "BACKEND_SPECS"]
