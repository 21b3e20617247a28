"""The schema-v2 shape sweep (issue 15 item 1) on the smoke profile: it runs,
its record validates and the gates read it; the validator catches broken
records; the memory cap refuses before anything runs. Tests of the tooling,
not timings: no assertion looks at a duration's size."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "benchmarks"))

import benchmark_shape_sweep as sweep  # noqa: E402
import performance_gates as gates  # noqa: E402
from benchmark_native_cpu_paired import make_stream  # noqa: E402

NATIVE = importlib.util.find_spec("_renewable_huber_native_cpu") is not None


@pytest.fixture(scope="module")
def smoke_record(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "smoke.json"
    engines = ["numpy"] + (["native_cpu"] if NATIVE else []) + ["cupy_device_input"]
    assert sweep.main(["--profile", "smoke", "--engines", *engines, "--dtypes", "float64", "--repeats", "2",
                       "--warmups", "1", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_the_smoke_sweep_covers_classes_penalties_and_lifecycles(smoke_record):
    assert sweep.validate(smoke_record) == []
    keys = {(c["class"], c["dtype"], c["penalty"], c["lifecycle"]) for c in smoke_record["cases"]}
    assert keys == {(k, "float64", p, life) for k in ("latency-smoke", "reference-smoke") for p in ("none", "l1")
                    for life in ("steady", "cold")}
    case = smoke_record["cases"][0]
    assert case["shape"] == [2048, 8] and case["batches"] == 2 and len(case["dataset_sha256"]) == 64
    for result in case["engines"].values():
        assert len(result["timings_s"]) == 2 and result["all_batches_converged"] is True
        assert result["iterations"] >= 2  # at least one per batch
    if NATIVE:
        paired = case["engines"]["native_cpu"]["paired"]
        assert paired["reference"] == "numpy" and len(paired["ratios"]) == 2
    # an engine not usable here is listed with its reason, not silently dropped
    if "cupy_device_input" not in {e for c in smoke_record["cases"] for e in c["engines"]}:
        assert "cupy_device_input" in smoke_record["engines_unavailable"]
    for field in ("git_revision", "cpu_model", "numpy_blas", "gpu", "cupy"):
        assert field in smoke_record["environment"]


def test_the_gates_read_the_sweep_per_lifecycle(smoke_record):
    keys = set(gates.cases(smoke_record))
    assert ("latency-smoke", "float64", "none", "cold") in keys and ("latency-smoke", "float64", "none", "steady") in keys
    if NATIVE:
        rows = gates.competitor(smoke_record)
        assert {row[1] for row in rows} == {"native_cpu"} and len(rows) == 8
        backend, why = gates.advise(smoke_record, ("latency-smoke", "float64", "l1"), "cpu")
        assert backend in ("native_cpu", "numpy") and "margin" in why


def test_the_table_has_a_row_per_case(smoke_record):
    rows = sweep.table(smoke_record).splitlines()
    assert len(rows) == 2 + len(smoke_record["cases"])


@pytest.mark.parametrize("breakage", ["drop_field", "timing_count", "median", "lifecycle", "sha", "environment",
                                      "paired_reference"])
def test_the_validator_catches_a_broken_record(smoke_record, breakage):
    record = copy.deepcopy(smoke_record)
    case = record["cases"][0]
    result = case["engines"]["numpy"]
    if breakage == "drop_field":
        del result["all_batches_converged"]
    elif breakage == "timing_count":
        result["timings_s"] = result["timings_s"][:1]
    elif breakage == "median":
        result["median_s"] *= 2
    elif breakage == "lifecycle":
        case["lifecycle"] = "lukewarm"
    elif breakage == "sha":
        case["dataset_sha256"] = "abc"
    elif breakage == "environment":
        del record["environment"]["cpu_model"]
    else:
        result["paired"] = {"reference": "torch_cuda_device_input", "ratios": [1.0], "median_ratio": 1.0}
    assert sweep.validate(record) != []


def test_a_run_over_the_memory_cap_is_refused_before_it_starts(tmp_path):
    out = tmp_path / "never.json"
    with pytest.raises(SystemExit, match=r"refused: class streaming needs ~.* GiB"):
        sweep.main(["--classes", "streaming", "--engines", "numpy", "--max-host-gib", "0.1", "--out", str(out)])
    assert not out.exists()


def test_no_usable_engine_is_an_error(tmp_path):
    if sweep.usable("cupy_host_input")[0]:
        pytest.skip("a CUDA device is here")
    with pytest.raises(SystemExit, match="no requested engine is usable"):
        sweep.main(["--profile", "smoke", "--engines", "cupy_host_input", "--out", str(tmp_path / "x.json")])


def test_the_dataset_fingerprint_is_stable_and_seed_dependent():
    _, first = make_stream(2048, 8, 1024, "float64", 0)
    _, again = make_stream(2048, 8, 1024, "float64", 0)
    _, other = make_stream(2048, 8, 1024, "float64", 1)
    _, single = make_stream(2048, 8, 1024, "float32", 0)
    assert first == again and len({first, other, single}) == 3


def test_rounds_rotate_and_reverse_the_engine_order():
    names = ["a", "b", "c"]
    orders = [sweep.rotation(names, r) for r in range(4)]
    assert orders == [["a", "b", "c"], ["a", "c", "b"], ["c", "a", "b"], ["c", "b", "a"]]
    assert {order[0] for order in orders} == {"a", "c"} and all(sorted(o) == names for o in orders)
