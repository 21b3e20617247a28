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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--backend", default="native_cpu")
    parser.add_argument("--cases", nargs="*", help="case ids (default: every case)")
    parser.add_argument("--dtype", choices=("float64", "float32"),
                        help="only the cases of this dtype (the corpus's float32 tolerances are the CPU's)")
    args = parser.parse_args()
    import renewable_huber

    print(f"renewable_huber {renewable_huber.__version__} from {Path(renewable_huber.__file__).parent}")
    cases = json.loads(Path(args.corpus).read_text())["cases"]
    if args.cases:
        cases = [c for c in cases if c["id"] in set(args.cases)]
        if len(cases) != len(set(args.cases)):
            print(f"unknown case ids among {args.cases}", file=sys.stderr)
            return 1
    if args.dtype:
        cases = [c for c in cases if c["config"].get("dtype", "float64") == args.dtype]
    failures = [f for case in cases for f in replay(case, args.backend)]
    for failure in failures:
        print(f"  - {failure}", file=sys.stderr)
    print(f"{len(cases)} cases on {args.backend}: {'FAILED' if failures else 'replayed within tolerance'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
