"""Per-batch schedules: the curvature bandwidth h and the L1 level lambda.

Both are scalars formed in double precision (ALGORITHM.md, "Precision");
``weight_sum_after`` is N, the accumulated frequency weight including this batch.
"""

from __future__ import annotations

import math


def _log_features(n_features: int) -> float:
    return math.log(max(n_features, 2))


def bandwidth(tau: float, bandwidth_scale: float, weight_sum_after: float, n_features: int) -> float:
    """h = min(bandwidth_scale / (sqrt(N) * ln(max(p, 2))), tau)."""
    return min(bandwidth_scale / (math.sqrt(weight_sum_after) * _log_features(n_features)), tau)


def lambda_level(
    penalty: str, tau: float, lambda_scale: float, weight_sum_after: float, n_features: int
) -> float:
    """lambda = lambda_scale * tau * sqrt(ln(max(p, 2)) / N) for "l1", else 0."""
    if penalty != "l1":
        return 0.0
    return lambda_scale * tau * math.sqrt(_log_features(n_features) / weight_sum_after)
