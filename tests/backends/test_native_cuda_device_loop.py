"""The Newton solve driven on the device (issue 28, "no host round trip
inside a batch"): for penalty "none" on the narrow route with the one-block
Cholesky rung (33 <= d <= 48 here: the block solver takes d <= 32), the
directions and core's driver replayed after each run as one CUDA graph's
loop, and the update waits once. RH_CUDA_SOLVER=pipeline keeps the
host-driven route, which waits once per direction: both routes make core's
decisions on the same values, so every batch must give the same bits, and
the synchronization counts tell the routes apart. GPU only (marked `gpu`).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from own_rounding import config  # noqa: E402  (tests/backends' helpers)
from renewable_huber import RenewableHuberRegressor
from renewable_huber.backends import native_cuda_backend as adapter
from renewable_huber.state import RenewableHuberState

pytestmark = pytest.mark.gpu


def stream(dtype, p=32, n=12000, seed=7):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.standard_t(2, size=n)
    y[::37] += 40.0  # outliers
    return X.astype(dtype), y.astype(dtype)


def model(monkeypatch, route, **options):
    """An estimator whose backend takes `route` ("auto": the device loop where it serves)."""
    monkeypatch.setenv("RH_CUDA_SOLVER", route)
    return RenewableHuberRegressor(backend="native_cuda", **options)


def absorb(monkeypatch, route, model_, X, y):
    monkeypatch.setenv("RH_CUDA_SOLVER", route)  # the backend reads it when the first batch makes it
    model_.partial_fit(X, y)


def assert_same_bits(a, b):
    np.testing.assert_array_equal(a.state_.coefficients, b.state_.coefficients)
    np.testing.assert_array_equal(a.state_.information, b.state_.information)
    if a.state_.meat is not None or b.state_.meat is not None:
        np.testing.assert_array_equal(a.state_.meat, b.state_.meat)
    assert a.n_iter_ == b.n_iter_
    assert a.state_.batch_count == b.state_.batch_count


@pytest.mark.parametrize("rows", [[3000] * 4, [3000, 2000, 3000, 2500]])
@pytest.mark.parametrize("inference", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_device_loop_gives_the_host_routes_bits(monkeypatch, dtype, inference, rows):
    X, y = stream(dtype)
    on_device = model(monkeypatch, "auto", dtype=dtype, inference=inference)
    on_host = model(monkeypatch, "pipeline", dtype=dtype, inference=inference)
    start = 0
    for n in rows:
        absorb(monkeypatch, "auto", on_device, X[start:start + n], y[start:start + n])
        absorb(monkeypatch, "pipeline", on_host, X[start:start + n], y[start:start + n])
        assert_same_bits(on_device, on_host)
        start += n
    features = on_device.cuda_features_
    assert features["graph_fallbacks"] == 0
    # the loop's graph made at the first batch and again at every change of the rows (its key)
    assert features["graph_captures"] == 1 + sum(a != b for a, b in zip(rows, rows[1:]))
    assert features["graph_captures"] + features["graph_replays"] >= len(rows)


@pytest.mark.parametrize("feed", ["host", "device"])
def test_a_device_loop_update_waits_once(monkeypatch, feed):
    X, y = stream("float64", n=4000)
    if feed == "device":
        if importlib.util.find_spec("cupy") is None:
            pytest.skip("CuPy is not installed")
        import cupy
        X, y = cupy.asarray(X), cupy.asarray(y)
    monkeypatch.setenv("RH_CUDA_SOLVER", "auto")
    loop = adapter.NativeCudaBackend("float64")
    _, diagnostics = loop.update(RenewableHuberState.empty(32, True), X, y, None, config())
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    host = adapter.NativeCudaBackend("float64")
    _, host_diagnostics = host.update(RenewableHuberState.empty(32, True), X, y, None, config())
    assert diagnostics.iterations == host_diagnostics.iterations >= 2
    # the loop: one wait for the outcome (the whole stream when the batch is the caller's device memory);
    # the host route: one a direction, and one more at the end for a caller's device batch
    assert loop.last_native_diagnostics.host_syncs == 1
    assert loop.last_native_diagnostics.solver_path == "pipeline"
    assert host.last_native_diagnostics.host_syncs >= diagnostics.iterations


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_what_only_the_host_serves_goes_back_to_it_with_the_same_bits(monkeypatch, dtype):
    # A first batch with a column of zeros and no ridge: its Newton system is singular, the Cholesky rung
    # refuses it, and the loop hands the batch to the host route (LU, then least squares: a route the loop
    # never takes, so the diagnostics show the hand-back); max_iter=1 and 2 stop the batches before
    # convergence, which the loop reports as the host route does.
    X, y = stream(dtype, n=9000)
    X[:3000, 5] = 0.0
    for max_iter in (100, 2, 1):
        on_device = model(monkeypatch, "auto", dtype=dtype, max_iter=max_iter, ridge=0.0)
        on_host = model(monkeypatch, "pipeline", dtype=dtype, max_iter=max_iter, ridge=0.0)
        for start in range(0, 9000, 3000):
            absorb(monkeypatch, "auto", on_device, X[start:start + 3000], y[start:start + 3000])
            absorb(monkeypatch, "pipeline", on_host, X[start:start + 3000], y[start:start + 3000])
            assert_same_bits(on_device, on_host)
            assert on_device.diagnostics_.solve_route == on_host.diagnostics_.solve_route
            if start == 0:
                assert on_device.diagnostics_.solve_route != "cholesky"  # handed back
            assert on_device.diagnostics_.converged == on_host.diagnostics_.converged
            assert on_device.diagnostics_.stop_reason == on_host.diagnostics_.stop_reason
        assert on_device.cuda_features_["graph_fallbacks"] == 0


def test_a_failed_batch_leaves_the_loops_model_as_it_was(monkeypatch):
    # A caller's device batch reaches the engine unchecked: its values are checked on the device, with the
    # starting point's pass, and judged at the loop's one wait, before anything is committed.
    if importlib.util.find_spec("cupy") is None:
        pytest.skip("CuPy is not installed")
    import cupy
    X, y = stream("float64", n=9000)
    on_device = model(monkeypatch, "auto")
    absorb(monkeypatch, "auto", on_device, cupy.asarray(X[:3000]), cupy.asarray(y[:3000]))
    before = (on_device.state_.coefficients.copy(), on_device.state_.information.copy())
    bad = X[3000:6000].copy()
    bad[17, 3] = np.nan
    with pytest.raises(Exception, match="X"):
        on_device.partial_fit(cupy.asarray(bad), cupy.asarray(y[3000:6000]))
        on_device.coef_  # noqa: B018  (with deferred results, the default, the failure surfaces at the read)
    np.testing.assert_array_equal(on_device.state_.coefficients, before[0])
    np.testing.assert_array_equal(on_device.state_.information, before[1])
    # the model goes on, as one that never saw the bad batch
    on_host = model(monkeypatch, "pipeline")
    absorb(monkeypatch, "pipeline", on_host, X[:3000], y[:3000])
    for start in (3000, 6000):
        absorb(monkeypatch, "auto", on_device, cupy.asarray(X[start:start + 3000]), cupy.asarray(y[start:start + 3000]))
        absorb(monkeypatch, "pipeline", on_host, X[start:start + 3000], y[start:start + 3000])
        assert_same_bits(on_device, on_host)
