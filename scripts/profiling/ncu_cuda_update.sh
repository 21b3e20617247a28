#!/usr/bin/env bash
# Nsight Compute over the CUDA engine's update (PERFORMANCE.md, "Profiling"):
# profile_cuda_update.py --tool none (its NVTX ranges) under
# `ncu --clock-control none` (the GPU's own clocks, as users run it), the
# engine's row kernels and whatever matches KERNELS, one CSV of metrics per
# launch, a metadata JSON beside it, then the five questions answered with
# the CSV for question 4 (memory- or divergence-bound Huber kernels).
#
#   bash scripts/profiling/ncu_cuda_update.sh OUT_DIR [profile_cuda_update.py arguments...]
#   KERNELS='regex:score_rows|line_search_losses' LAUNCHES=40 bash scripts/profiling/ncu_cuda_update.sh out --class streaming
#
# Reports stay local (OUT_DIR); docs/ carries the summarized findings.
set -euo pipefail
out=${1:?usage: ncu_cuda_update.sh OUT_DIR [profile arguments...]}
shift
mkdir -p "$out"
PY=${PYTHON:-python3}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v ncu >/dev/null || { echo "ncu_cuda_update: ncu is not on PATH" >&2; exit 3; }
name="ncu_$(echo "$*" | tr ' -' '__' | tr -s '_')"
kernels=${KERNELS:-"regex:score_rows|start_residual|line_search_losses|step_line_search|lamm_trial_rows|start_rows|doubling_losses|lamm_trials|narrow_gram|narrow_score_gram|block_solver"}
metrics="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__thread_inst_executed_per_inst_executed.ratio,launch__grid_size"
ncu --version > "$out/$name.ncu-version.txt"
# skip the warm-up's launches: the first LAUNCH_SKIP matching launches
ncu --clock-control none --target-processes all --kernel-name "$kernels" \
    --launch-skip "${LAUNCH_SKIP:-20}" --launch-count "${LAUNCHES:-30}" --metrics "$metrics" --csv \
    "$PY" "$here/profile_cuda_update.py" --tool none --streams 1 "$@" > "$out/$name.csv"
"$PY" - "$out/$name.json" "$out/$name.csv" "$@" <<'PY'
import json, platform, subprocess, sys, os
def probe(*command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as exc:
        return f"unavailable ({type(exc).__name__})"
json.dump({"tool": "ncu --clock-control none", "ncu": probe("ncu", "--version").splitlines()[-1:],
           "nvidia_smi": probe("nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem", "--format=csv,noheader"),
           "command_line": sys.argv[3:], "report": sys.argv[2], "python": platform.python_version(),
           "revision": os.environ.get("RH_SOURCE_REVISION", "unknown")}, open(sys.argv[1], "w"), indent=1)
PY
"$PY" "$here/profile_cuda_update.py" --summarize-ncu "$out/$name.csv" | tee "$out/$name.summary.json"
