"""stream_timeline.py (a stream's time step by step, per CUDA solver route,
issue 28): on the NumPy backend, the record's cases and summaries, each
route's own samples, and the summary's medians from those samples. The GPU
runs it on native_cuda (scripts/device/gpu_check.sh stream_timeline)."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "profiling"))

import stream_timeline as timeline  # noqa: E402


def test_each_route_and_dtype_has_its_samples_and_their_medians(tmp_path, capsys):
    out = tmp_path / "timeline.json"
    assert timeline.main(["--backend", "numpy", "--feed", "host", "--shape-class", "latency-smoke", "--rounds", "3",
                          "--routes", "pipeline", "auto", "--dtypes", "float64", "float32", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["schema"] == "renewable-huber-stream-timeline"
    assert [(c["dtype"], c["route"]) for c in record["cases"]] == [
        ("float64", "pipeline"), ("float64", "auto"), ("float32", "pipeline"), ("float32", "auto")]
    for case in record["cases"]:
        samples = case["samples"]
        assert set(samples) == {"cold_whole", "cold_steps", "steady_whole", "steady_steps"}
        assert all(len(streams) == 3 for streams in samples.values())
        # steps: the first batch, each later batch, the final synchronization
        assert all(len(s) == case["batches"] + 1 for s in samples["cold_steps"])
        assert all(len(s) == 1 for s in samples["cold_whole"])
        summary = case["summary"]["cold_steps"]
        assert summary["first_batch_ms"] == statistics.median(s[0] for s in samples["cold_steps"]) * 1e3
        assert summary["later_update_ms"] == statistics.median(
            statistics.median(s[1:-1]) for s in samples["cold_steps"]) * 1e3
        assert case["summary"]["steady_whole"]["stream_ms"] == statistics.median(
            s[0] for s in samples["steady_whole"]) * 1e3
        # NumPy has no CUDA counters: one empty rise a stream, none summarized
        assert all(rise == {} for rises in case["counters"].values() for rise in rises)
        assert len(case["counters"]["cold_steps"]) == 3
        assert not any(name.endswith("_per_stream") for values in case["summary"].values() for name in values)
    assert "RH_CUDA_SOLVER" not in __import__("os").environ
    assert capsys.readouterr().out.count("latency-smoke") == 4


def test_the_summary_takes_medians_of_the_steps():
    streams = [[0.004, 0.001, 0.003, 0.002, 0.0], [0.006, 0.002, 0.002, 0.002, 0.001], [0.005, 0.001, 0.001, 0.001, 0.0]]
    summary = timeline.summary({"cold_steps": streams, "cold_whole": [[0.01], [0.03], [0.02]]})
    assert summary["cold_steps"]["first_batch_ms"] == 5.0
    assert summary["cold_steps"]["later_update_ms"] == 2.0  # medians 2, 2, 1 ms
    assert abs(summary["cold_steps"]["stream_ms"] - 10.0) < 1e-9  # totals 10, 13, 8 ms
    assert summary["cold_whole"]["stream_ms"] == 20.0


def test_the_summary_takes_the_median_rise_of_each_engine_counter():
    streams = [[0.004, 0.001, 0.0], [0.006, 0.001, 0.0], [0.005, 0.001, 0.0]]
    rises = [{"host_syncs": 16, "graph_captures": 1}, {"host_syncs": 64, "graph_captures": 1},
             {"host_syncs": 17, "graph_captures": 0}]
    summary = timeline.summary({"steady_steps": streams}, {"steady_steps": rises})["steady_steps"]
    assert summary["host_syncs_per_stream"] == 17 and summary["graph_captures_per_stream"] == 1
    assert "graph_replays_per_stream" not in summary  # no stream had it


class Estimator:
    """What timed_stream (run_stream) reads of an estimator: fit/partial_fit, diagnostics_, cuda_features_."""

    def __init__(self):
        self.cuda_features_ = {"host_syncs": 5, "graph_captures": 2, "graph_replays": 7, "updates": 3}
        self.diagnostics_ = type("D", (), {"converged": True, "iterations": 1})()

    def fit(self, X, y):
        self.cuda_features_["host_syncs"] += 1

    partial_fit = fit


def test_a_stream_reports_what_the_engine_counters_rose_by():
    primed = Estimator()
    steps, rose = timeline.timed_stream(primed, [(None, None)] * 4, lambda: None, True)
    assert len(steps) == 5 and rose == {"host_syncs": 4, "graph_captures": 0, "graph_replays": 0}
    steps, rose = timeline.timed_stream(Estimator, [(None, None)] * 3, lambda: None, False)
    assert len(steps) == 1 and rose == {"host_syncs": 8, "graph_captures": 2, "graph_replays": 7}  # a new engine


def test_the_native_cuda_path_runs_over_the_host_stand_in_with_each_route_set_when_its_engine_is_made(
        tmp_path, monkeypatch):
    """The script's native_cuda case (device="cuda", RH_CUDA_SOLVER per
    route) over the CUDA engine's host stand-in: every stream's engine is
    made under its own route's setting, and the record holds both routes."""
    import os

    import host_cuda_engine

    seen = []
    monkeypatch.setattr(timeline, "synchronizer", lambda backend: lambda: seen.append(os.environ["RH_CUDA_SOLVER"]))
    monkeypatch.delenv("RH_CUDA_SOLVER", raising=False)
    with host_cuda_engine.installed(monkeypatch):
        from renewable_huber.backends import native_cuda_backend

        made = []
        requested = native_cuda_backend.solver_choice_requested
        monkeypatch.setattr(native_cuda_backend, "solver_choice_requested", lambda: made.append(requested()) or made[-1])
        out = tmp_path / "cuda.json"
        assert timeline.main(["--feed", "host", "--shape-class", "latency-smoke", "--rounds", "2",
                              "--dtypes", "float32", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["backend"] == "native_cuda"
    assert [(c["dtype"], c["route"]) for c in record["cases"]] == [("float32", "pipeline"), ("float32", "auto")]
    assert set(made) == {"pipeline", "auto"} and set(seen) == {"pipeline", "auto"}
    assert "RH_CUDA_SOLVER" not in os.environ
