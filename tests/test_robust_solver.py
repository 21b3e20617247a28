"""Amendment 0002 (issue 12): the failure paths of the solvers, on every
engine where the data can reach them and on the reference's drivers with
objectives built to fail where they cannot.

Each test here was checked against a mutation that the suite passed before
(docs/amendments/0002-robust-solver.md, "Tests of the failure paths").
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor
from renewable_huber.backends import availability
from renewable_huber.backends.numpy_backend import NumpyBackend
from renewable_huber.config import SolverConfig
from renewable_huber.core import NumpyOps
from renewable_huber.core.lamm import lamm
from renewable_huber.core.newton import damped_newton
from renewable_huber.core.data_terms import LocalDataTerms
from renewable_huber.core.objective import SurrogateObjective
from renewable_huber.backends.registry import BACKEND_SPECS, create_backend
from renewable_huber.core.solver_rules import PLAIN_LAMM_ITERATIONS
from renewable_huber.exceptions import ConvergenceWarning
from renewable_huber.state import RenewableHuberState
from v1_reference import v1_lamm, v1_solvers

OPS = NumpyOps("float64")
NATIVE = availability("native_cpu")[0]
ENGINES = ["numpy", pytest.param("native_cpu", marks=pytest.mark.skipif(not NATIVE, reason="native_cpu absent")),
           pytest.param("native_cuda", marks=pytest.mark.gpu)]


def native_backend(dtype="float64", kernel="auto"):
    from renewable_huber.backends.native_cpu_backend import NativeCpuBackend

    return NativeCpuBackend(dtype, kernel=kernel)


def backends(dtype="float64"):
    """Every engine and kernel path: (name, backend)."""
    out = [("numpy", NumpyBackend(dtype))]
    if NATIVE:
        out += [(f"native_cpu/{kernel}", native_backend(dtype, kernel)) for kernel in ("reference_order", "fast")]
    return out


def config(**changes):
    values = dict(tau=1.345, penalty="none", lambda_scale=1.0, bandwidth_scale=1.0, fit_intercept=True,
                  max_iter=100, tol=1e-6, ridge=1e-8)
    values.update(changes)
    return SolverConfig(**values)


def first_batch_objective(Z, y, *, tau=1.345, h=0.1, ridge=1e-8, cls=SurrogateObjective):
    n, d = Z.shape
    return cls(
        ops=OPS, data=LocalDataTerms(OPS, Z, y, np.ones(n), OPS.scalar(tau), OPS.scalar(h)), theta_prev=np.zeros(d),
        information_prev=np.zeros((d, d)), history_direction=np.zeros(d), uses_history=False,
        history_coefficient=0.0, weight_sum=float(n), ridge=OPS.scalar(ridge),
    )


# ---------------------------------------------------------------- Newton where the line search fails


def noise_free_far_target(n=400, p=40, seed=0):
    """The issue's plainest case: y = X.sum(1) ~ 20, far above tau, no noise."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, p))
    return X, X.sum(1)


def test_the_v1_line_search_is_exhausted_on_a_noise_free_target_far_above_tau():
    X, y = noise_free_far_target()
    with v1_solvers():
        _, diagnostics = NumpyBackend().update(RenewableHuberState.empty(40, True), X, y, None, config())
    assert not diagnostics.converged and diagnostics.stop_reason == "line_search_exhausted"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_majorizer_step_converges_where_the_line_search_is_exhausted(dtype):
    X, y = noise_free_far_target()
    for name, backend in backends(dtype):
        state, diagnostics = backend.update(RenewableHuberState.empty(40, True, dtype), X.astype(dtype),
                                            y.astype(dtype), None, config())
        assert diagnostics.converged and diagnostics.stop_reason == "converged", name
        assert diagnostics.solve_route in ("lu", "cholesky") and not diagnostics.used_regularized_fallback, name
        if name != "numpy":
            assert backend.last_native_diagnostics.majorizer_steps >= 1, name
        # the exact answer: every coefficient 1, intercept 0
        tolerance = 1e-8 if dtype == "float64" else 2e-3
        np.testing.assert_allclose(state.coefficients[:40], 1.0, atol=tolerance, err_msg=name)


def test_the_reference_takes_the_majorizer_step():
    X, y = noise_free_far_target()
    objective = first_batch_objective(np.c_[X, np.ones(len(y))], y, h=0.0019)
    result = damped_newton(objective, 100, 1e-6)
    assert result.converged and result.majorizer_steps >= 1


class _Uphill(SurrogateObjective):
    """Newton's matrix negated: its direction climbs, no halving decreases f."""

    def newton_matrix(self, residual):
        return -super().newton_matrix(residual)


class _Flat(SurrogateObjective):
    """f rises at every point but the start: no step of any kind is accepted."""

    def value(self, theta, residual):
        return 0.0 if np.array_equal(theta, self.theta_prev) else 1.0


class _SingularOnce(SurrogateObjective):
    """The first Newton matrix is singular (least squares), the later ones regular."""

    calls = 0

    def newton_matrix(self, residual):
        type(self).calls += 1
        matrix = super().newton_matrix(residual)
        return np.zeros_like(matrix) if type(self).calls == 1 else matrix


def small_problem(seed=3, n=60, p=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ np.arange(1.0, p + 1) + 0.5 + rng.standard_t(2, size=n)
    return np.c_[X, np.ones(n)], y


def test_an_uphill_newton_direction_is_replaced_by_the_majorizer_step():
    Z, y = small_problem()
    result = damped_newton(first_batch_objective(Z, y, cls=_Uphill), 500, 1e-10)
    expected = damped_newton(first_batch_objective(Z, y), 200, 1e-10)
    assert result.converged and result.stop_reason == "converged"
    assert result.majorizer_steps >= result.iterations - 1
    # majorize-minimize steps, stopped where the (uphill) Newton halving rounds to theta
    np.testing.assert_allclose(result.theta, expected.theta, atol=1e-4)


def test_when_no_step_decreases_f_the_newton_solver_stops_unconverged_with_the_reason():
    Z, y = small_problem()
    result = damped_newton(first_batch_objective(Z, y, cls=_Flat), 100, 1e-8)
    assert result.converged is False
    assert result.stop_reason == "line_search_exhausted"
    assert result.iterations == 1 and result.majorizer_steps == 1
    assert np.array_equal(result.theta, np.zeros(Z.shape[1]))


def test_the_fallback_flag_reports_a_least_squares_solve_of_any_iteration():
    Z, y = small_problem()
    _SingularOnce.calls = 0
    result = damped_newton(first_batch_objective(Z, y, cls=_SingularOnce), 100, 1e-8)
    assert result.converged and result.iterations > 2
    assert result.used_fallback is True  # only the first of its systems was singular


# ---------------------------------------------------------------- LAMM


class _InfiniteAway(SurrogateObjective):
    """f is infinite everywhere but at the start: every majorization trial fails."""

    def value(self, theta, residual):
        return 1.0 if np.array_equal(theta, self.theta_prev) else float("inf")


def test_exhausted_majorization_trials_stop_lamm_unconverged_with_the_reason():
    Z, y = small_problem()
    result = lamm(first_batch_objective(Z, y, cls=_InfiniteAway), np.r_[np.ones(3), 0.0], 0.1, 100, 1e-6)
    assert result.converged is False and result.stop_reason == "majorization_trials_exhausted"
    assert result.iterations == 1 and np.array_equal(result.theta, np.zeros(4))


def correlated_least_squares(rho=0.995, n=200, seed=5):
    """Two nearly collinear columns and tau far above every residual: f is a
    quadratic with condition number ~ (1 + rho) / (1 - rho)."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=n)
    v = rho * u + np.sqrt(1 - rho**2) * rng.normal(size=n)
    Z = np.c_[u, v, np.ones(n)]
    y = Z @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=n)
    return Z, y


def test_a_stalled_lamm_converges_in_its_accelerated_phase_to_the_same_point():
    Z, y = correlated_least_squares()
    mask = np.r_[1.0, 1.0, 0.0]
    objective = first_batch_objective(Z, y, tau=1e6, h=1e-3)
    plain = v1_lamm(objective, mask, 0.0, 400, 1e-7)
    result = lamm(objective, mask, 0.0, 400, 1e-7)
    assert not plain.converged  # v1 needs 1207 iterations here
    assert result.converged and result.stop_reason == "converged"
    assert result.iterations > PLAIN_LAMM_ITERATIONS
    # the least-squares point, within what a step-size stop at condition ~400 resolves
    exact = np.linalg.lstsq(Z, y, rcond=None)[0]
    np.testing.assert_allclose(result.theta, exact, atol=1e-4)
    np.testing.assert_allclose(result.theta, v1_lamm(objective, mask, 0.0, 5000, 1e-7).theta, atol=1e-4)


def test_a_quickly_converging_lamm_is_the_v1_iteration_bit_for_bit():
    Z, y = small_problem()
    objective = first_batch_objective(Z, y)
    mask = np.r_[np.ones(3), 0.0]
    v1 = v1_lamm(objective, mask, 0.05, 200, 1e-6)
    result = lamm(objective, mask, 0.05, 200, 1e-6)
    assert v1.converged and v1.iterations < PLAIN_LAMM_ITERATIONS
    assert result.iterations == v1.iterations and np.array_equal(result.theta, v1.theta)


# ---------------------------------------------------------------- every engine, through the estimator


def test_the_issue_first_batch_with_fewer_quadratic_rows_than_features_converges_on_every_engine():
    """40 features, 53 rows, ridge 0: the Newton matrix is singular; the
    least-squares route is reported, and both engines give the same fit."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(53, 40))
    y = X @ rng.normal(size=40) * 3 + 10 + rng.standard_t(2, size=53)
    predictions = {}
    for ridge in (0.0, 1e-8):
        for name, backend in backends():
            state, diagnostics = backend.update(RenewableHuberState.empty(40, True), X, y, None, config(ridge=ridge))
            where = f"{name} ridge {ridge}"
            assert diagnostics.converged and diagnostics.stop_reason == "converged", where
            if ridge == 0.0:  # with ridge 1e-8 the system is regular to working precision
                assert diagnostics.used_regularized_fallback and diagnostics.solve_route == "least_squares", where
            predictions[where] = backend.predict(state, X)
    reference = predictions["numpy ridge 0.0"]
    for where, values in predictions.items():
        np.testing.assert_allclose(values, reference, rtol=0, atol=1e-6 * np.abs(reference).max(), err_msg=where)


@pytest.mark.parametrize("backend", ENGINES)
def test_a_converging_batch_warns_nothing_and_reports_its_reason(backend):
    X, y = noise_free_far_target(n=120, p=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = RenewableHuberRegressor(backend=backend).fit(X, y)
    assert model.diagnostics_.converged and model.diagnostics_.stop_reason == "converged"


@pytest.mark.parametrize("backend", ENGINES)
@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_max_iter_reached_warns_with_the_reason_and_what_helps(backend, penalty):
    Z, y = correlated_least_squares()
    model = RenewableHuberRegressor(backend=backend, penalty=penalty, max_iter=2, tol=1e-12)
    with pytest.warns(ConvergenceWarning, match=r"stop_reason='max_iter'.*increase max_iter") as record:
        model.fit(Z[:, :2], y)
    assert len(record) == 1
    assert model.diagnostics_.converged is False and model.diagnostics_.stop_reason == "max_iter"
    if penalty == "l1":
        assert "first-order" in str(record[0].message)


def extreme_float32_stream():
    """Float32 features of scale ~3e7 and responses of scale ~0.1: LAMM's
    majorization trials are decided by the rounding of f (40 fail in a row)."""
    rng = np.random.default_rng(1)
    p, n = int(rng.integers(1, 6)), int(rng.integers(5, 60))
    x_scale, y_scale = 10.0 ** rng.uniform(-3, 8), 10.0 ** rng.uniform(-3, 12)
    X = rng.normal(size=(n, p)) * x_scale
    y = rng.normal(size=n) * y_scale + y_scale * rng.uniform(-3, 3)
    return X.astype(np.float32), y.astype(np.float32)


@pytest.mark.parametrize("backend", ENGINES)
def test_exhausted_majorization_trials_warn_with_the_reason_on_every_engine(backend):
    X, y = extreme_float32_stream()
    model = RenewableHuberRegressor(backend=backend, penalty="l1", dtype="float32", max_iter=300)
    with pytest.warns(ConvergenceWarning, match=r"stop_reason='majorization_trials_exhausted'.*increase tol"):
        model.fit(X, y)
    assert model.diagnostics_.converged is False
    assert model.diagnostics_.stop_reason == "majorization_trials_exhausted"
    assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize("backend", ENGINES)
def test_an_exhausted_line_search_warns_with_the_reason(backend, monkeypatch):
    """The warning's text for a stop the engines reach only at the rounding
    floor: the diagnostics are forced, the estimator's message is checked."""
    model = RenewableHuberRegressor(backend=backend)
    X, y = noise_free_far_target(n=50, p=3)
    model.fit(X, y)
    backend_object = model._current_backend()
    real_update = backend_object.update

    def exhausted(*args, **kwargs):
        state, diagnostics = real_update(*args, **kwargs)
        return state, dataclasses.replace(diagnostics, converged=False, stop_reason="line_search_exhausted")

    monkeypatch.setattr(backend_object, "update", exhausted)
    with pytest.warns(ConvergenceWarning, match=r"stop_reason='line_search_exhausted'.*increase tol"):
        model.partial_fit(X, y)


# ---------------------------------------------------------------- the history gate


@pytest.mark.parametrize("backend", ENGINES)
def test_no_history_term_without_rows_even_with_weight_and_lambda(backend):
    """A state with n_samples_seen = 0 but weight_sum > 0, previous_lambda > 0
    and nonzero coefficients: the historical subgradient must not apply
    (ALGORITHM.md: only if n_samples_seen > 0), so the update equals the one
    from the same state with previous_lambda = 0 (no history coefficient)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(60, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=60)
    gated = RenewableHuberState.empty(3, True)
    gated.coefficients[:] = [2.0, -2.0, 1.0, 0.3]
    gated.information[:] = np.eye(4) * 5.0
    gated.weight_sum, gated.previous_lambda = 40.0, 0.8
    without = dataclasses.replace(gated, previous_lambda=0.0)
    engine = create_backend(backend, BACKEND_SPECS[backend].runs_on, "float64", None)
    cfg = config(penalty="l1", max_iter=3000, tol=1e-7)
    a, da = engine.update(gated, X, y, None, cfg)
    b, db = engine.update(without, X, y, None, cfg)
    assert da.converged and db.converged
    np.testing.assert_array_equal(a.coefficients, b.coefficients)
    assert da.objective == db.objective
    # and the gate is what makes the difference: with rows seen, the history pulls
    seen = dataclasses.replace(gated, n_samples_seen=40)
    c, _ = engine.update(seen, X, y, None, cfg)
    assert np.abs(c.coefficients - a.coefficients).max() > 1e-3
