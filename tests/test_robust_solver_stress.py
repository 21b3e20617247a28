"""Randomized stress test of amendment 0002 (issue 12): a few hundred small
heavy-tailed streams (tests/stress_streams.py: 2..40 features, batches of a
few dozen to a few hundred rows, t noise, 5% gross outliers, frequency
weights, tau 0.6..2.5, ridge 0 / 1e-8 / 1e-4, both penalties, both dtypes).

On every batch, from the same state:
* every engine converges (a minimizer exists on every batch: the Huber loss
  is coercive on the identified directions and flat on the others);
* no RuntimeWarning (overflow, invalid value) comes from the library;
* the engines agree: objectives, and predictions on the batch's weighted
  rows (identified even where the design is rank-deficient and coefficients
  are not);
* the objective is never worse than the v1 solvers' (tests/v1_reference.py)
  beyond the rounding of a step-size stop.

The budgets are generous (max_iter 1000 for Newton, 3000 for LAMM, as the
issue's L1 streams had): the test is about stopping for a good reason, not
about speed; scripts/stress_robust_solver.py reports the default-budget numbers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from renewable_huber.backends import availability
from renewable_huber.backends.numpy_backend import NumpyBackend
from renewable_huber.config import SolverConfig
from renewable_huber.state import RenewableHuberState
from stress_streams import stress_streams
from v1_reference import v1_solvers

STREAMS = 300
#: |F_a - F_b| <= rtol max(|F|) + atol, and predictions within band * (1 + max |prediction|)
OBJECTIVE_TOLERANCE = {"float64": (1e-9, 1e-10), "float32": (1e-4, 1e-5)}
#: float64: the fast path's noise floor (docs/numerical-contract-notes.md); float32: the
#: noise-level stops of LAMM and Newton (the project corpus's float32 L1 band)
PREDICTION_BAND = {("none", "float64"): 1e-6, ("l1", "float64"): 1e-6,
                   ("none", "float32"): 5e-3, ("l1", "float32"): 2e-2}
#: how much worse than the v1 solvers a batch's objective may end (a step-size stop's
#: rounding), relative to it and, for objectives near zero (interpolating fits), to tau^2
NOT_WORSE_RTOL = {"float64": 1e-8, "float32": 1e-5}


#: batches on which the v1 solvers may break down (their objective not a value of f)
#: before the comparison with them is judged to have lost its meaning
MAX_V1_BREAKDOWNS = 3


def not_a_value_of_f(objective, penalty, rounding):
    """Whether a reported objective cannot be a value of f: not finite, or, for
    "none", below f's exact lower bound 0 (f is a weighted sum of Huber losses
    and a quadratic in a positive semidefinite J, ALGORITHM.md) by more than
    `rounding`. The v1 solvers' unguarded solve of a singular
    ridge-0 system can leave coefficients so large that evaluating f there
    keeps only rounding: on the GPU host's NumPy, seed 51's second batch
    (p = 40, 42 rows, ridge 0) reported -2.0e16 where NumPy here reports 17.5
    and the engines 8.27. No engine is measured against such a figure."""
    if not np.isfinite(objective):
        return True
    return penalty == "none" and objective < -rounding


def test_a_figure_below_f_bound_is_not_a_value_of_f():
    assert not_a_value_of_f(-2.035873550498943e16, "none", 1e-8)
    assert not_a_value_of_f(float("nan"), "l1", 1e-8) and not_a_value_of_f(float("inf"), "none", 1e-8)
    assert not not_a_value_of_f(17.510002459866477, "none", 1e-8)
    assert not not_a_value_of_f(-1e-9, "none", 1e-8)  # rounding of an interpolating fit's 0
    assert not not_a_value_of_f(-3.0, "l1", 1e-8)  # the L1 surrogate's linear term has no such bound


def _engine(name, dtype):
    from renewable_huber.backends.registry import BACKEND_SPECS, create_backend

    return create_backend(name, BACKEND_SPECS[name].runs_on, dtype, None)


def _config(params):
    return SolverConfig(
        tau=params["tau"], penalty=params["penalty"], lambda_scale=params["lambda_scale"],
        bandwidth_scale=params["bandwidth_scale"], fit_intercept=params["fit_intercept"],
        max_iter=3000 if params["penalty"] == "l1" else 1000, tol=1e-6, ridge=params["ridge"],
    )


@pytest.mark.skipif(not availability("native_cpu")[0], reason="native_cpu not installed")
def test_every_engine_converges_agrees_and_is_never_worse_than_v1():
    _check_against_numpy("native_cpu", STREAMS)


@pytest.mark.gpu
def test_native_cuda_converges_agrees_and_is_never_worse_than_v1():
    """The CUDA engine on the same streams (its own rounding: the same bands)."""
    _check_against_numpy("native_cuda", STREAMS)


def _float64_gaps(state, X, y, w, config, pa, pb, weighted):
    """How far NumPy's float32 predictions (pa) and the other engine's (pb) are
    from the float64 fit's, on the weighted rows, from the same state."""
    state64, _ = NumpyBackend("float64").update(state, X.astype(np.float64), y.astype(np.float64), w, config)
    p64 = np.asarray(NumpyBackend("float64").predict(state64, X.astype(np.float64)), np.float64)[weighted]
    return float(np.max(np.abs(pa - p64))), float(np.max(np.abs(pb - p64)))


def _check_against_numpy(other, streams):
    """Every batch of `streams` stress streams, from NumPy's state each time:
    both engines converge without a RuntimeWarning, agree on the objective
    and on the predictions at the weighted rows, and end no worse than v1."""
    engine_names = ["numpy", other]
    reference = {dtype: NumpyBackend(dtype) for dtype in ("float64", "float32")}
    failures, v1_breakdowns, batches = [], [], 0
    for stream in stress_streams(streams):
        params, dtype = stream.params, stream.params["dtype"]
        config = _config(params)
        engines = {name: _engine(name, dtype) for name in engine_names}
        p = stream.batches[0][0].shape[1]
        state = RenewableHuberState.empty(p, params["fit_intercept"], dtype)
        for index, (X, y, w) in enumerate(stream.batches):
            where = f"{stream.label}, batch {index + 1}"
            results = {}
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                for name, engine in engines.items():
                    results[name] = engine.update(state, X, y, w, config)
                with v1_solvers():
                    warnings.simplefilter("ignore")
                    _, v1 = reference[dtype].update(state, X, y, w, config)
            for name, (_, diagnostics) in results.items():
                if not diagnostics.converged:
                    failures.append(f"{where}: {name} stopped ({diagnostics.stop_reason})")
            (a, da), (b, db) = results["numpy"], results[other]
            rtol, atol = OBJECTIVE_TOLERANCE[dtype]
            if abs(da.objective - db.objective) > rtol * max(abs(da.objective), abs(db.objective)) + atol:
                failures.append(f"{where}: objectives {da.objective!r} (numpy) and {db.objective!r} ({other})")
            weighted = np.ones(len(y), bool) if w is None else w > 0
            pa = np.asarray(engines["numpy"].predict(a, X), np.float64)[weighted]
            pb = np.asarray(engines[other].predict(b, X), np.float64)[weighted]
            band = PREDICTION_BAND[params["penalty"], dtype] * (1.0 + np.max(np.abs(pa)))
            gap = np.max(np.abs(pa - pb))
            if gap > band:
                # float32 in a flat valley: the minimizer is determined only as far as the
                # objective's rounding allows. The float64 fit from the same state says how
                # far that is: the other engine may not end farther from it than NumPy's
                # float32 fit does (plus the band).
                float64_gap = _float64_gaps(state, X, y, w, config, pa, pb, weighted) if dtype == "float32" else None
                if float64_gap is None or float64_gap[1] > float64_gap[0] + band:
                    detail = "" if float64_gap is None else (
                        f" (from the float64 fit: numpy {float64_gap[0]:.3g}, {other} {float64_gap[1]:.3g})")
                    failures.append(f"{where}: predictions differ by {gap:.3g} > {band:.3g}{detail}")
            allowed = NOT_WORSE_RTOL[dtype] * (abs(v1.objective) + params["tau"] ** 2)
            if not_a_value_of_f(v1.objective, params["penalty"], allowed):
                v1_breakdowns.append(f"{where}: v1 objective {v1.objective!r}")
            else:
                for name, (_, diagnostics) in results.items():
                    if diagnostics.objective > v1.objective + allowed:
                        failures.append(f"{where}: {name} objective {diagnostics.objective!r} worse than v1's "
                                        f"{v1.objective!r}")
            if params["penalty"] == "none":
                for name, (_, diagnostics) in results.items():
                    if not_a_value_of_f(diagnostics.objective, "none", NOT_WORSE_RTOL[dtype] * params["tau"] ** 2):
                        failures.append(f"{where}: {name} objective {diagnostics.objective!r} below f's bound 0")
            state = a
            batches += 1
    assert len(v1_breakdowns) <= MAX_V1_BREAKDOWNS, (
        f"v1 broke down on {len(v1_breakdowns)} of {batches} batches:\n" + "\n".join(v1_breakdowns[:20]))
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:20])
