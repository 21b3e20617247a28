"""The fuzz harnesses as a deterministic test (issue 18, item 5): every
committed corpus input (the seeds and the inputs that once failed) and 300
seeded mutations per harness. The bounded coverage-guided run is `make fuzz`
(tests/fuzz/run_fuzz.py), which `make test` runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harnesses  # noqa: E402
import run_fuzz  # noqa: E402

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")


@pytest.mark.parametrize("name", ["checkpoint", "checkpoint_fields", "validation", "readers"])
def test_harness_survives_its_corpus_and_seeded_mutations(name):
    assert run_fuzz.loop(name, iterations=300, seed=0) == 0


def test_the_inputs_that_once_failed_are_in_the_corpus():
    """partial_fit(None, None) raised KeyError('X') (device_arrays.is_device_batch);
    X with 1e308 hung in LAPACK's SVD (the numpy backend's least squares on a
    non-finite system), then raised LinAlgError instead of NativeEngineError;
    a CSV header naming a column twice raised arrow's KeyError."""
    names = {path.name for path in (run_fuzz.CORPUS / "validation").iterdir()}
    assert {"regression-none-batch-keyerror.bin", "regression-1e308-lstsq-hang.bin"} <= names
    assert (run_fuzz.CORPUS / "readers" / "regression-duplicate-header.bin").is_file()


@pytest.mark.parametrize("field", harnesses.FIELDS)
def test_every_checkpoint_field_with_every_hostile_value_is_refused_or_resumes(field):
    """Issue 24 item 4: batch_count = 2**70 loaded and the next partial_fit on
    native_cpu raised nanobind's TypeError; 2**63 - 1 wrapped to -2**63 in
    the engine; a weight_sum of 10**400 raised OverflowError on load."""
    for value in harnesses.HOSTILE:
        harnesses.resume_with_fields([(field, value)])


def test_a_fuzzed_resume_asks_for_a_bounded_number_of_newton_iterations(monkeypatch):
    """A clean-clone CI run's `make fuzz` failed with libFuzzer's timeout (exit
    70): checkpoint_fields can combine max_iter = 2**31 - 1 with tol = 5e-324,
    a valid request for 2**31 Newton iterations. The input below picks that
    pair (its first byte asks for two replacements)."""
    fields, hostile = harnesses.FIELDS, harnesses.HOSTILE
    data = bytes([1, fields.index("config.max_iter"), hostile.index(2**31 - 1), fields.index("config.tol"),
                  hostile.index(5e-324), 0])
    seen = []
    monkeypatch.setattr(harnesses, "resume_with_fields", lambda replacements, seed=0: seen.append(replacements))
    harnesses.one_checkpoint_fields(data)
    assert seen == [[("config.max_iter", harnesses.FUZZ_MAX_ITER), ("config.tol", 5e-324)]]
    # values validation refuses reach it unchanged, to be refused by name
    assert harnesses.bounded_newton_budget([("config.max_iter", 2**31), ("config.max_iter", 2**63 - 1),
                                            ("config.max_iter", 3), ("config.tol", 2**31 - 1)]) == [
        ("config.max_iter", 2**31), ("config.max_iter", 2**63 - 1), ("config.max_iter", 3),
        ("config.tol", 2**31 - 1)]
