"""A backend over the reference update (core/update.py) with an array
framework's ops: the cupy, torch and tensorflow backends are this class with
their framework's ``ArrayOps`` (core/ops/) and device rules.

The state lives on the backend's device in the framework's arrays. Inputs
are taken as they come: a framework array on the backend's device is used
in place (cast on the device when its dtype is not the model's), host data
(NumPy arrays, lists, CPU arrays of a GPU framework) is converted once, and
a device array elsewhere is refused with a ``BackendContractError``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..config import SolverConfig
from ..core.diagnostics import UpdateDiagnostics
from ..core.update import renewable_update
from ..exceptions import BackendUnavailableError
from ..state import RenewableHuberState
from ..validation import all_finite as numpy_all_finite
from .base import BackendCapabilities


class FrameworkBackend:
    """The Backend protocol (base.py) over ``ops``, one of core/ops/'s ops."""

    name: str
    device: str
    n_jobs: Optional[int] = None
    capabilities = BackendCapabilities(state_on_device=True)

    def __init__(self, ops: Any, dtype: str) -> None:
        self._ops = ops
        self.dtype = np.dtype(dtype)

    # ------------------------------------------------------------------ state transfers
    def as_backend_state(self, state: RenewableHuberState) -> RenewableHuberState:
        """An independent copy of ``state`` (host or device) on the backend's device."""
        ops = self._ops
        with ops.context():
            return state.with_arrays(
                ops.published(ops.copy(state.coefficients)), ops.published(ops.copy(state.information))
            )

    def to_host_state(self, state: RenewableHuberState) -> RenewableHuberState:
        """An independent host NumPy copy in the model dtype."""
        ops = self._ops
        with ops.context():
            return state.with_arrays(
                self._host(state.coefficients), self._host(state.information)
            )

    def host_coefficients(self, state: RenewableHuberState) -> np.ndarray:
        """The coefficients alone as a host NumPy copy (``coef_``, ``intercept_``)."""
        with self._ops.context():
            return self._host(state.coefficients)

    def _host(self, array: Any) -> np.ndarray:
        if self._ops.is_native(array):
            return self._ops.to_numpy(array)
        return np.array(array, dtype=self.dtype)

    def empty_state(self, n_features_in: int, fit_intercept: bool, dtype: str) -> RenewableHuberState:
        return self.as_backend_state(RenewableHuberState.empty(n_features_in, fit_intercept, dtype))

    # ------------------------------------------------------------------ the protocol
    def all_finite(self, array: Any) -> bool:
        if self._ops.is_native(array):
            with self._ops.context():
                return self._ops.all_finite(array)
        return numpy_all_finite(array)

    def update(
        self,
        state: RenewableHuberState,
        X: Any,
        y: Any,
        sample_weight: Optional[Any],
        config: SolverConfig,
    ) -> tuple[RenewableHuberState, UpdateDiagnostics]:
        ops = self._ops
        with ops.context():
            X_array, y_array = ops.asarray(X, "X"), ops.asarray(y, "y")
            weights = None if sample_weight is None else ops.asarray(sample_weight, "sample_weight")
            # a host state (a resumed checkpoint) moves in once; a device state is used in place
            current = state.with_arrays(
                ops.asarray(state.coefficients, "state coefficients"),
                ops.asarray(state.information, "state information"),
            )
            next_state, diagnostics = renewable_update(ops, current, X_array, y_array, weights, config)
            published = next_state.with_arrays(
                ops.published(next_state.coefficients), ops.published(next_state.information)
            )
        return published, diagnostics

    def predict(self, state: RenewableHuberState, X: Any) -> Any:
        """``X coef + intercept`` on the backend's device, in the framework's array type."""
        ops = self._ops
        with ops.context():
            X_array = ops.asarray(X, "X")
            coefficients = ops.asarray(state.coefficients, "state coefficients")
            p = state.n_features_in
            out = X_array @ coefficients[:p]
            if state.fit_intercept:
                out = out + coefficients[p]
            return ops.published(out)


def requested_device(device: str, backend: str) -> tuple[str, Optional[int]]:
    """("auto", None), ("cpu", None) or ("cuda", N) from the estimator's
    device ("cuda" is device 0, as for native_cuda)."""
    if device in ("auto", "cpu"):
        return device, None
    if device == "cuda":
        return "cuda", 0
    if device.startswith("cuda:") and device[5:].isdigit():
        return "cuda", int(device[5:])
    raise BackendUnavailableError(f"backend='{backend}' cannot use device={device!r}")
