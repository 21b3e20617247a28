#!/usr/bin/env bash
# The block solver's phase clocks (issue 28): the CUDA engine (of
# RH_PHASES_TREE, default this tree) built again
# with RH_BLOCK_PHASE_CLOCKS (and -lineinfo, for ncu's source view), as a wheel
# of its own installed into a folder of its own (first on the worker's path;
# the installed engine is left alone), then block_solver_phases.py over the
# cases its arguments name: OUT_DIR/block_solver_phases.json
# (block_solver_phases_baseline.json for another tree's engine).
#
#   bash scripts/profiling/block_solver_phases.sh OUT_DIR [block_solver_phases.py arguments...]
set -euo pipefail
out=${1:?usage: block_solver_phases.sh OUT_DIR [arguments...]}
shift
mkdir -p "$out"
PY=${PYTHON:-python3}
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TREE=${RH_PHASES_TREE:-$ROOT}  # the engine's source tree (a baseline worktree, say)
suffix=""; [[ "$(cd "$TREE" && pwd)" != "$ROOT" ]] && suffix="_baseline"
build=/tmp/rh-phases-build wheels=/tmp/rh-phases-wheels site=/tmp/rh-phases-site
rm -rf "$build" "$wheels" "$site"
CUDACXX=$(command -v nvcc) CMAKE_BUILD_PARALLEL_LEVEL=${RH_BUILD_JOBS:-16} \
  "$PY" -m pip wheel -q --no-index --no-deps --no-build-isolation -w "$wheels" \
  -C build-dir="$build" -C "cmake.define.CMAKE_CUDA_FLAGS=-DRH_BLOCK_PHASE_CLOCKS -lineinfo" "$TREE/native/python-cuda"
"$PY" -m pip install -q --no-index --no-deps --target "$site" "$wheels"/*.whl
PYTHONPATH="$site:$ROOT/src${PYTHONPATH:+:$PYTHONPATH}" "$PY" "$ROOT/scripts/profiling/block_solver_phases.py" \
  --out "$out/block_solver_phases$suffix.json" "$@"
