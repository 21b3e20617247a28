"""cuda_graphs=True (issue 13): a Newton iteration's launches and LAMM's
first pass of trials captured and replayed. A Newton direction on the
narrow route (p <= 64) reads what changes between batches from device
memory, so one capture serves every batch of the same rows (issue 28), and
it does so by default too; cuda_graphs=True adds the other sequences,
captured once per batch. A graph runs the same kernels
in the same order on the same stream, so the results must be the same bits
as the plain launches; the counters say what happened. The
plain models here are pipeline-only (RH_CUDA_SOLVER=pipeline): small batches
would otherwise take the block solver, a different rounding. GPU only
(marked `gpu`).
"""

from __future__ import annotations

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def pipeline_only(monkeypatch):
    monkeypatch.setenv("RH_CUDA_SOLVER", "pipeline")


def stream(dtype, p, n=4000, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) * (rng.uniform(size=p) < 0.5).sum() / p + rng.standard_t(2, size=n)
    y[::40] -= 30.0
    return X.astype(dtype), y.astype(dtype)


# p = 6: the engine's own small-system kernel and narrow Gram (no cuSOLVER call
# in the iteration); p = 80: cuBLAS's Gram and cuSOLVER's Cholesky in it.
@pytest.mark.parametrize("p", [6, 80])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_graphs_give_the_plain_launches_bits(dtype, penalty, p):
    X, y = stream(dtype, p)
    plain = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty)
    graphed = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty, cuda_graphs=True)
    for start in range(0, len(y), 1000):
        plain.partial_fit(X[start:start + 1000], y[start:start + 1000])
        graphed.partial_fit(X[start:start + 1000], y[start:start + 1000])
        np.testing.assert_array_equal(graphed.state_.coefficients, plain.state_.coefficients)
        np.testing.assert_array_equal(graphed.state_.information, plain.state_.information)
        assert graphed.n_iter_ == plain.n_iter_
    features = graphed.cuda_features_
    print(f"{dtype} {penalty} p={p}: iterations {graphed.n_iter_}, captures {features['graph_captures']}, "
          f"replays {features['graph_replays']}, fallbacks {features['graph_fallbacks']}")
    assert features["cuda_graphs"] and not plain.cuda_features_["cuda_graphs"]
    plain_features = plain.cuda_features_
    if p == 6 and penalty == "none":  # the narrow route's reused direction graph runs without cuda_graphs too
        assert plain_features["graph_captures"] == 1 and plain_features["graph_replays"] >= 4
    else:
        assert plain_features["graph_captures"] == 0 and plain_features["graph_replays"] == 0
    if p == 6 and penalty == "none":  # one capture for the whole stream: four batches of 1,000 rows
        assert features["graph_fallbacks"] == 0 and features["graph_captures"] == 1
        assert features["graph_replays"] >= 4
    elif p == 6:  # nothing in these iterations refuses capture; LAMM's passes are captured again in later batches
        assert features["graph_fallbacks"] == 0 and features["graph_captures"] >= 2 and features["graph_replays"] >= 1
    else:  # captured and replayed, or refused once and counted
        assert features["graph_replays"] >= 1 or features["graph_fallbacks"] == 1


@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_graphs_follow_device_batches_whose_addresses_change(penalty):
    cupy = pytest.importorskip("cupy")
    X, y = stream("float64", 6)
    plain = RenewableHuberRegressor(backend="native_cuda", penalty=penalty)
    graphed = RenewableHuberRegressor(backend="native_cuda", penalty=penalty, cuda_graphs=True)
    for start in range(0, len(y), 500):  # a new device allocation per batch
        dX, dy = cupy.asarray(X[start:start + 500]), cupy.asarray(y[start:start + 500])
        plain.partial_fit(dX, dy)
        graphed.partial_fit(dX, dy)
        np.testing.assert_array_equal(graphed.state_.coefficients, plain.state_.coefficients)
        np.testing.assert_array_equal(graphed.state_.information, plain.state_.information)
    if penalty == "none":  # the batch's addresses are read from device memory: captured once, replayed after
        assert graphed.cuda_features_["graph_captures"] == 1
    else:  # LAMM's passes take the batch's addresses as arguments: captured again in later batches
        assert graphed.cuda_features_["graph_captures"] >= 2


def test_a_reused_graph_is_captured_again_for_other_rows():
    X, y = stream("float64", 6, n=3500)
    plain = RenewableHuberRegressor(backend="native_cuda")
    graphed = RenewableHuberRegressor(backend="native_cuda", cuda_graphs=True)
    expected, captured_rows = 0, None
    for start, stop in ((0, 1000), (1000, 2000), (2000, 2700), (2700, 3400), (3400, 3500)):
        plain.partial_fit(X[start:stop], y[start:stop])
        graphed.partial_fit(X[start:stop], y[start:stop])
        np.testing.assert_array_equal(graphed.state_.coefficients, plain.state_.coefficients)
        np.testing.assert_array_equal(graphed.state_.information, plain.state_.information)
        # the rows of the last capture: replayed; other rows: plain first, captured at the second direction
        if stop - start != captured_rows and graphed.n_iter_ >= 2:
            expected, captured_rows = expected + 1, stop - start
    assert expected >= 2  # the stream's row changes were captured again (1,000, then 700 at least)
    assert graphed.cuda_features_["graph_captures"] == expected
