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
from ..validation import validate_sample_weight, validate_vector, validate_X
from . import framework_inputs
from .base import BackendCapabilities, ValueStates


class FrameworkBackend(ValueStates):
    """The Backend protocol (base.py) over ``ops``, one of core/ops/'s ops."""

    name: str
    device: str
    n_jobs: Optional[int] = None
    capabilities = BackendCapabilities(state_on_device=True, framework_arrays=True)

    def __init__(self, ops: Any, dtype: str) -> None:
        self._ops = ops
        self.dtype = np.dtype(dtype)

    # ------------------------------------------------------------------ state transfers
    def as_backend_state(self, state: RenewableHuberState) -> RenewableHuberState:
        """An independent copy of ``state`` (host or device) on the backend's device."""
        ops = self._ops
        with ops.context():
            return state.map_arrays(lambda array: ops.published(ops.copy(array)))

    def to_host_state(self, state: RenewableHuberState) -> RenewableHuberState:
        """An independent host NumPy copy in the model dtype."""
        with self._ops.context():
            return state.map_arrays(self._host)

    def host_coefficients(self, state: RenewableHuberState) -> np.ndarray:
        """The coefficients alone as a host NumPy copy (``coef_``, ``intercept_``)."""
        with self._ops.context():
            return self._host(state.coefficients)

    def host_array(self, array: Any) -> np.ndarray:
        """An independent host NumPy copy of one of this backend's arrays (a prediction)."""
        with self._ops.context():
            return self._host(array)

    def _host(self, array: Any) -> np.ndarray:
        if self._ops.is_native(array):
            return self._ops.to_numpy(array)
        return np.array(array, dtype=self.dtype)

    # ------------------------------------------------------------------ inputs
    def owns(self, value: Any) -> bool:
        """Whether ``value`` is an array of this backend's framework (validated here, not by validation.py)."""
        return self._ops.is_native(value)

    def validated_X(self, X: Any, expected_features: Optional[int], estimator_name: str) -> Any:
        """validation.validate_X's checks and messages; a framework array is
        checked on its device and comes back in the model dtype there."""
        if not self.owns(X):
            return validate_X(X, self.dtype, expected_features, estimator_name, self.all_finite)
        with self._ops.context():
            return self._ops.published(framework_inputs.validated_X(self._ops, X, expected_features, estimator_name))

    def validated_batch(
        self, X: Any, y: Any, sample_weight: Any, expected_features: Optional[int], estimator_name: str
    ) -> tuple[Any, Any, Optional[Any]]:
        """X, y and sample_weight validated in validation.py's order with its
        messages: each framework array on its device, host data by validation.py
        (a batch may mix the two: host data is uploaded once by ``update``)."""
        X_array = self.validated_X(X, expected_features, estimator_name)
        y_array, weights = self.validated_targets(y, sample_weight, int(X_array.shape[0]))
        return self._ops.published(X_array), y_array, weights

    def validated_targets(self, y: Any, sample_weight: Any, n_rows: int) -> tuple[Any, Optional[Any]]:
        """y and sample_weight for ``n_rows`` rows, validated in validation.py's
        order with its messages: framework arrays on their device, host data
        by validation.py (returned as NumPy)."""
        with self._ops.context():
            if self.owns(y):
                y_array = framework_inputs.validated_vector(self._ops, y, "y", n_rows)
            else:
                y_array = validate_vector(y, "y", self.dtype, n_rows, self.all_finite)
            if sample_weight is not None and self.owns(sample_weight):
                weights = framework_inputs.validated_sample_weight(self._ops, sample_weight, n_rows)
            else:
                weights = validate_sample_weight(sample_weight, self.dtype, n_rows, self.all_finite)
        return self._ops.published(y_array), None if weights is None else self._ops.published(weights)

    def empty_state(self, n_features_in: int, fit_intercept: bool, dtype: str,
                    meat: bool = True) -> RenewableHuberState:
        return self.as_backend_state(RenewableHuberState.empty(n_features_in, fit_intercept, dtype, meat))

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
                None if state.meat is None else ops.asarray(state.meat, "state meat"),
            )
            next_state, diagnostics = renewable_update(ops, current, X_array, y_array, weights, config)
            published = next_state.map_arrays(ops.published)
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
