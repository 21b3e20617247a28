"""The renewable update: absorb one batch into the state (ALGORITHM.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from ..config import SolverConfig
from ..state import RenewableHuberState
from .array_ops import Array, ArrayOps
from .diagnostics import UpdateDiagnostics
from .huber import smoothed_curvature
from .lamm import lamm
from .newton import damped_newton
from .objective import SurrogateObjective, weighted_gram
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
    weights = sample_weight if sample_weight is not None else ops.zeros((n_rows,)) + ops.scalar(1.0)
    design = design_matrix(ops, X, config.fit_intercept)
    mask = penalty_mask(ops, n_features, config.fit_intercept)

    weight_sum_before = state.effective_weight
    weight_sum_after = weight_sum_before + ops.to_float(ops.sum(weights))
    h = bandwidth(config.tau, config.bandwidth_scale, weight_sum_after, n_features)
    lam = lambda_level(config.penalty, config.tau, config.lambda_scale, weight_sum_after, n_features)

    theta_prev = ops.asarray(state.coefficients)
    objective = SurrogateObjective(
        ops=ops,
        design=design,
        response=y,
        weights=weights,
        theta_prev=theta_prev,
        information_prev=ops.asarray(state.information),
        history_direction=ops.sign(theta_prev) * mask,
        uses_history=config.penalty == "l1" and state.n_samples_seen > 0,
        history_coefficient=weight_sum_before / weight_sum_after * state.previous_lambda,
        weight_sum=weight_sum_after,
        tau=ops.scalar(config.tau),
        bandwidth=ops.scalar(h),
        ridge=ops.scalar(config.ridge),
    )
    if config.penalty == "l1":
        result = lamm(objective, mask, lam, config.max_iter, config.tol)
        reported_objective = result.objective + lam * ops.to_float(ops.sum(ops.abs(result.theta) * mask))
    else:
        result = damped_newton(objective, config.max_iter, config.tol)
        reported_objective = result.objective

    curvature = weights * smoothed_curvature(ops, objective.residual(result.theta), objective.tau, objective.bandwidth)
    information = objective.information_prev + weighted_gram(ops, design, curvature)

    next_state = replace(
        state,
        coefficients=result.theta,
        information=information,
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
        bandwidth=h,
        used_regularized_fallback=result.used_fallback,
        solve_route="none" if config.penalty == "l1" else ("least_squares" if result.used_fallback else "lu"),
        stop_reason=result.stop_reason,
    )
    return next_state, diagnostics
