"""One lock per model (model_lock.py): concurrent calls on one model serialize.

The interleavings are forced, not hoped for: the first caller is held inside
its backend's update (the native engines run there without the GIL) until the
second caller has either started waiting for the model's lock or finished.
Without the lock the second call runs in the middle of the first one, and
the checks below see a lost update or a stale read every time.
"""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor
from renewable_huber.backends.registry import availability
from renewable_huber.model_lock import LOCK_ATTRIBUTE

BACKENDS = [
    "numpy",
    pytest.param("native_cpu", marks=pytest.mark.skipif(not availability("native_cpu")[0], reason="native_cpu absent")),
]


class ObservedLock:
    """A reentrant lock that reports when a thread has to wait for it."""

    def __init__(self, waiting: threading.Event) -> None:
        self._lock = threading.RLock()
        self._waiting = waiting

    def __enter__(self) -> "ObservedLock":
        if not self._lock.acquire(blocking=False):
            self._waiting.set()
            self._lock.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release()


def _batches(seed: int = 0, n: int = 2000, p: int = 4):
    rng = np.random.default_rng(seed)
    coef = rng.normal(size=p)
    while True:
        X = rng.normal(size=(n, p))
        yield X, X @ coef + rng.standard_t(3, size=n)


class HeldFirstUpdate:
    """Holds the first update that reaches the model's backend after install()
    until release(); later updates pass straight through."""

    def __init__(self, model: RenewableHuberRegressor) -> None:
        self.inside = threading.Event()
        self.may_finish = threading.Event()
        backend = model._stream.backend
        original = backend.update
        calls = []

        def update(*args, **kwargs):
            calls.append(threading.get_ident())
            if len(calls) == 1:
                self.inside.set()
                self.may_finish.wait()
            return original(*args, **kwargs)

        backend.update = update  # the instance attribute shadows the method


def _race(model, first, second, second_done: threading.Event):
    """Runs first() on a thread and holds it inside the backend update; runs
    second() on another thread; releases the first once the second waits for
    the model's lock or has finished. Returns the second call's result."""
    held = HeldFirstUpdate(model)
    model.__dict__[LOCK_ATTRIBUTE] = ObservedLock(second_done)
    errors, result = [], {}

    def run_first():
        try:
            first()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
            held.inside.set()

    def run_second():
        try:
            result["value"] = second()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            second_done.set()

    one = threading.Thread(target=run_first)
    one.start()
    held.inside.wait()
    two = threading.Thread(target=run_second)
    two.start()
    second_done.wait()
    held.may_finish.set()
    one.join()
    two.join()
    assert not errors, errors
    return result.get("value")


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_threads_calling_partial_fit_lose_no_batch(backend):
    """Defect 1 of issue 18: both threads read the same state and the last
    commit won, so one batch vanished from batch_count and n_samples_seen."""
    batches = _batches()
    model = RenewableHuberRegressor(backend=backend).partial_fit(*next(batches))
    first, second = next(batches), next(batches)
    _race(model, lambda: model.partial_fit(*first), lambda: model.partial_fit(*second), threading.Event())
    assert model.state_.batch_count == 3
    assert model.n_samples_seen_ == 6000
    # ... and the result is the two batches absorbed one after the other
    # (which one first is up to the scheduler; the lock only orders them).
    orders = []
    for order in ((first, second), (second, first)):
        sequential = RenewableHuberRegressor(backend=backend).partial_fit(*_first_batch())
        for batch in order:
            sequential.partial_fit(*batch)
        orders.append(sequential.state_.coefficients)
    assert any(np.array_equal(model.state_.coefficients, c) for c in orders)


def _first_batch():
    return next(_batches())


def test_threads_calling_partial_fit_many_times_lose_nothing():
    """Real threads, no forced interleaving: 4 threads x 5 batches each on one model."""
    batches = _batches(seed=3, n=500)
    model = RenewableHuberRegressor(backend="native_cpu" if availability("native_cpu")[0] else "numpy")
    work = [[next(batches) for _ in range(5)] for _ in range(4)]
    start = threading.Barrier(4)

    def feed(part):
        start.wait()
        for X, y in part:
            model.partial_fit(X, y)

    threads = [threading.Thread(target=feed, args=(part,)) for part in work]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model.state_.batch_count == 20
    assert model.n_samples_seen_ == 20 * 500


# What each second call must see when it comes while a partial_fit is inside
# its update: the state after that partial_fit (it waits for the commit).
def _second_calls(model, probe, checkpoint_path, loaded_dict):
    return {
        "predict": lambda: model.predict(probe),
        "score": lambda: model.score(probe, probe @ np.ones(probe.shape[1])),
        "state_dict": lambda: model.state_dict(),
        "state_": lambda: model.state_,
        "save": lambda: model.save(checkpoint_path),
        "fit": lambda: model.fit(*_first_batch()),
        "reset": lambda: model.reset(),
        "set_params": lambda: model.set_params(tau=2.0),
        "load_state_dict": lambda: model.load_state_dict(loaded_dict),
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "second", ["predict", "score", "state_dict", "state_", "save", "fit", "reset", "set_params", "load_state_dict"]
)
def test_a_call_during_partial_fit_waits_for_its_commit(backend, second, tmp_path):
    batches = _batches()
    model = RenewableHuberRegressor(backend=backend).partial_fit(*next(batches))
    loaded_dict = RenewableHuberRegressor(backend=backend).partial_fit(*next(_batches(seed=9))).state_dict()
    probe = np.random.default_rng(4).normal(size=(16, 4))
    batch = next(batches)
    expected = copy.deepcopy(model).partial_fit(*batch)  # the state after the first call
    calls = _second_calls(model, probe, tmp_path / "m.npz", loaded_dict)
    value = _race(model, lambda: model.partial_fit(*batch), calls[second], threading.Event())

    if second == "predict":
        np.testing.assert_array_equal(value, expected.predict(probe))
    elif second == "score":
        assert value == expected.score(probe, probe @ np.ones(4))
    elif second == "state_dict":
        assert value["batch_count"] == 2
        np.testing.assert_array_equal(value["coefficients"], expected.state_.coefficients)
    elif second == "state_":
        assert value.batch_count == 2
    elif second == "save":
        np.testing.assert_array_equal(RenewableHuberRegressor.load(value).coef_, expected.coef_)
    elif second in ("reset", "set_params"):
        # the reset came after the commit: nothing of the stream survives it
        assert not hasattr(model, "coef_") and model.__dict__.get("_stream") is None
    elif second == "fit":
        assert model.state_.batch_count == 1
        np.testing.assert_array_equal(model.coef_, RenewableHuberRegressor(backend=backend).fit(*_first_batch()).coef_)
    elif second == "load_state_dict":
        np.testing.assert_array_equal(model.state_.coefficients, loaded_dict["coefficients"])
        assert model.state_.batch_count == 1


def test_pickling_and_copying_drop_the_lock_and_make_a_fresh_one():
    model = RenewableHuberRegressor(backend="numpy").partial_fit(*_first_batch())
    lock = model.__dict__[LOCK_ATTRIBUTE]
    assert LOCK_ATTRIBUTE not in model.__getstate__()
    for other in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model), copy.copy(model)):
        np.testing.assert_array_equal(other.coef_, model.coef_)
        other.partial_fit(*_first_batch())  # works: a lock of its own
        assert other.__dict__[LOCK_ATTRIBUTE] is not lock


def test_the_lock_is_not_created_by_init():
    # scikit-learn: __init__ stores parameters and nothing else
    assert set(vars(RenewableHuberRegressor())) == set(RenewableHuberRegressor().get_params())
