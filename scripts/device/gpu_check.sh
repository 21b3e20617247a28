#!/usr/bin/env bash
# The GPU machine's one script: build offline, run the GPU tests (under
# compute-sanitizer where the machine allows it) and the GPU benchmark,
# writing logs and records under $OUT. Run through the device tool from the
# repository root, carrying .whl (the scipy-openblas32 wheel the CPU engine
# needs; the machine has no network) and .shared (a copy of ../shared/golden):
#
#   RH_SOURCE_REVISION=<commit> bash scripts/device/gpu_check.sh [all|build|tests|sanitizer|profile|bench|cuda_wheel]...
#
# RH_SOURCE_REVISION names the commit being run in the records (the machine's
# copy of the tree carries the landed main's git metadata, not this commit).
#
# Sections run in the order given (default: all). A failing section is
# reported and the next one still runs; the exit status is the first failure.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-$ROOT/.device-out}"
mkdir -p "$OUT"
cd "$ROOT"
export PYTHONUNBUFFERED=1
# The package from the tree (the machine's setuptools may predate the one
# pyproject.toml asks for); the native engines are installed into the venv.
export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
# ../shared does not travel: the external corpus comes in the carried .shared/.
[[ -f "$ROOT/.shared/golden/contract_corpus_v1.json" ]] && export RH_EXTERNAL_CORPUS="$ROOT/.shared/golden/contract_corpus_v1.json"
echo "source revision: ${RH_SOURCE_REVISION:-unknown (RH_SOURCE_REVISION not given)}" | tee -a "$OUT/summary.txt"
export RH_SOURCE_REVISION
sections=("$@")
[[ ${#sections[@]} -eq 0 || "${sections[0]}" == "all" ]] && sections=(build tests sanitizer profile bench cuda_wheel)
status=0
# The machine's own python3 (numpy, CuPy, PyTorch, pytest, scikit-build-core,
# nanobind): the engines are installed into it (the machine is discarded).
PY=python3

run() {  # name, command...: logs to $OUT/<name>.log, keeps the first failure
  local name=$1; shift
  echo "=== $name: $*" | tee -a "$OUT/summary.txt"
  local start=$SECONDS
  ( "$@" ) > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$OUT/summary.txt"
  tail -25 "$OUT/$name.log"
  [[ $rc -ne 0 && $status -eq 0 ]] && status=$rc
  return 0
}

CUDA_WHEELS="$ROOT/.device-wheels"
build_cuda_wheel() {
  # The released wheels as a user gets them (issue 16): the cp312 artifacts of
  # `make dist` on the CI-like machine, carried in .whl/dist/, installed into a
  # fresh environment (no compiler, no index; NumPy and NVIDIA's runtime,
  # cuBLAS and cuSOLVER wheels from the image), then `renewable-huber info`
  # and the project corpus's float64 cases replayed on native_cuda, and the
  # whole corpus on native_cpu. Without carried artifacts, the wheel built
  # here is used instead.
  set -e
  local dist="$ROOT/.whl/dist"
  if ! ls "$dist"/renewable_huber_native_cuda-*manylinux*.whl >/dev/null 2>&1; then
    echo "cuda_wheel: no released artifacts in .whl/dist; the wheel built here"
    build_cuda_wheel
    dist="$(mktemp -d)"; cp "$CUDA_WHEELS"/*.whl "$dist/"
    $PY -m pip wheel -q --no-index --no-deps --no-build-isolation -w "$dist" . || true
  fi
  ls -l "$dist" | tee "$OUT/cuda_wheel_files.txt"
  for engine in native_cuda native_cpu; do
    echo "== clean room: $engine"
    RH_CLEAN_ROOM_PYTHON=$PY RH_CLEAN_ROOM_ENGINE=$engine RH_CLEAN_ROOM_OFFLINE=1 \
      bash scripts/release/clean_room_install.sh "$dist"
  done
}

bench() {
  $PY scripts/benchmarks/benchmark_native_cuda.py --rounds 5 --out "$OUT/native_cuda_benchmark.json"
}

for section in "${sections[@]}"; do
  run "$section" "$section"
  if [[ "$section" == "build" && $status -ne 0 ]]; then
    echo "gpu_check: the build failed; nothing else can run" | tee -a "$OUT/summary.txt"; break
  fi
done
echo "gpu_check: status $status" | tee -a "$OUT/summary.txt"
exit $status
