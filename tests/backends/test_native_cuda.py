"""The CUDA engine (backend="native_cuda"): without a GPU (CI) the module
imports and the backend refuses cleanly with its reason; with one, both
golden corpora, the randomized differential scenarios against the NumPy
reference, singular systems, error paths, atomicity, out-of-memory
recovery, the allocation-free steady state and checkpoint portability.
GPU tests are marked `gpu` (conftest.py skips them without a device)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("_renewable_huber_native_cuda") is None:  # skip only when genuinely absent
    pytest.skip("renewable-huber-native-cuda is not installed", allow_module_level=True)

from differential import EXTERNAL_CORPUS, PROJECT_CORPUS, linear, load_cases, replay_case  # noqa: E402
from own_rounding import SCENARIOS, WIDE_SCENARIOS, check_own_rounding_stream, config  # noqa: E402

from renewable_huber import RenewableHuberRegressor  # noqa: E402
from renewable_huber.backends import native_cuda_backend as adapter  # noqa: E402
from renewable_huber.exceptions import BackendUnavailableError, ValidationError  # noqa: E402
from renewable_huber.state import RenewableHuberState  # noqa: E402

HAS_DEVICE = adapter.runtime_info()["device_count"] > 0


# ---------------------------------------------------------------- any machine


def test_module_versions_match_the_package():
    from renewable_huber._version import __version__

    assert adapter._native.__version__ == __version__
    adapter.check_module_compatible(adapter._native)
    info = adapter.runtime_info()
    assert set(info) == {"device_count", "runtime_version", "driver_version"}
    assert info["runtime_version"] >= 12000


def test_module_of_another_version_or_abi_is_refused():
    import types

    fake = types.SimpleNamespace(__version__="0.0.0", ABI_VERSION=adapter.SUPPORTED_ABI_VERSION, library_abi_version=lambda: 1 << 16)
    with pytest.raises(BackendUnavailableError, match="versions must be identical"):
        adapter.check_module_compatible(fake)
    fake = types.SimpleNamespace(__version__=adapter.__version__, ABI_VERSION=adapter.SUPPORTED_ABI_VERSION, library_abi_version=lambda: 2 << 16)
    with pytest.raises(BackendUnavailableError, match="C ABI 2.0"):
        adapter.check_module_compatible(fake)


@pytest.mark.skipif(HAS_DEVICE, reason="a CUDA device is present")
def test_without_a_device_the_backend_says_why():
    with pytest.raises(BackendUnavailableError, match="needs a CUDA device"):
        adapter.NativeCudaBackend("float64")
    model = RenewableHuberRegressor(backend="native_cuda")
    with pytest.raises(BackendUnavailableError, match="needs a CUDA device"):
        model.fit(np.ones((4, 2)), np.ones(4))
    assert not model.__sklearn_is_fitted__()
    with pytest.raises(adapter._native.EngineError) as error:
        adapter._native.Engine(0, "float64", 3, True)
    assert error.value.args[1] == "unavailable"


def test_engine_errors_of_each_module_keep_their_own_type():
    """Each native module binds the core types in its own nanobind domain:
    an error of one engine never surfaces as the other module's type."""
    cpu = pytest.importorskip("_renewable_huber_native_cpu")  # gpu_check's build_cuda installs the CUDA engine alone

    engine = cpu.EngineFloat64()
    counters = cpu.StateCounters(2, True, 0, 0, 0.0, 0.0)
    cfg = cpu.SolverConfig(1.345, "none", 1.0, 1.0, True, 10, 1e-6, 1e-8)
    with pytest.raises(cpu.EngineError):
        engine.update(np.zeros(3), np.zeros((3, 3)), counters, np.full((2, 2), np.nan), np.ones(2), None, cfg,
                      np.empty(3), np.empty((3, 3)))
    assert cpu.EngineError is not adapter._native.EngineError
    assert cpu.SolverConfig is not adapter._native.SolverConfig


def test_device_names_are_parsed():
    assert adapter.device_index("cuda") == 0 and adapter.device_index("auto") == 0
    assert adapter.device_index("cuda:3") == 3
    with pytest.raises(BackendUnavailableError):
        adapter.device_index("cpu")


# ---------------------------------------------------------------- on a GPU

gpu = pytest.mark.gpu


# Both of the engine's solve paths (issue 25): "auto" gives the block
# solver (core's drivers on the device) the small batches these cases hold;
# "pipeline" makes every batch take core's drivers on the host over the
# device's passes, the path of the larger batches.
SOLVER_PATHS = ["auto", "pipeline"]


@gpu
@pytest.mark.parametrize("solver", SOLVER_PATHS)
@pytest.mark.parametrize("case", load_cases(PROJECT_CORPUS) + load_cases(EXTERNAL_CORPUS), ids=lambda c: c["id"])
def test_golden_corpora_replay(case, solver, monkeypatch):
    monkeypatch.setenv("RH_CUDA_SOLVER", solver)
    replay_case(case, "native_cuda", oracle=False, own_rounding=True)


@gpu
@pytest.mark.parametrize("solver", SOLVER_PATHS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_randomized_differential_against_numpy(scenario, penalty, dtype, seed, solver, monkeypatch):
    monkeypatch.setenv("RH_CUDA_SOLVER", solver)
    backend = adapter.NativeCudaBackend(dtype)

    def routes(where):
        if "rank_deficient" in where and penalty == "none":  # LAMM solves no system
            assert backend.last_native_diagnostics.solve_route == "least_squares", where

    # The engine sums the weights in double: N, h and lambda agree with the
    # float32 reference's float32 sums to ~1e-7 (ALGORITHM.md, "Precision").
    check_own_rounding_stream(backend, scenario, penalty, dtype, seed, check=routes,
                              schedule_rtol=1e-12 if dtype == "float64" else 1e-6)


@gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("scenario", list(WIDE_SCENARIOS))
def test_systems_past_the_small_rung_agree_with_numpy(scenario, dtype):
    """d = 61 and 131, "none" (Newton solves a system every iteration): the
    pipeline's Cholesky rung through cuSOLVER (factor, inverse, the step
    from it), not the small rung the other scenarios' d = 5 takes."""
    backend = adapter.NativeCudaBackend(dtype)

    def routes(where):
        diagnostics = backend.last_native_diagnostics
        assert diagnostics.solver_path == "pipeline", where
        # (a float32 first batch may also take the least-squares rung: the rcond rule)
        assert diagnostics.cholesky_solves > 0, where

    check_own_rounding_stream(backend, scenario, "none", dtype, 0, check=routes,
                              schedule_rtol=1e-12 if dtype == "float64" else 1e-6)


@gpu
def test_singular_system_takes_the_least_squares_route():
    X, y = linear(300, 3)
    X[:, 2] = X[:, 1]
    backend = adapter.NativeCudaBackend("float64")
    state, diagnostics = backend.update(RenewableHuberState.empty(3, True), X, y, None, config(tau=100.0, ridge=0.0))
    assert diagnostics.solve_route == "least_squares" and diagnostics.used_regularized_fallback
    coefficients = backend.to_host_state(state).coefficients
    assert coefficients[1] == pytest.approx(coefficients[2], abs=1e-8)


@gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["X", "y", "sample_weight"])
def test_bad_values_are_refused_and_the_state_stays(name, dtype):
    X, y = linear(500, 4, dtype=dtype)
    w = np.ones(500, dtype=dtype)
    model = RenewableHuberRegressor(backend="native_cuda", dtype=dtype).fit(X, y, w)
    before = model.state_
    bad = {"X": X.copy(), "y": y.copy(), "sample_weight": w.copy()}
    bad[name].flat[7] = np.nan
    with pytest.raises(ValidationError, match=f"{name} must not contain NaN or infinite values"):
        model.partial_fit(bad["X"], bad["y"], bad["sample_weight"])
    after = model.state_
    np.testing.assert_array_equal(after.coefficients, before.coefficients)
    np.testing.assert_array_equal(after.information, before.information)
    assert after.batch_count == before.batch_count
    model.partial_fit(X, y, w)  # still usable
    assert model.state_.batch_count == 2


@gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("features", [5, 70])
@pytest.mark.parametrize("name", ["X", "y"])
def test_a_pipeline_batch_of_unit_weights_has_its_values_checked(name, features, penalty, dtype, monkeypatch):
    # The host route's deferred check (DeferredCheck): launched with the first
    # point pass's rows for p <= 64 (5 features), on its own at the first wait
    # past that (70); judged before any value reaches the driver. Through the
    # backend itself, which leaves X's and y's values to the engine (the
    # estimator's own validation would refuse a NaN in y before it). The
    # state stays as it was and the next batch is taken.
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    X, y = linear(600, features, dtype=dtype)
    backend = adapter.NativeCudaBackend(dtype)
    cfg = config(penalty)
    state, _ = backend.update(RenewableHuberState.empty(features, True), X, y, None, cfg)
    assert backend.last_native_diagnostics.solver_path == "pipeline"
    before = backend.to_host_state(state)
    bad = {"X": X.copy(), "y": y.copy()}
    bad[name].flat[-3 if name == "X" else 11] = np.inf if name == "X" else np.nan
    with pytest.raises(ValidationError, match=f"{name} must not contain NaN or infinite values"):
        backend.update(state, bad["X"], bad["y"], None, cfg)
    after = backend.to_host_state(state)
    np.testing.assert_array_equal(after.coefficients, before.coefficients)
    np.testing.assert_array_equal(after.information, before.information)
    state, _ = backend.update(state, X, y, None, cfg)
    assert backend.to_host_state(state).batch_count == 2


@gpu
def test_negative_weights_are_refused():
    X, y = linear(100, 3)
    w = np.ones(100)
    w[3] = -1.0
    with pytest.raises(ValidationError, match="non-negative"):
        adapter.NativeCudaBackend("float64").update(RenewableHuberState.empty(3, True), X, y, w, config())


@gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("solver, weighted, name", [
    ("block", False, "X"), ("block", False, "y"),  # checked in the block solver's launch
    ("block", True, "X"), ("block", True, "y"), ("block", True, "sample_weight"),  # check_batch_values
    ("pipeline", True, "y"), ("pipeline", True, "sample_weight"),
    ("pipeline", False, "X"), ("pipeline", False, "y"),  # the deferred check, judged at the first wait
])
def test_the_engine_refuses_bad_values_on_every_route(solver, weighted, name, batched, dtype, monkeypatch):
    # Through the backend, which hands X's, y's and the weights' values to the
    # engine unread (the estimator's own validation would refuse them before
    # it): each of the engine's three checks names the argument, and the state
    # stays as it was, also when the bad slice is the second of update_batches.
    monkeypatch.setenv("RH_CUDA_SOLVER", solver)
    rows, features = 512, 4
    X, y = linear(2 * rows, features, dtype=dtype)
    w = np.linspace(0.5, 1.5, 2 * rows).astype(dtype) if weighted else None
    backend = adapter.NativeCudaBackend(dtype)
    cfg = config("none")
    state, _ = backend.update(RenewableHuberState.empty(features, True), X[:rows], y[:rows],
                              None if w is None else w[:rows], cfg)
    assert backend.last_native_diagnostics.solver_path == solver
    before = backend.to_host_state(state)
    bad = {"X": X.copy(), "y": y.copy(), "sample_weight": None if w is None else w.copy()}
    row = rows + 5 if batched else 5
    if name == "X":
        bad["X"][row, 2] = np.inf
    else:
        bad[name][row] = np.nan
    with pytest.raises(ValidationError, match=f"{name} must not contain NaN or infinite values"):
        if batched:
            backend.update_batches(state, bad["X"], bad["y"], bad["sample_weight"], cfg, rows)
        else:
            backend.update(state, bad["X"][:rows], bad["y"][:rows],
                           None if w is None else bad["sample_weight"][:rows], cfg)
    after = backend.to_host_state(state)
    np.testing.assert_array_equal(after.coefficients, before.coefficients)
    np.testing.assert_array_equal(after.information, before.information)
    assert (after.batch_count, after.n_samples_seen) == (before.batch_count, before.n_samples_seen)
    state, _ = backend.update(state, X[rows:], y[rows:], None if w is None else w[rows:], cfg)  # still usable
    assert backend.to_host_state(state).batch_count == 2


@gpu
@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_steady_state_allocates_nothing_on_the_device(penalty):
    backend = adapter.NativeCudaBackend("float64")
    X, y = linear(4096, 16)
    state = backend.empty_state(16, True, "float64")
    state, _ = backend.update(state, X, y, None, config(penalty))
    grown = backend.cuda_features["workspace_allocations"]
    for seed in range(1, 6):
        X, y = linear(4096 if seed % 2 else 2048, 16, seed)
        state, _ = backend.update(state, X, y, None, config(penalty))
    assert backend.cuda_features["workspace_allocations"] == grown
    assert backend.cuda_features["updates"] == 6


@gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_revert_puts_back_what_the_last_update_replaced(dtype):
    """rh_cuda_engine_revert (C ABI 1.3) through the binding: the replaced
    state comes back bit for bit, once, and not after a failed update."""
    native = adapter._native
    engine = native.Engine(0, dtype, 3, True, False, False)
    cfg = adapter.native_adapter.NativeConfigs(native)(config("none"))
    out = np.empty(4, dtype=dtype)

    def copy():
        coefficients, information = np.empty(4, dtype), np.empty((4, 4), dtype)
        counters = engine.copy_state(coefficients, information)
        return coefficients, information, int(counters.batch_count), int(counters.n_samples_seen)

    with pytest.raises(native.EngineError):
        engine.revert()  # nothing committed yet
    X1, y1 = (a.astype(dtype) for a in linear(500, 3, 1))
    X2, y2 = (a.astype(dtype) for a in linear(300, 3, 2))
    engine.update_host(X1, y1, None, cfg, out)
    first = copy()
    engine.update_host(X2, y2, None, cfg, out)
    second = copy()
    engine.revert()
    back = copy()
    for a, b in zip(back, first):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(native.EngineError, match="no update to revert"):
        engine.revert()
    engine.update_host(X2, y2, None, cfg, out)
    for a, b in zip(copy(), second):
        np.testing.assert_array_equal(a, b)
    y_bad = y2.copy()
    y_bad[5] = np.nan
    with pytest.raises(native.EngineError):
        engine.update_host(X2, y_bad, None, cfg, out)
    with pytest.raises(native.EngineError, match="no update to revert"):
        engine.revert()
    for a, b in zip(copy(), second):
        np.testing.assert_array_equal(a, b)


@gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_engine_keeps_the_meat_only_when_restored_with_one(dtype):
    """C ABI 1.4: restore with a meat and the engine accumulates it (equal to
    the reference's); without one, a copy that asks for it is refused."""
    from renewable_huber.core import NumpyOps, renewable_update

    native = adapter._native
    cfg_py = config("none")
    cfg = adapter.native_adapter.NativeConfigs(native)(cfg_py)
    engine = native.Engine(0, dtype, 3, True, False, False)
    d = 4
    zeros = lambda *shape: np.zeros(shape, dtype)  # noqa: E731
    counters = native.StateCounters(n_features_in=3, fit_intercept=True, n_samples_seen=0, batch_count=0,
                                    previous_lambda=0.0, weight_sum=0.0)
    engine.restore(zeros(d), zeros(d, d), counters)
    with pytest.raises(native.EngineError, match="keeps no meat"):
        engine.copy_state(zeros(d), zeros(d, d), zeros(d, d))
    engine.restore(zeros(d), zeros(d, d), counters, zeros(d, d))
    state = RenewableHuberState.empty(3, True, dtype)
    for seed in (1, 2):
        X, y = (a.astype(dtype) for a in linear(700, 3, seed))
        engine.update_host(X, y, None, cfg, np.empty(d, dtype))
        state, _ = renewable_update(NumpyOps(dtype), state, X, y, None, cfg_py)
    meat = zeros(d, d)
    engine.copy_state(zeros(d), zeros(d, d), meat)
    rtol = 1e-9 if dtype == "float64" else 5e-4
    np.testing.assert_allclose(meat, state.meat, rtol=rtol, atol=rtol * np.abs(state.meat).max())


@gpu
@pytest.mark.parametrize("method", ["partial_fit", "fit"])
def test_out_of_memory_leaves_the_model_usable(method):
    """A batch too large for what is left of the device's memory fails
    cleanly (the state as it was, the engine usable), and the next batch
    works. The memory is really exhausted: CuPy holds all but ~256 MiB.
    A fit has already put the new stream's empty state on the engine when
    the batch fails: the model's stream comes back (issue 24)."""
    cupy = pytest.importorskip("cupy")
    model = RenewableHuberRegressor(backend="native_cuda").fit(*linear(1000, 4))
    before = model.state_
    free, _ = cupy.cuda.runtime.memGetInfo()
    hog = cupy.empty(max(free - (256 << 20), 0), dtype=cupy.uint8)
    try:
        X, y = linear(4_000_000, 4)  # ~700 MB of device work
        with pytest.raises(adapter.DeviceOutOfMemoryError, match="out of device memory|out_of_memory"):
            getattr(model, method)(X, y)
    finally:
        del hog
        cupy.get_default_memory_pool().free_all_blocks()
    after = model.state_
    np.testing.assert_array_equal(after.information, before.information)
    np.testing.assert_array_equal(after.coefficients, before.coefficients)
    assert after.batch_count == 1
    model.partial_fit(*linear(1000, 4, 1))
    assert model.state_.batch_count == 2


@gpu
@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_checkpoints_move_between_the_gpu_and_numpy(tmp_path, penalty):
    X, y = linear(3000, 6)
    gpu_model = RenewableHuberRegressor(backend="native_cuda", penalty=penalty).fit(X[:1500], y[:1500])
    path = gpu_model.save(tmp_path / "m.npz")
    cpu_model = RenewableHuberRegressor.load(path, backend="numpy")
    gpu_model.partial_fit(X[1500:], y[1500:])
    cpu_model.partial_fit(X[1500:], y[1500:])
    np.testing.assert_allclose(gpu_model.coef_, cpu_model.coef_, rtol=1e-6, atol=1e-8)
    back = RenewableHuberRegressor.load(cpu_model.save(tmp_path / "c.npz"), backend="native_cuda")
    np.testing.assert_allclose(back.predict(X[:50]), cpu_model.predict(X[:50]), rtol=1e-10)
    assert back.backend_ == "native_cuda" and back.device_ == "cuda:0"


@gpu
def test_diagnostics_report_host_synchronizations(monkeypatch):
    X, y = linear(4096, 16)
    # the block solver (this batch's size, unit weights): the whole solve, its values checked in the launch
    backend = adapter.NativeCudaBackend("float64")
    backend.update(RenewableHuberState.empty(16, True), X, y, None, config())
    assert backend.last_native_diagnostics.host_syncs == 1
    assert backend.last_native_diagnostics.solver_path == "block"
    # the pipeline: one per iteration (plus fallbacks), none at the end for a host batch; a batch of unit
    # weights has its values judged with the first read-back, a weighted batch (the weight sets h and
    # lambda) in a synchronization of its own first
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    backend = adapter.NativeCudaBackend("float64")
    state, diagnostics = backend.update(RenewableHuberState.empty(16, True), X, y, None, config())
    native = backend.last_native_diagnostics
    assert native.solver_path == "pipeline"
    assert native.host_syncs >= diagnostics.iterations
    assert native.host_syncs <= 2 * diagnostics.iterations
    weighted = adapter.NativeCudaBackend("float64")
    _, weighted_diagnostics = weighted.update(RenewableHuberState.empty(16, True), X, y, np.ones(len(y)), config())
    assert weighted_diagnostics.iterations == diagnostics.iterations
    assert weighted.last_native_diagnostics.host_syncs == native.host_syncs + 1
    # a caller's device batch is waited for once at the end (the caller may free it when the call returns)
    if importlib.util.find_spec("cupy") is None:
        return
    import cupy
    on_device = adapter.NativeCudaBackend("float64")
    device_state, device_diagnostics = on_device.update(RenewableHuberState.empty(16, True), cupy.asarray(X),
                                                        cupy.asarray(y), None, config())
    assert device_diagnostics.iterations == diagnostics.iterations
    assert on_device.last_native_diagnostics.host_syncs == native.host_syncs + 1
    # the closing that was not waited for is in the state the next reader sees
    np.testing.assert_array_equal(backend.to_host_state(state).information,
                                  on_device.to_host_state(device_state).information)
    monkeypatch.delenv("RH_CUDA_SOLVER")
    features = RenewableHuberRegressor(backend="native_cuda").fit(X, y).cuda_features_
    assert features["host_syncs"] >= 1 and features["device"] == "cuda:0"


@gpu
@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_updates_not_waiting_for_their_closing_give_the_bits_of_a_waited_stream(monkeypatch, penalty):
    # The host route returns before its closing ends, and the commit swaps
    # the state's buffers while the closing may still write them: the next
    # update must still read the closed state. Many small updates in a row
    # against the same stream with the engine drained after each, bit for
    # bit. (The guard of the pass exchange, StreamPoint, is not what this
    # can catch: the closing's receive kernel runs long before the next
    # update's host writes here.)
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    X, y = linear(64 * 40, 40, seed=3)
    finals = []
    for drained in (False, True):
        backend = adapter.NativeCudaBackend("float64")
        state = RenewableHuberState.empty(40, True)
        for k in range(40):
            rows = slice(64 * k, 64 * (k + 1))
            state, _ = backend.update(state, X[rows], y[rows], None, config(penalty))
            assert backend.last_native_diagnostics.solver_path == "pipeline"
            if drained:
                backend._current(state).synchronize()
        host = backend.to_host_state(state)
        finals.append((host.coefficients, host.information))
    np.testing.assert_array_equal(finals[0][0], finals[1][0])
    np.testing.assert_array_equal(finals[0][1], finals[1][1])


@gpu
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lamm_on_the_host_reads_back_once_per_iteration(monkeypatch, dtype):
    # core::lamm on the host (issue 25): each gradient's launches carry the
    # trials the driver will try, proposed on the device; they answer the
    # driver only when its candidates equal the device's bit for bit. Were
    # they never equal, every iteration would cost two read-backs (the
    # gradient, then a pass of trials) besides the starting point (the
    # batch's checks come with the first read-back; the closing is not
    # waited for): 2 * iterations + 1 at least.
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    X, y = linear(4096, 40)
    backend = adapter.NativeCudaBackend(dtype)
    _, diagnostics = backend.update(RenewableHuberState.empty(40, True), X.astype(dtype), y.astype(dtype), None,
                                    config(penalty="l1", tol=1e-6))
    native = backend.last_native_diagnostics
    print(f"{dtype}: {diagnostics.iterations} LAMM iterations, {native.host_syncs} synchronizations")
    assert native.solver_path == "pipeline" and diagnostics.iterations >= 3
    assert native.host_syncs < 2 * diagnostics.iterations + 1


@gpu
def test_a_pickled_model_resumes_on_the_gpu():
    import pickle

    X, y = linear(2000, 5)
    model = RenewableHuberRegressor(backend="native_cuda").fit(X[:1000], y[:1000])
    clone = pickle.loads(pickle.dumps(model))
    model.partial_fit(X[1000:], y[1000:])
    clone.partial_fit(X[1000:], y[1000:])
    np.testing.assert_array_equal(model.coef_, clone.coef_)


@gpu
def test_float32_fast_math_is_opt_in_and_close():
    X, y = linear(8192, 32, dtype="float32")
    strict = RenewableHuberRegressor(backend="native_cuda", dtype="float32").fit(X, y)
    fast = RenewableHuberRegressor(backend="native_cuda", dtype="float32", cuda_fast_math=True).fit(X, y)
    assert strict.cuda_features_["fast_math"] is False and fast.cuda_features_["fast_math"] is True
    # TF32 products (10-bit mantissas): its own tolerance
    np.testing.assert_allclose(fast.coef_, strict.coef_, rtol=5e-3, atol=5e-3)


@gpu
@pytest.mark.parametrize("size", [1000, 30_000])  # 30,000 x 6 doubles: staged ahead (host_staging.cu)
@pytest.mark.parametrize("weighted", [False, True])
def test_update_batches_is_the_loop_and_its_revert_gives_back_the_state_before_the_call(weighted, size):
    # C ABI 1.6: the slices in one engine call, the loop's bits; the engine's
    # revert after it (what rollback uses) goes back past every slice.
    X, y = linear(500 + 3 * size, 6)
    w = np.linspace(0.5, 1.5, 500 + 3 * size) if weighted else None
    part = (lambda a, s: None if a is None else a[s])
    looped, batched = adapter.NativeCudaBackend("float64"), adapter.NativeCudaBackend("float64")
    states = [b.update(RenewableHuberState.empty(6, True), X[:500], y[:500], part(w, slice(0, 500)), config())[0]
              for b in (looped, batched)]
    meat = states[1].meat is not None
    before = batched._copy_out(batched._engine, 7, meat)
    state = states[0]
    for start in range(500, 500 + 3 * size, size):
        state, _ = looped.update(state, X[start:start + size], y[start:start + size],
                                 part(w, slice(start, start + size)), config())
    _, diagnostics = batched.update_batches(states[1], X[500:], y[500:], part(w, slice(500, None)), config(), size)
    assert len(diagnostics) == 3
    a, b = looped._copy_out(looped._engine, 7, meat), batched._copy_out(batched._engine, 7, meat)
    for x, z in zip(a[:3], b[:3]):
        np.testing.assert_array_equal(x, z)
    assert int(b[3].batch_count) == 4 and int(b[3].n_samples_seen) == 500 + 3 * size
    batched._engine.revert()
    reverted = batched._copy_out(batched._engine, 7, meat)
    for x, z in zip(before[:3], reverted[:3]):
        np.testing.assert_array_equal(x, z)
    assert int(reverted[3].batch_count) == 1


@gpu
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_large_host_slices_staged_ahead_give_the_loops_bits_all_or_nothing(dtype, weighted):
    # Slices of 20,000 x 40 (3.4 MB in float32, 6.7 MB in float64) are staged ahead (host_staging.cu):
    # copied by host threads chunk by chunk into the process's ring of four 2 MiB pinned chunks (two
    # to four chunks a slice: the ring wraps within and across slices) and to the device on a stream
    # of their own while the slice before is solved, then read as device batches. Same values, so
    # the loop of host partial_fits' bits.
    n, size = 120_000, 20_000
    X, y = linear(n + 500, 40)
    X, y = X.astype(dtype), y.astype(dtype)
    w = np.linspace(0.5, 1.5, n + 500).astype(dtype) if weighted else None
    part = (lambda a, s: None if a is None else a[s])
    looped = RenewableHuberRegressor(backend="native_cuda", dtype=dtype).fit(X[:500], y[:500], part(w, slice(0, 500)))
    batched = RenewableHuberRegressor(backend="native_cuda", dtype=dtype).fit(X[:500], y[:500], part(w, slice(0, 500)))
    X, y, w = X[500:], y[500:], part(w, slice(500, None))
    # A NaN in the second of six staged slices: slice 3 is being staged when it fails; nothing commits.
    bad = X.copy()
    bad[size + 7, 3] = np.nan
    before = batched.state_
    with pytest.raises(ValidationError, match="X must not contain NaN"):
        batched.partial_fit_batches(bad, y, w, batch_size=size)
    np.testing.assert_array_equal(batched.state_.information, before.information)
    assert batched.state_.batch_count == 1
    # Then the good stream, against the loop of host partial_fits.
    for start in range(0, n, size):
        looped.partial_fit(X[start:start + size], y[start:start + size], part(w, slice(start, start + size)))
    batched.partial_fit_batches(X, y, w, batch_size=size)
    a, b = looped.state_, batched.state_
    np.testing.assert_array_equal(a.coefficients, b.coefficients)
    np.testing.assert_array_equal(a.information, b.information)
    if a.meat is not None:
        np.testing.assert_array_equal(a.meat, b.meat)
    assert (a.batch_count, a.n_samples_seen) == (b.batch_count, b.n_samples_seen) == (7, n + 500)
    # the two device buffers are the engine's now (the pinned ring is the process's)
    assert batched.cuda_features_["workspace_bytes"] > looped.cuda_features_["workspace_bytes"]
    # A NaN in the last slice, after five committed on the engine: the model as it was.
    bad = X.copy()
    bad[n - 3, 0] = np.inf
    with pytest.raises(ValidationError, match="X must not contain NaN"):
        batched.partial_fit_batches(bad, y, w, batch_size=size)
    np.testing.assert_array_equal(batched.state_.information, b.information)
    assert batched.state_.batch_count == 7


@gpu
def test_device_batches_in_one_call_give_the_loops_bits():
    cupy = pytest.importorskip("cupy")
    X, y = linear(9000, 8)
    dX, dy = cupy.asarray(X), cupy.asarray(y)
    looped = RenewableHuberRegressor(backend="native_cuda").fit(dX[:1000], dy[:1000])
    batched = RenewableHuberRegressor(backend="native_cuda").fit(dX[:1000], dy[:1000])
    for start in range(1000, 9000, 3000):
        looped.partial_fit(dX[start:start + 3000], dy[start:start + 3000])
    batched.partial_fit_batches(dX[1000:], dy[1000:], batch_size=3000)
    np.testing.assert_array_equal(looped.state_.information, batched.state_.information)
    np.testing.assert_array_equal(looped.coef_, batched.coef_)
    assert batched.state_.batch_count == 4


@gpu
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_engines_built_after_others_were_dropped_solve_as_the_first_did(monkeypatch, dtype):
    # The engines lend the process's cuBLAS and cuSOLVER handles (device_context.cuh),
    # the pair given back last first: an engine built after another was dropped
    # takes its pair and must bind its own stream and its own math mode. Engines
    # alive at once, built and dropped interleaved, each solving one batch on the
    # pipeline (d = 81: cuBLAS's GEMM forms the Gram, cuSOLVER factors the system),
    # give the first engine's bits. In float32 a TF32 engine (cuda_fast_math) holds
    # the pair just before a strict engine takes it: its own bits differ from the
    # strict ones (so the check below can fail), and the strict engine after it must
    # not inherit its math mode.
    import gc

    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    X, y = linear(3000, 80)
    X, y = X.astype(dtype), y.astype(dtype)

    def solve(model):
        model.fit(X, y)
        assert model._current_backend().last_native_diagnostics.solver_path == "pipeline"
        return model.coef_.copy(), model.intercept_

    first = RenewableHuberRegressor(backend="native_cuda", dtype=dtype)
    want = solve(first)
    for round_ in range(3):
        second = RenewableHuberRegressor(backend="native_cuda", dtype=dtype)
        second.fit(X[:500], y[:500])  # its engine made while the first's is alive
        del first
        gc.collect()  # the first's pair back
        if dtype == "float32":
            fast = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, cuda_fast_math=True)
            fast_coef, _ = solve(fast)  # takes the first's pair, in TF32 mode
            assert not np.array_equal(fast_coef, want[0]), "TF32 gave the strict bits: this check checks nothing"
            del fast
            gc.collect()  # the pair back, last: the next engine takes it
        third = RenewableHuberRegressor(backend="native_cuda", dtype=dtype)
        for model in (second, third):
            coef, intercept = solve(model)
            np.testing.assert_array_equal(coef, want[0], err_msg=f"round {round_}")
            assert intercept == want[1]
        del second
        gc.collect()
        first = third
