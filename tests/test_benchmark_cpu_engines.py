"""benchmark_cpu_engines.py's lifecycles: cold builds an estimator inside
every timed stream, steady reuses one primed estimator per case and engine
(the update path alone). Structure only: no timing is asserted."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "benchmarks" / "benchmark_cpu_engines.py"


def run(tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "record.json"
    command = [sys.executable, str(SCRIPT), "--engine", f"a={sys.executable}:numpy",
               "--engine", f"b={sys.executable}:numpy", "--classes", "latency", "--dtypes", "float64",
               "--penalties", "none", "--rounds", "3", "--out", str(out), *extra]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("lifecycle", ["cold", "steady"])
def test_a_lifecycle_is_recorded_and_steady_reuses_one_estimator(tmp_path, lifecycle):
    record = run(tmp_path, *(["--lifecycle", lifecycle] if lifecycle == "steady" else []))
    assert record["lifecycle"] == lifecycle
    (case,) = record["cases"]
    assert {len(seconds) for seconds in case["seconds"].values()} == {3}
    assert set(case["ratio_to_first"]) == {"b"}
    if lifecycle == "steady":
        assert case["estimators"] == {"a": 1, "b": 1}
    else:  # a new estimator each stream (ids of collected ones may repeat: at least two)
        assert all(count >= 2 for count in case["estimators"].values()), case["estimators"]


def test_engine_env_reaches_that_engines_worker_only(tmp_path):
    record = run(tmp_path, "--engine-env", "b=RH_BENCH_PROBE=1")
    assert record["engines"]["b"]["env"] == {"RH_BENCH_PROBE": "1"}
    assert "env" not in record["engines"]["a"]
    # a variable the interpreter itself reads: b's worker cannot start, the run fails
    out = tmp_path / "broken.json"
    command = [sys.executable, str(SCRIPT), "--engine", f"a={sys.executable}:numpy",
               "--engine", f"b={sys.executable}:numpy", "--engine-env", "b=PYTHONHOME=/nonexistent",
               "--classes", "latency", "--rounds", "1", "--out", str(out)]
    assert subprocess.run(command, capture_output=True, text=True, timeout=600).returncode != 0


def test_a_malformed_engine_env_is_refused_by_name(tmp_path):
    command = [sys.executable, str(SCRIPT), "--engine", f"a={sys.executable}:numpy", "--engine-env", "a=NOVALUE",
               "--out", str(tmp_path / "r.json")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "--engine-env" in done.stderr
