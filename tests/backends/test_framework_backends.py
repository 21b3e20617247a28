"""The framework backends (cupy, torch, tensorflow): the reference update
through each framework's ArrayOps.

Each (framework, device) pair is one parameter of the same checks: both
golden corpora (host and framework-array inputs), the randomized
differential against the NumPy reference, the solve ladder's pieces against
NumpyOps', inputs used in place, error paths, state independence and the
checkpoint round trip into numpy. A framework that is not installed skips
its parameters; CUDA parameters are marked `gpu` (conftest.py skips them
without a device). The estimator does not yet carry framework arrays
(docs/backends.md, "Through the estimator"): the corpora are replayed by
driving the backend directly, and the estimator's own path is an expected
failure until it does.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from differential import EXTERNAL_CORPUS, PROJECT_CORPUS, linear, load_cases, replay_case
from own_rounding import SCENARIOS, check_own_rounding_stream, config

from renewable_huber import RenewableHuberRegressor, serialization
from renewable_huber.backends import registry
from renewable_huber.backends.numpy_backend import NumpyBackend
from renewable_huber.backends.registry import BACKEND_SPECS, create_backend
from renewable_huber.config import PARAMETER_DEFAULTS, SolverConfig, json_safe_params
from renewable_huber.core.array_ops import NumpyOps
from renewable_huber.exceptions import BackendContractError, BackendUnavailableError
from renewable_huber.state import RenewableHuberState

gpu = pytest.mark.gpu

PAIRS = [
    pytest.param(("torch", "cpu"), id="torch-cpu"),
    pytest.param(("tensorflow", "cpu"), id="tensorflow-cpu"),
    pytest.param(("torch", "cuda"), id="torch-cuda", marks=gpu),
    pytest.param(("tensorflow", "cuda"), id="tensorflow-cuda", marks=gpu),
    pytest.param(("cupy", "cuda"), id="cupy-cuda", marks=gpu),
]


class Framework:
    """One (framework, device): how to make its arrays and read them back."""

    def __init__(self, name: str, device: str) -> None:
        self.name, self.device = name, device
        self.module = pytest.importorskip(name)

    def backend(self, dtype: str = "float64"):
        return create_backend(self.name, self.device, dtype, None)

    def native(self, array, dtype=None):
        """``array`` as this framework's array on the device (made by the test, not the backend)."""
        array = np.asarray(array) if dtype is None else np.asarray(array, dtype=dtype)
        if self.name == "torch":
            return self.module.tensor(array, device="cpu" if self.device == "cpu" else "cuda:0")
        if self.name == "tensorflow":
            with self.module.device("/CPU:0" if self.device == "cpu" else "/GPU:0"):
                return self.module.identity(self.module.constant(array))
        return self.module.asarray(array)

    def is_native(self, value) -> bool:
        types = {"torch": "Tensor", "tensorflow": "Tensor", "cupy": "ndarray"}
        return isinstance(value, getattr(self.module, types[self.name]))

    def host(self, value) -> np.ndarray:
        if self.name == "torch":
            return value.detach().cpu().numpy()
        if self.name == "tensorflow":
            return value.numpy()
        return self.module.asnumpy(value)


@pytest.fixture(params=PAIRS)
def framework(request) -> Framework:
    return Framework(*request.param)


class BackendStream:
    """What replay_case reads of an estimator, over a backend driven directly
    (the estimator does not carry framework arrays yet)."""

    def __init__(self, framework: Framework, transport: str, params: dict) -> None:
        params = dict(PARAMETER_DEFAULTS, **params)
        self.framework, self.transport = framework, transport
        self.dtype = np.dtype(params["dtype"])
        self.backend = framework.backend(params["dtype"])
        self.config = SolverConfig.from_params(params)
        self.fit_intercept = params["fit_intercept"]
        self.state = None

    def _input(self, value):
        array = np.asarray(value, dtype=self.dtype)
        return self.framework.native(array) if self.transport == "native" else array

    def partial_fit(self, X, y, sample_weight=None):
        X = self._input(X)
        if self.state is None:
            self.state = self.backend.empty_state(X.shape[1], self.fit_intercept, self.dtype.name)
        weights = None if sample_weight is None else self._input(sample_weight)
        self.state, self.diagnostics_ = self.backend.update(self.state, X, self._input(y), weights, self.config)
        return self

    @property
    def state_(self):
        return self.backend.to_host_state(self.state)

    def predict(self, X):
        out = self.backend.predict(self.state, self._input(X))
        assert self.framework.is_native(out)
        return self.framework.host(out)


# ---------------------------------------------------------------- the corpora and the reference

CASES = load_cases(PROJECT_CORPUS) + (load_cases(EXTERNAL_CORPUS) if EXTERNAL_CORPUS.exists() else [])


@pytest.mark.parametrize("transport", ["host", "native"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_golden_corpora_replay(framework, case, transport):
    """Both corpora, with the own-rounding allowances (a framework's BLAS and
    reductions do not round as NumPy's do), fed NumPy arrays and the
    framework's own arrays."""
    replay_case(case, framework.name, oracle=False, own_rounding=True, device=framework.device,
                model=lambda params: BackendStream(framework, transport, params))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("seed", [0, 1])
def test_randomized_differential_against_numpy(framework, scenario, penalty, dtype, seed):
    backend = framework.backend(dtype)
    host_view = SimpleNamespace(update=backend.update, to_host_state=backend.to_host_state,
                                predict=lambda state, X: framework.host(backend.predict(state, X)))
    check_own_rounding_stream(host_view, scenario, penalty, dtype, seed, schedule_rtol=1e-12 if dtype == "float64" else 1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_solve_ladder_pieces_follow_numpy_ops(framework, dtype):
    """rcond exact in the 1-norm, LU returning None on an exactly zero pivot,
    minimum-norm least squares with the dtype's singular-value cutoff."""
    ops, reference = framework.backend(dtype)._ops, NumpyOps(dtype)
    rtol = 1e-10 if dtype == "float64" else 2e-4
    rng = np.random.default_rng(3)
    a = rng.normal(size=(5, 5)).astype(dtype)
    a = a @ a.T + 0.1 * np.eye(5, dtype=dtype)
    b = rng.normal(size=5).astype(dtype)
    with ops.context():
        A, B = ops.asarray(a), ops.asarray(b)
        assert ops.reciprocal_condition(A) == pytest.approx(reference.reciprocal_condition(a), rel=rtol)
        np.testing.assert_allclose(ops.to_numpy(ops.solve(A, B)), reference.solve(a, b), rtol=rtol * 10)
        np.testing.assert_allclose(ops.to_numpy(ops.least_squares(A, B)), reference.least_squares(a, b),
                                   rtol=rtol * 10)
        # an exactly zero pivot: a zero column
        singular = a.copy()
        singular[:, 2] = 0.0
        S = ops.asarray(singular)
        assert ops.reciprocal_condition(S) == reference.reciprocal_condition(singular) == 0.0
        assert ops.solve(S, B) is None and reference.solve(singular, b) is None
        # rank 4 of 5 by duplicated columns: the minimum-norm solution
        duplicated = a.copy()
        duplicated[:, 4] = duplicated[:, 3]
        np.testing.assert_allclose(ops.to_numpy(ops.least_squares(ops.asarray(duplicated), B)),
                                   reference.least_squares(duplicated, b), rtol=rtol * 1e3, atol=rtol * 10)
        # the cutoff is eps(dtype) * d of the largest singular value
        u, _, vt = np.linalg.svd(rng.normal(size=(5, 5)))
        eps = np.finfo(dtype).eps
        graded = ((u * np.array([1.0, 1.0, 1.0, 1.0, 0.5 * eps])) @ vt).astype(dtype)
        x = ops.to_numpy(ops.least_squares(ops.asarray(graded), B))
        np.testing.assert_allclose(x, reference.least_squares(graded, b), rtol=rtol * 1e3, atol=rtol * 10)
        assert np.linalg.norm(x) < 10  # the tiny direction was dropped, not divided by


def test_singular_system_takes_the_least_squares_route(framework):
    X, y = linear(300, 3)
    X[:, 2] = X[:, 1]
    backend = framework.backend("float64")
    cfg = config(tau=100.0, ridge=0.0)
    state, diagnostics = backend.update(RenewableHuberState.empty(3, True), X, y, None, cfg)
    _, expected = NumpyBackend("float64").update(RenewableHuberState.empty(3, True), X, y, None, cfg)
    assert diagnostics.used_regularized_fallback == expected.used_regularized_fallback
    coefficients = backend.to_host_state(state).coefficients
    assert coefficients[1] == pytest.approx(coefficients[2], abs=1e-8)


# ---------------------------------------------------------------- arrays in and out


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_state_lives_on_the_device_and_predict_returns_the_framework_array(framework, dtype):
    X, y = linear(200, 3, dtype=dtype)
    backend = framework.backend(dtype)
    assert backend.capabilities.state_on_device and backend.device == ("cpu" if framework.device == "cpu" else "cuda:0")
    state, _ = backend.update(backend.empty_state(3, True, dtype), X, y, None, config())
    for array in (state.coefficients, state.information):
        assert framework.is_native(array)
        assert framework.host(array).dtype == np.dtype(dtype)
    for X_in in (X[:7], framework.native(X[:7])):
        out = backend.predict(state, X_in)
        assert framework.is_native(out) and framework.host(out).dtype == np.dtype(dtype)
        host = backend.to_host_state(state)
        np.testing.assert_allclose(framework.host(out), X[:7] @ host.coefficients[:3] + host.coefficients[3],
                                   rtol=1e-5 if dtype == "float32" else 1e-12)
    host = backend.to_host_state(state)
    assert isinstance(host.coefficients, np.ndarray) and isinstance(host.information, np.ndarray)
    np.testing.assert_array_equal(backend.host_coefficients(state), host.coefficients)


def test_framework_arrays_on_the_device_are_used_in_place(framework):
    backend = framework.backend("float64")
    ops = backend._ops
    native = framework.native(np.arange(6.0).reshape(3, 2))
    with ops.context():
        used = ops.published(ops.asarray(native))
    if framework.name == "torch":
        assert used.data_ptr() == native.data_ptr()
    elif framework.name == "tensorflow":
        assert used is native
    else:
        assert used is native
    # host NumPy: converted once (on the CPU, PyTorch shares the NumPy buffer)
    host = np.arange(6.0).reshape(3, 2)
    with ops.context():
        converted = ops.published(ops.asarray(host))
    assert framework.is_native(converted)
    if framework.name == "torch" and framework.device == "cpu":
        assert converted.data_ptr() == host.ctypes.data
    # another dtype: cast on the device, to the model's
    with ops.context():
        cast = ops.published(ops.asarray(framework.native(np.arange(4), dtype=np.int32)))
    assert framework.host(cast).dtype == np.float64


def test_old_state_is_never_modified(framework):
    backend = framework.backend("float64")
    X, y = linear(300, 4, seed=1)
    state, _ = backend.update(backend.empty_state(4, True, "float64"), X[:150], y[:150], None, config(penalty="l1"))
    before = backend.to_host_state(state)
    next_state, _ = backend.update(state, X[150:], y[150:], np.full(150, 2.0), config(penalty="l1"))
    after = backend.to_host_state(state)
    np.testing.assert_array_equal(after.coefficients, before.coefficients)
    np.testing.assert_array_equal(after.information, before.information)
    assert (after.n_samples_seen, after.batch_count) == (150, 1)
    assert next_state.batch_count == 2 and next_state.information is not state.information
    # a host state given to update (a resumed checkpoint) is not touched either
    host = RenewableHuberState.empty(4, True)
    snapshot = host.copy()
    backend.update(host, X, y, None, config())
    np.testing.assert_array_equal(host.coefficients, snapshot.coefficients)
    np.testing.assert_array_equal(host.information, snapshot.information)
    # as_backend_state copies: changing the host state later changes nothing on the device
    moved = backend.as_backend_state(before)
    before.coefficients[:] = 99.0
    assert not np.any(backend.to_host_state(moved).coefficients == 99.0)


def test_checkpoint_keeps_backend_and_dtype_and_loads_into_numpy(framework, tmp_path):
    dtype = "float32"
    X, y = linear(400, 3, seed=2, dtype=dtype)
    backend = framework.backend(dtype)
    cfg = config(penalty="l1", tol=1e-5)
    state = backend.empty_state(3, True, dtype)
    for start in (0, 200):
        state, _ = backend.update(state, X[start:start + 200], y[start:start + 200], None, cfg)
    host = backend.to_host_state(state)
    params = dict(PARAMETER_DEFAULTS, backend=framework.name, device=framework.device, dtype=dtype, penalty="l1",
                  tol=1e-5, max_iter=200)
    path = serialization.write_checkpoint(tmp_path / "model.npz", {
        "config": json_safe_params(params), "coefficients": host.coefficients, "information": host.information,
        "n_samples_seen": host.n_samples_seen, "batch_count": host.batch_count,
        "previous_lambda": host.previous_lambda, "n_features_in": host.n_features_in,
        "fit_intercept": host.fit_intercept, "weight_sum": host.weight_sum, "feature_names_in": None,
    })
    payload = serialization.read_checkpoint(path)
    assert payload.config["backend"] == framework.name and payload.config["dtype"] == dtype
    assert payload.state.coefficients.dtype == np.float32
    np.testing.assert_array_equal(payload.state.coefficients, host.coefficients)
    np.testing.assert_array_equal(payload.state.information, host.information)
    # migrated to numpy, the stream goes on where the framework's goes on
    model = RenewableHuberRegressor.load(path, backend="numpy")
    assert model.backend_ == "numpy" and model.dtype == dtype
    np.testing.assert_allclose(model.predict(X[:5]), framework.host(backend.predict(state, X[:5])), rtol=1e-6)
    model.partial_fit(X[:100], y[:100])
    continued, _ = backend.update(state, X[:100], y[:100], None, cfg)
    np.testing.assert_allclose(model.coef_, backend.to_host_state(continued).coefficients[:3], atol=5e-3)
    # and a host state moves back onto the framework's device
    back = backend.as_backend_state(payload.state)
    assert framework.is_native(back.coefficients)
    np.testing.assert_array_equal(backend.to_host_state(back).information, host.information)


# ---------------------------------------------------------------- validation on the device

BAD_BATCHES = {
    "X one-dimensional": dict(X=np.ones(4)),
    "X without rows": dict(X=np.ones((0, 3)), y=np.ones(0)),
    "X without columns": dict(X=np.ones((4, 0))),
    "X of other width": dict(X=np.ones((4, 2)), expected=3),
    "X not finite": dict(X=np.array([[1.0, np.nan, 0.0]] * 4)),
    "X complex": dict(X=np.ones((4, 3), dtype=complex)),
    "y of other length": dict(y=np.ones(5)),
    "y not finite": dict(y=np.array([1.0, np.inf, 0.0, 1.0])),
    "y complex": dict(y=np.ones(4, dtype=complex)),
    "y as a column": dict(y=np.ones((4, 1)), fine=True),
    "weights of other length": dict(w=np.ones(3)),
    "weights negative": dict(w=np.array([1.0, -1.0, 1.0, 1.0])),
    "weights all zero": dict(w=np.zeros(4)),
    "weights not finite": dict(w=np.array([1.0, np.nan, 1.0, 1.0])),
    "integer X": dict(X=np.arange(12).reshape(4, 3), fine=True),
}


@pytest.mark.parametrize("case", list(BAD_BATCHES))
def test_framework_arrays_are_validated_with_validation_py_messages(framework, case):
    """The estimator's checks, run on the device for the framework's arrays:
    the same error (type and text) as validation.py gives the NumPy arrays."""
    from renewable_huber import validation

    spec = dict(dict(X=np.ones((4, 3)), y=np.ones(4), w=np.ones(4), expected=None, fine=False), **BAD_BATCHES[case])
    dtype = np.dtype("float64")

    def host_path():
        X = validation.validate_X(spec["X"], dtype, spec["expected"], "RenewableHuberRegressor")
        validation.validate_vector(spec["y"], "y", dtype, X.shape[0])
        validation.validate_sample_weight(spec["w"], dtype, X.shape[0])

    backend = framework.backend("float64")
    native = {key: framework.native(spec[key]) for key in ("X", "y", "w")}

    def device_path():
        return backend.validated_batch(native["X"], native["y"], native["w"], spec["expected"], "RenewableHuberRegressor")

    if spec["fine"]:
        host_path()
        X, y, w = device_path()
        assert all(framework.is_native(a) and framework.host(a).dtype == np.float64 for a in (X, y, w))
        assert tuple(y.shape) == (4,)
        return
    with pytest.raises(Exception) as expected:
        host_path()
    with pytest.raises(type(expected.value)) as actual:
        device_path()
    assert str(actual.value) == str(expected.value)
    # mixed: a framework X with host y and weights gives the same answer
    with pytest.raises(type(expected.value), match="^" + re.escape(str(expected.value)) + "$"):
        backend.validated_batch(native["X"], spec["y"], spec["w"], spec["expected"], "RenewableHuberRegressor")


def test_valid_framework_arrays_pass_validation_in_place(framework):
    backend = framework.backend("float64")
    X, y = linear(20, 3)
    X_n, y_n, w_n = framework.native(X), framework.native(y), framework.native(np.ones(20))
    X_v, y_v, w_v = backend.validated_batch(X_n, y_n, w_n, 3, "RenewableHuberRegressor")
    if framework.name == "torch":
        assert X_v.data_ptr() == X_n.data_ptr() and y_v.data_ptr() == y_n.data_ptr()
    else:
        assert X_v is X_n
    assert backend.owns(X_n) and not backend.owns(X)
    host = backend.validated_X(X, 3, "RenewableHuberRegressor")  # host data goes through validation.py
    assert isinstance(host, np.ndarray)
    np.testing.assert_array_equal(backend.host_array(backend.predict(
        backend.empty_state(3, True, "float64"), X_v)), np.zeros(20))


# ---------------------------------------------------------------- error paths


def test_a_missing_framework_names_the_pip_extra(monkeypatch):
    for name, label, extra in (("cupy", "CuPy", "gpu-cupy"), ("torch", "PyTorch", "gpu-torch"),
                               ("tensorflow", "TensorFlow", "gpu-tensorflow")):
        monkeypatch.setattr(registry, "requirement_installed", lambda spec, name=name: spec.name != name)
        device = "cuda" if name == "cupy" else "cpu"
        with pytest.raises(BackendUnavailableError) as error:
            create_backend(name, device, "float64", None)
        assert str(error.value).startswith(
            f"The {label} backend requires {label}. Install it with: pip install 'renewable-huber[{extra}]'"
        )
        assert BACKEND_SPECS[name].implementation is not None
        assert importlib.util.find_spec(f"renewable_huber.backends.{BACKEND_SPECS[name].implementation}") is not None


def test_cupy_requires_a_cuda_device():
    with pytest.raises(BackendUnavailableError, match="^backend='cupy' requires a CUDA device$"):
        create_backend("cupy", "cpu", "float64", None)


@pytest.mark.parametrize("name", ["torch", "tensorflow"])
def test_a_cuda_device_that_is_not_there_is_refused(name):
    pytest.importorskip(name)
    with pytest.raises(BackendUnavailableError, match=f"backend='{name}'"):
        create_backend(name, "cuda:97", "float64", None)


def test_torch_tensors_elsewhere_are_refused_and_nothing_changes():
    torch = pytest.importorskip("torch")
    backend = create_backend("torch", "cpu", "float64", None)
    X, y = linear(50, 2)
    state, _ = backend.update(backend.empty_state(2, True, "float64"), X, y, None, config())
    before = backend.to_host_state(state)
    elsewhere = torch.empty((50, 2), dtype=torch.float64, device="meta")  # a device that is not the CPU
    message = "^X is a torch tensor on meta, but backend='torch' runs on cpu; move it with .to('cpu') first$"
    with pytest.raises(BackendContractError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".to", r"\.to")):
        backend.update(state, elsewhere, y, None, config())
    with pytest.raises(BackendContractError, match="^X is a torch tensor on meta"):
        backend.predict(state, elsewhere)
    np.testing.assert_array_equal(backend.to_host_state(state).coefficients, before.coefficients)


@gpu
def test_torch_cuda_tensors_are_refused_by_a_cpu_backend():
    torch = pytest.importorskip("torch")
    backend = create_backend("torch", "cpu", "float64", None)
    X, y = linear(50, 2)
    state, _ = backend.update(backend.empty_state(2, True, "float64"), X, y, None, config())
    with pytest.raises(BackendContractError, match="^X is a torch tensor on cuda:0, but backend='torch' runs on cpu"):
        backend.predict(state, torch.tensor(X, device="cuda:0"))


@gpu
def test_cupy_arrays_of_another_device_are_refused():
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two CUDA devices")
    backend = create_backend("cupy", "cuda:0", "float64", None)
    X, y = linear(50, 2)
    with cupy.cuda.Device(1):
        elsewhere = cupy.asarray(X)
    with pytest.raises(BackendContractError, match="^X is a CuPy array on cuda:1, but backend='cupy' runs on cuda:0"):
        backend.update(backend.empty_state(2, True, "float64"), elsewhere, y, None, config())


def test_tensorflow_tensors_elsewhere_are_refused(monkeypatch):
    pytest.importorskip("tensorflow")
    from renewable_huber.core.ops import tensorflow_ops

    backend = create_backend("tensorflow", "cpu", "float64", None)
    X, y = linear(50, 2)
    state, _ = backend.update(backend.empty_state(2, True, "float64"), X, y, None, config())
    tensor = Framework("tensorflow", "cpu").native(X)
    monkeypatch.setattr(tensorflow_ops, "device_of", lambda t: ("GPU", 1))  # as a tensor on a GPU would say
    with pytest.raises(BackendContractError, match=r"^X is a TensorFlow tensor on /GPU:1, but backend='tensorflow' runs on /CPU:0"):
        backend.predict(state, tensor)


def test_tensorflow_refuses_tf_function():
    tf = pytest.importorskip("tensorflow")
    from renewable_huber.core.ops.tensorflow_ops import GRAPH_MODE_MESSAGE

    backend = create_backend("tensorflow", "cpu", "float64", None)
    X, y = linear(50, 2)
    state, _ = backend.update(backend.empty_state(2, True, "float64"), X, y, None, config())

    @tf.function
    def traced_predict(x):
        return backend.predict(state, x)

    @tf.function
    def traced_update(x, y):
        return backend.update(state, x, y, None, config())[0].coefficients

    plain_trace = tf.function(lambda x: backend.predict(state, x), autograph=False)
    calls = (lambda: traced_predict(tf.constant(X)), lambda: traced_update(tf.constant(X), tf.constant(y)),
             lambda: plain_trace(tf.constant(X)))
    for call in calls:
        with pytest.raises(BackendContractError) as error:
            call()
        assert str(error.value) == GRAPH_MODE_MESSAGE
    # eager again: it works
    assert backend.predict(state, tf.constant(X)).shape == (50,)


def test_torch_inputs_are_detached_and_outputs_carry_no_graph():
    torch = pytest.importorskip("torch")
    backend = create_backend("torch", "cpu", "float64", None)
    X, y = linear(120, 3)
    X_t = torch.tensor(X, requires_grad=True)
    y_t = torch.tensor(y, requires_grad=True)
    state, _ = backend.update(backend.empty_state(3, True, "float64"), X_t, y_t, None, config())
    out = backend.predict(state, X_t)
    for tensor in (state.coefficients, state.information, out):
        assert not tensor.requires_grad and tensor.grad_fn is None
    assert X_t.grad is None and X_t.requires_grad  # the caller's tensors are as they were


# ---------------------------------------------------------------- through the estimator


def test_the_estimator_runs_the_framework_backend(framework, tmp_path):
    X, y = linear(300, 3)
    model = RenewableHuberRegressor(backend=framework.name, device=framework.device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.partial_fit(X[:150], y[:150]).partial_fit(framework.native(X[150:]), framework.native(y[150:]))
    assert isinstance(model.coef_, np.ndarray) and model.backend_ == framework.name
    assert framework.is_native(model.predict(framework.native(X[:5])))
    score = model.score(framework.native(X), framework.native(y))  # on the framework's device
    assert isinstance(score, float)
    assert score == pytest.approx(model.score(X, y), rel=1e-12)  # host targets: on the host
    assert score == pytest.approx(model.score(framework.native(X), y), rel=1e-12)  # mixed
    loaded = RenewableHuberRegressor.load(model.save(tmp_path / "m.npz"))
    assert loaded.backend_ == framework.name


def test_cupy_extras_cover_cuda_12_and_13():
    tomllib = pytest.importorskip("tomllib")
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("not running from a source checkout")
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert extras["gpu-cupy"][0].startswith("cupy-cuda12x") and extras["gpu-cupy-cuda13"][0].startswith("cupy-cuda13x")
    assert "pip install 'renewable-huber[gpu-cupy-cuda13]'" in BACKEND_SPECS["cupy"].missing_message()
