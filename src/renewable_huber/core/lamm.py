"""LAMM (local adaptive majorize-minimize) for penalty "l1".

The v1 iteration (ALGORITHM.md) runs first, unchanged. When it stalls
(solver_rules.lamm_stalled) an accelerated phase takes over (amendment
0002): proximal gradient steps from FISTA's extrapolated point, with
momentum restarted whenever a step would raise the penalized objective,
and a majorization slack at the rounding level of f instead of the v1
absolute 1e-12. Both phases have the same fixed points: the KKT points of
f + lambda ||m theta||_1.
"""

from __future__ import annotations

from .array_ops import Array, ArrayOps
from .newton import SolverResult
from .objective import SurrogateObjective
from .solver_rules import (
    CONVERGED,
    INITIAL_PHI,
    MAJORIZATION_EXHAUSTED,
    MAJORIZATION_SLACK,
    MAX_ITER,
    MAX_MAJORIZATION_TRIALS,
    STALL_WINDOW,
    lamm_stalled,
    masked_l1_norm,
    majorization_bound,
    majorization_holds,
    momentum_next,
    phi_after_acceptance,
    phi_after_rejection,
    rounding_slack,
    step_converged,
)

# v1 names, kept for callers
SMALLEST_PHI = 1e-8


def soft_threshold(ops: ArrayOps, v: Array, threshold: Array) -> Array:
    return ops.sign(v) * ops.maximum(ops.abs(v) - threshold, ops.scalar(0.0))


class _Trials:
    """One iteration's majorization trials from a point y with gradient g."""

    def __init__(self, objective: SurrogateObjective, penalty_mask: Array, lambda_value: float) -> None:
        self.objective, self.mask, self.lambda_value = objective, penalty_mask, lambda_value

    def run(self, y: Array, value: float, gradient: Array, phi: float, slack: float):
        """(accepted, candidate, its residual, its f, phi of the accepted trial, change)."""
        ops, objective = self.objective.ops, self.objective
        for _ in range(MAX_MAJORIZATION_TRIALS):
            proximal_point = y - gradient / phi
            candidate = soft_threshold(ops, proximal_point, (self.lambda_value / phi) * self.mask)
            change = candidate - y
            bound = majorization_bound(value, ops.to_float(ops.dot(gradient, change)), phi, ops.norm(change))
            candidate_residual = objective.residual(candidate)
            candidate_value = objective.value(candidate, candidate_residual)
            if majorization_holds(candidate_value, bound, slack):
                return True, candidate, candidate_residual, candidate_value, phi, change
            phi = phi_after_rejection(phi)
        return False, None, None, None, phi, None

    def penalized(self, theta: Array, value: float) -> float:
        ops = self.objective.ops
        return value + self.lambda_value * masked_l1_norm(ops.to_list(theta), ops.to_list(self.mask))


def lamm(
    objective: SurrogateObjective, penalty_mask: Array, lambda_value: float, max_iter: int, tol: float
) -> SolverResult:
    ops = objective.ops
    trials = _Trials(objective, penalty_mask, lambda_value)
    theta = objective.theta_prev
    residual = objective.residual(theta)
    value = objective.value(theta, residual)
    start_scale = abs(value)
    phi = INITIAL_PHI
    step_norms: list[float] = []  # the plain phase's accepted steps (stall detection)
    iteration = 0
    while iteration < max_iter:  # the v1 iteration
        iteration += 1
        gradient = objective.gradient(theta, residual)
        accepted, candidate, candidate_residual, candidate_value, phi, change = trials.run(
            theta, value, gradient, phi, MAJORIZATION_SLACK
        )
        if not accepted:
            return SolverResult(theta, iteration, False, value, False, MAJORIZATION_EXHAUSTED)
        theta, residual, value = candidate, candidate_residual, candidate_value
        step_norm, theta_norm = ops.norm(change), ops.norm(theta)
        if step_converged(step_norm, theta_norm, tol):
            return SolverResult(theta, iteration, True, value, False, CONVERGED)
        step_norms.append(step_norm)
        window_ago = step_norms[-1 - STALL_WINDOW] if len(step_norms) > STALL_WINDOW else float("inf")
        stalled = lamm_stalled(iteration, step_norm, window_ago, phi, theta_norm, tol)
        phi = phi_after_acceptance(phi)
        if stalled:
            break
    else:
        return SolverResult(theta, max_iter, False, value, False, MAX_ITER)

    # The accelerated phase (amendment 0002).
    previous = theta
    momentum = 1.0
    while iteration < max_iter:
        iteration += 1
        momentum_after = momentum_next(momentum)
        beta = (momentum - 1.0) / momentum_after
        extrapolated = beta > 0.0
        y, y_residual, y_value = theta, residual, value
        if extrapolated:
            y = theta + ops.scalar(beta) * (theta - previous)
            y_residual = objective.residual(y)
            y_value = objective.value(y, y_residual)
        slack = rounding_slack(max(start_scale, abs(y_value)), ops.dtype_name)
        gradient = objective.gradient(y, y_residual)
        accepted, candidate, candidate_residual, candidate_value, phi, change = trials.run(
            y, y_value, gradient, phi, slack
        )
        if accepted and extrapolated and trials.penalized(candidate, candidate_value) > trials.penalized(theta, value):
            accepted = False  # momentum would raise the objective: restart
        if not accepted:
            if not extrapolated:
                return SolverResult(theta, iteration, False, value, False, MAJORIZATION_EXHAUSTED)
            previous, momentum = theta, 1.0
            continue
        previous, theta, residual, value = theta, candidate, candidate_residual, candidate_value
        momentum = momentum_after
        phi = phi_after_acceptance(phi)
        if step_converged(ops.norm(change), ops.norm(theta), tol):
            return SolverResult(theta, iteration, True, value, False, CONVERGED)
    return SolverResult(theta, max_iter, False, value, False, MAX_ITER)
