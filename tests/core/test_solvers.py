"""The solve with fallback, damped Newton, LAMM and the update entry point."""

from __future__ import annotations

import numpy as np
import pytest

from renewable_huber.config import SolverConfig
from renewable_huber.core import NumpyOps, renewable_update
from renewable_huber.core.lamm import lamm, soft_threshold
from renewable_huber.core.newton import damped_newton
from renewable_huber.core.data_terms import LocalDataTerms
from renewable_huber.core.objective import SurrogateObjective
from renewable_huber.core.solve_ladder import solve_with_fallback
from renewable_huber.core.solver_rules import regular_solve_allowed, singular_rcond_threshold
from renewable_huber.state import RenewableHuberState

OPS = NumpyOps("float64")


def first_batch_objective(X, y, *, tau=1.345, h=0.1, ridge=1e-8, ops=OPS):
    n, p = X.shape
    Z = np.c_[X, np.ones(n)].astype(ops.dtype)
    d = p + 1
    return SurrogateObjective(
        ops=ops, data=LocalDataTerms(ops, design=Z, response=ops.asarray(y), weights=ops.asarray(np.ones(n)),
                                     tau=ops.scalar(tau), bandwidth=ops.scalar(h)),
        theta_prev=ops.zeros((d,)), information_prev=ops.zeros((d, d)), history_direction=ops.zeros((d,)),
        uses_history=False, history_coefficient=0.0, weight_sum=float(n), ridge=ops.scalar(ridge),
    )


def config(**changes):
    base = dict(tau=1.345, penalty="none", lambda_scale=1.0, bandwidth_scale=1.0, fit_intercept=True, max_iter=100, tol=1e-6, ridge=1e-8)
    base.update(changes)
    return SolverConfig(**base)


# ---------------------------------------------------------------- the solve ladder


def solve(a, b, ops=OPS):
    return solve_with_fallback(ops, np.asarray(a, dtype=ops.dtype), np.asarray(b, dtype=ops.dtype))


def test_regular_solve():
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    b = np.array([1.0, 2.0])
    x, route = solve(a, b)
    assert route == "lu"
    np.testing.assert_allclose(a @ x, b, rtol=1e-14)
    assert np.array_equal(x, np.linalg.solve(a, b))  # the regular route is numpy.linalg.solve's bits


def test_singular_system_uses_the_minimum_norm_least_squares_solution():
    x, route = solve([[1.0, 1.0], [1.0, 1.0]], [2.0, 2.0])
    assert route == "least_squares"
    np.testing.assert_allclose(x, [1.0, 1.0], rtol=1e-12)  # the minimum-norm point of x0 + x1 = 2
    zero, route = solve(np.zeros((3, 3)), np.ones(3))
    assert route == "least_squares" and np.array_equal(zero, np.zeros(3))


def test_systems_singular_to_working_precision_take_the_least_squares_route():
    """np.linalg.solve does not raise on diag(1, 1e-17) (no exact zero pivot),
    but its reciprocal condition number is below eps * d: least squares,
    which drops the direction. Just above the threshold: LU."""
    x, route = solve(np.diag([1.0, 1e-17]), [1.0, 1.0])
    assert route == "least_squares" and x[1] == 0.0
    x, route = solve(np.diag([1.0, 1e-14]), [1.0, 1.0])
    assert route == "lu" and x[1] == pytest.approx(1e14)
    ops32 = NumpyOps("float32")
    assert solve(np.diag([1.0, 1e-7]), [1.0, 1.0], ops32)[1] == "least_squares"  # 1e-7 < 2 eps32
    assert solve(np.diag([1.0, 1e-5]), [1.0, 1.0], ops32)[1] == "lu"


def test_the_rule_is_the_contracts_threshold():
    assert singular_rcond_threshold(10, "float64") == 10 * np.finfo(np.float64).eps
    assert singular_rcond_threshold(3, "float32") == 3 * float(np.finfo(np.float32).eps)
    assert regular_solve_allowed(1e-14, 10, "float64") and not regular_solve_allowed(2e-15, 10, "float64")
    assert not regular_solve_allowed(float("nan"), 10, "float64")
    assert OPS.reciprocal_condition(np.zeros((2, 2))) == 0.0
    assert OPS.reciprocal_condition(np.diag([2.0, 4.0])) == pytest.approx(0.5)


class _NonFiniteSolve(NumpyOps):
    """A well-conditioned matrix whose regular solve returns NaN."""

    @staticmethod
    def solve(a, b):
        return np.full_like(b, np.nan)


def test_a_non_finite_regular_solution_falls_back_to_least_squares():
    x, route = solve(np.eye(2) * 2, [1.0, 1.0], _NonFiniteSolve("float64"))
    assert route == "least_squares"
    np.testing.assert_allclose(x, [0.5, 0.5])


def test_float32_solve_stays_float32():
    ops = NumpyOps("float32")
    x, _ = solve(np.eye(3) * 2, np.ones(3), ops)
    y, _ = solve(np.ones((3, 3)), np.ones(3), ops)
    assert x.dtype == np.float32 and y.dtype == np.float32


def test_soft_threshold():
    v = np.array([-3.0, -0.5, 0.0, 0.2, 2.0, 5.0])
    t = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 0.0])  # the last entry is unpenalised
    np.testing.assert_array_equal(soft_threshold(OPS, v, t), [-2.0, 0.0, 0.0, 0.0, 1.0, 5.0])


# ---------------------------------------------------------------- damped Newton


def test_newton_on_a_quadratic_objective_is_least_squares(rng):
    X = rng.normal(size=(40, 3))
    y = X @ [1.0, 2.0, -1.0] + 0.5 + 0.1 * rng.normal(size=40)
    objective = first_batch_objective(X, y, tau=1e6, h=1e-3, ridge=0.0)
    result = damped_newton(objective, max_iter=50, tol=1e-10)
    assert result.converged and not result.used_fallback
    expected = np.linalg.lstsq(np.c_[X, np.ones(40)], y, rcond=None)[0]
    np.testing.assert_allclose(result.theta, expected, rtol=1e-10, atol=1e-12)
    assert result.iterations <= 3  # exact Newton on a quadratic


def test_newton_never_increases_the_objective(rng):
    X = rng.normal(size=(60, 2))
    y = X @ [1.0, -1.0] + rng.standard_t(1.5, size=60) * 3
    objective = first_batch_objective(X, y)
    start = objective.value(objective.theta_prev, objective.residual(objective.theta_prev))
    values = []
    for iterations in range(1, 6):
        result = damped_newton(objective, max_iter=iterations, tol=1e-14)
        values.append(result.objective)
        assert result.iterations <= iterations
        assert result.objective == pytest.approx(objective.value(result.theta, objective.residual(result.theta)), rel=1e-14)
    assert values[0] <= start
    assert all(b <= a for a, b in zip(values, values[1:]))


def test_newton_max_iter_one_is_not_converged(rng):
    X = rng.normal(size=(30, 2))
    y = X @ [3.0, 1.0] + rng.standard_t(2, size=30)
    result = damped_newton(first_batch_objective(X, y), max_iter=1, tol=1e-6)
    assert result.iterations == 1 and result.converged is False and result.stop_reason == "max_iter"


# ---------------------------------------------------------------- LAMM


def test_lamm_without_penalty_reaches_the_newton_solution(rng):
    X = rng.normal(size=(80, 3))
    y = X @ [1.0, 0.0, -2.0] + rng.standard_t(3, size=80)
    objective = first_batch_objective(X, y)
    mask = np.r_[np.ones(3), 0.0]
    lamm_result = lamm(objective, mask, 0.0, max_iter=5000, tol=1e-7)
    newton_result = damped_newton(objective, max_iter=100, tol=1e-12)
    assert lamm_result.converged
    np.testing.assert_allclose(lamm_result.theta, newton_result.theta, atol=1e-5)


def test_lamm_with_a_huge_penalty_zeroes_every_feature_but_not_the_intercept(rng):
    X = rng.normal(size=(50, 3))
    y = X @ [1.0, 2.0, 3.0] + 4.0 + 0.1 * rng.normal(size=50)
    objective = first_batch_objective(X, y)
    result = lamm(objective, np.r_[np.ones(3), 0.0], 1e3, max_iter=2000, tol=1e-6)
    assert result.converged
    assert np.array_equal(result.theta[:3], np.zeros(3))
    assert result.theta[3] == pytest.approx(np.median(y), abs=0.5)


def test_lamm_max_iter_one_is_not_converged(rng):
    X = rng.normal(size=(30, 2))
    y = X @ [3.0, 1.0] + 1.0
    result = lamm(first_batch_objective(X, y), np.r_[1.0, 1.0, 0.0], 0.01, max_iter=1, tol=1e-6)
    assert result.iterations == 1 and result.converged is False and result.stop_reason == "max_iter"


# ---------------------------------------------------------------- the update entry point


def test_renewable_update_returns_a_new_state_and_leaves_the_old_one(rng):
    X = rng.normal(size=(25, 2))
    y = X @ [1.0, 1.0] + rng.normal(size=25)
    state = RenewableHuberState.empty(2, True, "float64")
    state.coefficients[:] = [0.1, 0.2, 0.3]
    state.information[:] = np.eye(3)
    state.n_samples_seen, state.batch_count, state.weight_sum, state.previous_lambda = 10, 1, 10.0, 0.05
    before = state.copy()
    w = np.full(25, 2.0)
    new, diagnostics = renewable_update(OPS, state, X, y, w, config(penalty="l1"))
    assert new is not state
    np.testing.assert_array_equal(state.coefficients, before.coefficients)
    np.testing.assert_array_equal(state.information, before.information)
    assert (state.n_samples_seen, state.batch_count, state.weight_sum) == (10, 1, 10.0)
    assert (new.n_samples_seen, new.batch_count, new.weight_sum) == (35, 2, 60.0)
    assert new.previous_lambda == diagnostics.lambda_value > 0


def test_information_update_uses_kappa_at_the_solution(rng):
    X = rng.normal(size=(40, 2))
    y = X @ [1.0, -1.0] + rng.standard_t(2, size=40)
    w = rng.uniform(0.5, 2, size=40)
    state = RenewableHuberState.empty(2, True, "float64")
    new, diagnostics = renewable_update(OPS, state, X, y, w, config())
    Z = np.c_[X, np.ones(40)]
    r = y - Z @ new.coefficients
    tau, h = 1.345, diagnostics.bandwidth
    kappa = np.clip(np.minimum(0.5 + (r + tau) / (2 * h), 0.5 - (r - tau) / (2 * h)), 0.0, 1.0)
    np.testing.assert_allclose(new.information, Z.T @ (Z * (w * kappa)[:, None]), rtol=1e-12, atol=1e-12)


def test_history_term_applies_only_after_the_first_rows(rng):
    """For "l1" the historical subgradient uses sign(theta_prev); with no rows seen it is off."""
    X = rng.normal(size=(30, 2))
    y = X @ [1.0, -1.0] + rng.normal(size=30)
    empty = RenewableHuberState.empty(2, True, "float64")
    seeded = empty.copy()
    seeded.coefficients[:] = [5.0, -5.0, 0.0]  # a nonzero theta_prev with zero information
    seeded.previous_lambda = 0.5
    a, _ = renewable_update(OPS, seeded, X, y, None, config(penalty="l1", tol=1e-9, max_iter=5000))
    seeded_with_rows = seeded.copy()
    seeded_with_rows.n_samples_seen, seeded_with_rows.weight_sum = 30, 30.0
    b, _ = renewable_update(OPS, seeded_with_rows, X, y, None, config(penalty="l1", tol=1e-9, max_iter=5000))
    c, _ = renewable_update(OPS, empty, X, y, None, config(penalty="l1", tol=1e-9, max_iter=5000))
    np.testing.assert_allclose(a.coefficients, c.coefficients, atol=1e-6)  # no history without rows
    assert np.abs(b.coefficients - c.coefficients).max() > 1e-3  # history pulls along sign(theta_prev)
