#!/usr/bin/env bash
# Nsight Systems over the CUDA engine's update: the timeline (CUDA API, kernels,
# copies, the NVTX ranges of profile_cuda_update.py) and a metadata JSON
# beside the report. nsys is not on the project's GPU machine (there the
# timeline questions are answered by profile_cuda_update.py's CUPTI trace);
# this wrapper is for machines that have it.
#
#   bash scripts/profiling/nsys_cuda_update.sh OUT_DIR [profile_cuda_update.py arguments...]
set -euo pipefail
out=${1:?usage: nsys_cuda_update.sh OUT_DIR [profile arguments...]}
shift
command -v nsys >/dev/null || { echo "nsys_cuda_update: nsys is not on PATH (not on the project's GPU machine: use profile_cuda_update.py)" >&2; exit 3; }
mkdir -p "$out"
PY=${PYTHON:-python3}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="nsys_$(echo "$*" | tr ' -' '__' | tr -s '_')"
nsys profile --trace=cuda,nvtx,osrt --force-overwrite true -o "$out/$name" \
    "$PY" "$here/profile_cuda_update.py" --tool none "$@"
nsys stats --report cuda_gpu_kern_sum,cuda_api_sum,nvtx_sum --format csv -o "$out/$name" "$out/$name.nsys-rep" || true
"$PY" - "$out/$name.json" "$@" <<'PY'
import json, platform, subprocess, sys, os
def probe(*command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"
json.dump({"tool": "nsys profile --trace=cuda,nvtx,osrt", "nsys": probe("nsys", "--version"),
           "nvidia_smi": probe("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"),
           "command_line": sys.argv[2:], "python": platform.python_version(),
           "revision": os.environ.get("RH_SOURCE_REVISION", "unknown")}, open(sys.argv[1], "w"), indent=1)
PY
