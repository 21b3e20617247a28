"""The pending ladder's verdict (scripts/benchmarks/ladder_verdict.py):
per-round paired ratios against the first engine, and a rung called faster
or slower only outside the control engine's range in the same run; the
committed ladder records read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "benchmarks"))

import ladder_verdict  # noqa: E402


def case(seconds, klass="streaming", penalty="none"):
    return {"class": klass, "dtype": "float64", "penalty": penalty, "seconds": seconds}


def test_a_rung_is_faster_or_slower_only_outside_the_controls_range():
    record = {"cases": [case({
        "main": [10.0, 10.0, 10.0],
        "fast": [9.0, 9.1, 8.9],        # ratios about 1.10
        "slow": [11.0, 11.2, 10.9],     # about 0.91
        "level": [10.1, 9.9, 10.0],     # about 1.00
        "main_again": [10.3, 9.7, 10.0],  # the control: 0.97-1.03
    })]}
    by_rung = {row["rung"]: row for row in ladder_verdict.verdicts(record)}
    assert set(by_rung) == {"fast", "slow", "level"}
    assert by_rung["fast"]["verdict"] == "faster"
    assert by_rung["slow"]["verdict"] == "slower"
    assert by_rung["level"]["verdict"] == "within noise"
    assert by_rung["fast"]["median"] == pytest.approx(10.0 / 9.0)
    assert by_rung["fast"]["control"] == pytest.approx((10.0 / 10.3, 10.0 / 9.7))


def test_a_wide_control_hides_a_small_gain_and_no_control_says_so():
    noisy = {"cases": [case({"main": [10.0, 10.0, 10.0], "rung": [9.6, 9.6, 9.6],
                             "main_again": [9.0, 11.0, 10.0]})]}
    assert ladder_verdict.verdicts(noisy)[0]["verdict"] == "within noise"
    bare = {"cases": [case({"main": [10.0, 10.0], "rung": [9.0, 9.0]})]}
    row = ladder_verdict.verdicts(bare)[0]
    assert row["verdict"] == "no control" and row["control"] is None
    assert "no control" in ladder_verdict.format_row(row)


@pytest.mark.parametrize("path", sorted((ROOT / "docs" / "benchmarks").glob("pending_ladder_*.json")))
def test_the_committed_ladders_are_read(path, capsys):
    assert ladder_verdict.main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.split()[-1] in ("faster", "slower", "noise", "control") for line in lines)
