"""Device batches into the CUDA engine (issue 14): CuPy arrays, PyTorch CUDA
tensors and JAX arrays consumed in place through DLPack, device-resident
prediction and score, the contract's errors with the model kept. GPU only
(marked `gpu`); the routing and the capsule rules have host-side tests
(tests/test_device_inputs.py, tests/backends/test_dlpack_capsules.py).

The same engine fed the same values from the host must end with the same
bits: the device path only skips the staging copy.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor
from renewable_huber.exceptions import BackendContractError, ValidationError

pytestmark = pytest.mark.gpu

FRAMEWORKS = ["cupy", "torch", "jax"]


def framework(name):
    """(to_device, to_host, array type) of a framework with a CUDA device, else skip."""
    if name == "cupy":
        cupy = pytest.importorskip("cupy")
        return cupy.asarray, lambda a: a.get(), cupy.ndarray
    if name == "torch":
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("PyTorch without CUDA")
        return (lambda a: torch.as_tensor(a, device="cuda")), (lambda a: a.cpu().numpy()), torch.Tensor
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX without a GPU")
    return (lambda a: jax.device_put(a, gpu)), np.asarray, jax.Array


def stream_data(dtype, n=3000, p=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.5 + rng.standard_t(2, size=n)
    y[::50] += 40.0
    w = rng.uniform(0.2, 3.0, size=n)
    return X.astype(dtype), y.astype(dtype), w.astype(dtype)


def assert_same_state(a, b):
    np.testing.assert_array_equal(a.state_.coefficients, b.state_.coefficients)
    np.testing.assert_array_equal(a.state_.information, b.state_.information)
    assert a.n_samples_seen_ == b.n_samples_seen_ and a.state_.batch_count == b.state_.batch_count


@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_device_stream_ends_with_the_host_streams_bits(name, dtype, penalty):
    to_device, to_host, array_type = framework(name)
    X, y, w = stream_data(dtype)
    host = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty)
    device = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty)
    for start in range(0, len(y), 1000):
        rows = slice(start, start + 1000)
        weights = None if start == 0 else w[rows]
        host.partial_fit(X[rows], y[rows], weights)
        device.partial_fit(to_device(X[rows]), to_device(y[rows]), None if weights is None else to_device(weights))
        assert_same_state(device, host)
    # nothing staged: the device-fed engine holds no batch buffers
    assert device.cuda_features_["workspace_bytes"] < host.cuda_features_["workspace_bytes"]
    prediction = device.predict(to_device(X))
    assert isinstance(prediction, array_type)
    np.testing.assert_array_equal(to_host(prediction), host.predict(X))
    assert device.score(to_device(X), to_device(y), to_device(w)) == pytest.approx(host.score(X, y, w), rel=1e-12)
    assert device.score(to_device(X), to_device(y)) == pytest.approx(host.score(X, y), rel=1e-12)


def test_predictions_stay_on_the_inputs_device_and_framework():
    cupy = pytest.importorskip("cupy")
    torch = pytest.importorskip("torch")
    X, y, _ = stream_data("float64")
    model = RenewableHuberRegressor(backend="native_cuda").fit(cupy.asarray(X), cupy.asarray(y))
    from_torch = model.predict(torch.as_tensor(X, device="cuda"))
    assert isinstance(from_torch, torch.Tensor) and from_torch.device.type == "cuda"
    assert from_torch.dtype == torch.float64 and not from_torch.requires_grad
    from_cupy = model.predict(cupy.asarray(X))
    assert isinstance(from_cupy, cupy.ndarray) and from_cupy.device.id == 0
    np.testing.assert_array_equal(from_torch.cpu().numpy(), from_cupy.get())
    assert isinstance(model.predict(X), np.ndarray)  # host input, host answer


def test_work_queued_on_the_producers_stream_is_waited_for():
    """X and y are produced on a non-blocking CuPy stream and handed over
    without a synchronization: the export on the engine's stream orders them.
    The producer's last kernels (exact multiplications by one, a few
    milliseconds of them) write the arrays the engine reads; read early, the
    engine would see memory not yet written."""
    cupy = pytest.importorskip("cupy")
    X, y, _ = stream_data("float64", n=200_000, p=16)
    expected = RenewableHuberRegressor(backend="native_cuda").fit(X, y)
    producer = cupy.cuda.Stream(non_blocking=True)
    with producer:
        dX, dy = cupy.asarray(X), cupy.asarray(y)
        for _ in range(300):
            dX, dy = dX * 1.0, dy * 1.0  # new buffers each time: the last ones are written last
        model = RenewableHuberRegressor(backend="native_cuda").fit(dX, dy)
    assert_same_state(model, expected)


@pytest.mark.parametrize("name", ["cupy", "torch"])
def test_no_copy_is_made(name):
    """The engine reads the caller's memory (the addresses it used are the
    arrays' own) and the framework allocates nothing for the update."""
    X, y, w = stream_data("float64")
    if name == "cupy":
        cupy = pytest.importorskip("cupy")
        arrays = [cupy.asarray(a) for a in (X, y, w)]
        address = lambda a: a.data.ptr  # noqa: E731
        allocated = cupy.get_default_memory_pool().used_bytes
    else:
        torch = pytest.importorskip("torch")
        arrays = [torch.as_tensor(a, device="cuda") for a in (X, y, w)]
        address = lambda a: a.data_ptr()  # noqa: E731
        allocated = torch.cuda.memory_allocated
    model = RenewableHuberRegressor(backend="native_cuda").fit(*arrays)  # engine and workspaces created
    before = allocated()
    model.partial_fit(*arrays)
    assert allocated() == before
    engine = model._current_backend()._engine
    assert engine.last_device_pointers == tuple(address(a) for a in arrays)
    prediction = model.predict(arrays[0])
    assert engine.last_device_pointers == (address(arrays[0]), 0, address(prediction))


def test_torch_tensors_that_require_grad_are_read_detached():
    torch = pytest.importorskip("torch")
    X, y, _ = stream_data("float64")
    tX = torch.as_tensor(X, device="cuda").requires_grad_(True)
    model = RenewableHuberRegressor(backend="native_cuda").fit(tX, torch.as_tensor(y, device="cuda"))
    reference = RenewableHuberRegressor(backend="native_cuda").fit(X, y)
    assert_same_state(model, reference)
    assert tX.grad is None


def test_views_with_an_offset_are_read_in_place():
    cupy = pytest.importorskip("cupy")
    X, y, _ = stream_data("float64")
    big = cupy.asarray(np.vstack([np.zeros((7, X.shape[1])), X]))
    model = RenewableHuberRegressor(backend="native_cuda").fit(big[7:], cupy.asarray(y))
    assert_same_state(model, RenewableHuberRegressor(backend="native_cuda").fit(X, y))


def test_capsules_are_released_once_the_update_is_done():
    cupy = pytest.importorskip("cupy")
    X, y, w = stream_data("float64")
    dX, dy, dw = cupy.asarray(X), cupy.asarray(y), cupy.asarray(w)
    counts = [sys.getrefcount(a) for a in (dX, dy, dw)]
    model = RenewableHuberRegressor(backend="native_cuda")
    for _ in range(3):
        model.partial_fit(dX, dy, dw)
        model.predict(dX)
    assert [sys.getrefcount(a) for a in (dX, dy, dw)] == counts


@pytest.mark.parametrize("name", ["cupy", "torch"])
def test_contract_violations_name_the_argument_and_keep_the_model(name):
    to_device, _, _ = framework(name)
    X, y, w = stream_data("float64")
    model = RenewableHuberRegressor(backend="native_cuda").fit(to_device(X), to_device(y))
    before = model.state_dict()
    wide = to_device(np.hstack([X, X]))
    cases = [
        ((wide[:, ::2], to_device(y)), BackendContractError, "X must be C-contiguous"),
        ((to_device(X.astype(np.float32)), to_device(y)), BackendContractError,
         "X must be float64 like the model, not float32"),
        ((to_device(X), to_device(y.astype(np.float32))), BackendContractError,
         "y must be float64 like the model, not float32"),
        ((to_device(X), y), BackendContractError, "must all be device arrays or all host arrays"),
        ((to_device(X), to_device(y), w), BackendContractError, "sample_weight host"),
        ((to_device(X), to_device(y[:-1])), ValidationError, "X and y must contain the same number of samples"),
        ((to_device(np.where(np.arange(X.size).reshape(X.shape) == 5, np.nan, X)), to_device(y)), ValidationError,
         "X must not contain NaN or infinite values"),
        ((to_device(X), to_device(y), to_device(-w)), ValidationError, "sample_weight must be non-negative"),
    ]
    for arguments, error, message in cases:
        with pytest.raises(error, match=message):
            model.partial_fit(*arguments)
        after = model.state_dict()
        np.testing.assert_array_equal(after["coefficients"], before["coefficients"])
        np.testing.assert_array_equal(after["information"], before["information"])
    with pytest.raises(BackendContractError, match="X must be C-contiguous"):
        model.predict(wide[:, ::2])
    with pytest.raises(ValidationError, match="X must not contain NaN"):
        model.predict(to_device(np.full_like(X, np.nan)))
    model.partial_fit(to_device(X), to_device(y))  # still usable
    assert model.state_.batch_count == before["batch_count"] + 1


def test_a_model_fitted_on_the_device_checkpoints_to_numpy(tmp_path):
    cupy = pytest.importorskip("cupy")
    X, y, _ = stream_data("float64")
    model = RenewableHuberRegressor(backend="native_cuda").fit(cupy.asarray(X), cupy.asarray(y))
    model.save(tmp_path / "device.npz")
    restored = RenewableHuberRegressor.load(tmp_path / "device.npz", backend="numpy")
    np.testing.assert_array_equal(restored.coef_, model.coef_)
    np.testing.assert_allclose(restored.predict(X), model.predict(cupy.asarray(X)).get(), rtol=1e-12, atol=1e-12)


def test_to_device_moves_a_stream_to_the_gpu_and_back_with_its_bits(tmp_path):
    pytest.importorskip("_renewable_huber_native_cpu")  # the stream starts on the CPU engine
    X, y, _ = stream_data("float64")
    model = RenewableHuberRegressor(backend="native_cpu").fit(X[:1000], y[:1000])
    model.save(tmp_path / "cpu.npz")
    model.to_device("cuda")
    assert (model.backend_, model.device_) == ("native_cuda", "cuda:0")
    model.partial_fit(X[1000:2000], y[1000:2000])
    resumed = RenewableHuberRegressor.load(tmp_path / "cpu.npz", backend="native_cuda", device="cuda")
    resumed.partial_fit(X[1000:2000], y[1000:2000])
    assert_same_state(model, resumed)
    on_gpu = model.state_dict()
    model.to_device("cpu", backend="numpy")
    np.testing.assert_array_equal(model.state_dict()["information"], on_gpu["information"])
    model.partial_fit(X[2000:], y[2000:])
    assert model.state_.batch_count == 3
