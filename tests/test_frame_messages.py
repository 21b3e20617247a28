"""Errors for real DataFrames (frame_columns.py): the contract's message stays
(scikit-learn's checks look for it) and says which column, of which dtype,
is the problem and what to do, for X, y and sample_weight on every backend."""

from __future__ import annotations

import re

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from renewable_huber import RenewableHuberRegressor, ValidationError  # noqa: E402
from renewable_huber.backends.registry import availability  # noqa: E402

BACKENDS = [
    "numpy",
    pytest.param("native_cpu", marks=pytest.mark.skipif(not availability("native_cpu")[0], reason="native_cpu absent")),
]

X_SHAPE = "X must be a two-dimensional numeric array. Reshape your data."
CAST_TYPE = "float() argument must be a string or a number"
N = 12


def _numbers(seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=N), "b": rng.normal(size=N)})


def _bad_columns():
    """(label, series, the exception type, the words the message must hold)."""
    return [
        ("category", pd.Series(pd.Categorical(["x", "y"] * (N // 2))), ValidationError,
         ["dtype category", "encode the categories as numbers"]),
        ("string", pd.Series(["1.5", "north"] * (N // 2), dtype="string"), ValidationError,
         ["dtype string", "not numeric", "'north'"]),
        # (pandas 3 stores these as its str dtype once in a frame)
        ("object", pd.Series(["1.5", "north"] * (N // 2), dtype=object), ValidationError,
         ["not numeric", "'north'"]),
        ("datetime", pd.Series(pd.date_range("2024-01-01", periods=N)), TypeError,
         ["dtype datetime64", "convert dates or durations to numbers"]),
        ("nullable_int", pd.Series([1, pd.NA] * (N // 2), dtype="Int64"), TypeError,
         ["dtype Int64", "pd.NA", "missing value", "drop or impute"]),
        ("nullable_float", pd.Series([1.0, pd.NA] * (N // 2), dtype="Float64"), TypeError,
         ["dtype Float64", "pd.NA", "missing value"]),
    ]


def _contract_message(exc_type, name):
    if exc_type is TypeError:
        return CAST_TYPE
    return X_SHAPE if name == "X" else f"{name} must be a one-dimensional numeric array"


def _check(excinfo, exc_type, contract, column, words):
    message = str(excinfo.value)
    assert type(excinfo.value) is exc_type, (type(excinfo.value), message)
    assert message.startswith(contract), message
    assert re.search(contract.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)"), message)
    assert f"'{column}'" in message, message
    for word in words:
        assert word in message, (word, message)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("label", [case[0] for case in _bad_columns()])
def test_a_bad_column_of_X_is_named_with_its_dtype(backend, label, assert_untouched):
    """Defect 5 of issue 18: a category or string column got "Reshape your
    data" (X is two-dimensional), a nullable integer with pd.NA or a
    datetime column got "float() argument must be a string or a number"."""
    _, column, exc_type, words = next(case for case in _bad_columns() if case[0] == label)
    frame = _numbers()
    frame["odd one"] = column.array
    y = np.arange(N, dtype=float)
    model = RenewableHuberRegressor(backend=backend).fit(_numbers(1).assign(**{"odd one": np.ones(N)}), y)
    for call in (lambda: model.partial_fit(frame, y), lambda: model.predict(frame),
                 lambda: RenewableHuberRegressor(backend=backend).fit(frame, y)):
        with assert_untouched(model), pytest.raises(exc_type) as excinfo:
            call()
        _check(excinfo, exc_type, _contract_message(exc_type, "X"), "odd one", words)


@pytest.mark.parametrize("name", ["y", "sample_weight"])
@pytest.mark.parametrize("label", [case[0] for case in _bad_columns()])
def test_a_bad_target_or_weight_series_is_named_with_its_dtype(name, label):
    _, column, exc_type, words = next(case for case in _bad_columns() if case[0] == label)
    series = column.rename(f"my {name}")
    contract = _contract_message(exc_type, name)
    if label.startswith("nullable"):
        # A nullable series becomes floats with NaN for pd.NA: the finiteness
        # message, which then says where the NaN came from.
        exc_type, contract = ValidationError, f"{name} must not contain NaN or infinite values"
    y, w = np.arange(N, dtype=float), np.ones(N)
    arguments = {"y": series, "sample_weight": w} if name == "y" else {"y": y, "sample_weight": series}
    with pytest.raises(exc_type) as excinfo:
        RenewableHuberRegressor(backend="numpy").fit(_numbers(), **arguments)
    _check(excinfo, exc_type, contract, f"my {name}", words)


def test_a_mixed_frame_names_the_first_bad_column():
    frame = _numbers()
    frame["when"] = pd.date_range("2024-01-01", periods=N)
    frame["kind"] = pd.Categorical(["x", "y"] * (N // 2))
    with pytest.raises(TypeError) as excinfo:
        RenewableHuberRegressor(backend="numpy").fit(frame, np.arange(N, dtype=float))
    _check(excinfo, TypeError, CAST_TYPE, "when", ["datetime64"])
    assert "'kind'" not in str(excinfo.value)


def test_frames_that_are_numeric_still_work():
    """Nullable Float64/Int64 without missing values, bool, pyarrow-backed and
    numeric categories go through unchanged."""
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({
        "f": pd.array(np.linspace(0, 1, N), dtype="Float64"),
        "i": pd.array(np.arange(N), dtype="Int64"),
        "b": [True, False] * (N // 2),
        "p": pd.array(np.linspace(1, 2, N) ** 2, dtype="float64[pyarrow]"),
    })
    y = np.linspace(0, 3, N)
    model = RenewableHuberRegressor(backend="numpy").fit(frame, y)
    reference = RenewableHuberRegressor(backend="numpy").fit(frame.astype(float).to_numpy(), y)
    np.testing.assert_array_equal(model.coef_, reference.coef_)
