"""What the native CPU and CUDA backends share: the compatibility check of
their module, the translation of the engine's errors into the package's
exceptions, and the conversions between the package's types and the
binding's (solver configuration, state counters, the next state, the batch
diagnostics). Each backend keeps what differs: where its state lives and
how a batch reaches its engine.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._version import __version__
from ..config import SolverConfig
from ..core.diagnostics import UpdateDiagnostics
from ..exceptions import (
    SYSTEM_OVERFLOW_PREFIX,
    BackendUnavailableError,
    NativeEngineError,
    NumericalOverflowError,
    RenewableHuberError,
    ValidationError,
)
from ..state import RenewableHuberState

#: the binding ABI both adapters speak (native/CMakeLists.txt, RH_NATIVE_ABI_VERSION)
SUPPORTED_ABI_VERSION = 6

#: engine statuses that describe bad input or state rather than an engine failure
VALIDATION_STATUSES = frozenset({"invalid_argument", "non_finite_input", "invalid_weights", "invalid_state"})


class EngineOutOfMemoryError(NativeEngineError, MemoryError):
    """The engine had not enough memory for the batch; the model is unchanged and the engine usable."""


def check_module_compatible(module: Any, distribution: str, install_hint: str,
                            package_version: str = __version__) -> None:
    """Refuse a native module built for another package version or binding ABI."""
    module_version = getattr(module, "__version__", None)
    if module_version != package_version:
        raise BackendUnavailableError(
            f"{distribution} {module_version} cannot be used with renewable-huber {package_version}: "
            f"the versions must be identical. Reinstall matching versions with: {install_hint}"
        )
    abi_version = getattr(module, "ABI_VERSION", None)
    if abi_version != SUPPORTED_ABI_VERSION:
        raise BackendUnavailableError(
            f"{distribution} speaks binding ABI {abi_version}, this renewable-huber needs "
            f"{SUPPORTED_ABI_VERSION}. Reinstall matching versions with: {install_hint}"
        )


def translate(error: BaseException, engine: str) -> RenewableHuberError:
    """The package's exception for a binding's ``EngineError(message, status)``."""
    message, status = (tuple(error.args) + ("", ""))[:2]
    if status in VALIDATION_STATUSES:
        return ValidationError(message)
    if status == "numerical_failure" and message.startswith(SYSTEM_OVERFLOW_PREFIX):
        return NumericalOverflowError(message)  # every engine's words (exceptions.system_overflow_message)
    if status == "out_of_memory":
        return EngineOutOfMemoryError(f"{engine} engine failed (out_of_memory): {message}")
    if status == "unavailable":
        return BackendUnavailableError(f"backend='{engine}' cannot run here: {message}")
    return NativeEngineError(f"{engine} engine failed ({status}): {message}")


class NativeConfigs:
    """The binding's SolverConfig for each configuration, made once: the
    estimator hands over the same (cached) SolverConfig object call after
    call, compared by identity first, without hashing its fields."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self._made: dict[SolverConfig, Any] = {}
        self._last: Optional[SolverConfig] = None
        self._last_native: Any = None

    def __call__(self, config: SolverConfig) -> Any:
        if config is self._last:
            return self._last_native
        native = self._made.get(config)
        if native is None:
            native = self._module.SolverConfig(
                tau=config.tau, penalty=config.penalty, lambda_scale=config.lambda_scale,
                bandwidth_scale=config.bandwidth_scale, fit_intercept=config.fit_intercept, max_iter=config.max_iter,
                tol=config.tol, ridge=config.ridge)
            self._made[config] = native
        self._last, self._last_native = config, native
        return native


def state_counters(module: Any, state: RenewableHuberState) -> Any:
    """The binding's StateCounters of ``state``."""
    return module.StateCounters(
        n_features_in=state.n_features_in, fit_intercept=state.fit_intercept, n_samples_seen=state.n_samples_seen,
        batch_count=state.batch_count, previous_lambda=float(state.previous_lambda),
        weight_sum=state.effective_weight)


def next_state(state: RenewableHuberState, coefficients: Any, information: Any, counters: Any,
               meat: Any = None) -> RenewableHuberState:
    """The state after an update: the engine's arrays (or stand-ins) and counters."""
    return RenewableHuberState(
        coefficients=coefficients, information=information, n_samples_seen=int(counters.n_samples_seen),
        batch_count=int(counters.batch_count), previous_lambda=float(counters.previous_lambda),
        n_features_in=state.n_features_in, fit_intercept=state.fit_intercept,
        weight_sum=float(counters.weight_sum), meat=meat)


def diagnostics(native: Any) -> UpdateDiagnostics:
    """The package's diagnostics of an update from the binding's."""
    return UpdateDiagnostics(
        iterations=int(native.iterations), converged=bool(native.converged), objective=float(native.objective),
        lambda_value=float(native.lambda_value), bandwidth=float(native.bandwidth),
        used_regularized_fallback=bool(native.used_least_squares_fallback), solve_route=str(native.solve_route),
        stop_reason=str(native.stop_reason))


def host_array(array: Any, dtype: np.dtype) -> np.ndarray:
    """The array itself when it is C-contiguous in ``dtype``, else one explicit copy."""
    if isinstance(array, np.ndarray) and array.dtype == dtype and array.flags.c_contiguous:
        return array
    return np.ascontiguousarray(array, dtype=dtype)
