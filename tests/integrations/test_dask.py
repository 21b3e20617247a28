"""renewable_huber.dask on a real dask.distributed LocalCluster with process
workers (issue 17, stream mode): the same bits as partial_fit over the same
partitions on one machine, atomic failure with the local error, a worker
killed mid-fit survived, predictions as Dask collections.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402

from renewable_huber import RenewableHuberRegressor  # noqa: E402
from renewable_huber import dask as rh_dask  # noqa: E402
from renewable_huber.exceptions import ValidationError  # noqa: E402

ENGINES = ["numpy", pytest.param("native_cpu", marks=pytest.mark.skipif(
    not __import__("importlib").util.find_spec("_renewable_huber_native_cpu"), reason="native_cpu not installed"))]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def data(n=1200, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.3 + rng.standard_t(3, size=n)
    y[::37] += 25.0
    w = rng.uniform(0.5, 2.0, size=n)
    return X, y, w


def local_stream(engine, penalty, batches):
    model = RenewableHuberRegressor(backend=engine, penalty=penalty, n_jobs=1)
    for batch in batches:
        model.partial_fit(*batch)
    return model


def assert_same_bits(a, b):
    np.testing.assert_array_equal(a.state_.coefficients, b.state_.coefficients)
    np.testing.assert_array_equal(a.state_.information, b.state_.information)
    assert a.state_.batch_count == b.state_.batch_count and a.n_samples_seen_ == b.n_samples_seen_


@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_dask_array_stream_equals_the_local_stream(client, engine, penalty):
    X, y, w = data()
    chunks = (300, 200, 400, 300)
    dX, dy, dw = da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=(chunks,)), da.from_array(w, chunks=(chunks,))
    model = RenewableHuberRegressor(backend=engine, penalty=penalty, n_jobs=1)
    assert rh_dask.fit_stream(model, dX, dy, sample_weight=dw, client=client) is model
    edges = np.cumsum((0,) + chunks)
    local = local_stream(engine, penalty, [(X[a:b], y[a:b], w[a:b]) for a, b in zip(edges[:-1], edges[1:])])
    assert_same_bits(model, local)
    assert model.backend_ == engine and model.n_iter_ == local.n_iter_


@pytest.mark.parametrize("engine", ENGINES)
def test_a_dataframe_stream_equals_the_local_stream_and_keeps_feature_names(client, engine):
    X, y, w = data(seed=1)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(target=y, weight=w)
    ddf = dd.from_pandas(frame, npartitions=4, sort=False)
    model = rh_dask.fit_stream(RenewableHuberRegressor(backend=engine, n_jobs=1), ddf, target="target",
                               weight="weight", client=client)
    parts = [part.compute() for part in ddf.to_delayed()]
    local = local_stream(engine, "none", [(p[["a", "b", "c", "d"]], p["target"], p["weight"]) for p in parts])
    assert_same_bits(model, local)
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]
    # the model goes on locally, and predicts over a Dask collection
    model.partial_fit(frame[["a", "b", "c", "d"]][:50], y[:50])
    # (the workers' BLAS runs one thread, this process's more: a product's last bit may differ)
    predictions = rh_dask.predict(model, ddf[["a", "b", "c", "d"]])
    assert isinstance(predictions, dd.Series)
    np.testing.assert_allclose(predictions.compute().to_numpy(), model.predict(frame[["a", "b", "c", "d"]]),
                               rtol=1e-13, atol=1e-13)
    array_predictions = rh_dask.predict(model, da.from_array(X, chunks=(500, 4)))
    assert isinstance(array_predictions, da.Array)
    np.testing.assert_allclose(array_predictions.compute(), model.predict(X), rtol=1e-13, atol=1e-13)


def test_without_a_client_the_local_scheduler_runs_the_same_stream():
    X, y, w = data(seed=2)
    dX, dy = da.from_array(X, chunks=(400, 4)), da.from_array(y, chunks=(400,))
    model = rh_dask.fit_stream(RenewableHuberRegressor(backend="numpy"), dX, dy, client=None)
    assert_same_bits(model, local_stream("numpy", "none", [(X[s:s + 400], y[s:s + 400]) for s in range(0, 1200, 400)]))


def test_a_bad_partition_gives_the_local_error_and_leaves_the_model_untouched(client):
    X, y, _ = data(seed=3)
    X[700, 2] = np.nan  # in the third partition
    model = RenewableHuberRegressor(backend="numpy").fit(X[:100], y[:100])
    before = model.state_dict()
    with pytest.raises(ValidationError, match="X must not contain NaN or infinite values"):
        rh_dask.fit_stream(model, da.from_array(X, chunks=(300, 4)), da.from_array(y, chunks=(300,)), client=client)
    after = model.state_dict()
    assert after["batch_count"] == before["batch_count"] == 1
    np.testing.assert_array_equal(after["information"], before["information"])
    with pytest.raises(ValidationError, match="X must not contain NaN"):  # the same error locally
        local_stream("numpy", "none", [(X[600:900], y[600:900])])


def _load_or_die(block, marker):
    """The partition's loading task: the first time, it takes its worker down."""
    marker = Path(marker)
    if not marker.exists():
        marker.write_text("killed once")
        os._exit(1)
    return block


def test_a_worker_killed_mid_fit_is_survived(client, tmp_path):
    X, y, _ = data(seed=4)
    marker = tmp_path / "killed"
    dX = da.from_array(X, chunks=(300, 4))
    # the third partition's loading kills its worker once; Dask reschedules it
    dX = da.map_blocks(lambda block, block_info=None: (
        _load_or_die(block, marker) if block_info[0]["chunk-location"][0] == 2 else block), dX, dtype=dX.dtype)
    model = rh_dask.fit_stream(RenewableHuberRegressor(backend="numpy"), dX, da.from_array(y, chunks=(300,)),
                               client=client)
    assert marker.exists()  # the worker did die
    assert_same_bits(model, local_stream("numpy", "none", [(X[s:s + 300], y[s:s + 300]) for s in range(0, 1200, 300)]))


def test_empty_partitions_are_skipped_and_arguments_are_checked(client):
    X, y, _ = data(seed=5, n=400)
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y=y)
    ddf = dd.from_pandas(frame, npartitions=4, sort=False)
    filtered = ddf[ddf.a > 10.0]  # every partition empty but what survives
    kept = frame[frame.a > 10.0]
    model = RenewableHuberRegressor(backend="numpy").fit(X[:50], y[:50])
    rh_dask.fit_stream(model, dd.concat([ddf.partitions[0], filtered]), target="y", client=client)
    assert model.state_.batch_count == 2 + (len(kept) > 0)
    with pytest.raises(ValidationError, match="target must name"):
        rh_dask.fit_stream(model, ddf, client=client)
    with pytest.raises(ValidationError, match=r"column\(s\) \['w'\] not in"):
        rh_dask.fit_stream(model, ddf, target="y", weight="w", client=client)
    with pytest.raises(ValidationError, match="row chunks"):
        rh_dask.fit_stream(model, da.from_array(X, chunks=(100, 4)), da.from_array(y, chunks=(200,)), client=client)
    with pytest.raises(ValidationError, match="window must be a positive integer"):
        rh_dask.fit_stream(model, ddf, target="y", window=0, client=client)
    with pytest.raises(ValidationError, match="Dask DataFrame or a Dask array"):
        rh_dask.fit_stream(model, X, y)
