"""Bandwidth and lambda schedules (ALGORITHM.md, "Per-batch schedules")."""

from __future__ import annotations

import math

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor
from renewable_huber.core.schedules import bandwidth, lambda_level


def test_bandwidth_formula():
    assert bandwidth(1.345, 1.0, 100.0, 3) == pytest.approx(1 / (10 * math.log(3)), rel=1e-15)
    assert bandwidth(1.345, 2.5, 400.0, 10) == pytest.approx(2.5 / (20 * math.log(10)), rel=1e-15)


def test_bandwidth_is_capped_at_tau():
    assert bandwidth(1.345, 1.0, 0.25, 2) == 1.345  # 1 / (0.5 ln 2) = 2.885 > tau
    assert bandwidth(0.05, 1.0, 100.0, 3) == 0.05  # 0.091 > tau


def test_one_feature_uses_ln_2():
    assert bandwidth(1.345, 1.0, 50.0, 1) == bandwidth(1.345, 1.0, 50.0, 2)
    assert lambda_level("l1", 1.345, 1.0, 50.0, 1) == lambda_level("l1", 1.345, 1.0, 50.0, 2)
    assert bandwidth(1.345, 1.0, 50.0, 1) == pytest.approx(1 / (math.sqrt(50) * math.log(2)))


def test_lambda_formula_and_penalty_none():
    assert lambda_level("l1", 1.345, 1.0, 200.0, 5) == pytest.approx(1.345 * math.sqrt(math.log(5) / 200), rel=1e-15)
    assert lambda_level("l1", 2.0, 0.5, 9.0, 8) == pytest.approx(0.5 * 2.0 * math.sqrt(math.log(8) / 9), rel=1e-15)
    assert lambda_level("l1", 2.0, 0.0, 9.0, 8) == 0.0
    assert lambda_level("none", 2.0, 3.0, 9.0, 8) == 0.0


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_estimator_reports_schedules_with_the_accumulated_weight(fit_intercept, rng):
    """N is the accumulated frequency weight (not rows), p excludes the intercept."""
    tau, bandwidth_scale, lambda_scale, p = 1.1, 0.7, 1.6, 4
    model = RenewableHuberRegressor(
        backend="numpy", penalty="l1", tau=tau, bandwidth_scale=bandwidth_scale,
        lambda_scale=lambda_scale, fit_intercept=fit_intercept,
    )
    total = 0.0
    for rows in (30, 45, 10):
        X = rng.normal(size=(rows, p))
        y = X @ [1.0, 0.0, -1.0, 0.5] + rng.normal(size=rows)
        w = rng.uniform(0.0, 2.0, size=rows)
        model.partial_fit(X, y, sample_weight=w)
        total += w.sum()
        diag = model.diagnostics_
        assert diag.bandwidth == pytest.approx(min(bandwidth_scale / (math.sqrt(total) * math.log(p)), tau), rel=1e-12)
        assert diag.lambda_value == pytest.approx(lambda_scale * tau * math.sqrt(math.log(p) / total), rel=1e-12)
        assert model.state_.previous_lambda == diag.lambda_value
        assert model.state_.weight_sum == pytest.approx(total, rel=1e-12)
    assert model.n_samples_seen_ == 85


def test_penalty_none_has_zero_lambda(rng):
    X = rng.normal(size=(20, 2))
    model = RenewableHuberRegressor(backend="numpy", lambda_scale=5.0).fit(X, X[:, 0])
    assert model.diagnostics_.lambda_value == 0.0 and model.state_.previous_lambda == 0.0


def test_float32_model_schedules_match_double_formulas(rng):
    X = rng.normal(size=(64, 3)).astype(np.float32)
    model = RenewableHuberRegressor(backend="numpy", dtype="float32", penalty="l1").fit(X, X[:, 1])
    assert model.diagnostics_.bandwidth == pytest.approx(1 / (8 * math.log(3)), rel=1e-6)
    assert model.diagnostics_.lambda_value == pytest.approx(1.345 * math.sqrt(math.log(3) / 64), rel=1e-6)
