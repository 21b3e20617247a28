"""The GPU idle-gap attribution of scripts/profiling/gpu_idle_gaps.py on
synthetic Kineto traces: each kind of gap (after a host wait, host-bound,
queued, unattributed), overlapping activities, the cut-off for long gaps,
and the per-update division. The GPU runs it on real traces
(profile_cuda_update.py, gpu_check.sh profile / ladder_profile)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "profiling"))

import gpu_idle_gaps as gaps  # noqa: E402


def kernel(ts, dur, correlation, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": "k", "ts": ts, "dur": dur, "args": {"correlation": correlation}}


def call(name, ts, dur, correlation=None):
    event = {"ph": "X", "cat": "cuda_runtime", "name": name, "ts": ts, "dur": dur, "args": {}}
    if correlation is not None:
        event["args"]["correlation"] = correlation
    return event


def test_each_gap_is_put_down_to_what_held_the_next_activity_back():
    trace = {"traceEvents": [
        call("cudaLaunchKernel", 0, 2, 1), kernel(5, 10, 1),            # busy 5-15
        call("cudaLaunchKernel", 3, 2, 2), kernel(17, 10, 2),           # queued before 15: gap 2 queued
        call("cudaStreamSynchronize", 6, 23),                           # a wait ending at 29
        call("cudaLaunchKernel", 33, 3, 3), kernel(40, 5, 3),           # issued at 33 after the wait: gap 13
        call("cudaLaunchKernel", 50, 3, 4), kernel(55, 5, 4),           # issued at 50 > 45, no wait: gap 10
        kernel(64, 6, 99, cat="gpu_memcpy"),                            # no issuing call: gap 4
    ]}
    result = gaps.idle_gaps(trace)
    g = result["gaps"]
    assert g["queued"] == pytest.approx({"us": 2.0, "count": 1, "share_of_span": 2.0 / 65.0})
    assert g["after a host wait"]["us"] == pytest.approx(13.0) and g["after a host wait"]["count"] == 1
    assert g["host-bound launch"]["us"] == pytest.approx(10.0) and g["host-bound launch"]["count"] == 1
    assert g["unattributed"]["us"] == pytest.approx(4.0)
    assert result["span_us"] == pytest.approx(65.0)
    assert result["gpu_busy_us"] == pytest.approx(36.0)
    assert result["gpu_busy_us"] + sum(entry["us"] for entry in g.values()) == pytest.approx(result["span_us"])


def test_a_wait_outside_the_gap_is_not_the_cause():
    trace = [call("cudaLaunchKernel", 0, 1, 1), kernel(2, 20, 1),
             call("cudaStreamSynchronize", 5, 5),  # ended at 10, while the GPU was still busy
             call("cudaLaunchKernel", 30, 1, 2), kernel(35, 5, 2)]
    g = gaps.idle_gaps(trace)["gaps"]
    assert g["host-bound launch"]["us"] == pytest.approx(13.0)
    assert g["after a host wait"]["count"] == 0
    # nor is one that ended only after the next activity had been issued
    later = [call("cudaLaunchKernel", 0, 1, 1), kernel(2, 20, 1), call("cudaLaunchKernel", 30, 1, 2),
             call("cudaStreamSynchronize", 31, 2), kernel(35, 5, 2)]
    g = gaps.idle_gaps(later)["gaps"]
    assert g["host-bound launch"]["count"] == 1 and g["after a host wait"]["count"] == 0


def test_a_wait_that_never_blocked_and_a_launch_still_running_are_the_hosts_delay():
    # the wait began after the GPU had gone idle: it returned at once, the host was the delay
    idle_wait = [call("cudaLaunchKernel", 0, 1, 1), kernel(2, 10, 1), call("cudaStreamSynchronize", 14, 1),
                 call("cudaLaunchKernel", 20, 1, 2), kernel(23, 5, 2)]
    g = gaps.idle_gaps(idle_wait)["gaps"]
    assert g["host-bound launch"]["count"] == 1 and g["after a host wait"]["count"] == 0
    # the launch call began before the previous kernel ended but returned after it: not queued
    straddling = [call("cudaLaunchKernel", 0, 1, 1), kernel(2, 10, 1), call("cudaLaunchKernel", 10, 6, 2),
                  kernel(17, 5, 2)]
    g = gaps.idle_gaps(straddling)["gaps"]
    assert g["host-bound launch"]["us"] == pytest.approx(5.0) and g["queued"]["count"] == 0


def test_overlapping_activities_leave_no_gap_and_busy_time_counts_once():
    trace = [call("cudaLaunchKernel", 0, 1, 1), kernel(2, 10, 1),
             call("cudaLaunchKernel", 1, 1, 2), kernel(8, 10, 2)]  # overlaps the first (another stream)
    result = gaps.idle_gaps(trace)
    assert sum(entry["count"] for entry in result["gaps"].values()) == 0
    assert result["gpu_busy_us"] == pytest.approx(16.0) and result["span_us"] == pytest.approx(16.0)


def test_gaps_past_the_limit_are_left_out_and_counted():
    trace = [call("cudaLaunchKernel", 0, 1, 1), kernel(2, 1, 1), call("cudaLaunchKernel", 5000, 1, 2),
             kernel(5003, 1, 2)]
    result = gaps.idle_gaps(trace, max_gap_us=1000.0)
    assert result["left_out_longer_than_max"] == 1 and result["left_out_us"] == pytest.approx(5000.0)
    assert sum(entry["us"] for entry in result["gaps"].values()) == 0.0
    with_short_gap = trace + [call("cudaLaunchKernel", 5005, 1, 3), kernel(5010, 2, 3)]
    result = gaps.idle_gaps(with_short_gap, max_gap_us=1000.0)
    shares = sum(entry["share_of_span"] for entry in result["gaps"].values())
    assert shares + result["gpu_busy_us"] / (result["span_us"] - result["left_out_us"]) == pytest.approx(1.0)


def test_an_empty_trace_and_the_per_update_division():
    assert gaps.idle_gaps({"traceEvents": []})["span_us"] == 0.0
    trace = [call("cudaLaunchKernel", 0, 1, 1), kernel(2, 1, 1), call("cudaLaunchKernel", 10, 1, 2), kernel(12, 1, 2)]
    assert gaps.per_update(gaps.idle_gaps(trace), 3)["host-bound launch"] == pytest.approx(3.0)
    assert gaps.per_update(gaps.idle_gaps(trace), 0) == {}
