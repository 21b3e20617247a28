"""The smooth surrogate objective of one batch, its gradient and Newton matrix.

    f(theta) = ( sum_i w_i loss(r_i) + 0.5 D' J_prev D ) / N  -  c * D' s
    grad f   = ( -Z' (w * score(r)) + J_prev D ) / N          -  c * s
    H        = ( Z' diag(w * kappa(r)) Z + J_prev ) / N  +  ridge * I
    M        = ( Z' diag(w) Z + J_prev ) / N  +  ridge * I      (the majorizer)

with r = y - Z theta, D = theta - theta_prev, s = sign(theta_prev) * mask and
c = (Wprev / N) * previous_lambda when the historical subgradient applies
("l1" after the first rows), else 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .array_ops import Array, ArrayOps
from .data_terms import DataTerms


@dataclass
class SurrogateObjective:
    ops: ArrayOps
    data: DataTerms  # the rows' sums (data_terms.py)
    theta_prev: Array
    information_prev: Array  # J_prev
    history_direction: Array  # s = sign(theta_prev) * mask
    uses_history: bool  # penalty "l1" after the first rows
    history_coefficient: float  # c = (Wprev / N) * previous_lambda
    weight_sum: float  # N, accumulated weight including this batch
    ridge: Array
    _majorizer: Optional[Any] = field(default=None, init=False, repr=False)

    def residual(self, theta: Array) -> Any:
        """The handle of the point theta the methods below take (for rows in
        memory, its residual y - Z theta)."""
        return self.data.at(theta)

    def value(self, theta: Array, residual: Any) -> float:
        """f(theta) as a Python float (the line searches compare these)."""
        ops = self.ops
        shift = theta - self.theta_prev
        data_term = self.data.loss_sum(residual) / self.weight_sum
        memory_term = 0.5 * ops.dot(ops.dot(shift, self.information_prev), shift) / self.weight_sum
        value = data_term + memory_term
        if self.uses_history:
            value = value - self.history_coefficient * ops.dot(shift, self.history_direction)
        return ops.to_float(value)

    def gradient(self, theta: Array, residual: Any) -> Array:
        shift = theta - self.theta_prev
        gradient = (self.information_prev @ shift - self.data.score_product(residual)) / self.weight_sum
        if self.uses_history:
            gradient = gradient - self.history_coefficient * self.history_direction
        return gradient

    def newton_matrix(self, residual: Any) -> Array:
        scaled = (self.data.curvature_gram(residual) + self.information_prev) / self.weight_sum
        return self.ops.add_to_diagonal(scaled, self.ridge)

    def majorizer_matrix(self) -> Array:
        """M: the Newton matrix with curvature 1 on every row (amendment 0002).

        Since loss'' <= 1, f(theta + s) <= f(theta) + g's + s' (M - ridge I) s / 2
        for every s, so -M^-1 g decreases f. M does not depend on theta: it is
        formed once per batch, in the Newton matrix's operation order.
        """
        if self._majorizer is None:
            scaled = (self.data.unit_gram() + self.information_prev) / self.weight_sum
            self._majorizer = self.ops.add_to_diagonal(scaled, self.ridge)
        return self._majorizer


