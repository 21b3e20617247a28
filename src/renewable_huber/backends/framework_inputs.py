"""Validation of a framework backend's own arrays where they are: the checks
of validation.py, in its order and with its messages, without the host copy
that validation.py's ``np.asarray`` makes (and that a GPU array refuses).

Host inputs (NumPy, lists, frames) keep going through validation.py; these
functions take arrays for which the backend's ``owns`` is true, and return
them in the model dtype on the backend's device (in place when they already
are). The message texts are validation.py's: the tests compare the two paths
on the same bad inputs.
"""

from __future__ import annotations

from typing import Any, Optional

from ..exceptions import ValidationError
from ..validation import X_SHAPE_MESSAGE


def _shape(array: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in array.shape)


def _cast(ops: Any, value: Any, name: str) -> Any:
    if ops.kind(value) == "c":
        raise ValidationError(f"Complex data not supported for {name}")
    return ops.asarray(value, name)


def _require_finite(ops: Any, array: Any, name: str) -> None:
    if not ops.all_finite(array):
        raise ValidationError(f"{name} must not contain NaN or infinite values")


def validated_X(ops: Any, X: Any, expected_features: Optional[int], estimator_name: str) -> Any:
    """validation.validate_X for a framework array (finite values tested)."""
    array = _cast(ops, X, "X")
    shape = _shape(array)
    if len(shape) != 2:
        raise ValidationError(X_SHAPE_MESSAGE)
    n_rows, n_columns = shape
    if n_rows < 1:
        raise ValidationError(f"Found array with 0 sample(s) (shape={shape}) while a minimum of 1 is required.")
    if n_columns < 1:
        raise ValidationError(f"0 feature(s) (shape={shape}) while a minimum of 1 is required.")
    if expected_features is not None and n_columns != expected_features:
        raise ValidationError(
            f"X has {n_columns} features, but {estimator_name} is expecting {expected_features} features as input"
        )
    _require_finite(ops, array, "X")
    return array


def validated_vector(ops: Any, value: Any, name: str, n_rows: int) -> Any:
    """validation.validate_vector for a framework array: y or sample_weight."""
    array = ops.flatten(_cast(ops, value, name))
    if _shape(array)[0] != n_rows:
        if name == "y":
            raise ValidationError("X and y must contain the same number of samples")
        raise ValidationError(f"{name} and X must contain the same number of samples")
    _require_finite(ops, array, name)
    return array


def validated_sample_weight(ops: Any, sample_weight: Any, n_rows: int) -> Optional[Any]:
    """validation.validate_sample_weight for a framework array."""
    if sample_weight is None:
        return None
    weights = validated_vector(ops, sample_weight, "sample_weight", n_rows)
    if ops.any_negative(weights):
        raise ValidationError("sample_weight must be non-negative")
    if not ops.sum_float64(weights) > 0:
        raise ValidationError("sample_weight cannot be all zero")
    return weights
