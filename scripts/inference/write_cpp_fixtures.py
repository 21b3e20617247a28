#!/usr/bin/env python3
"""The fixtures that tie the C++ library's inference (native/api/inference.cpp)
to this package's (inference.py): for each case a format 3 checkpoint written
by the NumPy reference, and the statistics inference.py computes from it
(names, params, cov, bse, z, p, 95% and 90% intervals, rank), as JSON.
native/tests/api/test_regressor.cpp loads both; tests/test_inference_fixtures.py
recomputes the JSON from the checkpoints, so the two cannot drift apart.

    python scripts/inference/write_cpp_fixtures.py tests/fixtures/inference
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from renewable_huber import RenewableHuberRegressor  # noqa: E402


def _batches(columns: list[str], duplicate: bool, seed: int):
    import pandas as pd

    rng = np.random.default_rng(seed)
    for k in range(3):
        X = rng.normal(size=(400, 3)) + 0.2 * k
        if duplicate:
            X[:, 2] = X[:, 1]  # the third column repeats the second: J is singular
        y = X @ [0.8, -1.5, 0.4] + 0.7 + rng.standard_t(3, size=400)
        y[rng.choice(400, size=8, replace=False)] += 40.0
        w = rng.uniform(0.5, 2.0, size=400)
        yield pd.DataFrame(X, columns=columns), y, w


CASES = {
    "weighted_named": dict(columns=["a", "b", "c"], duplicate=False, seed=3),
    "singular_duplicate_column": dict(columns=["a", "b", "b_again"], duplicate=True, seed=4),
}


def statistics_of(model: RenewableHuberRegressor) -> dict:
    """What the C++ side must reproduce, from the model's state."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inference = model._inference()
        intervals = {str(alpha): inference.conf_int(alpha).tolist() for alpha in (0.05, 0.1)}
    clean = lambda values: [None if not np.isfinite(v) else float(v) for v in np.ravel(values)]  # noqa: E731
    return {"names": list(inference.names), "params": clean(inference.params), "cov": clean(inference.cov),
            "bse": clean(inference.bse), "tvalues": clean(inference.tvalues), "pvalues": clean(inference.pvalues),
            "conf_int": {alpha: [clean(pair) for pair in pairs] for alpha, pairs in intervals.items()},
            "information_rank": int(inference.information_rank), "weight_sum": float(inference.weight_sum)}


def write(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, case in CASES.items():
        model = RenewableHuberRegressor(backend="numpy")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for X, y, w in _batches(**case):
                model.partial_fit(X, y, w)
        model.save(directory / f"{name}.npz")
        (directory / f"{name}.json").write_text(json.dumps(statistics_of(model), indent=1) + "\n")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "inference"))
