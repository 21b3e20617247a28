#!/usr/bin/env python3
"""How often do random heavy-tailed streams stop unconverged (issue 12,
amendment 0002)? Streams from tests/stress_streams.py, each engine from an
empty state through every batch; per engine: streams with an unconverged
batch, unconverged batches by reason, Newton and LAMM iterations, library
RuntimeWarnings, time.

    .venv/bin/python scripts/stress_robust_solver.py --streams 500
    .venv/bin/python scripts/stress_robust_solver.py --streams 500 --engines native_raw \\
        --native-module-dir /tmp/old_native        # a build from before the change
    .venv/bin/python scripts/stress_robust_solver.py --streams 200 --engines numpy --kkt-streams 60

Engines: numpy (the reference), numpy_v1 (the reference with the solvers of
before amendment 0002, tests/v1_reference.py), native_cpu (through the
estimator), native_raw (the module's classes directly: also runs a build
whose binding ABI the current adapter refuses).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from stress_streams import stress_streams  # noqa: E402

CONFIG_KEYS = ("tau", "penalty", "lambda_scale", "bandwidth_scale", "fit_intercept", "max_iter", "tol", "ridge")


def estimator_runner(backend: str, v1: bool = False):
    from renewable_huber import RenewableHuberRegressor

    def run(params, batches):
        model = RenewableHuberRegressor(backend=backend, device="cpu", **params)
        out = []
        for X, y, w in batches:
            if v1:
                from v1_reference import v1_solvers

                with v1_solvers():
                    model.partial_fit(X, y, w)
            else:
                model.partial_fit(X, y, w)
            d = model.diagnostics_
            out.append((d.converged, getattr(d, "stop_reason", "?"), d.iterations, d.objective))
        return out, model.coef_.copy(), float(np.atleast_1d(model.intercept_)[0])

    return run


def raw_native_runner():
    import _renewable_huber_native_cpu as native

    def run(params, batches):
        dtype = np.dtype(params["dtype"])
        engine = (native.EngineFloat64 if dtype == np.float64 else native.EngineFloat32)(0, "auto")
        config = native.SolverConfig(**{k: params.get(k, DEFAULTS[k]) for k in CONFIG_KEYS})
        p = batches[0][0].shape[1]
        fit_intercept = params["fit_intercept"]
        d = p + int(fit_intercept)
        coefficients, information = np.zeros(d, dtype), np.zeros((d, d), dtype)
        counters = native.StateCounters(p, fit_intercept, 0, 0, 0.0, 0.0)
        out = []
        for X, y, w in batches:
            next_coefficients, next_information = np.empty(d, dtype), np.empty((d, d), dtype)
            diagnostics, counters = engine.update(coefficients, information, counters, X, y, w, config,
                                                  next_coefficients, next_information)
            coefficients, information = next_coefficients, next_information
            reason = getattr(diagnostics, "stop_reason", "converged" if diagnostics.converged else "?")
            out.append((diagnostics.converged, reason, diagnostics.iterations, diagnostics.objective))
        return out, coefficients[:p].copy(), float(coefficients[p]) if fit_intercept else 0.0

    return run


DEFAULTS = {"tau": 1.345, "penalty": "none", "lambda_scale": 1.0, "bandwidth_scale": 1.0, "fit_intercept": True,
            "max_iter": 100, "tol": 1e-6, "ridge": 1e-8}


def summarise(name, records, seconds, runtime_warnings):
    streams_unconverged = sum(1 for batches in records.values() if any(not b[0] for b in batches))
    batches = [b + (penalty,) for (seed, penalty), rows in records.items() for b in rows]
    reasons = Counter(f"{b[4]}/{b[1]}" for b in batches if not b[0])
    lines = [f"{name}: {len(records)} streams, {len(batches)} batches, {seconds:.1f} s",
             f"  streams with an unconverged batch: {streams_unconverged}",
             f"  unconverged batches: {sum(reasons.values())} {dict(reasons)}",
             f"  library RuntimeWarnings: {runtime_warnings}"]
    for penalty, label in (("none", "Newton"), ("l1", "LAMM")):
        its = np.array([b[2] for b in batches if b[4] == penalty])
        if its.size:
            lines.append(f"  {label} iterations over {its.size} batches: total {its.sum()}, median {np.median(its):.0f},"
                         f" p90 {np.percentile(its, 90):.0f}, max {its.max()}")
    print("\n".join(lines), flush=True)


def kkt_report(streams, max_streams):
    """For float64 L1 batches (from the same state): how far the v1 LAMM and
    the amended LAMM (both at the stream's tol, max_iter 3000) stop from a
    reference solution (the amended LAMM at tol 1e-10, up to 20000 iterations),
    and how much higher their penalized objective is."""
    from renewable_huber.config import SolverConfig
    from renewable_huber.core import NumpyOps, renewable_update
    from renewable_huber.core.lamm import lamm
    from renewable_huber.core.objective import SurrogateObjective
    from renewable_huber.core.schedules import bandwidth, lambda_level
    from renewable_huber.core.update import design_matrix, penalty_mask
    from renewable_huber.state import RenewableHuberState
    from v1_reference import v1_lamm

    ops = NumpyOps("float64")
    rows = []
    for stream in [s for s in streams if s.params["penalty"] == "l1"][:max_streams]:
        p = dict(stream.params)
        config = SolverConfig(**{k: p.get(k, DEFAULTS[k]) for k in CONFIG_KEYS if k not in ("max_iter", "tol")},
                              max_iter=3000, tol=1e-6)
        state = RenewableHuberState.empty(stream.batches[0][0].shape[1], p["fit_intercept"])
        for X, y, w in stream.batches:
            X, y = X.astype(np.float64), y.astype(np.float64)
            w = np.ones(len(y)) if w is None else w.astype(np.float64)
            n_features = X.shape[1]
            mask = penalty_mask(ops, n_features, p["fit_intercept"])
            before, after = state.effective_weight, state.effective_weight + float(w.sum())
            lam = lambda_level("l1", p["tau"], p["lambda_scale"], after, n_features)
            objective = SurrogateObjective(
                ops, design_matrix(ops, X, p["fit_intercept"]), y, w, state.coefficients, state.information,
                np.sign(state.coefficients) * mask, state.n_samples_seen > 0, before / after * state.previous_lambda,
                after, ops.scalar(p["tau"]), ops.scalar(bandwidth(p["tau"], p["bandwidth_scale"], after, n_features)),
                ops.scalar(p["ridge"]))
            reference = lamm(objective, mask, lam, 20_000, 1e-10)
            penalized = lambda r: r.objective + lam * float(np.sum(np.abs(r.theta) * mask))
            for name, result in (("v1", v1_lamm(objective, mask, lam, 3000, 1e-6)),
                                 ("amended", lamm(objective, mask, lam, 3000, 1e-6))):
                rows.append((name, float(np.max(np.abs(result.theta - reference.theta))),
                             penalized(result) - penalized(reference)))
            state, _ = renewable_update(ops, state, X, y, w, config)
    for name in ("v1", "amended"):
        distance = np.array([r[1] for r in rows if r[0] == name])
        excess = np.array([r[2] for r in rows if r[0] == name])
        print(f"KKT {name}: {distance.size} float64 L1 batches; max |theta - reference|: median {np.median(distance):.2e},"
              f" p90 {np.percentile(distance, 90):.2e}, max {distance.max():.2e}; penalized objective above the"
              f" reference: median {np.median(excess):.1e}, max {excess.max():.1e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--engines", default="numpy_v1,numpy,native_cpu")
    parser.add_argument("--none-max-iter", type=int, default=100, help="max_iter of penalty none (default 100)")
    parser.add_argument("--l1-max-iter", type=int, default=100, help="max_iter of penalty l1 (default 100)")
    parser.add_argument("--native-module-dir", help="put this directory first on sys.path (native_raw of another build)")
    parser.add_argument("--kkt-streams", type=int, default=0,
                        help="also compare v1 and amended LAMM stops with a tight reference on this many L1 streams")
    args = parser.parse_args(argv)
    if args.native_module_dir:
        sys.path.insert(0, args.native_module_dir)
    streams = stress_streams(args.streams, args.first_seed)
    runners = {"numpy": lambda: estimator_runner("numpy"), "numpy_v1": lambda: estimator_runner("numpy", v1=True),
               "native_cpu": lambda: estimator_runner("native_cpu"), "native_raw": raw_native_runner}
    print(f"streams {args.first_seed}..{args.first_seed + args.streams - 1}; max_iter none {args.none_max_iter}, "
          f"l1 {args.l1_max_iter}")
    for engine in args.engines.split(","):
        run = runners[engine]()
        records, runtime_warnings = {}, 0
        start = time.perf_counter()
        for stream in streams:
            params = dict(stream.params)
            params["max_iter"] = args.l1_max_iter if params["penalty"] == "l1" else args.none_max_iter
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                rows, _, _ = run(params, stream.batches)
            runtime_warnings += sum(issubclass(w.category, RuntimeWarning) for w in caught)
            records[(stream.seed, params["penalty"])] = rows
        summarise(engine, records, time.perf_counter() - start, runtime_warnings)
    if args.kkt_streams:
        kkt_report(streams, args.kkt_streams)
    return 0


if __name__ == "__main__":
    sys.exit(main())
