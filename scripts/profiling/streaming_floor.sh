#!/usr/bin/env bash
# Issue 28's floor for the streaming class (streaming_floor.py): the copy
# rate, then one device-fed stream under Nsight Compute (every kernel's DRAM
# bytes read, in bytes), then the floor: OUT_DIR/streaming_floor.json.
#
#   bash scripts/profiling/streaming_floor.sh OUT_DIR [--dtype float64] [--penalty none] [--inference off]
set -euo pipefail
out=${1:?usage: streaming_floor.sh OUT_DIR [streaming_floor.py options]}
shift
mkdir -p "$out"
PY=${PYTHON:-python3}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v ncu >/dev/null || { echo "streaming_floor: ncu is not on PATH" >&2; exit 3; }
"$PY" "$here/streaming_floor.py" --bandwidth "$out/copy_bandwidth.json"
ncu --clock-control none --target-processes all --metrics dram__bytes_read.sum --print-units base --csv \
  "$PY" "$here/streaming_floor.py" --stream "$@" > "$out/streaming_floor_ncu.csv"
"$PY" "$here/streaming_floor.py" --summarize "$out/streaming_floor_ncu.csv" --bandwidth-json "$out/copy_bandwidth.json" \
  --out "$out/streaming_floor.json" "$@"
