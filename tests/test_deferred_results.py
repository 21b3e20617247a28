"""Deferred results (amendment 0004, issue 28's "none when the caller reads
no result"): with backend="native_cuda", a partial_fit on a fitted model
returns once its update is queued, and the next call that needs the
outcome reads it. Here over the host stand-in of the engine
(tests/host_cuda_engine.py, which defers every update), so CI runs the
whole contract: the same bits as immediate results, what is known at once
(n_samples_seen_) and what is read later (coef_, n_iter_, diagnostics_,
state_...), a failure surfacing at the read with the model as it was before
the failed batch, the ConvergenceWarning at the read, pickling, rollback of
a queued update, and RH_CUDA_RESULTS. The GPU engine's side (the device
loop's queued update, the C ABI's settle) is in
tests/backends/test_native_cuda_deferred.py and native/tests/cuda/test_c_api.cpp.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import host_cuda_engine
from renewable_huber import RenewableHuberRegressor, ValidationError
from renewable_huber.exceptions import ConvergenceWarning, NumericalOverflowError


def batches(count=4, rows=300, p=3, seed=28):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        X = rng.normal(size=(rows, p)) + 0.1 * k
        y = X @ np.linspace(1.0, -1.0, p) + 0.3 + rng.standard_t(3, size=rows)
        out.append((X, y))
    return out


BATCHES = batches()


@pytest.fixture
def stand_in(monkeypatch):
    def use(results="deferred"):
        monkeypatch.setenv("RH_CUDA_RESULTS", results)

    use()
    with host_cuda_engine.installed(monkeypatch):
        yield use


def cuda_model(**params):
    return RenewableHuberRegressor(backend="native_cuda", device="cuda", **params)


def pending(model):
    return model.__dict__["_stream"].pending is not None


def test_a_partial_fit_on_a_fitted_model_returns_queued_and_reads_later_with_the_same_bits(stand_in):
    reference = RenewableHuberRegressor(backend="numpy")
    model = cuda_model()
    for k, (X, y) in enumerate(BATCHES):
        reference.partial_fit(X, y)
        model.partial_fit(X, y)
        # the first batch starts the stream (read at once); every later one is left queued
        assert pending(model) == (k > 0)
        assert model.n_samples_seen_ == reference.n_samples_seen_  # known without the outcome
        assert "coef_" not in vars(model) or k == 0
    np.testing.assert_array_equal(model.coef_, reference.coef_)  # the read
    assert not pending(model)
    assert model.intercept_ == reference.intercept_
    assert model.n_iter_ == reference.n_iter_
    np.testing.assert_array_equal(model.state_.information, reference.state_.information)
    assert model.diagnostics_ == reference.diagnostics_


@pytest.mark.parametrize("read", ["coef_", "n_iter_", "intercept_", "cuda_features_", "diagnostics_", "state_",
                                  "predict", "score", "state_dict", "pickle", "partial_fit", "fit", "batches"])
def test_every_reader_reads_the_pending_batch(stand_in, read):
    model = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1])
    assert pending(model)
    X, y = BATCHES[2]
    if read in ("coef_", "n_iter_", "intercept_", "cuda_features_", "diagnostics_", "state_"):
        getattr(model, read)
    elif read == "predict":
        model.predict(X)
    elif read == "score":
        model.score(X, y)
    elif read == "state_dict":
        model.state_dict()
    elif read == "pickle":
        copy = pickle.loads(pickle.dumps(model))
        np.testing.assert_array_equal(copy.coef_, model.coef_)
    elif read == "partial_fit":
        model.partial_fit(X, y)
        assert pending(model)  # this call's own batch is queued in its turn
        model.coef_  # noqa: B018
    elif read == "fit":
        model.fit(X, y)
    else:
        model.partial_fit_batches(X, y, batch_size=100)
    assert not pending(model)


def test_a_batch_that_fails_on_the_engine_raises_at_the_read_and_the_model_is_as_before_it(stand_in):
    model = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1])
    before = model.state_dict()
    coef_before = model.coef_.copy()
    bad = BATCHES[2][0].copy()
    bad[7, 1] = np.nan
    model.partial_fit(bad, BATCHES[2][1])  # X's values are checked by the engine: queued
    assert model.n_samples_seen_ == 900
    with pytest.raises(ValidationError, match=r"batch 3, absorbed by an earlier call and read now, failed: .*X.*"
                                              r"the model is as it was before batch 3"):
        model.coef_  # noqa: B018
    np.testing.assert_array_equal(model.coef_, coef_before)
    assert model.n_samples_seen_ == 600
    after = model.state_dict()
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[key], value)
        else:
            assert after[key] == value, key
    # the stream goes on as one that never saw the batch
    twin = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1])
    for m in (model, twin):
        m.partial_fit(*BATCHES[3])
    np.testing.assert_array_equal(model.coef_, twin.coef_)


def test_the_next_partial_fit_raises_the_earlier_failure_and_absorbs_nothing_of_its_own(stand_in):
    model = cuda_model().partial_fit(*BATCHES[0])
    X, y = BATCHES[1]
    model.partial_fit(X * 1e300, y * 1e300)  # overflows in the engine's Newton system: found when read
    with pytest.raises(NumericalOverflowError, match="batch 2"):
        model.partial_fit(*BATCHES[2])
    assert model.n_samples_seen_ == 300  # neither the failed batch nor the raising call's
    model.partial_fit(*BATCHES[2])  # called again, it absorbs its batch
    twin = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[2])
    np.testing.assert_array_equal(model.coef_, twin.coef_)


def test_what_the_host_checks_still_fails_the_call_itself(stand_in):
    model = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1])
    X, y = BATCHES[2]
    with pytest.raises(ValidationError, match="y"):
        model.partial_fit(X, np.where(np.arange(300) == 3, np.nan, y))
    with pytest.raises(ValidationError, match="features"):
        model.partial_fit(X[:, :2], y)
    assert model.n_samples_seen_ == 600  # the queued batch 2 read by the first of those calls, kept
    assert not pending(model)


def test_a_convergence_warning_comes_with_the_read(stand_in):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = cuda_model(max_iter=1, tol=1e-14).partial_fit(*BATCHES[0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.partial_fit(*BATCHES[1])
        assert not [w for w in caught if issubclass(w.category, ConvergenceWarning)]  # not known yet
        model.coef_  # noqa: B018
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(messages) == 1 and "batch 2" in messages[0], messages


def test_an_interrupt_after_the_queue_puts_back_the_state_before_the_batch(stand_in, monkeypatch):
    from renewable_huber.backends import native_cuda_backend

    model = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1])
    before = model.state_dict()
    real = native_cuda_backend.NativeCudaBackend.update_deferred

    def interrupted(self, *args, **kwargs):
        queued = real(self, *args, **kwargs)
        assert not isinstance(queued, tuple)  # left queued in the engine
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(native_cuda_backend.NativeCudaBackend, "update_deferred", interrupted)
        with pytest.raises(KeyboardInterrupt):
            model.partial_fit(*BATCHES[2])
    after = model.state_dict()
    np.testing.assert_array_equal(after["coefficients"], before["coefficients"])
    np.testing.assert_array_equal(after["information"], before["information"])
    assert after["batch_count"] == before["batch_count"] == 2
    model.partial_fit(*BATCHES[2])
    twin = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1]).partial_fit(*BATCHES[2])
    np.testing.assert_array_equal(model.coef_, twin.coef_)


def test_the_engine_refuses_every_other_call_while_an_update_is_queued(stand_in):
    model = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1])
    engine = model.__dict__["_stream"].backend._engine
    with pytest.raises(Exception, match="settle it first"):
        engine.counters()
    model.coef_  # noqa: B018
    engine.counters()


def test_immediate_results_read_every_batch_in_its_own_call(stand_in):
    stand_in("immediate")
    model = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1])
    assert not pending(model) and "coef_" in vars(model)
    bad = BATCHES[2][0].copy()
    bad[7, 1] = np.inf
    with pytest.raises(ValidationError, match="X"):
        model.partial_fit(bad, BATCHES[2][1])
    assert model.n_samples_seen_ == 600


def test_an_unknown_results_mode_is_refused_by_name(stand_in):
    stand_in("later")
    with pytest.raises(ValidationError, match="RH_CUDA_RESULTS"):
        cuda_model().partial_fit(*BATCHES[0])


def test_an_engine_that_cannot_leave_an_update_queued_reads_every_batch_at_once(stand_in, monkeypatch):
    # A binding without settle (C ABI before 1.7): results are immediate whatever RH_CUDA_RESULTS asks.
    from renewable_huber.backends import native_cuda_backend

    older = type("OlderEngine", (), {k: v for k, v in vars(host_cuda_engine.HostCudaEngine).items() if k != "settle"})
    monkeypatch.setattr(native_cuda_backend._native, "Engine", older)
    model = cuda_model().partial_fit(*BATCHES[0]).partial_fit(*BATCHES[1])
    assert not pending(model) and model.cuda_features_["results"] == "immediate"
