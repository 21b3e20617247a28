"""What a batch, or an X to predict, becomes before an engine sees it.

Each input is looked at once for its kind and goes on down one path:

* arrays of a framework backend's own kind (a torch tensor for
  ``backend="torch"``): checked on their device by the backend, with
  validation.py's messages;
* device arrays (CuPy, PyTorch CUDA, JAX, TensorFlow GPU, through DLPack):
  their shapes checked here; their values by the CUDA engine, on the device,
  before any state changes (device_arrays.py);
* host data (NumPy, lists, pandas frames): validation.py, in the contract's
  order, cast to the model dtype.

Feature names are read from X and checked against the stream's first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from . import device_arrays
from .exceptions import ValidationError
from .validation import (
    ALL_ZERO_WEIGHTS_MESSAGE,
    all_finite,
    check_feature_names,
    feature_names_of,
    require_finite,
    validate_sample_weight,
    validate_vector,
    validate_X,
)


@dataclass(frozen=True)
class Batch:
    """A validated batch in the model dtype, where it lives, and X's feature names (None: positional)."""

    X: Any
    y: Any
    sample_weight: Any
    names: Optional[np.ndarray]

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def rows(self, start: int, stop: int) -> "Batch":
        """Rows ``start:stop`` (views where the arrays allow)."""
        if start == 0 and stop == self.n_rows:
            return self
        weights = None if self.sample_weight is None else self.sample_weight[start:stop]
        return Batch(self.X[start:stop], self.y[start:stop], weights, self.names)


def checked_batch_size(batch_size: Any) -> int:
    """``batch_size`` of partial_fit_batches: a positive integer (not a bool)."""
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValidationError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def slice_bounds(backend: Any, batch: Batch, batch_size: Optional[int]) -> list[tuple[int, int]]:
    """The rows of each slice of ``batch_size`` (checked_batch_size's; the
    last may be shorter; None: the whole batch), each slice's weights checked
    as partial_fit checks a batch's (finiteness and signs hold for every
    slice once the whole was checked; a positive sum must hold for each).
    Device weights for the CUDA
    engine are checked there, slice by slice, before any state changes."""
    n_rows = batch.n_rows
    if batch_size is None:
        return [(0, n_rows)]
    size = batch_size
    bounds = [(start, min(start + size, n_rows)) for start in range(0, n_rows, size)]
    weights = batch.sample_weight
    if weights is None or len(bounds) == 1:
        return bounds
    if backend is not None and backend.capabilities.framework_arrays:
        weights = backend.host_array(weights)
    elif device_arrays.is_device_array(weights):
        return bounds
    positive = np.maximum.reduceat(np.asarray(weights) > 0, [start for start, _ in bounds])
    for k, (start, stop) in enumerate(bounds):
        if not positive[k]:
            raise ValidationError(f"{ALL_ZERO_WEIGHTS_MESSAGE} (rows {start}:{stop}, batch {k + 1} of "
                                  f"{len(bounds)} of batch_size {size})")
    return bounds


@dataclass(frozen=True)
class Expected:
    """What a stream expects of its inputs: nothing before its first batch."""

    dtype: np.dtype
    n_features: Optional[int] = None
    names: Optional[np.ndarray] = None


def batch(backend: Any, X: Any, y: Any, sample_weight: Any, expected: Expected, estimator_name: str,
          params: Any) -> Batch:
    """X, y and sample_weight validated for ``backend`` (None: not chosen yet,
    the CPU selector decides from the batch's shape)."""
    names = batch_names(X, expected)
    if backend is not None and backend.capabilities.framework_arrays:
        X, y, sample_weight = backend.validated_batch(X, y, sample_weight, expected.n_features, estimator_name)
        return Batch(X, y, sample_weight, names)
    if device_arrays.is_device_batch(X, y, sample_weight):
        device_arrays.require_device_backend(backend, X, params["backend"], params["device"])
        return Batch(*device_arrays.check_device_batch(X, y, sample_weight, expected.n_features, estimator_name),
                     names)
    return Batch(*_host_batch(backend, X, y, sample_weight, expected, estimator_name), names)


def batch_names(X: Any, expected: Expected) -> Optional[np.ndarray]:
    """X's feature names (None: positional), checked against the stream's when both have names."""
    return feature_names_of(X) if expected.names is None else check_feature_names(expected.names, X)


def _host_batch(backend: Any, X: Any, y: Any, sample_weight: Any, expected: Expected,
                estimator_name: str) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]:
    # A backend may supply a faster finiteness test (same answer, same place in the order).
    finite = backend.all_finite if backend is not None else all_finite
    # A backend that tests X itself (in the read that prepares it) gets X
    # untested; should y or the weights fail, X is tested first, so the
    # error reported is the one the order of the checks gives.
    x_tested_by_backend = backend is not None and backend.capabilities.checks_X_finite
    X_array = validate_X(X, expected.dtype, expected.n_features, estimator_name,
                         None if x_tested_by_backend else finite)
    try:
        y_array = validate_vector(y, "y", expected.dtype, X_array.shape[0], finite)
        weights = validate_sample_weight(sample_weight, expected.dtype, X_array.shape[0], finite)
    except Exception:
        if x_tested_by_backend:
            require_finite(X_array, "X", finite)
        raise
    return X_array, y_array, weights


def features(backend: Any, X: Any, expected: Expected, estimator_name: str) -> Any:
    """An X to predict from, validated for ``backend`` (width checked before finiteness)."""
    check_feature_names(expected.names, X)
    if backend.capabilities.framework_arrays:
        return backend.validated_X(X, expected.n_features, estimator_name)
    if device_arrays.is_device_array(X):
        device_arrays.require_device_backend(backend, X, backend.name, backend.device)
        device_arrays.check_device_batch(X, None, None, expected.n_features, estimator_name)
        device_arrays.require_finite(X, "X")
        return X
    return validate_X(X, expected.dtype, expected.n_features, estimator_name, backend.all_finite)


def r_squared(backend: Any, prediction: Any, X: Any, y: Any, sample_weight: Any, estimator_name: str) -> float:
    """R^2 of ``prediction`` (weighted when weights are given), computed where
    the arrays are: device arrays stay on their device until the final scalar."""
    if backend.capabilities.framework_arrays:
        y, sample_weight = backend.validated_targets(y, sample_weight, int(prediction.shape[0]))
        if backend.owns(y) and (sample_weight is None or backend.owns(sample_weight)):
            return device_arrays.device_r2(prediction, y, sample_weight)
        # host targets: the comparison on the host
        prediction, y, sample_weight = (None if a is None else backend.host_array(a) if backend.owns(a) else a
                                        for a in (prediction, y, sample_weight))
    elif device_arrays.is_device_batch(X, y, sample_weight):
        _, y, sample_weight = device_arrays.check_device_batch(X, y, sample_weight, None, estimator_name)
        return device_arrays.device_r2(prediction, y, sample_weight)
    return host_r_squared(prediction, y, sample_weight)


def host_r_squared(prediction: Any, y: Any, sample_weight: Any) -> float:
    prediction = np.asarray(prediction, dtype=np.float64)
    n_rows = prediction.shape[0]
    truth = validate_vector(y, "y", np.dtype(np.float64), n_rows)
    weights = (np.ones(n_rows) if sample_weight is None
               else validate_sample_weight(sample_weight, np.dtype(np.float64), n_rows))
    mean = np.average(truth, weights=weights)
    residual_sum = float(np.sum(weights * (truth - prediction) ** 2))
    total_sum = float(np.sum(weights * (truth - mean) ** 2))
    if total_sum == 0.0:
        return 1.0 if residual_sum == 0.0 else 0.0
    return 1.0 - residual_sum / total_sum
