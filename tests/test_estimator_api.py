"""RenewableHuberRegressor's public surface: parameters, fitted attributes, state_,
diagnostics_, predict/score, dtype policy, warnings and atomic updates."""

from __future__ import annotations

import dataclasses
import json
import math
import warnings

import numpy as np
import pytest

import renewable_huber
from renewable_huber import (
    BackendUnavailableError,
    NotFittedError,
    RenewableHuberError,
    RenewableHuberRegressor,
    ValidationError,
)
from renewable_huber.backends.numpy_backend import NumpyBackend
from renewable_huber.core import UpdateDiagnostics
from renewable_huber.exceptions import BackendContractError, ConvergenceWarning
from renewable_huber.state import RenewableHuberState

NOT_FITTED = "Call fit or partial_fit before using this estimator"
TAU = 1.345


def huber_loss(r, tau=TAU):
    a = np.abs(r)
    return np.where(a <= tau, 0.5 * r * r, tau * a - 0.5 * tau * tau)


def exact_model(coef, intercept=None, dtype="float64"):
    """A model whose coefficients are exactly ``coef`` (+ intercept), via load_state_dict."""
    coef = np.asarray(coef, dtype=float)
    fit_intercept = intercept is not None
    theta = np.r_[coef, intercept] if fit_intercept else coef
    d = theta.size
    config = {"backend": "numpy", "fit_intercept": fit_intercept, "dtype": dtype}
    return RenewableHuberRegressor().load_state_dict(
        {
            "config": config,
            "coefficients": theta,
            "information": np.eye(d),
            "n_samples_seen": 10,
            "batch_count": 1,
            "previous_lambda": 0.0,
            "n_features_in": coef.size,
            "fit_intercept": fit_intercept,
            "weight_sum": 10.0,
            "feature_names_in": None,
        }
    )


# ---------------------------------------------------------------- package surface


def test_package_exports():
    for name in ("RenewableHuberRegressor", "RenewableHuberError", "NotFittedError", "BackendUnavailableError", "ValidationError"):
        assert name in renewable_huber.__all__ and hasattr(renewable_huber, name)
    assert isinstance(renewable_huber.__version__, str) and renewable_huber.__version__


def test_exception_hierarchy():
    assert issubclass(NotFittedError, RenewableHuberError)
    assert issubclass(BackendUnavailableError, RenewableHuberError)
    assert issubclass(ValidationError, RenewableHuberError) and issubclass(ValidationError, ValueError)
    assert issubclass(BackendContractError, RenewableHuberError) and issubclass(BackendContractError, TypeError)
    assert issubclass(RenewableHuberError, Exception)


# ---------------------------------------------------------------- set_params / reset


def test_set_params_rejects_unknown_names_sorted_and_assigns_nothing(raises_exact, make_data):
    X, y, _ = make_data()
    model = RenewableHuberRegressor(backend="numpy").fit(X, y)
    with raises_exact(ValueError, "Unknown parameter(s): alpha, beta"):
        model.set_params(tau=3.0, beta=1, alpha=2)
    assert model.tau == 1.345 and model.__sklearn_is_fitted__()
    with raises_exact(ValueError, "Unknown parameter(s): zeta"):
        model.set_params(zeta=None)


def test_set_params_assigns_resets_returns_self_and_does_not_validate(make_data):
    X, y, _ = make_data()
    model = RenewableHuberRegressor(backend="numpy").fit(X, y)
    assert model.set_params(tau=-1.0, penalty="l1") is model
    assert model.tau == -1.0 and model.penalty == "l1"
    assert not model.__sklearn_is_fitted__()
    assert not hasattr(model, "coef_") and not hasattr(model, "n_samples_seen_")
    assert model.set_params() is model


def test_reset_drops_state_diagnostics_and_every_fitted_attribute(make_data):
    X, y, _ = make_data()
    model = RenewableHuberRegressor().fit(X, y)
    fitted = [name for name in vars(model) if name.endswith("_") and not name.startswith("_")]
    assert {"coef_", "intercept_", "n_features_in_", "n_samples_seen_", "n_iter_", "backend_", "device_", "n_jobs_"} <= set(fitted)
    assert model.reset() is model
    assert not model.__sklearn_is_fitted__()
    for name in fitted:
        assert not hasattr(model, name), name
    with pytest.raises(NotFittedError, match="^No batch has been processed$"):
        model.diagnostics_
    with pytest.raises(NotFittedError, match=f"^{NOT_FITTED}$"):
        model.state_
    assert model.get_params()["tau"] == 1.345  # parameters survive


def test_not_fitted_errors(raises_exact):
    model = RenewableHuberRegressor()
    assert not model.__sklearn_is_fitted__()
    with raises_exact(NotFittedError, NOT_FITTED):
        model.predict([[1.0]])
    with raises_exact(NotFittedError, NOT_FITTED):
        model.score([[1.0]], [1.0])
    with raises_exact(NotFittedError, NOT_FITTED):
        model.state_
    with raises_exact(NotFittedError, NOT_FITTED):
        model.state_dict()
    with raises_exact(NotFittedError, "No batch has been processed"):
        model.diagnostics_
    assert not hasattr(model, "diagnostics_")


# ---------------------------------------------------------------- fitted attributes


def test_fitted_attributes_after_partial_fits(make_data):
    X, y, _ = make_data(n=90, p=4)
    model = RenewableHuberRegressor(backend="numpy")
    model.partial_fit(X[:30], y[:30])
    assert model.__sklearn_is_fitted__()
    model.partial_fit(X[30:], y[30:], sample_weight=np.full(60, 0.5))
    assert model.coef_.shape == (4,) and model.coef_.dtype == np.float64 and isinstance(model.coef_, np.ndarray)
    assert type(model.intercept_) is float
    assert model.n_features_in_ == 4
    assert model.n_samples_seen_ == 90 and type(model.n_samples_seen_) is int
    assert model.n_iter_ == model.diagnostics_.iterations and type(model.n_iter_) is int
    assert model.backend_ == "numpy" and model.device_ == "cpu" and model.n_jobs_ is None
    assert not hasattr(model, "auto_dispatch_") and not hasattr(model, "cuda_features_")
    assert not hasattr(model, "feature_names_in_")
    state = model.state_
    assert isinstance(state, RenewableHuberState)
    np.testing.assert_array_equal(state.coefficients, np.r_[model.coef_, model.intercept_])
    assert state.information.shape == (5, 5)
    np.testing.assert_allclose(state.information, state.information.T, rtol=1e-12, atol=1e-12)
    assert (state.n_samples_seen, state.batch_count, state.n_features_in, state.fit_intercept) == (90, 2, 4, True)
    assert state.weight_sum == pytest.approx(30 + 30.0)
    assert state.previous_lambda == 0.0


def test_fit_starts_over_while_partial_fit_accumulates(make_data):
    X, y, _ = make_data(n=40)
    model = RenewableHuberRegressor(backend="numpy")
    for _ in range(3):
        model.partial_fit(X, y)
    assert model.n_samples_seen_ == 120 and model.state_.batch_count == 3
    model.fit(X, y)
    assert model.n_samples_seen_ == 40 and model.state_.batch_count == 1
    np.testing.assert_array_equal(model.coef_, RenewableHuberRegressor(backend="numpy").fit(X, y).coef_)


def test_without_intercept(make_data):
    X, y, _ = make_data(intercept=0.0)
    model = RenewableHuberRegressor(backend="numpy", fit_intercept=False).fit(X, y)
    assert model.intercept_ == 0.0 and type(model.intercept_) is float
    assert model.state_.coefficients.shape == (3,) and model.state_.information.shape == (3, 3)
    np.testing.assert_array_equal(model.state_.coefficients, model.coef_)
    np.testing.assert_allclose(model.predict(X), X @ model.coef_, rtol=1e-13)


def test_state_and_coef_are_independent_copies(make_data):
    X, y, _ = make_data()
    model = RenewableHuberRegressor(backend="numpy").fit(X, y)
    before = model.predict(X)
    state = model.state_
    state.coefficients[:] = 99.0
    state.information[:] = -1.0
    assert not np.array_equal(model.state_.coefficients, state.coefficients)
    model.coef_[:] = 0.0  # coef_ is a copy; prediction uses the state
    np.testing.assert_array_equal(model.predict(X), before)
    d = model.state_dict()
    d["coefficients"][:] = 5.0
    np.testing.assert_array_equal(model.predict(X), before)


# ---------------------------------------------------------------- predict / score


def test_predict_is_X_coef_plus_intercept(make_data):
    X, y, _ = make_data(n=50, p=3)
    model = RenewableHuberRegressor(backend="numpy").fit(X, y)
    prediction = model.predict(X)
    assert isinstance(prediction, np.ndarray) and prediction.shape == (50,) and prediction.dtype == np.float64
    np.testing.assert_allclose(prediction, X @ model.coef_ + model.intercept_, rtol=1e-13, atol=1e-13)
    exact = exact_model([1.0, -2.0], intercept=0.5)
    np.testing.assert_array_equal(exact.predict([[1.0, 1.0], [2.0, 0.0]]), [-0.5, 2.5])


def test_score_is_r2_unweighted_and_weighted(make_data, rng):
    from sklearn.metrics import r2_score

    X, y, _ = make_data(n=70)
    model = RenewableHuberRegressor(backend="numpy").fit(X, y)
    w = rng.uniform(0, 3, size=70)
    w[:5] = 0.0
    prediction = model.predict(X)
    score = model.score(X, y)
    assert type(score) is float
    assert score == pytest.approx(r2_score(y, prediction), rel=1e-12)
    weighted = model.score(X, y, sample_weight=w)
    assert type(weighted) is float
    assert weighted == pytest.approx(r2_score(y, prediction, sample_weight=w), rel=1e-12)
    assert weighted != pytest.approx(score, rel=1e-6)
    # zero-weight rows do not count: same as dropping them
    assert weighted == pytest.approx(model.score(X[5:], y[5:], sample_weight=w[5:]), rel=1e-12)


def test_score_with_zero_total_sum_of_squares():
    model = exact_model([0.0, 0.0], intercept=2.5)
    X = np.arange(8.0).reshape(4, 2)
    assert model.score(X, np.full(4, 2.5)) == 1.0  # perfect constant prediction
    assert model.score(X, np.full(4, 3.0)) == 0.0  # constant truth, wrong prediction
    assert type(model.score(X, np.full(4, 3.0))) is float
    # weighted: the non-constant row has zero weight
    assert model.score(X, [2.5, 2.5, 2.5, 9.0], sample_weight=[1, 1, 1, 0]) == 1.0
    assert model.score(X, [2.5, 2.5, 2.5, 9.0], sample_weight=[1, 1, 1, 1]) < 0.0


# ---------------------------------------------------------------- dtype policy


def test_float32_model_keeps_float32_everywhere(make_data):
    X, y, _ = make_data(n=120, p=3)
    model = RenewableHuberRegressor(backend="numpy", dtype="float32")
    model.partial_fit(X[:60], y[:60])
    model.partial_fit(X[60:].astype(np.float32), y[60:].astype(np.int64), sample_weight=np.ones(60, dtype=np.int32))
    state = model.state_
    assert state.coefficients.dtype == np.float32 and state.information.dtype == np.float32
    assert model.coef_.dtype == np.float32
    assert model.predict(X).dtype == np.float32  # float64 input, float32 model
    assert model.predict(X.astype(np.float16)).dtype == np.float32
    assert type(model.intercept_) is float and type(model.score(X, y)) is float
    d = model.state_dict()
    assert d["coefficients"].dtype == np.float32 and d["information"].dtype == np.float32
    reference = RenewableHuberRegressor(backend="numpy", dtype="float64")
    reference.partial_fit(X[:60], y[:60]).partial_fit(X[60:], np.trunc(y[60:]))
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=5e-4, atol=5e-4)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=5e-4, atol=5e-4)


def test_dtype_cannot_silently_change_mid_stream(make_data):
    X, y, _ = make_data()
    model = RenewableHuberRegressor(backend="numpy", dtype="float32").fit(X, y)
    model.dtype = "float64"  # direct assignment bypasses set_params' reset
    with pytest.raises(ValidationError):
        model.partial_fit(X, y)
    assert model.coef_.dtype == np.float32


# ---------------------------------------------------------------- diagnostics and warnings


def test_diagnostics_fields_for_penalty_none(make_data):
    X, y, _ = make_data(n=80, p=3)
    w = np.linspace(0.5, 1.5, 80)
    model = RenewableHuberRegressor(backend="numpy", tol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(X, y, sample_weight=w)
    diag = model.diagnostics_
    assert isinstance(diag, UpdateDiagnostics)
    # the six contract fields first, in order; solve_route and stop_reason are our additions
    assert [f.name for f in dataclasses.fields(diag)] == [
        "iterations", "converged", "objective", "lambda_value", "bandwidth", "used_regularized_fallback",
        "solve_route", "stop_reason",
    ]
    assert diag.solve_route == "lu" and diag.stop_reason == "converged"
    with pytest.raises(dataclasses.FrozenInstanceError):
        diag.iterations = 3  # type: ignore[misc]
    assert type(diag.iterations) is int and diag.iterations >= 1
    assert diag.converged is True
    assert diag.used_regularized_fallback is False
    assert diag.lambda_value == 0.0
    N = w.sum()
    assert diag.bandwidth == pytest.approx(min(1.0 / (math.sqrt(N) * math.log(3)), TAU), rel=1e-12)
    theta = model.state_.coefficients
    residual = y - np.c_[X, np.ones(80)] @ theta
    assert diag.objective == pytest.approx(np.sum(w * huber_loss(residual)) / N, rel=1e-10)
    json.dumps(diag.to_dict())


def test_diagnostics_objective_for_l1_includes_the_penalty(make_data):
    X, y, _ = make_data(n=100, p=5)
    model = RenewableHuberRegressor(backend="numpy", penalty="l1", max_iter=500).fit(X, y)
    diag = model.diagnostics_
    N, p = 100, 5
    lam = TAU * math.sqrt(math.log(p) / N)
    assert diag.lambda_value == pytest.approx(lam, rel=1e-12)
    residual = y - X @ model.coef_ - model.intercept_
    expected = np.sum(huber_loss(residual)) / N + lam * np.sum(np.abs(model.coef_))
    assert diag.objective == pytest.approx(expected, rel=1e-10)
    assert model.state_.previous_lambda == diag.lambda_value


def test_second_batch_objective_includes_the_memory_term(make_data):
    X, y, _ = make_data(n=120)
    model = RenewableHuberRegressor(backend="numpy").partial_fit(X[:60], y[:60])
    first = model.state_
    model.partial_fit(X[60:], y[60:])
    theta = model.state_.coefficients
    shift = theta - first.coefficients
    residual = y[60:] - np.c_[X[60:], np.ones(60)] @ theta
    expected = (np.sum(huber_loss(residual)) + 0.5 * shift @ first.information @ shift) / 120
    assert model.diagnostics_.objective == pytest.approx(expected, rel=1e-10)


def test_max_iter_one_warns_but_commits_the_batch(make_data):
    X, y, _ = make_data(n=60, outliers=3)
    model = RenewableHuberRegressor(backend="numpy", max_iter=1)
    with pytest.warns(ConvergenceWarning) as record:
        model.fit(X, y)
    assert len(record) == 1
    message = str(record[0].message)
    assert "stop_reason='max_iter'" in message and "increase max_iter" in message
    diag = model.diagnostics_
    assert diag.converged is False and diag.iterations == 1 and model.n_iter_ == 1
    assert diag.stop_reason == "max_iter"
    assert model.n_samples_seen_ == 60 and np.all(np.isfinite(model.coef_))


def test_convergence_warning_is_sklearns_when_installed():
    from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

    assert issubclass(ConvergenceWarning, SklearnConvergenceWarning)


def test_a_converging_fit_emits_no_warning(make_data):
    X, y, _ = make_data(n=200, outliers=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RenewableHuberRegressor(backend="numpy").fit(X, y)
        RenewableHuberRegressor(backend="numpy", penalty="l1").fit(X, y)


# ---------------------------------------------------------------- atomic updates on backend failure


def test_backend_failure_leaves_the_model_untouched(make_data, monkeypatch, assert_untouched):
    X, y, _ = make_data(n=60)
    model = RenewableHuberRegressor(backend="numpy").partial_fit(X[:30], y[:30])

    def broken_update(self, *args, **kwargs):
        raise FloatingPointError("simulated numerical failure")

    monkeypatch.setattr(NumpyBackend, "update", broken_update)
    with assert_untouched(model), pytest.raises(FloatingPointError, match="simulated"):
        model.partial_fit(X[30:], y[30:])
    with assert_untouched(model), pytest.raises(FloatingPointError, match="simulated"):
        model.fit(X[30:], y[30:])
    fresh = RenewableHuberRegressor(backend="numpy")
    with assert_untouched(fresh), pytest.raises(FloatingPointError):
        fresh.partial_fit(X, y)
    monkeypatch.undo()
    model.partial_fit(X[30:], y[30:])
    assert model.state_.batch_count == 2


def test_backend_update_never_modifies_the_committed_state(make_data, monkeypatch):
    """Spy on the backend: the state it receives is not mutated in place."""
    X, y, _ = make_data(n=60)
    model = RenewableHuberRegressor(backend="numpy").partial_fit(X[:30], y[:30])
    seen = {}
    original = NumpyBackend.update

    def spying_update(self, state, *args, **kwargs):
        seen["before"] = (state.coefficients.copy(), state.information.copy())
        result = original(self, state, *args, **kwargs)
        seen["after"] = (state.coefficients.copy(), state.information.copy())
        return result

    monkeypatch.setattr(NumpyBackend, "update", spying_update)
    model.partial_fit(X[30:], y[30:])
    for a, b in zip(seen["before"], seen["after"]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_fitted_model_survives_pickle(backend, make_data):
    """scikit-learn's check_estimators_pickle needs this for whatever engine backend="auto" picks."""
    import pickle

    X, y, _ = make_data(n=80)
    model = RenewableHuberRegressor(backend=backend).partial_fit(X[:40], y[:40])
    clone = pickle.loads(pickle.dumps(model))
    assert clone.backend_ == model.backend_
    np.testing.assert_array_equal(clone.predict(X), model.predict(X))
    clone.partial_fit(X[40:], y[40:])
    model.partial_fit(X[40:], y[40:])
    np.testing.assert_array_equal(clone.state_.coefficients, model.state_.coefficients)


def test_fit_reuses_the_engine_of_the_previous_stream_only_when_its_signature_matches():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(50, 2)), rng.normal(size=50)
    model = RenewableHuberRegressor(backend="numpy").fit(X, y)
    engine = model._stream.backend
    model.fit(X, y)
    assert model._stream.backend is engine  # warm workspaces are kept across streams
    model.dtype = "float32"  # attribute assignment keeps the stream, so reuse is considered
    model.fit(X, y)
    assert model._stream.backend is not engine
    assert model.coef_.dtype == np.float32


def test_finite_check_catches_values_whose_sum_overflows_and_nan_among_them():
    from renewable_huber.validation import all_finite

    assert all_finite(np.array([1e308, 1e308]))  # the sum overflows, the values are finite
    assert not all_finite(np.array([1e308, 1e308, np.nan]))
    assert not all_finite(np.array([np.inf, -np.inf]))
    assert all_finite(np.zeros((3, 0)))
