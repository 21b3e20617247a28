"""Constructor parameters: defaults, get/set_params, and validation messages in the documented order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor, ValidationError
from renewable_huber.config import PARAMETER_DEFAULTS, PARAMETER_NAMES, SolverConfig, validate_params

DOCUMENTED_DEFAULTS = [
    ("tau", 1.345),
    ("penalty", "none"),
    ("lambda_scale", 1.0),
    ("bandwidth_scale", 1.0),
    ("fit_intercept", True),
    ("max_iter", 100),
    ("tol", 1e-6),
    ("ridge", 1e-8),
    ("backend", "auto"),
    ("device", "auto"),
    ("dtype", "float64"),
    ("n_jobs", None),
    ("cuda_graphs", False),
    ("cuda_fast_math", False),
    ("inference", True),  # amendment 0003 (issue 27): the 15th parameter
]

# (param, bad values, message) in the order of the API.md table
INVALID = [
    ("tau", [0, 0.0, -1.0, math.nan, math.inf, True, "1.0", None], "tau must be greater than zero"),
    ("penalty", ["l2", "L1", "", None, 1], "penalty must be either 'none' or 'l1'"),
    ("lambda_scale", [-0.5, math.nan, math.inf, True, "1", None], "lambda_scale must be non-negative"),
    ("bandwidth_scale", [0, -1.0, math.nan, math.inf, False, None], "bandwidth_scale must be greater than zero"),
    ("max_iter", [0, -3, 1.5, 10.0, True, "10", None], "max_iter must be at least one"),
    ("fit_intercept", [1, 0, "yes", None, np.bool_(True)], "fit_intercept must be a boolean"),
    ("tol", [0, -1e-3, math.nan, math.inf, True, None], "tol must be greater than zero"),
    ("ridge", [-1e-8, math.nan, math.inf, True, None], "ridge must be non-negative"),
    ("backend", ["gpu", "NUMPY", "sklearn", "", None, 0], "unsupported backend"),
    ("device", ["gpu", "CPU", "cuda:", "cuda:-1", "cuda:x", "cuda0", None, 0], "device must be 'auto', 'cpu', or 'cuda'"),
    ("dtype", ["float16", "f8", "double", np.float64, np.dtype("float64"), None], "dtype must be either 'float32' or 'float64'"),
    ("n_jobs", [0, -2, 1.5, True, "2"], "n_jobs must be None, -1, or a positive integer"),
    ("cuda_graphs", [1, None, "true"], "cuda_graphs must be a boolean"),
    ("cuda_fast_math", [0, None, "false"], "cuda_fast_math must be a boolean"),
    ("inference", [1, 0, None, "true", np.bool_(True)], "inference must be a boolean"),
]

VALID = [
    ("tau", [1e-12, 2, np.float32(0.5), np.float64(1e6)]),
    ("penalty", ["none", "l1"]),
    ("lambda_scale", [0, 0.0, 3, np.float64(2.5)]),
    ("bandwidth_scale", [1e-6, 5, np.float32(2.0)]),
    ("max_iter", [1, 5, np.int64(7), np.int32(2)]),
    ("fit_intercept", [True, False]),
    ("tol", [1e-15, 1, np.float64(1e-3)]),
    ("ridge", [0, 0.0, 1.0, np.float64(1e-4)]),
    ("backend", ["auto", "numpy", "native_cpu", "cupy", "native_cuda", "torch", "tensorflow"]),
    ("device", ["auto", "cpu", "cuda", "cuda:0", "cuda:7", "cuda:12"]),
    ("dtype", ["float32", "float64"]),
    ("n_jobs", [None, -1, 1, 8, np.int64(2)]),
    ("cuda_graphs", [True, False]),
    ("cuda_fast_math", [True, False]),
    ("inference", [True, False]),
]


def defaults() -> dict:
    return dict(DOCUMENTED_DEFAULTS)


def test_get_params_returns_the_15_parameters_in_constructor_order_with_defaults():
    params = RenewableHuberRegressor().get_params()
    assert list(params.items()) == DOCUMENTED_DEFAULTS
    assert list(RenewableHuberRegressor().get_params(deep=False)) == [name for name, _ in DOCUMENTED_DEFAULTS]
    assert PARAMETER_NAMES == tuple(name for name, _ in DOCUMENTED_DEFAULTS)


def test_constructor_is_keyword_only_and_stores_values_unvalidated():
    with pytest.raises(TypeError):
        RenewableHuberRegressor(1.0)  # type: ignore[misc]
    model = RenewableHuberRegressor(tau=-5, penalty="bogus", device=3)
    assert model.get_params()["tau"] == -5
    assert model.penalty == "bogus" and model.device == 3


@pytest.mark.parametrize(
    "name,value,message",
    [(name, value, message) for name, values, message in INVALID for value in values],
    ids=lambda v: repr(v)[:20],
)
def test_each_invalid_parameter_gets_its_message_at_fit(name, value, message, raises_exact):
    X, y = np.arange(12.0).reshape(6, 2), np.arange(6.0)
    model = RenewableHuberRegressor(**{name: value})
    with raises_exact(ValidationError, message):
        model.fit(X, y)
    with raises_exact(ValidationError, message):
        model.partial_fit(X, y)
    assert not model.__sklearn_is_fitted__()
    params = defaults()
    params[name] = value
    with raises_exact(ValidationError, message):
        validate_params(params)


@pytest.mark.parametrize(
    "name,value", [(name, value) for name, values in VALID for value in values], ids=lambda v: repr(v)[:20]
)
def test_valid_parameter_values_pass_validation(name, value):
    params = defaults()
    params[name] = value
    validate_params(params)  # must not raise


def test_validation_error_is_a_value_error():
    with pytest.raises(ValueError):
        RenewableHuberRegressor(tau=0).fit([[1.0]], [1.0])


def test_validation_order_follows_the_documented_table(raises_exact):
    """With every parameter invalid, fixing them one by one reveals the messages in table order."""
    params = {name: values[0] for name, values, _ in INVALID}
    for name, _, message in INVALID:
        with raises_exact(ValidationError, message):
            validate_params(params)
        with raises_exact(ValidationError, message):
            RenewableHuberRegressor(**params).fit([[1.0, 2.0]], [1.0])
        params[name] = defaults()[name]
    validate_params(params)


def test_cuda_fast_math_combination_rule(raises_exact):
    with raises_exact(ValidationError, "cuda_fast_math requires dtype='float32'"):
        validate_params({**defaults(), "backend": "native_cuda", "cuda_fast_math": True})
    # the combination is checked after the per-parameter rules
    with raises_exact(ValidationError, "cuda_graphs must be a boolean"):
        validate_params({**defaults(), "backend": "native_cuda", "cuda_fast_math": True, "cuda_graphs": 1})
    validate_params({**defaults(), "backend": "native_cuda", "cuda_fast_math": True, "dtype": "float32"})
    # only native_cuda has the rule; other backends accept the flag
    validate_params({**defaults(), "backend": "numpy", "cuda_fast_math": True})
    model = RenewableHuberRegressor(backend="numpy", cuda_fast_math=True, cuda_graphs=True)
    model.fit([[1.0], [2.0], [3.0]], [1.0, 2.0, 4.0])
    assert model.backend_ == "numpy"


def test_validation_runs_before_backend_resolution(raises_exact):
    model = RenewableHuberRegressor(backend="cupy", device="cpu", tau=-1)
    with raises_exact(ValidationError, "tau must be greater than zero"):
        model.fit([[1.0]], [1.0])


def test_solver_config_from_params_converts_numeric_types():
    params = {**defaults(), "tau": np.float32(2.0), "max_iter": np.int64(3), "ridge": 0}
    config = SolverConfig.from_params(params)
    assert config == SolverConfig(
        tau=2.0, penalty="none", lambda_scale=1.0, bandwidth_scale=1.0, fit_intercept=True, max_iter=3, tol=1e-6, ridge=0.0
    )
    assert type(config.tau) is float and type(config.max_iter) is int and type(config.ridge) is float


def test_checked_config_cache_keeps_values_that_compare_equal_apart(raises_exact):
    """An accepted parameter set is remembered; an equal-comparing value of
    another type (1 == True) must still be validated on its own."""
    from renewable_huber.config import checked_solver_config

    good = dict(PARAMETER_DEFAULTS)
    assert checked_solver_config(good) == checked_solver_config(dict(good))  # second call from the cache
    bad = dict(good, fit_intercept=1)
    with raises_exact(ValidationError, "fit_intercept must be a boolean"):
        checked_solver_config(bad)
    with raises_exact(ValidationError, "fit_intercept must be a boolean"):
        checked_solver_config(bad)  # failures are never cached
    model = RenewableHuberRegressor(backend="numpy").fit(np.eye(3), np.arange(3.0))
    model.tau = -1.0  # a changed parameter is validated again at the next call
    with raises_exact(ValidationError, "tau must be greater than zero"):
        model.partial_fit(np.eye(3), np.arange(3.0))


def test_checked_config_accepts_unhashable_parameter_values():
    from renewable_huber.config import checked_solver_config

    class Unhashable(float):
        __hash__ = None

    config = checked_solver_config(dict(PARAMETER_DEFAULTS, tau=Unhashable(2.0)))
    assert config.tau == 2.0
