"""A batch spread over partitions (core/partition_sums.py): each engine's
partition sums, their addition, and the update driven by them against the
update of the concatenated batch (issue 17's parallel-batch mode, without
Dask: tests/integrations/test_dask.py runs it on a cluster)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from renewable_huber.backends.registry import create_backend
from renewable_huber.config import SolverConfig
from renewable_huber.core import NumpyOps, renewable_update
from renewable_huber.core.partition_sums import (
    PartitionedDataTerms,
    PartitionSums,
    add_partition_sums,
    partitioned_update,
)
from renewable_huber.core.update import design_matrix
from renewable_huber.exceptions import ValidationError
from renewable_huber.state import RenewableHuberState

from differential import linear

NATIVE = pytest.mark.skipif(not importlib.util.find_spec("_renewable_huber_native_cpu"), reason="native_cpu not installed")
ENGINES = ["numpy", pytest.param("native_cpu", marks=NATIVE)]
ALL_TERMS = frozenset({"loss", "score_product", "curvature_gram", "unit_gram"})


def solver_config(penalty="none"):
    return SolverConfig(tau=1.345, penalty=penalty, lambda_scale=1.0, bandwidth_scale=1.0, fit_intercept=True,
                        max_iter=100, tol=1e-6, ridge=1e-8)


def weighted_batch(n=900, p=5, seed=0, dtype="float64"):
    X, y = linear(n, p, seed, dtype)
    w = np.random.default_rng(seed + 100).uniform(0.5, 2.0, size=n).astype(dtype)
    w[40:70] = 0.0  # zero-weight rows: inside the second partition below
    return X, y, w


def split(n):
    """Uneven partitions, one of them empty."""
    return [(0, 37), (37, 300), (300, 300), (300, 641), (641, n)]


def sums_over(engine, dtype, X, y, w, bounds, fit_intercept=True):
    """sums_at(theta, terms, tau, h) adding the partitions' sums formed by ``engine``."""
    backend = create_backend(engine, "cpu", dtype, 1)
    ops = NumpyOps(dtype)
    parts = [(design_matrix(ops, X[a:b], fit_intercept), y[a:b], w[a:b]) for a, b in bounds]
    calls = []

    def sums_at(theta, terms, tau, bandwidth):
        calls.append(frozenset(terms))
        return add_partition_sums([backend.partition_sums(Z, yy, ww, theta.astype(dtype), tau, bandwidth, terms)
                                   for Z, yy, ww in parts])

    return sums_at, calls


def first_state(X, y, w, config, dtype):
    """The state after a first local batch (the historical subgradient then applies for l1)."""
    p = X.shape[1]
    empty = RenewableHuberState(np.zeros(p + 1, dtype), np.zeros((p + 1, p + 1), dtype), 0, 0, 0.0, p, True, 0.0)
    state, _ = renewable_update(NumpyOps(dtype), empty, X, y, w, config)
    return state


def relative(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - b) / (1.0 + np.abs(b))))


def norm_relative(a, b):
    """max |a - b| on the scale of b's largest entry (a matrix's own scale)."""
    return float(np.max(np.abs(np.asarray(a, np.float64) - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_engines_form_the_same_partition_sums(dtype):
    if not importlib.util.find_spec("_renewable_huber_native_cpu"):
        pytest.skip("native_cpu not installed")
    X, y, w = weighted_batch(dtype=dtype)
    Z = design_matrix(NumpyOps(dtype), X, True)
    theta = np.linspace(-0.5, 0.5, Z.shape[1])
    reference = create_backend("numpy", "cpu", dtype, 1).partition_sums(Z, y, w, theta, 1.345, 0.2, ALL_TERMS)
    native = create_backend("native_cpu", "cpu", dtype, 1).partition_sums(Z, y, w, theta, 1.345, 0.2, ALL_TERMS)
    rtol = 1e-12 if dtype == "float64" else 1e-5
    for name in ("weight_sum", "loss", "score_product", "curvature_gram", "unit_gram"):
        np.testing.assert_allclose(getattr(native, name), getattr(reference, name), rtol=rtol, atol=rtol, err_msg=name)
    # the point matters: the curvature Gram is not the unit Gram here (outliers, ramps)
    assert np.trace(reference.curvature_gram) < 0.99 * np.trace(reference.unit_gram)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_partition_refuses_bad_values_with_the_validators_message(engine):
    X, y, w = weighted_batch(n=60)
    Z = design_matrix(NumpyOps("float64"), X, True)
    backend = create_backend(engine, "cpu", "float64", 1)
    theta = np.zeros(Z.shape[1])
    if engine == "native_cpu":  # the engine checks its own inputs; NumPy's are validated before
        bad_y = y.copy()
        bad_y[3] = np.nan
        with pytest.raises(ValidationError, match="y must not contain NaN or infinite values"):
            backend.partition_sums(Z, bad_y, w, theta, 1.345, 0.2, ALL_TERMS)
        with pytest.raises(ValidationError, match="theta must contain only finite values"):
            backend.partition_sums(Z, y, w, np.full(Z.shape[1], np.inf), 1.345, 0.2, ALL_TERMS)
        with pytest.raises(ValidationError, match="one entry per design column"):
            backend.partition_sums(Z, y, w, theta[:-1], 1.345, 0.2, ALL_TERMS)
    with pytest.raises(ValueError, match="unknown partition terms"):
        backend.partition_sums(Z, y, w, theta, 1.345, 0.2, {"hessian"})
    zero = backend.partition_sums(Z, y, np.zeros_like(w), theta, 1.345, 0.2, ALL_TERMS)  # allowed for a partition
    assert zero.weight_sum == 0.0 and zero.loss == 0.0


def test_added_sums_keep_the_partition_order_and_drop_missing_terms():
    parts = [PartitionSums(2, 1.0, loss=1e16, score_product=np.ones(2)), PartitionSums(1, 2.0, loss=1.0),
             PartitionSums(3, 3.0, loss=-1e16, score_product=np.ones(2))]
    total = add_partition_sums(parts)
    assert total.rows == 6 and total.weight_sum == 6.0
    assert total.loss == (1e16 + 1.0) - 1e16  # in the order given (2.0), not a compensated 1.0
    assert total.score_product is None  # the second partition did not form it
    with pytest.raises(ValueError, match="at least one partition"):
        add_partition_sums([])


@pytest.mark.parametrize("engine", ENGINES)
def test_one_partition_reproduces_the_in_memory_update_bit_for_bit(engine):
    X, y, w = weighted_batch()
    config = solver_config("l1")
    state = first_state(X[:200], y[:200], w[:200] + 1.0, config, "float64")
    ops = NumpyOps("float64")
    want, want_diagnostics = renewable_update(ops, state, X, y, w, config)
    sums_at, _ = sums_over(engine, "float64", X, y, w, [(0, len(y))])
    got, diagnostics, rounds = partitioned_update(ops, state, sums_at, len(y), float(np.sum(w)), X.shape[1], config)
    np.testing.assert_array_equal(got.coefficients, want.coefficients)
    np.testing.assert_array_equal(got.information, want.information)
    assert diagnostics == want_diagnostics and got.batch_count == want.batch_count == 2
    assert rounds > diagnostics.iterations  # one round per trial, and the closing's


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("engine", ENGINES)
def test_partitions_give_the_update_of_the_concatenated_batch(engine, penalty, dtype):
    X, y, w = weighted_batch(dtype=dtype, seed=3)
    config = solver_config(penalty)
    ops = NumpyOps(dtype)
    state = first_state(X[:150], y[:150], None, config, dtype)
    want, want_diagnostics = renewable_update(ops, state, X, y, w, config)
    sums_at, _ = sums_over(engine, dtype, X, y, w, split(len(y)))
    got, diagnostics, _ = partitioned_update(ops, state, sums_at, len(y), float(np.sum(w, dtype=np.float64)),
                                             X.shape[1], config)
    assert got.coefficients.dtype == np.dtype(dtype) and got.information.dtype == np.dtype(dtype)
    # the batch's weight: float64 here, the in-memory update's sum of float32 weights in float32
    sum_rtol = 1e-12 if dtype == "float64" else 1e-6
    assert (got.n_samples_seen, got.batch_count, got.weight_sum) == (
        want.n_samples_seen, want.batch_count, pytest.approx(want.weight_sum, rel=sum_rtol))
    assert diagnostics.bandwidth == pytest.approx(want_diagnostics.bandwidth, rel=sum_rtol)
    assert diagnostics.converged
    if dtype == "float64":
        assert relative(got.coefficients, want.coefficients) < 1e-9
        assert relative(got.information, want.information) < 1e-9
        assert diagnostics.objective == pytest.approx(want_diagnostics.objective, rel=1e-12)
        return
    # float32: the coefficients within the contract's 5e-4; the information
    # (kappa at theta_hat, a steep ramp for this h: rows near it flip with the
    # last digits of theta_hat) as near the float64 update, on its own
    # scale, as the in-memory float32 update is
    assert relative(got.coefficients, want.coefficients) < 5e-4
    exact, _ = renewable_update(NumpyOps("float64"), state.with_arrays(state.coefficients.astype(np.float64),
                                state.information.astype(np.float64)), X.astype(np.float64), y.astype(np.float64),
                                w.astype(np.float64), config)
    assert norm_relative(got.information, exact.information) <= (
        2 * norm_relative(want.information, exact.information) + 5e-4)


def test_each_request_asks_for_what_the_solver_needs_next():
    X, y, w = weighted_batch(n=300)
    config = solver_config()
    ops = NumpyOps("float64")
    state = first_state(X[:100], y[:100], None, config, "float64")
    sums_at, calls = sums_over("numpy", "float64", X, y, w, [(0, 100), (100, 300)])
    _, diagnostics, rounds = partitioned_update(ops, state, sums_at, 300, float(np.sum(w)), X.shape[1], config)
    assert rounds == len(calls)
    loss_and_score = frozenset({"loss", "score_product"})
    assert calls[0] == loss_and_score  # f and the first gradient at theta_prev, in one round
    assert calls[1] == frozenset({"curvature_gram"})  # the first Newton matrix
    assert calls[-1] == frozenset({"curvature_gram"})  # the closing information update
    assert set(calls) <= {loss_and_score, frozenset({"curvature_gram"}), frozenset({"unit_gram"})}
    assert calls.count(frozenset({"curvature_gram"})) == diagnostics.iterations + 1
