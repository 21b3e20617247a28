#!/usr/bin/env bash
# Build, install and test the C++ CPU engine (renewable-huber-native-cpu).
#
#   scripts/build_native_cpu.sh [PYTHON]          install into PYTHON's env, then build + run CTest
#   scripts/build_native_cpu.sh [PYTHON] --no-ctest   install only
#
# PYTHON defaults to .venv/bin/python. Works on a fresh machine: installs the
# build requirements from PyPI (scipy-openblas32, nanobind, scikit-build-core)
# and, when missing, the Debian packages for the compiler and the C++ tests.
# One build job at a time by default (RH_BUILD_JOBS overrides; the machines
# have 2 cores).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${1:-$ROOT/.venv/bin/python}"
RUN_CTEST=1
[[ "${2:-}" == "--no-ctest" || "${1:-}" == "--no-ctest" ]] && RUN_CTEST=0
[[ "${1:-}" == "--no-ctest" ]] && PYTHON="$ROOT/.venv/bin/python"
JOBS="${RH_BUILD_JOBS:-2}"

missing_debs=()
command -v g++ >/dev/null || missing_debs+=(g++)
command -v cmake >/dev/null || missing_debs+=(cmake)
command -v ninja >/dev/null || missing_debs+=(ninja-build)
dpkg -s libgtest-dev >/dev/null 2>&1 || missing_debs+=(libgtest-dev)
if ((${#missing_debs[@]})); then
  echo "build_native_cpu: installing ${missing_debs[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq && apt-get install -y -qq "${missing_debs[@]}"
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq "${missing_debs[@]}"
  fi
fi

"$PYTHON" -m pip install -q --disable-pip-version-check \
  "scipy-openblas32>=0.3.27" "nanobind>=2.0" "scikit-build-core>=0.10"

# The distribution pins renewable-huber==<same version>; the base package is
# installed by the caller (make), so dependencies are not resolved here.
CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" "$PYTHON" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps "$ROOT/native/python-cpu"
"$PYTHON" -c "import _renewable_huber_native_cpu as m; print('native_cpu', m.__version__, '|', m.blas_provider(), '| threads', m.blas_threads())"

if ((RUN_CTEST)); then
  BUILD="$ROOT/native/build"
  cmake -S "$ROOT/native" -B "$BUILD" -G Ninja -DPython_EXECUTABLE="$PYTHON" \
    -DRH_BUILD_TESTS=ON -DRH_BUILD_PYTHON=OFF >/dev/null
  cmake --build "$BUILD" -j "$JOBS"
  ctest --test-dir "$BUILD" --output-on-failure
fi
