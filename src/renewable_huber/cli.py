"""The ``renewable-huber`` command: info (default), demo, fit."""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from ._version import __version__
from .backends.registry import BACKEND_SPECS, availability
from .config import BACKENDS


def _info(args: argparse.Namespace) -> int:
    out = sys.stdout
    out.write(f"renewable-huber {__version__} (Python {platform.python_version()}, NumPy {np.__version__})\n\n")
    out.write(f"{'backend':<12} {'runs on':<10} {'available':<10} how to get it\n")
    for name, spec in BACKEND_SPECS.items():
        available, hint = availability(name)
        runs_on = "cpu" if spec.runs_on == "cpu" else "cuda" if name in ("cupy", "native_cuda") else "cpu, cuda"
        out.write(f"{name:<12} {runs_on:<10} {'yes' if available else 'no':<10} {'' if available else hint}\n")
    out.write(
        "\ndevice policy: backend='auto' with device='cuda' uses the first available of "
        "native_cuda, cupy, torch, tensorflow; otherwise the CPU.\n"
        "CPU policy: backend='auto' on the CPU picks numpy or native_cpu once per stream, on its first "
        "batch, and records why in auto_dispatch_; an explicitly named backend never falls back.\n"
    )
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import DemoSettings, run_demo

    settings = DemoSettings(
        n_samples=args.samples, batch_size=args.batch_size, backend=args.backend, dtype=args.dtype, seed=args.seed
    )
    result = run_demo(settings, sys.stdout)
    return 0 if result["resumed_identical"] else 1


def _fit(args: argparse.Namespace) -> int:
    from .data_sources import TableSource
    from .estimator import RenewableHuberRegressor
    from .progress import ProgressBar

    source = TableSource(
        path=Path(args.data),
        target=args.target,
        features=args.features.split(",") if args.features else None,
        weight_column=args.weight,
        batch_size=args.batch_size,
    )
    if not source.path.exists():
        print(f"renewable-huber fit: no such file: {source.path}", file=sys.stderr)
        return 1
    if args.checkpoint_in:
        model = RenewableHuberRegressor.load(args.checkpoint_in, backend=args.backend if args.backend != "auto" else None)
    else:
        model = RenewableHuberRegressor(
            penalty=args.penalty, tau=args.tau, backend=args.backend, dtype=args.dtype, max_iter=args.max_iter
        )
    features: list[str] = []
    batches = 0
    with ProgressBar(source.total_rows(), "fitting") as bar:
        for features, batch in source.batches():
            frame_like = _Columns(batch.X, features)
            model.partial_fit(frame_like, batch.y, batch.weights)
            batches += 1
            bar.advance(batch.X.shape[0], f"batch {batches}")
    if batches == 0:
        print("renewable-huber fit: the file has no rows", file=sys.stderr)
        return 1
    print(f"\n{model.n_samples_seen_:,} rows in {batches} batches, backend {model.backend_}, penalty {model.penalty}")
    print(f"{'feature':<24} {'coefficient':>14}")
    for name, value in zip(features, np.asarray(model.coef_, dtype=np.float64)):
        print(f"{name:<24} {value:14.6f}")
    print(f"{'(intercept)':<24} {model.intercept_:14.6f}")
    if args.checkpoint_out:
        path = model.save(args.checkpoint_out)
        print(f"checkpoint written to {path}")
    if args.json:
        print(json.dumps({"coef": dict(zip(features, map(float, model.coef_))), "intercept": model.intercept_}))
    if args.summary:
        print()
        print(model.summary())
    return 0


class _Columns:
    """A minimal frame-like wrapper so the estimator records the column names."""

    def __init__(self, values: np.ndarray, columns: Sequence[str]) -> None:
        self._values = values
        self.columns = list(columns)

    def to_numpy(self) -> np.ndarray:
        return self._values


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="renewable-huber", description="Streaming robust (Huber) regression.")
    parser.add_argument("--version", action="version", version=f"renewable-huber {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="{info,demo,fit}")

    commands.add_parser("info", help="version, backends and where they run (default)").set_defaults(handler=_info)

    demo = commands.add_parser("demo", help="stream a built-in synthetic data set with outliers")
    demo.add_argument("--samples", type=int, default=400_000)
    demo.add_argument("--batch-size", type=int, default=20_000)
    demo.add_argument("--backend", default="auto", choices=BACKENDS)
    demo.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    demo.add_argument("--seed", type=int, default=2024)
    demo.set_defaults(handler=_demo)

    fit = commands.add_parser("fit", help="stream a CSV or Parquet file in batches")
    fit.add_argument("data", help="a .csv or .parquet file with a header")
    fit.add_argument("--target", required=True, help="response column")
    fit.add_argument("--features", help="comma-separated feature columns (default: all others)")
    fit.add_argument("--weight", help="frequency-weight column")
    fit.add_argument("--batch-size", type=int, default=65_536)
    fit.add_argument("--penalty", default="none", choices=("none", "l1"))
    fit.add_argument("--tau", type=float, default=1.345)
    fit.add_argument("--max-iter", type=int, default=100)
    fit.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    fit.add_argument("--backend", default="auto", choices=BACKENDS)
    fit.add_argument("--checkpoint-in", help="resume from this checkpoint")
    fit.add_argument("--checkpoint-out", help="write a checkpoint here at the end")
    fit.add_argument("--json", action="store_true", help="also print the coefficients as JSON")
    fit.add_argument("--summary", action="store_true",
                     help="also print the inference summary (standard errors, z, p-values, 95%% intervals)")
    fit.set_defaults(handler=_fit)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", _info)
    try:
        return handler(args)
    except (ValueError, OSError) as exc:
        print(f"renewable-huber {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
