"""The state a renewable fit carries from one batch to the next."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from .exceptions import ValidationError


#: The counters are signed 64-bit integers in every engine and checkpoint.
COUNTER_MAX = 2**63 - 1

#: with_arrays' "keep the meat as it is"
_SAME: Any = object()


@dataclass
class RenewableHuberState:
    """Coefficients, information matrix and counters: all that survives a batch.

    ``coefficients`` has length ``d = n_features_in + fit_intercept`` with the
    intercept last; ``information`` is the ``d x d`` accumulated (not
    normalised) curvature J; ``meat`` the ``d x d`` accumulated
    ``Z' diag(w score(r)^2) Z`` S at each batch's final coefficients
    (amendment 0003: the sandwich covariance J^-1 S J^-1), or None when it is
    not tracked (``inference=False``) or unknown (a stream resumed from a
    format 2 checkpoint). Arrays are host NumPy arrays in the model dtype,
    except inside a device backend, which keeps its own array type.

    Examples
    --------
    >>> s = RenewableHuberState.empty(3, fit_intercept=True, dtype="float64")
    >>> s.coefficients.shape, s.information.shape, s.batch_count
    ((4,), (4, 4), 0)
    """

    coefficients: Any
    information: Any
    n_samples_seen: int
    batch_count: int
    previous_lambda: float
    n_features_in: int
    fit_intercept: bool
    weight_sum: Optional[float] = None
    meat: Optional[Any] = None

    @classmethod
    def empty(cls, n_features_in: int, fit_intercept: bool, dtype: Any = "float64",
              meat: bool = True) -> "RenewableHuberState":
        """The state before a stream's first batch; ``meat``: whether it tracks the meat."""
        d = int(n_features_in) + int(bool(fit_intercept))
        return cls(
            coefficients=np.zeros(d, dtype=dtype),
            information=np.zeros((d, d), dtype=dtype),
            n_samples_seen=0,
            batch_count=0,
            previous_lambda=0.0,
            n_features_in=int(n_features_in),
            fit_intercept=bool(fit_intercept),
            weight_sum=0.0,
            meat=np.zeros((d, d), dtype=dtype) if meat else None,
        )

    @property
    def n_parameters(self) -> int:
        return self.n_features_in + int(self.fit_intercept)

    @property
    def effective_weight(self) -> float:
        """Accumulated frequency weight; legacy states without it use the row count."""
        return float(self.n_samples_seen) if self.weight_sum is None else float(self.weight_sum)

    def with_arrays(self, coefficients: Any, information: Any, meat: Any = _SAME) -> "RenewableHuberState":
        """The same counters and metadata with other arrays (the meat kept unless given).

        Spelled out: dataclasses.replace introspects the fields on every call.
        """
        return type(self)(
            coefficients=coefficients,
            information=information,
            n_samples_seen=self.n_samples_seen,
            batch_count=self.batch_count,
            previous_lambda=self.previous_lambda,
            n_features_in=self.n_features_in,
            fit_intercept=self.fit_intercept,
            weight_sum=self.weight_sum,
            meat=self.meat if meat is _SAME else meat,
        )

    def map_arrays(self, convert: Callable[[Any], Any]) -> "RenewableHuberState":
        """The same counters and metadata with ``convert`` applied to each array (an untracked meat stays None)."""
        return self.with_arrays(convert(self.coefficients), convert(self.information),
                                None if self.meat is None else convert(self.meat))

    def require_room_for_batch(self, n_rows: int) -> None:
        """Refuse a batch that would carry a counter past COUNTER_MAX (the
        native engines' message, word for word)."""
        if self.n_samples_seen > COUNTER_MAX - n_rows:
            raise ValidationError(
                f"state counters would overflow: n_samples_seen + {n_rows} rows exceeds {COUNTER_MAX}")
        if self.batch_count >= COUNTER_MAX:
            raise ValidationError(f"state counters would overflow: batch_count + 1 exceeds {COUNTER_MAX}")

    def copy(self) -> "RenewableHuberState":
        return self.map_arrays(lambda array: array.copy())

    def validate(self) -> None:
        """Raise ValidationError (messages in spec/API.md order) if the state is inconsistent."""
        d = self.n_parameters
        coefficients = np.asarray(self.coefficients)
        information = np.asarray(self.information)
        if coefficients.shape != (d,):
            raise ValidationError("state coefficient shape does not match feature metadata")
        if information.shape != (d, d):
            raise ValidationError("state information shape does not match feature metadata")
        meat = None if self.meat is None else np.asarray(self.meat)
        if meat is not None and meat.shape != (d, d):
            raise ValidationError("state meat shape does not match feature metadata")
        if self.n_samples_seen < 0 or self.batch_count < 0 or self.n_features_in < 0:
            raise ValidationError("state counters must be non-negative")
        for name in ("n_samples_seen", "batch_count", "n_features_in"):
            if getattr(self, name) > COUNTER_MAX:
                raise ValidationError(f"state {name} must be at most {COUNTER_MAX} (a signed 64-bit counter)")
        if not (math.isfinite(self.previous_lambda) and self.previous_lambda >= 0):
            raise ValidationError("state previous lambda must be finite and non-negative")
        if self.weight_sum is not None:
            if not (math.isfinite(self.weight_sum) and self.weight_sum >= 0):
                raise ValidationError("state weight sum must be finite and non-negative")
            if self.n_samples_seen > 0 and self.weight_sum <= 0:
                raise ValidationError("state weight sum must be positive after observing samples")
        if not np.all(np.isfinite(coefficients)):
            raise ValidationError("state coefficients must contain only finite values")
        if not np.all(np.isfinite(information)):
            raise ValidationError("state information must contain only finite values")
        if meat is not None and not np.all(np.isfinite(meat)):
            raise ValidationError("state meat must contain only finite values")
