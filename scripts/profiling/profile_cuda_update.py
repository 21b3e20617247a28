"""Where the CUDA engine's time goes: a few steady streams of one shape class
through backend="native_cuda", traced with the PyTorch profiler (CUPTI
records every kernel and copy of the process, ours and cuBLAS's/cuSOLVER's
included; nsys is not on the GPU machine). Prints the device time per kernel
and copy, the host wall time per update, and writes the table and a
metadata record next to it.

    python scripts/profiling/profile_cuda_update.py --class latency --dtype float64 --penalty none --out prof.txt
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

from benchmark_native_cpu_paired import CLASSES, make_stream  # noqa: E402

from renewable_huber import RenewableHuberRegressor  # noqa: E402


def run(model, batches):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(*batches[0])
        for X, y in batches[1:]:
            model.partial_fit(X, y)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="shape_class", default="latency")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--penalty", default="none")
    parser.add_argument("--streams", type=int, default=3)
    parser.add_argument("--max-batches", type=int, default=4)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    import torch
    from torch.profiler import ProfilerActivity, profile

    samples, features, batch = CLASSES[args.shape_class]
    samples = min(samples, batch * args.max_batches)
    batches, _ = make_stream(samples, features, batch, args.dtype, 0)
    model = RenewableHuberRegressor(backend="native_cuda", dtype=args.dtype, penalty=args.penalty)
    run(model, batches)  # warm
    start = time.perf_counter()
    for _ in range(args.streams):
        run(model, batches)
    untraced = (time.perf_counter() - start) / (args.streams * len(batches))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as trace:
        for _ in range(args.streams):
            run(model, batches)
    torch.cuda.synchronize()
    table = trace.key_averages().table(sort_by="self_cuda_time_total", row_limit=30, max_name_column_width=60)
    native = model._current_backend().last_native_diagnostics
    header = (f"{args.shape_class} {args.dtype} {args.penalty}: {untraced * 1e3:.3f} ms per update untraced, "
              f"{len(batches)} batches x {args.streams} streams; last batch {native.iterations} iterations, "
              f"{native.host_syncs} host syncs")
    print(header)
    print(table)
    if args.out:
        Path(args.out).write_text(header + "\n" + table)
        meta = {"shape_class": args.shape_class, "dtype": args.dtype, "penalty": args.penalty,
                "ms_per_update_untraced": untraced * 1e3, "torch": torch.__version__,
                "gpu": torch.cuda.get_device_name(0), "tool": "torch.profiler (CUPTI)"}
        Path(args.out).with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
