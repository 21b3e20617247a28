"""Issue 28's streaming floor (scripts/profiling/streaming_floor.py): the
sum of Nsight Compute's DRAM bytes over a stream's kernel launches (in each
row's unit), and the floor from them and the copy's traffic rate. The GPU
runs it (scripts/device/gpu_check.sh floor)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "profiling"))

import streaming_floor as floor  # noqa: E402

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Metric Name","Metric Unit",' \
         '"Metric Value"'


def _row(launch, metric, unit, value):
    return f'"{launch}","1","python3","h","k{launch}","1","13","{metric}","{unit}","{value}"'


def test_bytes_are_summed_over_launches_in_their_units():
    text = "\n".join(["==PROF== noise", HEADER,
                      _row(0, "dram__bytes_read.sum", "byte", "1,000"),
                      _row(0, "gpu__time_duration.sum", "nsecond", "5"),
                      _row(1, "dram__bytes_read.sum", "Kbyte", "2.5"),
                      _row(2, "dram__bytes_read.sum", "Mbyte", "1")])
    total, launches = floor.dram_bytes(text)
    assert total == pytest.approx(1_000 + 2_500 + 1_000_000) and launches == 3


@pytest.mark.parametrize("text, message", [
    ("no csv at all", "no CSV rows"),
    (HEADER + "\n" + _row(0, "gpu__time_duration.sum", "nsecond", "5"), "no dram__bytes_read.sum rows"),
    (HEADER + "\n" + _row(0, "dram__bytes_read.sum", "furlong", "5"), "unknown unit"),
    ('"ID","Kernel Name","dram__bytes_read.sum"\n"0","k","5"', "not a metric-per-row CSV"),
])
def test_what_is_not_a_stream_of_byte_counts_is_refused_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        floor.dram_bytes(text)


def test_the_floor_is_the_bytes_read_over_the_copys_traffic_rate():
    bandwidth = {"bytes_copied": 2 ** 30, "median_s": 0.5e-3, "copy_bytes_per_s": 2 ** 30 / 0.5e-3,
                 "dram_bytes_per_s": 2 * 2 ** 30 / 0.5e-3, "repeats": 20}
    record = floor.floor_record(2 * 2 ** 30, 800, bandwidth)
    assert record["floor_ms"] == pytest.approx(0.5) and record["kernel_launches"] == 800
    assert record["copy"] is bandwidth and "shape sweep" in record["definition"]
