"""The PyTorch backend (``backend="torch"``): the reference update on
PyTorch tensors, on the CPU or a CUDA device (framework_backend.py).

Tensors in are detached (``requires_grad`` inputs are fine: no graph is
built), tensors out are detached. ``device="auto"`` is CUDA device 0 when
PyTorch sees one, else the CPU.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.ops.torch_ops import TorchOps
from ..exceptions import BackendUnavailableError
from .framework_backend import FrameworkBackend, requested_device


class TorchBackend(FrameworkBackend):
    name = "torch"

    def __init__(self, dtype: str = "float64", device: str = "cpu") -> None:
        kind, index = requested_device(device, self.name)
        if kind == "auto":
            kind, index = ("cuda", 0) if torch.cuda.is_available() else ("cpu", None)
        if kind == "cuda":
            if not torch.cuda.is_available():
                raise BackendUnavailableError(
                    f"backend='torch' with device={device!r}: this PyTorch ({torch.__version__}) sees no CUDA device "
                    "(a CPU-only build, or no usable GPU)"
                )
            if index >= torch.cuda.device_count():
                raise BackendUnavailableError(
                    f"backend='torch': CUDA device {index} does not exist ({torch.cuda.device_count()} devices)"
                )
            torch_device = torch.device("cuda", index)
        else:
            torch_device = torch.device("cpu")
        self.device = "cpu" if kind == "cpu" else f"cuda:{index}"
        super().__init__(TorchOps(str(dtype), torch_device), dtype)


def create(dtype: str, device: str, n_jobs: Any, **options: Any) -> TorchBackend:
    return TorchBackend(dtype, device)
