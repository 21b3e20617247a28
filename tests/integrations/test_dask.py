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
from engine_matrix import ENGINES as ENGINE_MATRIX, engine_of  # noqa: E402  (tests/engine_matrix.py)

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


# ---------------------------------------------------------------- parallel-batch mode

def local_batch(engine, penalty, first, batch, dtype="float64"):
    """The single-machine update: a first batch, then the concatenated batch in one partial_fit."""
    model = RenewableHuberRegressor(backend=engine, penalty=penalty, n_jobs=1, dtype=dtype)
    if first is not None:
        model.partial_fit(*first)
    return model.partial_fit(*batch)


def assert_close_state(a, b, rtol=1e-9):
    for name in ("coefficients", "information"):
        got, want = getattr(a.state_, name), getattr(b.state_, name)
        assert np.max(np.abs(got - want) / (1.0 + np.abs(want))) < rtol, name
    assert (a.state_.batch_count, a.n_samples_seen_) == (b.state_.batch_count, b.n_samples_seen_)
    assert a.state_.weight_sum == pytest.approx(b.state_.weight_sum, rel=1e-12)


@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("engine", ENGINES)
def test_parallel_batch_on_dask_arrays_equals_the_local_concatenated_update(client, engine, penalty):
    X, y, w = data(n=1600, seed=6)
    w[300:340] = 0.0
    chunks = (250, 400, 150, 500, 300)
    model = RenewableHuberRegressor(backend=engine, penalty=penalty, n_jobs=1).partial_fit(X[:100], y[:100])
    report = rh_dask.BatchReport()
    batch = (da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=(chunks,)), da.from_array(w, chunks=(chunks,)))
    assert rh_dask.fit_batch(model, batch[0], batch[1], sample_weight=batch[2], client=client, engine=engine,
                             report=report) is model
    assert_close_state(model, local_batch(engine, penalty, (X[:100], y[:100]), (X, y, w)))
    assert report.partitions == 5 and report.rows == 1600 and report.engines == (engine,)
    assert report.rounds > model.n_iter_  # every trial and the closing were a round over the workers
    assert model.backend_ == engine and model.diagnostics_.converged


def test_parallel_batch_on_a_dataframe_starts_a_stream_with_feature_names(client):
    X, y, w = data(seed=7)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(target=y, weight=w)
    ddf = dd.from_pandas(frame, npartitions=3, sort=False)
    model = rh_dask.fit_batch(RenewableHuberRegressor(backend="numpy", penalty="l1"), ddf, target="target",
                              weight="weight", client=client, engine="numpy")
    assert_close_state(model, local_batch("numpy", "l1", None, (frame[["a", "b", "c", "d"]], y, w)))
    assert list(model.feature_names_in_) == ["a", "b", "c", "d"]
    model.partial_fit(frame[["a", "b", "c", "d"]][:50], y[:50])  # a normal model afterwards
    assert model.state_.batch_count == 2
    renamed = dd.from_pandas(frame.rename(columns={"d": "e"}), npartitions=2, sort=False)
    before = model.state_dict()
    with pytest.raises(ValidationError, match="feature names"):
        rh_dask.fit_batch(model, renamed, target="target", weight="weight", client=client)
    np.testing.assert_array_equal(model.state_dict()["coefficients"], before["coefficients"])


def test_parallel_batch_float32_stays_within_the_float32_tolerance(client):
    X, y, w = data(seed=8)
    model = RenewableHuberRegressor(backend="numpy", dtype="float32")
    rh_dask.fit_batch(model, da.from_array(X, chunks=(400, 4)), da.from_array(y, chunks=(400,)),
                      sample_weight=da.from_array(w, chunks=(400,)), client=client)
    local = local_batch("numpy", "none", None, (X, y, w), dtype="float32")
    assert model.state_.coefficients.dtype == np.float32
    np.testing.assert_allclose(model.state_.coefficients, local.state_.coefficients, rtol=5e-4, atol=5e-4)


def test_parallel_batch_bad_partition_gives_the_local_error_and_keeps_the_model(client):
    X, y, w = data(seed=9)
    model = RenewableHuberRegressor(backend="numpy").fit(X[:100], y[:100])
    before = model.state_dict()
    bad_y = y.copy()
    bad_y[900] = np.inf  # in the last partition
    with pytest.raises(ValidationError, match="y must not contain NaN or infinite values"):
        rh_dask.fit_batch(model, da.from_array(X, chunks=(300, 4)), da.from_array(bad_y, chunks=(300,)), client=client)
    with pytest.raises(ValidationError, match="y must not contain NaN or infinite values"):  # the same locally
        RenewableHuberRegressor(backend="numpy").fit(X, bad_y)
    negative = w.copy()
    negative[10] = -1.0
    with pytest.raises(ValidationError, match="sample_weight must be non-negative"):
        rh_dask.fit_batch(model, da.from_array(X, chunks=(300, 4)), da.from_array(y, chunks=(300,)),
                          sample_weight=da.from_array(negative, chunks=(300,)), client=client)
    zero = np.zeros_like(w)
    with pytest.raises(ValidationError, match="sample_weight cannot be all zero"):
        rh_dask.fit_batch(model, da.from_array(X, chunks=(300, 4)), da.from_array(y, chunks=(300,)),
                          sample_weight=da.from_array(zero, chunks=(300,)), client=client)
    with pytest.raises(ValidationError, match="expecting 4 features"):
        rh_dask.fit_batch(model, da.from_array(X[:, :3], chunks=(300, 3)), da.from_array(y, chunks=(300,)),
                          client=client)
    with pytest.raises(ValidationError, match="engine must be one of"):
        rh_dask.fit_batch(model, da.from_array(X, chunks=(300, 4)), da.from_array(y, chunks=(300,)), engine="gpu")
    after = model.state_dict()
    for name in ("coefficients", "information"):
        np.testing.assert_array_equal(after[name], before[name])
    assert after["batch_count"] == 1


def test_parallel_batch_refuses_a_model_whose_state_lives_elsewhere(client):
    pytest.importorskip("torch")
    X, y, _ = data(seed=10, n=300)
    model = RenewableHuberRegressor(backend="torch")
    with pytest.raises(ValidationError, match="solved on the CPU"):
        rh_dask.fit_batch(model, da.from_array(X, chunks=(150, 4)), da.from_array(y, chunks=(150,)), client=client)
    assert not hasattr(model, "coef_")


def test_parallel_batch_survives_a_worker_killed_mid_solve(client, monkeypatch):
    X, y, w = data(seed=11)
    batch = (da.from_array(X, chunks=(200, 4)), da.from_array(y, chunks=(200,)))
    undisturbed = rh_dask.fit_batch(RenewableHuberRegressor(backend="numpy", n_jobs=1), *batch, client=client,
                                    engine="numpy")
    killed = []

    def kill_a_worker(round_number):
        if round_number == 3 and not killed:  # prepared partitions live on it; Dask recomputes them
            holders = client.who_has()
            worker = sorted({address for addresses in holders.values() for address in addresses})[0]
            killed.append(worker)
            try:  # the worker dies before it can answer
                client.run(os._exit, 1, workers=[worker])
            except Exception:
                pass

    monkeypatch.setattr(rh_dask, "_before_round", kill_a_worker)
    survived = rh_dask.fit_batch(RenewableHuberRegressor(backend="numpy", n_jobs=1), *batch, client=client,
                                 engine="numpy")
    assert killed and killed[0] not in client.scheduler_info()["workers"]  # it did die
    # the partitions' sums are added in partition order wherever they ran: the same bits
    assert_same_bits(survived, undisturbed)


def test_parallel_batch_without_a_client_runs_in_this_process():
    X, y, w = data(seed=12)
    model = rh_dask.fit_batch(RenewableHuberRegressor(backend="numpy"), da.from_array(X, chunks=(500, 4)),
                              da.from_array(y, chunks=(500,)), client=None)
    assert_close_state(model, local_batch("numpy", "none", None, (X, y, None)))


@pytest.mark.parametrize("engine", ENGINES)
def test_both_modes_carry_the_meat_for_inference(client, engine):
    """Issue 27: stream mode's standard errors are the local stream's bits;
    parallel-batch mode's (the meat one more partition-sums term at the
    closing, fetched with the curvature Gram in one round) the local
    concatenated update's within 1e-9."""
    X, y, w = data(n=1600, seed=8)
    chunks = (400, 400, 300, 500)
    streamed = rh_dask.fit_stream(RenewableHuberRegressor(backend=engine, n_jobs=1),
                                  da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=(chunks,)),
                                  client=client)
    local = local_stream(engine, "none", [(X[a:b], y[a:b]) for a, b in ((0, 400), (400, 800), (800, 1100),
                                                                         (1100, 1600))])
    np.testing.assert_array_equal(streamed.state_.meat, local.state_.meat)
    np.testing.assert_array_equal(streamed.bse_, local.bse_)
    batch = RenewableHuberRegressor(backend=engine, n_jobs=1)
    rh_dask.fit_batch(batch, da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=(chunks,)),
                      sample_weight=da.from_array(w, chunks=(chunks,)), client=client, engine=engine)
    whole = RenewableHuberRegressor(backend=engine, n_jobs=1).fit(X, y, w)
    np.testing.assert_allclose(batch.state_.meat, whole.state_.meat, rtol=1e-9)
    np.testing.assert_allclose(batch.bse_, whole.bse_, rtol=1e-9)


@pytest.fixture(params=ENGINE_MATRIX)
def any_engine(request, monkeypatch):
    with engine_of(request.param, monkeypatch) as (backend, device):
        yield backend, device


def test_a_partition_update_leaves_its_input_stream_as_it_was(any_engine):
    """A task's input stream is what a retry starts from: an update must not
    change it, on engines with value states (no copy is made) and on the
    CUDA engine's stand-in, whose state changes in place (a copy is made)."""
    from renewable_huber.config import checked_solver_config

    backend, device = any_engine
    X, y, _ = data(n=300)
    params = RenewableHuberRegressor(backend=backend, device=device).get_params()
    task = rh_dask._Model(dict(params), checked_solver_config(params), "RenewableHuberRegressor")
    first = rh_dask._absorb(None, task, X[:150], y[:150], None)
    before = first.host_state()
    second = rh_dask._absorb(first, task, X[150:], y[150:], None)
    after = first.host_state()
    np.testing.assert_array_equal(after.coefficients, before.coefficients)
    np.testing.assert_array_equal(after.information, before.information)
    assert (after.batch_count, second.host_state().batch_count) == (1, 2)
