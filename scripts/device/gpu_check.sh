#!/usr/bin/env bash
# The GPU machine's one script: build offline, run the GPU tests (under
# compute-sanitizer where the machine allows it) and the GPU benchmark,
# writing logs and records under $OUT. Run through the device tool from the
# repository root, carrying .whl (the scipy-openblas32 wheel the CPU engine
# needs; the machine has no network) and .shared (a copy of ../shared/golden):
#
#   RH_SOURCE_REVISION=<commit> bash scripts/device/gpu_check.sh [all|build|build_cpu|build_cuda|tests|tests_cuda|sanitizer|leaks|inference|profile|bench|block_solver|cuda_wheel|sweep|dask_tests|dask_scaling|ab_builds|cpu_ab_builds|cpu_engines|cpu_scaling|phases|apply_pending|floor|ladder|ladder_profile|kernel_detail|host_profile|setup_costs|ctest_cuda|sanitizer_gtests|grid_sum_probe|bits|solver_paths|inverse_probe|route_ab|route_profile|results_ab|results_profile|pack]...
#
# ab_builds (not in "all"; after build): this tree's CUDA engine against
# RH_BASELINE_REVISION's, paired, each in its own process; cpu_ab_builds the
# same for the CPU engine (after build or build_cpu). cpu_engines (not
# in "all"; after build): issue 29's CPU tables against NumPy and the
# predecessor's wheel (carried in .whl/predecessor).
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
[[ ${#sections[@]} -eq 0 || "${sections[0]}" == "all" ]] && sections=(build tests sanitizer leaks inference profile bench block_solver cuda_wheel sweep dask_tests dask_scaling)
status=0
# The records are named after the card that ran them (h200, h100, ...): the
# device tool may lend an H100 where an H200 was asked for.
GPU_TAG="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -oiE 'h[0-9]{3}' | head -1 | tr 'A-Z' 'a-z')"
GPU_TAG="${GPU_TAG:-gpu}"
echo "gpu: $GPU_TAG" | tee -a "$OUT/summary.txt"
# The machine's own python3 (numpy, CuPy, PyTorch, pytest, scikit-build-core,
# nanobind): the engines are installed into it (the machine is discarded).
PY="${RH_GPU_CHECK_PYTHON:-python3}"

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
  ls "$CUDA_WHEELS"/renewable_huber_native_cuda-*.whl >/dev/null 2>&1 && return 0
  CUDACXX=$(command -v nvcc) CMAKE_BUILD_PARALLEL_LEVEL=16 \
    $PY -m pip wheel -q --no-index --no-deps --no-build-isolation -w "$CUDA_WHEELS" ./native/python-cuda
}

build() {
  set -e
  rm -rf "$CUDA_WHEELS"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  nvcc --version | tail -1
  if ls .whl/scipy_openblas32-*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps .whl/scipy_openblas32-*.whl
    CMAKE_BUILD_PARALLEL_LEVEL=16 $PY -m pip install -q --no-index --no-deps --no-build-isolation ./native/python-cpu
  fi
  # The CUDA engine is built once, as the wheel a user gets; cuda_wheel reuses it.
  build_cuda_wheel
  $PY -m pip install -q --no-index --no-deps --force-reinstall "$CUDA_WHEELS"/renewable_huber_native_cuda-*.whl
  local lib; lib="$($PY -c 'import _renewable_huber_native_cuda as m, pathlib; print(next(pathlib.Path(m.__file__).parent.glob("renewable_huber_native_cuda.libs/librh_cuda*.so*")))' 2>/dev/null || true)"
  [[ -n "$lib" ]] && ldd "$lib" | grep -E "cudart|cublas|cusolver" || true
  $PY -c "import _renewable_huber_native_cuda as m; print(m.runtime_info(), m.device_info(0))"
  $PY -c "import _renewable_huber_native_cpu as m; print('native_cpu', m.blas_threads(), m.isa_level())" || true
}

# The CPU engine alone (cpu_scaling needs no CUDA build).
build_cpu() {
  set -e
  $PY -m pip install -q --no-index --no-deps .whl/scipy_openblas32-*.whl
  CMAKE_BUILD_PARALLEL_LEVEL=16 $PY -m pip install -q --no-index --no-deps --no-build-isolation ./native/python-cpu
  $PY -c "import _renewable_huber_native_cpu as m; print('native_cpu', m.blas_threads(), m.isa_level())"
}

# The CUDA engine alone, and its own GPU tests (the engine's changes when
# device time is short: no CPU engine, no reference backends on CuPy/PyTorch).
build_cuda() {
  set -e
  rm -rf "$CUDA_WHEELS"
  build_cuda_wheel
  $PY -m pip install -q --no-index --no-deps --force-reinstall "$CUDA_WHEELS"/renewable_huber_native_cuda-*.whl
  $PY -c "import _renewable_huber_native_cuda as m; print(m.runtime_info(), m.device_info(0))"
}
tests_cuda() {
  $PY -m pytest -q -rfE -p no:cacheprovider tests/backends/test_native_cuda.py tests/backends/test_native_cuda_abi.py \
    tests/backends/test_native_cuda_device_inputs.py tests/backends/test_native_cuda_graphs.py \
    tests/backends/test_native_cuda_block_solver.py tests/test_failure_contract.py tests/test_inference.py \
    tests/test_partial_fit_batches.py $(ls tests/backends/test_native_cuda_device_loop.py 2>/dev/null) \
    $(ls tests/backends/test_native_cuda_caller_copy.py tests/backends/test_native_cuda_device_slices.py 2>/dev/null) \
    $(ls tests/backends/test_native_cuda_deferred.py 2>/dev/null) \
    -k "cuda or Cuda" -o junit_logging=system-out --junitxml="$OUT/pytest-cuda.xml"
  local rc=$?
  $PY -m pytest -q -rfE -p no:cacheprovider -m gpu tests/test_robust_solver.py tests/test_robust_solver_stress.py \
    --junitxml="$OUT/pytest-gpu-robust.xml" || rc=$?
  return $rc
}

# The C++ tests with a device (not in "all"): the CUDA-only build with its
# tests (the GPU machine has GoogleTest), then ctest, whose "WithADevice"
# cases skip everywhere else: $OUT/ctest-cuda.xml.
CTEST_BUILD=/tmp/rh-ctest-build
ctest_build() {  # the CUDA-only build with its gtests, in $CTEST_BUILD
  cmake -S native -B "$CTEST_BUILD" -G Ninja -DRH_BUILD_CPU=OFF -DRH_BUILD_CUDA=ON -DRH_BUILD_CPP_API=OFF \
    -DRH_BUILD_PYTHON=OFF -DRH_CUDA_ARCHITECTURES=90-real -DRH_BUILD_TESTS=ON > /dev/null
  cmake --build "$CTEST_BUILD" -j 16 > /dev/null
}
ctest_cuda() {
  set -e
  ctest_build
  ctest --test-dir "$CTEST_BUILD" --output-on-failure -j 4 --output-junit "$OUT/ctest-cuda.xml" | tail -15
}

# The device kernels' gtests under compute-sanitizer, without Python (not in
# "all"): each binary of RH_SANITIZER_GTESTS (default: the one-block rung's,
# the Newton replay's and the narrow Gram's, the kernels with shared memory
# and barriers) under each tool of RH_SANITIZER_TOOLS (default racecheck),
# RH_SANITIZER_GTEST_TIMEOUT seconds each (default 240), its whole output in
# $OUT/sanitizer_gtests_<tool>_<binary>.log and its last lines printed. The
# twenty-ninth session's racecheck over the Python streams crashed before its
# first line; these binaries load no Python.
sanitizer_gtests() {
  set -e
  ctest_build
  local tool binary rc=0
  for tool in ${RH_SANITIZER_TOOLS:-racecheck}; do
    for binary in ${RH_SANITIZER_GTESTS:-rh_cuda_rung_tests rh_cuda_newton_replay_tests rh_cuda_gram_tests}; do
      echo "--- $tool $binary"
      timeout "${RH_SANITIZER_GTEST_TIMEOUT:-240}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$CTEST_BUILD/tests/$binary" > "$OUT/sanitizer_gtests_${tool}_${binary}.log" 2>&1 || rc=$?
      tail -4 "$OUT/sanitizer_gtests_${tool}_${binary}.log"
    done
  done
  return $rc
}

tests() {
  $PY -m pytest -q -rfE -p no:cacheprovider tests/backends/test_native_cuda.py tests/backends/test_native_cuda_abi.py \
    tests/backends/test_native_cuda_device_inputs.py tests/backends/test_native_cuda_graphs.py \
    tests/backends/test_native_cuda_block_solver.py \
    tests/backends/test_dlpack_capsules.py tests/backends/test_native_cuda_dlpack_protocol.py tests/test_device_inputs.py \
    tests/backends/test_framework_backends.py tests/backends/test_registry.py tests/test_failure_contract.py \
    tests/test_inference.py tests/test_partial_fit_batches.py \
    -o junit_logging=system-out --junitxml="$OUT/pytest-gpu.xml"
  local rc=$?
  # the robust solver's rules and the stress streams on the GPU engine
  $PY -m pytest -q -rfE -p no:cacheprovider -m gpu tests/test_robust_solver.py tests/test_robust_solver_stress.py \
    --junitxml="$OUT/pytest-gpu-robust.xml" || rc=$?
  return $rc
}

sanitizer() {
  # Small streams through the engine under memcheck, racecheck and synccheck (if the
  # machine's runtime allows compute-sanitizer at all).
  cat > /tmp/sanitized_streams.py <<'PY'
import os, numpy as np, warnings
from renewable_huber import RenewableHuberRegressor
rng = np.random.default_rng(0)
for dtype in ("float64", "float32"):
    for penalty in ("none", "l1"):
        X = rng.normal(size=(600, 7)).astype(dtype); y = (X @ rng.normal(size=7) + rng.standard_t(3, size=600)).astype(dtype)
        m = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty)
        g = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty, cuda_graphs=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for s in range(0, 600, 200):
                m.partial_fit(X[s:s+200], y[s:s+200], np.ones(200, dtype))
                g.partial_fit(X[s:s+200], y[s:s+200])
        print(dtype, penalty, "graphs", {k: g.cuda_features_[k] for k in ("graph_captures", "graph_replays", "graph_fallbacks")})
        X[:, 2] = X[:, 1]
        RenewableHuberRegressor(backend="native_cuda", dtype=dtype, ridge=0.0, tau=100.0).fit(X, y)
        m.predict(X); m.state_
        # The pipeline: its narrow row passes (d <= 64: the tensor-core Gram), then past the small rung
        # (cuSOLVER and the step from H^-1), its multi-block d-sized kernels.
        os.environ["RH_CUDA_SOLVER"] = "pipeline"
        narrow = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for s in range(0, 600, 200):
                narrow.partial_fit(X[s:s+200], y[s:s+200])
        del narrow
        W = rng.normal(size=(400, 69)).astype(dtype); v = (W @ rng.normal(size=69) + rng.standard_t(3, size=400)).astype(dtype)
        wide = RenewableHuberRegressor(backend="native_cuda", dtype=dtype, penalty=penalty)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wide.partial_fit(W[:200], v[:200]); wide.partial_fit(W[200:], v[200:])
        del os.environ["RH_CUDA_SOLVER"], wide
        if penalty == "none":  # the Newton loop driven on the device (33 <= d <= 48 on the narrow route)
            L = rng.normal(size=(600, 32)).astype(dtype); u = (L @ rng.normal(size=32) + rng.standard_t(3, size=600)).astype(dtype)
            loop = RenewableHuberRegressor(backend="native_cuda", dtype=dtype)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for s in range(0, 600, 200):
                    loop.partial_fit(L[s:s+200], u[s:s+200])
            print(dtype, "loop", {k: loop.cuda_features_[k] for k in ("host_syncs", "graph_captures", "graph_replays")})
            try:  # device-fed: the engine's copy of the caller's arrays, the update left queued (deferred results)
                import cupy
                fed = RenewableHuberRegressor(backend="native_cuda", dtype=dtype)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for s in range(0, 600, 200):
                        fed.partial_fit(cupy.asarray(L[s:s+200]), cupy.asarray(u[s:s+200]))
                print(dtype, "loop device-fed", fed.coef_[:2], fed.cuda_features_["host_syncs"])
                del fed
            except ImportError:
                pass
            del loop
del m, g  # released before exit: nanobind reports instances still alive when the interpreter ends
print("sanitized streams done")
PY
  local rc=0
  # synccheck: the block solver's barriers (its driver warp hands each step
  # to the block through a named barrier reached from different code)
  for tool in ${RH_SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
    compute-sanitizer --tool $tool --error-exitcode 9 --target-processes all $PY /tmp/sanitized_streams.py || rc=$?
  done
  return $rc
}

leaks() {
  # nanobind reports Engine and diagnostics instances alive at interpreter
  # exit after the sanitizer streams: who holds an engine once its model is gone?
  $PY - <<'PY'
import gc, sys, warnings
import numpy as np
from renewable_huber import RenewableHuberRegressor
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 5)); y = X.sum(1) + rng.standard_t(3, size=300)
for penalty in ("none", "l1"):
    m = RenewableHuberRegressor(backend="native_cuda", penalty=penalty).fit(X, y)
    m.partial_fit(X, y); m.predict(X); m.state_
    backend = m._current_backend(); engine = backend._engine; diagnostics = backend.last_native_diagnostics
    del m, backend
    gc.collect()
    print(penalty, "engine referrers:", [type(r).__name__ for r in gc.get_referrers(engine) if r is not globals()],
          "refcount", sys.getrefcount(engine), "| diagnostics referrers:",
          [type(r).__name__ for r in gc.get_referrers(diagnostics) if r is not globals()])
    del engine, diagnostics
    gc.collect()
print("leaks: done (nanobind's report, if any, follows at exit)")
PY
}

profile() {
  # The five questions of PERFORMANCE.md (profile_cuda_update.py: CUPTI trace,
  # NVTX ranges), then Nsight Compute over the row kernels (question 4).
  mkdir -p "$OUT/profile"
  # RH_PROFILE_SPECS: "class dtype penalty input" entries separated by
  # commas (default the eight below); RH_PROFILE_NCU=0 skips Nsight Compute.
  local spec specs
  IFS=, read -r -a specs <<< "${RH_PROFILE_SPECS:-latency float64 none device,latency float64 l1 device,\
reference float64 none host,reference float64 none device,streaming float64 none host,\
streaming float64 none device,wide float32 none device,wide float64 none device}"
  for spec in "${specs[@]}"; do
    set -- $spec
    $PY scripts/profiling/profile_cuda_update.py --class $1 --dtype $2 --penalty $3 --input $4 \
      --out "$OUT/profile/$1_$2_$3_$4.json" | head -1
  done
  [[ "${RH_PROFILE_NCU:-1}" == 0 ]] && return 0
  PYTHON=$PY bash scripts/profiling/ncu_cuda_update.sh "$OUT/profile" --class streaming --dtype float64 --penalty none \
    --input device
  PYTHON=$PY LAUNCH_SKIP=6 LAUNCHES=6 bash scripts/profiling/ncu_cuda_update.sh "$OUT/profile" --class latency \
    --dtype float64 --penalty none --input device
}

cuda_wheel() {
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

# Inference (issue 27): what the meat costs on the GPU (inference on vs off,
# paired) and the streamed vs full-data standard errors on the GPU engines.
inference() {
  $PY scripts/benchmarks/benchmark_inference_overhead.py --engines native_cuda_device_input native_cuda_host_input \
    native_cpu --rounds "${RH_INFERENCE_ROUNDS:-9}" --out "$OUT/inference_overhead_${GPU_TAG}.json"
  $PY scripts/inference/validate_inference.py --parts full-data --engines native_cuda cupy torch_cuda native_cpu \
    --out "$OUT/inference_validation_${GPU_TAG}.json"
}

bench() {
  $PY scripts/benchmarks/benchmark_native_cuda.py --rounds 5 --out "$OUT/native_cuda_benchmark.json"
}

# The block solver against the pipeline, paired, over rows x features (where
# auto should stop choosing it): $OUT/block_solver_${GPU_TAG}.json.
# RH_BLOCK_ROWS / RH_BLOCK_FEATURES: the shapes (default the script's own),
# e.g. past d = 32, RH_BLOCK_FEATURES="32 47 63" (d = 33, 48, 64 with the intercept);
# RH_BLOCK_TILES: the tiles of rows per block at least to measure (default 1).
block_solver() {
  $PY scripts/benchmarks/benchmark_block_solver.py --rounds "${RH_BLOCK_ROUNDS:-9}" \
    ${RH_BLOCK_ROWS:+--rows $RH_BLOCK_ROWS} ${RH_BLOCK_FEATURES:+--features $RH_BLOCK_FEATURES} \
    ${RH_BLOCK_TILES:+--block-tiles $RH_BLOCK_TILES} \
    --out "$OUT/block_solver_${GPU_TAG}.json"
}

# The pending patches in the order they apply together (README there).
PENDING_ORDER="deferred_results"

# The engine changes waiting in scripts/device/pending (README there), applied
# to this copy of the tree in the order RH_PENDING names (default:
# PENDING_ORDER, in the order they apply together). Run it before build.
apply_pending() {
  set -e
  local name part
  for name in ${RH_PENDING:-$PENDING_ORDER}; do  # "a+b": a, then b (ladder's one rung)
    for part in ${name//+/ }; do
      git apply -C1 "scripts/device/pending/$part.patch"
      echo "applied $part"
    done
  done
  git diff --stat | tail -1
}

# Issue 28: where the block solver's launch spends its time. The engine of
# RH_PHASES_TREE (default this tree; /tmp/rh-baseline after ab_builds: the
# baseline's) is built again with RH_BLOCK_PHASE_CLOCKS (phase_clocks.cuh;
# installed beside, not over, the one `build` installed), then the phase
# clocks over rows x features (x RH_PHASE_TILES, the tiles of rows per block
# at least, default 1): $OUT/block_solver_phases[_baseline].json. Not in "all".
phases() {
  PYTHON=$PY bash scripts/profiling/block_solver_phases.sh "$OUT" --rows ${RH_PHASE_ROWS:-4096 16384 65536} \
    --features ${RH_PHASE_FEATURES:-16 31} --updates "${RH_PHASE_UPDATES:-15}" --block-tiles ${RH_PHASE_TILES:-1}
}

# Where a stream's host time goes outside the kernels (after build; not in
# "all"): cProfile over whole latency-class streams through the estimator,
# cold and steady, native_cuda device- and host-fed, per penalty in
# RH_HOST_PENALTIES (default none l1), float64:
# $OUT/host_profile_<feed>_<penalty>.{json,txt}.
host_profile() {
  set -e
  for feed in device host; do
    for penalty in ${RH_HOST_PENALTIES:-none l1}; do
      $PY scripts/profiling/profile_estimator_host.py --backend native_cuda --feed $feed --class latency \
        --dtype float64 --penalty $penalty --streams "${RH_HOST_STREAMS:-200}" --top 20 \
        --out "$OUT/host_profile_${feed}_${penalty}.json" > /dev/null
      grep -A12 "by own time" "$OUT/host_profile_${feed}_${penalty}.txt" | head -30
    done
  done
}

# What a new engine's setup costs (after build; not in "all"): the CUDA
# calls its constructor and destructor make, each timed alone in a warm
# process (engine_setup_costs.cu), and the whole engine built and dropped
# from Python (engine_construction.py): $OUT/engine_setup_costs.json.
setup_costs() {
  set -e
  nvcc -O2 -std=c++17 -o /tmp/engine_setup_costs scripts/profiling/engine_setup_costs.cu -lcublas -lcusolver
  { /tmp/engine_setup_costs 200; $PY scripts/profiling/engine_construction.py --repeats 200; } | tee "$OUT/engine_setup_costs.json"
}

# What one sum over a grid's blocks costs, by grid.sync() as the block
# solver forms it and by a cluster's barrier and shared memory (after
# nothing; not in "all"): $OUT/grid_sum_probe.json.
# cuSOLVER's inverse of H by potrf + potrs with d right-hand sides (the
# pipeline's route before potri_inverse) against potrf + potri (its route
# since), d = 65, 91, 129, 257, both dtypes (scripts/profiling/inverse_probe.cu):
# $OUT/inverse_probe_${GPU_TAG}.json.
# Not in "all".
inverse_probe() {
  set -e
  nvcc -O3 -std=c++17 -arch=sm_90 -I native/cuda/src -I native -o /tmp/inverse_probe scripts/profiling/inverse_probe.cu \
    native/cuda/src/engine_internal.cu -lcusolver -lcublas
  /tmp/inverse_probe "${RH_PROBE_REPEATS:-40}" | tee "$OUT/inverse_probe_${GPU_TAG}.json"
}

grid_sum_probe() {
  set -e
  nvcc -O3 -std=c++17 -arch=sm_90 -I native/cuda/src -I native -o /tmp/grid_sum_probe scripts/profiling/grid_sum_probe.cu
  /tmp/grid_sum_probe "${RH_PROBE_SUMS:-200}" | tee "$OUT/grid_sum_probe.json"
}

# Why a kernel takes what it takes (after build; not in "all"): Nsight
# Compute's speed of light, warp stall reasons, instructions issued and the
# schedulers' issue rate, launch and occupancy
# sections for the kernels RH_DETAIL_KERNELS names (default: the host
# route's largest in a streaming-class update), steady launches of one
# device-fed stream (RH_DETAIL_CLASS, default streaming, float64, none):
# $OUT/kernel_detail_<class>.csv (one row per metric and launch).
kernel_detail() {
  local class=${RH_DETAIL_CLASS:-streaming}
  ncu --clock-control none --target-processes all \
    --kernel-name "regex:${RH_DETAIL_KERNELS:-narrow_gram_kernel|small_cholesky_step|newton_system|search_memory|finish_sums}" \
    --launch-skip "${RH_DETAIL_SKIP:-10}" --launch-count "${RH_DETAIL_LAUNCHES:-10}" \
    --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats \
    --section LaunchStats --section Occupancy --csv --page details \
    $PY scripts/profiling/profile_cuda_update.py --tool none --streams 1 --class "$class" --dtype float64 \
    --penalty none --input device > "$OUT/kernel_detail_${class}.csv"
}

# Issue 28's floor for the streaming class: the copy rate, one device-fed
# stream's DRAM bytes under Nsight Compute, the floor (streaming_floor.py):
# $OUT/streaming_floor.json. Not in "all".
floor() {
  PYTHON=$PY bash scripts/profiling/streaming_floor.sh "$OUT" --dtype "${RH_FLOOR_DTYPE:-float64}" \
    --penalty "${RH_FLOOR_PENALTY:-none}"
}

# The shape sweep (issue 15, schema v2): the GPU engines, native_cpu on every
# core and the reference on CuPy and PyTorch over the four classes, both
# lifecycles; the NumPy reference and the CPU engines where NumPy finishes in
# seconds (latency, reference). Records: $OUT/sweep_*_${GPU_TAG}.json.
sweep() {
  $PY scripts/benchmarks/benchmark_shape_sweep.py --profile standard --repeats "${RH_SWEEP_REPEATS:-5}" \
    --engines native_cpu cupy_host_input cupy_device_input native_cuda_host_input native_cuda_device_input \
    torch_cuda_device_input --max-host-gib 32 --out "$OUT/sweep_gpu_${GPU_TAG}.json"
  $PY scripts/benchmarks/benchmark_shape_sweep.py --classes latency reference --repeats "${RH_SWEEP_REPEATS:-5}" \
    --engines numpy native_cpu torch_cpu --max-host-gib 32 --out "$OUT/sweep_cpu_${GPU_TAG}.json"
}

# Before/after a change (issues 25, 28: "no slower than the commit before,
# paired, on the same machine in one call"): the CUDA engine built from
# RH_BASELINE_REVISION (a worktree of the copy's git history; its wheel
# installed into a folder of its own, which with the worktree's src comes
# first on that worker's path) against this tree's (built by `build`), each
# engine in its own worker process, rounds rotating, a new estimator per
# stream, the four classes, both dtypes and penalties, device-fed then
# host-fed: $OUT/ab_builds_{device,host}_${GPU_TAG}.json.
# The engine of RH_BASELINE_REVISION (a worktree of the copy's git history)
# built as the wheel of native/$1 and installed into a folder of its own:
# $BASELINE_TREE/src and $BASELINE_SITE, first on that worker's path.
BASELINE_TREE=/tmp/rh-baseline BASELINE_SITE=/tmp/rh-baseline-site
# The wheel of native/$2 built in the tree $1 (its scikit-build folder there,
# reused by a later build of the same tree) and installed into the folder $3.
engine_into_folder() {
  local wheels="$3-wheels"
  rm -rf "$3" "$wheels"
  (cd "$1" && CUDACXX=$(command -v nvcc) CMAKE_BUILD_PARALLEL_LEVEL=${RH_BUILD_JOBS:-16} \
    $PY -m pip wheel -q --no-index --no-deps --no-build-isolation -w "$wheels" "./native/$2")
  $PY -m pip install -q --no-index --no-deps --target "$3" "$wheels"/*.whl
}
baseline_engine() {  # $1: the native package; $2 (default RH_BASELINE_REVISION): the commit; $3: tree; $4: site
  local base=${2:-${RH_BASELINE_REVISION:?RH_BASELINE_REVISION must name the commit to compare against}}
  local tree=${3:-$BASELINE_TREE} site=${4:-$BASELINE_SITE}
  # RH_BASELINE_REUSE=1: an engine built here before for the same commit is kept (a second pairing in one lease).
  if [[ ${RH_BASELINE_REUSE:-0} == 1 && -d $site && "$(git -C "$tree" rev-parse HEAD 2>/dev/null)" == "$(git rev-parse "$base^{commit}")" ]]; then
    echo "reusing the engine of $base in $site"
    return 0
  fi
  rm -rf "$tree"
  git worktree prune
  git worktree add --detach "$tree" "$base"
  engine_into_folder "$tree" "$1" "$site"
}

# RH_AB_FEEDS (default "device host"), RH_AB_CLASSES (default the four),
# RH_AB_ARGS (more arguments of benchmark_cpu_engines.py, "--inference off")
# and RH_AB_TAG (a suffix of the records' names, "_inference_off") narrow a
# pairing to what a question needs.
# RH_BASELINE_REVISION may name several commits ("6da7550 d519480"): each is
# built (the first in $BASELINE_TREE, the others beside it) and all run in
# the same benchmark, rounds rotating, the ratios against this tree's engine;
# the same commit twice gives a control (its two engines must read 1.00x).
ab_builds() {
  set -e
  local revs=(${RH_BASELINE_REVISION:?RH_BASELINE_REVISION must name the commit to compare against})
  local i tree site label engines=() paths=()
  for i in "${!revs[@]}"; do
    tree=$BASELINE_TREE site=$BASELINE_SITE label=before
    if ((i > 0)); then tree="$BASELINE_TREE-$i" site="$BASELINE_SITE-$i"; fi
    ((${#revs[@]} > 1)) && label="before_${revs[i]}"
    # A commit named twice ("cdb3b90 cdb3b90") is built twice: a control pairing (two builds of one
    # engine, which must read 1.00x; a lease where they do not is too noisy to quote).
    [[ " ${engines[*]} " == *" $label "* ]] && label="${label}_$i"
    baseline_engine python-cuda "${revs[i]}" "$tree" "$site"
    engines+=("$label"); paths+=("$tree/src:$site")
  done
  for feed in ${RH_AB_FEEDS:-device host}; do
    local suffix="" args=()
    [[ $feed == device ]] && suffix="@device"
    for i in "${!engines[@]}"; do
      args+=(--engine "${engines[i]}=$PY:native_cuda$suffix" --engine-path "${engines[i]}=${paths[i]}")
    done
    $PY scripts/benchmarks/benchmark_cpu_engines.py --engine "after=$PY:native_cuda$suffix" "${args[@]}" \
      --classes ${RH_AB_CLASSES:-latency reference wide streaming} ${RH_AB_ARGS:-} \
      --rounds "${RH_AB_ROUNDS:-9}" --out "$OUT/ab_builds_${feed}${RH_AB_TAG:-}_${GPU_TAG}.json"
  done
}

# The CUDA engine's results bit for bit against RH_BASELINE_REVISION's (its
# first commit; after build or build_cuda): scripts/native_bit_identity.py
# The CUDA engine of this tree on each solver path it may take, paired in one
# run: "auto" (the reference of the ratios), every batch on the pipeline, and
# every batch on the block solver, device-fed, over the classes whose d the
# block solver takes (RH_PATH_CLASSES, default latency and streaming: d = 17
# and 33): $OUT/solver_paths_${GPU_TAG}.json. Not in "all".
solver_paths() {
  $PY scripts/benchmarks/benchmark_cpu_engines.py --engine "auto=$PY:native_cuda@device" \
    --engine "pipeline=$PY:native_cuda@device" --engine-env pipeline=RH_CUDA_SOLVER=pipeline \
    --engine "block=$PY:native_cuda@device" --engine-env block=RH_CUDA_SOLVER=block \
    --classes ${RH_PATH_CLASSES:-latency streaming} --rounds "${RH_PATH_ROUNDS:-5}" \
    --out "$OUT/solver_paths_${GPU_TAG}.json"
}

# --engine native_cuda dumps every problem on every solver path with the
# baseline's engine and tree first on the path, then with this tree's, and
# compares (a change meant to keep every bit: a kernel spread over more
# blocks, say). RH_BASELINE_REUSE=1 keeps an engine ab_builds built.
# RH_BITS_ALLOW_CHANGED_D=LO:HI: streams of system size d in [LO, HI] may
# differ (a change meant to move those only: another rung for some d).
bits() {
  set -e
  local revs=(${RH_BASELINE_REVISION:?RH_BASELINE_REVISION must name the commit to compare against})
  baseline_engine python-cuda "${revs[0]}"
  PYTHONPATH="$BASELINE_TREE/src:$BASELINE_SITE:$PYTHONPATH" $PY scripts/native_bit_identity.py dump \
    --engine native_cuda --out "$OUT/bits_before.json"
  $PY scripts/native_bit_identity.py dump --engine native_cuda --out "$OUT/bits_after.json"
  $PY scripts/native_bit_identity.py compare "$OUT/bits_before.json" "$OUT/bits_after.json" \
    ${RH_BITS_ALLOW_CHANGED_D:+--allow-changed-d "$RH_BITS_ALLOW_CHANGED_D"}
}

# Which pending patch moves which class: the CUDA engine of the committed
# tree (HEAD, "main") and of each prefix of RH_PENDING's order (main + the
# first patch, + the second, ...), each built as its wheel in one worktree
# whose scikit-build folder is reused (a patch recompiles only the files it
# changes) and installed with that prefix's src into a folder of its own;
# then all of them in one benchmark_cpu_engines.py run, rounds rotating, the
# first engine (main) the reference of the ratios, device-fed
# (RH_LADDER_FEED=host: host-fed; "device host": both), RH_LADDER_CLASSES (default the four);
# RH_LADDER_BASE (default HEAD): the commit whose tree and whose pending
# patches are the ladder (3e92c5c: the eight landed on 2026-12-05, with
# RH_PENDING naming them; "a+b" in it is one rung with both, labelled b);
# RH_LADDER_CONTROL=1 runs main's engine twice (a second label, its own
# processes: the two must read 1.00x in a lease quiet enough to quote);
# RH_LADDER_GRAPHS=1 adds each label again with cuda_graphs=True
# ("<label>_graphs", device-fed only):
# $OUT/pending_ladder_${feed}_${GPU_TAG}.json. Not in "all"; needs no build.
LADDER_TREE=/tmp/rh-ladder
ladder_engine() {  # $1: the label of the prefix now in $LADDER_TREE
  engine_into_folder "$LADDER_TREE" python-cuda "/tmp/rh-ladder-site-$1"
  cp -r "$LADDER_TREE/src" "/tmp/rh-ladder-site-$1-src"
}
ladder() {
  set -e
  local feed suffix name part start base=${RH_LADDER_BASE:-HEAD}
  rm -rf "$LADDER_TREE" /tmp/rh-ladder-site-*
  git worktree prune
  git worktree add --detach "$LADDER_TREE" "$base"
  local labels=(main)
  start=$SECONDS; ladder_engine main; echo "built main in $((SECONDS - start)) s"
  for name in ${RH_PENDING:-$PENDING_ORDER}; do  # "a+b": one rung with both patches, labelled b
    for part in ${name//+/ }; do
      git show "$base:scripts/device/pending/$part.patch" | (cd "$LADDER_TREE" && git apply -C1)
    done
    name=${name##*+}
    start=$SECONDS; ladder_engine "$name"; echo "built +$name in $((SECONDS - start)) s"
    labels+=("$name")
  done
  for feed in ${RH_LADDER_FEED:-device}; do  # "device host": both, the engines built once
    local args=()
    suffix=""
    [[ $feed == device ]] && suffix="@device"
    for name in "${labels[@]}"; do
      args+=(--engine "$name=$PY:native_cuda$suffix" --engine-path "$name=/tmp/rh-ladder-site-$name-src:/tmp/rh-ladder-site-$name")
    done
    [[ ${RH_LADDER_CONTROL:-0} == 1 ]] && args+=(--engine "main_again=$PY:native_cuda$suffix"
      --engine-path "main_again=/tmp/rh-ladder-site-main-src:/tmp/rh-ladder-site-main")
    if [[ ${RH_LADDER_GRAPHS:-0} == 1 && $feed == device ]]; then
      for name in "${labels[@]}"; do
        args+=(--engine "${name}_graphs=$PY:native_cuda@device+graphs"
          --engine-path "${name}_graphs=/tmp/rh-ladder-site-$name-src:/tmp/rh-ladder-site-$name")
      done
    fi
    $PY scripts/benchmarks/benchmark_cpu_engines.py "${args[@]}" --classes ${RH_LADDER_CLASSES:-latency reference wide streaming} \
      --rounds "${RH_LADDER_ROUNDS:-7}" --out "$OUT/pending_ladder_${feed}_${GPU_TAG}.json"
    # each rung against the control's noise (RH_LADDER_CONTROL=1) or "no control"
    $PY scripts/benchmarks/ladder_verdict.py "$OUT/pending_ladder_${feed}_${GPU_TAG}.json"
  done
}

# The CUPTI profile (profile_cuda_update.py, as `profile` without ncu) of
# engines the ladder built, in the same lease (after ladder): the labels in
# RH_LADDER_PROFILE (default main and the whole order's last prefix), the
# cases in RH_PROFILE_SPECS (default streaming float64 none device; a fifth
# word "graphs": with cuda_graphs=True, its record's name ending "_graphs"):
# $OUT/profile_<label>/<class>_<dtype>_<penalty>_<input>[_graphs].json. Not in "all".
# RH_PROFILE_SPECS' cases (default streaming float64 none device; a fifth
# word "graphs": with cuda_graphs=True) profiled into the folder $1, with the
# caller's environment (ladder_profile's engine, route_profile's route).
profile_cases() {
  local folder=$1 spec specs
  mkdir -p "$folder"
  IFS=, read -r -a specs <<< "${RH_PROFILE_SPECS:-streaming float64 none device}"
  for spec in "${specs[@]}"; do
    local graphs=() suffix=""
    set -- $spec
    [[ ${5:-} == graphs ]] && graphs=(--cuda-graphs) && suffix=_graphs
    $PY scripts/profiling/profile_cuda_update.py --class $1 --dtype $2 --penalty $3 --input $4 "${graphs[@]}" \
      --out "$folder/$1_$2_$3_$4$suffix.json" | head -1
  done
}
ladder_profile() {
  set -e
  local names=(${RH_PENDING:-$PENDING_ORDER}) label
  local labels=(${RH_LADDER_PROFILE:-main ${names[-1]##*+}})
  for label in "${labels[@]}"; do
    PYTHONPATH="/tmp/rh-ladder-site-$label-src:/tmp/rh-ladder-site-$label:$PYTHONPATH" profile_cases "$OUT/profile_$label"
  done
}

# The same for the CPU engine on this machine's cores (after build or
# build_cpu), with the settle pause: $OUT/cpu_ab_builds_16core.json.
cpu_ab_builds() {
  set -e
  baseline_engine python-cpu
  $PY scripts/benchmarks/benchmark_cpu_engines.py --engine "after=$PY:native_cpu" --engine "before=$PY:native_cpu" \
    --engine-path "before=$BASELINE_TREE/src:$BASELINE_SITE" --inference off --settle "${RH_CPU_SETTLE:-0.25}" \
    --classes ${RH_SCALING_CLASSES:-latency reference wide streaming} --rounds "${RH_AB_ROUNDS:-9}" \
    --out "$OUT/cpu_ab_builds_16core.json"
}

# Issue 29's tables on this machine's cores: native_cpu against the NumPy
# reference and the predecessor's Rust wheel (renewable-huber 0.7.1 and
# renewable-huber-native-cpu 0.7.1, carried in .whl/predecessor: fetched with
# `pip download --no-deps --only-binary=:all: --python-version 3.12 --platform
# manylinux2014_x86_64 -d .whl/predecessor renewable-huber==0.7.1
# renewable-huber-native-cpu==0.7.1`), each engine in its own process, cold
# streams, rotating rounds, with inference off (what an estimator without
# inference computes) and on: $OUT/cpu_engines_16core_inference_{off,on}.json.
cpu_engines() {
  set -e
  local site=/tmp/rh-predecessor-site
  rm -rf "$site"
  $PY -m pip install -q --no-index --no-deps --target "$site" .whl/predecessor/*.whl
  for inference in ${RH_CPU_INFERENCE:-off on}; do
    $PY scripts/benchmarks/benchmark_cpu_engines.py --engine "ours=$PY:native_cpu" --engine "numpy=$PY:numpy" \
      --engine "predecessor=$PY:native_cpu" --engine-path "predecessor=$site" --inference "$inference" \
      --rounds "${RH_CPU_ROUNDS:-9}" --settle "${RH_CPU_SETTLE:-0}" --out "$OUT/cpu_engines_16core_inference_${inference}.json"
  done
}

# The installed CUDA engine's two pipeline routes paired in one build (after
# build or build_cuda, with a patch applied or not): "main" the host-driven
# route (RH_CUDA_SOLVER=pipeline), "device_loop" the default (the Newton solve
# driven on the device where it serves), main again as the control, each in
# its own worker, device-fed, RH_ROUTE_CLASSES (default streaming) and
# RH_ROUTE_PENALTIES (default none), RH_ROUTE_LIFECYCLE (default cold: a new
# estimator per stream; steady: one primed estimator per case):
# $OUT/route_ab_device_<lifecycle>_${GPU_TAG}.json and its verdicts
# (ladder_verdict.py).
route_ab() {
  set -e
  $PY scripts/benchmarks/benchmark_cpu_engines.py --engine "main=$PY:native_cuda@device" \
    --engine-env "main=RH_CUDA_SOLVER=pipeline" --engine "device_loop=$PY:native_cuda@device" \
    --engine "main_again=$PY:native_cuda@device" --engine-env "main_again=RH_CUDA_SOLVER=pipeline" \
    --classes ${RH_ROUTE_CLASSES:-streaming} --penalties ${RH_ROUTE_PENALTIES:-none} \
    --rounds "${RH_ROUTE_ROUNDS:-7}" --lifecycle "${RH_ROUTE_LIFECYCLE:-cold}" \
    --out "$OUT/route_ab_device_${RH_ROUTE_LIFECYCLE:-cold}_${GPU_TAG}.json"
  $PY scripts/benchmarks/ladder_verdict.py "$OUT/route_ab_device_${RH_ROUTE_LIFECYCLE:-cold}_${GPU_TAG}.json"
}

# The installed build's two routes step by step in one process
# (stream_timeline.py): cold and steady streaming "none" streams, device-fed,
# timed whole and with the device synchronized after each batch (the first
# batch, with a cold engine's construction, apart from the later updates),
# RH_ROUTE_DTYPES (default float64 float32), RH_TIMELINE_ROUNDS rounds
# (default 21): $OUT/stream_timeline_${GPU_TAG}.json.
route_timeline() {
  set -e
  $PY scripts/profiling/stream_timeline.py --routes pipeline auto --dtypes ${RH_ROUTE_DTYPES:-float64 float32} \
    --rounds "${RH_TIMELINE_ROUNDS:-21}" --out "$OUT/stream_timeline_${GPU_TAG}.json"
}

# The CUPTI profile (profile_cuda_update.py) of the installed engine's two
# routes, as route_ab pairs them: $OUT/profile_route_{main,device_loop}/,
# RH_PROFILE_SPECS' cases (profile_cases).
route_profile() {
  set -e
  RH_CUDA_SOLVER=pipeline profile_cases "$OUT/profile_route_main"
  RH_CUDA_SOLVER=auto profile_cases "$OUT/profile_route_device_loop"
}

# The installed CUDA engine's deferred results (amendment 0004) against
# immediate ones, paired in one build (RH_CUDA_RESULTS): "immediate" the
# reference, "deferred" the default, "main_again" immediate again (the
# control ladder_verdict.py reads), each in its own worker, fed from
# RH_RESULTS_FEEDS (default device host), RH_ROUTE_CLASSES (default
# streaming), RH_RESULTS_PENALTIES (default none l1: LAMM's updates are not
# deferred, a second control), RH_ROUTE_LIFECYCLE (default cold):
# $OUT/results_ab_<feed>_<lifecycle>_${GPU_TAG}.json and its verdicts.
results_ab() {
  set -e
  local feed backend lifecycle=${RH_ROUTE_LIFECYCLE:-cold}
  for feed in ${RH_RESULTS_FEEDS:-device host}; do
    backend=native_cuda
    [[ $feed == device ]] && backend=native_cuda@device
    $PY scripts/benchmarks/benchmark_cpu_engines.py --engine "immediate=$PY:$backend" \
      --engine-env "immediate=RH_CUDA_RESULTS=immediate" --engine "deferred=$PY:$backend" \
      --engine-env "deferred=RH_CUDA_RESULTS=deferred" --engine "main_again=$PY:$backend" \
      --engine-env "main_again=RH_CUDA_RESULTS=immediate" \
      --classes ${RH_ROUTE_CLASSES:-streaming} --penalties ${RH_RESULTS_PENALTIES:-none l1} \
      --rounds "${RH_ROUTE_ROUNDS:-7}" --lifecycle "$lifecycle" \
      --out "$OUT/results_ab_${feed}_${lifecycle}_${GPU_TAG}.json"
    $PY scripts/benchmarks/ladder_verdict.py "$OUT/results_ab_${feed}_${lifecycle}_${GPU_TAG}.json"
  done
}

# The CUPTI profile (profile_cuda_update.py) of immediate and deferred
# results, as results_ab pairs them: $OUT/profile_results_{immediate,deferred}/,
# RH_PROFILE_SPECS' cases (profile_cases).
results_profile() {
  set -e
  RH_CUDA_RESULTS=immediate profile_cases "$OUT/profile_results_immediate"
  RH_CUDA_RESULTS=deferred profile_cases "$OUT/profile_results_deferred"
}

# Everything under $OUT as one archive, $OUT/all.tgz (a device call brings
# back a limited number of files: the twenty-seventh session's first call
# lost its ladder record and profiles past the eighth file). Last in a call.
pack() {
  local archive
  archive=$(mktemp /tmp/gpu_check_out.XXXXXX.tgz)
  tar czf "$archive" --warning=no-file-changed -C "$OUT" . || [[ $? -eq 1 ]]
  find "$OUT" -mindepth 1 -delete
  mv "$archive" "$OUT/all.tgz"
}

# Issue 29's profile on this machine's cores (perf is absent here): native_cpu
# at n_jobs 1, 2, 4, 8 and its default (every core the BLAS pool has) beside
# the NumPy reference, each in its own process, cold streams, with the
# engine's thread counters per stream (dispatches, late ones, batches that
# fell back to one thread): $OUT/cpu_scaling_16core.json.
cpu_scaling() {
  $PY scripts/benchmarks/benchmark_cpu_engines.py --engine "ours=$PY:native_cpu" --engine "numpy=$PY:numpy" \
    --engine "jobs1=$PY:native_cpu%1" --engine "jobs2=$PY:native_cpu%2" --engine "jobs4=$PY:native_cpu%4" \
    --engine "jobs8=$PY:native_cpu%8" --classes ${RH_SCALING_CLASSES:-wide latency reference} --inference off \
    --rounds "${RH_CPU_ROUNDS:-7}" --out "$OUT/cpu_scaling_16core.json"
}

# Dask (issue 17): not in the machine's image; its wheels travel in .whl/dask
# (dask, distributed, partd, locket, tblib, tornado, zict; the rest is there).
# The LocalCluster tests, then parallel-batch scaling on 1/2/4/8 workers.
DASK_SITE=/tmp/rh-dask-site
dask_setup() {
  [[ -d "$DASK_SITE/dask" ]] || $PY -m pip install -q --no-index --no-deps --no-compile --target "$DASK_SITE" .whl/dask/*.whl
}
dask_tests() {
  set -e
  dask_setup
  PYTHONPATH="$DASK_SITE:$PYTHONPATH" $PY -m pytest -q -rfE -p no:cacheprovider tests/integrations/test_dask.py \
    tests/core/test_partition_sums.py
}
dask_scaling() {
  set -e
  dask_setup
  PYTHONPATH="$DASK_SITE:$PYTHONPATH" $PY scripts/benchmarks/benchmark_dask.py --workers 1 2 4 8 \
    --repeats "${RH_DASK_REPEATS:-3}" --out "$OUT/dask_scaling_${GPU_TAG}.json"
}

for section in "${sections[@]}"; do
  run "$section" "$section"
  if [[ "$section" == "build" && $status -ne 0 ]]; then
    echo "gpu_check: the build failed; nothing else can run" | tee -a "$OUT/summary.txt"; break
  fi
done
echo "gpu_check: status $status" | tee -a "$OUT/summary.txt"
exit $status
