"""The CUDA profiling script's analysis (scripts/profiling/profile_cuda_update.py),
on synthetic traces and Nsight Compute CSVs: kernel names to the five
questions' categories, time shares, allocation calls, both CSV layouts ncu
writes, and the memory/divergence verdict. The GPU runs it on real traces
(scripts/device/gpu_check.sh profile)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "profiling"))

import profile_cuda_update as profiler  # noqa: E402


@pytest.mark.parametrize("name, expected", [
    ("void rh::cuda::(anonymous namespace)::narrow_gram_kernel<double>(long, ...)", "weighted Gram"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_d884gemm_64x32_16x4_nn_align1>(...)", "weighted Gram"),
    ("void rh::cuda::(anonymous namespace)::small_cholesky_step_kernel<double>(long, ...)", "dense solve"),
    ("void potrf_alg2_cuda<double>(...)", "dense solve"),
    ("void rh::cuda::(anonymous namespace)::small_newton_step_kernel<double>(rh::cuda::SurrogateTerms<double>, ...)",
     "dense solve"),
    ("void rh::cuda::(anonymous namespace)::narrow_score_gram_kernel<double, 5>(long, ...)", "weighted Gram"),
    ("void rh::cuda::(anonymous namespace)::score_rows_kernel<float>(...)", "Huber row terms"),
    ("void rh::cuda::(anonymous namespace)::step_line_search_kernel<double, 4>(long, ...)", "Huber row terms"),
    ("void rh::cuda::(anonymous namespace)::lamm_trial_rows_kernel<float, 2>(long, ...)", "Huber row terms"),
    ("void rh::cuda::(anonymous namespace)::start_rows_kernel<double, 5>(long, ...)", "Huber row terms"),
    ("void rh::cuda::(anonymous namespace)::line_search_decide_kernel<double>(...)", "d-sized decisions"),
    ("void rh::cuda::(anonymous namespace)::block_solver_kernel<double>(rh::cuda::BlockProblem<double>)",
     "block solver (whole update)"),
    ("Memcpy HtoD (Pageable -> Device)", "host-to-device copy"),
    ("Memcpy DtoH (Device -> Pinned)", "device-to-host copy"),
    ("std::enable_if<!(false), void>::type internal::gemvx::kernel<...>", "other BLAS (GEMV, dot)"),
    ("some_kernel_nobody_knows", "other"),
])
def test_kernel_names_map_to_the_questions_categories(name, expected):
    assert profiler.category(name) == expected


def test_shares_of_gpu_and_wall_time():
    events = [("narrow_gram_kernel<double>", 30.0, 3), ("small_cholesky_step_kernel<double>", 10.0, 3),
              ("Memcpy HtoD (Pageable -> Device)", 60.0, 6), ("cudaLaunchKernel", 0.0, 40)]
    summary = profiler.summarize_events(events, wall_us=200.0)
    assert summary["gpu_busy_us"] == 100.0 and summary["gpu_busy_fraction"] == 0.5
    gram = summary["categories"]["weighted Gram"]
    assert gram["share_of_gpu_time"] == pytest.approx(0.3) and gram["share_of_wall_time"] == pytest.approx(0.15)
    assert summary["categories"]["host-to-device copy"]["share_of_wall_time"] == pytest.approx(0.3)
    assert [k["category"] for k in summary["kernels"]] == ["host-to-device copy", "weighted Gram", "dense solve"]
    assert "cudaLaunchKernel" not in {k["name"] for k in summary["kernels"]}  # host calls take no device time


def test_allocation_calls_are_counted_and_nothing_else():
    seen = profiler.allocation_calls([("cudaMalloc", 2), ("cudaLaunchKernel", 50), ("cudaFree", 1),
                                      ("cudaMallocHost", 1), ("cudaMemcpyAsync", 9)])
    assert seen == {"cudaMalloc": 2, "cudaFree": 1, "cudaMallocHost": 1}
    assert profiler.allocation_calls([("cudaStreamSynchronize", 8)]) == {}


METRIC_ROWS = '''==PROF== Connected to process 1500
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1500","python3","h","void score_rows_kernel<double>(long)","1","13","(256, 1, 1)","(1024, 1, 1)","0","9.0","m","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","81.5"
"0","1500","python3","h","void score_rows_kernel<double>(long)","1","13","(256, 1, 1)","(1024, 1, 1)","0","9.0","m","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","20.1"
"0","1500","python3","h","void score_rows_kernel<double>(long)","1","13","(256, 1, 1)","(1024, 1, 1)","0","9.0","m","smsp__thread_inst_executed_per_inst_executed.ratio","","31.9"
"0","1500","python3","h","void score_rows_kernel<double>(long)","1","13","(256, 1, 1)","(1024, 1, 1)","0","9.0","m","gpu__time_duration.sum","ns","6,784"
"1","1500","python3","h","void lamm_trials_kernel<double>(long)","1","13","(256, 1, 1)","(16, 1, 1)","0","9.0","m","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","4.9"
"1","1500","python3","h","void lamm_trials_kernel<double>(long)","1","13","(256, 1, 1)","(16, 1, 1)","0","9.0","m","sm__throughput.avg.pct_of_peak_sustained_elapsed","%","12.0"
"1","1500","python3","h","void lamm_trials_kernel<double>(long)","1","13","(256, 1, 1)","(16, 1, 1)","0","9.0","m","smsp__thread_inst_executed_per_inst_executed.ratio","","30.0"
"2","1500","python3","h","void line_search_losses_kernel<float>(long)","1","13","(256, 1, 1)","(16, 1, 1)","0","9.0","m","smsp__thread_inst_executed_per_inst_executed.ratio","","14.0"
"3","1500","python3","h","void narrow_gram_kernel<double>(long)","1","13","(256, 1, 1)","(132, 1, 1)","0","9.0","m","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","50.0"
'''


def test_the_metric_per_row_csv_and_the_verdicts():
    launches = profiler.parse_ncu_csv(METRIC_ROWS)
    assert len(launches) == 4
    assert launches[0]["gpu__time_duration.sum"] == 6784.0  # thousands separators read
    bound = profiler.huber_bound(launches)
    assert set(bound) == {"score_rows", "lamm_trials", "line_search_losses"}  # the Gram is not a Huber kernel
    assert bound["score_rows"]["verdict"].startswith("memory-bound")
    assert bound["lamm_trials"]["verdict"].startswith("latency-bound")
    assert bound["line_search_losses"]["verdict"].startswith("divergence-bound")
    assert bound["score_rows"]["launches"] == 1 and bound["score_rows"]["dram_pct"] == 81.5


RAW_PAGE = '''"ID","Kernel Name","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","sm__throughput.avg.pct_of_peak_sustained_elapsed","smsp__thread_inst_executed_per_inst_executed.ratio"
"","","ns","%","%",""
"0","start_residual_kernel<double>","2,000","70.0","30.0","32.0"
"1","start_residual_kernel<double>","3,000","90.0","35.0","32.0"
"2","start_residual_kernel<double>","4,000","80.0","31.0","32.0"
'''


def test_the_raw_page_csv_and_medians():
    launches = profiler.parse_ncu_csv(RAW_PAGE)
    assert [launch["gpu__time_duration.sum"] for launch in launches] == [2000.0, 3000.0, 4000.0]
    entry = profiler.huber_bound(launches)["start_residual"]
    assert entry["launches"] == 3 and entry["dram_pct"] == 80.0 and entry["duration_ns"] == 3000.0
    assert entry["verdict"].startswith("memory-bound")


def test_nothing_to_parse_gives_nothing():
    assert profiler.parse_ncu_csv("==PROF== No kernels were profiled.\n") == []
    assert profiler.huber_bound([]) == {}


class _FakeTrace:
    """What traced_idle_gaps needs of torch.profiler's profile: export_chrome_trace."""

    def __init__(self, events=None, error=None):
        self.events, self.error = events, error

    def export_chrome_trace(self, path):
        if self.error:
            raise self.error
        Path(path).write_text(__import__("json").dumps({"traceEvents": self.events}))


def test_the_traced_idle_gaps_come_per_update_and_a_failure_is_recorded_not_raised():
    events = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 0, "dur": 1,
               "args": {"correlation": 1}},
              {"ph": "X", "cat": "kernel", "name": "a", "ts": 2, "dur": 3, "args": {"correlation": 1}},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 1, "dur": 5, "args": {}},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 8, "dur": 1,
               "args": {"correlation": 2}},
              {"ph": "X", "cat": "kernel", "name": "b", "ts": 11, "dur": 3, "args": {"correlation": 2}}]
    gaps = profiler.traced_idle_gaps(_FakeTrace(events), updates=2)
    assert gaps["us_per_update"]["after a host wait"] == pytest.approx(3.0)
    assert gaps["span_us"] == pytest.approx(12.0)
    failed = profiler.traced_idle_gaps(_FakeTrace(error=OSError("disk full")), updates=2)
    assert failed == {"error": "OSError: disk full"}
