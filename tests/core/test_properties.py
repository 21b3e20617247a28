"""Statistical and numerical properties of the contract (ALGORITHM.md, API.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from renewable_huber import RenewableHuberRegressor
from renewable_huber.core.array_ops import NumpyOps
from renewable_huber.core.data_terms import LocalDataTerms
from renewable_huber.core.objective import SurrogateObjective

TAU = 1.345


def model(**params):
    return RenewableHuberRegressor(backend="numpy", **params)


def stream(m, batches):
    for batch in batches:
        m.partial_fit(*batch)
    return m


# ---------------------------------------------------------------- least squares limit


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_large_tau_without_ridge_is_least_squares(fit_intercept, rng):
    X = rng.normal(size=(120, 4))
    y = X @ [1.0, -2.0, 0.5, 3.0] + 2.0 + rng.standard_t(2, size=120) * 5  # heavy tails: Huber would differ
    Z = np.c_[X, np.ones(120)] if fit_intercept else X
    expected = np.linalg.lstsq(Z, y, rcond=None)[0]
    fitted = model(tau=1e8, ridge=0.0, fit_intercept=fit_intercept, tol=1e-12).fit(X, y)
    np.testing.assert_allclose(fitted.state_.coefficients, expected, rtol=1e-9, atol=1e-10)
    huber = model(fit_intercept=fit_intercept).fit(X, y)
    assert np.abs(huber.state_.coefficients - expected).max() > 1e-2  # the comparison has teeth


def test_large_tau_stream_equals_full_data_least_squares(rng):
    """With a quadratic loss the renewable update is exact: any batching gives the pooled solution."""
    X = rng.normal(size=(200, 3))
    y = X @ [0.5, 1.5, -1.0] - 1.0 + rng.normal(size=200)
    w = rng.uniform(0.2, 3.0, size=200)
    m = model(tau=1e8, ridge=0.0, tol=1e-12)
    for start, stop in ((0, 17), (17, 90), (90, 91), (91, 200)):
        m.partial_fit(X[start:stop], y[start:stop], sample_weight=w[start:stop])
    Z = np.c_[X, np.ones(200)]
    sw = np.sqrt(w)
    expected = np.linalg.lstsq(Z * sw[:, None], y * sw, rcond=None)[0]
    np.testing.assert_allclose(m.state_.coefficients, expected, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(m.state_.information, Z.T @ (Z * w[:, None]), rtol=1e-12)


# ---------------------------------------------------------------- robustness


def test_an_outlier_barely_moves_the_fit_while_ols_moves_a_lot(rng):
    X = rng.normal(size=(200, 2))
    y = X @ [1.0, -1.0] + 1.0 + 0.3 * rng.normal(size=200)
    y_bad = y.copy()
    y_bad[17] += 1000.0

    def ols(target):
        return np.linalg.lstsq(np.c_[X, np.ones(200)], target, rcond=None)[0]

    clean, dirty = model().fit(X, y).state_.coefficients, model().fit(X, y_bad).state_.coefficients
    assert np.abs(dirty - clean).max() < 0.05
    assert np.abs(ols(y_bad) - ols(y)).max() > 1.0
    np.testing.assert_allclose(dirty, [1.0, -1.0, 1.0], atol=0.15)


def test_collinear_design_without_ridge_stays_finite_and_predicts(rng):
    base = rng.normal(size=(60, 3))
    X = np.c_[base, base[:, 0]]  # duplicated column
    y = base @ [1.0, 2.0, 3.0] + 1.0
    m = model(ridge=0.0).fit(X[:30], y[:30])
    assert np.all(np.isfinite(m.state_.coefficients)) and np.all(np.isfinite(m.state_.information))
    assert m.diagnostics_.used_regularized_fallback is True
    np.testing.assert_allclose(m.predict(X), y, atol=1e-8)
    assert m.coef_[0] + m.coef_[3] == pytest.approx(1.0, abs=1e-8)
    m.partial_fit(X[30:], y[30:])
    assert np.all(np.isfinite(m.state_.coefficients))
    np.testing.assert_allclose(m.predict(X), y, atol=1e-8)


# ---------------------------------------------------------------- weights


def _assert_same_fit(a, b):
    sa, sb = a.state_, b.state_
    np.testing.assert_allclose(sa.coefficients, sb.coefficients, rtol=1e-9, atol=1e-9)
    scale = max(1.0, np.abs(sb.information).max())
    np.testing.assert_allclose(sa.information, sb.information, rtol=1e-9, atol=1e-9 * scale)


def test_integer_weights_equal_repeated_rows(rng):
    batches_weighted, batches_repeated = [], []
    for _ in range(3):
        X = rng.normal(size=(40, 3))
        y = X @ [1.0, -1.0, 0.5] + rng.standard_t(2, size=40)
        w = rng.integers(0, 4, size=40)
        w[0] = 1
        batches_weighted.append((X, y, w))
        batches_repeated.append((np.repeat(X, w, axis=0), np.repeat(y, w)))
    for penalty in ("none", "l1"):
        a = stream(model(penalty=penalty), batches_weighted)
        b = stream(model(penalty=penalty), batches_repeated)
        _assert_same_fit(a, b)
        assert a.state_.weight_sum == pytest.approx(b.state_.weight_sum)
        assert a.n_samples_seen_ == 120 and b.n_samples_seen_ == sum(len(r[1]) for r in batches_repeated)


# The optimum is only resolved to about sqrt(machine epsilon): near it the surrogate is flat to
# rounding, and the plain-decrease line search accepts or refuses the last step on rounding
# noise. Random batches therefore agree to ~1e-8, not always to the 1e-9 of API.md (the fixed
# streams above do); see the test report.
RESOLUTION = 1e-7


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(8, 30),
    p=st.integers(1, 3),
    fit_intercept=st.booleans(),
)
def test_integer_weights_equal_repeated_rows_property(seed, n, p, fit_intercept):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.standard_t(2, size=n)
    w = rng.integers(0, 4, size=n)
    w[rng.integers(n)] = 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny batches may stall; both sides must stall at the same place
        a = model(fit_intercept=fit_intercept).fit(X, y, sample_weight=w)
        b = model(fit_intercept=fit_intercept).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    sa, sb = a.state_, b.state_
    np.testing.assert_allclose(sa.coefficients, sb.coefficients, rtol=RESOLUTION, atol=RESOLUTION)
    scale = max(1.0, np.abs(sb.information).max())
    np.testing.assert_allclose(sa.information, sb.information, rtol=RESOLUTION, atol=RESOLUTION * scale)
    assert sa.weight_sum == sb.weight_sum


def test_zero_weight_rows_change_nothing_but_count(rng):
    X = rng.normal(size=(50, 3))
    y = X @ [1.0, 2.0, 3.0] + rng.standard_t(3, size=50)
    junk_X = rng.normal(size=(7, 3)) * 100
    junk_y = rng.normal(size=7) * 1e4
    for penalty in ("none", "l1"):
        plain = stream(model(penalty=penalty), [(X[:25], y[:25]), (X[25:], y[25:])])
        padded = stream(
            model(penalty=penalty),
            [
                (np.r_[X[:25], junk_X], np.r_[y[:25], junk_y], np.r_[np.ones(25), np.zeros(7)]),
                (np.r_[junk_X[:3], X[25:]], np.r_[junk_y[:3], y[25:]], np.r_[np.zeros(3), np.ones(25)]),
            ],
        )
        np.testing.assert_allclose(padded.state_.coefficients, plain.state_.coefficients, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(padded.state_.information, plain.state_.information, rtol=1e-12, atol=1e-12)
        assert padded.diagnostics_.bandwidth == plain.diagnostics_.bandwidth
        assert padded.diagnostics_.lambda_value == plain.diagnostics_.lambda_value
        assert padded.state_.weight_sum == plain.state_.weight_sum == 50.0
        assert padded.n_samples_seen_ == 60 and plain.n_samples_seen_ == 50


# ---------------------------------------------------------------- ordering


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_permuting_rows_inside_a_batch_changes_nothing_beyond_rounding(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    y = X @ [1.0, -1.0, 2.0] + rng.standard_t(2, size=60)
    w = rng.uniform(0.0, 2.0, size=60)
    order = rng.permutation(30)
    a = stream(model(), [(X[:30], y[:30], w[:30]), (X[30:], y[30:], w[30:])])
    b = stream(model(), [(X[:30][order], y[:30][order], w[:30][order]), (X[30:][::-1], y[30:][::-1], w[30:][::-1])])
    # "rounding" at the resolution of the optimum (see RESOLUTION); batch order moves it by > 1e-5
    np.testing.assert_allclose(b.state_.coefficients, a.state_.coefficients, rtol=RESOLUTION, atol=RESOLUTION)
    np.testing.assert_allclose(b.state_.information, a.state_.information, rtol=RESOLUTION, atol=RESOLUTION * 60)


def test_batch_order_matters(make_data):
    first = make_data(n=100, p=3)[:2]
    second = make_data(n=100, p=3, shift=1.0)[:2]
    a = stream(model(), [first, second])
    b = stream(model(), [second, first])
    assert a.n_samples_seen_ == b.n_samples_seen_
    np.testing.assert_allclose(a.state_.weight_sum, b.state_.weight_sum)
    assert np.abs(a.state_.coefficients - b.state_.coefficients).max() > 1e-5


# ---------------------------------------------------------------- optimality


def _kkt_violation(theta, gradient, lam, p, fit_intercept):
    g, t = gradient[:p], theta[:p]
    nonzero = t != 0
    violation = np.where(nonzero, np.abs(g + lam * np.sign(t)), np.maximum(np.abs(g) - lam, 0.0))
    intercept = abs(gradient[p]) if fit_intercept else 0.0
    return max(violation.max(), intercept), int(np.sum(~nonzero)), int(np.sum(nonzero))


def test_l1_kkt_conditions_hold_on_every_batch(rng):
    """0 in grad f(theta) + lambda * d|theta|_1 (features only) for the surrogate of each batch,
    with the gradient written out independently of the implementation."""
    p = 6
    X = rng.normal(size=(400, p))
    y = X @ [2.0, -1.5, 0.0, 0.0, 0.5, 0.0] + 1.0 + rng.standard_t(3, size=400)
    w = rng.uniform(0.5, 1.5, size=400)
    # tol: the 1e-12 majorisation slack of LAMM lets the iterates oscillate at steps of ~1e-6,
    # so a much smaller tol cannot be met; the default is what the contract guarantees.
    m = model(penalty="l1", max_iter=1000, tol=1e-6)
    previous = None
    zeros_seen = nonzeros_seen = 0
    for start in (0, 200):
        rows = slice(start, start + 200)
        m.partial_fit(X[rows], y[rows], sample_weight=w[rows])
        diag, state = m.diagnostics_, m.state_
        assert diag.converged
        theta = state.coefficients
        Z = np.c_[X[rows], np.ones(200)]
        r = y[rows] - Z @ theta
        N = state.weight_sum
        gradient = -Z.T @ (w[rows] * np.clip(r, -TAU, TAU)) / N
        if previous is not None:
            gradient += previous.information @ (theta - previous.coefficients) / N
            history = np.r_[np.sign(previous.coefficients[:p]), 0.0]
            gradient -= previous.weight_sum / N * previous.previous_lambda * history
        violation, zeros, nonzeros = _kkt_violation(theta, gradient, diag.lambda_value, p, True)
        assert violation < 1e-5, violation
        zeros_seen += zeros
        nonzeros_seen += nonzeros
        previous = state
    assert zeros_seen > 0 and nonzeros_seen > 0  # both branches of the condition were exercised


def test_surrogate_gradient_matches_central_finite_differences(rng):
    n, d = 40, 4
    ops = NumpyOps("float64")
    A = rng.normal(size=(d, d))
    theta_prev = rng.normal(size=d)
    objective = SurrogateObjective(
        ops=ops,
        data=LocalDataTerms(ops, design=np.c_[rng.normal(size=(n, d - 1)), np.ones(n)],
                            response=rng.normal(size=n) * 3, weights=rng.uniform(0.0, 2.0, size=n),
                            tau=ops.scalar(1.1), bandwidth=ops.scalar(0.05)),
        theta_prev=theta_prev,
        information_prev=A @ A.T,
        history_direction=np.r_[np.sign(theta_prev[:-1]), 0.0],
        uses_history=True,
        history_coefficient=0.37,
        weight_sum=55.0,
        ridge=ops.scalar(1e-8),
    )
    for _ in range(3):
        theta = theta_prev + rng.normal(size=d)
        gradient = objective.gradient(theta, objective.residual(theta))
        eps = 1e-6
        numeric = np.empty(d)
        for j in range(d):
            e = np.zeros(d)
            e[j] = eps
            plus, minus = theta + e, theta - e
            numeric[j] = (objective.value(plus, objective.residual(plus)) - objective.value(minus, objective.residual(minus))) / (2 * eps)
        np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-7)


def test_newton_matrix_is_the_hessian_in_the_quadratic_region(rng):
    """Where every residual is inside (-tau + h, tau - h), kappa = 1 and H - ridge*I is the exact Hessian."""
    n, d = 30, 3
    ops = NumpyOps("float64")
    A = rng.normal(size=(d, d))
    objective = SurrogateObjective(
        ops=ops, data=LocalDataTerms(ops, design=np.c_[rng.normal(size=(n, d - 1)), np.ones(n)],
                                     response=rng.normal(size=n), weights=rng.uniform(0.5, 2.0, size=n),
                                     tau=ops.scalar(1e3), bandwidth=ops.scalar(1e-3)),
        theta_prev=np.zeros(d), information_prev=A @ A.T,
        history_direction=np.zeros(d), uses_history=False, history_coefficient=0.0, weight_sum=40.0,
        ridge=ops.scalar(0.25),
    )
    theta = rng.normal(size=d) * 0.1
    H = objective.newton_matrix(objective.residual(theta))
    eps = 1e-5
    numeric = np.empty((d, d))
    for j in range(d):
        e = np.zeros(d)
        e[j] = eps
        numeric[:, j] = (objective.gradient(theta + e, objective.residual(theta + e)) - objective.gradient(theta - e, objective.residual(theta - e))) / (2 * eps)
    np.testing.assert_allclose(H - 0.25 * np.eye(d), numeric, rtol=1e-7, atol=1e-9)


# ---------------------------------------------------------------- precision


def test_float32_stream_computes_in_float32_and_tracks_float64(make_data):
    batches = [make_data(n=80, p=3, outliers=2)[:2] for _ in range(3)]
    single = stream(model(dtype="float32"), batches)
    double = stream(model(dtype="float64"), batches)
    state = single.state_
    assert state.coefficients.dtype == np.float32 and state.information.dtype == np.float32
    assert single.coef_.dtype == np.float32 and single.predict(batches[0][0]).dtype == np.float32
    np.testing.assert_allclose(state.coefficients, double.state_.coefficients, rtol=5e-4, atol=5e-4)
    np.testing.assert_allclose(state.information, double.state_.information, rtol=5e-4, atol=5e-3)
