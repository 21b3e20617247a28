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
