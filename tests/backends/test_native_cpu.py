"""The C++ CPU engine against the NumPy reference (randomized differential
tests), plus its binding contract: versions, GIL release, errors, layouts."""

from __future__ import annotations

import importlib.util
import threading
import time
import types

import numpy as np
import pytest

if importlib.util.find_spec("_renewable_huber_native_cpu") is None:  # skip only when genuinely absent
    pytest.skip("renewable-huber-native-cpu is not installed", allow_module_level=True)

from renewable_huber.backends import native_cpu_backend as adapter  # noqa: E402
from renewable_huber.backends.native_cpu_backend import NativeCpuBackend  # noqa: E402
from renewable_huber.backends.numpy_backend import NumpyBackend  # noqa: E402
from renewable_huber.config import SolverConfig  # noqa: E402
from renewable_huber.exceptions import BackendUnavailableError, RenewableHuberError, ValidationError  # noqa: E402
from renewable_huber.state import RenewableHuberState  # noqa: E402

RTOL = {"float64": 1e-9, "float32": 5e-4}
ATOL = {"float64": 1e-10, "float32": 5e-5}


def config(penalty="none", fit_intercept=True, **overrides):
    values = dict(tau=1.345, penalty=penalty, lambda_scale=1.0, bandwidth_scale=1.0, fit_intercept=fit_intercept,
                  max_iter=200, tol=1e-8, ridge=1e-8)
    values.update(overrides)
    return SolverConfig(**values)


def stream(rng, batches, n, p, dtype, *, weights=False, rank_deficient=False):
    coef = rng.normal(size=p)
    for _ in range(batches):
        X = rng.normal(size=(n, p))
        if rank_deficient:
            X[:, -1] = X[:, 0]
        y = X @ coef + 0.3 + rng.normal(scale=0.3, size=n)
        y[rng.choice(n, size=max(1, n // 20), replace=False)] += rng.normal(scale=10, size=max(1, n // 20))
        w = None
        if weights:
            w = rng.uniform(0.2, 2.0, size=n)
            w[rng.choice(n, size=n // 5, replace=False)] = 0.0
            w = w.astype(dtype)
        yield X.astype(dtype), y.astype(dtype), w


def assert_states_close(native, reference, dtype, where):
    rtol, atol = RTOL[dtype], ATOL[dtype]
    np.testing.assert_allclose(native.coefficients, reference.coefficients, rtol=rtol, atol=atol, err_msg=where)
    scale = np.max(np.abs(reference.information))
    np.testing.assert_allclose(native.information, reference.information, rtol=rtol, atol=atol * scale, err_msg=where)
    assert native.coefficients.dtype == np.dtype(dtype)
    assert (native.n_samples_seen, native.batch_count) == (reference.n_samples_seen, reference.batch_count)
    assert native.weight_sum == pytest.approx(reference.weight_sum, rel=1e-12)
    assert native.previous_lambda == pytest.approx(reference.previous_lambda, rel=1e-12)


SCENARIOS = {
    "plain": dict(),
    "weights_with_zeros": dict(weights=True),
    "no_intercept": dict(fit_intercept=False),
    "many_batches": dict(batches=8, n=40),
    "rank_deficient": dict(rank_deficient=True, tau=100.0, ridge=0.0),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_randomized_differential_against_numpy(scenario, penalty, dtype, seed):
    if scenario == "rank_deficient" and (dtype == "float32" or penalty == "l1"):
        pytest.skip("rank-deficient systems are compared in float64 Newton (the reference's least-squares route)")
    options = dict(SCENARIOS[scenario])
    batches, n, p = options.pop("batches", 3), options.pop("n", 120), 4
    fit_intercept = options.pop("fit_intercept", True)
    data_options = {k: options.pop(k) for k in ("weights", "rank_deficient") if k in options}
    # a step-size tolerance float32 can resolve (1e-8 is below its epsilon)
    cfg = config(penalty, fit_intercept, **{"tol": 1e-10 if dtype == "float64" else 1e-5, **options})
    rng = np.random.default_rng(1000 * seed + len(scenario))
    native, reference = NativeCpuBackend(dtype), NumpyBackend(dtype)
    state_native = state_reference = RenewableHuberState.empty(p, fit_intercept, dtype)
    for index, (X, y, w) in enumerate(stream(rng, batches, n, p, dtype, **data_options)):
        state_native, diag_native = native.update(state_native, X, y, w, cfg)
        state_reference, diag_reference = reference.update(state_reference, X, y, w, cfg)
        where = f"{scenario}/{penalty}/{dtype}/seed {seed}/batch {index + 1}"
        assert_states_close(state_native, state_reference, dtype, where)
        assert diag_native.converged == diag_reference.converged, where
        assert diag_native.used_regularized_fallback == diag_reference.used_regularized_fallback, where
        assert diag_native.bandwidth == pytest.approx(diag_reference.bandwidth, rel=1e-12)
        assert diag_native.lambda_value == pytest.approx(diag_reference.lambda_value, rel=1e-12)
    probe = rng.normal(size=(7, p)).astype(dtype)
    np.testing.assert_allclose(native.predict(state_native, probe), reference.predict(state_reference, probe),
                               rtol=RTOL[dtype], atol=ATOL[dtype] * 10)


def test_rank_deficient_design_reports_the_least_squares_route():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 3))
    X[:, 2] = X[:, 1]
    y = X @ np.array([1.0, 2.0, 0.0]) + rng.normal(scale=0.1, size=50)
    backend = NativeCpuBackend("float64")
    state, diagnostics = backend.update(RenewableHuberState.empty(3, True), X, y, None, config(tau=100.0, ridge=0.0))
    assert diagnostics.used_regularized_fallback
    assert backend.last_solve_route == "least_squares"


def test_non_contiguous_inputs_give_the_same_result():
    rng = np.random.default_rng(3)
    X = np.asfortranarray(rng.normal(size=(80, 3)))
    y = X @ np.ones(3) + rng.normal(size=80)
    backend = NativeCpuBackend("float64")
    empty = RenewableHuberState.empty(3, True)
    a, _ = backend.update(empty, X, y, None, config())
    b, _ = backend.update(empty, np.ascontiguousarray(X), y, None, config())
    np.testing.assert_array_equal(a.coefficients, b.coefficients)
    np.testing.assert_array_equal(backend.predict(a, X[::2]), backend.predict(a, np.ascontiguousarray(X[::2])))


def test_engine_error_leaves_the_state_intact_and_raises_a_package_error():
    backend = NativeCpuBackend("float64")
    state = RenewableHuberState.empty(2, True)
    before = state.copy()
    X = np.ones((4, 2))
    y = np.array([1.0, np.nan, 0.0, 1.0])
    with pytest.raises(RenewableHuberError) as excinfo:
        backend.update(state, X, y, None, config())
    assert isinstance(excinfo.value, ValidationError)
    assert "finite" in str(excinfo.value)
    np.testing.assert_array_equal(state.coefficients, before.coefficients)
    np.testing.assert_array_equal(state.information, before.information)
    assert state.n_samples_seen == 0


def test_binding_refuses_implicit_conversions():
    engine = adapter._native.EngineFloat64()
    counters = adapter._native.StateCounters(2, True, 0, 0, 0.0, 0.0)
    cfg = adapter._native.SolverConfig(1.345, "none", 1.0, 1.0, True, 10, 1e-6, 1e-8)
    X32 = np.ones((3, 2), dtype=np.float32)
    with pytest.raises(TypeError):
        engine.update(np.zeros(3), np.zeros((3, 3)), counters, X32, np.ones(3), None, cfg, np.empty(3),
                      np.empty((3, 3)))
    with pytest.raises(TypeError):
        engine.update(np.zeros(3), np.zeros((3, 3)), counters, np.ones((2, 3)).T, np.ones(3), None, cfg,
                      np.empty(3), np.empty((3, 3)))


def test_module_reports_version_provider_and_threads():
    info = adapter.provider_info()
    from renewable_huber._version import __version__

    assert info["module_version"] == __version__
    assert info["abi_version"] == adapter.SUPPORTED_ABI_VERSION
    assert "openblas" in info["blas_provider"].lower() or "blas" in info["blas_provider"].lower()
    assert info["available_cores"] >= 1
    assert NativeCpuBackend("float64", n_jobs=1).n_jobs == 1
    assert NativeCpuBackend("float64", n_jobs=-1).n_jobs == info["available_cores"]
    assert NativeCpuBackend("float64", n_jobs=None).n_jobs >= 1


def test_module_of_another_version_is_refused():
    fake = types.SimpleNamespace(__version__="0.0.0-other", ABI_VERSION=adapter.SUPPORTED_ABI_VERSION)
    with pytest.raises(BackendUnavailableError, match="versions must be identical"):
        adapter.check_module_compatible(fake)
    fake = types.SimpleNamespace(__version__=adapter.__version__, ABI_VERSION=999)
    with pytest.raises(BackendUnavailableError, match="ABI"):
        adapter.check_module_compatible(fake)


def test_gil_is_released_during_update():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(60000, 120))
    y = X @ rng.normal(size=120) + rng.normal(size=60000)
    backend = NativeCpuBackend("float64", n_jobs=1)
    cfg = config(max_iter=50)
    empty = RenewableHuberState.empty(120, True)
    start = time.perf_counter()
    backend.update(empty, X, y, None, cfg)
    single = time.perf_counter() - start

    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.0005)

    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.01)
    before = ticks
    backend.update(empty, X, y, None, cfg)
    during = ticks - before
    done.set()
    counter.join()
    # With the GIL held for the whole update the other thread could not run at all.
    assert during >= max(3, int(single / 0.0005) // 20), (during, single)
