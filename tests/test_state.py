"""RenewableHuberState: the empty state, copies, the legacy weight fallback and validate()."""

from __future__ import annotations

import math

import numpy as np
import pytest

from renewable_huber import ValidationError
from renewable_huber.state import RenewableHuberState

MESSAGES = [
    "state coefficient shape does not match feature metadata",
    "state information shape does not match feature metadata",
    "state counters must be non-negative",
    "state previous lambda must be finite and non-negative",
    "state weight sum must be finite and non-negative",
    "state weight sum must be positive after observing samples",
    "state coefficients must contain only finite values",
    "state information must contain only finite values",
]


def good_state(**changes) -> RenewableHuberState:
    fields = dict(
        coefficients=np.array([0.5, -1.0, 2.0]),
        information=np.eye(3) * 4.0,
        n_samples_seen=4,
        batch_count=2,
        previous_lambda=0.1,
        n_features_in=2,
        fit_intercept=True,
        weight_sum=3.5,
    )
    fields.update(changes)
    return RenewableHuberState(**fields)


@pytest.mark.parametrize("fit_intercept,d", [(True, 4), (False, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_empty_state(fit_intercept, d, dtype):
    state = RenewableHuberState.empty(3, fit_intercept=fit_intercept, dtype=dtype)
    assert state.coefficients.shape == (d,) and state.information.shape == (d, d)
    assert state.coefficients.dtype == np.dtype(dtype) and state.information.dtype == np.dtype(dtype)
    assert not state.coefficients.any() and not state.information.any()
    assert (state.n_samples_seen, state.batch_count, state.previous_lambda, state.weight_sum) == (0, 0, 0.0, 0.0)
    assert state.n_features_in == 3 and state.fit_intercept is fit_intercept
    assert state.n_parameters == d
    state.validate()


def test_copy_is_independent():
    state = good_state()
    clone = state.copy()
    clone.coefficients[0] = 100.0
    clone.information[0, 0] = -7.0
    assert state.coefficients[0] == 0.5 and state.information[0, 0] == 4.0
    assert clone.n_samples_seen == state.n_samples_seen and clone.weight_sum == state.weight_sum


def test_effective_weight_falls_back_to_rows_for_legacy_states():
    assert good_state(weight_sum=None).effective_weight == 4.0
    assert good_state(weight_sum=3.5).effective_weight == 3.5
    assert type(good_state(weight_sum=None).effective_weight) is float


def test_good_states_validate():
    good_state().validate()
    good_state(weight_sum=None).validate()
    good_state(n_samples_seen=0, batch_count=0, weight_sum=0.0, previous_lambda=0.0).validate()
    good_state(coefficients=[0.5, -1.0, 2.0], information=np.eye(3).tolist()).validate()  # array-likes


@pytest.mark.parametrize(
    "changes,message",
    [
        (dict(coefficients=np.zeros(2)), MESSAGES[0]),
        (dict(coefficients=np.zeros((3, 1))), MESSAGES[0]),
        (dict(fit_intercept=False), MESSAGES[0]),
        (dict(n_features_in=3), MESSAGES[0]),
        (dict(information=np.eye(2)), MESSAGES[1]),
        (dict(information=np.zeros(9)), MESSAGES[1]),
        (dict(information=np.zeros((3, 4))), MESSAGES[1]),
        (dict(n_samples_seen=-1), MESSAGES[2]),
        (dict(batch_count=-1), MESSAGES[2]),
        (dict(previous_lambda=-0.1), MESSAGES[3]),
        (dict(previous_lambda=math.nan), MESSAGES[3]),
        (dict(previous_lambda=math.inf), MESSAGES[3]),
        (dict(weight_sum=-1.0), MESSAGES[4]),
        (dict(weight_sum=math.nan), MESSAGES[4]),
        (dict(weight_sum=math.inf), MESSAGES[4]),
        (dict(weight_sum=0.0), MESSAGES[5]),
        (dict(coefficients=np.array([0.0, np.nan, 1.0])), MESSAGES[6]),
        (dict(coefficients=np.array([0.0, -np.inf, 1.0])), MESSAGES[6]),
        (dict(information=np.full((3, 3), np.inf)), MESSAGES[7]),
        (dict(information=np.where(np.eye(3) > 0, np.nan, 0.0)), MESSAGES[7]),
    ],
)
def test_validate_messages(changes, message, raises_exact):
    with raises_exact(ValidationError, message):
        good_state(**changes).validate()


def test_validate_reports_in_the_documented_order(raises_exact):
    """Break everything, then repair one field at a time: the messages come in table order."""
    broken = dict(
        coefficients=np.array([np.nan]),
        information=np.array([[np.nan]]),
        n_samples_seen=-1,
        previous_lambda=math.nan,
        weight_sum=0.0,
    )
    repairs = [
        dict(coefficients=np.array([np.nan, 0.0, 0.0])),
        dict(information=np.full((3, 3), np.nan)),
        dict(n_samples_seen=3),
        dict(previous_lambda=0.0),
        None,  # weight sum 0.0 is finite and non-negative: the positivity rule is next
        dict(weight_sum=3.0),
        dict(coefficients=np.zeros(3)),
        dict(information=np.eye(3)),
    ]
    for message, repair in zip(MESSAGES, repairs):
        if message == MESSAGES[4]:
            with raises_exact(ValidationError, message):
                good_state(**{**broken, "weight_sum": -1.0}).validate()
            continue
        with raises_exact(ValidationError, message):
            good_state(**broken).validate()
        broken.update(repair)
    good_state(**broken).validate()
