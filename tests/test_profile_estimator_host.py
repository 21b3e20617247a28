"""profile_estimator_host.py (where a stream's host time goes, issue 28):
on the NumPy backend, the record it writes for both lifecycles, with the
estimator's own calls among the functions it names. The GPU runs it on
native_cuda (scripts/device/gpu_check.sh host_profile)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "profiling"))

import profile_estimator_host as profile  # noqa: E402


def test_the_record_names_the_estimators_calls_for_both_lifecycles(tmp_path, capsys):
    out = tmp_path / "host.json"
    assert profile.main(["--backend", "numpy", "--class", "latency", "--penalty", "l1", "--streams", "3",
                         "--top", "40", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["schema"] == "renewable-huber-estimator-host-profile"
    assert set(record["lifecycles"]) == {"cold", "steady"}
    for lifecycle, entry in record["lifecycles"].items():
        assert entry["ms_per_stream"] > 0 and entry["ms_per_stream_profiled"] > 0
        assert len(entry["by_own_time"]) == 40 and len(entry["by_cumulative_time"]) == 40
        cumulative = [row["cumulative_ms_per_stream"] for row in entry["by_cumulative_time"]]
        assert cumulative == sorted(cumulative, reverse=True), lifecycle
        fits = [row for row in entry["by_cumulative_time"] if row["function"].startswith("renewable_huber/estimator.py")
                and row["function"].endswith("(fit)")]
        assert len(fits) == 1 and fits[0]["calls_per_stream"] == 1.0, lifecycle
    assert out.with_suffix(".txt").read_text().startswith("numpy@host latency float64 l1 cold:")
    assert "steady:" in capsys.readouterr().out
