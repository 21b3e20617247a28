"""The shared differential harness: replay a golden corpus through any backend.

Every engine runs the same checks; a new engine adds a backend name to the
parametrisation, not a copy of this code.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from renewable_huber import RenewableHuberRegressor

ROOT = Path(__file__).resolve().parents[1]
PROJECT_CORPUS = ROOT / "tests" / "golden" / "native_core_v1.json"
EXTERNAL_CORPUS = ROOT.parent / "shared" / "golden" / "contract_corpus_v1.json"

#: scalar schedule fields are formed in double precision by every engine
SCHEDULE_RTOL = 1e-12


def load_cases(path: Path) -> list[dict[str, Any]]:
    corpus = json.loads(path.read_text())
    assert corpus["schema"] == "renewable-huber-native-golden"
    assert corpus["schema_version"] == 1
    return corpus["cases"]


def _assert_close(actual: Any, expected: Any, rtol: float, atol: float, what: str) -> None:
    np.testing.assert_allclose(
        np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64), rtol=rtol, atol=atol, err_msg=what
    )


def _route_kind(route: str) -> str:
    """"none" (no system solved), "regular" (lu, cholesky) or "least_squares"."""
    return "regular" if route in ("lu", "cholesky") else route


def replay_case(case: dict[str, Any], backend: str, *, oracle: bool) -> None:
    """Stream the case's batches through ``backend``; compare after every batch.

    ``oracle`` also requires the same convergence flags, stop reasons and
    solve routes (only the NumPy reference itself is held to that). Every
    engine must agree on whether a least-squares solve was needed (the
    fallback flag, and a route of the same kind: "least_squares", or a
    regular one, "lu" or "cholesky") where the corpus records it (the project
    corpus does since amendment 0002; the external one does not). Iteration
    counts are not compared, not even the oracle's: they follow the rounding
    of the machine's BLAS kernels (docs/numerical-contract-notes.md, "The
    corpus across BLAS builds"; ALGORITHM.md: they "need not match across
    engines").
    """
    config = dict(case["config"], backend=backend, device="cpu")
    dtype = np.dtype(config["dtype"])
    rtol, atol = case["rtol"], case["atol"]
    model = RenewableHuberRegressor(**config)
    assert len(case["batches"]) == len(case["expected"]["states"]), (
        f"{case['id']}: {len(case['batches'])} batches but {len(case['expected']['states'])} expected states"
    )
    for index, (batch, expected) in enumerate(zip(case["batches"], case["expected"]["states"])):
        where = f"{case['id']} batch {index + 1} on {backend}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.partial_fit(np.asarray(batch["X"]), np.asarray(batch["y"]), batch.get("sample_weight"))
        state, diagnostics = model.state_, model.diagnostics_
        assert state.coefficients.dtype == dtype and state.information.dtype == dtype, where
        assert state.n_samples_seen == expected["n_samples_seen"], where
        assert state.batch_count == expected["batch_count"], where
        np.testing.assert_allclose(state.weight_sum, expected["weight_sum"], rtol=SCHEDULE_RTOL, err_msg=where)
        np.testing.assert_allclose(
            state.previous_lambda, expected["previous_lambda"], rtol=SCHEDULE_RTOL, err_msg=where
        )
        _assert_close(state.coefficients, expected["coefficients"], rtol, atol, f"{where}: coefficients")
        _assert_close(state.information, expected["information"], rtol, atol, f"{where}: information")
        expected_diagnostics = expected["diagnostics"]
        np.testing.assert_allclose(diagnostics.bandwidth, expected_diagnostics["bandwidth"], rtol=SCHEDULE_RTOL)
        np.testing.assert_allclose(diagnostics.lambda_value, expected_diagnostics["lambda_value"], rtol=SCHEDULE_RTOL)
        _assert_close(diagnostics.objective, expected_diagnostics["objective"], rtol, atol, f"{where}: objective")
        if "used_regularized_fallback" in expected_diagnostics:
            assert diagnostics.used_regularized_fallback == expected_diagnostics["used_regularized_fallback"], where
            assert _route_kind(diagnostics.solve_route) == _route_kind(expected_diagnostics["solve_route"]), where
        if oracle:
            assert diagnostics.converged == expected_diagnostics["converged"], where
            for key in ("stop_reason", "solve_route"):
                if key in expected_diagnostics:
                    assert getattr(diagnostics, key) == expected_diagnostics[key], f"{where}: {key}"
    predictions = model.predict(np.asarray(case["probe_X"]))
    _assert_close(predictions, case["expected"]["predictions"], rtol, atol, f"{case['id']}: predictions")
