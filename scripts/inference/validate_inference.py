#!/usr/bin/env python3
"""The large validation runs of inference (issue 27, amendment 0003), each
written to one JSON record (schema "renewable-huber-inference-validation"):

  full-data    20 batches streamed vs one batch of the same rows, N = 200,000,
               t(3) noise and 5% one-sided outliers, every engine usable here:
               the largest relative difference of the standard errors
  statsmodels  RLM(y, Z, M=HuberT(t=tau)) with the scale held at 1.0 on 50,000
               homoscedastic rows: coefficients and standard errors against its
               H1, H2 and H3; and statsmodels' stackloss and star98 data sets
               with tau = 1.345 x RLM's own scale (its default fit)
  coverage     --streams simulated streams (default 10,000) (3,000 rows, t(3) noise, 5% one-sided
               outliers, 10 batches, 5 features): how often each slope's 95%
               interval covers the true slope, with its Monte Carlo standard error

    python scripts/inference/validate_inference.py --out docs/inference/validation_cpu.json
    python scripts/inference/validate_inference.py --parts full-data --engines native_cuda cupy torch_cuda --out ...
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

from renewable_huber import RenewableHuberRegressor, __version__  # noqa: E402
from renewable_huber.backends.registry import availability  # noqa: E402
from benchmark_shape_sweep import environment  # noqa: E402

#: engine name -> (backend, device)
ENGINES = {"numpy": ("numpy", "cpu"), "native_cpu": ("native_cpu", "cpu"), "torch_cpu": ("torch", "cpu"),
           "tensorflow_cpu": ("tensorflow", "cpu"), "native_cuda": ("native_cuda", "cuda"),
           "cupy": ("cupy", "cuda"), "torch_cuda": ("torch", "cuda")}


def heavy_tailed(n, p, seed, outliers=0.05, intercept=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    beta = np.linspace(1.0, -1.0, p)
    y = X @ beta + intercept + rng.standard_t(3, size=n)
    hit = rng.random(n) < outliers
    y[hit] += rng.uniform(10, 50, size=int(hit.sum()))
    return X, y, beta


def streamed(engine, X, y, batches, **params):
    backend, device = ENGINES[engine]
    model = RenewableHuberRegressor(backend=backend, device=device, **params)
    for rows in np.array_split(np.arange(len(y)), batches):
        model.partial_fit(X[rows], y[rows])
    return model


def usable(engine):
    backend, device = ENGINES[engine]
    if not availability(backend)[0]:
        return False, availability(backend)[1]
    try:
        RenewableHuberRegressor(backend=backend, device=device).fit(np.ones((4, 1)) * [[1], [2], [3], [4]],
                                                                     np.arange(4.0))
    except Exception as exc:  # noqa: BLE001 - reported in the record
        return False, f"{type(exc).__name__}: {exc}"
    return True, "usable"


def full_data(engines):
    X, y, _ = heavy_tailed(200_000, 5, seed=3)
    out = {"rows": 200_000, "features": 5, "batches": 20, "engines": {}}
    for engine in engines:
        ok, why = usable(engine)
        if not ok:
            out["engines"][engine] = {"skipped": why}
            continue
        stream, full = streamed(engine, X, y, 20), streamed(engine, X, y, 1)
        ratio = stream.bse_ / full.bse_
        out["engines"][engine] = {"bse_streamed": stream.bse_.tolist(), "bse_full": full.bse_.tolist(),
                                  "max_relative_difference": float(np.max(np.abs(ratio - 1.0)))}
        print(f"full-data {engine}: max |SE ratio - 1| = {np.max(np.abs(ratio - 1.0)):.4f}", flush=True)
    return out


def _rlm_fixed_scale(sm, y, Z, tau, cov):
    return sm.RLM(y, Z, M=sm.robust.norms.HuberT(t=tau)).fit(start_scale=1.0, update_scale=False, cov=cov,
                                                               tol=1e-14, maxiter=500, conv="coefs")


def against_statsmodels():
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    n = 50_000
    X = rng.normal(size=(n, 4))
    y = X @ np.array([1.0, -0.5, 0.25, 2.0]) + 0.7 + rng.standard_t(4, size=n)
    model = RenewableHuberRegressor(backend="numpy", tol=1e-12, max_iter=200).fit(X, y)
    ours = np.concatenate([[model.intercept_], model.coef_])
    Z = sm.add_constant(X)
    record = {"homoscedastic": {"rows": n, "tau": model.tau, "bse": model.bse_.tolist()}}
    for cov in ("H1", "H2", "H3"):
        fit = _rlm_fixed_scale(sm, y, Z, model.tau, cov)
        record["homoscedastic"][cov] = {
            "max_abs_coefficient_difference": float(np.max(np.abs(ours - fit.params))),
            "bse": fit.bse.tolist(),
            "max_relative_bse_difference": float(np.max(np.abs(model.bse_ / fit.bse - 1.0)))}
        print(f"statsmodels {cov}: coef {np.max(np.abs(ours - fit.params)):.2e}, "
              f"SE {np.max(np.abs(model.bse_ / fit.bse - 1.0)):.4f}", flush=True)
    record["datasets"] = {}
    for name, (y_data, X_data) in _datasets(sm).items():
        default = sm.RLM(y_data, sm.add_constant(X_data), M=sm.robust.norms.HuberT()).fit()
        tau = 1.345 * float(default.scale)
        ours = RenewableHuberRegressor(backend="numpy", tau=tau, tol=1e-12, max_iter=500).fit(X_data, y_data)
        coef = np.concatenate([[ours.intercept_], ours.coef_])
        entry = {"rows": int(len(y_data)), "features": int(X_data.shape[1]), "rlm_scale": float(default.scale),
                 "tau": tau, "coef": coef.tolist(), "bse": ours.bse_.tolist()}
        for cov in ("H1", "H2", "H3"):
            fit = _rlm_fixed_scale(sm, y_data, sm.add_constant(X_data), tau, cov)
            entry[cov] = {"coef": fit.params.tolist(), "bse": fit.bse.tolist(),
                          "max_abs_coefficient_difference": float(np.max(np.abs(coef - fit.params))),
                          "bse_ratios": (ours.bse_ / fit.bse).tolist()}
        record["datasets"][name] = entry
        print(f"statsmodels {name}: tau {tau:.4g}, SE ratios vs H1 "
              f"{np.round(np.asarray(entry['H1']['bse_ratios']), 3).tolist()}", flush=True)
    return record


def _datasets(sm):
    stackloss = sm.datasets.stackloss.load_pandas()
    star98 = sm.datasets.star98.load_pandas()
    share = star98.endog["NABOVE"] / (star98.endog["NABOVE"] + star98.endog["NBELOW"])
    return {"stackloss": (stackloss.endog.to_numpy(float), stackloss.exog.to_numpy(float)),
            "star98": (share.to_numpy(float), star98.exog.to_numpy(float))}


def coverage(streams, engine):
    hits = np.zeros(5)
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(streams):
            X, y, beta = heavy_tailed(3000, 5, seed=1_000_000 + seed)
            intervals = streamed(engine, X, y, 10).conf_int(0.05)[1:]
            hits += (intervals[:, 0] <= beta) & (beta <= intervals[:, 1])
    rate = hits / streams
    record = {"streams": streams, "rows": 3000, "batches": 10, "features": 5, "engine": engine,
              "noise": "t(3)", "outliers": "5% one-sided, +U(10, 50)", "level": 0.95,
              "slope_coverage": rate.tolist(), "monte_carlo_se": [math.sqrt(0.95 * 0.05 / streams)] * 5,
              "seconds": time.perf_counter() - started}
    print(f"coverage over {streams} streams: {np.round(rate, 4).tolist()}", flush=True)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", default=["full-data", "statsmodels", "coverage"],
                        choices=["full-data", "statsmodels", "coverage"])
    parser.add_argument("--engines", nargs="+", default=["numpy", "native_cpu", "torch_cpu", "tensorflow_cpu"],
                        choices=sorted(ENGINES))
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    record = {"schema": "renewable-huber-inference-validation", "version": 2, "package_version": __version__,
              "environment": environment(), "command": " ".join(sys.argv)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for part in args.parts:
        if part == "full-data":
            record["full_data"] = full_data(args.engines)
        elif part == "statsmodels":
            record["statsmodels"] = against_statsmodels()
        else:
            engine = "native_cpu" if usable("native_cpu")[0] else "numpy"
            record["coverage"] = coverage(args.streams, engine)
        out.write_text(json.dumps(record, indent=1) + "\n")  # after every part: a stopped run keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
