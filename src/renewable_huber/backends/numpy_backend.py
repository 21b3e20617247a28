"""The NumPy reference backend: the oracle every other engine is tested against."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..config import SolverConfig
from ..core import NumpyOps, UpdateDiagnostics, renewable_update
from ..core.data_terms import row_weights
from ..core.partition_sums import PartitionSums, reference_partition_sums
from ..exceptions import EngineError
from ..state import RenewableHuberState
from .base import HostStateBackend


class NumpyBackend(HostStateBackend):
    name = "numpy"
    device = "cpu"
    n_jobs: Optional[int] = None

    def __init__(self, dtype: str = "float64") -> None:
        self.dtype = np.dtype(dtype)
        self._ops = NumpyOps(self.dtype)

    def update(
        self,
        state: RenewableHuberState,
        X: np.ndarray,
        y: np.ndarray,
        sample_weight: Optional[np.ndarray],
        config: SolverConfig,
    ) -> tuple[RenewableHuberState, UpdateDiagnostics]:
        try:
            return renewable_update(self._ops, state, X, y, sample_weight, config)
        except np.linalg.LinAlgError as exc:  # LAPACK's SVD did not converge on a finite system
            raise EngineError(
                f"numpy backend failed (numerical_failure): the Newton system could not be solved ({exc})"
            ) from None

    def partition_sums(
        self, design: np.ndarray, y: np.ndarray, sample_weight: Optional[np.ndarray], theta: np.ndarray,
        tau: float, bandwidth: float, terms: Any,
    ) -> PartitionSums:
        """A partition's share of a batch's data terms at theta (core/partition_sums.py)."""
        ops = self._ops
        weights = row_weights(ops, sample_weight, design.shape[0])
        return reference_partition_sums(ops, design, y, weights, ops.asarray(theta), tau, bandwidth, terms)

    def predict(self, state: RenewableHuberState, X: np.ndarray) -> np.ndarray:
        coefficients = state.coefficients
        p = state.n_features_in
        out = X @ coefficients[:p]
        if state.fit_intercept:
            out = out + coefficients[p]
        return out


def create(dtype: str, device: str, n_jobs: Any, **options: Any) -> NumpyBackend:
    return NumpyBackend(dtype)
