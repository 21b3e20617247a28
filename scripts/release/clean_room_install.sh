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
# RH_CLEAN_ROOM_ENGINE: native_cpu (default) or native_cuda (needs a GPU;
# held to the test suite's own-rounding allowances, as its GPU tests are).
# RH_CLEAN_ROOM_OFFLINE=1: no registry (the GPU machine): NumPy and the NVIDIA
# runtime/cuBLAS/cuSOLVER wheels come from RH_CLEAN_ROOM_PYTHON's own
# site-packages, linked into the environment as if pip had installed them,
# so `pip check` sees what the wheels declare.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DIST="$(cd "${1:-$ROOT/dist}" && pwd)"
PY="${RH_CLEAN_ROOM_PYTHON:-python3}"
ENGINE="${RH_CLEAN_ROOM_ENGINE:-native_cpu}"
case "$ENGINE" in
  native_cpu) EXTRA=native-cpu; REPLAY=() ;;
  native_cuda) EXTRA=native-cuda; REPLAY=(--own-rounding) ;;
  *) echo "clean_room_install: RH_CLEAN_ROOM_ENGINE must be native_cpu or native_cuda, not '$ENGINE'" >&2; exit 2 ;;
esac
ROOM="$(mktemp -d)"
unset PYTHONPATH   # nothing from this checkout on the import path
trap 'rm -rf "$ROOM"' EXIT

"$PY" -m venv "$ROOM/env"
ENV_PY="$ROOM/env/bin/python"
if [[ "${RH_CLEAN_ROOM_OFFLINE:-0}" == "1" ]]; then
  host_site="$("$PY" -c 'import numpy, pathlib; print(pathlib.Path(numpy.__file__).parent.parent)')"
  room_site="$("$ENV_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  for entry in "$host_site"/numpy "$host_site"/numpy.libs "$host_site"/numpy-*.dist-info \
               "$host_site"/nvidia "$host_site"/nvidia_*.dist-info "$host_site"/scipy_openblas32*; do
    [[ -e "$entry" ]] && ln -s "$entry" "$room_site/"
  done
else
  "$ENV_PY" -m pip install -q --disable-pip-version-check --only-binary :all: numpy
fi
# No compiler: a source build anywhere below would fail loudly.
install() {
  CC=/bin/false CXX=/bin/false CUDACXX=/bin/false \
    "$ENV_PY" -m pip install -q --disable-pip-version-check --no-index --only-binary :all: \
    --find-links "$DIST" "$@"
}
if ! install "renewable-huber[$EXTRA]"; then
  [[ "${RH_CLEAN_ROOM_OFFLINE:-0}" == "1" ]] || exit 1
  # offline, the machine's packages may not be the versions the wheels declare:
  # say so (pip check below names them) and test the wheels themselves
  echo "clean_room_install: the machine's packages do not satisfy the declared dependencies; installing without them"
  install --no-deps renewable-huber "renewable-huber-$EXTRA"
fi
"$ENV_PY" -m pip list --disable-pip-version-check 2>/dev/null | grep -i -E "renewable|numpy|nvidia" || true
if ! "$ENV_PY" -m pip check --disable-pip-version-check; then
  [[ "${RH_CLEAN_ROOM_OFFLINE:-0}" == "1" ]] || exit 1
fi

cd "$ROOM"   # not the repository: its src/ must not be importable
"$ROOM/env/bin/renewable-huber" info | tee "$ROOM/info.txt"
if ! grep -Eq "^$ENGINE +(cpu|cuda) +yes" "$ROOM/info.txt"; then
  echo "clean_room_install: renewable-huber info does not show $ENGINE available" >&2
  exit 1
fi
"$ENV_PY" "$ROOT/scripts/release/replay_golden_case.py" "$ROOT/tests/golden/native_core_v1.json" --backend "$ENGINE" --installed-only "${REPLAY[@]}"
echo "clean_room_install: passed"
