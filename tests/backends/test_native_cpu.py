"""The C++ CPU engine against the NumPy reference (randomized differential
tests), plus its binding contract: versions, GIL release, errors, layouts."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

if importlib.util.find_spec("_renewable_huber_native_cpu") is None:  # skip only when genuinely absent
    pytest.skip("renewable-huber-native-cpu is not installed", allow_module_level=True)

from renewable_huber.backends import native_cpu_backend as adapter  # noqa: E402
from renewable_huber.backends.native_cpu_backend import NativeCpuBackend  # noqa: E402
from renewable_huber.backends.numpy_backend import NumpyBackend  # noqa: E402
from renewable_huber.exceptions import BackendUnavailableError, RenewableHuberError, ValidationError  # noqa: E402
from renewable_huber.state import RenewableHuberState  # noqa: E402

from own_rounding import (  # noqa: E402
    ATOL,
    FAST_TOL,
    RTOL,
    SCENARIOS,
    assert_close_entrywise,
    check_own_rounding_stream,
    config,
    fast_scenario,
    information_allowed,
    noise_floor,
    stream,
)

def assert_states_close(native, reference, dtype, where):
    rtol, atol = RTOL[dtype], ATOL[dtype]
    np.testing.assert_allclose(native.coefficients, reference.coefficients, rtol=rtol, atol=atol, err_msg=where)
    scale = np.max(np.abs(reference.information))
    np.testing.assert_allclose(native.information, reference.information, rtol=rtol, atol=atol * scale, err_msg=where)
    assert native.coefficients.dtype == np.dtype(dtype)
    assert (native.n_samples_seen, native.batch_count) == (reference.n_samples_seen, reference.batch_count)
    assert native.weight_sum == pytest.approx(reference.weight_sum, rel=1e-12)
    assert native.previous_lambda == pytest.approx(reference.previous_lambda, rel=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_randomized_differential_against_numpy(scenario, penalty, dtype, seed):
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
        assert native.last_kernel_path == "reference_order", where  # small batches: kernel="auto" mirrors NumPy
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
    assert info["isa_level"] in ("baseline", "x86-64-v3", "x86-64-v4")
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
    """An update held inside the engine (the _UpdateGate test hook, reached
    after the inputs are checked) while this thread runs Python: the gate
    records whether the updating thread held the GIL when it arrived, and with
    the GIL held it would not wait, so the Python below could not run while
    the update is inside. No sleeps, no timings."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(2000, 12))
    y = X @ rng.normal(size=12) + rng.normal(size=2000)
    backend = NativeCpuBackend("float64", n_jobs=1)
    cfg = config(max_iter=50)
    empty = RenewableHuberState.empty(12, True)
    gate = adapter._native._UpdateGate()
    backend._engine._set_update_gate(gate)
    result = {}
    updater = threading.Thread(target=lambda: result.setdefault("state", backend.update(empty, X, y, None, cfg)))
    updater.start()
    try:
        gate.wait_arrived(1)
        assert not gate.gil_held_at_arrival
        ran_while_inside = sum(range(1000))  # Python on this thread while the update is held inside the engine
        assert updater.is_alive() and gate.arrivals == 1
    finally:
        gate.open()
        updater.join()
        backend._engine._set_update_gate(None)
    assert ran_while_inside == 499500
    state, diagnostics = result["state"]
    alone, _ = NativeCpuBackend("float64", n_jobs=1).update(empty, X, y, None, cfg)
    np.testing.assert_array_equal(state.coefficients, alone.coefficients)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_path_randomized_differential_against_numpy(scenario, penalty, dtype, seed):
    native = NativeCpuBackend(dtype, kernel="fast")

    def on_the_fast_path(where):
        assert native.last_kernel_path == "fast", where
        if "rank_deficient" in where and penalty == "none":  # LAMM solves no system
            assert native.last_solve_route == "least_squares", where

    check_own_rounding_stream(native, scenario, penalty, dtype, seed, check=on_the_fast_path)


@pytest.mark.parametrize("scenario", ["plain", "weights_with_zeros", "no_intercept", "many_batches"])
@pytest.mark.parametrize("seed", range(6))
def test_fast_path_noise_floor_with_tol_1e_12(scenario, seed):
    """Documents the noise floor: with tol = 1e-12 every Newton run ends below
    it, where accept/reject is decided by rounding, and the fast path lands
    within NF = sqrt(2 eps |F| / lambda_min(J/N)) of the reference (measured:
    at most ~0.3 NF, a few 1e-9 absolute), not within rtol 1e-9."""
    cfg, p, fit_intercept, batches, _ = fast_scenario(scenario, "none", "float64", seed, tol=1e-12)
    native, reference = NativeCpuBackend("float64", kernel="fast"), NumpyBackend("float64")
    a = b = RenewableHuberState.empty(p, fit_intercept)
    ramp = 0.0
    for index, (X, y, w) in enumerate(batches):
        a, da = native.update(a, X, y, w, cfg)
        b, db = reference.update(b, X, y, w, cfg)
        where = f"noise floor/{scenario}/seed {seed}/batch {index + 1}"
        np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=0, atol=noise_floor(b, db.objective),
                                   err_msg=where)
        # J moves only through rows in a kappa ramp, by |dr| / (2h) each (and through J_prev)
        ramp = ramp + information_allowed(X, y, w, b, a, cfg, db.bandwidth)
        assert_close_entrywise(a.information, b.information, 1e-9, 1e-10 * np.max(np.abs(b.information)) + 2 * np.abs(ramp),
                               where)


def test_auto_kernel_switches_at_the_documented_threshold():
    threshold = adapter._native.FAST_KERNEL_THRESHOLD
    assert threshold == 2**18
    rng = np.random.default_rng(4)
    backend = NativeCpuBackend("float64")
    assert backend.kernel == "auto"
    for rows, expected in ((900, "reference_order"), (1000, "fast")):  # rows * 17 * 17 vs 2**18
        X = rng.normal(size=(rows, 16))
        y = X @ rng.normal(size=16) + rng.normal(size=rows)
        backend.update(RenewableHuberState.empty(16, True), X, y, None, config())
        assert backend.last_kernel_path == expected, rows
    forced = NativeCpuBackend("float64", kernel="reference_order")
    forced.update(RenewableHuberState.empty(16, True), X, y, None, config())
    assert forced.last_kernel_path == "reference_order"


def test_fast_path_reports_its_gram_updates_and_cholesky_route():
    rng = np.random.default_rng(8)
    coef = rng.normal(size=10)
    X = rng.normal(size=(3000, 10))
    y = X @ coef + rng.normal(size=3000)  # unit noise: many rows near the kappa ramps at +-tau
    backend = NativeCpuBackend("float64", kernel="fast")
    state, _ = backend.update(RenewableHuberState.empty(10, True), X, y, None, config(tol=1e-6))
    X2 = rng.normal(size=(3000, 10))
    backend.update(state, X2, X2 @ coef + rng.normal(size=3000), None, config(tol=1e-6))
    diagnostics = backend.last_native_diagnostics
    assert diagnostics.kernel_path == "fast"
    assert diagnostics.solve_route == "cholesky"
    # one full Gram per batch; later Newton Grams and the information update
    # re-add only the rows whose weight changed
    assert diagnostics.gram_full_updates == 1
    assert diagnostics.gram_incremental_updates >= 1
    assert 0 < diagnostics.gram_changed_rows < 3000


def test_unknown_kernel_is_refused():
    with pytest.raises(ValidationError, match="kernel"):
        NativeCpuBackend("float64", kernel="turbo")


def test_results_do_not_depend_on_which_thread_ran_a_part():
    """Under core contention the engine's workers show up late and the calling
    thread runs their parts; the row partition and the order in which the
    parts' sums are combined must not change, so a stream whose workers are
    all late, one whose workers take their parts, and a checkpoint-resumed
    stream are bit-identical (a regression seen in `make run`: the resumed
    stream differed). Late workers are forced with the pool's test hook
    (_hold_workers: the caller runs every part and reports it late), and the
    test asserts that they occurred, instead of hoping a busy core causes them."""
    from renewable_huber import RenewableHuberRegressor

    rng = np.random.default_rng(11)
    X = rng.normal(size=(60_000, 12))
    y = X @ rng.normal(size=12) + rng.standard_t(2, size=60_000)
    y[::20] += 60.0

    def stream(held, batches=range(0, 60_000, 10_000), model=None):
        model = model or RenewableHuberRegressor(backend="native_cpu", n_jobs=2)
        late = []
        for start in batches:
            model.partial_fit(X[start : start + 10_000], y[start : start + 10_000])
            backend = model._current_backend()
            backend._engine._hold_workers(held)  # from the second batch on (the engine exists after the first)
            late.append(int(backend.last_native_diagnostics.late_dispatches))
            assert backend.last_kernel_path == "fast"
        return model, late

    held_model, held_late = stream(True)
    assert all(count > 0 for count in held_late[1:]), held_late  # every part after the first batch ran late
    free_model, _ = stream(False)
    first_half, _ = stream(True, range(0, 30_000, 10_000))
    resumed = RenewableHuberRegressor(backend="native_cpu", n_jobs=2)
    resumed.load_state_dict(first_half.state_dict())
    resumed, _ = stream(False, range(30_000, 60_000, 10_000), resumed)
    for model in (free_model, resumed):
        np.testing.assert_array_equal(model.state_.coefficients, held_model.state_.coefficients)
        np.testing.assert_array_equal(model.state_.information, held_model.state_.information)


# ---------------------------------------------------------------- finiteness test
# The estimator validates inputs with the backend's finiteness test when it
# has one (NativeCpuBackend.all_finite: the engine's vectorized exponent-bit
# test); it must agree with NumPy's everywhere.


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("engine_dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(37, 5), (20_000, 7)])  # the larger one is split over two threads
def test_native_finiteness_test_agrees_with_numpy(dtype, engine_dtype, shape):
    backend = NativeCpuBackend(engine_dtype, n_jobs=2)
    rng = np.random.default_rng(5)
    a = rng.normal(size=shape).astype(dtype)
    a[3, 3] = np.finfo(dtype).max
    a[4, 4] = -np.finfo(dtype).max
    a[5, 0] = np.finfo(dtype).smallest_subnormal
    a[6, 1] = -0.0
    assert backend.all_finite(a) is True
    rows = shape[0]
    for bad in (np.nan, np.inf, -np.inf):
        for where in [(0, 0), (rows - 1, 4), (rows // 2, 2), (rows // 2 - 1, 3)]:
            b = a.copy()
            b[where] = bad
            assert backend.all_finite(b) is False, (bad, where)
            assert backend.all_finite(b.reshape(-1)) is False
            # layouts and dtypes the engine does not take go through NumPy
            assert backend.all_finite(np.asfortranarray(b)) is False
            assert backend.all_finite(b.astype(b.dtype.newbyteorder(">"))) is False
    assert backend.all_finite(a[:, ::2]) is True
    assert backend.all_finite(np.empty((0, 3), dtype=dtype)) is True


@pytest.mark.parametrize("name", ["X", "y", "sample_weight"])
def test_non_finite_input_is_rejected_through_the_native_check(name, raises_exact):
    from renewable_huber import RenewableHuberRegressor

    rng = np.random.default_rng(6)
    X, y, w = rng.normal(size=(50, 3)), rng.normal(size=50), np.ones(50)
    model = RenewableHuberRegressor(backend="native_cpu").fit(X, y, w)
    before = model.state_dict()
    bad = {"X": X.copy(), "y": y.copy(), "sample_weight": w.copy()}
    bad[name].reshape(-1)[-1] = np.nan
    with raises_exact(ValidationError, f"{name} must not contain NaN or infinite values"):
        model.partial_fit(bad["X"], bad["y"], bad["sample_weight"])
    after = model.state_dict()
    np.testing.assert_array_equal(after["coefficients"], before["coefficients"])
    assert after["batch_count"] == before["batch_count"] == 1


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kernel", ["fast", "reference_order"])
def test_non_finite_X_is_rejected_by_the_engines_own_test(dtype, kernel, raises_exact):
    # The estimator leaves X's finiteness to this engine (capabilities.checks_X_finite):
    # the fast path tests it while it builds its column panels, split over
    # two threads here, the reference-order path with its own test.
    assert NativeCpuBackend.capabilities.checks_X_finite is True
    rng = np.random.default_rng(11)
    X = rng.normal(size=(4096, 16)).astype(dtype)
    y = (X @ rng.normal(size=16)).astype(dtype)
    backend = NativeCpuBackend(dtype, n_jobs=2, kernel=kernel)
    settings = config()
    state = backend.as_backend_state(RenewableHuberState.empty(16, True, dtype))
    good, _ = backend.update(state, X, y, None, settings)
    assert backend.last_kernel_path == kernel
    for row, column, bad in [(0, 0, np.nan), (2047, 15, np.inf), (2048, 3, -np.inf), (4095, 15, np.nan)]:
        broken = X.copy()
        broken[row, column] = bad
        snapshot = (good.coefficients.copy(), good.information.copy())
        with raises_exact(ValidationError, "X must not contain NaN or infinite values"):
            backend.update(good, broken, y, None, settings)
        np.testing.assert_array_equal(good.coefficients, snapshot[0])
        np.testing.assert_array_equal(good.information, snapshot[1])


# ---------------------------------------------------------------- row widths
# The fast path reads narrow rows (p up to 32 float64 / 64 float32 values)
# with its one-read register passes, whose loads may run past a row's end
# and whose last rows go through a zero-padded copy; wider rows take the
# blocked BLAS passes. Every width class, odd widths included, must agree
# with the reference.


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("p", [1, 3, 5, 7, 13, 17, 31, 32, 33, 63, 64, 65])
def test_fast_path_every_row_width_agrees_with_numpy(p, penalty, dtype):
    rng = np.random.default_rng(100 + p)
    # the solver default tolerance: far tighter ones end at the rounding noise
    # floor, where accept/reject (and so "converged") is decided by rounding
    cfg = config(penalty, tol=FAST_TOL[dtype], max_iter=500)
    native, reference = NativeCpuBackend(dtype, kernel="fast"), NumpyBackend("float64")
    a = RenewableHuberState.empty(p, True, dtype)
    b = RenewableHuberState.empty(p, True, "float64")
    for X, y, w in stream(rng, 2, 3 * p + 41, p, dtype, weights=True):
        a, da = native.update(a, X, y, w, cfg)
        b, _ = reference.update(b, X.astype(np.float64), y.astype(np.float64),
                                None if w is None else w.astype(np.float64), cfg)
        assert native.last_kernel_path == "fast" and da.converged
    scale = 1.0 + np.max(np.abs(b.coefficients))
    band = {("none", "float64"): 1e-5, ("l1", "float64"): 2e-3,
            ("none", "float32"): 2e-3, ("l1", "float32"): 1e-2}[penalty, dtype]
    np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=0, atol=band * scale)


# At the latency class's shape (and at rows too wide for the panels) fast
# LAMM evaluates most majorization trials from its local Huber model
# (docs/native-cpu.md; the C++ tests check that the model serves there and
# agrees with passes): the whole path must still agree with the reference.
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("p", [16, 80])
def test_fast_l1_at_local_model_scale_agrees_with_numpy(p, dtype):
    rng = np.random.default_rng(500 + p)
    cfg = config("l1", tol=FAST_TOL[dtype])
    native, reference = NativeCpuBackend(dtype, kernel="fast"), NumpyBackend(dtype)
    a = b = RenewableHuberState.empty(p, True, dtype)
    for index, (X, y, w) in enumerate(stream(rng, 3, 4096, p, dtype, weights=True)):
        a, da = native.update(a, X, y, w, cfg)
        b, db = reference.update(b, X, y, w, cfg)
        where = f"p={p}/{dtype}/batch {index + 1}"
        assert native.last_kernel_path == "fast" and da.converged and db.converged, where
        scale = 1.0 + np.max(np.abs(b.coefficients))
        band = 1e-6 if dtype == "float64" else 5e-3  # float32: both stop at noise-level decisions
        np.testing.assert_allclose(a.coefficients, b.coefficients, rtol=0, atol=band * scale, err_msg=where)
        np.testing.assert_allclose(da.objective, db.objective, rtol=1e-9 if dtype == "float64" else 1e-4, err_msg=where)


ISA_LEVELS = ["baseline", "x86-64-v3", "x86-64-v4"]


@pytest.mark.parametrize("level", ISA_LEVELS[:-1])
def test_fast_path_agrees_with_numpy_at_lower_isa_levels(level):
    # The narrow kernels exist once per instruction-set level and a CPU runs
    # only its highest; RH_NATIVE_ISA_LEVEL caps it, read once per process,
    # so the row-width test reruns in a child process at each lower level.
    native_level = adapter._native.isa_level()
    expected = min(level, native_level, key=ISA_LEVELS.index)
    env = dict(os.environ, RH_NATIVE_ISA_LEVEL=level)
    probe = subprocess.run([sys.executable, "-c", "import _renewable_huber_native_cpu as m; print(m.isa_level())"],
                           env=env, capture_output=True, text=True, timeout=60, check=True)
    assert probe.stdout.strip() == expected
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"{__file__}::test_fast_path_every_row_width_agrees_with_numpy"],
        env=env, capture_output=True, text=True, timeout=900)
    assert child.returncode == 0, child.stdout[-4000:] + child.stderr[-2000:]
    assert "passed" in child.stdout and "failed" not in child.stdout


def test_diagnostics_built_by_the_adapter_equal_ordinary_ones():
    # The adapter builds UpdateDiagnostics without the frozen __init__
    # (_from_fields): every field must be there, typed, and still frozen.
    from renewable_huber.core.diagnostics import UpdateDiagnostics

    rng = np.random.default_rng(12)
    X = rng.normal(size=(64, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.normal(size=64)
    backend = NativeCpuBackend("float64", n_jobs=1)
    state = backend.as_backend_state(RenewableHuberState.empty(3, True, "float64"))
    _, diagnostics = backend.update(state, X, y, None, config())
    assert set(vars(diagnostics)) == {field.name for field in dataclasses.fields(UpdateDiagnostics)}
    assert diagnostics == UpdateDiagnostics(**diagnostics.to_dict())
    assert hash(diagnostics) == hash(UpdateDiagnostics(**diagnostics.to_dict()))
    assert type(diagnostics.iterations) is int and type(diagnostics.converged) is bool
    assert type(diagnostics.solve_route) is str and diagnostics.solve_route in {"cholesky", "lu", "least_squares"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        diagnostics.iterations = 0
