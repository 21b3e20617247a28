"""Huber loss, score and the smoothed curvature kappa (ALGORITHM.md, "Huber pieces")."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from renewable_huber.core.array_ops import NumpyOps
from renewable_huber.core.huber import huber_loss, huber_score, smoothed_curvature

OPS = NumpyOps("float64")


def test_loss_values():
    r = np.array([0.0, 0.5, -0.5, 1.0, 2.0, -3.0])
    np.testing.assert_allclose(huber_loss(OPS, r, 1.0), [0.0, 0.125, 0.125, 0.5, 1.5, 2.5], rtol=0, atol=1e-15)
    # tau is absolute, not rescaled
    np.testing.assert_allclose(huber_loss(OPS, np.array([10.0]), 2.0), [18.0])  # 2*10 - 2^2/2


def test_score_is_the_clipped_residual():
    r = np.array([-5.0, -1.345, -0.2, 0.0, 0.7, 1.345, 9.0])
    np.testing.assert_array_equal(huber_score(OPS, r, 1.345), [-1.345, -1.345, -0.2, 0.0, 0.7, 1.345, 1.345])


@pytest.mark.parametrize(
    "r,expected",
    [
        (-2.0, 0.0),
        (-1.3, 0.0),  # below -tau - h
        (-1.25, 0.0),  # -tau - h: left ramp starts at 0
        (-1.1, 0.3),
        (-1.0, 0.5),  # -tau: the middle of the ramp
        (-0.9, 0.7),
        (-0.75, 1.0),  # -tau + h
        (0.0, 1.0),
        (0.74, 1.0),
        (0.75, 1.0),  # tau - h
        (0.9, 0.7),
        (1.0, 0.5),
        (1.2, 0.1),
        (1.25, 0.0),  # tau + h
        (1.26, 0.0),
        (50.0, 0.0),
    ],
)
def test_kappa_piecewise_values(r, expected):
    value = smoothed_curvature(OPS, np.array([r]), OPS.scalar(1.0), OPS.scalar(0.25))
    assert value[0] == pytest.approx(expected, abs=1e-12)


def test_kappa_with_default_tau():
    tau, h = 1.345, 0.1
    r = np.array([-tau - h - 1e-9, -tau - 0.05, -tau, -tau + 0.05, 0.3, tau - 0.05, tau, tau + 0.05, tau + h + 1e-9])
    expected = [0.0, 0.25, 0.5, 0.75, 1.0, 0.75, 0.5, 0.25, 0.0]
    np.testing.assert_allclose(smoothed_curvature(OPS, r, tau, h), expected, atol=1e-12)


def test_float32_pieces_stay_float32():
    ops = NumpyOps("float32")
    r = np.linspace(-3, 3, 13, dtype=np.float32)
    tau, h = ops.scalar(1.345), ops.scalar(0.2)
    for piece in (huber_loss(ops, r, tau), huber_score(ops, r, tau), smoothed_curvature(ops, r, tau, h)):
        assert piece.dtype == np.float32


finite = st.floats(min_value=-50, max_value=50, allow_nan=False)
positive = st.floats(min_value=1e-3, max_value=5)


@settings(max_examples=25, deadline=None)
@given(r=finite, tau=positive, fraction=st.floats(min_value=1e-3, max_value=1.0))
@example(r=0.001, tau=0.001, fraction=0.9999999999999999)  # the ramp's end rounding below zero
def test_kappa_is_bounded_symmetric_and_lipschitz(r, tau, fraction):
    h = fraction * tau  # the schedule caps h at tau, so the two ramps never overlap
    points = np.array([r, -r, r + 1e-3])
    k = smoothed_curvature(OPS, points, tau, h)
    # The ramps are formed in floating point: at a ramp's far end (r = tau + h
    # within rounding) 0.5 - (r - tau) / (2h) can come out an ulp below zero
    # (found by hypothesis: r = 0.002, tau = 0.001, h = tau (1 - 1e-16) gives -1.1e-16).
    ulp = 4 * np.finfo(np.float64).eps
    assert np.all((k >= -ulp) & (k <= 1.0 + ulp))
    assert k[0] == pytest.approx(k[1], abs=1e-12)
    assert abs(k[2] - k[0]) <= 1e-3 / (2 * h) + 1e-12
    if abs(r) > tau + h:
        assert k[0] == 0.0
    if abs(r) < tau - h:
        assert k[0] == 1.0


@settings(max_examples=25, deadline=None)
@given(r=finite, tau=positive)
def test_score_is_the_derivative_of_the_loss_and_loss_is_convex(r, tau):
    eps = 1e-6
    points = np.array([r - eps, r + eps])
    loss = huber_loss(OPS, points, tau)
    fd = (loss[1] - loss[0]) / (2 * eps)
    assert fd == pytest.approx(float(huber_score(OPS, np.array([r]), tau)[0]), abs=1e-6)
    # convexity: the loss at the midpoint is below the chord
    a, b = huber_loss(OPS, np.array([r - 1.0, r + 1.0, r]), tau)[[0, 1]], huber_loss(OPS, np.array([r]), tau)[0]
    assert b <= 0.5 * (a[0] + a[1]) + 1e-12
