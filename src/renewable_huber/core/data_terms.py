"""The rows' terms of one batch's surrogate objective, and where they come from.

Every row-dependent quantity of an update is one of five sums over the
batch's rows, at a point theta with r = y - Z theta:

    loss_sum        sum_i w_i loss(r_i)           f's data term, times N
    score_product   Z' (w * score(r))             grad f's data term, times -N
    curvature_gram  Z' diag(w * kappa(r)) Z       H's data term; J_new - J_prev
    unit_gram       Z' diag(w) Z                  the majorizer M's data term
    score_gram      Z' diag(w * score(r)^2) Z     S_new - S_prev (the meat, amendment 0003)

:class:`LocalDataTerms` forms them from a batch in memory (the NumPy
reference and the framework backends); a batch spread over partitions adds
the partitions' sums instead (:mod:`.partition_sums`). The surrogate
objective (objective.py) and the solvers see only this interface: ``at``
gives the handle of a point the other methods take (here its residual).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .array_ops import Array, ArrayOps
from .huber import huber_loss, huber_score, smoothed_curvature


def row_weights(ops: ArrayOps, sample_weight: Any, n_rows: int) -> Array:
    """w: the given weights, or ones."""
    return sample_weight if sample_weight is not None else ops.zeros((n_rows,)) + ops.scalar(1.0)


def weighted_gram(ops: ArrayOps, design: Array, row_weights: Array) -> Array:
    """Z' diag(row_weights) Z."""
    return design.T @ (design * row_weights[:, None])


class DataTerms(Protocol):
    def at(self, theta: Array) -> Any: ...
    def loss_sum(self, point: Any) -> Array: ...
    def score_product(self, point: Any) -> Array: ...
    def curvature_gram(self, point: Any) -> Array: ...
    def unit_gram(self) -> Array: ...
    def closing_grams(self, point: Any, meat: bool) -> tuple[Array, Any]: ...


@dataclass
class LocalDataTerms:
    """The five sums over a batch held as arrays of ``ops`` (the point's
    handle is its residual r = y - Z theta)."""

    ops: ArrayOps
    design: Array  # Z, n x d
    response: Array  # y
    weights: Array  # w
    tau: Array
    bandwidth: Array  # h of the batch (kappa's)

    def at(self, theta: Array) -> Array:
        return self.response - self.design @ theta

    def loss_sum(self, residual: Array) -> Array:
        return self.ops.sum(self.weights * huber_loss(self.ops, residual, self.tau))

    def score_product(self, residual: Array) -> Array:
        return self.design.T @ (self.weights * huber_score(self.ops, residual, self.tau))

    def curvature_gram(self, residual: Array) -> Array:
        curvature = self.weights * smoothed_curvature(self.ops, residual, self.tau, self.bandwidth)
        return weighted_gram(self.ops, self.design, curvature)

    def unit_gram(self) -> Array:
        return weighted_gram(self.ops, self.design, self.weights)

    def score_gram(self, residual: Array) -> Array:
        score = huber_score(self.ops, residual, self.tau)
        return weighted_gram(self.ops, self.design, self.weights * (score * score))

    def closing_grams(self, residual: Array, meat: bool) -> tuple[Array, Any]:
        """The closing's Grams at theta_hat: the curvature Gram, and the score
        Gram when ``meat`` (else None)."""
        return self.curvature_gram(residual), self.score_gram(residual) if meat else None
