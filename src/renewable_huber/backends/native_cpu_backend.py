"""The C++ CPU engine (``backend="native_cpu"``) behind the Backend protocol.

The engine lives in the separately installed distribution
``renewable-huber-native-cpu`` as the top-level module
``_renewable_huber_native_cpu``. This adapter refuses a module built for
another version of this package, hands the engine C-contiguous arrays of the
model dtype (making the one explicit copy only for other layouts), and
builds the next state from arrays it allocated itself, so an engine error
leaves the caller's state untouched.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._version import __version__
from ..config import SolverConfig
from ..core.diagnostics import UpdateDiagnostics
from ..core.partition_sums import PartitionSums, check_terms
from ..exceptions import BackendUnavailableError, ValidationError
from ..state import RenewableHuberState
from ..validation import all_finite as numpy_all_finite
from . import native_adapter
from .base import BackendCapabilities, HostStateBackend
from .native_adapter import SUPPORTED_ABI_VERSION  # noqa: F401  (the ABI this adapter speaks)

INSTALL_HINT = "pip install 'renewable-huber[native-cpu]'"

try:
    import _renewable_huber_native_cpu as _native
except ImportError as exc:  # pragma: no cover - exercised when the module is absent
    raise BackendUnavailableError(
        f"The native CPU backend requires the renewable-huber-native-cpu engine. Install it with: {INSTALL_HINT} ({exc})"
    ) from exc


def check_module_compatible(module: Any, package_version: str = __version__) -> None:
    """Refuse a native module built for another package version or binding ABI."""
    native_adapter.check_module_compatible(module, "renewable-huber-native-cpu", INSTALL_HINT, package_version)


check_module_compatible(_native)

_NATIVE_FLOAT_DTYPES = (np.dtype("float64"), np.dtype("float32"))


def _translate(error: BaseException):
    return native_adapter.translate(error, "native_cpu")


def _n_jobs_code(n_jobs: Optional[int]) -> int:
    """None -> 0 (library default), -1 -> all cores, k -> k."""
    return 0 if n_jobs is None else int(n_jobs)


def provider_info() -> dict[str, Any]:
    """What the loaded engine reports about itself (for benchmarks and bug reports)."""
    return {
        "module_version": _native.__version__,
        "abi_version": _native.ABI_VERSION,
        "blas_provider": _native.blas_provider(),
        "blas_config": _native.blas_config(),
        "blas_threads": _native.blas_threads(),
        "available_cores": _native.available_cores(),
        "isa_level": _native.isa_level(),
        "fast_kernel_threshold": int(getattr(_native, "FAST_KERNEL_THRESHOLD", 0)),
    }


class NativeCpuBackend(HostStateBackend):
    name = "native_cpu"
    device = "cpu"
    #: update() rejects a non-finite X itself (the engine tests X in the
    #: read that builds its panels), with the validators' message
    capabilities = BackendCapabilities(checks_X_finite=True)

    def __init__(self, dtype: str = "float64", n_jobs: Optional[int] = None, kernel: str = "auto") -> None:
        self.dtype = np.dtype(dtype)
        engine_type = {np.dtype("float64"): _native.EngineFloat64, np.dtype("float32"): _native.EngineFloat32}.get(
            self.dtype
        )
        if engine_type is None:
            raise ValidationError("dtype must be either 'float32' or 'float64'")
        try:
            self._engine = engine_type(_n_jobs_code(n_jobs), kernel)
        except _native.EngineError as exc:
            raise _translate(exc) from None
        self._native_config = native_adapter.NativeConfigs(_native)
        #: solve route of the last update: "cholesky", "lu", "least_squares" ("none" before any)
        self.last_solve_route = "none"
        #: kernel path of the last update: "reference_order" or "fast" ("none" before any);
        #: kernel="auto" takes "fast" when rows * d * d > FAST_KERNEL_THRESHOLD
        self.last_kernel_path = "none"
        #: the engine's own diagnostics of the last update (solve/Gram counters), or None
        self.last_native_diagnostics: Any = None

    @property
    def n_jobs(self) -> int:
        """Threads an update really uses (BLAS pool and fused loops together)."""
        return int(self._engine.threads)

    @property
    def kernel(self) -> str:
        """The engine's kernel choice: "auto", "reference_order" or "fast"."""
        return str(self._engine.kernel)

    @property
    def workspace_allocations(self) -> int:
        """How often the engine grew its workspaces (constant in steady state)."""
        return int(self._engine.workspace_allocations)

    def all_finite(self, array: np.ndarray) -> bool:
        """The engine's vectorized finiteness test (for input validation);
        NumPy's for arrays it does not take as they are. A matrix in the
        engine's dtype is tested by the engine itself, split over its
        threads by rows like its passes (each core then holds the rows it
        works on next)."""
        if (
            isinstance(array, np.ndarray)
            and array.dtype in _NATIVE_FLOAT_DTYPES
            and array.flags.c_contiguous
            and array.dtype.isnative
        ):
            if array.ndim == 2 and array.dtype == self.dtype:
                return bool(self._engine.rows_finite(array))
            return bool(_native.all_finite(array))
        return numpy_all_finite(array)

    def _contiguous(self, array: Any) -> np.ndarray:
        return native_adapter.host_array(array, self.dtype)

    def update(
        self,
        state: RenewableHuberState,
        X: np.ndarray,
        y: np.ndarray,
        sample_weight: Optional[np.ndarray],
        config: SolverConfig,
    ) -> tuple[RenewableHuberState, UpdateDiagnostics]:
        next_state, (native,) = self._absorb("update", state, X, y, sample_weight, config)
        return next_state, native_adapter.diagnostics(native)

    def update_batches(
        self,
        state: RenewableHuberState,
        X: np.ndarray,
        y: np.ndarray,
        sample_weight: Optional[np.ndarray],
        config: SolverConfig,
        batch_size: int,
    ) -> tuple[RenewableHuberState, list[UpdateDiagnostics]]:
        """Every slice in one native call (cpu/batch_slices.hpp): one GIL release."""
        next_state, natives = self._absorb("update_batches", state, X, y, sample_weight, config, batch_size)
        return next_state, [native_adapter.diagnostics(native) for native in natives]

    def _absorb(self, method: str, state: RenewableHuberState, X: np.ndarray, y: np.ndarray,
                sample_weight: Optional[np.ndarray], config: SolverConfig,
                *batch_size: int) -> tuple[RenewableHuberState, list[Any]]:
        """The engine's ``method`` (update, or update_batches with its batch
        size) into fresh arrays: the next state and the native diagnostics of
        each batch."""
        d = state.n_parameters
        coefficients = np.empty(d, dtype=self.dtype)
        information = np.empty((d, d), dtype=self.dtype)
        meat = None if state.meat is None else np.empty((d, d), dtype=self.dtype)
        try:
            natives, next_counters = getattr(self._engine, method)(
                self._contiguous(state.coefficients),
                self._contiguous(state.information),
                native_adapter.state_counters(_native, state),
                self._contiguous(X),
                self._contiguous(y),
                None if sample_weight is None else self._contiguous(sample_weight),
                self._native_config(config),
                *batch_size,
                coefficients,
                information,
                None if meat is None else self._contiguous(state.meat),
                meat,
            )
        except _native.EngineError as exc:
            raise _translate(exc) from None
        except MemoryError:
            # std::bad_alloc from a workspace growth: nothing was written to the
            # caller's state and the engine's buffers are still consistent
            raise MemoryError(
                f"native_cpu engine ran out of memory for a batch of {X.shape[0]} rows and {d} parameters "
                f"({self.dtype}): its workspaces could not grow; the model is unchanged"
            ) from None
        natives = natives if isinstance(natives, list) else [natives]
        self.last_solve_route = natives[-1].solve_route
        self.last_kernel_path = natives[-1].kernel_path
        self.last_native_diagnostics = natives[-1]
        return native_adapter.next_state(state, coefficients, information, next_counters, meat), natives

    def partition_sums(
        self, design: np.ndarray, y: np.ndarray, sample_weight: Optional[np.ndarray], theta: np.ndarray,
        tau: float, bandwidth: float, terms: Any,
    ) -> PartitionSums:
        """A partition's share of a batch's data terms at theta (core/partition_sums.py;
        the engine's cpu/partition_sums.hpp). ``design`` is Z, intercept column included."""
        terms = check_terms(terms)
        d = design.shape[1]
        outputs = {name: np.empty(d if name == "score_product" else (d, d), dtype=self.dtype)
                   for name in ("score_product", "curvature_gram", "unit_gram", "score_gram") if name in terms}
        try:
            loss, weight_sum = self._engine.partition_sums(
                self._contiguous(design), self._contiguous(y),
                None if sample_weight is None else self._contiguous(sample_weight),
                self._contiguous(theta), float(tau), float(bandwidth), "loss" in terms, outputs.get("score_product"),
                outputs.get("curvature_gram"), outputs.get("unit_gram"), outputs.get("score_gram"))
        except _native.EngineError as exc:
            raise _translate(exc) from None
        return PartitionSums(
            rows=int(design.shape[0]), weight_sum=float(weight_sum), loss=float(loss) if "loss" in terms else None,
            **{name: value.astype(np.float64) for name, value in outputs.items()})

    def predict(self, state: RenewableHuberState, X: np.ndarray) -> np.ndarray:
        X = self._contiguous(X)
        out = np.empty(X.shape[0], dtype=self.dtype)
        try:
            self._engine.predict(
                self._contiguous(state.coefficients), state.n_features_in, state.fit_intercept, X, out
            )
        except _native.EngineError as exc:
            raise _translate(exc) from None
        return out


def create(dtype: str, device: str, n_jobs: Any, **options: Any) -> NativeCpuBackend:
    if device not in ("cpu", "auto"):
        raise BackendUnavailableError("backend='native_cpu' requires device='cpu'")
    return NativeCpuBackend(dtype, n_jobs)
