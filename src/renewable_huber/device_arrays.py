"""Device arrays as they reach the estimator: CuPy arrays, PyTorch CUDA
tensors, JAX arrays and TensorFlow eager GPU tensors, recognised through
DLPack (``__dlpack_device__``), exported to the CUDA engine as DLPack
capsules on the engine's stream, never converted or staged through the
host (NATIVE.md, "Device inputs (DLPack)"): the engine reads them in place,
and may copy a batch device to device for its closing step
(native/cuda/src/caller_batch_copy.cuh).

The rules:

* ``X``, ``y`` and ``sample_weight`` are all device arrays or all host
  arrays; a mix raises :class:`BackendContractError`.
* A capsule is requested with ``__dlpack__(stream=<engine stream>)`` (never
  ``stream=None``): the producer orders its pending work before the engine's
  stream. Versioned DLPack (``max_version=(1, 0)``) is asked for first, a
  legacy capsule accepted from producers that do not take ``max_version``.
  PyTorch tensors are detached first (a view: no copy).
* TensorFlow (no stream argument) is exported after its pending eager work is
  waited for (``tf.test.experimental.sync_devices``); inside ``tf.function``
  or where that wait does not exist, the batch is refused.
* The engine checks the rest from the tensor (device, dtype, dimensions, C
  order): ``native/python/dlpack_import.hpp``.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from .exceptions import BackendContractError, ValidationError
from .validation import check_X_shape, check_vector_rows

#: DLPack device types (dlpack.h)
KDL_CPU, KDL_CUDA, KDL_CUDA_MANAGED = 1, 2, 13


_FRAMEWORKS: dict[type, str] = {}  # an array type's framework, worked out once a type


def framework_of(value: Any) -> str:
    """The array's framework: "cupy", "torch", "jax", "tensorflow", "numpy" or its module's root."""
    kind = type(value)
    framework = _FRAMEWORKS.get(kind)
    if framework is None:
        root = kind.__module__.split(".")[0]
        framework = _FRAMEWORKS[kind] = {"jaxlib": "jax"}.get(root, root)
    return framework


def dlpack_device(value: Any) -> Optional[tuple[int, int]]:
    """(DLPack device type, device id) of an array that reports one, else None."""
    if value is None:
        return None
    if framework_of(value) == "tensorflow" and hasattr(value, "device"):
        device = str(value.device).upper()  # ".../device:GPU:0"
        if ":GPU:" in device:
            return KDL_CUDA, int(device.rsplit(":", 1)[1])
        return KDL_CPU, 0
    report = getattr(value, "__dlpack_device__", None)
    if report is None:
        return None
    try:
        kind, index = report()
    except Exception:  # a producer that cannot say: treat as host data
        return None
    return int(kind), int(index)


def is_device_array(value: Any) -> bool:
    if type(value) is np.ndarray:  # the common case, answered without asking DLPack (host memory always)
        return False
    device = dlpack_device(value)
    return device is not None and device[0] in (KDL_CUDA, KDL_CUDA_MANAGED)


def where(value: Any) -> str:
    device = dlpack_device(value)
    if device is not None and device[0] in (KDL_CUDA, KDL_CUDA_MANAGED):
        return f"{framework_of(value)} on cuda:{device[1]}"
    return "host"


def is_device_batch(X: Any, y: Any = None, sample_weight: Any = None) -> bool:
    """Whether the batch is on a device: all of its arrays or none of them."""
    arrays = {"X": X, "y": y, "sample_weight": sample_weight}
    on_device = {name: is_device_array(value) for name, value in arrays.items() if value is not None}
    if all(on_device.values()):
        # X may be None (refused later by the host checks): not a device batch
        return on_device.get("X", False)
    if not any(on_device.values()):
        return False
    placement = ", ".join(f"{name} {where(arrays[name])}" for name in on_device)
    raise BackendContractError(
        f"X, y and sample_weight must all be device arrays or all host arrays ({placement}); "
        "move them to one place first"
    )


def check_device_batch(
    X: Any, y: Any, sample_weight: Any, expected_features: Optional[int], estimator_name: str
) -> tuple[Any, Any, Any]:
    """The shape rules of a host batch, read from the device arrays' shapes
    (nothing is read from the device). A y or weight of shape (n, 1) is
    viewed as (n,)."""
    check_X_shape(tuple(X.shape), expected_features, estimator_name)
    rows = int(X.shape[0])
    vectors = []
    for name, value in (("y", y), ("sample_weight", sample_weight)):
        if value is not None:
            if len(value.shape) == 2 and int(value.shape[1]) == 1:
                value = value.reshape(-1)
            if len(value.shape) != 1:
                raise ValidationError(f"{name} must be a one-dimensional numeric array")
            check_vector_rows(name, int(value.shape[0]), rows)
        vectors.append(value)
    return X, vectors[0], vectors[1]


def require_device_backend(backend: Any, X: Any, backend_param: str, device_param: str) -> None:
    """A device batch needs a backend that reads device arrays in place."""
    if backend is None or not backend.capabilities.accepts_device_arrays:
        used = backend_param if backend is None else backend.name
        raise BackendContractError(
            f"device arrays ({where(X)}) need backend='native_cuda' (or backend='auto' with device='cuda'); "
            f"this model uses backend={used!r} with device={device_param!r}, which takes host arrays "
            "(pass NumPy arrays, or change the backend)"
        )


def check_engine_device(value: Any, name: str, device_index: int) -> None:
    """Before exporting on the engine's stream: the array is on the engine's device."""
    device = dlpack_device(value)
    if device is None or device[0] not in (KDL_CUDA, KDL_CUDA_MANAGED):
        raise BackendContractError(f"{name} must be in CUDA device memory, not on the host")
    if device[1] != device_index:
        raise BackendContractError(
            f"{name} is on cuda:{device[1]}, the engine on cuda:{device_index} "
            "(move the data or the model: model.to_device)"
        )


def export_capsule(value: Any, stream: int) -> Any:
    """A DLPack capsule of ``value`` whose producer work is ordered before ``stream``."""
    framework = framework_of(value)
    if framework == "tensorflow":
        return _tensorflow_capsule(value)
    if framework == "torch":
        value = value.detach()
    try:
        return value.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # a producer that predates versioned DLPack
        return value.__dlpack__(stream=stream)


def _tensorflow_capsule(value: Any) -> Any:
    import tensorflow as tf

    if not tf.executing_eagerly():
        raise BackendContractError(
            "TensorFlow tensors are accepted in eager mode only, not inside tf.function"
        )
    sync = getattr(getattr(getattr(tf, "test", None), "experimental", None), "sync_devices", None)
    if sync is None:
        raise BackendContractError(
            f"TensorFlow {tf.__version__} cannot wait for its pending GPU work before a DLPack export "
            "(tf.test.experimental.sync_devices is missing): pass host arrays or upgrade TensorFlow"
        )
    sync()
    return tf.experimental.dlpack.to_dlpack(value)


def empty_vector_like(value: Any, rows: int, dtype: str) -> tuple[Any, Callable[[Any], Any]]:
    """A writable device vector for a prediction, in ``value``'s framework when
    it can allocate one (CuPy, PyTorch), else CuPy's or PyTorch's array, and
    the function that turns it into ``value``'s framework (JAX, TensorFlow:
    zero-copy DLPack imports)."""
    framework = framework_of(value)
    index = dlpack_device(value)[1]  # type: ignore[index]
    if framework == "torch":
        import torch

        return torch.empty(rows, dtype=getattr(torch, dtype), device=value.device), _same
    if framework == "cupy":
        import cupy

        with cupy.cuda.Device(index):
            return cupy.empty(rows, dtype=dtype), _same
    allocator = _any_allocator(index, rows, dtype)
    if allocator is None:
        raise BackendContractError(
            f"a device prediction for {framework} arrays is allocated through CuPy or PyTorch, and neither is "
            "installed: pass host arrays or install one of them"
        )
    if framework == "jax":
        import jax.dlpack

        return allocator, jax.dlpack.from_dlpack
    if framework == "tensorflow":
        import tensorflow as tf

        return allocator, lambda out: tf.experimental.dlpack.from_dlpack(out.__dlpack__())
    raise BackendContractError(f"device arrays of {framework} are not supported (CuPy, PyTorch, JAX, TensorFlow are)")


def _same(out: Any) -> Any:
    return out


def _any_allocator(index: int, rows: int, dtype: str) -> Any:
    try:
        import cupy

        with cupy.cuda.Device(index):
            return cupy.empty(rows, dtype=dtype)
    except ImportError:
        pass
    try:
        import torch

        return torch.empty(rows, dtype=getattr(torch, dtype), device=f"cuda:{index}")
    except ImportError:
        return None


def host_copy(value: Any) -> Any:
    """A NumPy copy of an array of any framework, wherever it lives."""
    framework = framework_of(value)
    if framework == "cupy":
        return value.get()
    if framework == "torch":
        return value.detach().cpu().numpy()
    if framework == "tensorflow":
        return value.numpy()
    import numpy as np

    return np.asarray(value)


def _float64(value: Any) -> Any:
    framework = framework_of(value)
    if framework == "torch":
        import torch

        return value.to(torch.float64)
    if framework == "tensorflow":
        import tensorflow as tf

        return tf.cast(value, tf.float64)
    return value.astype("float64")


def _total(value: Any) -> Any:
    if framework_of(value) == "tensorflow":
        import tensorflow as tf

        return tf.reduce_sum(value)
    return value.sum()


def _minimum(value: Any) -> Any:
    if framework_of(value) == "tensorflow":
        import tensorflow as tf

        return tf.reduce_min(value)
    return value.min()


def all_finite(value: Any) -> bool:
    """Whether every value is finite, reduced on the device (one scalar read)."""
    framework = framework_of(value)
    if framework == "torch":
        import torch

        return bool(torch.isfinite(value).all())
    if framework == "tensorflow":
        import tensorflow as tf

        return bool(tf.reduce_all(tf.math.is_finite(value)))
    if framework == "jax":
        import jax.numpy as jnp

        return bool(jnp.isfinite(value).all())
    import cupy

    return bool(cupy.isfinite(value).all())


def require_finite(value: Any, name: str) -> None:
    if not all_finite(value):
        raise ValidationError(f"{name} must not contain NaN or infinite values")


def device_r2(prediction: Any, y: Any, sample_weight: Any) -> float:
    """R^2 (weighted when weights are given) computed where the arrays are, in
    float64, after the host path's checks of y and the weights; only scalars
    come to the host."""
    require_finite(y, "y")
    prediction, y = _float64(prediction), _float64(y)
    weights = None if sample_weight is None else _float64(sample_weight)
    if weights is not None:
        require_finite(weights, "sample_weight")
        if float(_minimum(weights)) < 0:
            raise ValidationError("sample_weight must be non-negative")
        if not float(_total(weights)) > 0:
            raise ValidationError("sample_weight cannot be all zero")
    if weights is None:
        mean = _total(y) / y.shape[0]
        residual_sum = _total((y - prediction) ** 2)
        total_sum = _total((y - mean) ** 2)
    else:
        mean = _total(weights * y) / _total(weights)
        residual_sum = _total(weights * (y - prediction) ** 2)
        total_sum = _total(weights * (y - mean) ** 2)
    residual_sum, total_sum = float(residual_sum), float(total_sum)
    if total_sum == 0.0:
        return 1.0 if residual_sum == 0.0 else 0.0
    return 1.0 - residual_sum / total_sum
