#!/usr/bin/env bash
# The clean-room install test: a fresh virtual environment, NumPy from the
# registry, then this release's wheels only (no index, binaries only: no
# compiler can be used), then what a user does first: `renewable-huber info`
# must show native_cpu available, and a fit through backend="native_cpu"
# replays the project's golden corpus within its tolerances. Nothing from
# this repository is on the import path.
#
#   scripts/release/clean_room_install.sh [DIST_DIR]     (default dist/; make dist-check)
#
# RH_CLEAN_ROOM_PYTHON: the interpreter to make the environment with
# (default python3; its version must have a native wheel in DIST_DIR).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIST="$(cd "${1:-$ROOT/dist}" && pwd)"
PY="${RH_CLEAN_ROOM_PYTHON:-python3}"
ROOM="$(mktemp -d)"
trap 'rm -rf "$ROOM"' EXIT

"$PY" -m venv "$ROOM/env"
ENV_PY="$ROOM/env/bin/python"
"$ENV_PY" -m pip install -q --disable-pip-version-check --only-binary :all: numpy
# No compiler: a source build anywhere below would fail loudly.
CC=/bin/false CXX=/bin/false CUDACXX=/bin/false \
  "$ENV_PY" -m pip install -q --disable-pip-version-check --no-index --only-binary :all: \
  --find-links "$DIST" "renewable-huber[native-cpu]"
"$ENV_PY" -m pip list --disable-pip-version-check 2>/dev/null | grep -i -E "renewable|numpy"

cd "$ROOM"   # not the repository: its src/ must not be importable
"$ROOM/env/bin/renewable-huber" info | tee "$ROOM/info.txt"
if ! grep -Eq '^native_cpu +cpu +yes' "$ROOM/info.txt"; then
  echo "clean_room_install: renewable-huber info does not show native_cpu available" >&2
  exit 1
fi
"$ENV_PY" "$ROOT/scripts/release/replay_golden_case.py" "$ROOT/tests/golden/native_core_v1.json" --backend native_cpu
echo "clean_room_install: passed"
