"""The backend registry and device rules (API.md, "Backends and devices")."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from renewable_huber import BackendUnavailableError, RenewableHuberRegressor
from renewable_huber import engine_choice
from renewable_huber.backends import registry
from renewable_huber.backends.auto import cpu_dispatch_record
from renewable_huber.backends.base import BackendCapabilities, HostStateBackend
from renewable_huber.backends.registry import BACKEND_SPECS, availability, create_backend

API_BACKENDS = {"numpy", "native_cpu", "cupy", "native_cuda", "torch", "tensorflow"}
EXTRAS = {"native_cpu": "native-cpu", "cupy": "gpu-cupy", "native_cuda": "native-cuda", "torch": "gpu-torch", "tensorflow": "gpu-tensorflow"}
AUTO_KEYS = {"backend", "reason", "work_units", "calibrated", "predicted_ratio", "ratio_upper_bound", "calibration_seconds", "probe_count"}
X = np.random.default_rng(1).normal(size=(40, 3))
Y = X @ [1.0, 2.0, -1.0] + 0.5


def test_every_available_backend_states_its_capabilities():
    for name in API_BACKENDS:
        if not availability(name)[0]:
            continue
        module = importlib.import_module(f"renewable_huber.backends.{BACKEND_SPECS[name].implementation}")
        try:
            backend = create_backend(name, "cpu" if BACKEND_SPECS[name].runs_on == "cpu" else "cuda", "float64", None)
        except BackendUnavailableError:  # installed, but no device here: the class states them
            backend = next(v for v in vars(module).values() if getattr(v, "name", None) == name)
        assert isinstance(backend.capabilities, BackendCapabilities), name
        if not isinstance(backend, type):
            assert backend.all_finite(np.array([1.0, 2.0])) and not backend.all_finite(np.array([np.nan]))


def test_backend_modules_import_without_a_circle():
    import subprocess
    import sys

    # Either module first, in a fresh interpreter: no partially initialised import.
    for first in ("renewable_huber.backends.cpu_selector", "renewable_huber.backends.auto"):
        subprocess.run([sys.executable, "-c", f"import {first}"], check=True)


def test_every_backend_of_the_api_is_known():
    assert set(BACKEND_SPECS) == API_BACKENDS
    for name in API_BACKENDS:
        available, reason = availability(name)
        assert isinstance(available, bool) and isinstance(reason, str) and reason
    assert availability("numpy") == (True, "available")


@pytest.mark.parametrize("name", sorted(EXTRAS))
def test_install_hints_name_the_pip_extra(name):
    spec = BACKEND_SPECS[name]
    assert spec.install_hint == f"pip install 'renewable-huber[{EXTRAS[name]}]'"
    assert spec.install_hint in spec.missing_message()


def test_extras_exist_in_the_distribution_metadata():
    tomllib = pytest.importorskip("tomllib")
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("not running from a source checkout")
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert set(EXTRAS.values()) <= set(extras)


def test_documented_missing_package_message(monkeypatch):
    """With the PyTorch backend implemented but torch absent, the documented message."""
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("PyTorch is installed here")
    monkeypatch.setattr(registry, "implementation_present", lambda spec: True)
    with pytest.raises(BackendUnavailableError) as info:
        create_backend("torch", "cpu", "float64", None)
    assert str(info.value) == "The PyTorch backend requires PyTorch. Install it with: pip install 'renewable-huber[gpu-torch]'"


@pytest.mark.parametrize(
    "name,device,module",
    [
        ("cupy", "cuda", "cupy"),
        ("native_cuda", "cuda", "_renewable_huber_native_cuda"),
        ("torch", "cpu", "torch"),
        ("torch", "auto", "torch"),
        ("tensorflow", "cpu", "tensorflow"),
        ("tensorflow", "cuda:0", "tensorflow"),
    ],
)
def test_unavailable_engines_raise_with_an_install_hint(name, device, module, assert_untouched):
    if availability(name)[0]:
        pytest.skip(f"{name} is available here")
    model = RenewableHuberRegressor(backend="numpy").fit(X, Y)
    model.set_params(backend=name, device=device)
    with assert_untouched(model), pytest.raises(BackendUnavailableError) as info:
        model.fit(X, Y)
    message = str(info.value)
    assert f"pip install 'renewable-huber[{EXTRAS[name]}]'" in message or "not implemented" in message, message
    with pytest.raises(BackendUnavailableError):
        model.partial_fit(X, Y)


@pytest.mark.parametrize(
    "name,device,message",
    [
        ("native_cpu", "cuda", "backend='native_cpu' requires device='cpu'"),
        ("native_cpu", "cuda:1", "backend='native_cpu' requires device='cpu'"),
        ("cupy", "cpu", "backend='cupy' requires a CUDA device"),
        ("native_cuda", "cpu", "backend='native_cuda' requires a CUDA device"),
    ],
)
def test_device_rules_with_documented_messages(name, device, message, raises_exact, assert_untouched):
    model = RenewableHuberRegressor(backend=name, device=device)
    with assert_untouched(model), raises_exact(BackendUnavailableError, message):
        model.fit(X, Y)
    with raises_exact(BackendUnavailableError, message):
        model.partial_fit(X, Y)


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3"])
def test_numpy_never_runs_on_a_cuda_device(device, assert_untouched):
    fitted = RenewableHuberRegressor(backend="numpy").fit(X, Y)
    fitted.backend, fitted.device = "numpy", device  # without reset: a failed fit must keep the model
    with assert_untouched(fitted), pytest.raises(BackendUnavailableError, match="numpy"):
        fitted.fit(X, Y)


def _gpu_world(monkeypatch, installed, usable):
    """Stand-in availability: `installed` backends import, `usable` ones see a device."""
    from renewable_huber.backends import auto

    monkeypatch.setattr(auto, "availability",
                        lambda name: (True, "available") if name in installed else (False, f"pip install {name}"))
    monkeypatch.setattr(auto, "_usable_on_gpu",
                        lambda name, index: (True, "usable") if name in usable else (False, "sees 0 CUDA device(s)"))


def test_auto_with_a_cuda_device_needs_a_usable_gpu_backend(monkeypatch, assert_untouched):
    _gpu_world(monkeypatch, installed={"native_cuda"}, usable=set())
    model = RenewableHuberRegressor(backend="numpy").fit(X, Y)
    model.set_params(backend="auto", device="cuda")
    with assert_untouched(model), pytest.raises(BackendUnavailableError) as error:
        model.fit(X, Y)
    assert "native_cuda: sees 0 CUDA device(s)" in str(error.value) and "cupy: pip install cupy" in str(error.value)


def test_auto_with_a_cuda_device_takes_the_first_usable_backend_and_says_why(monkeypatch):
    from renewable_huber.backends.auto import choose_gpu_backend

    _gpu_world(monkeypatch, installed={"native_cuda", "cupy", "torch"}, usable={"cupy", "torch"})
    name, record = choose_gpu_backend("cuda:0")
    assert name == "cupy" and record["backend"] == "cupy"
    assert record["passed_over"] == {"native_cuda": "sees 0 CUDA device(s)"}
    assert "native_cuda: sees 0 CUDA device(s)" in record["reason"]
    _gpu_world(monkeypatch, installed={"native_cuda", "cupy"}, usable={"native_cuda", "cupy"})
    assert choose_gpu_backend("cuda")[0] == "native_cuda"


def test_the_gpu_choice_is_recorded_in_auto_dispatch(monkeypatch):
    _gpu_world(monkeypatch, installed={"numpy_stand_in"}, usable=set())
    from renewable_huber.backends import auto, registry

    monkeypatch.setattr(registry, "GPU_PREFERENCE", ("numpy_stand_in",))
    monkeypatch.setattr(auto, "GPU_PREFERENCE", ("numpy_stand_in",))
    monkeypatch.setattr(auto, "_usable_on_gpu", lambda name, index: (True, "usable"))
    monkeypatch.setattr(engine_choice, "create_backend",
                        lambda name, device, *args, **kwargs: registry.create_backend("numpy", "cpu", *args))
    model = RenewableHuberRegressor(device="cuda").fit(X, Y)
    assert model.auto_dispatch_["backend"] == "numpy_stand_in"
    assert model.auto_dispatch_["reason"] == "numpy_stand_in is the first usable GPU backend on cuda:0"
    assert model.partial_fit(X, Y).auto_dispatch_ == model.auto_dispatch_  # decided once per stream


def test_auto_on_cpu_records_its_choice_once_per_stream():
    model = RenewableHuberRegressor().partial_fit(X, Y)
    record = model.auto_dispatch_
    assert set(record) == AUTO_KEYS
    json.dumps(record)
    assert record["backend"] == model.backend_ and model.backend_ in ("numpy", "native_cpu")
    assert model.backend_ != "auto" and model.backend == "auto"
    assert isinstance(record["reason"], str) and record["reason"]
    assert isinstance(record["work_units"], int) and record["work_units"] >= 0
    assert isinstance(record["calibrated"], bool)
    assert isinstance(record["calibration_seconds"], float) and record["calibration_seconds"] >= 0
    assert isinstance(record["probe_count"], int) and record["probe_count"] >= 0
    if not availability("native_cpu")[0]:
        assert record["backend"] == "numpy"
    model.partial_fit(X * 2, Y)
    assert model.auto_dispatch_ == record and model.backend_ == record["backend"]
    model.auto_dispatch_["backend"] = "mutated"  # the attribute is a copy
    model.partial_fit(X, Y)
    assert model.auto_dispatch_ == record


def test_explicit_backend_has_no_dispatch_record():
    assert not hasattr(RenewableHuberRegressor(backend="numpy").fit(X, Y), "auto_dispatch_")


# ---------------------------------------------------------------- fallback rules, with a simulated native engine


class BrokenEngine(HostStateBackend):
    """A native engine stand-in whose updates fail."""

    name, device, n_jobs = "native_cpu", "cpu", 1

    def update(self, *args, **kwargs):
        raise RuntimeError("simulated engine failure")

    def as_backend_state(self, state):
        return state.copy()

    def to_host_state(self, state):
        return state.copy()

    def predict(self, state, X):  # pragma: no cover - never reached
        raise AssertionError


@pytest.fixture
def pretend_native_chosen(monkeypatch):
    """Make the CPU selector choose native_cpu; return a switch for how creating it behaves."""
    behaviour = {"create": "raise"}
    real_create = engine_choice.create_backend

    def choose(n_rows, n_parameters, dtype, penalty, n_jobs):
        return "native_cpu", cpu_dispatch_record("native_cpu", "selector chose native_cpu", n_rows * n_parameters)

    def create(name, device, dtype, n_jobs, **options):
        if name != "native_cpu":
            return real_create(name, device, dtype, n_jobs, **options)
        if behaviour["create"] == "raise":
            raise BackendUnavailableError("simulated: native_cpu cannot be built")
        return BrokenEngine()

    monkeypatch.setattr(engine_choice, "choose_cpu_backend", choose)
    monkeypatch.setattr(engine_choice, "create_backend", create)
    return behaviour


def test_auto_chosen_engine_that_cannot_be_built_falls_back_to_numpy(pretend_native_chosen):
    model = RenewableHuberRegressor().fit(X, Y)
    assert model.backend_ == "numpy" and model.auto_dispatch_["backend"] == "numpy"
    assert "native_cpu" in model.auto_dispatch_["reason"]
    np.testing.assert_array_equal(model.coef_, RenewableHuberRegressor(backend="numpy").fit(X, Y).coef_)


def test_auto_chosen_engine_failing_its_first_update_falls_back_to_numpy(pretend_native_chosen):
    pretend_native_chosen["create"] = "broken"
    model = RenewableHuberRegressor().fit(X, Y)
    assert model.backend_ == "numpy" and model.auto_dispatch_["backend"] == "numpy"
    assert "simulated engine failure" in model.auto_dispatch_["reason"]
    np.testing.assert_array_equal(model.coef_, RenewableHuberRegressor(backend="numpy").fit(X, Y).coef_)


def test_explicit_engine_never_falls_back(pretend_native_chosen, assert_untouched):
    model = RenewableHuberRegressor(backend="numpy").fit(X, Y)
    model.backend = "native_cpu"
    with assert_untouched(model), pytest.raises(BackendUnavailableError, match="simulated"):
        model.fit(X, Y)
    pretend_native_chosen["create"] = "broken"
    with assert_untouched(model), pytest.raises(RuntimeError, match="simulated engine failure"):
        model.fit(X, Y)


def test_cpu_calibrations_are_invalidated_by_the_thread_environment_and_a_fork(monkeypatch):
    from renewable_huber.backends import cpu_selector

    base = cpu_selector._thread_environment()
    assert cpu_selector._thread_environment() == base  # stable while nothing changes
    monkeypatch.setattr(cpu_selector.os, "getpid", lambda: -1)  # a forked child
    assert cpu_selector._thread_environment() != base
    monkeypatch.undo()
    monkeypatch.setattr(cpu_selector, "_observed_pool_sizes", lambda: (("openblas", 1),))
    assert cpu_selector._thread_environment() != base
    monkeypatch.undo()
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    assert cpu_selector._thread_environment() != base


def test_the_observed_pools_include_the_native_engine():
    pytest.importorskip("_renewable_huber_native_cpu")
    from renewable_huber.backends import cpu_selector

    assert any(name == "native_cpu" for name, _ in cpu_selector._observed_pool_sizes())
