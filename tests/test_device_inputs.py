"""Device inputs as the estimator routes them (device_arrays.py), on the host:
a stand-in device array (it reports a CUDA device through DLPack and wraps a
NumPy array) and a stand-in backend that accepts device arrays. The real
arrays (CuPy, PyTorch, JAX) into the CUDA engine run on the GPU machine:
tests/backends/test_native_cuda_device_inputs.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor
from renewable_huber import device_arrays as device_arrays_module
from renewable_huber import engine_choice
from renewable_huber.backends.base import BackendCapabilities
from renewable_huber.backends.numpy_backend import NumpyBackend
from renewable_huber.device_arrays import (
    check_device_batch,
    dlpack_device,
    framework_of,
    is_device_array,
    is_device_batch,
)
from renewable_huber.exceptions import BackendContractError, ValidationError

rng = np.random.default_rng(3)
X = rng.normal(size=(60, 3))
Y = X @ [1.0, -2.0, 0.5] + 0.25 + rng.standard_t(3, size=60)
W = rng.uniform(0.5, 2.0, size=60)


class FakeDeviceArray:
    """Reports CUDA device `index` through DLPack; arithmetic is NumPy's."""

    __module__ = "fakecuda.core"  # the framework name the messages show

    def __init__(self, array, index=0):
        self.array, self.index = np.asarray(array), index

    def __dlpack_device__(self):
        return 2, self.index

    shape = property(lambda self: self.array.shape)

    def reshape(self, *shape):
        return FakeDeviceArray(self.array.reshape(*shape), self.index)


class DeviceBackend(NumpyBackend):
    """The NumPy reference behind the device-array capability: records what reached it."""

    name = "fake_device"
    device = "cuda:0"
    capabilities = BackendCapabilities(accepts_device_arrays=True)

    def __init__(self, dtype="float64"):
        super().__init__(dtype)
        self.received = []

    def update(self, state, X, y, sample_weight, config):
        self.received.append((X, y, sample_weight))
        unwrap = lambda a: None if a is None else a.array  # noqa: E731
        return super().update(state, unwrap(X), unwrap(y), unwrap(sample_weight), config)

    def predict(self, state, X):
        self.received.append((X,))
        return FakeDeviceArray(super().predict(state, X.array))


@pytest.fixture
def device_model(monkeypatch):
    backend = DeviceBackend()
    real = engine_choice.create_backend
    monkeypatch.setattr(engine_choice, "create_backend",
                        lambda name, *args, **kwargs: backend if name == "native_cuda" else real(name, *args, **kwargs))
    monkeypatch.setattr(device_arrays_module, "require_finite", lambda value, name: None)
    return RenewableHuberRegressor(backend="native_cuda", device="cuda"), backend


def test_what_counts_as_a_device_array():
    assert is_device_array(FakeDeviceArray(X)) and dlpack_device(FakeDeviceArray(X, 3)) == (2, 3)
    assert not is_device_array(X) and dlpack_device(X) == (1, 0)  # NumPy: host through DLPack
    assert not is_device_array([1.0, 2.0]) and dlpack_device(None) is None
    assert framework_of(X) == "numpy"


def test_a_batch_is_all_device_or_all_host():
    device = FakeDeviceArray
    assert is_device_batch(device(X), device(Y), device(W)) and is_device_batch(device(X), device(Y))
    assert not is_device_batch(X, Y, W) and not is_device_batch(X, Y)
    for mixed, named in [((device(X), Y, None), "X fakecuda on cuda:0, y host"),
                         ((X, device(Y), None), "X host, y fakecuda on cuda:0"),
                         ((device(X), device(Y), W), "sample_weight host")]:
        with pytest.raises(BackendContractError, match="must all be device arrays or all host arrays") as error:
            is_device_batch(*mixed)
        assert named in str(error.value)


def test_device_arrays_reach_the_backend_untouched(device_model):
    model, backend = device_model
    batches = [(FakeDeviceArray(X[s:s + 20]), FakeDeviceArray(Y[s:s + 20]), FakeDeviceArray(W[s:s + 20]))
               for s in range(0, 60, 20)]
    for batch in batches:
        model.partial_fit(*batch)
    assert [received for received in backend.received] == batches  # the same objects, not copies
    reference = RenewableHuberRegressor(backend="numpy")
    for s in range(0, 60, 20):
        reference.partial_fit(X[s:s + 20], Y[s:s + 20], W[s:s + 20])
    np.testing.assert_array_equal(model.coef_, reference.coef_)
    prediction = model.predict(FakeDeviceArray(X))
    assert isinstance(prediction, FakeDeviceArray)  # the backend's device answer, returned as is
    np.testing.assert_array_equal(prediction.array, reference.predict(X))


def test_device_shapes_are_checked_with_the_host_messages_and_the_model_kept(device_model):
    model, backend = device_model
    model.partial_fit(FakeDeviceArray(X), FakeDeviceArray(Y))
    before = model.state_dict()
    cases = [
        ((FakeDeviceArray(X[:, :2]), FakeDeviceArray(Y)), "X has 2 features, but RenewableHuberRegressor is expecting 3"),
        ((FakeDeviceArray(X), FakeDeviceArray(Y[:-1])), "X and y must contain the same number of samples"),
        ((FakeDeviceArray(X), FakeDeviceArray(Y), FakeDeviceArray(W[:5])),
         "sample_weight and X must contain the same number of samples"),
        ((FakeDeviceArray(X[0]), FakeDeviceArray(Y)), "X must be a two-dimensional numeric array"),
        ((FakeDeviceArray(X[:0]), FakeDeviceArray(Y[:0])), "0 sample"),
        ((FakeDeviceArray(X), FakeDeviceArray(np.ones((60, 2)))), "y must be a one-dimensional numeric array"),
    ]
    calls = len(backend.received)
    for arguments, message in cases:
        with pytest.raises(ValidationError, match=message):
            model.partial_fit(*arguments)
    assert len(backend.received) == calls  # refused before the backend
    after = model.state_dict()
    np.testing.assert_array_equal(after["coefficients"], before["coefficients"])
    np.testing.assert_array_equal(after["information"], before["information"])


def test_a_column_vector_is_viewed_as_a_vector():
    _, y, w = check_device_batch(FakeDeviceArray(X), FakeDeviceArray(Y[:, None]), FakeDeviceArray(W[:, None]),
                                 3, "RenewableHuberRegressor")
    assert y.shape == (60,) and w.shape == (60,)


@pytest.mark.parametrize("backend", ["numpy", "native_cpu"])
def test_host_backends_refuse_device_arrays_and_say_which_backend_reads_them(backend):
    if backend == "native_cpu":
        pytest.importorskip("_renewable_huber_native_cpu")
    model = RenewableHuberRegressor(backend=backend)
    with pytest.raises(BackendContractError, match=r"device arrays \(fakecuda on cuda:0\) need backend='native_cuda'"):
        model.partial_fit(FakeDeviceArray(X), FakeDeviceArray(Y))
    assert not model.__sklearn_is_fitted__()
    model.fit(X, Y)
    before = model.coef_.copy()
    with pytest.raises(BackendContractError, match=f"this model uses backend='{backend}'"):
        model.partial_fit(FakeDeviceArray(X), FakeDeviceArray(Y))
    with pytest.raises(BackendContractError, match="need backend='native_cuda'"):
        model.predict(FakeDeviceArray(X))
    np.testing.assert_array_equal(model.coef_, before)


def test_auto_on_the_cpu_refuses_device_arrays():
    with pytest.raises(BackendContractError, match="backend='auto' with device='cpu'"):
        RenewableHuberRegressor(backend="auto", device="cpu").partial_fit(FakeDeviceArray(X), FakeDeviceArray(Y))


# ------------------------------------------------------------------ to_device


def test_to_device_moves_the_stream_between_cpu_engines_and_keeps_its_bits():
    pytest.importorskip("_renewable_huber_native_cpu")
    model = RenewableHuberRegressor(backend="numpy").fit(X[:30], Y[:30])
    state = model.state_dict()
    assert model.to_device("cpu", backend="native_cpu") is model
    assert (model.backend, model.device, model.backend_) == ("native_cpu", "cpu", "native_cpu")
    moved = model.state_dict()
    for key in ("coefficients", "information"):
        np.testing.assert_array_equal(moved[key], state[key])
    assert moved["batch_count"] == state["batch_count"] and moved["n_samples_seen"] == state["n_samples_seen"]
    model.partial_fit(X[30:], Y[30:])  # the stream continues on the new engine
    assert model.state_.batch_count == 2
    assert model.to_device("cpu").backend_ == "native_cpu"  # auto on the CPU: the native engine when installed


def test_to_device_failures_leave_the_model_as_it_was():
    model = RenewableHuberRegressor(backend="numpy").fit(X, Y)
    before = model.state_dict()
    with pytest.raises(ValidationError):
        model.to_device("gpu")
    with pytest.raises(Exception, match="native_cuda|CUDA|cuda"):
        model.to_device("cuda:0", backend="native_cuda")  # no GPU here (CI), or a real move on a GPU machine
        pytest.skip("a CUDA device exists here: the failure path is the point of this test")
    assert (model.backend, model.device, model.backend_) == ("numpy", "auto", "numpy")
    np.testing.assert_array_equal(model.state_dict()["information"], before["information"])


def test_to_device_on_an_unfitted_model_sets_its_parameters():
    model = RenewableHuberRegressor().to_device("cpu", backend="numpy")
    assert (model.backend, model.device) == ("numpy", "cpu") and not model.__sklearn_is_fitted__()
