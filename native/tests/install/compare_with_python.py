"""The installed C++ library's example application against the Python
package on the same data (issue 30): the C++ stream's checkpoint equals the
Python stream's state bit for bit (same engine build), and a stream begun in
one resumes in the other with the bits of one that never stopped.

    python compare_with_python.py STREAM_CSV_BINARY WORK_FOLDER
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from renewable_huber import RenewableHuberRegressor

BATCH = 500


def csv_text(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.17g")  # every double exactly


def run(binary: str, frame: pd.DataFrame, *arguments: str) -> str:
    done = subprocess.run([binary, "--target", "y", "--batch-size", str(BATCH), *arguments], input=csv_text(frame),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"stream_csv failed ({done.returncode}): {done.stderr}")
    return done.stdout


def python_stream(frame: pd.DataFrame, model: RenewableHuberRegressor | None = None) -> RenewableHuberRegressor:
    model = model or RenewableHuberRegressor(backend="native_cpu")
    for start in range(0, len(frame), BATCH):
        part = frame.iloc[start:start + BATCH]
        model.partial_fit(part.drop(columns="y"), part["y"].to_numpy())
    return model


def same_bits(path: Path, expected: RenewableHuberRegressor, what: str) -> None:
    got = RenewableHuberRegressor.load(path, backend="native_cpu").state_
    want = expected.state_
    for field in ("coefficients", "information", "meat"):
        a, b = getattr(got, field), getattr(want, field)
        if not np.array_equal(a, b):
            raise SystemExit(f"{what}: {field} differs (max {np.max(np.abs(a - b))})")
    for field in ("n_samples_seen", "batch_count", "previous_lambda", "weight_sum"):
        if getattr(got, field) != getattr(want, field):
            raise SystemExit(f"{what}: {field} {getattr(got, field)} != {getattr(want, field)}")


def main() -> int:
    binary, work = sys.argv[1], Path(sys.argv[2])
    rng = np.random.default_rng(30)
    n = 4000
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    frame["y"] = frame @ [1.0, -2.0, 0.5] + 0.3 + rng.standard_t(3, size=n)
    frame.loc[rng.choice(n, 80, replace=False), "y"] += 50.0
    half = 2000
    whole = python_stream(frame)

    printed = run(binary, frame, "--checkpoint-out", str(work / "cpp_whole.npz"))
    same_bits(work / "cpp_whole.npz", whole, "the C++ stream")
    coefficients = dict(line.split() for line in printed.splitlines() if line.split()[:1] in (["a"], ["b"], ["c"]))
    if [float(coefficients[name]) for name in "abc"] != list(whole.coef_):
        raise SystemExit(f"printed coefficients {coefficients} differ from Python's {whole.coef_}")

    python_stream(frame.iloc[:half]).save(work / "python_half.npz")
    run(binary, frame.iloc[half:], "--checkpoint-in", str(work / "python_half.npz"),
        "--checkpoint-out", str(work / "resumed_in_cpp.npz"))
    same_bits(work / "resumed_in_cpp.npz", whole, "begun in Python, resumed in C++")

    run(binary, frame.iloc[:half], "--checkpoint-out", str(work / "cpp_half.npz"))
    resumed = python_stream(frame.iloc[half:], RenewableHuberRegressor.load(work / "cpp_half.npz", backend="native_cpu"))
    resumed.save(work / "resumed_in_python.npz")
    same_bits(work / "resumed_in_python.npz", whole, "begun in C++, resumed in Python")
    if list(resumed.feature_names_in_) != ["a", "b", "c"]:
        raise SystemExit(f"feature names {resumed.feature_names_in_}")
    print(f"installed C++ library: {n} rows, the C++ stream, both crossings and the printed coefficients "
          "equal the Python stream bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
