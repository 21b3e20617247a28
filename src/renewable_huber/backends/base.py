"""The backend protocol: one implementation of the renewable update.

A backend receives host or device arrays already validated and cast to the
model dtype, and returns a *new* state (the old one is never modified), so
the estimator can commit the result only after the whole update succeeded.
An engine that keeps its state itself (native_cuda: on the device) cannot
leave the old state untouched; it instead puts it back when the estimator
calls ``rollback`` after a call that failed before its commit.
What a backend does beyond the required methods is stated in its
``capabilities``; the estimator reads those, it never probes attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Protocol

from ..config import SolverConfig
from ..core.diagnostics import UpdateDiagnostics
from ..state import RenewableHuberState
from ..validation import all_finite as numpy_all_finite


@dataclass(frozen=True)
class BackendCapabilities:
    """What a backend does beyond the protocol's required methods.

    Attributes
    ----------
    checks_X_finite : bool
        ``update()`` itself rejects a non-finite X with the validators'
        ValidationError ("X must not contain NaN or infinite values") before
        any state change; the estimator then skips its own test of X on the way
        in (validation.py keeps the order of the checks: a later check that
        fails still reports X first).
    reports_cuda_features : bool
        The backend has a ``cuda_features`` dict (CUDA graph captures and
        replays, fast-math, device), published as ``cuda_features_``.
    state_on_device : bool
        The state's arrays live in device memory; ``to_host_state`` copies.
    accepts_device_arrays : bool
        ``update`` and ``predict`` take device arrays (CuPy, PyTorch CUDA,
        JAX, TensorFlow GPU) in place (``device_arrays.py``): the estimator
        checks their shapes and passes them on untouched; ``predict`` then
        returns an array of the input's framework on its device.
    framework_arrays : bool
        ``update`` and ``predict`` take the arrays of the backend's framework
        as they are (``owns(value)``), and the backend validates them where
        they live (``validated_X``, ``validated_batch``: validation.py's
        checks and messages); ``host_array`` copies one to NumPy.
    defers_results : bool
        The backend has ``update_deferred(state, X, y, sample_weight,
        config)``, which may return a pending update (anything but a tuple)
        instead of ``update``'s (next state, diagnostics), once the batch is
        queued and its inputs no longer read, and ``settle_update(state,
        pending)``, which reads it: ``update``'s result, or the batch's error
        with the engine holding ``state`` again (amendment 0004). While an
        update is pending, the backend's engine is used for nothing else.
    """

    checks_X_finite: bool = False
    reports_cuda_features: bool = False
    state_on_device: bool = False
    accepts_device_arrays: bool = False
    framework_arrays: bool = False
    defers_results: bool = False


class Backend(Protocol):
    #: registry name, never "auto"
    name: str
    #: "cpu" or "cuda:<id>"
    device: str
    #: real thread count for engines that control threads, else None
    n_jobs: Optional[int]
    capabilities: BackendCapabilities

    def update(
        self,
        state: RenewableHuberState,
        X: Any,
        y: Any,
        sample_weight: Optional[Any],
        config: SolverConfig,
    ) -> tuple[RenewableHuberState, UpdateDiagnostics]:
        """Absorb one batch; return the next state and the batch diagnostics."""
        ...

    def update_batches(
        self,
        state: RenewableHuberState,
        X: Any,
        y: Any,
        sample_weight: Optional[Any],
        config: SolverConfig,
        batch_size: int,
    ) -> tuple[RenewableHuberState, list[UpdateDiagnostics]]:
        """Absorb consecutive slices of ``batch_size`` rows (the last may be
        shorter), each as ``update`` absorbs a batch, bit for bit; return the
        state after the last and each slice's diagnostics. A failure in any
        slice leaves what ``rollback`` needs to bring back ``state``."""
        ...

    def predict(self, state: RenewableHuberState, X: Any) -> Any:
        """X coef_ + intercept_ in the backend's array type."""
        ...

    def all_finite(self, array: Any) -> bool:
        """Whether every value of an input array is finite (input validation)."""
        ...

    def empty_state(self, n_features_in: int, fit_intercept: bool, dtype: str,
                    meat: bool = True) -> RenewableHuberState:
        """The state before a stream's first batch, in the backend's array type
        (``meat``: whether it tracks the meat, for inference)."""
        ...

    def as_backend_state(self, state: RenewableHuberState) -> RenewableHuberState:
        """Move a host state (model dtype) into the backend's array type."""
        ...

    def to_host_state(self, state: RenewableHuberState) -> RenewableHuberState:
        """An independent host NumPy copy of a backend state."""
        ...

    def rollback(self, state: Optional[RenewableHuberState]) -> None:
        """A call failed (any exception, KeyboardInterrupt too) after it may
        have changed what the engine holds and before the model committed:
        make ``state``, the model's committed state on this backend (None:
        none), the engine's again."""
        ...

    def settle(self) -> None:
        """The model committed: what ``rollback`` would have needed may go."""
        ...


def update_each(backend: Any, state: RenewableHuberState, X: Any, y: Any, sample_weight: Optional[Any],
                config: SolverConfig, batch_size: int) -> tuple[RenewableHuberState, list[UpdateDiagnostics]]:
    """``Backend.update_batches`` as the loop of ``backend.update`` over the slices."""
    diagnostics = []
    for start in range(0, int(X.shape[0]), batch_size):
        stop = start + batch_size
        state, batch = backend.update(state, X[start:stop], y[start:stop],
                                      None if sample_weight is None else sample_weight[start:stop], config)
        diagnostics.append(batch)
    return state, diagnostics


class ValueStates:
    """For backends whose states are values (a new state per update, the old
    one untouched): nothing to roll back, and several batches are the loop of
    one."""

    def update_batches(self, state: RenewableHuberState, X: Any, y: Any, sample_weight: Optional[Any],
                       config: SolverConfig, batch_size: int) -> tuple[RenewableHuberState, list[UpdateDiagnostics]]:
        return update_each(self, state, X, y, sample_weight, config, batch_size)

    def rollback(self, state: Optional[RenewableHuberState]) -> None:
        pass

    def settle(self) -> None:
        pass


class HostStateBackend(ValueStates):
    """For engines whose state lives in host NumPy arrays: transfers are copies."""

    capabilities = BackendCapabilities()

    def all_finite(self, array: Any) -> bool:
        return numpy_all_finite(array)

    def as_backend_state(self, state: RenewableHuberState) -> RenewableHuberState:
        return state.copy()

    def empty_state(self, n_features_in: int, fit_intercept: bool, dtype: str,
                    meat: bool = True) -> RenewableHuberState:
        """The state before the first batch, in the backend's arrays (here
        fresh host arrays: nothing to copy)."""
        return RenewableHuberState.empty(n_features_in, fit_intercept, dtype, meat)

    def to_host_state(self, state: RenewableHuberState) -> RenewableHuberState:
        return state.copy()
