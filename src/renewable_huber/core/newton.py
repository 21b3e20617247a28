"""Damped Newton for penalty "none": plain-decrease halving line search, and
the majorizer step when it is exhausted (amendment 0002)."""

from __future__ import annotations

from dataclasses import dataclass

from .array_ops import Array
from .objective import SurrogateObjective
from .solve_ladder import LEAST_SQUARES, solve_with_fallback
from .solver_rules import (
    CONVERGED,
    LARGEST_MAJORIZER_STEP,
    LINE_SEARCH_EXHAUSTED,
    MAX_ITER,
    SMALLEST_STEP,
    plain_decrease,
    step_converged,
)


@dataclass
class SolverResult:
    theta: Array
    iterations: int
    converged: bool
    objective: Array
    used_fallback: bool  # any system of the batch took the least-squares route
    stop_reason: str = CONVERGED
    majorizer_steps: int = 0  # Newton iterations that took the majorizer's step


@dataclass
class _Search:
    accepted: bool = False
    rounds_to_theta: bool = False
    candidate: Array = None
    residual: Array = None
    value: float = 0.0
    t: float = 0.0


def _line_search(objective: SurrogateObjective, theta: Array, step: Array, value: float) -> _Search:
    """Halve t from 1 while t >= SMALLEST_STEP until f(theta - t step) <= F.

    A candidate that rounds to theta (every entry equal) has f = F: plain
    decrease would accept it with a zero change, which is convergence.
    """
    ops = objective.ops
    t = 1.0
    while t >= SMALLEST_STEP:
        candidate = theta - ops.scalar(t) * step
        if bool((candidate == theta).all()):
            return _Search(rounds_to_theta=True)
        candidate_residual = objective.residual(candidate)
        candidate_value = objective.value(candidate, candidate_residual)
        if plain_decrease(candidate_value, value):
            return _Search(True, False, candidate, candidate_residual, candidate_value, t)
        t /= 2.0
    return _Search()


def _majorizer_search(objective: SurrogateObjective, theta: Array, step: Array, value: float) -> _Search:
    """The halving search along the majorizer's step; when t = 1 is accepted,
    t doubles while f keeps strictly decreasing (M overestimates the
    curvature, and where f is linear, as along a direction no inlier
    constrains, the step it gives is short)."""
    search = _line_search(objective, theta, step, value)
    if not search.accepted or search.t != 1.0:
        return search
    ops = objective.ops
    t = 2.0
    while t <= LARGEST_MAJORIZER_STEP:
        candidate = theta - ops.scalar(t) * step
        candidate_residual = objective.residual(candidate)
        candidate_value = objective.value(candidate, candidate_residual)
        if not (plain_decrease(candidate_value, search.value) and candidate_value < search.value):
            break
        search = _Search(True, False, candidate, candidate_residual, candidate_value, t)
        t *= 2.0
    return search


def damped_newton(objective: SurrogateObjective, max_iter: int, tol: float) -> SolverResult:
    ops = objective.ops
    theta = objective.theta_prev
    residual = objective.residual(theta)
    value = objective.value(theta, residual)
    used_fallback = False
    majorizer_steps = 0

    def result(iterations: int, converged: bool, reason: str) -> SolverResult:
        return SolverResult(theta, iterations, converged, value, used_fallback, reason, majorizer_steps)

    # A Newton step from the least-squares route can miss the gradient's part
    # in the dropped directions (where the current curvature vanishes but f
    # still slopes): its smallness certifies nothing. The next iteration then
    # takes the majorizer's step, whose null space is flat in f, and only it
    # may declare convergence.
    certify = False
    for iteration in range(1, max_iter + 1):
        gradient = objective.gradient(theta, residual)
        step, route = solve_with_fallback(ops, objective.newton_matrix(residual), gradient)
        used_fallback = used_fallback or route == LEAST_SQUARES
        by_majorizer = certify
        if by_majorizer:
            step, majorizer_route = solve_with_fallback(ops, objective.majorizer_matrix(), gradient)
            used_fallback = used_fallback or majorizer_route == LEAST_SQUARES
            majorizer_steps += 1
        search = (_majorizer_search if by_majorizer else _line_search)(objective, theta, step, value)
        if not search.accepted and not search.rounds_to_theta and not by_majorizer:
            # Newton's direction gave no decrease at any t: the majorizer's
            # step -M^-1 g decreases f in exact arithmetic (loss'' <= 1).
            step, majorizer_route = solve_with_fallback(ops, objective.majorizer_matrix(), gradient)
            used_fallback = used_fallback or majorizer_route == LEAST_SQUARES
            majorizer_steps += 1
            by_majorizer = True
            search = _majorizer_search(objective, theta, step, value)
        if not search.accepted and not search.rounds_to_theta:
            return result(iteration, False, LINE_SEARCH_EXHAUSTED)
        certify = route == LEAST_SQUARES and not by_majorizer
        if search.rounds_to_theta:
            if certify:
                continue
            return result(iteration, True, CONVERGED)
        change = ops.norm(search.candidate - theta)
        theta, residual, value = search.candidate, search.residual, search.value
        if step_converged(change, ops.norm(theta), tol):
            if certify:
                continue
            return result(iteration, True, CONVERGED)
        certify = False
    return result(max_iter, False, MAX_ITER)
