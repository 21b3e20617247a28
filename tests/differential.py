"""The shared differential harness: replay a golden corpus through any backend.

Every engine runs the same checks; a new engine adds a backend name to the
parametrisation, not a copy of this code.
"""

from __future__ import annotations

import json
import os
import warnings
from types import SimpleNamespace
from pathlib import Path
from typing import Any, Optional

import numpy as np

from renewable_huber import RenewableHuberRegressor
from renewable_huber.backends.registry import BACKEND_SPECS

ROOT = Path(__file__).resolve().parents[1]
PROJECT_CORPUS = ROOT / "tests" / "golden" / "native_core_v1.json"
# The external contract (../shared beside the checkout; RH_EXTERNAL_CORPUS
# names a copy where ../shared does not travel, e.g. the GPU machine).
EXTERNAL_CORPUS = Path(
    os.environ.get("RH_EXTERNAL_CORPUS", ROOT.parent / "shared" / "golden" / "contract_corpus_v1.json")
)

#: scalar schedule fields are formed in double precision by every engine
SCHEDULE_RTOL = 1e-12


def linear(n, p, seed=0, dtype="float64"):
    """A linear stream with t(3) noise, an intercept of 0.5 and every twentieth row an outlier (+25)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.5 + rng.standard_t(3, size=n)
    y[:: max(1, n // 20)] += 25.0
    return X.astype(dtype), y.astype(dtype)


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


def replay_case(
    case: dict[str, Any],
    backend: str,
    *,
    oracle: bool,
    own_rounding: bool = False,
    device: Optional[str] = None,
    model: Any = None,
) -> None:
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

    ``own_rounding``: an engine that does not replay NumPy's arithmetic (the
    CUDA engine) is held to the case's tolerances widened by what rounding
    decides at the noise floor (tests/own_rounding.py): a float64 "none"
    line search that accepts or rejects a step whose true decrease is below
    one ulp of F moves the coefficients by up to NF = sqrt(2 eps |F| /
    lambda_min(J/N)), and the information through rows in a kappa ramp; its
    N, h and lambda are summed in double, which float32 cases see at ~1e-7
    (ALGORITHM.md, "Precision": scalars may be formed in double). In every
    case the information may differ by what the observed coefficient
    difference moves through the kappa ramp (kappa is 1/(2h)-Lipschitz): a
    float32 line search cannot see decreases below ~eps32 |F|, so two engines
    stop up to ~1e-4 apart there (measured: integer_weights_f32_intercept on
    the H200, Newton step 9e-5 left at the CUDA stop, 3e-7 at NumPy's), within
    the case's coefficient tolerance, and h ~ 0.06 turns that into 2e-3 of J.
    And a batch's objective may differ by what the carried state's observed
    difference moves the batch's minimum by (objective_allowed: a state
    within NF of the reference's moves the next F at first order; measured:
    many_small_batches_f64 batch 2 on the H100's pipeline, 7.4e-9 of 2.03,
    with the five patches of 2026-12-07 applied, which round batch 1 otherwise).

    ``device`` overrides the backend's default device ("cpu" for the torch and
    tensorflow backends on the CPU). ``model``, called with the case's
    config, replaces the estimator with an object that has what is read of it
    here (``partial_fit``, ``state_``, ``diagnostics_``, ``predict`` returning
    host values): a backend driven without the estimator.
    """
    from own_rounding import assert_close_entrywise, information_allowed, objective_allowed


    default_device = "cuda" if BACKEND_SPECS[backend].runs_on == "cuda" else "cpu"
    config = dict(case["config"], backend=backend, device=device or default_device)
    dtype = np.dtype(config["dtype"])
    rtol, atol = case["rtol"], case["atol"]
    schedule_rtol = 1e-6 if own_rounding and dtype == np.float32 else SCHEDULE_RTOL
    floor_allowed = own_rounding and dtype == np.float64 and config["penalty"] == "none"
    model = RenewableHuberRegressor(**config) if model is None else model(config)
    ramp, floor = 0.0, 0.0
    previous_actual = previous_expected = None
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
        np.testing.assert_allclose(state.weight_sum, expected["weight_sum"], rtol=schedule_rtol, err_msg=where)
        np.testing.assert_allclose(
            state.previous_lambda, expected["previous_lambda"], rtol=schedule_rtol, err_msg=where
        )
        expected_diagnostics = expected["diagnostics"]
        information_atol = atol
        if floor_allowed:
            J = np.asarray(expected["information"], dtype=np.float64) / expected["weight_sum"]
            lam = float(np.linalg.eigvalsh((J + J.T) / 2).min())
            objective = abs(expected_diagnostics["objective"])
            floor = float(np.sqrt(2 * np.finfo(np.float64).eps * objective / lam)) if lam > 0 else np.inf
        if own_rounding:
            reference = SimpleNamespace(coefficients=np.asarray(expected["coefficients"]))
            settings = SimpleNamespace(fit_intercept=config["fit_intercept"], tau=config["tau"])
            X = np.asarray(batch["X"], dtype=np.float64)
            ramp = ramp + information_allowed(X, np.asarray(batch["y"]), batch.get("sample_weight"), reference, state,
                                              settings, expected_diagnostics["bandwidth"])
            information_atol = atol + 2 * np.abs(ramp)
        _assert_close(state.coefficients, expected["coefficients"], rtol, atol + floor, f"{where}: coefficients")
        assert_close_entrywise(state.information, expected["information"], rtol, information_atol,
                               f"{where}: information")
        np.testing.assert_allclose(diagnostics.bandwidth, expected_diagnostics["bandwidth"], rtol=schedule_rtol)
        np.testing.assert_allclose(diagnostics.lambda_value, expected_diagnostics["lambda_value"], rtol=schedule_rtol)
        objective_atol = atol
        if own_rounding:
            objective_atol = atol + objective_allowed(previous_actual, previous_expected, expected)
            previous_actual, previous_expected = state, expected
        _assert_close(diagnostics.objective, expected_diagnostics["objective"], rtol, objective_atol,
                      f"{where}: objective")
        if "used_regularized_fallback" in expected_diagnostics:
            assert diagnostics.used_regularized_fallback == expected_diagnostics["used_regularized_fallback"], where
            assert _route_kind(diagnostics.solve_route) == _route_kind(expected_diagnostics["solve_route"]), where
        if oracle:
            assert diagnostics.converged == expected_diagnostics["converged"], where
            for key in ("stop_reason", "solve_route"):
                if key in expected_diagnostics:
                    assert getattr(diagnostics, key) == expected_diagnostics[key], f"{where}: {key}"
    probe = np.asarray(case["probe_X"])
    predictions = model.predict(probe)
    # a coefficient difference within `floor` moves a prediction by at most floor (sum |x| + 1)
    allowed = atol + floor * float(np.max(np.abs(probe).sum(axis=1) + 1.0))
    _assert_close(predictions, case["expected"]["predictions"], rtol, allowed, f"{case['id']}: predictions")
