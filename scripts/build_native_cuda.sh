#!/usr/bin/env bash
# Build and install the CUDA engine (renewable-huber-native-cuda) into
# PYTHON's environment. Needs the CUDA toolkit (nvcc, cuBLAS, cuSOLVER), not a
# GPU: on a machine without one the module imports and reports no device.
#
#   scripts/build_native_cuda.sh [PYTHON]
#
# Without nvcc it says so and exits 0 (the CUDA backend then reports that it
# is not installed); RH_REQUIRE_CUDA=1 makes that an error (CI sets it).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${1:-$ROOT/.venv/bin/python}"
JOBS="${RH_BUILD_JOBS:-2}"

NVCC="$(command -v nvcc || true)"
[[ -z "$NVCC" && -x /usr/local/cuda/bin/nvcc ]] && NVCC=/usr/local/cuda/bin/nvcc
if [[ -z "$NVCC" ]]; then
  echo "build_native_cuda: nvcc not found: the CUDA engine is not built"
  [[ "${RH_REQUIRE_CUDA:-0}" == "1" ]] && exit 1
  exit 0
fi
export CUDACXX="$NVCC"
export PATH="$(dirname "$NVCC"):$PATH"

"$PYTHON" -m pip install -q --disable-pip-version-check "nanobind>=2.0" "scikit-build-core>=0.10"
CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" "$PYTHON" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps "$ROOT/native/python-cuda"
"$PYTHON" -c "import _renewable_huber_native_cuda as m; print('native_cuda', m.__version__, '| devices', m.runtime_info()['device_count'])"
