#!/usr/bin/env bash
# Profiles the C++ CPU engine on one benchmark batch, without Python in the
# process: builds native/bench's update driver (Release with symbols), writes
# the shape class's first batch with the paired benchmark's data generator,
# times the update in a loop and, with --perf, records it with `perf`.
#
#   scripts/profiling/profile_native_cpu_update.sh [class] [dtype] [penalty] [threads] [seconds] [--perf]
#   e.g. scripts/profiling/profile_native_cpu_update.sh latency float32 l1 1 3 --perf
#
# Outputs under native/build-profile/: the driver, the batch files and perf.data.
set -euo pipefail
cd "$(dirname "$0")/../.."
class=${1:-latency} dtype=${2:-float64} penalty=${3:-none} threads=${4:-1} seconds=${5:-3} perf=${6:-}
build=native/build-profile
python=.venv/bin/python
cmake -S native -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O3 -g -DNDEBUG -fno-omit-frame-pointer" \
  -DPython_EXECUTABLE="$PWD/$python" -DRH_BUILD_TESTS=OFF -DRH_BUILD_PYTHON=OFF -DRH_BUILD_BENCHMARKS=ON >/dev/null
cmake --build "$build" --target rh_update_profile_driver >/dev/null
shape=$("$python" - "$class" "$dtype" "$build" <<'PY'
import sys
sys.path.insert(0, "scripts/benchmarks")
from benchmark_native_cpu_paired import CLASSES, make_stream
name, dtype, build = sys.argv[1:]
samples, features, batch = CLASSES[name]
(X, y), *_ = make_stream(samples, features, batch, dtype, 0)[0]
X.tofile(f"{build}/X.bin"); y.tofile(f"{build}/y.bin")
print(X.shape[0], X.shape[1])
PY
)
command=("$build/bench/rh_update_profile_driver" "$build/X.bin" "$build/y.bin" $shape "$dtype" "$penalty" "$threads" "$seconds")
if [[ "$perf" == "--perf" ]]; then
  perf record -q -o "$build/perf.data" -F 10000 -g "${command[@]}"
  perf report -i "$build/perf.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9]' | head -40
else
  "${command[@]}"
fi
