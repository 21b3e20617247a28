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
from ..validation import check_vector_rows, check_X_shape


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
    check_X_shape(_shape(array), expected_features, estimator_name)
    _require_finite(ops, array, "X")
    return array


def validated_vector(ops: Any, value: Any, name: str, n_rows: int) -> Any:
    """validation.validate_vector for a framework array: y or sample_weight."""
    array = ops.flatten(_cast(ops, value, name))
    check_vector_rows(name, _shape(array)[0], n_rows)
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
