"""LAMM (local adaptive majorize-minimize) for penalty "l1"."""

from __future__ import annotations

from .array_ops import Array, ArrayOps
from .newton import SolverResult
from .objective import SurrogateObjective

MAX_MAJORIZATION_TRIALS = 40
MAJORIZATION_SLACK = 1e-12
SMALLEST_PHI = 1e-8


def soft_threshold(ops: ArrayOps, v: Array, threshold: Array) -> Array:
    return ops.sign(v) * ops.maximum(ops.abs(v) - threshold, ops.scalar(0.0))


def lamm(
    objective: SurrogateObjective, penalty_mask: Array, lambda_value: float, max_iter: int, tol: float
) -> SolverResult:
    ops = objective.ops
    theta = objective.theta_prev
    residual = objective.residual(theta)
    value = objective.value(theta, residual)
    phi = 1.0
    for iteration in range(1, max_iter + 1):
        gradient = objective.gradient(theta, residual)
        accepted = False
        for _ in range(MAX_MAJORIZATION_TRIALS):
            proximal_point = theta - gradient / phi
            candidate = soft_threshold(ops, proximal_point, (lambda_value / phi) * penalty_mask)
            change = candidate - theta
            bound = value + ops.to_float(ops.dot(gradient, change)) + 0.5 * phi * ops.norm(change) ** 2
            candidate_residual = objective.residual(candidate)
            candidate_value = objective.value(candidate, candidate_residual)
            if candidate_value <= bound + MAJORIZATION_SLACK:
                accepted = True
                break
            phi *= 2.0
        if not accepted:
            return SolverResult(theta, iteration, False, value, False)
        theta, residual, value = candidate, candidate_residual, candidate_value
        phi = max(phi / 2.0, SMALLEST_PHI)
        if ops.norm(change) <= tol * (1.0 + ops.norm(theta)):
            return SolverResult(theta, iteration, True, value, False)
    return SolverResult(theta, max_iter, False, value, False)
