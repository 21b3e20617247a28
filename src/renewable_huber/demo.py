"""The built-in demonstration: a heavy-tailed stream with gross outliers.

Streams a synthetic regression in batches, then compares the streamed
estimate with the truth, a full-data fit of the same contract and ordinary
least squares, and checks that a mid-stream checkpoint resumes exactly.
"""

from __future__ import annotations

import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, TextIO

import numpy as np

from .estimator import RenewableHuberRegressor
from .progress import ProgressBar


@dataclass(frozen=True)
class DemoSettings:
    n_samples: int = 400_000
    n_features: int = 12
    batch_size: int = 20_000
    outlier_fraction: float = 0.05
    outlier_size: float = 60.0
    seed: int = 2024
    backend: str = "auto"
    dtype: str = "float64"


def synthetic_stream(settings: DemoSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """X ~ N(0, 1), y = X beta + 1.5 + t(2) noise, a fraction of rows shifted by +-outlier_size."""
    rng = np.random.default_rng(settings.seed)
    beta = np.round(rng.uniform(-3.0, 3.0, size=settings.n_features), 2)
    intercept = 1.5
    X = rng.normal(size=(settings.n_samples, settings.n_features))
    y = X @ beta + intercept + rng.standard_t(2.0, size=settings.n_samples)
    outliers = rng.random(settings.n_samples) < settings.outlier_fraction
    y[outliers] += settings.outlier_size * (1.0 + rng.random(int(outliers.sum())))
    return X, y, beta, intercept


def _parameters(model: RenewableHuberRegressor) -> np.ndarray:
    return np.append(np.asarray(model.coef_, dtype=np.float64), model.intercept_)


def run_demo(settings: DemoSettings, out: TextIO) -> dict:
    X, y, beta, intercept = synthetic_stream(settings)
    truth = np.append(beta, intercept)
    params = dict(backend=settings.backend, dtype=settings.dtype, device="cpu")
    n_batches = -(-settings.n_samples // settings.batch_size)
    half = n_batches // 2

    out.write(
        f"renewable-huber demo: {settings.n_samples:,} rows x {settings.n_features} features in "
        f"{n_batches} batches of {settings.batch_size:,}; t(2) noise, "
        f"{settings.outlier_fraction:.0%} gross outliers (+{settings.outlier_size:.0f} to +{2 * settings.outlier_size:.0f})\n"
    )
    streamed = RenewableHuberRegressor(**params)
    started = time.perf_counter()
    checkpoint_dir = Path(tempfile.mkdtemp(prefix="renewable-huber-demo-"))
    checkpoint = checkpoint_dir / "mid_stream.npz"
    resumed: Optional[RenewableHuberRegressor] = None
    with warnings.catch_warnings(record=True) as caught, ProgressBar(settings.n_samples, "streaming") as bar:
        warnings.simplefilter("always")
        for index, start in enumerate(range(0, settings.n_samples, settings.batch_size)):
            stop = start + settings.batch_size
            streamed.partial_fit(X[start:stop], y[start:stop])
            if resumed is not None:
                resumed.partial_fit(X[start:stop], y[start:stop])
            if index + 1 == half:
                streamed.save(checkpoint)
                resumed = RenewableHuberRegressor.load(checkpoint)
            bar.advance(min(stop, settings.n_samples) - start, f"batch {index + 1}/{n_batches}")
    stream_seconds = time.perf_counter() - started
    non_converged = sum(1 for w in caught if "did not converge" in str(w.message))

    started = time.perf_counter()
    full = RenewableHuberRegressor(**params).fit(X, y)
    full_seconds = time.perf_counter() - started
    design = np.column_stack([X, np.ones(len(X))])
    ols = np.linalg.lstsq(design, y, rcond=None)[0]

    estimates = {
        "streamed": _parameters(streamed),
        "full-data fit": _parameters(full),
        "least squares": ols,
    }
    names = [f"x{j}" for j in range(settings.n_features)] + ["intercept"]
    out.write(f"\n{'parameter':>10} {'truth':>9} " + " ".join(f"{k:>14}" for k in estimates) + "\n")
    for j, name in enumerate(names):
        out.write(f"{name:>10} {truth[j]:9.3f} " + " ".join(f"{v[j]:14.4f}" for v in estimates.values()) + "\n")
    errors = {k: float(np.linalg.norm(v - truth)) for k, v in estimates.items()}
    out.write(f"{'|err|_2':>10} {'':9} " + " ".join(f"{errors[k]:14.4f}" for k in estimates) + "\n")
    gap = float(np.linalg.norm(estimates["streamed"] - estimates["full-data fit"]))
    resumed_identical = resumed is not None and np.array_equal(
        resumed.state_.coefficients, streamed.state_.coefficients
    ) and np.array_equal(resumed.state_.information, streamed.state_.information)
    out.write(
        f"\nbackend {streamed.backend_} ({streamed.device_}, {settings.dtype}); "
        f"streamed in {stream_seconds:.2f}s, full-data fit in {full_seconds:.2f}s; "
        f"batches not converged: {non_converged}\n"
        f"streamed vs full-data fit: |diff|_2 = {gap:.2e}; least squares error is "
        f"{errors['least squares'] / max(errors['streamed'], 1e-300):.0f}x the streamed error\n"
        f"checkpoint after batch {half} ({checkpoint.stat().st_size:,} bytes) reloaded and resumed: "
        f"{'bit-identical final state' if resumed_identical else 'DIFFERENT final state'}\n"
    )
    checkpoint.unlink()
    checkpoint_dir.rmdir()
    return {"errors": errors, "streamed_vs_full": gap, "resumed_identical": resumed_identical}
