#!/usr/bin/env python3
"""Replay golden-corpus cases through an installed renewable-huber (the
clean-room install test: nothing from this repository is imported).

    python replay_golden_case.py CORPUS.json --backend native_cpu [--cases ID ...]

Every batch's coefficients and information, and the final predictions, are
compared with the corpus within each case's rtol/atol (the corpus's own
tolerances, as tests/differential.py holds every engine to them). Exit 1 on
any difference.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np


def replay(case: dict, backend: str) -> list[str]:
    from renewable_huber import RenewableHuberRegressor

    config = dict(case["config"], backend=backend, device="cuda" if backend == "native_cuda" else "cpu")
    model = RenewableHuberRegressor(**config)
    rtol, atol, failures = case["rtol"], case["atol"], []
    for index, (batch, expected) in enumerate(zip(case["batches"], case["expected"]["states"], strict=True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.partial_fit(np.asarray(batch["X"]), np.asarray(batch["y"]), batch.get("sample_weight"))
        for what in ("coefficients", "information"):
            actual = np.asarray(getattr(model.state_, what), np.float64)
            desired = np.asarray(expected[what], np.float64)
            if not np.allclose(actual, desired, rtol=rtol, atol=atol):
                failures.append(f"{case['id']} batch {index + 1}: {what} differ by {np.abs(actual - desired).max():.3g}")
    predictions = model.predict(np.asarray(case["probe_X"]))
    if not np.allclose(predictions, case["expected"]["predictions"], rtol=rtol, atol=atol):
        failures.append(f"{case['id']}: predictions differ")
    return failures


def own_rounding_replay(case: dict, backend: str) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from differential import replay_case

    try:
        replay_case(case, backend, oracle=False, own_rounding=True)
    except AssertionError as error:
        return [f"{case['id']}: {str(error).splitlines()[0]}"]
    return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--backend", default="native_cpu")
    parser.add_argument("--cases", nargs="*", help="case ids (default: every case)")
    parser.add_argument("--installed-only", action="store_true",
                        help="fail if renewable_huber is imported from this checkout's src/")
    parser.add_argument("--own-rounding", action="store_true",
                        help="hold the engine to the test suite's own-rounding allowances (tests/differential.py, "
                             "as tests/backends/test_native_cuda.py does): for an engine that does not replay "
                             "NumPy's arithmetic (native_cuda); the harness comes from this checkout, the package "
                             "from the installation")
    args = parser.parse_args()
    import renewable_huber

    print(f"renewable_huber {renewable_huber.__version__} from {Path(renewable_huber.__file__).parent}")
    if args.installed_only and (Path(__file__).resolve().parents[2] / "src") in Path(renewable_huber.__file__).parents:
        print("renewable_huber was imported from this checkout, not from the installation", file=sys.stderr)
        return 1
    cases = json.loads(Path(args.corpus).read_text())["cases"]
    if args.cases:
        cases = [c for c in cases if c["id"] in set(args.cases)]
        if len(cases) != len(set(args.cases)):
            print(f"unknown case ids among {args.cases}", file=sys.stderr)
            return 1
    run = own_rounding_replay if args.own_rounding else replay
    failures = [f for case in cases for f in run(case, args.backend)]
    for failure in failures:
        print(f"  - {failure}", file=sys.stderr)
    print(f"{len(cases)} cases on {args.backend}: {'FAILED' if failures else 'replayed within tolerance'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
