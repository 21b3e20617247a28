"""The 1-norm reciprocal condition number from the two norms, decided the
way ``NumpyOps.reciprocal_condition`` decides it (on Python scalars)."""

from __future__ import annotations

import math


def reciprocal_from_norms(norm_a: float, norm_inverse: float) -> float:
    """1 / (||A||_1 ||A^-1||_1), or 0.0 when the product is not finite or not
    positive (what a singular matrix gives: not a failure)."""
    product = float(norm_a) * float(norm_inverse)
    if not (math.isfinite(product) and product > 0.0):
        return 0.0
    return 1.0 / product
