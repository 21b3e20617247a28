"""The allowances tests/own_rounding.py gives an engine with a rounding of
its own, checked on the NumPy reference itself: a carried state moved
within the noise floor moves the next batch's objective past the case's
tolerance, and never past objective_allowed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from differential import EXTERNAL_CORPUS, PROJECT_CORPUS, load_cases
from own_rounding import config, noise_floor, objective_allowed

from renewable_huber.backends.numpy_backend import NumpyBackend
from renewable_huber.state import RenewableHuberState


def _case(case_id):
    return next(c for c in load_cases(PROJECT_CORPUS) + load_cases(EXTERNAL_CORPUS) if c["id"] == case_id)


def test_a_carried_state_within_the_floor_moves_the_next_objective_within_its_allowance():
    case = _case("many_small_batches_f64")
    settings = case["config"]
    cfg = config("none", tau=settings["tau"], bandwidth_scale=settings["bandwidth_scale"])
    first, second = case["batches"][:2]
    expected_first, expected_second = case["expected"]["states"][:2]
    backend = NumpyBackend("float64")
    state, diagnostics = backend.update(RenewableHuberState.empty(3, True), np.asarray(first["X"]),
                                        np.asarray(first["y"]), None, cfg)
    np.testing.assert_array_equal(state.coefficients, expected_first["coefficients"])
    floor = noise_floor(state, diagnostics.objective)
    assert objective_allowed(None, None, expected_second) == 0.0
    assert objective_allowed(state, expected_first, expected_second) == 0.0  # the same state carried
    old_tolerance = case["rtol"] * abs(expected_second["diagnostics"]["objective"]) + case["atol"]
    moves = []
    _, directions = np.linalg.eigh(state.information)
    for direction in directions.T:
        for sign in (1.0, -1.0):
            carried = dataclasses.replace(state, coefficients=state.coefficients + sign * floor * direction)
            _, moved = backend.update(carried, np.asarray(second["X"]), np.asarray(second["y"]), None, cfg)
            move = abs(moved.objective - expected_second["diagnostics"]["objective"])
            assert move <= objective_allowed(carried, expected_first, expected_second), (direction, sign)
            moves.append(move)
    assert max(moves) > old_tolerance  # without the allowance a state the floor allows would fail


@pytest.mark.parametrize("key", ["coefficients", "information"])
def test_the_allowance_grows_with_the_carried_difference(key):
    case = _case("many_small_batches_f64")
    expected_first, expected_second = case["expected"]["states"][:2]
    carried = {name: np.asarray(expected_first[name], dtype=np.float64) for name in ("coefficients", "information")}
    allowances = []
    for size in (1e-9, 1e-8, 1e-7):
        moved = dict(carried)
        moved[key] = carried[key] + size
        allowances.append(objective_allowed(moved, expected_first, expected_second))
    assert 0.0 < allowances[0] < allowances[1] < allowances[2]
