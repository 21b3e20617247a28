"""What is wrong with a DataFrame's (or Series') columns, in words a user can act on.

The validators (validation.py) keep the contract's messages, which
scikit-learn's checks look for; when the input is a pandas-like frame or
series, this module finds the first column that cannot become numbers and
says which one, of which dtype, and what to do. It runs only after a cast
failed (or, for dates, before the cast: NumPy would turn them silently into
nanoseconds), so numeric frames pay nothing for it.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

import numpy as np


def is_frame_like(value: Any) -> bool:
    """A pandas-like DataFrame (``dtypes`` and ``columns``) or Series (``dtype`` and ``name``)."""
    if isinstance(value, np.ndarray):
        return False
    if hasattr(value, "dtypes") and hasattr(value, "columns"):
        return True
    return hasattr(value, "dtype") and hasattr(value, "name") and hasattr(value, "to_numpy")


def _columns(value: Any) -> Iterator[tuple[str, Any]]:
    """(label, series) for every column: "column 'a'" in a frame, "series 'y'" alone."""
    if hasattr(value, "columns"):
        for index in range(len(value.columns)):
            yield f"column {value.columns[index]!r}", value.iloc[:, index]
    else:
        label = "series" if value.name is None else f"series {value.name!r}"
        yield label, value


def _kind(dtype: Any) -> str:
    """"date", "category", "nullable", "numeric" or "other" for a column dtype."""
    numpy_dtype = dtype if isinstance(dtype, np.dtype) else getattr(dtype, "numpy_dtype", None)
    kind = getattr(numpy_dtype, "kind", None) or getattr(dtype, "kind", "O")
    name = str(dtype)
    if kind in "mM" or name.startswith(("datetime", "timedelta", "date32", "date64", "timestamp", "duration")):
        return "date"
    if name == "category":
        return "category"
    if kind in "biuf" and not isinstance(dtype, np.dtype):
        return "nullable"  # pandas' Int64/Float64/boolean, arrow numbers: may hold pd.NA
    if kind in "biufc":
        return "numeric"
    return "other"


def _date_problem(label: str, dtype: Any) -> str:
    return (
        f"{label} has dtype {dtype}, which is not numeric: "
        "convert dates or durations to numbers, for example seconds since a reference time, before fitting"
    )


def date_column_problem(value: Any) -> Optional[str]:
    """The first date or duration column of a frame-like value, described."""
    for label, column in _columns(value):
        if _kind(column.dtype) == "date":
            return _date_problem(label, column.dtype)
    return None


def _first_non_number(column: Any) -> Optional[Any]:
    for item in column.to_numpy(dtype=object, na_value=None):
        if item is None:
            continue
        try:
            float(item)
        except (TypeError, ValueError):
            return item
    return None


def column_problem(value: Any) -> Optional[str]:
    """The first column of a frame-like value that cannot be cast to floats,
    described with its dtype and what to do; None when none is found."""
    for label, column in _columns(value):
        dtype = column.dtype
        kind = _kind(dtype)
        if kind == "numeric":
            continue
        if kind == "date":
            return _date_problem(label, dtype)
        if kind == "category":
            return (
                f"{label} has dtype category, which is not numeric: encode the categories as numbers, "
                "for example one-hot or ordinal codes, before fitting"
            )
        if bool(column.isna().any()):
            return (
                f"{label} (dtype {dtype}) holds pd.NA, a missing value: drop or impute missing values before fitting"
            )
        if kind == "nullable":
            continue
        offending = _first_non_number(column)
        if offending is not None:
            return (
                f"{label} has dtype {dtype} and holds values that are not numeric, such as {str(offending)[:40]!r}: "
                "encode them as numbers before fitting"
            )
    return None
