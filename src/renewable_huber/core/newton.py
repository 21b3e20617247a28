"""Damped Newton for penalty "none": plain-decrease halving line search."""

from __future__ import annotations

from dataclasses import dataclass

from .array_ops import Array
from .objective import SurrogateObjective

SMALLEST_STEP = 1e-8


@dataclass
class SolverResult:
    theta: Array
    iterations: int
    converged: bool
    objective: Array
    used_fallback: bool


def damped_newton(objective: SurrogateObjective, max_iter: int, tol: float) -> SolverResult:
    ops = objective.ops
    theta = objective.theta_prev
    residual = objective.residual(theta)
    value = objective.value(theta, residual)
    used_fallback = False
    for iteration in range(1, max_iter + 1):
        gradient = objective.gradient(theta, residual)
        step, fell_back = ops.solve_with_fallback(objective.newton_matrix(residual), gradient)
        used_fallback = used_fallback or fell_back
        t = 1.0
        accepted = False
        while t >= SMALLEST_STEP:
            candidate = theta - ops.scalar(t) * step
            candidate_residual = objective.residual(candidate)
            candidate_value = objective.value(candidate, candidate_residual)
            if candidate_value <= value:
                accepted = True
                break
            t /= 2.0
        if not accepted:
            return SolverResult(theta, iteration, False, value, used_fallback)
        change = ops.norm(candidate - theta)
        theta, residual, value = candidate, candidate_residual, candidate_value
        if change <= tol * (1.0 + ops.norm(theta)):
            return SolverResult(theta, iteration, True, value, used_fallback)
    return SolverResult(theta, max_iter, False, value, used_fallback)
