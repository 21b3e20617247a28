"""Host input validation for fit, partial_fit, predict and score.

The order of the checks and the messages are part of the public contract
(spec/API.md, "fit / partial_fit"); several are what scikit-learn's estimator
checks look for.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Optional

import numpy as np

from .exceptions import ValidationError
from .frame_columns import column_problem, date_column_problem, is_frame_like

SPARSE_MESSAGE = (
    "Sparse data was passed, but renewable-huber requires dense input; "
    "convert explicitly with X.toarray()"
)


def is_sparse(value: Any) -> bool:
    if type(value) is np.ndarray:  # the common case, without the module lookups
        return False
    sparse = sys.modules.get("scipy.sparse")
    if sparse is not None and sparse.issparse(value):
        return True
    return type(value).__module__.startswith("scipy.sparse")


def reject_sparse(value: Any) -> None:
    if is_sparse(value):
        raise TypeError(SPARSE_MESSAGE)


CAST_TYPE_MESSAGE = "float() argument must be a string or a number"


def _explained(message: str, original: Any, problem: Optional[str] = None) -> str:
    """The contract's message, followed for a DataFrame or Series by what is
    wrong with which column (frame_columns.py)."""
    if problem is None and is_frame_like(original):
        problem = column_problem(original)
    return message if problem is None else f"{message} ({problem})"


def _to_array(value: Any, name: str, dtype: np.dtype, cast_message: str) -> np.ndarray:
    """Sparse check, ``.to_numpy()``, complex check, cast: the shared first steps."""
    reject_sparse(value)
    original = value
    if hasattr(value, "to_numpy"):
        if is_frame_like(value):
            # Dates would cast to nanoseconds without a word: refused as the
            # non-numbers they are.
            problem = date_column_problem(value)
            if problem is not None:
                raise TypeError(_explained(CAST_TYPE_MESSAGE, value, problem))
        value = value.to_numpy()
    try:
        raw = np.asarray(value)
    except ValueError as exc:  # ragged nesting and similar
        raise ValidationError(cast_message) from exc
    if raw.dtype.kind == "c" or (
        raw.dtype == object and any(isinstance(v, (complex, np.complexfloating)) for v in raw.flat)
    ):
        raise ValidationError(f"Complex data not supported for {name}")
    try:
        array = raw.astype(dtype, copy=False)
    except TypeError as exc:
        raise TypeError(_explained(CAST_TYPE_MESSAGE, original)) from exc
    except ValueError as exc:
        raise ValidationError(_explained(cast_message, original)) from exc
    return array


def all_finite(array: np.ndarray) -> bool:
    """True when no element is NaN or infinite.

    A finite sum proves it (NaN and inf propagate through addition) without
    the boolean temporary; only a non-finite sum (which finite values can also
    give, by overflow) pays for the elementwise check.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(array, axis=None)):
            return True
    return bool(np.isfinite(array).all())


#: the finiteness test of the validators: all_finite, or a backend's faster equivalent
FiniteCheck = Callable[[np.ndarray], bool]


def require_finite(array: np.ndarray, name: str, finite: FiniteCheck = all_finite) -> None:
    if not finite(array):
        raise ValidationError(f"{name} must not contain NaN or infinite values")


X_SHAPE_MESSAGE = "X must be a two-dimensional numeric array. Reshape your data."


def check_X_shape(shape: tuple, expected_features: Optional[int], estimator_name: str) -> None:
    """Two dimensions, at least one row and one column, the stream's feature count."""
    if len(shape) != 2:
        raise ValidationError(X_SHAPE_MESSAGE)
    n_rows, n_columns = (int(extent) for extent in shape)
    if n_rows < 1:
        raise ValidationError(f"Found array with 0 sample(s) (shape={tuple(shape)}) while a minimum of 1 is required.")
    if n_columns < 1:
        raise ValidationError(f"0 feature(s) (shape={tuple(shape)}) while a minimum of 1 is required.")
    if expected_features is not None and n_columns != expected_features:
        raise ValidationError(
            f"X has {n_columns} features, but {estimator_name} is expecting {expected_features} features as input"
        )


def check_vector_rows(name: str, length: int, n_rows: int) -> None:
    """y or sample_weight has as many values as X has rows."""
    if length != n_rows:
        if name == "y":
            raise ValidationError("X and y must contain the same number of samples")
        raise ValidationError(f"{name} and X must contain the same number of samples")


def validate_X(
    X: Any,
    dtype: np.dtype,
    expected_features: Optional[int],
    estimator_name: str,
    finite: Optional[FiniteCheck] = all_finite,
) -> np.ndarray:
    """Cast X to a 2-D array of the model dtype with rows, columns and finite
    values (``finite=None``: the values are left to the caller to test)."""
    array = _to_array(X, "X", dtype, X_SHAPE_MESSAGE)
    check_X_shape(array.shape, expected_features, estimator_name)
    if finite is not None:
        require_finite(array, "X", finite)
    return array


def validate_vector(value: Any, name: str, dtype: np.dtype, n_rows: int, finite: FiniteCheck = all_finite) -> np.ndarray:
    """y or sample_weight: cast, flatten, match the row count, finite."""
    array = _to_array(value, name, dtype, f"{name} must be a one-dimensional numeric array")
    array = array.reshape(-1)
    check_vector_rows(name, array.shape[0], n_rows)
    if not finite(array):
        # a nullable pandas series turns pd.NA into NaN: say so
        raise ValidationError(_explained(f"{name} must not contain NaN or infinite values", value))
    return array


ALL_ZERO_WEIGHTS_MESSAGE = "sample_weight cannot be all zero"


def validate_sample_weight(
    sample_weight: Any, dtype: np.dtype, n_rows: int, finite: FiniteCheck = all_finite, positive_sum: bool = True
) -> Optional[np.ndarray]:
    """Finite, non-negative weights; with a positive sum unless ``positive_sum``
    is False (a partition of a batch may weigh nothing: another carries it)."""
    if sample_weight is None:
        return None
    weights = validate_vector(sample_weight, "sample_weight", dtype, n_rows, finite)
    if np.any(weights < 0):
        raise ValidationError("sample_weight must be non-negative")
    if positive_sum and not np.sum(weights, dtype=np.float64) > 0:
        raise ValidationError(ALL_ZERO_WEIGHTS_MESSAGE)
    return weights


def feature_names_of(X: Any) -> Optional[np.ndarray]:
    """String column names of a frame-like X; None for positional columns.

    Raises when the names mix strings and non-strings.
    """
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    names = list(columns)
    string_flags = [isinstance(name, str) for name in names]
    if names and all(string_flags):
        return np.asarray(names, dtype=object)
    if any(string_flags):
        raise ValidationError("X feature names must either all be strings or all be non-strings")
    return None


def check_feature_names(fitted_names: Optional[np.ndarray], X: Any) -> Optional[np.ndarray]:
    """Names of X, checked against the recorded ones when both sides have string names."""
    names = feature_names_of(X)
    if fitted_names is not None and names is not None:
        if len(names) != len(fitted_names) or not np.array_equal(names, fitted_names):
            raise ValidationError("X feature names must match the names and order used during the first batch")
    return names
