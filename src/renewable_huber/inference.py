"""Inference for a streamed robust fit (amendment 0003): standard errors,
z statistics, p-values, confidence intervals and a summary, from the d x d
quantities the stream keeps.

The M-estimator's sandwich covariance, accumulated renewably:

    bread  J_N = sum over batches of Z' diag(w kappa(r)) Z     (the state's information)
    meat   S_N = sum over batches of Z' diag(w score(r)^2) Z   (the state's meat, at each batch's final theta)
    cov    = N / (N - d) J_N^+ S_N J_N^+                        (N: the weight sum; d: the columns of Z)

J_N^+ is J_N's inverse, or, when J_N is singular to working precision (its
eigenvalues at or below eps * d of the largest, the solve ladder's cutoff),
its pseudo-inverse, with an InferenceWarning; a coefficient whose direction
J_N carries no information about gets NaN, never a made-up number. Normal
p-values and intervals follow. With penalty="l1" inference is refused:
selection and shrinkage make these standard errors invalid.

Everything here is computed on the host in float64 (d x d is small); the
public order lists the intercept first, then the features (statsmodels'
convention for a constant), while the state keeps the intercept last.
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from .core.solver_rules import singular_rcond_threshold
from .exceptions import InferenceWarning, ValidationError
from .state import RenewableHuberState

#: a coordinate's share of the null space of J above which it is not identified
UNIDENTIFIED_SHARE = 1e-6

L1_MESSAGE = (
    "inference is not available for penalty='l1': selection and shrinkage make these standard errors invalid; "
    "refit the selected columns (the nonzero coef_) with penalty='none' for inference"
)
NOT_TRACKED_MESSAGE = (
    "this model was fitted with inference=False, so it did not accumulate what standard errors need; "
    "refit with inference=True"
)
UNKNOWN_MEAT_MESSAGE = (
    "this stream's meat (what standard errors need beside the information matrix) is unknown: the stream was "
    "resumed from a format 2 checkpoint, written before inference existed; standard errors need a stream "
    "fitted from its first batch with inference=True"
)


def _normal_two_sided(z: np.ndarray) -> np.ndarray:
    """2 (1 - Phi(|z|)) = erfc(|z| / sqrt 2); NaN stays NaN."""
    return np.array([math.erfc(abs(value) / math.sqrt(2.0)) if math.isfinite(value) else math.nan
                     for value in np.ravel(z)]).reshape(np.shape(z))


@dataclass(frozen=True)
class Inference:
    """A fitted stream's statistics, in the public order (the intercept first)."""

    names: tuple[str, ...]
    params: np.ndarray  # the coefficients
    cov: np.ndarray  # their covariance (NaN where not identified)
    weight_sum: float  # N
    n_samples_seen: int
    batch_count: int
    converged_batches: Optional[int]
    tau: float
    information_rank: int
    n_parameters: int

    @property
    def bse(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    @property
    def tvalues(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.params / self.bse

    @property
    def pvalues(self) -> np.ndarray:
        return _normal_two_sided(self.tvalues)

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Normal (1 - alpha) intervals, shape (d, 2)."""
        if isinstance(alpha, bool) or not (isinstance(alpha, (int, float)) and 0.0 < alpha < 1.0):
            raise ValidationError("alpha must be a number strictly between 0 and 1")
        quantile = statistics.NormalDist().inv_cdf(1.0 - alpha / 2.0)
        margin = quantile * self.bse
        return np.column_stack([self.params - margin, self.params + margin])


def inference_of(state: RenewableHuberState, *, penalty: str, inference: bool, tau: float,
                 feature_names: Optional[Sequence[str]], dtype: str,
                 converged_batches: Optional[int] = None) -> Inference:
    """The statistics of ``state`` (a host state), or the error that says why there are none."""
    if penalty == "l1":
        raise ValidationError(L1_MESSAGE)
    if state.meat is None:
        raise ValidationError(UNKNOWN_MEAT_MESSAGE if inference else NOT_TRACKED_MESSAGE)
    d, N = state.n_parameters, state.effective_weight
    if not N > d:
        raise ValidationError(f"inference needs a weight sum above the {d} parameters, and this stream's is {N:g}")
    J = np.asarray(state.information, dtype=np.float64)
    S = np.asarray(state.meat, dtype=np.float64)
    J = (J + J.T) / 2.0
    eigenvalues, vectors = np.linalg.eigh(J)
    largest = float(np.max(np.abs(eigenvalues))) if eigenvalues.size else 0.0
    cutoff = singular_rcond_threshold(d, np.dtype(dtype).name) * largest
    kept = eigenvalues > cutoff
    inverse = (vectors[:, kept] / eigenvalues[kept]) @ vectors[:, kept].T
    cov = (N / (N - d)) * (inverse @ S @ inverse)
    cov = (cov + cov.T) / 2.0
    rank = int(np.count_nonzero(kept))
    if rank < d:
        null_share = np.sum(vectors[:, ~kept] ** 2, axis=1)
        unidentified = null_share > UNIDENTIFIED_SHARE
        cov[unidentified, :] = np.nan
        cov[:, unidentified] = np.nan
        warnings.warn(
            f"the information matrix is singular (rank {rank} of {d}): its pseudo-inverse is used, and the "
            f"{int(np.count_nonzero(unidentified))} coefficient(s) whose direction the data carry no information "
            "about get NaN standard errors (collinear or constant columns?)", InferenceWarning, stacklevel=4)
    order = _public_order(state)
    names = _public_names(state, feature_names)
    coefficients = np.asarray(state.coefficients, dtype=np.float64)
    return Inference(names=names, params=coefficients[order], cov=cov[np.ix_(order, order)], weight_sum=N,
                     n_samples_seen=int(state.n_samples_seen), batch_count=int(state.batch_count),
                     converged_batches=converged_batches, tau=float(tau), information_rank=rank, n_parameters=d)


def _public_order(state: RenewableHuberState) -> list[int]:
    """The state's indices in the public order: the intercept (last in the state) first."""
    p = state.n_features_in
    return [p] + list(range(p)) if state.fit_intercept else list(range(p))


def _public_names(state: RenewableHuberState, feature_names: Optional[Sequence[str]]) -> tuple[str, ...]:
    names = [str(n) for n in feature_names] if feature_names is not None else \
        [f"x{j}" for j in range(state.n_features_in)]
    return tuple((["intercept"] if state.fit_intercept else []) + names)


def prediction_std(inference: Inference, X: Any, fit_intercept: bool) -> np.ndarray:
    """The standard error of the mean prediction at each row of X (validated;
    any framework's array: the computation is on the host, in float64)."""
    from .device_arrays import host_copy

    X = np.asarray(host_copy(X), dtype=np.float64)
    design = np.column_stack([np.ones(X.shape[0]), X]) if fit_intercept else X
    return np.sqrt(np.einsum("ij,jk,ik->i", design, inference.cov, design))


# ---------------------------------------------------------------- the summary
class Summary:
    """``str()``: a statsmodels-like table; ``to_frame()``: a pandas DataFrame."""

    def __init__(self, inference: Inference, alpha: float, model: str) -> None:
        self.inference, self.alpha, self.model = inference, alpha, model
        self._intervals = inference.conf_int(alpha)

    @property
    def columns(self) -> tuple[str, ...]:
        low, high = self.alpha / 2.0, 1.0 - self.alpha / 2.0
        return ("coef", "std err", "z", "P>|z|", f"[{low:g}", f"{high:g}]")

    def rows(self) -> list[tuple[str, float, float, float, float, float, float]]:
        i = self.inference
        bse, z, p = i.bse, i.tvalues, i.pvalues  # each a whole vector: computed once for the table
        return [(name, i.params[k], bse[k], z[k], p[k], self._intervals[k, 0], self._intervals[k, 1])
                for k, name in enumerate(i.names)]

    def to_frame(self) -> Any:
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is an optional extra
            raise ImportError("Summary.to_frame needs pandas. Install it with: pip install 'renewable-huber[pandas]'") \
                from exc
        rows = self.rows()
        return pd.DataFrame([row[1:] for row in rows], index=[row[0] for row in rows], columns=list(self.columns))

    def __str__(self) -> str:
        i = self.inference
        converged = "unknown" if i.converged_batches is None else f"{i.converged_batches} of {i.batch_count}"
        header = [
            ("Model:", self.model, "Samples seen:", f"{i.n_samples_seen}"),
            ("Loss:", f"Huber (tau={i.tau:g})", "Weight sum (N):", f"{i.weight_sum:g}"),
            ("Covariance:", "sandwich, renewable", "Batches:", f"{i.batch_count}"),
            ("Intervals:", "normal", "Converged batches:", converged),
        ]
        width = max(len(name) for name in i.names) + 2
        lines = ["Renewable Huber regression results"]
        rule = "=" * (width + 6 * 11)
        lines.append(rule)
        lines += [f"{a:<14}{b:<{width + 20}}{c:<20}{d:>{max(0, len(rule) - width - 54)}}" for a, b, c, d in header]
        lines.append(rule)
        lines.append(" " * width + "".join(f"{column:>11}" for column in self.columns))
        lines.append("-" * len(rule))
        for name, *values in self.rows():
            lines.append(f"{name:<{width}}" + "".join(f"{value:>11.4g}" if column != "P>|z|" else f"{value:>11.3f}"
                                                      for value, column in zip(values, self.columns)))
        lines.append(rule)
        if i.information_rank < i.n_parameters:
            lines.append(f"The information matrix has rank {i.information_rank} of {i.n_parameters}: "
                         "NaN marks coefficients the data do not identify.")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)


# ---------------------------------------------------------------- the estimator's side
class StatisticalInference:
    """The estimator's inference surface (a mixin of RenewableHuberRegressor):
    ``bse_``, ``tvalues_``, ``pvalues_``, ``cov_params()``, ``conf_int()``,
    ``summary()``; each call reads the state once (host, d x d)."""

    def _inference(self) -> Inference:
        with self._own_lock():
            stream = self._fitted_stream()
            return inference_of(stream.host_state(), penalty=self.penalty, inference=self.inference, tau=self.tau,
                                feature_names=stream.feature_names, dtype=stream.dtype,
                                converged_batches=stream.converged_batches)

    @property
    def bse_(self) -> np.ndarray:
        """Standard errors of the coefficients (the intercept first)."""
        return self._inference().bse

    @property
    def tvalues_(self) -> np.ndarray:
        """z statistics, coefficient / standard error (the intercept first)."""
        return self._inference().tvalues

    @property
    def pvalues_(self) -> np.ndarray:
        """Two-sided normal p-values (the intercept first)."""
        return self._inference().pvalues

    def cov_params(self) -> np.ndarray:
        """The coefficients' covariance matrix, d x d (the intercept first)."""
        return self._inference().cov

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        """Normal (1 - alpha) confidence intervals, shape (d, 2) (the intercept first)."""
        return self._inference().conf_int(alpha)

    def summary(self, alpha: float = 0.05) -> Summary:
        """A table of the coefficients with their standard errors, z, p-values and intervals."""
        return Summary(self._inference(), alpha, type(self).__name__)
