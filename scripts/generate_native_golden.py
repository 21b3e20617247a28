#!/usr/bin/env python3
"""Generate or check the project's golden corpus, tests/golden/native_core_v1.json.

The expected values come from the NumPy reference backend (the oracle). The
four cases shared with the external contract corpus keep that corpus's inputs
verbatim (taken from it on --write, from the project corpus on --check); the
project's own cases are drawn from fixed seeds below.

    python scripts/generate_native_golden.py --write   # (re)write the corpus
    python scripts/generate_native_golden.py --check   # regenerate in memory, fail on any difference
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from renewable_huber import RenewableHuberRegressor  # noqa: E402
from renewable_huber.config import PARAMETER_DEFAULTS  # noqa: E402

PROJECT_CORPUS = ROOT / "tests" / "golden" / "native_core_v1.json"
EXTERNAL_CORPUS = ROOT.parent / "shared" / "golden" / "contract_corpus_v1.json"
SHARED_CASE_IDS = (
    "weighted_unpenalized_stream_f64",
    "l1_stream_f64",
    "outliers_no_intercept_f32",
    "rank_deficient_lstsq_f64",
)
TOLERANCES = {"float64": (1e-9, 1e-10), "float32": (5e-4, 5e-5)}


def _config(**overrides: Any) -> dict[str, Any]:
    config = dict(PARAMETER_DEFAULTS, backend="numpy", device="cpu")
    config.update(overrides)
    return config


def _stream(seed: int, sizes: list[int], p: int, *, weights: str = "none", outlier_every: int = 7) -> list[dict]:
    """Consecutive batches of a heavy-tailed linear model with gross response outliers."""
    rng = np.random.default_rng(seed)
    coef = rng.normal(size=p) * (rng.random(p) < 0.6)
    batches = []
    for n in sizes:
        X = rng.normal(size=(n, p))
        y = X @ coef + 0.7 + 0.3 * rng.standard_t(3, size=n)
        y[::outlier_every] += rng.choice([-1.0, 1.0], size=y[::outlier_every].shape) * 25.0
        if weights == "integers":
            w = rng.integers(0, 4, size=n).astype(float)
            w[0] = 2.0
        elif weights == "fractions":
            w = np.round(rng.uniform(0.0, 2.0, size=n), 3)
            w[::5] = 0.0
        else:
            w = None
        batches.append(
            {"X": X.tolist(), "y": y.tolist(), "sample_weight": None if w is None else w.tolist()}
        )
    return batches


def project_cases() -> list[dict]:
    """The project's own cases beyond the shared four."""
    return [
        {
            "id": "l1_weighted_three_batches_f32",
            "description": "Float32 L1 stream, fractional weights with zeros, three batches.",
            "config": _config(penalty="l1", dtype="float32", lambda_scale=0.4, max_iter=400, tol=1e-5),
            "batches": _stream(11, [40, 33, 57], 5, weights="fractions"),
            "probe_seed": 101,
        },
        {
            "id": "wide_l1_no_intercept_f64",
            "description": "More features than rows in each batch, L1 without intercept.",
            "config": _config(penalty="l1", fit_intercept=False, lambda_scale=0.8, max_iter=3000, tol=1e-6),
            "batches": _stream(12, [30, 30], 40),
            "probe_seed": 102,
        },
        {
            "id": "integer_weights_f32_intercept",
            "description": "Float32 unpenalized stream with integer frequency weights.",
            "config": _config(dtype="float32", tau=0.9, max_iter=100, tol=1e-6),
            "batches": _stream(13, [64, 48], 6, weights="integers"),
            "probe_seed": 103,
        },
        {
            "id": "many_small_batches_f64",
            "description": "Six small batches, small tau, scaled bandwidth: long renewable history.",
            "config": _config(tau=0.5, bandwidth_scale=2.5, max_iter=200, tol=1e-10),
            "batches": _stream(14, [9, 7, 12, 8, 10, 11], 3, outlier_every=4),
            "probe_seed": 104,
        },
        {
            "id": "l1_strong_penalty_f64",
            "description": "Heavy L1 level that zeroes most coefficients, weighted rows.",
            "config": _config(penalty="l1", lambda_scale=3.0, max_iter=3000, tol=1e-6),
            "batches": _stream(15, [50, 45], 8, weights="fractions"),
            "probe_seed": 105,
        },
    ]


def replay_expected(config: dict, batches: list[dict], probe_X: np.ndarray) -> dict:
    """Run the NumPy reference over the batches; record state and diagnostics after each."""
    model = RenewableHuberRegressor(**dict(config, backend="numpy", device="cpu"))
    states = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # non-convergence is part of some cases
        for batch in batches:
            weights = batch.get("sample_weight")
            model.partial_fit(np.asarray(batch["X"]), np.asarray(batch["y"]), weights)
            state, diagnostics = model.state_, model.diagnostics_
            states.append(
                {
                    "batch_count": state.batch_count,
                    "coefficients": np.asarray(state.coefficients, dtype=float).tolist(),
                    "information": np.asarray(state.information, dtype=float).tolist(),
                    "n_samples_seen": state.n_samples_seen,
                    "previous_lambda": state.previous_lambda,
                    "weight_sum": state.weight_sum,
                    "diagnostics": {
                        "bandwidth": diagnostics.bandwidth,
                        "converged": diagnostics.converged,
                        "iterations": diagnostics.iterations,
                        "lambda_value": diagnostics.lambda_value,
                        "objective": diagnostics.objective,
                    },
                }
            )
    predictions = np.asarray(model.predict(probe_X), dtype=float).tolist()
    return {"states": states, "predictions": predictions}


def build_corpus(shared_source: dict) -> dict:
    by_id = {case["id"]: case for case in shared_source["cases"]}
    cases = []
    for case_id in SHARED_CASE_IDS:
        source = by_id[case_id]
        case = {key: source[key] for key in ("id", "description", "config", "batches", "probe_X", "rtol", "atol")}
        case["expected"] = replay_expected(case["config"], case["batches"], np.asarray(case["probe_X"]))
        cases.append(case)
    for spec in project_cases():
        p = len(spec["batches"][0]["X"][0])
        probe_X = np.random.default_rng(spec.pop("probe_seed")).normal(size=(3, p))
        rtol, atol = TOLERANCES[spec["config"]["dtype"]]
        if spec["config"]["penalty"] == "l1" and spec["config"]["dtype"] == "float64":
            # a first-order solver stopped by a step-size rule: as loose as the external L1 case
            rtol, atol = 3e-7, 3e-8
        case = dict(spec, probe_X=probe_X.tolist(), rtol=rtol, atol=atol)
        case["expected"] = replay_expected(case["config"], case["batches"], probe_X)
        cases.append(case)
    return {
        "schema": "renewable-huber-native-golden",
        "schema_version": 1,
        "oracle": {
            "implementation": "renewable_huber NumPy backend",
            "role": "Project corpus: the external contract's four cases plus the project's own",
        },
        "cases": cases,
    }


def serialise(corpus: dict) -> str:
    return json.dumps(corpus, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write tests/golden/native_core_v1.json")
    mode.add_argument("--check", action="store_true", help="regenerate in memory and compare")
    parser.add_argument("--external", type=Path, default=EXTERNAL_CORPUS, help="external corpus for --write")
    args = parser.parse_args(argv)

    if args.write:
        source_path = args.external if args.external.exists() else PROJECT_CORPUS
        corpus = build_corpus(json.loads(source_path.read_text()))
        PROJECT_CORPUS.parent.mkdir(parents=True, exist_ok=True)
        PROJECT_CORPUS.write_text(serialise(corpus))
        print(f"wrote {PROJECT_CORPUS.relative_to(ROOT)} ({len(corpus['cases'])} cases, shared inputs from {source_path})")
        return 0

    committed_text = PROJECT_CORPUS.read_text()
    regenerated_text = serialise(build_corpus(json.loads(committed_text)))
    if regenerated_text != committed_text:
        committed = json.loads(committed_text)
        regenerated = json.loads(regenerated_text)
        for old, new in zip(committed["cases"], regenerated["cases"]):
            if old != new:
                print(f"golden case differs: {old['id']}", file=sys.stderr)
        print("golden corpus check FAILED: regenerate with --write only with a documented reason", file=sys.stderr)
        return 1
    print(f"golden corpus check passed ({len(json.loads(committed_text)['cases'])} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
