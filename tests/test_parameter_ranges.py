"""Every integer and real parameter has a documented range, checked in the
config layer (config.py) with the contract's message style, the same on every
backend: a value no engine can represent is a ValidationError at the first
fit/partial_fit, never a binding's TypeError or an OverflowError."""

from __future__ import annotations

import fractions

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor, ValidationError
from renewable_huber.backends.registry import availability
from renewable_huber.config import PARAMETER_DEFAULTS, validate_params

#: the documented range's end: a C int (int32_t in the CUDA C ABI), what every engine binds
MAX_INT32 = 2**31 - 1

BACKENDS = [
    "numpy",
    pytest.param("native_cpu", marks=pytest.mark.skipif(not availability("native_cpu")[0], reason="native_cpu absent")),
    # the config layer answers before any engine is built: no device needed
    "native_cuda",
    "cupy",
]

# (parameter, value no engine can take, message)
OUT_OF_RANGE = [
    ("max_iter", 2**70, f"max_iter must be at most {MAX_INT32}"),
    ("max_iter", MAX_INT32 + 1, f"max_iter must be at most {MAX_INT32}"),
    ("max_iter", np.uint64(2**63), f"max_iter must be at most {MAX_INT32}"),
    ("n_jobs", 2**70, f"n_jobs must be None, -1, or a positive integer of at most {MAX_INT32}"),
    ("n_jobs", MAX_INT32 + 1, f"n_jobs must be None, -1, or a positive integer of at most {MAX_INT32}"),
    ("device", "cuda:99999999999999999999", "device must be 'auto', 'cpu', or 'cuda'"),
    ("device", f"cuda:{MAX_INT32 + 1}", "device must be 'auto', 'cpu', or 'cuda'"),
    # reals: finite doubles; a Python int or fraction too large for a double is not one
    ("tau", 10**400, "tau must be greater than zero"),
    ("lambda_scale", 10**400, "lambda_scale must be non-negative"),
    ("bandwidth_scale", fractions.Fraction(10**400, 3), "bandwidth_scale must be greater than zero"),
    ("tol", 10**400, "tol must be greater than zero"),
    ("ridge", -(10**400), "ridge must be non-negative"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, value, message", OUT_OF_RANGE, ids=lambda v: str(v)[:24])
def test_out_of_range_parameters_are_refused_the_same_on_every_backend(backend, name, value, message, raises_exact):
    """Defect 3 of issue 18: max_iter=2**70 or n_jobs=2**70 with native_cpu
    raised nanobind's raw TypeError at the first partial_fit, while numpy ran."""
    X = np.random.default_rng(0).normal(size=(20, 2))
    params = {"backend": backend, "device": "cuda" if backend in ("native_cuda", "cupy") else "auto", name: value}
    model = RenewableHuberRegressor(**params)
    with raises_exact(ValidationError, message):
        model.partial_fit(X, X[:, 0])
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("name, value", [("max_iter", MAX_INT32), ("n_jobs", MAX_INT32), ("device", f"cuda:{MAX_INT32}"),
                                         ("tau", 1e308), ("tol", 5e-324)])
def test_the_ends_of_each_range_are_accepted(name, value):
    validate_params(dict(PARAMETER_DEFAULTS, **{name: value}))


@pytest.mark.parametrize("backend", BACKENDS[:2])
def test_the_largest_max_iter_runs_on_the_cpu_backends(backend):
    X = np.random.default_rng(1).normal(size=(200, 3))
    model = RenewableHuberRegressor(backend=backend, max_iter=MAX_INT32).fit(X, X @ [1.0, 2.0, 3.0])
    np.testing.assert_allclose(model.coef_, [1.0, 2.0, 3.0], atol=1e-6)


def test_out_of_range_values_in_a_checkpoint_config_are_refused_at_load(tmp_path, raises_exact):
    X = np.random.default_rng(2).normal(size=(50, 2))
    state = RenewableHuberRegressor(backend="numpy").fit(X, X[:, 0]).state_dict()
    state["config"]["max_iter"] = 2**70
    with raises_exact(ValidationError, f"max_iter must be at most {MAX_INT32}"):
        RenewableHuberRegressor().load_state_dict(state)
