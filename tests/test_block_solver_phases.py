"""The block solver's phase clocks (issue 28's profile of small batches):
block_solver_phases.py's reading of the device's lines, on synthetic
output, and the promise phase_clocks.cuh makes: an engine built without
RH_BLOCK_PHASE_CLOCKS carries none of it. The GPU runs the script on real
launches (scripts/device/gpu_check.sh phases)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "profiling"))

import block_solver_phases as phases  # noqa: E402


def _line(rows, d, element_bytes, l1, total, cholesky=300):
    values = {"rows": rows, "d": d, "element_bytes": element_bytes, "l1": l1, "blocks": 8, "iterations": 6,
              "total": total, "solve": total - 200, "driver_own": 100, "closing": 200,
              **{name: [100, 7] for name in phases.PHASES}}
    values["cholesky"] = [cholesky, 6]
    return phases.PHASE_MARK + json.dumps(values)


def _case(rows, features, dtype, penalty):
    return phases.CASE_MARK + json.dumps({"rows": rows, "features": features, "dtype": dtype, "penalty": penalty,
                                          "seed": 0})


WALL = 'RH_WALL {"walls_s": [0.001, 0.003, 0.002], "solver_path": "block", "host_syncs": 2}'


def test_launches_are_matched_to_cases_by_shape_not_by_place():
    # The C library's buffer delivers the device's lines after the marks:
    # the warm-ups (two per case) come first and must not be counted.
    output = "\n".join([
        _case(4096, 16, "float64", "none"), WALL, _case(4096, 16, "float32", "l1"), WALL,
        _line(4096, 17, 8, 0, 99_999), _line(4096, 17, 8, 0, 99_999),
        _line(4096, 17, 8, 0, 1000), _line(4096, 17, 8, 0, 1400), _line(4096, 17, 8, 0, 1200),
        _line(4096, 17, 4, 1, 77_777), _line(4096, 17, 4, 1, 77_777),
        _line(4096, 17, 4, 1, 500), _line(4096, 17, 4, 1, 700), _line(4096, 17, 4, 1, 600), "unrelated text"])
    runs = phases.parse(output, updates=3)
    assert [case["dtype"] for case, _, _ in runs] == ["float64", "float32"]
    assert [[line["total"] for line in lines] for _, lines, _ in runs] == [[1000, 1400, 1200], [500, 700, 600]]


def test_summary_gives_medians_shares_and_microseconds():
    output = "\n".join([_case(64, 3, "float64", "none"), WALL, _line(64, 4, 8, 0, 1000, cholesky=500),
                        _line(64, 4, 8, 0, 3000, cholesky=700), _line(64, 4, 8, 0, 2000, cholesky=600)])
    (case, lines, wall), = phases.parse(output, updates=3)
    summary = phases.summarize(case, lines, wall, clock_khz=2_000_000.0)
    assert summary["total_cycles"] == 2000 and summary["total_us"] == pytest.approx(1.0)
    assert summary["phases"]["cholesky"] == {"cycles": 600, "us": pytest.approx(0.3), "share": pytest.approx(0.3),
                                             "entries": 6}
    assert summary["phases"]["driver_own"]["cycles"] == 100 and "entries" not in summary["phases"]["driver_own"]
    assert summary["update_wall_ms"] == pytest.approx(2.0) and summary["launches"] == 3


def test_a_case_without_launches_is_reported_empty():
    (case, lines, _), = phases.parse("\n".join([_case(64, 3, "float64", "none"), WALL]), updates=3)
    assert lines == []


@pytest.mark.skipif(importlib.util.find_spec("_renewable_huber_native_cuda") is None,
                    reason="the CUDA engine is not installed")
def test_the_installed_engine_carries_no_phase_clocks():
    # phase_clocks.cuh: without RH_BLOCK_PHASE_CLOCKS the clocks compile to
    # nothing, so the device code's format string is absent from the library
    # (a clocked build carries it: block_solver_phases.sh's wheel).
    import _renewable_huber_native_cuda as native

    libraries = list(Path(native.__file__).parent.glob("renewable_huber_native_cuda.libs/librh_cuda*.so*"))
    libraries += list(Path(native.__file__).parent.glob("librh_cuda*.so*"))
    assert libraries, "librh_cuda.so not found beside the module"
    for library in libraries:
        assert phases.PHASE_MARK.strip().encode() not in library.read_bytes(), library
