"""The CUDA engine's block solver: a small batch's whole update (core's own
Newton and LAMM drivers over a block-cooperative evaluator, then the
batch's closing) in one launch and one synchronization. It must agree with
the multi-kernel pipeline (RH_CUDA_SOLVER=pipeline) and the NumPy reference
to rounding, report its path, hand a system its Cholesky rung refuses to the
pipeline with the pipeline's own bits, and leave larger batches (and
cuda_graphs=True) to the pipeline. GPU tests are marked `gpu`; the switch's
parsing runs anywhere.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

if importlib.util.find_spec("_renewable_huber_native_cuda") is None:  # skip only when genuinely absent
    pytest.skip("renewable-huber-native-cuda is not installed", allow_module_level=True)

from renewable_huber import RenewableHuberRegressor  # noqa: E402
from renewable_huber.backends import native_cuda_backend as adapter  # noqa: E402
from renewable_huber.exceptions import ValidationError  # noqa: E402

gpu = pytest.mark.gpu


def contaminated(n, p, dtype, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    coef = rng.normal(size=p) * (rng.uniform(size=p) < 0.6)
    y = X @ coef + 0.5 + rng.standard_t(2, size=n)
    y[:: max(n // 40, 1)] += 25.0
    w = rng.uniform(0.2, 2.0, size=n).astype(dtype) if weighted else None
    return X.astype(dtype), y.astype(dtype), w


def fit_stream(X, y, w, batch, **params):
    model = RenewableHuberRegressor(backend="native_cuda", **params)
    paths = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, len(y), batch):
            part = slice(start, start + batch)
            model.partial_fit(X[part], y[part], None if w is None else w[part])
            paths.append(model._current_backend().last_native_diagnostics.solver_path)
    return model, paths


# ---------------------------------------------------------------- any machine


@pytest.mark.parametrize("value, expected", [("pipeline", "pipeline"), ("block", "block"), ("auto", "auto"),
                                             ("", "auto"), (" block ", "block")])
def test_the_solver_choice_is_read_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("RH_CUDA_SOLVER", value)
    assert adapter.solver_choice_requested() == expected


def test_without_the_variable_the_choice_is_auto(monkeypatch):
    monkeypatch.delenv("RH_CUDA_SOLVER", raising=False)
    assert adapter.solver_choice_requested() == "auto"


def test_a_bad_solver_choice_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("RH_CUDA_SOLVER", "fast")
    with pytest.raises(ValidationError, match="RH_CUDA_SOLVER must be one of 'auto', 'pipeline', 'block', got 'fast'"):
        adapter.solver_choice_requested()


@pytest.mark.parametrize("value, expected", [("", 0), ("1", 1), (" 8 ", 8), ("4096", 4096)])
def test_the_block_tiles_knob_is_read_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("RH_CUDA_BLOCK_TILES", value)
    assert adapter.block_tiles_requested() == expected


@pytest.mark.parametrize("value", ["0", "4097", "-3", "2.5", "many"])
def test_a_bad_block_tiles_knob_is_refused_by_name_anywhere(monkeypatch, value):
    monkeypatch.setenv("RH_CUDA_BLOCK_TILES", value)
    with pytest.raises(ValidationError, match=f"RH_CUDA_BLOCK_TILES must be an integer from 1 to 4096, got '{value}'"):
        adapter.block_tiles_requested()


@pytest.mark.parametrize("tiles", [-1, 65536])
def test_block_tiles_outside_the_abi_field_are_refused_by_the_binding(tiles):
    # Checked before any engine is made: no device needed.
    with pytest.raises(ValueError, match=f"block_tiles must be from 1 to 4096 \\(0: the default\\), got {tiles}"):
        adapter._native.Engine(0, "float64", 3, True, block_tiles=tiles)


# ---------------------------------------------------------------- GPU


@gpu
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_block_solver_agrees_with_the_pipeline_and_numpy(monkeypatch, dtype, penalty, weighted, fit_intercept):
    X, y, w = contaminated(3000, 12, dtype, seed=3, weighted=weighted)
    params = dict(dtype=dtype, penalty=penalty, fit_intercept=fit_intercept)
    block, paths = fit_stream(X, y, w, 1000, **params)
    assert paths == ["block"] * 3
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    pipeline, pipeline_paths = fit_stream(X, y, w, 1000, **params)
    assert pipeline_paths == ["pipeline"] * 3
    reference = RenewableHuberRegressor(backend="numpy", **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, 3000, 1000):
            part = slice(start, start + 1000)
            reference.partial_fit(X[part], y[part], None if w is None else w[part])
    rtol, atol = (1e-7, 1e-9) if dtype == "float64" else (2e-3, 2e-4)
    for other in (pipeline, reference):
        np.testing.assert_allclose(block.state_.coefficients, other.state_.coefficients, rtol=rtol, atol=atol)
        # J's small entries cancel (sums of +-kappa z z'): compared at the matrix's own scale
        scale = np.abs(other.state_.information).max()
        np.testing.assert_allclose(block.state_.information, other.state_.information, rtol=0,
                                   atol=scale * (1e-10 if dtype == "float64" else 1e-3))
    assert block.n_samples_seen_ == 3000 and block.state_.batch_count == 3


@gpu
@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_block_solver_serves_the_latency_class_in_two_synchronizations(penalty):
    X, y, _ = contaminated(4096, 16, "float64", seed=1)
    model, paths = fit_stream(X, y, None, 4096, penalty=penalty)
    native = model._current_backend().last_native_diagnostics
    assert paths == ["block"]
    assert native.host_syncs == 2  # the batch's checks, then the outcome and coefficients
    assert native.iterations == model.n_iter_ >= 1


@gpu
def test_a_refused_system_goes_to_the_pipeline_with_its_bits(monkeypatch):
    X, y, _ = contaminated(600, 4, "float64", seed=2)
    X[:, 3] = X[:, 2]  # singular without a ridge: the block's Cholesky rung refuses it
    params = dict(tau=100.0, ridge=0.0)
    model, paths = fit_stream(X, y, None, 600, **params)
    assert paths == ["block_then_pipeline"]
    native = model._current_backend().last_native_diagnostics
    assert native.lu_solves + native.least_squares_solves >= 1  # the pipeline's rungs past Cholesky
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    pipeline, _ = fit_stream(X, y, None, 600, **params)
    np.testing.assert_array_equal(model.state_.coefficients, pipeline.state_.coefficients)
    np.testing.assert_array_equal(model.state_.information, pipeline.state_.information)


@gpu
def test_large_batches_and_cuda_graphs_take_the_pipeline():
    X, y, _ = contaminated(20_000, 40, "float64", seed=4)  # d = 41 > 32
    _, paths = fit_stream(X, y, None, 20_000)
    assert paths == ["pipeline"]
    X, y, _ = contaminated(200_000, 10, "float64", seed=4)  # 200,000 * 11 * 12 / 2 > 2^23
    _, paths = fit_stream(X, y, None, 200_000)
    assert paths == ["pipeline"]
    X, y, _ = contaminated(2000, 10, "float64", seed=4)
    _, paths = fit_stream(X, y, None, 1000, cuda_graphs=True)
    assert paths == ["pipeline", "pipeline"]


@gpu
@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_block_solver_steady_state_allocates_nothing(penalty):
    X, y, _ = contaminated(4000, 8, "float64", seed=6)
    model, _ = fit_stream(X, y, None, 1000, penalty=penalty)
    before = model.cuda_features_["workspace_allocations"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, 4000, 1000):
            model.partial_fit(X[start:start + 1000], y[start:start + 1000])
    assert model.cuda_features_["workspace_allocations"] == before


@gpu
def test_the_block_choice_takes_the_block_solver_past_its_work_bound(monkeypatch):
    X, y, _ = contaminated(200_000, 10, "float64", seed=7)  # beyond the work bound, within the parameter bound
    monkeypatch.setenv("RH_CUDA_SOLVER", "block")
    forced, paths = fit_stream(X, y, None, 200_000)
    assert paths == ["block"]
    monkeypatch.setenv("RH_CUDA_SOLVER", "auto")
    auto, paths = fit_stream(X, y, None, 200_000)
    assert paths == ["pipeline"]
    np.testing.assert_allclose(forced.state_.coefficients, auto.state_.coefficients, rtol=1e-7, atol=1e-9)


@gpu
def test_an_unknown_solver_choice_is_refused_by_the_engine():
    module = adapter._native
    with pytest.raises(module.EngineError, match="solver_choice must be"):
        module.Engine(0, "float64", 3, True, solver_choice=7)


@gpu
def test_block_tiles_beyond_the_engines_range_are_refused_by_the_engine():
    module = adapter._native
    with pytest.raises(module.EngineError, match="block_tiles must be from 1 to 4096 \\(0: the default\\), got 5000"):
        module.Engine(0, "float64", 3, True, block_tiles=5000)


@gpu
def test_a_bad_block_tiles_knob_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("RH_CUDA_BLOCK_TILES", "0")
    X, y, _ = contaminated(200, 3, "float64")
    with pytest.raises(Exception, match="RH_CUDA_BLOCK_TILES must be an integer from 1 to 4096, got '0'"):
        RenewableHuberRegressor(backend="native_cuda").fit(X, y)


@gpu
@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_fewer_larger_blocks_give_the_same_fit_to_rounding(monkeypatch, penalty):
    X, y, _ = contaminated(8192, 12, "float64", seed=8)
    fits = []
    for tiles in ("1", "8"):
        monkeypatch.setenv("RH_CUDA_BLOCK_TILES", tiles)
        model, paths = fit_stream(X, y, None, 4096, penalty=penalty)
        assert paths == ["block", "block"]
        fits.append(model)
    np.testing.assert_allclose(fits[0].state_.coefficients, fits[1].state_.coefficients, rtol=1e-9, atol=1e-11)


@gpu
def test_a_callers_device_batch_is_waited_for_when_the_meat_pass_reads_it():
    # With inference on, the meat's pass reads the batch after the solve's last synchronization;
    # a caller's device arrays may be freed once the call returns, so the engine waits for it
    # (one synchronization more), and not for a host batch, which it reads from its own copy.
    cupy = pytest.importorskip("cupy")
    X, y, _ = contaminated(4096, 16, "float64", seed=12)

    def syncs(model):
        return model._current_backend().last_native_diagnostics.host_syncs

    with_meat = RenewableHuberRegressor(backend="native_cuda").fit(cupy.asarray(X), cupy.asarray(y))
    without = RenewableHuberRegressor(backend="native_cuda", inference=False).fit(cupy.asarray(X), cupy.asarray(y))
    host = RenewableHuberRegressor(backend="native_cuda").fit(X, y)
    assert syncs(with_meat) == syncs(without) + 1
    assert syncs(host) == syncs(without)
    np.testing.assert_allclose(with_meat.bse_, host.bse_, rtol=1e-9)
