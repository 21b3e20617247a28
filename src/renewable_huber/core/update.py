"""The renewable update: absorb one batch into the state (ALGORITHM.md).

:func:`renewable_update` takes a batch held as arrays; :func:`absorb_batch`
is the transition itself over the batch's data terms (data_terms.py), so a
batch whose rows are spread over partitions (partition_sums.py) goes through
the same schedules, solvers and closing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from ..config import SolverConfig
from ..state import RenewableHuberState
from .array_ops import Array, ArrayOps
from .data_terms import DataTerms, LocalDataTerms, row_weights
from .diagnostics import UpdateDiagnostics
from .lamm import lamm
from .newton import damped_newton
from .objective import SurrogateObjective
from .schedules import bandwidth, lambda_level


def design_matrix(ops: ArrayOps, X: Array, fit_intercept: bool) -> Array:
    """Z: X with a column of ones appended last when fitting an intercept."""
    if not fit_intercept:
        return X
    n = X.shape[0]
    ones = ops.zeros((n, 1)) + ops.scalar(1.0)
    return ops.concatenate_columns(X, ones)


def penalty_mask(ops: ArrayOps, n_features: int, fit_intercept: bool) -> Array:
    """1 for every feature, 0 for the intercept."""
    mask = ops.zeros((n_features + int(fit_intercept),))
    return ops.set_leading(mask, n_features, 1.0)


@dataclass(frozen=True)
class BatchSchedules:
    """N (the weight sum after the batch), h and lambda (ALGORITHM.md, "Per-batch schedules")."""

    weight_sum_after: float
    bandwidth: float
    lambda_value: float


def batch_schedules(
    state: RenewableHuberState, batch_weight: float, n_features: int, config: SolverConfig
) -> BatchSchedules:
    weight_sum_after = state.effective_weight + batch_weight
    return BatchSchedules(
        weight_sum_after,
        bandwidth(config.tau, config.bandwidth_scale, weight_sum_after, n_features),
        lambda_level(config.penalty, config.tau, config.lambda_scale, weight_sum_after, n_features),
    )


def renewable_update(
    ops: ArrayOps,
    state: RenewableHuberState,
    X: Array,
    y: Array,
    sample_weight: Optional[Array],
    config: SolverConfig,
) -> tuple[RenewableHuberState, UpdateDiagnostics]:
    """One renewable Huber transition; ``state`` is not modified.

    ``X``, ``y`` and ``sample_weight`` are arrays of ``ops`` in the model dtype,
    already validated (finite, matching shapes, weights non-negative with a
    positive sum).
    """
    n_rows, n_features = X.shape
    weights = row_weights(ops, sample_weight, n_rows)
    schedules = batch_schedules(state, ops.to_float(ops.sum(weights)), n_features, config)
    data = LocalDataTerms(
        ops=ops,
        design=design_matrix(ops, X, config.fit_intercept),
        response=y,
        weights=weights,
        tau=ops.scalar(config.tau),
        bandwidth=ops.scalar(schedules.bandwidth),
    )
    return absorb_batch(ops, state, data, n_rows, n_features, schedules, config)


def absorb_batch(
    ops: ArrayOps,
    state: RenewableHuberState,
    data: DataTerms,
    n_rows: int,
    n_features: int,
    schedules: BatchSchedules,
    config: SolverConfig,
) -> tuple[RenewableHuberState, UpdateDiagnostics]:
    """The transition over a batch's data terms (formed with ``schedules``'s
    bandwidth); ``state`` is not modified."""
    state.require_room_for_batch(n_rows)
    mask = penalty_mask(ops, n_features, config.fit_intercept)
    weight_sum_after, lam = schedules.weight_sum_after, schedules.lambda_value
    theta_prev = ops.asarray(state.coefficients)
    objective = SurrogateObjective(
        ops=ops,
        data=data,
        theta_prev=theta_prev,
        information_prev=ops.asarray(state.information),
        history_direction=ops.sign(theta_prev) * mask,
        uses_history=config.penalty == "l1" and state.n_samples_seen > 0,
        history_coefficient=state.effective_weight / weight_sum_after * state.previous_lambda,
        weight_sum=weight_sum_after,
        ridge=ops.scalar(config.ridge),
    )
    if config.penalty == "l1":
        result = lamm(objective, mask, lam, config.max_iter, config.tol)
        reported_objective = result.objective + lam * ops.to_float(ops.sum(ops.abs(result.theta) * mask))
    else:
        result = damped_newton(objective, config.max_iter, config.tol)
        reported_objective = result.objective

    curvature_gram, score_gram = data.closing_grams(objective.residual(result.theta), state.meat is not None)
    next_state = replace(
        state,
        coefficients=result.theta,
        information=objective.information_prev + curvature_gram,
        meat=None if state.meat is None else ops.asarray(state.meat) + score_gram,
        n_samples_seen=state.n_samples_seen + n_rows,
        batch_count=state.batch_count + 1,
        previous_lambda=lam,
        weight_sum=weight_sum_after,
    )
    diagnostics = UpdateDiagnostics(
        iterations=result.iterations,
        converged=result.converged,
        objective=reported_objective,
        lambda_value=lam,
        bandwidth=schedules.bandwidth,
        used_regularized_fallback=result.used_fallback,
        solve_route="none" if config.penalty == "l1" else ("least_squares" if result.used_fallback else "lu"),
        stop_reason=result.stop_reason,
    )
    return next_state, diagnostics
