"""A host stand-in for the CUDA engine (``_renewable_huber_native_cuda.Engine``),
so CI, which has no GPU, runs the native_cuda backend's Python layer: its
state bookkeeping, uploads, rollback and error translation.

The stand-in keeps the engine's state semantics (native/cuda/src/host_driven_solve.cu
and cuda_engine.cu): the state lives in the engine; an update checks X, y and
the weights first, stages its result and commits it only on success; the
commit keeps the replaced state until the next update or restore begins, and
``revert()`` puts it back once; ``restore()`` overwrites the state in place.
Each update is computed by the NumPy reference, and failures cross as the
binding's ``EngineError(message, status)``. ``update_host(..., defer=True)``
leaves the update queued as the engine's device loop does (C ABI 1.7):
nothing is checked or computed until ``settle()``, which then fails or
commits it, and every other call is refused meanwhile (every update is
deferred here, whatever its penalty: the Python layer's contract is what
this tests). What it cannot stand for (device
memory, kernels, DLPack) the GPU tests cover.

    with host_cuda_engine.installed(monkeypatch): ...   # backend="native_cuda", device="cuda" now runs here
"""

from __future__ import annotations

import contextlib
import types
from typing import Any, Optional

import numpy as np

from renewable_huber.config import SolverConfig
from renewable_huber.core import NumpyOps, renewable_update
from renewable_huber.exceptions import NumericalOverflowError, RenewableHuberError, ValidationError
from renewable_huber.state import RenewableHuberState

native = __import__("pytest").importorskip("_renewable_huber_native_cuda")


class HostCudaEngine:
    """Stands for ``_native.Engine`` (one dtype, one parameter count)."""

    def __init__(self, device: int, dtype: str, n_features: int, fit_intercept: bool, *args: Any,
                 solver_choice: int = 0, block_tiles: int = 0) -> None:
        self.dtype = np.dtype(dtype)
        self.n_features, self.fit_intercept = int(n_features), bool(fit_intercept)
        self.stream = 0
        self._state = RenewableHuberState.empty(self.n_features, self.fit_intercept, self.dtype.name)
        self._previous: Optional[RenewableHuberState] = None
        self._revertible = False
        self.updates = 0
        self._pending: Optional[tuple] = None  # a deferred update's arguments
        self.n_parameters = self.n_features + int(self.fit_intercept)

    def _refuse_while_pending(self) -> None:
        if self._pending is not None:
            raise native.EngineError("an update is queued and not read: settle it first (rh_cuda_engine_settle)",
                                     "invalid_state")

    # ------------------------------------------------------------------ state
    def restore(self, coefficients: np.ndarray, information: np.ndarray, counters: Any,
                meat: Optional[np.ndarray] = None) -> None:
        self._refuse_while_pending()
        self._revertible = False
        self._state = RenewableHuberState(
            coefficients=np.array(coefficients, dtype=self.dtype), information=np.array(information, dtype=self.dtype),
            n_samples_seen=int(counters.n_samples_seen), batch_count=int(counters.batch_count),
            previous_lambda=float(counters.previous_lambda), n_features_in=self.n_features,
            fit_intercept=self.fit_intercept, weight_sum=float(counters.weight_sum),
            meat=None if meat is None else np.array(meat, dtype=self.dtype))

    def copy_state(self, coefficients: np.ndarray, information: np.ndarray, meat: Optional[np.ndarray] = None) -> Any:
        self._refuse_while_pending()
        coefficients[...] = self._state.coefficients
        information[...] = self._state.information
        if meat is not None:
            if self._state.meat is None:
                raise native.EngineError("the engine keeps no meat: it was restored without one", "invalid_state")
            meat[...] = self._state.meat
        return self.counters()

    def counters(self) -> Any:
        self._refuse_while_pending()
        s = self._state
        return native.StateCounters(n_features_in=s.n_features_in, fit_intercept=s.fit_intercept,
                                    n_samples_seen=s.n_samples_seen, batch_count=s.batch_count,
                                    previous_lambda=s.previous_lambda, weight_sum=s.effective_weight)

    def revert(self) -> None:
        self._refuse_while_pending()
        if not self._revertible:
            raise native.EngineError(
                "no update to revert: the engine's state is not the one an update just committed", "invalid_state")
        self._state, self._revertible = self._previous, False

    # ------------------------------------------------------------------ batches
    def update_host(self, X: np.ndarray, y: np.ndarray, sample_weight: Optional[np.ndarray], config: SolverConfig,
                    coefficients_out: np.ndarray, defer: bool = False) -> tuple[Any, Any]:
        self._refuse_while_pending()
        self._revertible = False  # staging overwrites the replaced state kept for revert()
        if defer:  # the batch is the engine's from here (the engine copies a device batch first)
            self._pending = (np.array(X), np.array(y), None if sample_weight is None else np.array(sample_weight),
                             config)
            return types.SimpleNamespace(deferred=True), None
        for name, values in (("X", X), ("y", y), ("sample_weight", sample_weight)):
            if values is not None and not np.all(np.isfinite(values)):
                raise native.EngineError(f"{name} must not contain NaN or infinite values", "non_finite_input")
        try:
            state, diagnostics = renewable_update(NumpyOps(self.dtype), self._state, X, y, sample_weight, config)
        except ValidationError as exc:
            raise native.EngineError(str(exc), "invalid_state") from None
        except NumericalOverflowError as exc:
            raise native.EngineError(str(exc), "numerical_failure") from None
        except RenewableHuberError as exc:
            raise native.EngineError(str(exc), "internal_error") from None
        self._previous, self._state, self._revertible = self._state, state, True
        self.updates += 1
        coefficients_out[...] = state.coefficients
        return types.SimpleNamespace(
            iterations=diagnostics.iterations, converged=diagnostics.converged, objective=diagnostics.objective,
            lambda_value=diagnostics.lambda_value, bandwidth=diagnostics.bandwidth,
            used_least_squares_fallback=diagnostics.used_regularized_fallback,
            solve_route=diagnostics.solve_route, stop_reason=diagnostics.stop_reason, deferred=False), self.counters()

    def settle(self, coefficients_out: np.ndarray) -> tuple[Any, Any]:
        """The deferred update read: committed, or its error with the state before it."""
        if self._pending is None:
            raise native.EngineError("no update is pending: nothing to settle", "invalid_state")
        (X, y, sample_weight, config), self._pending = self._pending, None
        return self.update_host(X, y, sample_weight, config, coefficients_out)

    def update_host_batches(self, X: np.ndarray, y: np.ndarray, sample_weight: Optional[np.ndarray],
                            config: SolverConfig, batch_size: int, coefficients_out: np.ndarray) -> tuple[list, Any]:
        """Consecutive slices in one call (the engine's update_batches): all
        of them or none, and revert() afterwards gives back the state before
        the call."""
        self._refuse_while_pending()
        if batch_size < 1:
            raise native.EngineError("batch_size must be a positive integer", "invalid_argument")
        before, natives = self._state, []
        try:
            for start in range(0, len(y), batch_size):
                part = slice(start, start + batch_size)
                native_diagnostics, _ = self.update_host(X[part], y[part],
                                                         None if sample_weight is None else sample_weight[part],
                                                         config, coefficients_out)
                natives.append(native_diagnostics)
        except native.EngineError:
            self._state, self._revertible = before, False
            raise
        self._previous, self._revertible = before, True
        return natives, self.counters()

    def predict_host(self, X: np.ndarray, out: np.ndarray) -> None:
        self._refuse_while_pending()
        coefficients = self._state.coefficients
        out[...] = X @ coefficients[: self.n_features] + (coefficients[-1] if self.fit_intercept else 0)

    def features(self) -> dict:
        self._refuse_while_pending()
        return {"stream": self.stream, "updates": self.updates, "host_stand_in": True}


@contextlib.contextmanager
def installed(monkeypatch):
    """``backend="native_cuda"`` on this machine's CPU, over HostCudaEngine."""
    from renewable_huber.backends import native_cuda_backend as backend_module

    monkeypatch.setattr(backend_module, "runtime_info",
                        lambda: {"device_count": 1, "runtime_version": 13000, "driver_version": 13000})
    monkeypatch.setattr(backend_module._native, "Engine", HostCudaEngine)
    monkeypatch.setattr(backend_module._native, "SolverConfig", lambda **fields: SolverConfig(**fields))
    yield
