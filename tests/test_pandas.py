"""pandas inputs: feature names, Series targets and weights, positional columns."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from renewable_huber import RenewableHuberRegressor, ValidationError  # noqa: E402

MISMATCH = "X feature names must match the names and order used during the first batch"
MIXED = "X feature names must either all be strings or all be non-strings"


@pytest.fixture
def frame(rng):
    X = rng.normal(size=(60, 3))
    df = pd.DataFrame(X, columns=["height", "width", "depth"])
    y = pd.Series(X @ [1.0, -2.0, 0.5] + 1.0 + 0.1 * rng.normal(size=60), name="target")
    return df, y


def test_string_columns_are_recorded(frame):
    df, y = frame
    model = RenewableHuberRegressor(backend="numpy").fit(df, y)
    names = model.feature_names_in_
    assert isinstance(names, np.ndarray) and names.dtype == object
    assert names.tolist() == ["height", "width", "depth"]
    reference = RenewableHuberRegressor(backend="numpy").fit(df.to_numpy(), y.to_numpy())
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    np.testing.assert_array_equal(model.predict(df), reference.predict(df.to_numpy()))


def test_reordered_or_renamed_columns_fail_in_predict_and_partial_fit(frame, raises_exact, assert_untouched):
    df, y = frame
    model = RenewableHuberRegressor(backend="numpy").fit(df, y)
    for bad in (df[["width", "height", "depth"]], df.rename(columns={"depth": "length"}), df[["height", "width"]]):
        with assert_untouched(model), raises_exact(ValidationError, MISMATCH):
            model.predict(bad)
        with assert_untouched(model), raises_exact(ValidationError, MISMATCH):
            model.partial_fit(bad, y)
    model.partial_fit(df, y)  # the same names in the same order are fine
    assert model.n_samples_seen_ == 120


def test_series_target_and_weights(frame, rng):
    df, y = frame
    w = pd.Series(rng.integers(1, 4, size=60).astype(float), index=df.index)
    model = RenewableHuberRegressor(backend="numpy").fit(df, y, sample_weight=w)
    reference = RenewableHuberRegressor(backend="numpy").fit(df.to_numpy(), y.to_numpy(), sample_weight=w.to_numpy())
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    assert model.state_.weight_sum == pytest.approx(w.sum())
    score = model.score(df, y, sample_weight=w)
    assert type(score) is float and score == pytest.approx(reference.score(df.to_numpy(), y.to_numpy(), w.to_numpy()))


def test_series_with_a_shuffled_index_is_used_positionally(frame):
    df, y = frame
    shuffled = pd.Series(y.to_numpy(), index=df.index[::-1])
    a = RenewableHuberRegressor(backend="numpy").fit(df, shuffled)
    b = RenewableHuberRegressor(backend="numpy").fit(df, y.to_numpy())
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_non_string_columns_are_positional(frame):
    df, y = frame
    positional = pd.DataFrame(df.to_numpy())  # RangeIndex columns 0, 1, 2
    model = RenewableHuberRegressor(backend="numpy").fit(positional, y)
    assert not hasattr(model, "feature_names_in_")
    model.partial_fit(df, y)  # the model has no names to compare with
    np.testing.assert_array_equal(model.predict(df[["depth", "width", "height"]]), model.predict(df.to_numpy()[:, ::-1]))


def test_mixed_column_names_are_rejected(frame, raises_exact, assert_untouched):
    df, y = frame
    mixed = df.copy()
    mixed.columns = ["height", 1, "depth"]
    model = RenewableHuberRegressor(backend="numpy")
    with assert_untouched(model), raises_exact(ValidationError, MIXED):
        model.fit(mixed, y)
    fitted = RenewableHuberRegressor(backend="numpy").fit(df, y)
    with assert_untouched(fitted), raises_exact(ValidationError, MIXED):
        fitted.predict(mixed)


def test_names_are_checked_before_shape(frame, raises_exact, assert_untouched):
    df, y = frame
    model = RenewableHuberRegressor(backend="numpy").fit(df, y)
    wide = pd.DataFrame(np.zeros((4, 5)), columns=list("abcde"))
    with assert_untouched(model), raises_exact(ValidationError, MISMATCH):
        model.predict(wide)
    with assert_untouched(model), raises_exact(ValidationError, MISMATCH):
        model.partial_fit(wide, np.zeros(4))


def test_nan_in_a_frame_is_rejected(frame, raises_exact, assert_untouched):
    df, y = frame
    model = RenewableHuberRegressor(backend="numpy").fit(df, y)
    holes = df.copy()
    holes.iloc[3, 1] = np.nan
    with assert_untouched(model), raises_exact(ValidationError, "X must not contain NaN or infinite values"):
        model.partial_fit(holes, y)
    with assert_untouched(model), raises_exact(ValidationError, "y must not contain NaN or infinite values"):
        model.partial_fit(df, y.where(y > y.min()))


def test_integer_and_bool_columns_are_cast(frame):
    df, y = frame
    ints = pd.DataFrame({"a": np.arange(60) % 7, "b": (np.arange(60) % 3 == 0)})
    model = RenewableHuberRegressor(backend="numpy").fit(ints, y)
    reference = RenewableHuberRegressor(backend="numpy").fit(ints.to_numpy(dtype=float), y.to_numpy())
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    assert model.feature_names_in_.tolist() == ["a", "b"]
