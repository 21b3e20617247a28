"""Shared fixtures: random data, exact-message matching, and the "model left
exactly as it was" check used by every failure test."""

from __future__ import annotations

import contextlib
import copy
import re

import numpy as np
import pytest

from renewable_huber.exceptions import NotFittedError

try:  # property tests draw the same examples on every run: CI cannot fail at random
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("deterministic", derandomize=True, database=None)
    _hypothesis_settings.load_profile("deterministic")
except ImportError:  # pragma: no cover - hypothesis is a test requirement
    pass


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240601)


@pytest.fixture
def make_data(rng):
    """make_data(n, p, *, outliers=0, intercept=0.5, shift=0.0) -> (X, y, true_coef)."""

    def make(n=60, p=3, *, outliers=0, intercept=0.5, shift=0.0):
        X = rng.normal(size=(n, p)) + shift
        coef = np.linspace(1.0, -1.0, p) + 0.25
        y = X @ coef + intercept + rng.standard_t(3, size=n)
        if outliers:
            y[rng.choice(n, size=outliers, replace=False)] += 1000.0
        return X, y, coef

    return make


@pytest.fixture
def raises_exact():
    """pytest.raises that requires the whole message to be exactly ``message``."""

    def raises(exc_type, message):
        return pytest.raises(exc_type, match="^" + re.escape(message) + "$")

    return raises


def _snapshot(model) -> dict:
    fitted = bool(model.__sklearn_is_fitted__())
    state = model.state_ if fitted else None  # first: it reads a batch left pending (amendment 0004)
    public = {name: copy.deepcopy(value) for name, value in vars(model).items() if not name.startswith("_")}
    try:
        diagnostics = model.diagnostics_
    except NotFittedError:
        diagnostics = None
    return {"public": public, "fitted": fitted, "state": state, "diagnostics": diagnostics}


def _assert_same_value(a, b, where: str) -> None:
    assert type(a) is type(b), f"{where}: type {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: dtype/shape changed"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{where}: values changed"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), f"{where}: keys changed"
        for key in a:
            _assert_same_value(a[key], b[key], f"{where}[{key!r}]")
    else:
        assert a == b, f"{where}: {a!r} became {b!r}"


def assert_same_snapshot(before: dict, after: dict) -> None:
    assert after["fitted"] == before["fitted"], "fitted status changed"
    assert after["public"].keys() == before["public"].keys(), "set of public attributes changed"
    for name in before["public"]:
        _assert_same_value(before["public"][name], after["public"][name], name)
    assert after["diagnostics"] == before["diagnostics"], "diagnostics_ changed"
    if before["state"] is not None:
        old, new = before["state"], after["state"]
        for field in ("coefficients", "information"):
            _assert_same_value(getattr(old, field), getattr(new, field), f"state_.{field}")
        for field in ("n_samples_seen", "batch_count", "previous_lambda", "n_features_in", "fit_intercept", "weight_sum"):
            _assert_same_value(getattr(old, field), getattr(new, field), f"state_.{field}")


@pytest.fixture
def assert_untouched():
    """``with assert_untouched(model), pytest.raises(...): model.partial_fit(...)``"""

    @contextlib.contextmanager
    def check(model):
        before = _snapshot(model)
        yield
        assert_same_snapshot(before, _snapshot(model))

    return check


def _cuda_device_count() -> int:
    """CUDA devices the native CUDA engine sees (0 without the engine, a driver or a device)."""
    try:
        import _renewable_huber_native_cuda as native
    except ImportError:
        return 0
    return int(native.runtime_info()["device_count"])


def pytest_collection_modifyitems(config, items):
    """Tests marked gpu skip cleanly where no CUDA device exists (CI)."""
    if _cuda_device_count() > 0:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (none here)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
