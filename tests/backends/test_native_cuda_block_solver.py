"""The CUDA engine's block solver: a small batch's whole update (core's own
Newton and LAMM drivers over a block-cooperative evaluator, then the
batch's closing) in one launch and one synchronization (the batch's value
check in the launch when its weights are unit). It must agree with
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
from renewable_huber.config import checked_solver_config  # noqa: E402
from renewable_huber.core.array_ops import NumpyOps  # noqa: E402
from renewable_huber.core.data_terms import LocalDataTerms, row_weights  # noqa: E402
from renewable_huber.core.update import batch_schedules, design_matrix  # noqa: E402
from renewable_huber.exceptions import ValidationError  # noqa: E402
from renewable_huber.state import RenewableHuberState  # noqa: E402

gpu = pytest.mark.gpu


def contaminated(n, p, dtype, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    coef = rng.normal(size=p) * (rng.uniform(size=p) < 0.6)
    y = X @ coef + 0.5 + rng.standard_t(2, size=n)
    y[:: max(n // 40, 1)] += 25.0
    w = rng.uniform(0.2, 2.0, size=n).astype(dtype) if weighted else None
    return X.astype(dtype), y.astype(dtype), w


def fit_stream(X, y, w, batch, states=None, **params):
    """The stream in batches of ``batch`` rows on native_cuda: the model and
    each update's solver path (and each update's state into ``states``)."""
    model = RenewableHuberRegressor(backend="native_cuda", **params)
    paths = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, len(y), batch):
            part = slice(start, start + batch)
            model.partial_fit(X[part], y[part], None if w is None else w[part])
            paths.append(model._current_backend().last_native_diagnostics.solver_path)
            if states is not None:
                states.append(model.state_)
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
def test_block_solver_serves_the_latency_class_in_one_synchronization(penalty):
    X, y, w = contaminated(4096, 16, "float64", seed=1, weighted=True)
    model, paths = fit_stream(X, y, None, 4096, penalty=penalty)
    native = model._current_backend().last_native_diagnostics
    assert paths == ["block"]
    assert native.host_syncs == 1  # the outcome and coefficients (the values checked in the launch)
    assert native.iterations == model.n_iter_ >= 1
    model, paths = fit_stream(X, y, w, 4096, penalty=penalty)
    assert paths == ["block"]
    # weights: the batch's checks and its weight first, then the outcome
    assert model._current_backend().last_native_diagnostics.host_syncs == 2


@gpu
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("where", ["X", "y"])
@pytest.mark.parametrize("path", ["auto", "pipeline"])
def test_a_non_finite_device_batch_fails_alike_on_both_paths_and_changes_nothing(monkeypatch, path, where, penalty):
    # Device arrays reach the engine unchecked: its value check (in the block
    # solver's launch, or on the pipeline its own pass, judged with the
    # driver's first read-back for a batch of unit weights) is the one that fails them.
    cupy = pytest.importorskip("cupy")
    monkeypatch.setenv("RH_CUDA_SOLVER", path)
    X, y, _ = contaminated(4096, 16, "float64", seed=10)
    model = RenewableHuberRegressor(backend="native_cuda", penalty=penalty).fit(cupy.asarray(X), cupy.asarray(y))
    assert model._current_backend().last_native_diagnostics.solver_path == ("block" if path == "auto" else path)
    before = model.state_
    bad_X, bad_y = X.copy(), y.copy()
    if where == "X":
        bad_X[17, 3] = np.inf
    else:
        bad_y[4000] = np.nan
    with pytest.raises(ValidationError, match=f"^{where} must not contain NaN or infinite values$"):
        model.partial_fit(cupy.asarray(bad_X), cupy.asarray(bad_y))
    after = model.state_
    np.testing.assert_array_equal(after.coefficients, before.coefficients)
    np.testing.assert_array_equal(after.information, before.information)
    assert (after.batch_count, after.n_samples_seen) == (before.batch_count, before.n_samples_seen)
    model.partial_fit(cupy.asarray(X), cupy.asarray(y))  # still usable
    assert model.state_.batch_count == 2


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
    np.testing.assert_array_equal(model.state_.meat, pipeline.state_.meat)  # the pipeline's meat pass, once


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
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("features", [32, 63])  # d = 33 (the streaming class's) and 64, the wide kernel's most
def test_the_block_choice_takes_the_wide_kernel_up_to_64_parameters(monkeypatch, features, dtype, penalty, weighted):
    X, y, w = contaminated(6000, features, dtype, seed=8, weighted=weighted)
    params = dict(dtype=dtype, penalty=penalty)
    _, auto_paths = fit_stream(X, y, w, 2000, **params)
    assert auto_paths == ["pipeline"] * 3  # auto keeps d > 32 on the pipeline
    block_states, pipeline_states = [], []
    monkeypatch.setenv("RH_CUDA_SOLVER", "block")
    block, paths = fit_stream(X, y, w, 2000, states=block_states, **params)
    assert paths == ["block"] * 3
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    pipeline, _ = fit_stream(X, y, w, 2000, states=pipeline_states, **params)
    # float32 LAMM at d = 64 may stop at iterates a little apart (its stopping rule at float32's rounding)
    rtol, atol = (1e-7, 1e-9) if dtype == "float64" else ((2e-3, 2e-4) if penalty == "none" else (1e-2, 2e-3))
    np.testing.assert_allclose(block.state_.coefficients, pipeline.state_.coefficients, rtol=rtol, atol=atol)
    # Not the two informations against each other: two correct solvers that stop an iteration
    # apart under tol = 1e-6 give informations some 10x further apart than their coefficients
    # (the curvature's sensitivity; native_cpu at tol 1e-6 against 1e-13 on these streams: J 6e-9
    # to 4e-8 of its scale for coefficients 7e-10 to 2e-9 apart; the d = 33 float64 weighted case's
    # 6e-9 on the H100 is that). Each one's information must be its own coefficients' instead.
    for states in (block_states, pipeline_states):
        assert_each_information_is_its_own_coefficients(states, X, y, w, 2000, block.get_params(),
                                                         rel=1e-12 if dtype == "float64" else 1e-4)


def assert_each_information_is_its_own_coefficients(states, X, y, w, batch, params, rel):
    """Each update's information increment J_k - J_(k-1) is the curvature
    Gram the NumPy oracle forms at the engine's own coefficients theta_k,
    with that batch's bandwidth (ALGORITHM.md's closing), within ``rel`` of
    J_k's largest entry (its small entries cancel)."""
    config = checked_solver_config(params)
    ops = NumpyOps(X.dtype)
    before = RenewableHuberState.empty(X.shape[1], config.fit_intercept, X.dtype)
    for k, after in enumerate(states):
        part = slice(k * batch, (k + 1) * batch)
        weights = row_weights(ops, None if w is None else w[part], len(y[part]))
        schedules = batch_schedules(before, float(weights.sum()), X.shape[1], config)
        data = LocalDataTerms(ops=ops, design=design_matrix(ops, X[part], config.fit_intercept), response=y[part],
                              weights=weights, tau=ops.scalar(config.tau), bandwidth=ops.scalar(schedules.bandwidth))
        expected = np.asarray(before.information) + data.curvature_gram(data.at(ops.asarray(after.coefficients)))
        np.testing.assert_allclose(after.information, expected, rtol=0,
                                   atol=rel * np.abs(expected).max(), err_msg=f"update {k + 1}")
        before = after


@gpu
def test_past_64_parameters_the_block_choice_keeps_the_pipeline(monkeypatch):
    X, y, _ = contaminated(2000, 64, "float64", seed=9)  # d = 65
    monkeypatch.setenv("RH_CUDA_SOLVER", "block")
    _, paths = fit_stream(X, y, None, 2000)
    assert paths == ["pipeline"]


@gpu
def test_only_an_engine_that_may_run_the_wide_kernel_reserves_its_arrays(monkeypatch):
    X, y, _ = contaminated(2000, 39, "float64", seed=11)  # d = 40: auto leaves it to the pipeline
    block_matrices = 128 * 3 * 40 * 40 * 8  # the block solver's per-block matrices alone (kBlockSolverGrid blocks)
    auto, _ = fit_stream(X, y, None, 2000)
    monkeypatch.setenv("RH_CUDA_SOLVER", "block")
    forced, paths = fit_stream(X, y, None, 2000)
    assert paths == ["block"]
    # the same batch's arrays otherwise (the pipeline reserves nothing of its own per batch)
    extra = forced.cuda_features_["workspace_bytes"] - auto.cuda_features_["workspace_bytes"]
    assert extra >= block_matrices



@gpu
@pytest.mark.parametrize("path", ["auto", "pipeline"])
def test_a_callers_device_batch_is_waited_for_when_the_meat_pass_reads_it(monkeypatch, path):
    # On the pipeline the closing (and with inference on the meat's pass) reads the batch after the
    # solve's last read-back; a caller's device arrays may be freed once the call returns, so the
    # engine waits for them once at the end, meat or not, and not for a host batch, which it reads
    # from its own copy. The block solver forms the meat in its launch: nothing more to wait for.
    cupy = pytest.importorskip("cupy")
    monkeypatch.setenv("RH_CUDA_SOLVER", path)
    X, y, _ = contaminated(4096, 16, "float64", seed=12)

    def syncs(model):
        return model._current_backend().last_native_diagnostics.host_syncs

    with_meat = RenewableHuberRegressor(backend="native_cuda").fit(cupy.asarray(X), cupy.asarray(y))
    without = RenewableHuberRegressor(backend="native_cuda", inference=False).fit(cupy.asarray(X), cupy.asarray(y))
    host = RenewableHuberRegressor(backend="native_cuda").fit(X, y)
    assert with_meat._current_backend().last_native_diagnostics.solver_path == ("block" if path == "auto" else path)
    assert syncs(with_meat) == syncs(without)
    assert syncs(host) == syncs(without) - (1 if path == "pipeline" else 0)
    np.testing.assert_allclose(with_meat.bse_, host.bse_, rtol=1e-9)


@gpu
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_meat_the_block_solver_forms_in_its_launch_is_the_pipelines(monkeypatch, dtype, weighted, fit_intercept):
    # The meat (inference, penalty "none" only) closed in the block solver's launch, against the
    # pipeline's meat pass and the NumPy reference's.
    X, y, w = contaminated(3000, 12, dtype, seed=13, weighted=weighted)
    params = dict(dtype=dtype, fit_intercept=fit_intercept)
    block, paths = fit_stream(X, y, w, 1000, **params)
    assert paths == ["block"] * 3 and block.state_.meat is not None
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")
    pipeline, _ = fit_stream(X, y, w, 1000, **params)
    reference = RenewableHuberRegressor(backend="numpy", **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in range(0, 3000, 1000):
            part = slice(start, start + 1000)
            reference.partial_fit(X[part], y[part], None if w is None else w[part])
    for other, tolerance in ((pipeline, 1e-9), (reference, 1e-8)):
        scale = np.abs(other.state_.meat).max()
        np.testing.assert_allclose(block.state_.meat, other.state_.meat, rtol=0,
                                   atol=scale * (tolerance if dtype == "float64" else 2e-3))
    np.testing.assert_allclose(block.bse_, pipeline.bse_, rtol=1e-6 if dtype == "float64" else 1e-2)
