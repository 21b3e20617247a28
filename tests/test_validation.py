"""Input rules of fit / partial_fit / predict / score: every documented message,
the order of the checks, and that a failing call leaves the model exactly as it was."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from renewable_huber import NotFittedError, RenewableHuberRegressor, ValidationError
from renewable_huber.backends import availability

SPARSE = "Sparse data was passed, but renewable-huber requires dense input; convert explicitly with X.toarray()"
CAST_TYPE = "float() argument must be a string or a number"
X_SHAPE = "X must be a two-dimensional numeric array. Reshape your data."
NAMES_MISMATCH = "X feature names must match the names and order used during the first batch"
NAMES_MIXED = "X feature names must either all be strings or all be non-strings"

_rng = np.random.default_rng(7)
X0 = _rng.normal(size=(8, 3))
Y0 = X0 @ [1.0, -1.0, 2.0] + 0.3 + 0.1 * _rng.normal(size=8)
W0 = np.linspace(0.5, 2.0, 8)


def _with(array, index, value):
    out = np.array(array, dtype=float)
    out[index] = value
    return out


# id -> (X, y, sample_weight, exception type, message); valid for any model with 3 features
BATCH_CASES = {
    "sparse-X-csr": (sp.csr_matrix(X0), Y0, None, TypeError, SPARSE),
    "sparse-X-coo-array": (sp.coo_array(X0), Y0, None, TypeError, SPARSE),
    "sparse-y": (X0, sp.csr_matrix(Y0.reshape(-1, 1)), None, TypeError, SPARSE),
    "sparse-weight": (X0, Y0, sp.csr_matrix(W0.reshape(-1, 1)), TypeError, SPARSE),
    "complex-X": (X0 + 0j, Y0, None, ValidationError, "Complex data not supported for X"),
    "complex-X-object": (np.array([[1.0, 2.0, 1j]] * 8, dtype=object), Y0, None, ValidationError, "Complex data not supported for X"),
    "complex-X-object-complex64": (
        np.array([[1.0, 2.0, np.complex64(1j)]] * 8, dtype=object), Y0, None, ValidationError, "Complex data not supported for X",
    ),
    "complex-y-object": (X0, np.array([np.complex64(1 + 1j)] + [1.0] * 7, dtype=object), None, ValidationError, "Complex data not supported for y"),
    "complex-y": (X0, Y0 + 1j, None, ValidationError, "Complex data not supported for y"),
    "complex-weight": (X0, Y0, W0 + 0j, ValidationError, "Complex data not supported for sample_weight"),
    "cast-type-X": ([[object(), 1.0, 2.0]] * 8, Y0, None, TypeError, CAST_TYPE),
    "cast-type-y": (X0, [{}] * 8, None, TypeError, CAST_TYPE),
    "cast-type-weight": (X0, Y0, [{}] * 8, TypeError, CAST_TYPE),
    "cast-value-X": ([["a", "b", "c"]] * 8, Y0, None, ValidationError, X_SHAPE),
    "cast-value-y": (X0, ["x"] * 8, None, ValidationError, "y must be a one-dimensional numeric array"),
    "cast-value-weight": (X0, Y0, ["w"] * 8, ValidationError, "sample_weight must be a one-dimensional numeric array"),
    "ragged-X": ([[1.0, 2.0, 3.0], [1.0, 2.0]], [1.0, 2.0], None, ValidationError, X_SHAPE),
    "X-1d": (X0[:, 0], Y0, None, ValidationError, X_SHAPE),
    "X-3d": (X0.reshape(8, 3, 1), Y0, None, ValidationError, X_SHAPE),
    "X-scalar": (3.0, [1.0], None, ValidationError, X_SHAPE),
    "zero-rows": (
        np.empty((0, 3)), np.empty(0), None, ValidationError,
        "Found array with 0 sample(s) (shape=(0, 3)) while a minimum of 1 is required.",
    ),
    "zero-columns": (
        np.empty((5, 0)), np.ones(5), None, ValidationError,
        "0 feature(s) (shape=(5, 0)) while a minimum of 1 is required.",
    ),
    "nan-X": (_with(X0, (2, 1), np.nan), Y0, None, ValidationError, "X must not contain NaN or infinite values"),
    "inf-X": (_with(X0, (0, 0), np.inf), Y0, None, ValidationError, "X must not contain NaN or infinite values"),
    "neg-inf-X": (_with(X0, (7, 2), -np.inf), Y0, None, ValidationError, "X must not contain NaN or infinite values"),
    "nan-y": (X0, _with(Y0, 3, np.nan), None, ValidationError, "y must not contain NaN or infinite values"),
    "inf-y": (X0, _with(Y0, 0, -np.inf), None, ValidationError, "y must not contain NaN or infinite values"),
    "nan-weight": (X0, Y0, _with(W0, 1, np.nan), ValidationError, "sample_weight must not contain NaN or infinite values"),
    "inf-weight": (X0, Y0, _with(W0, 1, np.inf), ValidationError, "sample_weight must not contain NaN or infinite values"),
    "y-too-short": (X0, Y0[:-1], None, ValidationError, "X and y must contain the same number of samples"),
    "y-too-long": (X0, np.r_[Y0, 1.0], None, ValidationError, "X and y must contain the same number of samples"),
    "y-2-columns": (X0, np.c_[Y0, Y0], None, ValidationError, "X and y must contain the same number of samples"),
    "weight-length": (X0, Y0, W0[:5], ValidationError, "sample_weight and X must contain the same number of samples"),
    "weight-negative": (X0, Y0, _with(W0, 4, -1e-3), ValidationError, "sample_weight must be non-negative"),
    "weight-all-zero": (X0, Y0, np.zeros(8), ValidationError, "sample_weight cannot be all zero"),
    # order of the checks
    "order-sparse-X-before-complex-y": (sp.csr_matrix(X0), Y0 + 1j, None, TypeError, SPARSE),
    "order-complex-X-before-sparse-y": (X0 + 0j, sp.csr_matrix(Y0.reshape(-1, 1)), None, ValidationError, "Complex data not supported for X"),
    "order-X-shape-before-y-length": (X0[:, 0], Y0[:3], None, ValidationError, X_SHAPE),
    "order-X-finite-before-y-length": (_with(X0, (0, 0), np.nan), Y0[:3], None, ValidationError, "X must not contain NaN or infinite values"),
    "order-y-length-before-y-finite": (X0, _with(Y0, 0, np.nan)[:5], None, ValidationError, "X and y must contain the same number of samples"),
    "order-y-finite-before-weight-length": (X0, _with(Y0, 0, np.nan), W0[:2], ValidationError, "y must not contain NaN or infinite values"),
    "order-weight-finite-before-negative": (X0, Y0, _with(_with(W0, 0, -1.0), 1, np.nan), ValidationError, "sample_weight must not contain NaN or infinite values"),
    "order-negative-before-all-zero": (X0, Y0, _with(np.zeros(8), 0, -1.0), ValidationError, "sample_weight must be non-negative"),
}

# only for a model that has already seen 3 features
WIDTH = "X has 2 features, but RenewableHuberRegressor is expecting 3 features as input"
STREAM_CASES = {
    "wrong-width": (X0[:, :2], Y0, None, ValidationError, WIDTH),
    "wrong-width-wider": (
        np.c_[X0, X0], Y0, None, ValidationError,
        "X has 6 features, but RenewableHuberRegressor is expecting 3 features as input",
    ),
    "order-width-before-finite": (_with(X0[:, :2], (0, 0), np.nan), Y0, None, ValidationError, WIDTH),
    "order-zero-rows-before-width": (
        np.empty((0, 2)), np.empty(0), None, ValidationError,
        "Found array with 0 sample(s) (shape=(0, 2)) while a minimum of 1 is required.",
    ),
}


def fitted_model(backend: str = "numpy", **params) -> RenewableHuberRegressor:
    model = RenewableHuberRegressor(backend=backend, **params)
    model.partial_fit(X0, Y0, W0)
    model.partial_fit(X0[::-1] * 0.5, Y0 + 1.0)
    return model


def _cpu_backend(name: str):
    available, hint = availability(name)
    return pytest.param(name, id=name, marks=[] if available else pytest.mark.skip(reason=f"{name}: {hint}"))


# The native engine tests X's finiteness itself (checks_X_finite), so the
# estimator's order of the checks must come out the same through it.
CPU_BACKENDS = [_cpu_backend("numpy"), _cpu_backend("native_cpu")]


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("case", list(BATCH_CASES))
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_unfitted_model_rejects_bad_batch_and_stays_unfitted(case, method, backend, raises_exact, assert_untouched):
    X, y, w, exc, message = BATCH_CASES[case]
    model = RenewableHuberRegressor(backend=backend)
    with assert_untouched(model), raises_exact(exc, message):
        getattr(model, method)(X, y, sample_weight=w)
    assert not model.__sklearn_is_fitted__()
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("case", list(BATCH_CASES) + list(STREAM_CASES))
def test_partial_fit_rejects_bad_batch_and_keeps_the_stream(case, backend, raises_exact, assert_untouched):
    X, y, w, exc, message = {**BATCH_CASES, **STREAM_CASES}[case]
    model = fitted_model(backend=backend)
    with assert_untouched(model), raises_exact(exc, message):
        model.partial_fit(X, y, sample_weight=w)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("case", list(BATCH_CASES))
def test_failed_fit_keeps_the_previous_model(case, backend, raises_exact, assert_untouched):
    X, y, w, exc, message = BATCH_CASES[case]
    model = fitted_model(backend=backend, penalty="l1")
    with assert_untouched(model), raises_exact(exc, message):
        model.fit(X, y, sample_weight=w)
    # the kept model still works and continues its stream
    model.partial_fit(X0, Y0)
    assert model.state_.batch_count == 3


def test_failed_fit_on_bad_parameter_keeps_the_previous_model(raises_exact, assert_untouched):
    model = fitted_model()
    model.tau = -1.0  # direct assignment: set_params would reset the model
    with assert_untouched(model), raises_exact(ValidationError, "tau must be greater than zero"):
        model.fit(X0, Y0)
    with assert_untouched(model), raises_exact(ValidationError, "tau must be greater than zero"):
        model.partial_fit(X0, Y0)


def test_fit_accepts_wider_data_because_it_starts_a_new_stream():
    model = fitted_model()
    model.fit(np.c_[X0, X0[:, :1]], Y0)
    assert model.n_features_in_ == 4 and model.coef_.shape == (4,)
    assert model.n_samples_seen_ == 8 and model.state_.batch_count == 1


# ---------------------------------------------------------------- host casting


XI = np.round(X0 * 2)  # small integers: exact in every numeric type below
YI = XI @ [0.5, -0.5, 1.0] + 0.3 + 0.1 * _rng.normal(size=8)


@pytest.mark.parametrize(
    "convert",
    [
        lambda a: a.astype(np.int64),
        lambda a: a.astype(np.int8),
        lambda a: a.astype(np.float16).astype(object),
        lambda a: a.tolist(),
        lambda a: np.asfortranarray(a),
    ],
    ids=["int64", "int8", "object", "list", "fortran"],
)
def test_numeric_host_inputs_are_cast_to_the_model_dtype(convert):
    reference = RenewableHuberRegressor(backend="numpy").fit(XI, YI, sample_weight=np.ones(8))
    model = RenewableHuberRegressor(backend="numpy").fit(convert(XI), YI.tolist(), sample_weight=convert(np.ones(8)))
    assert model.coef_.dtype == np.float64
    # the cast is exact; only the memory layout (fortran) may change BLAS rounding
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(model.predict(convert(XI)), reference.predict(XI), rtol=1e-13, atol=1e-15)


def test_bool_and_float16_inputs_are_cast_not_computed_in():
    Xb = X0 > 0
    model = RenewableHuberRegressor(backend="numpy").fit(Xb, Y0)
    reference = RenewableHuberRegressor(backend="numpy").fit(Xb.astype(float), Y0)
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    model32 = RenewableHuberRegressor(backend="numpy", dtype="float32").fit(X0.astype(np.float16), Y0.astype(np.float16))
    assert model32.coef_.dtype == np.float32
    assert model32.state_.information.dtype == np.float32
    assert model32.predict(X0.astype(np.float16)).dtype == np.float32


def test_y_column_vector_is_flattened():
    a = RenewableHuberRegressor(backend="numpy").fit(X0, Y0.reshape(-1, 1), W0.reshape(-1, 1))
    b = RenewableHuberRegressor(backend="numpy").fit(X0, Y0, W0)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_some_zero_weights_are_accepted():
    model = RenewableHuberRegressor(backend="numpy").fit(X0, Y0, _with(np.zeros(8), 0, 1.0) + _with(np.zeros(8), 5, 2.0))
    assert model.n_samples_seen_ == 8


# ---------------------------------------------------------------- predict / score


PREDICT_CASES = {
    "sparse": (sp.csr_matrix(X0), TypeError, SPARSE),
    "complex": (X0 * 1j, ValidationError, "Complex data not supported for X"),
    "cast-type": ([[object(), 1.0, 2.0]], TypeError, CAST_TYPE),
    "cast-value": ([["1", "2", "three"]], ValidationError, X_SHAPE),
    "1d": (X0[0], ValidationError, X_SHAPE),
    "zero-rows": (np.empty((0, 3)), ValidationError, "Found array with 0 sample(s) (shape=(0, 3)) while a minimum of 1 is required."),
    "zero-columns": (np.empty((4, 0)), ValidationError, "0 feature(s) (shape=(4, 0)) while a minimum of 1 is required."),
    "wrong-width": (X0[:, :2], ValidationError, WIDTH),
    "nan": (_with(X0, (1, 1), np.nan), ValidationError, "X must not contain NaN or infinite values"),
    "inf": (_with(X0, (1, 1), np.inf), ValidationError, "X must not contain NaN or infinite values"),
    "width-before-finite": (np.full((3, 2), np.nan), ValidationError, WIDTH),
}


@pytest.mark.parametrize("case", list(PREDICT_CASES))
def test_predict_and_score_reject_bad_X(case, raises_exact, assert_untouched):
    X, exc, message = PREDICT_CASES[case]
    model = fitted_model()
    with assert_untouched(model), raises_exact(exc, message):
        model.predict(X)
    with assert_untouched(model), raises_exact(exc, message):
        model.score(X, np.ones(8))


SCORE_CASES = {
    "y-length": (Y0[:3], None, ValidationError, "X and y must contain the same number of samples"),
    "y-nan": (_with(Y0, 0, np.nan), None, ValidationError, "y must not contain NaN or infinite values"),
    "y-sparse": (sp.csr_matrix(Y0.reshape(-1, 1)), None, TypeError, SPARSE),
    "y-complex": (Y0 + 1j, None, ValidationError, "Complex data not supported for y"),
    "w-length": (Y0, W0[:2], ValidationError, "sample_weight and X must contain the same number of samples"),
    "w-negative": (Y0, -W0, ValidationError, "sample_weight must be non-negative"),
    "w-zero": (Y0, np.zeros(8), ValidationError, "sample_weight cannot be all zero"),
    "w-inf": (Y0, _with(W0, 2, np.inf), ValidationError, "sample_weight must not contain NaN or infinite values"),
}


@pytest.mark.parametrize("case", list(SCORE_CASES))
def test_score_rejects_bad_y_and_weights(case, raises_exact, assert_untouched):
    y, w, exc, message = SCORE_CASES[case]
    model = fitted_model()
    with assert_untouched(model), raises_exact(exc, message):
        model.score(X0, y, sample_weight=w)


@pytest.mark.parametrize("X", [X0, sp.csr_matrix(X0), np.full((2, 3), np.nan)], ids=["dense", "sparse", "nan"])
def test_unfitted_predict_and_score_raise_not_fitted_first(X, raises_exact, assert_untouched):
    model = RenewableHuberRegressor(backend="numpy")
    message = "Call fit or partial_fit before using this estimator"
    with assert_untouched(model), raises_exact(NotFittedError, message):
        model.predict(X)
    with raises_exact(NotFittedError, message):
        model.score(X, np.ones(X.shape[0]))


# ---------------------------------------------------------------- feature names (any object with `columns`)


class Frame:
    """The smallest frame-like object: ``columns`` and ``to_numpy``."""

    def __init__(self, data, columns):
        self._data = np.asarray(data)
        self.columns = list(columns)

    def to_numpy(self):
        return self._data


def test_string_columns_are_recorded_as_an_object_array():
    model = RenewableHuberRegressor(backend="numpy").fit(Frame(X0, ["a", "b", "c"]), Y0)
    names = model.feature_names_in_
    assert isinstance(names, np.ndarray) and names.dtype == object
    assert names.tolist() == ["a", "b", "c"]
    assert model.state_dict()["feature_names_in"] == ["a", "b", "c"]


def test_non_string_columns_are_positional():
    model = RenewableHuberRegressor(backend="numpy").fit(Frame(X0, [0, 1, 2]), Y0)
    assert not hasattr(model, "feature_names_in_")
    assert model.state_dict()["feature_names_in"] is None
    model.partial_fit(Frame(X0, ["x", "y", "z"]), Y0)  # no names on the model side: accepted
    assert not hasattr(model, "feature_names_in_")


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_mixed_names_are_rejected(method, raises_exact, assert_untouched):
    for model in (RenewableHuberRegressor(backend="numpy"), fitted_model()):
        with assert_untouched(model), raises_exact(ValidationError, NAMES_MIXED):
            getattr(model, method)(Frame(X0, ["a", 1, "c"]), Y0)


@pytest.mark.parametrize(
    "columns,data",
    [
        (["a", "c", "b"], X0),  # reordered
        (["a", "b", "d"], X0),  # renamed
        (["a", "b"], X0[:, :2]),  # fewer: names are checked before the width
        (["a", "b", "c", "d"], np.c_[X0, X0[:, :1]]),  # more
        (["a", "b", "c", "d"], X0[:, :2]),
    ],
)
def test_later_batches_and_predict_need_the_same_names_in_order(columns, data, raises_exact, assert_untouched):
    model = RenewableHuberRegressor(backend="numpy").fit(Frame(X0, ["a", "b", "c"]), Y0)
    with assert_untouched(model), raises_exact(ValidationError, NAMES_MISMATCH):
        model.partial_fit(Frame(data, columns), Y0[: len(data)])
    with assert_untouched(model), raises_exact(ValidationError, NAMES_MISMATCH):
        model.predict(Frame(data, columns))
    with assert_untouched(model), raises_exact(ValidationError, NAMES_MIXED):
        model.predict(Frame(X0, ["a", 2, "c"]))


def test_names_checked_before_other_input_errors(raises_exact, assert_untouched):
    model = RenewableHuberRegressor(backend="numpy").fit(Frame(X0, ["a", "b", "c"]), Y0)
    bad = Frame(np.full((2, 5), np.nan), list("vwxyz"))
    with assert_untouched(model), raises_exact(ValidationError, NAMES_MISMATCH):
        model.partial_fit(bad, [1.0])


def test_same_names_and_unnamed_arrays_are_accepted_after_a_named_batch():
    model = RenewableHuberRegressor(backend="numpy").fit(Frame(X0, ["a", "b", "c"]), Y0)
    model.partial_fit(Frame(X0, ["a", "b", "c"]), Y0)
    model.partial_fit(X0, Y0)
    np.testing.assert_array_equal(model.predict(Frame(X0, ["a", "b", "c"])), model.predict(X0))
    assert model.feature_names_in_.tolist() == ["a", "b", "c"]


def test_fit_with_new_names_replaces_the_recorded_names():
    model = RenewableHuberRegressor(backend="numpy").fit(Frame(X0, ["a", "b", "c"]), Y0)
    model.fit(Frame(X0, ["c", "b", "a"]), Y0)
    assert model.feature_names_in_.tolist() == ["c", "b", "a"]
    model.fit(X0, Y0)
    assert not hasattr(model, "feature_names_in_")
