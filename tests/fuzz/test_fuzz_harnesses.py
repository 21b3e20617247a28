"""The fuzz harnesses as a deterministic test (issue 18, item 5): every
committed corpus input (the seeds and the inputs that once failed) and 300
seeded mutations per harness. The bounded coverage-guided run is `make fuzz`
(tests/fuzz/run_fuzz.py), which `make test` runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_fuzz  # noqa: E402

pytest.importorskip("pyarrow")
pytest.importorskip("pandas")


@pytest.mark.parametrize("name", ["checkpoint", "validation", "readers"])
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
