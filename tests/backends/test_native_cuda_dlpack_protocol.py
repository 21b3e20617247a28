"""The DLPack protocol as the CUDA backend drives it, on the host (CI): fake
producers record the arguments of every ``__dlpack__`` call and hand out
NumPy's capsules; a stand-in engine consumes them with the binding's own
capsule code (``_check_dlpack_capsule``), so the reference counts of the
arrays behind them show every deleter call. TensorFlow's path runs against
a stand-in ``tensorflow`` module (the GPU machine has no TensorFlow).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

native = pytest.importorskip("_renewable_huber_native_cuda")

from renewable_huber import RenewableHuberRegressor  # noqa: E402
from renewable_huber import device_arrays  # noqa: E402
from renewable_huber.backends import native_cuda_backend as backend_module  # noqa: E402
from renewable_huber.exceptions import BackendContractError  # noqa: E402

ENGINE_STREAM = 0x5EED


class Producer:
    """A CUDA array of some framework: DLPack calls are recorded, the capsule is NumPy's."""

    __module__ = "fakeframework"  # framework_of() reads the module's root

    def __init__(self, array, *, versioned=True, device=0):
        self.array, self.versioned, self.device, self.calls = np.ascontiguousarray(array), versioned, device, []

    shape = property(lambda self: self.array.shape)
    dtype = property(lambda self: self.array.dtype)

    def __dlpack_device__(self):
        return 2, self.device

    def __dlpack__(self, *, stream=None, max_version=None):
        if max_version is not None and not self.versioned:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        self.calls.append({"stream": stream, "max_version": max_version})
        return self.array.__dlpack__(max_version=max_version) if max_version else self.array.__dlpack__()

    def reshape(self, *shape):
        return Producer(self.array.reshape(*shape), versioned=self.versioned, device=self.device)


class TorchTensor(Producer):
    """Stands for a torch.Tensor: the backend must detach it before exporting."""

    __module__ = "torch"

    def __init__(self, array, **kwargs):
        super().__init__(array, **kwargs)
        self.detached = []

    def detach(self):
        view = TorchTensor(self.array)
        self.detached.append(view)
        return view


class RecordingEngine:
    """Stands for _native.Engine: consumes the capsules as the binding does."""

    instances: list = []

    def __init__(self, device, dtype, n_features, fit_intercept, *args, solver_choice=0, block_tiles=0):
        self.dtype, self.d = dtype, n_features + int(fit_intercept)
        self.stream = ENGINE_STREAM
        self.consumed = []
        RecordingEngine.instances.append(self)

    def restore(self, *args):
        pass

    def copy_state(self, coefficients, information, meat=None):
        """A later upload over this engine's state keeps a copy of it (for rollback)."""
        coefficients[...] = 0
        information[...] = 0
        if meat is not None:
            meat[...] = 0
        return types.SimpleNamespace(n_samples_seen=0, batch_count=0, previous_lambda=0.0, weight_sum=0.0)

    def features(self):
        return {"stream": ENGINE_STREAM, "workspace_bytes": 0}

    def update_dlpack(self, X, y, w, config, coefficients):
        bits = 64 if self.dtype == "float64" else 32
        read = [native._check_dlpack_capsule(X, "X", 2, bits, 1, 0)]
        read.append(native._check_dlpack_capsule(y, "y", 1, bits, 1, 0))
        if w is not None:
            read.append(native._check_dlpack_capsule(w, "sample_weight", 1, bits, 1, 0))
        self.consumed.append(read)
        coefficients[:] = 0
        counters = types.SimpleNamespace(n_samples_seen=read[0]["shape"][0], batch_count=1, previous_lambda=0.0,
                                         weight_sum=float(read[0]["shape"][0]))
        diagnostics = types.SimpleNamespace(iterations=1, converged=True, objective=0.0, lambda_value=0.0,
                                            bandwidth=1.0, used_least_squares_fallback=False,
                                            solve_route="cholesky", stop_reason="converged")
        return diagnostics, counters


@pytest.fixture
def cuda_backend(monkeypatch):
    monkeypatch.setattr(backend_module, "runtime_info",
                        lambda: {"device_count": 1, "runtime_version": 13000, "driver_version": 13000})
    monkeypatch.setattr(backend_module._native, "Engine", RecordingEngine)
    RecordingEngine.instances.clear()
    return backend_module.NativeCudaBackend("float64")


def update(backend, X, y, w=None):
    from renewable_huber.config import SolverConfig
    from renewable_huber.state import RenewableHuberState

    state = backend.empty_state(X.shape[1], True, "float64")
    config = SolverConfig(tau=1.345, penalty="none", lambda_scale=1.0, bandwidth_scale=1.0, fit_intercept=True,
                          max_iter=10, tol=1e-6, ridge=1e-8)
    return backend.update(state, X, y, w, config)


def test_every_array_is_exported_on_the_engines_stream_as_versioned_dlpack(cuda_backend):
    rng = np.random.default_rng(0)
    X, y, w = Producer(rng.normal(size=(20, 3))), Producer(rng.normal(size=20)), Producer(np.ones(20))
    update(cuda_backend, X, y, w)
    for producer in (X, y, w):
        assert producer.calls == [{"stream": ENGINE_STREAM, "max_version": (1, 0)}]
    (read,) = RecordingEngine.instances[-1].consumed
    assert [r["versioned"] for r in read] == [True, True, True]
    assert [r["data"] for r in read] == [p.array.ctypes.data for p in (X, y, w)]  # in place


def test_a_producer_without_max_version_gets_a_legacy_request_on_the_same_stream(cuda_backend):
    X, y = Producer(np.zeros((5, 2)), versioned=False), Producer(np.zeros(5), versioned=False)
    update(cuda_backend, X, y)
    assert X.calls == [{"stream": ENGINE_STREAM, "max_version": None}]
    assert [r["versioned"] for r in RecordingEngine.instances[-1].consumed[0]] == [False, False]


def test_each_capsule_is_released_once_after_the_update(cuda_backend):
    X, y, w = Producer(np.zeros((5, 2))), Producer(np.zeros(5)), Producer(np.ones(5))
    counts = [sys.getrefcount(p.array) for p in (X, y, w)]
    for _ in range(3):
        update(cuda_backend, X, y, w)
    assert [sys.getrefcount(p.array) for p in (X, y, w)] == counts
    assert all(len(p.calls) == 3 for p in (X, y, w))  # one export per update, each consumed


def test_torch_tensors_are_detached_before_the_export(cuda_backend):
    X, y = TorchTensor(np.zeros((5, 2))), TorchTensor(np.zeros(5))
    update(cuda_backend, X, y)
    assert X.calls == [] and len(X.detached) == 1
    assert X.detached[0].calls == [{"stream": ENGINE_STREAM, "max_version": (1, 0)}]


def test_an_array_on_another_device_is_refused_before_any_export(cuda_backend):
    X, y = Producer(np.zeros((5, 2)), device=1), Producer(np.zeros(5), device=1)
    with pytest.raises(BackendContractError, match="X is on cuda:1, the engine on cuda:0"):
        update(cuda_backend, X, y)
    assert X.calls == [] and y.calls == []


def test_the_binding_contract_errors_arrive_as_backend_contract_errors(cuda_backend):
    X, y = Producer(np.zeros((5, 2), np.float32)), Producer(np.zeros(5))
    with pytest.raises(BackendContractError, match="X must be float64 like the model, not float32"):
        update(cuda_backend, X, y)


# ------------------------------------------------------------- TensorFlow


class FakeTensorflow(types.ModuleType):
    """What the backend uses of tensorflow: eager mode, the device sync, to_dlpack."""

    def __init__(self, *, eager=True, sync=True):
        super().__init__("tensorflow")
        self.__version__ = "2.99-fake"
        self.events = []
        self.executing_eagerly = lambda: eager
        self.test = types.SimpleNamespace(experimental=types.SimpleNamespace())
        if sync:
            self.test.experimental.sync_devices = lambda: self.events.append("sync_devices")

        def to_dlpack(tensor):
            self.events.append("to_dlpack")
            return tensor.array.__dlpack__()

        self.experimental = types.SimpleNamespace(dlpack=types.SimpleNamespace(to_dlpack=to_dlpack))


class TensorflowTensor:
    def __init__(self, array):
        self.array, self.device = array, "/job:localhost/replica:0/task:0/device:GPU:0"

    shape = property(lambda self: self.array.shape)


TensorflowTensor.__module__ = "tensorflow.python.framework.ops"


def test_tensorflow_waits_for_its_pending_work_before_the_export(monkeypatch):
    tf = FakeTensorflow()
    monkeypatch.setitem(sys.modules, "tensorflow", tf)
    tensor = TensorflowTensor(np.zeros((3, 2)))
    assert device_arrays.dlpack_device(tensor) == (2, 0)
    capsule = device_arrays.export_capsule(tensor, ENGINE_STREAM)
    assert tf.events == ["sync_devices", "to_dlpack"]
    assert native._check_dlpack_capsule(capsule, "X", 2, 64, 1, 0)["shape"] == (3, 2)


def test_tensorflow_is_refused_inside_tf_function_and_without_a_device_sync(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", FakeTensorflow(eager=False))
    with pytest.raises(BackendContractError, match="eager mode only, not inside tf.function"):
        device_arrays.export_capsule(TensorflowTensor(np.zeros((3, 2))), ENGINE_STREAM)
    tf = FakeTensorflow(sync=False)
    monkeypatch.setitem(sys.modules, "tensorflow", tf)
    with pytest.raises(BackendContractError, match="cannot wait for its pending GPU work"):
        device_arrays.export_capsule(TensorflowTensor(np.zeros((3, 2))), ENGINE_STREAM)
    assert tf.events == []  # nothing exported


def test_the_estimator_never_converts_a_device_batch(monkeypatch, cuda_backend):
    monkeypatch.setattr("renewable_huber.engine_choice.create_backend", lambda *a, **k: cuda_backend)
    X, y = Producer(np.zeros((8, 2))), Producer(np.arange(8.0))
    RenewableHuberRegressor(backend="native_cuda", device="cuda").partial_fit(X, y)
    assert len(X.calls) == 1 and len(y.calls) == 1
