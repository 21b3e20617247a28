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


def _usable_on_gpu(name: str, index: int) -> tuple[bool, str]:
    """Whether an installed GPU backend can run on CUDA device ``index`` here, and why not."""
    try:
        if name == "native_cuda":
            from .native_cuda_backend import runtime_info

            count = runtime_info()["device_count"]
        elif name == "cupy":
            import cupy

            count = cupy.cuda.runtime.getDeviceCount()
        elif name == "torch":
            import torch

            count = torch.cuda.device_count()
        else:
            import tensorflow as tf

            count = len(tf.config.list_physical_devices("GPU"))
    except Exception as exc:  # a broken install, a driver error: not usable, and say why
        return False, f"unusable ({type(exc).__name__}: {exc})"
    if index >= count:
        return False, f"sees {count} CUDA device(s), not cuda:{index}"
    return True, "usable"


def choose_gpu_backend(device: str = "cuda") -> tuple[str, dict]:
    """The first GPU backend, in GPU_PREFERENCE order, installed and usable on
    ``device``; the record says why each one before it was passed over."""
    index = int(device[5:]) if device.startswith("cuda:") and device[5:].isdigit() else 0
    passed_over = {}
    for name in GPU_PREFERENCE:
        available, hint = availability(name)
        if available:
            available, hint = _usable_on_gpu(name, index)
        if available:
            reason = f"{name} is the first usable GPU backend on cuda:{index}"
            if passed_over:
                reason += " (" + "; ".join(f"{n}: {why}" for n, why in passed_over.items()) + ")"
            return name, {"backend": name, "reason": reason, "passed_over": dict(passed_over)}
        passed_over[name] = hint
    hints = ", ".join(f"{name}: {why}" for name, why in passed_over.items())
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
