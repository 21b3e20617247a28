#!/usr/bin/env bash
# The C++ library as a user gets it (issue 30): installed into a temporary
# prefix, an application configured with find_package(renewable_huber)
# against it (examples/cpp), built and run; then compare_with_python.py
# crosses checkpoints between that application and the Python package.
#
#   test_installed_package.sh BUILD_DIR REPOSITORY_ROOT PYTHON           # the build's (shared) library
#   test_installed_package.sh --static REPOSITORY_ROOT PYTHON            # a clean configure of native/, static
set -euo pipefail
build=$1 root=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ "$build" == "--static" ]]; then
  # From the sources as a user starts (only the library kind and the
  # interpreter that locates the Python module's BLAS, for equal bits).
  build="$work/build"
  cmake -S "$root/native" -B "$build" -G Ninja -DRH_CPP_API_SHARED=OFF -DRH_BUILD_TESTS=OFF \
    -DPython_EXECUTABLE="$python" > "$work/native-configure.log"
  cmake --build "$build" -j "${RH_BUILD_JOBS:-2}" > "$work/native-build.log"
  test -f "$build/api/librenewable_huber.a"
fi
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/include/renewable_huber/renewable_huber.hpp"
test -f "$work/prefix/lib/cmake/renewable_huber/renewable_huberConfig.cmake"
cmake -S "$root/examples/cpp" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
cmake --build "$work/example" > "$work/build.log"
PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}" "$python" "$root/native/tests/install/compare_with_python.py" \
  "$work/example/stream_csv" "$work"
