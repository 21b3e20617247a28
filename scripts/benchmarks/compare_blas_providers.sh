#!/usr/bin/env bash
# Build the kernel benchmark against each BLAS/LAPACK provider and print
# median times side by side (one BLAS thread, so the library, not threading, is compared).
#   bash scripts/benchmarks/compare_blas_providers.sh [PYTHON]
# Needs Debian's libopenblas-dev for the system provider (apt-get install libopenblas-dev).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${1:-$ROOT/.venv/bin/python}"
OUT="${OUT_DIR:-$ROOT/docs/benchmarks}"
for provider in scipy_openblas32 system_openblas; do
  build="$ROOT/native/build-bench-$provider"
  cmake -S "$ROOT/native" -B "$build" -G Ninja -DPython_EXECUTABLE="$PYTHON" -DCMAKE_BUILD_TYPE=Release \
    -DRH_BUILD_TESTS=OFF -DRH_BUILD_PYTHON=OFF -DRH_BUILD_BENCHMARKS=ON -DRH_BLAS_PROVIDER="$provider" >/dev/null
  cmake --build "$build" -j "${RH_BUILD_JOBS:-2}" >/dev/null
  OPENBLAS_NUM_THREADS=1 "$build/bench/rh_engine_kernels_benchmark" \
    --benchmark_filter='^(blas_syrk|blas_gemm|whole_update)<' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=json >"$OUT/blas_provider_$provider.json"
done
"$PYTHON" - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
load = lambda p: {b["name"][: -len("_median")]: b["real_time"] for b in json.load(open(f"{out}/blas_provider_{p}.json"))["benchmarks"] if b["name"].endswith("_median")}
a, b = load("scipy_openblas32"), load("system_openblas")
print(f"{'benchmark (us)':<44} {'scipy-openblas32':>16} {'system':>10} {'system/scipy':>12}")
for name in a:
    print(f"{name:<44} {a[name]:16.1f} {b[name]:10.1f} {b[name] / a[name]:12.2f}")
PY
