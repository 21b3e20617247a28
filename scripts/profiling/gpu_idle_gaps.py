"""Where the GPU waits between its kernels, from a Kineto (PyTorch profiler)
Chrome trace: each idle gap between two consecutive GPU activities (kernels,
copies, memsets) is put down to what held the next one back.

 * "after a host wait": the host finished issuing the next activity only
   after the previous one had ended, and a host synchronization (a stream,
   event or device wait, or a blocking copy to the host) was blocked across
   the previous activity's end (it began before, ended after) and returned
   before the next launch began: the round trip of a decision made on the
   host (the wait returning, the decision, the next launch reaching the GPU).
 * "host-bound launch": the host finished issuing the next activity only
   after the previous one had ended, with no such wait: the host's launches
   and its own work were slower than the GPU.
 * "queued": the next activity's launch call had returned before the
   previous activity ended, so the gap is the GPU's own latency from one to
   the next.
 * "unattributed": no runtime call carries the next activity's correlation.

The issuing call is the runtime or driver call with the activity's
correlation id (`args.correlation`); timestamps are microseconds on the
trace's one clock. A gap longer than `max_gap_us` (between streams, the
profiler's own start) is left out, counted and summed apart; the shares are
of the span less those gaps.

    python scripts/profiling/gpu_idle_gaps.py trace.json
"""

from __future__ import annotations

import bisect
import json
import re
import sys
from pathlib import Path
from typing import Iterable

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
HOST_CALL_CATEGORIES = ("cuda_runtime", "cuda_driver")
# Host calls that wait for the GPU: the waits themselves, and copies to pageable or
# pinned host memory issued synchronously (cudaMemcpy, not cudaMemcpyAsync).
HOST_WAIT = re.compile(r"^(cudaStreamSynchronize|cudaEventSynchronize|cudaDeviceSynchronize|cuStreamSynchronize|"
                       r"cuEventSynchronize|cuCtxSynchronize|cudaMemcpy|cuMemcpyDtoH(_v2)?)$")
KINDS = ("after a host wait", "host-bound launch", "queued", "unattributed")


def _complete_events(trace: dict | list) -> list[dict]:
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    return [e for e in events if e.get("ph") == "X" and "ts" in e and "dur" in e]


def idle_gaps(trace: dict | list, max_gap_us: float = 1000.0) -> dict:
    """The GPU's idle gaps by kind: total microseconds, count, and the share of
    the span from the first GPU activity's start to the last one's end."""
    events = _complete_events(trace)
    gpu = sorted((e for e in events if e.get("cat") in GPU_CATEGORIES), key=lambda e: float(e["ts"]))
    calls = [e for e in events if e.get("cat") in HOST_CALL_CATEGORIES]
    issued_at = {e["args"]["correlation"]: (float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in calls
                 if isinstance(e.get("args"), dict) and "correlation" in e["args"]}
    waits = sorted((float(e["ts"]) + float(e["dur"]), float(e["ts"])) for e in calls
                   if HOST_WAIT.match(str(e.get("name", ""))))  # (end, start)
    totals = {kind: {"us": 0.0, "count": 0} for kind in KINDS}
    result = {"gaps": totals, "gpu_busy_us": 0.0, "span_us": 0.0, "left_out_longer_than_max": 0,
              "left_out_us": 0.0, "max_gap_us": max_gap_us}
    if not gpu:
        return result
    busy_end = float(gpu[0]["ts"])
    start = busy_end
    for activity in gpu:
        begins, ends = float(activity["ts"]), float(activity["ts"]) + float(activity["dur"])
        result["gpu_busy_us"] += max(0.0, ends - max(begins, busy_end))
        gap = begins - busy_end
        if gap > 0.0:
            if gap > max_gap_us:
                result["left_out_longer_than_max"] += 1
                result["left_out_us"] += gap
            else:
                kind = _kind(activity, busy_end, issued_at, waits)
                totals[kind]["us"] += gap
                totals[kind]["count"] += 1
        busy_end = max(busy_end, ends)
    result["span_us"] = busy_end - start
    counted = result["span_us"] - result["left_out_us"]  # busy time and the gaps counted: the shares add up to 1
    for entry in totals.values():
        entry["share_of_span"] = entry["us"] / counted if counted else 0.0
    return result


def _kind(activity: dict, previous_end: float, issued_at: dict, waits: list[tuple[float, float]]) -> str:
    args = activity.get("args")
    call = issued_at.get(args.get("correlation")) if isinstance(args, dict) else None
    if call is None:
        return "unattributed"
    launch_begins, launch_ends = call
    if launch_ends < previous_end:
        return "queued"
    # a wait blocked across the previous activity's end that returned before this launch began
    first = bisect.bisect_left(waits, (previous_end, float("-inf")))
    for end, begins in waits[first:]:
        if end > launch_begins:
            break
        if begins < previous_end:
            return "after a host wait"
    return "host-bound launch"


def per_update(gaps: dict, updates: int) -> dict:
    """Microseconds of each kind of gap an update."""
    return {kind: entry["us"] / updates for kind, entry in gaps["gaps"].items()} if updates else {}


def main(argv: Iterable[str] | None = None) -> int:
    paths = list(sys.argv[1:] if argv is None else argv)
    for path in paths:
        print(path, json.dumps(idle_gaps(json.loads(Path(path).read_text())), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
