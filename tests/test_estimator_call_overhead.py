"""estimator_call_overhead.py (the Python layer's cost per call over a null
engine, issue 28's lean estimator path): the null engine really stands for
the binding's (the estimator absorbs batches through it, device-fed through
the DLPack path), and the record holds each feed's medians of its rounds."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "profiling"))

pytest.importorskip("_renewable_huber_native_cuda")

import estimator_call_overhead as overhead  # noqa: E402


@pytest.fixture
def null_engine(monkeypatch):
    """install_null_engine's changes to the binding module, undone after the test."""
    from renewable_huber.backends import native_cuda_backend as backend

    for name in ("Engine", "SolverConfig"):
        monkeypatch.setattr(backend._native, name, getattr(backend._native, name))
    monkeypatch.setattr(backend, "runtime_info", backend.runtime_info)
    overhead.install_null_engine()


@pytest.mark.parametrize("feed", ["host", "device"])
def test_the_estimator_absorbs_batches_through_the_null_engine(null_engine, feed):
    from renewable_huber import RenewableHuberRegressor
    import numpy as np

    X, y = np.ones((5, 3)), np.arange(5.0)
    if feed == "device":
        X, y = overhead.FakeDeviceArray(X), overhead.FakeDeviceArray(y)
    model = RenewableHuberRegressor(backend="native_cuda", device="cuda").fit(X, y)
    model.partial_fit(X, y)
    assert model.__dict__["_stream"].pending is not None  # a null engine leaves it queued as the device loop does
    assert model.n_samples_seen_ == 10 and model.n_iter_ == 3 and model.backend_ == "native_cuda"
    engine = model._current_backend()._engine
    assert isinstance(engine, overhead.NullEngine) and engine.batches == 2


def test_the_record_has_each_feeds_medians(null_engine, tmp_path):
    out = tmp_path / "overhead.json"
    assert overhead.main(["--calls", "20", "--rounds", "3", "--rows", "8", "--features", "2", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["schema"] == "renewable-huber-estimator-call-overhead"
    assert [(case["feed"], case["results"]) for case in record["cases"]] == [
        ("host", "deferred"), ("host", "immediate"), ("device", "deferred"), ("device", "immediate")]
    for case in record["cases"]:
        assert len(case["partial_fit_us_rounds"]) == 3 and len(case["cold_stream_us_rounds"]) == 3
        assert case["partial_fit_us"] == round(statistics.median(case["partial_fit_us_rounds"]), 2)
        assert case["cold_stream_us"] == round(statistics.median(case["cold_stream_us_rounds"]), 2)
        assert case["partial_fit_us"] > 0
