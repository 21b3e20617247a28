"""The performance policy's tools on synthetic records (issue 15 item 2):
scripts/benchmarks/performance_gates.py. No timing happens here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "benchmarks"))

import performance_gates as gates  # noqa: E402

CPU = {"cpu_model": "Xeon", "cores": 2}
GPU = {"cpu_model": "EPYC", "cpu_count": 16, "gpu": {"name": "NVIDIA H200"}}


def timings(median, spread=0.01, n=9):
    """n (odd) timings around `median`, relative MAD `spread`."""
    return [median * (1 + spread * k / 2) for k in range(-(n // 2), n // 2 + 1)]


def record(environment, **engines_by_case):
    cases = []
    for key, engines in engines_by_case.items():
        shape, dtype, penalty = key.split("__")
        cases.append({"class": shape, "dtype": dtype, "penalty": penalty,
                      "engines": {name: {"timings_s": t} for name, t in engines.items()}})
    return {"environment": environment, "cases": cases}


def test_the_synthetic_timings_have_the_stated_spread():
    assert gates.relative_mad(timings(2.0, spread=0.08)) == pytest.approx(0.08)


def test_regression_passes_within_the_margin_and_fails_beyond_it():
    base = record(CPU, latency__float64__none={"native_cpu": timings(1.0), "numpy": timings(10.0)})
    within = record(CPU, latency__float64__none={"native_cpu": timings(1.09), "numpy": timings(10.0)})
    beyond = record(CPU, latency__float64__none={"native_cpu": timings(1.11), "numpy": timings(10.0)})
    assert gates.regression(base, within) == []
    (problem,) = gates.regression(base, beyond)
    assert "latency/float64/none native_cpu: 11.0% slower (limit 10%)" == problem


def test_gpu_engines_get_the_gpu_margins():
    base = record(GPU, reference__float32__l1={"native_cuda_device": timings(1.0, spread=0.08)})
    assert gates.regression(base, record(GPU, reference__float32__l1={"native_cuda_device": timings(1.14, 0.08)})) == []
    assert gates.regression(base, record(GPU, reference__float32__l1={"native_cuda_device": timings(1.16, 0.08)}))
    noisy = record(CPU, latency__float64__none={"native_cpu": timings(1.0, spread=0.08)})
    (problem,) = gates.regression(record(CPU, latency__float64__none={"native_cpu": timings(1.0)}), noisy)
    assert "not comparable: relative MAD over 5% in candidate" in problem  # 8% passes on a GPU, not on a CPU


def test_regression_refuses_what_cannot_be_compared():
    base = record(CPU, latency__float64__none={"native_cpu": timings(1.0)})
    assert "different hardware" in gates.regression(base, record(GPU, latency__float64__none={"native_cpu": timings(1.0)}))[0]
    short = record(CPU, latency__float64__none={"native_cpu": timings(1.0, n=5)})
    assert "5 repeats < 9" in gates.regression(base, short)[0]
    unconverged = record(CPU, latency__float64__none={"native_cpu": timings(1.0)})
    unconverged["cases"][0]["engines"]["native_cpu"]["all_batches_converged"] = False
    assert "did not converge" in gates.regression(base, unconverged)[0]


def test_competitor_promotes_only_where_the_native_engine_is_as_fast():
    r = record(GPU, latency__float64__none={"native_cuda_device": timings(2.0), "cupy": timings(1.0)},
               reference__float64__none={"native_cuda_device": timings(1.0), "cupy": timings(10.0)})
    rows = {row[0]: row for row in gates.competitor(r)}
    assert rows["latency/float64/none"][3] is False and rows["latency/float64/none"][4] == pytest.approx(0.5)
    assert rows["reference/float64/none"][3] is True and rows["reference/float64/none"][4] == pytest.approx(10.0)


def test_the_advisor_needs_a_ten_percent_margin():
    r = record(CPU, latency__float64__none={"native_cpu": timings(1.0), "numpy": timings(1.05)},
               wide__float64__l1={"native_cpu": timings(1.0), "numpy": timings(1.2)})
    assert gates.advise(r, ("latency", "float64", "none"), "cpu")[0] == "numpy"
    assert gates.advise(r, ("wide", "float64", "l1"), "cpu")[0] == "native_cpu"
    g = record(GPU, streaming__float32__l1={"native_cuda_device": timings(1.0), "cupy": timings(10.0)})
    backend, why = gates.advise(g, ("streaming", "float32", "l1"), "cuda")
    assert backend == "native_cuda" and "10.00x cupy" in why
    with pytest.raises(KeyError, match="no case"):
        gates.advise(r, ("reference", "float64", "none"), "cpu")


def test_the_command_line_exit_status(tmp_path):
    base, slow = tmp_path / "base.json", tmp_path / "slow.json"
    base.write_text(json.dumps(record(CPU, latency__float64__none={"native_cpu": timings(1.0)})))
    slow.write_text(json.dumps(record(CPU, latency__float64__none={"native_cpu": timings(1.5)})))
    assert gates.main(["regression", "--baseline", str(base), "--candidate", str(base)]) == 0
    assert gates.main(["regression", "--baseline", str(base), "--candidate", str(slow)]) == 1


def test_the_committed_records_are_read():
    """The committed H200 record goes through the competitor gate and the advisor."""
    path = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "native_cuda_h200.json"
    r = json.loads(path.read_text())
    rows = gates.competitor(r)
    assert {row[1] for row in rows} >= {"native_cpu", "native_cuda_device"}
    assert gates.advise(r, ("reference", "float64", "none"), "cuda")[0] == "native_cuda"
