"""Random heavy-tailed streams of the kind the library exists for (issue 12).

A few to 40 features, batches of a few dozen to a few hundred rows,
t-distributed noise, 5% gross outliers, frequency weights, tau from 0.6 to
2.5, ridge 0 / 1e-8 / 1e-4, both penalties, both dtypes; targets that are
not centred (offsets and scales well above tau) and first batches with
fewer rows than features in the quadratic zone. Used by
tests/test_robust_solver_stress.py and scripts/stress_robust_solver.py;
each stream is a pure function of its seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np


@dataclass
class StressStream:
    seed: int
    params: dict[str, Any]  # RenewableHuberRegressor keyword parameters (no backend)
    batches: list[tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]] = field(repr=False)

    @property
    def label(self) -> str:
        p = self.params
        n_features = self.batches[0][0].shape[1]
        weighted = self.batches[0][2] is not None
        return (f"seed {self.seed}: p={n_features} {p['penalty']} {p['dtype']} tau={p['tau']:.2f} "
                f"ridge={p['ridge']:g} bw={p['bandwidth_scale']:g} weights={weighted} "
                f"rows={[len(b[1]) for b in self.batches]}")


def stress_stream(seed: int) -> StressStream:
    rng = np.random.default_rng([12, seed])
    p = int(rng.integers(2, 41))
    penalty = "l1" if rng.random() < 0.5 else "none"
    dtype = "float32" if rng.random() < 0.3 else "float64"
    fit_intercept = bool(rng.random() < 0.85)
    params = {
        "tau": float(np.round(rng.uniform(0.6, 2.5), 3)),
        "penalty": penalty,
        "lambda_scale": float(rng.choice([0.3, 1.0, 3.0])),
        "bandwidth_scale": float(rng.choice([0.5, 1.0, 4.0])),
        "fit_intercept": fit_intercept,
        "ridge": float(rng.choice([0.0, 1e-8, 1e-4])),
        "dtype": dtype,
    }
    # The target: an offset and a coefficient scale that are often far above tau.
    coef = rng.normal(size=p) * float(rng.choice([0.3, 1.0, 4.0])) * (rng.random(p) < 0.7)
    offset = float(rng.choice([0.0, 3.0, 20.0])) if fit_intercept else 0.0
    uniform_design = rng.random() < 0.4  # uncentred features (the X = rng.random)
    df = float(rng.choice([1.5, 2.5, 5.0]))
    noise_scale = float(rng.choice([0.0, 0.3, 1.0, 3.0]))
    weights_kind = rng.choice(["none", "integers", "fractions"])
    n_batches = int(rng.integers(2, 5))
    batches = []
    for index in range(n_batches):
        if index == 0 and rng.random() < 0.3:
            n = p + int(rng.integers(1, 20))  # about as many rows as features
        else:
            n = int(rng.integers(24, 301))
        X = rng.random((n, p)) if uniform_design else rng.normal(size=(n, p))
        y = X @ coef + offset + noise_scale * rng.standard_t(df, size=n)
        outliers = rng.random(n) < 0.05
        y[outliers] += rng.choice([-1.0, 1.0], size=int(outliers.sum())) * rng.uniform(20, 100, size=int(outliers.sum()))
        w = None
        if weights_kind == "integers":
            w = rng.integers(0, 4, size=n).astype(np.float64)
            w[0] = max(w[0], 1.0)
        elif weights_kind == "fractions":
            w = np.round(rng.uniform(0.0, 2.0, size=n), 3)
            w[rng.random(n) < 0.1] = 0.0
            w[0] = max(w[0], 0.5)
        batches.append((X.astype(dtype), y.astype(dtype), None if w is None else w.astype(dtype)))
    return StressStream(seed, params, batches)


def stress_streams(count: int, first_seed: int = 0) -> list[StressStream]:
    return [stress_stream(seed) for seed in range(first_seed, first_seed + count)]
