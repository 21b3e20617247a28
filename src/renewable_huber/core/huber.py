"""Huber loss, score (its derivative) and the smoothed curvature kappa.

``tau`` is absolute (not rescaled); ``h`` is the batch bandwidth. The gradient
uses the ordinary score; every curvature (Newton matrix and information
update) uses the smoothed kappa of Jiang, Liang and Yu (2024, eq. 2.1).
"""

from __future__ import annotations

from .array_ops import Array, ArrayOps


def huber_loss(ops: ArrayOps, r: Array, tau: Array) -> Array:
    # The quadratic piece is formed from r clipped to [-tau, tau] (equal to r
    # wherever that piece is selected): `where` evaluates both pieces, and
    # r * r of a far trial point would overflow where it is not used.
    a = ops.abs(r)
    inner = ops.clip(r, -tau, tau)
    return ops.where(a <= tau, 0.5 * inner * inner, tau * a - 0.5 * tau * tau)


def huber_score(ops: ArrayOps, r: Array, tau: Array) -> Array:
    return ops.clip(r, -tau, tau)


def smoothed_curvature(ops: ArrayOps, r: Array, tau: Array, h: Array) -> Array:
    """kappa(r): 1 inside (-tau+h, tau-h), 0 beyond tau+h, linear ramps between."""
    zero, one = ops.scalar(0.0), ops.scalar(1.0)
    # The ramps are formed from r clipped to [-tau-h, tau+h] (equal to r
    # wherever a ramp is selected), so a far residual cannot overflow them.
    near = ops.clip(r, -tau - h, tau + h)
    left_ramp = 0.5 + (near + tau) / (2 * h)
    right_ramp = 0.5 - (near - tau) / (2 * h)
    return ops.where(
        r < -tau - h,
        zero,
        ops.where(
            r <= -tau + h,
            left_ramp,
            ops.where(r < tau - h, one, ops.where(r <= tau + h, right_ramp, zero)),
        ),
    )
