"""A batch spread over partitions: each partition's share of the data terms,
their sum, and the data terms (data_terms.py) the solvers then run on.

An engine's ``partition_sums(design, y, w, theta, tau, bandwidth, terms)``
gives one partition's :class:`PartitionSums` at theta (the NumPy reference:
:func:`reference_partition_sums`; native_cpu: its ``partition_sums`` entry
point, cpu/partition_sums.hpp). :func:`add_partition_sums` adds them in
partition order, in float64, whatever order they arrived in.
:class:`PartitionedDataTerms` asks a ``source(theta, terms)`` for the
batch's added sums whenever the driver needs a term, so the client holding
only d and d x d quantities takes every Newton/LAMM decision (the Dask
parallel-batch mode, renewable_huber/dask.py).

The terms differ from a single in-memory batch's only in summation order:
the partitions' partial sums are added instead of one sum over all rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from .array_ops import Array, ArrayOps
from .data_terms import LocalDataTerms
from .update import absorb_batch, batch_schedules

#: the terms a partition can form (data_terms.py)
TERMS = ("loss", "score_product", "curvature_gram", "unit_gram", "score_gram")


@dataclass
class PartitionSums:
    """A partition's (or the added batch's) sums; a term not requested is None."""

    rows: int
    weight_sum: float
    loss: Optional[float] = None
    score_product: Optional[np.ndarray] = None  # d, float64
    curvature_gram: Optional[np.ndarray] = None  # d x d, float64
    unit_gram: Optional[np.ndarray] = None  # d x d, float64
    score_gram: Optional[np.ndarray] = None  # d x d, float64


def check_terms(terms: Iterable[str]) -> frozenset:
    chosen = frozenset(terms)
    unknown = sorted(chosen - set(TERMS))
    if unknown:
        raise ValueError(f"unknown partition terms {unknown}; choose from {list(TERMS)}")
    return chosen


def reference_partition_sums(
    ops: ArrayOps, design: Array, y: Array, weights: Array, theta: Array, tau: float, bandwidth: float,
    terms: Iterable[str],
) -> PartitionSums:
    """The NumPy reference's sums over one partition (the data terms of
    data_terms.py over its rows; ``design`` is Z, intercept column included)."""
    terms = check_terms(terms)
    data = LocalDataTerms(ops, design, y, weights, ops.scalar(tau), ops.scalar(bandwidth))
    point = data.at(theta) if terms - {"unit_gram"} else None

    def host(value: Any) -> np.ndarray:
        return np.asarray(value, dtype=np.float64)

    return PartitionSums(
        rows=int(design.shape[0]),
        weight_sum=ops.to_float(ops.sum(weights)),
        loss=ops.to_float(data.loss_sum(point)) if "loss" in terms else None,
        score_product=host(data.score_product(point)) if "score_product" in terms else None,
        curvature_gram=host(data.curvature_gram(point)) if "curvature_gram" in terms else None,
        unit_gram=host(data.unit_gram()) if "unit_gram" in terms else None,
        score_gram=host(data.score_gram(point)) if "score_gram" in terms else None,
    )


def add_partition_sums(parts: Sequence[PartitionSums]) -> PartitionSums:
    """The batch's sums: the partitions' added in the order given, in float64."""
    if not parts:
        raise ValueError("a batch needs at least one partition")

    def added(name: str) -> Any:
        values = [getattr(part, name) for part in parts]
        if any(value is None for value in values):
            return None
        total = values[0] if np.isscalar(values[0]) else np.array(values[0], dtype=np.float64)
        for value in values[1:]:
            total = total + value
        return total

    return PartitionSums(
        rows=sum(part.rows for part in parts),
        weight_sum=float(added("weight_sum")),
        loss=added("loss"),
        score_product=added("score_product"),
        curvature_gram=added("curvature_gram"),
        unit_gram=added("unit_gram"),
        score_gram=added("score_gram"),
    )


#: source(theta as a float64 host array, terms) -> the batch's added sums at theta
SumsSource = Callable[[np.ndarray, frozenset], PartitionSums]


@dataclass
class _Point:
    theta: np.ndarray
    sums: dict = field(default_factory=dict)


class PartitionedDataTerms:
    """The data terms of a batch whose rows the caller never holds: each term
    comes from ``source`` (one round over the partitions). A point's loss
    and score product are asked for together (the next gradient is at the
    point a trial accepts, and both are one O(rows d) pass); the Grams
    alone. ``rounds`` counts the requests."""

    def __init__(self, ops: ArrayOps, source: SumsSource, n_parameters: int) -> None:
        self.ops, self._source, self._d = ops, source, n_parameters
        self._unit_gram: Optional[Array] = None
        self.rounds = 0

    def _fetch(self, point: _Point, terms: frozenset) -> None:
        self.rounds += 1
        sums = self._source(point.theta, terms)
        for name in terms:
            value = getattr(sums, name)
            if value is None:
                raise RuntimeError(f"the partition sums source did not return {name!r}")
            point.sums[name] = value

    def _term(self, point: _Point, name: str, together: frozenset) -> Any:
        if name not in point.sums:
            self._fetch(point, together)
        return point.sums[name]

    def at(self, theta: Array) -> _Point:
        return _Point(np.asarray(theta, dtype=np.float64))

    def loss_sum(self, point: _Point) -> Array:
        return self.ops.scalar(self._term(point, "loss", frozenset({"loss", "score_product"})))

    def score_product(self, point: _Point) -> Array:
        return self.ops.asarray(self._term(point, "score_product", frozenset({"loss", "score_product"})))

    def curvature_gram(self, point: _Point) -> Array:
        return self.ops.asarray(self._term(point, "curvature_gram", frozenset({"curvature_gram"})))

    def closing_grams(self, point: _Point, meat: bool) -> tuple[Array, Any]:
        """The curvature Gram and, with ``meat``, the score Gram at theta_hat: one round."""
        if not meat:
            return self.curvature_gram(point), None
        together = frozenset({"curvature_gram", "score_gram"})
        return (self.ops.asarray(self._term(point, "curvature_gram", together)),
                self.ops.asarray(self._term(point, "score_gram", together)))

    def unit_gram(self) -> Array:
        if self._unit_gram is None:
            point = _Point(np.zeros(self._d))  # any point: the unit Gram does not depend on theta
            self._fetch(point, frozenset({"unit_gram"}))
            self._unit_gram = self.ops.asarray(point.sums["unit_gram"])
        return self._unit_gram


#: sums_at(theta, terms, tau, bandwidth) -> the batch's added sums at theta
PartitionedBatch = Callable[[np.ndarray, frozenset, float, float], PartitionSums]


def partitioned_update(
    ops: ArrayOps,
    state: Any,
    sums_at: PartitionedBatch,
    n_rows: int,
    batch_weight: float,
    n_features: int,
    config: Any,
) -> tuple[Any, Any, int]:
    """One renewable update (update.py's transition) of a batch spread over
    partitions: (next state, diagnostics, rounds over the partitions).
    ``batch_weight`` is the batch's sum of weights (the partitions' added)."""
    schedules = batch_schedules(state, batch_weight, n_features, config)

    def source(theta: np.ndarray, terms: frozenset) -> PartitionSums:
        return sums_at(theta, terms, config.tau, schedules.bandwidth)

    data = PartitionedDataTerms(ops, source, n_features + int(config.fit_intercept))
    next_state, diagnostics = absorb_batch(ops, state, data, n_rows, n_features, schedules, config)
    return next_state, diagnostics, data.rounds
