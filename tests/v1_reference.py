"""The NumPy reference's solvers as they were before amendment 0002 (the v1
contract's text, ALGORITHM.md), kept only to compare against: the stress
test asserts that no batch ends with a worse objective than these gave from
the same state, and scripts/stress_robust_solver.py reports the "before"
numbers with them.
"""

from __future__ import annotations

import contextlib
from unittest import mock

import numpy as np

from renewable_huber.core import update as update_module
from renewable_huber.core.lamm import soft_threshold
from renewable_huber.core.newton import SolverResult


def v1_solve_with_fallback(a, b):
    """LU; minimum-norm least squares only on an exactly zero pivot or a non-finite result."""
    try:
        with np.errstate(all="ignore"):
            x = np.linalg.solve(a, b)
        if np.all(np.isfinite(x)):
            return x, False
    except np.linalg.LinAlgError:
        pass
    return np.linalg.lstsq(a, b, rcond=None)[0].astype(a.dtype, copy=False), True


def v1_damped_newton(objective, max_iter, tol):
    ops = objective.ops
    theta = objective.theta_prev
    residual = objective.residual(theta)
    value = objective.value(theta, residual)
    used_fallback = False
    for iteration in range(1, max_iter + 1):
        gradient = objective.gradient(theta, residual)
        step, fell_back = v1_solve_with_fallback(objective.newton_matrix(residual), gradient)
        used_fallback = used_fallback or fell_back
        t, accepted = 1.0, False
        while t >= 1e-8:
            candidate = theta - ops.scalar(t) * step
            candidate_residual = objective.residual(candidate)
            candidate_value = objective.value(candidate, candidate_residual)
            if candidate_value <= value:
                accepted = True
                break
            t /= 2.0
        if not accepted:
            return SolverResult(theta, iteration, False, value, used_fallback, "line_search_exhausted")
        change = ops.norm(candidate - theta)
        theta, residual, value = candidate, candidate_residual, candidate_value
        if change <= tol * (1.0 + ops.norm(theta)):
            return SolverResult(theta, iteration, True, value, used_fallback)
    return SolverResult(theta, max_iter, False, value, used_fallback, "max_iter")


def v1_lamm(objective, penalty_mask, lambda_value, max_iter, tol):
    ops = objective.ops
    theta = objective.theta_prev
    residual = objective.residual(theta)
    value = objective.value(theta, residual)
    phi = 1.0
    for iteration in range(1, max_iter + 1):
        gradient = objective.gradient(theta, residual)
        accepted = False
        for _ in range(40):
            candidate = soft_threshold(ops, theta - gradient / phi, (lambda_value / phi) * penalty_mask)
            change = candidate - theta
            bound = value + ops.to_float(ops.dot(gradient, change)) + 0.5 * phi * ops.norm(change) ** 2
            candidate_residual = objective.residual(candidate)
            candidate_value = objective.value(candidate, candidate_residual)
            if candidate_value <= bound + 1e-12:
                accepted = True
                break
            phi *= 2.0
        if not accepted:
            return SolverResult(theta, iteration, False, value, False, "majorization_trials_exhausted")
        theta, residual, value = candidate, candidate_residual, candidate_value
        phi = max(phi / 2.0, 1e-8)
        if ops.norm(change) <= tol * (1.0 + ops.norm(theta)):
            return SolverResult(theta, iteration, True, value, False)
    return SolverResult(theta, max_iter, False, value, False, "max_iter")


@contextlib.contextmanager
def v1_solvers():
    """renewable_update with the v1 solvers (NumPy reference only)."""
    with mock.patch.object(update_module, "damped_newton", v1_damped_newton), \
            mock.patch.object(update_module, "lamm", v1_lamm):
        yield
