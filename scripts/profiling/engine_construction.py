"""What building and dropping one native CUDA engine costs from Python (a
cold latency-class stream builds one inside its timer): the median over
--repeats of the constructor and of the drop, float64 and float32, 16
features and an intercept (d = 17), beside engine_setup_costs.cu's split of
the calls inside. Prints one JSON object.

    python scripts/profiling/engine_construction.py --repeats 200
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--features", type=int, default=16)
    args = parser.parse_args()
    import _renewable_huber_native_cuda as native

    result = {"repeats": args.repeats, "features": args.features}
    for dtype in ("float64", "float32"):
        native.Engine(0, dtype, args.features, True, False, False, solver_choice=0, block_tiles=0)  # warm-up
        build, drop = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            engine = native.Engine(0, dtype, args.features, True, False, False, solver_choice=0, block_tiles=0)
            middle = time.perf_counter()
            del engine
            build.append(middle - start)
            drop.append(time.perf_counter() - middle)
        result[dtype] = {"build_us": statistics.median(build) * 1e6, "drop_us": statistics.median(drop) * 1e6}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
