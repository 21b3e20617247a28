"""Every backend name of the public API, where it runs, and how to obtain it.

``resolve_backend`` turns the estimator's (backend, device, dtype, n_jobs)
into a backend object or a ``BackendUnavailableError`` that says what to
install. An explicitly requested engine never falls back to another one.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..exceptions import BackendUnavailableError


@dataclass(frozen=True)
class BackendSpec:
    name: str
    runs_on: str  # "cpu" or "cuda"
    description: str
    #: the module that must import for the backend to exist (framework or native engine)
    requirement_module: Optional[str]
    requirement_label: str
    extra: Optional[str]
    #: module inside this package with a ``create(dtype, device, n_jobs)`` factory
    implementation: Optional[str]
    #: another way to install it, named after the install hint in the missing message
    alternative: Optional[str] = None

    @property
    def install_hint(self) -> str:
        if self.extra is None:
            return "included with renewable-huber"
        return f"pip install 'renewable-huber[{self.extra}]'"

    def missing_message(self) -> str:
        message = (
            f"The {self.description} backend requires {self.requirement_label}. "
            f"Install it with: {self.install_hint}"
        )
        return message if self.alternative is None else f"{message} ({self.alternative})"


BACKEND_SPECS: dict[str, BackendSpec] = {
    spec.name: spec
    for spec in (
        BackendSpec("numpy", "cpu", "NumPy", None, "NumPy", None, "numpy_backend"),
        BackendSpec(
            "native_cpu",
            "cpu",
            "native CPU",
            "_renewable_huber_native_cpu",
            "the renewable-huber-native-cpu engine",
            "native-cpu",
            "native_cpu_backend",
        ),
        BackendSpec(
            "cupy",
            "cuda",
            "CuPy",
            "cupy",
            "CuPy",
            "gpu-cupy",
            "cupy_backend",
            alternative="CuPy for CUDA 12; for CUDA 13: pip install 'renewable-huber[gpu-cupy-cuda13]'",
        ),
        BackendSpec(
            "native_cuda",
            "cuda",
            "native CUDA",
            "_renewable_huber_native_cuda",
            "the renewable-huber-native-cuda engine",
            "native-cuda",
            "native_cuda_backend",
        ),
        BackendSpec("torch", "cuda", "PyTorch", "torch", "PyTorch", "gpu-torch", "torch_backend"),
        BackendSpec(
            "tensorflow", "cuda", "TensorFlow", "tensorflow", "TensorFlow", "gpu-tensorflow", "tensorflow_backend"
        ),
    )
}

#: GPU backends tried, in order, for backend="auto" with device="cuda".
GPU_PREFERENCE = ("native_cuda", "cupy", "torch", "tensorflow")

#: torch and tensorflow run on the CPU as well as on CUDA devices.
CPU_CAPABLE = frozenset({"numpy", "native_cpu", "torch", "tensorflow"})


def requirement_installed(spec: BackendSpec) -> bool:
    if spec.requirement_module is None:
        return True
    try:
        return importlib.util.find_spec(spec.requirement_module) is not None
    except (ImportError, ValueError):
        return False


def implementation_present(spec: BackendSpec) -> bool:
    if spec.implementation is None:
        return False
    return importlib.util.find_spec(f"{__package__}.{spec.implementation}") is not None


def availability(name: str) -> tuple[bool, str]:
    """(available here, a one-line reason or install hint) without importing heavy modules."""
    spec = BACKEND_SPECS[name]
    if not requirement_installed(spec):
        return False, spec.install_hint
    if not implementation_present(spec):
        return False, "not implemented in this version of renewable-huber"
    return True, "available"


def _check_device(spec: BackendSpec, device: str) -> None:
    wants_cuda = device == "cuda" or device.startswith("cuda:")
    if spec.runs_on == "cuda" and spec.name not in CPU_CAPABLE and device == "cpu":
        raise BackendUnavailableError(f"backend='{spec.name}' requires a CUDA device")
    if spec.name in ("numpy", "native_cpu") and wants_cuda:
        raise BackendUnavailableError(f"backend='{spec.name}' requires device='cpu'")


def load_factory(name: str) -> Callable[..., Any]:
    spec = BACKEND_SPECS[name]
    if not requirement_installed(spec):
        raise BackendUnavailableError(spec.missing_message())
    if not implementation_present(spec):
        raise BackendUnavailableError(
            f"The {spec.description} backend is not implemented in this version of renewable-huber"
        )
    try:
        module = importlib.import_module(f"{__package__}.{spec.implementation}")
    except BackendUnavailableError:
        raise
    except ImportError as exc:
        raise BackendUnavailableError(f"{spec.missing_message()} ({exc})") from exc
    return module.create


def create_backend(name: str, device: str, dtype: str, n_jobs: Any, **options: Any) -> Any:
    """Create an explicitly named backend (never "auto"); no fallback.

    ``options`` are engine options a backend may take (``cuda_graphs``,
    ``cuda_fast_math``); the others ignore them."""
    spec = BACKEND_SPECS[name]
    _check_device(spec, device)
    return load_factory(name)(dtype, device, n_jobs, **options)
