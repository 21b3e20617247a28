"""The TensorFlow backend (``backend="tensorflow"``): the reference update on
eager TensorFlow tensors, on the CPU or a GPU (framework_backend.py).

Eager only: called inside ``tf.function`` every method raises
``BackendContractError``. ``device="cuda:N"`` is TensorFlow's ``/GPU:N``;
``device="auto"`` is ``/GPU:0`` when TensorFlow sees a GPU, else the CPU.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ..core.ops.tensorflow_ops import TensorflowOps, require_eager
from ..exceptions import BackendUnavailableError
from .framework_backend import FrameworkBackend, requested_device


class TensorflowBackend(FrameworkBackend):
    name = "tensorflow"

    def __init__(self, dtype: str = "float64", device: str = "cpu") -> None:
        require_eager()
        kind, index = requested_device(device, self.name)
        gpus = tf.config.list_physical_devices("GPU")
        if kind == "auto":
            kind, index = ("cuda", 0) if gpus else ("cpu", None)
        if kind == "cuda":
            if not gpus:
                raise BackendUnavailableError(
                    f"backend='tensorflow' with device={device!r}: this TensorFlow ({tf.__version__}) sees no GPU "
                    "(a CPU-only build, or no usable GPU)"
                )
            if index >= len(gpus):
                raise BackendUnavailableError(
                    f"backend='tensorflow': GPU {index} does not exist ({len(gpus)} GPUs)"
                )
            tf_device = ("GPU", index)
        else:
            tf_device = ("CPU", 0)
        self.device = "cpu" if kind == "cpu" else f"cuda:{index}"
        super().__init__(TensorflowOps(str(dtype), tf_device), dtype)


def create(dtype: str, device: str, n_jobs: Any, **options: Any) -> TensorflowBackend:
    return TensorflowBackend(dtype, device)
