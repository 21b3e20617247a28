"""Inference for a streamed robust fit (issue 27, amendment 0003): the meat
each engine accumulates, the sandwich covariance formed from it, the API,
and the statistics checked against what they claim: the full-data fit,
statsmodels' RLM, and the coverage of the intervals.

The large runs (N = 200,000 on every engine, 2,000 simulated streams,
statsmodels' data sets) are scripts/inference/validate_inference.py, whose
records are committed (docs/inference/); here the fixed-seed versions CI
can afford.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from engine_matrix import ENGINES, engine_of
from renewable_huber import RenewableHuberRegressor, ValidationError
from renewable_huber.backends.registry import availability
from renewable_huber.core.huber import huber_score, smoothed_curvature
from renewable_huber.core.array_ops import NumpyOps
from renewable_huber.exceptions import InferenceWarning
from renewable_huber.inference import L1_MESSAGE, NOT_TRACKED_MESSAGE, UNKNOWN_MEAT_MESSAGE

pd = pytest.importorskip("pandas")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "inference"))
from validate_inference import heavy_tailed  # noqa: E402  (the validation script's data, once)


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch):
    """(backend, device) to fit with."""
    with engine_of(request.param, monkeypatch) as chosen:
        yield chosen


def stream(engine, X, y, batches, dtype="float64", **params):
    backend, device = engine if isinstance(engine, tuple) else (engine, "cpu")
    model = RenewableHuberRegressor(backend=backend, device=device, dtype=dtype, **params)
    for rows in np.array_split(np.arange(len(y)), batches):
        model.partial_fit(X[rows], y[rows])
    return model


# ---------------------------------------------------------------- the meat and the covariance
def test_the_covariance_is_the_sandwich_of_the_engines_own_per_batch_quantities(engine):
    """J and S rebuilt here batch by batch from each batch's final coefficients
    and bandwidth (the engine's own diagnostics), then N/(N-d) J^-1 S J^-1,
    against the state and cov_params() (intercept first)."""
    X, y, _ = heavy_tailed(3000, 4, seed=1)
    w = np.random.default_rng(2).integers(1, 4, size=3000).astype(float)
    model = RenewableHuberRegressor(backend=engine[0], device=engine[1])
    ops = NumpyOps("float64")
    J = S = 0.0
    for rows in np.array_split(np.arange(3000), 6):
        model.partial_fit(X[rows], y[rows], w[rows])
        Z = np.column_stack([X[rows], np.ones(len(rows))])
        r = y[rows] - Z @ model.state_.coefficients
        kappa = smoothed_curvature(ops, r, model.tau, model.diagnostics_.bandwidth)
        score = huber_score(ops, r, model.tau)
        J = J + Z.T @ (Z * (w[rows] * kappa)[:, None])
        S = S + Z.T @ (Z * (w[rows] * score * score)[:, None])
    state = model.state_
    np.testing.assert_allclose(state.information, J, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(state.meat, S, rtol=1e-9, atol=1e-9)
    N, d = w.sum(), 5
    cov = N / (N - d) * np.linalg.inv(J) @ S @ np.linalg.inv(J)
    order = [4, 0, 1, 2, 3]
    np.testing.assert_allclose(model.cov_params(), cov[np.ix_(order, order)], rtol=1e-7)
    np.testing.assert_allclose(model.bse_, np.sqrt(np.diag(cov))[order], rtol=1e-7)


def test_streamed_standard_errors_equal_the_full_data_fits(engine):
    """20 batches against one batch of the same rows, N = 200,000, heavy tails and outliers: within 2%."""
    X, y, _ = heavy_tailed(200_000, 5, seed=3)
    streamed = stream(engine, X, y, 20)
    full = stream(engine, X, y, 1)
    np.testing.assert_allclose(streamed.bse_, full.bse_, rtol=0.02)
    np.testing.assert_allclose(streamed.coef_, full.coef_, atol=4 * float(np.max(full.bse_)))


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-9), ("float32", 5e-4)])
def test_every_engine_agrees_with_the_reference(engine, dtype, rtol):
    for n, p in [(2000, 4), (60_000, 10)]:  # native_cpu: the reference-order path and the fast one
        X, y, _ = heavy_tailed(n, p, seed=4)
        X, y = X.astype(dtype), y.astype(dtype)
        a, b = (stream(e, X, y, 4, dtype=dtype) for e in (("numpy", "cpu"), engine))
        np.testing.assert_allclose(b.state_.meat, a.state_.meat, rtol=rtol, atol=rtol * np.abs(a.state_.meat).max())
        np.testing.assert_allclose(b.bse_, a.bse_, rtol=10 * rtol)


# ---------------------------------------------------------------- against statsmodels
def test_against_statsmodels_rlm_with_a_fixed_scale():
    """RLM(y, Z, M=HuberT(t=tau)) with the scale held at 1 solves the same
    M-estimation problem: the coefficients agree to 1e-8, and the standard
    errors (its H3, ours the renewable sandwich) within 3%."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(5)
    n, p = 50_000, 4
    X = rng.normal(size=(n, p))
    y = X @ np.array([1.0, -0.5, 0.25, 2.0]) + 0.7 + rng.standard_t(4, size=n)
    model = RenewableHuberRegressor(backend="numpy", tol=1e-12, max_iter=200).fit(X, y)
    Z = sm.add_constant(X)  # the constant first, as our public order
    rlm = sm.RLM(y, Z, M=sm.robust.norms.HuberT(t=model.tau)).fit(start_scale=1.0, update_scale=False, cov="H3",
                                                                    tol=1e-14, maxiter=500, conv="coefs")
    ours = np.concatenate([[model.intercept_], model.coef_])
    np.testing.assert_allclose(ours, rlm.params, atol=1e-8)
    np.testing.assert_allclose(model.bse_, rlm.bse, rtol=0.03)


# ---------------------------------------------------------------- coverage
def test_the_intervals_cover_the_true_slopes_at_their_level():
    """300 streams of 3,000 rows in 10 batches, t(3) noise, 5% one-sided
    outliers, 5 features: each slope's 95% interval covers the truth 92-98%
    of the time (the script runs 2,000 streams: docs/inference/)."""
    backend = "native_cpu" if availability("native_cpu")[0] else "numpy"
    hits = np.zeros(5)
    streams = 300
    for seed in range(streams):
        X, y, beta = heavy_tailed(3000, 5, seed=1000 + seed)
        intervals = stream(backend, X, y, 10).conf_int(0.05)[1:]  # the slopes (the intercept absorbs the shift)
        hits += (intervals[:, 0] <= beta) & (beta <= intervals[:, 1])
    coverage = hits / streams
    assert np.all((0.92 <= coverage) & (coverage <= 0.98)), coverage


# ---------------------------------------------------------------- refusals and edge cases
def test_l1_inference_is_refused_with_why_and_what_to_do():
    X, y, _ = heavy_tailed(500, 3, seed=6)
    model = RenewableHuberRegressor(backend="numpy", penalty="l1").fit(X, y)
    for read in (lambda: model.bse_, model.cov_params, model.summary, lambda: model.predict(X, return_std=True)):
        with pytest.raises(ValidationError, match="^" + L1_MESSAGE.replace("(", r"\(").replace(")", r"\)") + "$"):
            read()
    assert model.state_.meat is None  # nothing accumulated for it


def test_inference_false_keeps_no_meat_and_says_so():
    X, y, _ = heavy_tailed(500, 3, seed=7)
    model = RenewableHuberRegressor(backend="numpy", inference=False).fit(X, y)
    assert model.state_.meat is None
    with pytest.raises(ValidationError, match="inference=False"):
        model.bse_
    assert NOT_TRACKED_MESSAGE.startswith("this model was fitted with inference=False")
    on = RenewableHuberRegressor(backend="numpy").fit(X, y)
    np.testing.assert_array_equal(model.coef_, on.coef_)  # the meat changes nothing else
    np.testing.assert_array_equal(model.state_.information, on.state_.information)


def test_a_stream_resumed_from_a_format_2_checkpoint_refuses_inference(tmp_path):
    import json

    X, y, _ = heavy_tailed(800, 3, seed=8)
    model = stream("numpy", X, y, 2)
    path = model.save(tmp_path / "v3.npz")
    with np.load(path) as archive:
        metadata = json.loads(str(archive["metadata"]))
        coefficients, information = archive["coefficients"], archive["information"]
    metadata["format_version"] = 2
    del metadata["converged_batches"]
    metadata["config"].pop("inference")
    old = tmp_path / "v2.npz"
    np.savez_compressed(old, coefficients=coefficients, information=information, metadata=np.array(json.dumps(metadata)))
    resumed = RenewableHuberRegressor.load(old)
    resumed.partial_fit(X[:100], y[:100])  # the stream goes on
    with pytest.raises(ValidationError) as error:
        resumed.bse_
    assert str(error.value) == UNKNOWN_MEAT_MESSAGE
    assert resumed.state_.meat is None


def test_checkpoints_carry_the_meat_across_engines(tmp_path):
    X, y, _ = heavy_tailed(1500, 3, seed=9)
    model = stream("numpy", X, y, 3)
    path = model.save(tmp_path / "m.npz")
    with np.load(path) as archive:
        np.testing.assert_array_equal(archive["meat"], model.state_.meat)
    for backend in ["numpy"] + (["native_cpu"] if availability("native_cpu")[0] else []):
        loaded = RenewableHuberRegressor.load(path, backend=backend)
        np.testing.assert_array_equal(loaded.bse_, model.bse_)
        assert re.search(r"Converged batches:\s+3 of 3", str(loaded.summary()))


def test_a_singular_information_matrix_gives_nan_where_nothing_is_identified():
    X, y, _ = heavy_tailed(2000, 3, seed=10)
    X = np.column_stack([X, X[:, 1]])  # a duplicated column: neither copy is identified
    model = RenewableHuberRegressor(backend="numpy", ridge=1e-8).fit(X, y)
    with pytest.warns(InferenceWarning, match="rank 4 of 5"):
        bse = model.bse_
    assert np.isnan(bse[[2, 4]]).all() and np.isfinite(bse[[0, 1, 3]]).all()


def test_summary_table_frame_and_the_public_order():
    X, y, _ = heavy_tailed(4000, 3, seed=11)
    frame = pd.DataFrame(X, columns=["alpha", "beta", "gamma"])
    model = RenewableHuberRegressor(backend="numpy").partial_fit(frame[:2000], y[:2000]).partial_fit(frame[2000:],
                                                                                                     y[2000:])
    summary = model.summary()
    table = summary.to_frame()
    assert list(table.index) == ["intercept", "alpha", "beta", "gamma"]
    assert list(table.columns) == ["coef", "std err", "z", "P>|z|", "[0.025", "0.975]"]
    np.testing.assert_array_equal(table["coef"], np.concatenate([[model.intercept_], model.coef_]))
    np.testing.assert_array_equal(table["std err"], model.bse_)
    np.testing.assert_array_equal(table[["[0.025", "0.975]"]].to_numpy(), model.conf_int())
    text = str(summary)
    for expected in ("std err", "P>|z|", "intercept", "gamma", "Samples seen:", "4000", "Batches:", "tau=1.345"):
        assert expected in text, expected
    assert re.search(r"Converged batches:\s+2 of 2", text)
    z = model.tvalues_
    np.testing.assert_allclose(z, model.conf_int(0.05).mean(axis=1) / model.bse_)
    np.testing.assert_allclose(model.pvalues_[np.abs(z) > 10], 0.0, atol=1e-20)
    wider = model.conf_int(0.01)
    assert np.all(wider[:, 0] < model.conf_int(0.05)[:, 0])
    with pytest.raises(ValidationError, match="alpha must be"):
        model.conf_int(1.5)
    no_intercept = RenewableHuberRegressor(backend="numpy", fit_intercept=False).fit(X, y)
    assert no_intercept.cov_params().shape == (3, 3)
    assert list(no_intercept.summary().to_frame().index) == ["x0", "x1", "x2"]


def test_predict_return_std_is_the_standard_error_of_the_mean_prediction():
    X, y, _ = heavy_tailed(3000, 3, seed=12)
    model = stream("numpy", X, y, 3)
    prediction, std = model.predict(X[:5], return_std=True)
    np.testing.assert_array_equal(prediction, model.predict(X[:5]))
    Z = np.column_stack([np.ones(5), X[:5]])
    np.testing.assert_allclose(std, np.sqrt(np.einsum("ij,jk,ik->i", Z, model.cov_params(), Z)), rtol=1e-12)


def test_inference_is_unavailable_before_fitting():
    from renewable_huber import NotFittedError

    model = RenewableHuberRegressor()
    with pytest.raises(NotFittedError):
        model.bse_
    assert not hasattr(model, "pvalues_")
