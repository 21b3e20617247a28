"""scripts/native_bit_identity.py's CUDA mode, checked where no GPU runs: its
streamer drives a backend through the protocol every backend shares, so
with the C++ CPU backend standing in for the CUDA one (the solver paths it
names are then the same engine) a dump must replay to identical records and
`compare` must catch a record that differs. gpu_check.sh's `bits` section
runs the real thing on the GPU machine."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import native_bit_identity  # noqa: E402

native_cpu_backend = pytest.importorskip("renewable_huber.backends.native_cpu_backend")
try:
    import _renewable_huber_native_cpu  # noqa: F401
except ImportError:  # pragma: no cover - the CPU engine is part of `make test`'s setup
    pytest.skip("needs the native CPU engine", allow_module_level=True)


@pytest.fixture
def stand_in(monkeypatch):
    from renewable_huber.backends import native_cuda_backend

    monkeypatch.setattr(native_cuda_backend, "NativeCudaBackend", native_cpu_backend.NativeCpuBackend)
    monkeypatch.setattr(native_cuda_backend, "runtime_info", lambda: {"stand_in": True})
    few = {name: list(getattr(native_bit_identity, name)())[:2]
           for name in ("corpus_problems", "differential_problems", "demo_problems")}
    for name, problems in few.items():
        monkeypatch.setattr(native_bit_identity, name, lambda problems=problems: iter(problems))


def dump(tmp_path, name):
    out = tmp_path / name
    native_bit_identity.dump(types.SimpleNamespace(out=str(out), class_batches=1, engine="native_cuda"))
    return out


def test_a_cuda_dump_names_every_solver_path_and_replays_to_the_same_records(stand_in, tmp_path):
    before, after = dump(tmp_path, "before.json"), dump(tmp_path, "after.json")
    results = json.loads(before.read_text())["results"]
    paths = {key.rsplit("|", 1)[1] for key in results}
    assert paths == {"pipeline", "auto", "block"}
    # wide (d = 257) is past the block solver: pipeline and auto only
    assert not any(key.startswith("class/wide/") and key.endswith("|block") for key in results)
    assert all(record["state"] and "iterations" in record for records in results.values() for record in records)
    args = types.SimpleNamespace(before=str(before), after=str(after), ignore=None)
    assert native_bit_identity.compare(args) == 0


def test_compare_reports_a_state_that_differs_in_one_update(stand_in, tmp_path, capsys):
    before = dump(tmp_path, "before.json")
    data = json.loads(before.read_text())
    key = sorted(data["results"])[0]
    data["results"][key][-1]["state"] = "0" * 64
    after = tmp_path / "after.json"
    after.write_text(json.dumps(data))
    args = types.SimpleNamespace(before=str(before), after=str(after), ignore=None)
    assert native_bit_identity.compare(args) == 1
    assert f"differs: {key}" in capsys.readouterr().out


def test_allow_changed_d_excuses_only_streams_of_that_size(stand_in, tmp_path, capsys):
    before = dump(tmp_path, "before.json")
    data = json.loads(before.read_text())
    sizes = data["d"]
    assert set(sizes) == set(data["results"])
    wide = next(key for key in sorted(sizes) if key.startswith("class/wide/"))
    narrow = next(key for key in sorted(sizes) if sizes[key] < 48)
    assert sizes[wide] == 257
    data["results"][wide][0]["state"] = "0" * 64
    after = tmp_path / "after.json"
    after.write_text(json.dumps(data))

    def compare(allowed):
        args = types.SimpleNamespace(before=str(before), after=str(after), ignore=None, allow_changed_d=allowed)
        return native_bit_identity.compare(args)

    assert compare((200, 300)) == 0
    assert "1 differ (allowed)" in capsys.readouterr().out
    assert compare((49, 112)) == 1
    assert f"differs: {wide} (d = 257;" in capsys.readouterr().out
    data["results"][narrow][0]["iterations"] = -1
    after.write_text(json.dumps(data))
    assert compare((200, 300)) == 1
    assert f"differs: {narrow}" in capsys.readouterr().out
