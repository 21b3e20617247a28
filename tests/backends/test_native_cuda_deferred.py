"""Deferred results on the GPU (amendment 0004): the device loop's update
(penalty "none", 33 <= d <= 48) left queued by partial_fit and read by the
next call that needs it (rh_cuda_engine_update_deferred and
rh_cuda_engine_settle, C ABI 1.7). Deferred and immediate results
(RH_CUDA_RESULTS) must give the same bits, host-fed and device-fed; a
deferred host batch's update waits for nothing before its return and a
device batch's only for the engine's copy of the caller's arrays; a value
only the device finds fails at the read with the model as it was before
the batch. The Python contract is also tested in CI over the host stand-in
(tests/test_deferred_results.py). GPU only (marked `gpu`).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from own_rounding import config  # noqa: E402  (tests/backends' helpers)
from renewable_huber import RenewableHuberRegressor, ValidationError
from renewable_huber.backends import native_cuda_backend as adapter
from renewable_huber.state import RenewableHuberState

pytestmark = pytest.mark.gpu


def stream(dtype, p=32, n=11000, seed=13):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.standard_t(2, size=n)
    y[::37] += 40.0
    return X.astype(dtype), y.astype(dtype)


def on_device(feed, *arrays):
    if feed == "host":
        return arrays
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed")
    import cupy

    return tuple(cupy.asarray(a) for a in arrays)


def model(monkeypatch, results, **options):
    """An estimator whose backend, made by its next (first) batch, reads RH_CUDA_RESULTS=`results`."""
    monkeypatch.setenv("RH_CUDA_SOLVER", "auto")
    monkeypatch.setenv("RH_CUDA_RESULTS", results)
    return RenewableHuberRegressor(backend="native_cuda", **options)


def pending(m):
    return m.__dict__["_stream"].pending is not None


@pytest.mark.parametrize("feed", ["host", "device"])
@pytest.mark.parametrize("inference", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_deferred_results_give_the_immediate_bits(monkeypatch, dtype, inference, feed):
    X, y = stream(dtype)
    deferred = model(monkeypatch, "deferred", dtype=dtype, inference=inference)
    immediate = model(monkeypatch, "immediate", dtype=dtype, inference=inference)
    start = 0
    for k, n in enumerate([3000, 3000, 2000, 3000]):  # a change of rows: the loop's graph made again
        batch = on_device(feed, X[start:start + n], y[start:start + n])
        for results, m in (("deferred", deferred), ("immediate", immediate)):
            monkeypatch.setenv("RH_CUDA_RESULTS", results)  # read when the first batch makes the model's backend
            m.partial_fit(*batch)
        assert pending(deferred) == (k > 0) and not pending(immediate)
        if k == 2:  # a read in the middle of the stream
            np.testing.assert_array_equal(deferred.coef_, immediate.coef_)
        start += n
    a, b = deferred.state_, immediate.state_
    np.testing.assert_array_equal(a.coefficients, b.coefficients)
    np.testing.assert_array_equal(a.information, b.information)
    if inference:
        np.testing.assert_array_equal(a.meat, b.meat)
    assert deferred.n_iter_ == immediate.n_iter_ and deferred.diagnostics_ == immediate.diagnostics_
    assert deferred.cuda_features_["updates"] == immediate.cuda_features_["updates"] == 4


@pytest.mark.parametrize("feed", ["host", "device"])
def test_a_deferred_update_waits_only_for_the_callers_arrays_before_its_return(monkeypatch, feed):
    X, y = on_device(feed, *stream("float64", n=4000))
    monkeypatch.setenv("RH_CUDA_SOLVER", "auto")
    monkeypatch.setenv("RH_CUDA_RESULTS", "deferred")
    empty = RenewableHuberState.empty(32, True)
    deferring = adapter.NativeCudaBackend("float64")
    queued = deferring.update_deferred(empty, X, y, None, config())
    assert isinstance(queued, adapter.PendingUpdate)
    # a fresh engine (no earlier closing to wait for): a host batch's update waits for nothing, a device
    # batch's once, for the copy of the caller's arrays that the solve reads
    assert queued.queued.host_syncs == (0 if feed == "host" else 1)
    state, diagnostics = deferring.settle_update(empty, queued)
    assert deferring.last_native_diagnostics.host_syncs == queued.queued.host_syncs + 1  # the read's one wait
    monkeypatch.setenv("RH_CUDA_RESULTS", "immediate")
    immediate = adapter.NativeCudaBackend("float64")
    state_now, diagnostics_now = immediate.update(empty, X, y, None, config())
    assert diagnostics == diagnostics_now
    np.testing.assert_array_equal(deferring.to_host_state(state).information,
                                  immediate.to_host_state(state_now).information)


@pytest.mark.parametrize("feed", ["host", "device"])
def test_a_value_only_the_device_finds_fails_at_the_read_and_the_model_is_as_before(monkeypatch, feed):
    X, y = stream("float64", n=9000)
    m = model(monkeypatch, "deferred")
    m.partial_fit(*on_device(feed, X[:3000], y[:3000]))
    before = m.state_
    bad = X[3000:6000].copy()
    bad[17, 3] = np.inf
    m.partial_fit(*on_device(feed, bad, y[3000:6000]))  # X's values are checked on the device: queued
    assert pending(m)
    with pytest.raises(ValidationError, match="batch 2, absorbed by an earlier call and read now, failed: X must"):
        m.coef_  # noqa: B018
    after = m.state_
    np.testing.assert_array_equal(after.coefficients, before.coefficients)
    np.testing.assert_array_equal(after.information, before.information)
    assert after.batch_count == 1 and m.n_samples_seen_ == 3000
    # the stream goes on as one that never saw the batch
    twin = model(monkeypatch, "immediate")
    twin.partial_fit(X[:3000], y[:3000])
    for start in (3000, 6000):
        m.partial_fit(*on_device(feed, X[start:start + 3000], y[start:start + 3000]))
        twin.partial_fit(X[start:start + 3000], y[start:start + 3000])
    np.testing.assert_array_equal(m.state_.information, twin.state_.information)


def test_a_page_locked_host_batch_overwritten_once_partial_fit_returns_does_not_reach_the_model(monkeypatch):
    # The copy engine reads page-locked host memory after cudaMemcpyAsync returns (pageable memory it has
    # read into the driver's staging by then): a deferred update of such a batch waits for its copies.
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed")
    import cupyx

    X, y = stream("float64", n=12000)
    fed = model(monkeypatch, "deferred")
    reference = model(monkeypatch, "immediate")
    for start in range(0, 12000, 3000):
        pinned_X = cupyx.empty_pinned((3000, 32), dtype=np.float64)
        pinned_y = cupyx.empty_pinned(3000, dtype=np.float64)
        pinned_X[...] = X[start:start + 3000]
        pinned_y[...] = y[start:start + 3000]
        monkeypatch.setenv("RH_CUDA_RESULTS", "deferred")
        fed.partial_fit(pinned_X, pinned_y)
        pinned_X.fill(np.nan)  # what a caller may do once the call returned
        pinned_y.fill(np.nan)
        monkeypatch.setenv("RH_CUDA_RESULTS", "immediate")
        reference.partial_fit(X[start:start + 3000], y[start:start + 3000])
    np.testing.assert_array_equal(fed.state_.information, reference.state_.information)
    np.testing.assert_array_equal(fed.coef_, reference.coef_)
