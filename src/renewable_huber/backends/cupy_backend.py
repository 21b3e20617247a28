"""The CuPy backend (``backend="cupy"``): the reference update on CuPy
arrays on one CUDA device (framework_backend.py). CUDA arrays in, CuPy
arrays out; the state stays on the device between batches."""

from __future__ import annotations

from typing import Any

import cupy

from ..core.ops.cupy_ops import CupyOps
from ..exceptions import BackendUnavailableError
from .framework_backend import FrameworkBackend, requested_device


def _device_count() -> int:
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except cupy.cuda.runtime.CUDARuntimeError:  # no driver, or no device
        return 0


class CupyBackend(FrameworkBackend):
    name = "cupy"

    def __init__(self, dtype: str = "float64", device: str = "cuda") -> None:
        kind, index = requested_device(device, self.name)
        if kind == "cpu":
            raise BackendUnavailableError("backend='cupy' requires a CUDA device")
        index = 0 if index is None else index
        count = _device_count()
        if count == 0:
            raise BackendUnavailableError("backend='cupy' needs a CUDA device and CuPy finds none usable here")
        if index >= count:
            raise BackendUnavailableError(f"backend='cupy': CUDA device {index} does not exist ({count} devices)")
        self.device = f"cuda:{index}"
        super().__init__(CupyOps(str(dtype), index), dtype)


def create(dtype: str, device: str, n_jobs: Any, **options: Any) -> CupyBackend:
    return CupyBackend(dtype, device)
