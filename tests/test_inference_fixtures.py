"""The fixtures the C++ library's inference test compares against
(tests/fixtures/inference, scripts/inference/write_cpp_fixtures.py) are what
this package's inference.py computes from the same checkpoints: if
inference.py changes, this fails until the fixtures are written again, so
the C++ test cannot go on comparing with stale numbers."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "inference"
sys.path.insert(0, str(ROOT / "scripts" / "inference"))

from write_cpp_fixtures import CASES, statistics_of  # noqa: E402


def _equal(a, b, where=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _equal(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b)):
            _equal(x, y, f"{where}[{k}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert np.isclose(a, b, rtol=1e-12, atol=1e-15), f"{where}: {a} != {b}"
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_cpp_fixtures_are_what_inference_py_computes(name):
    model = RenewableHuberRegressor.load(FIXTURES / f"{name}.npz")
    expected = json.loads((FIXTURES / f"{name}.json").read_text())
    _equal(statistics_of(model), expected, name)


def test_the_singular_fixture_is_singular_and_names_nan():
    expected = json.loads((FIXTURES / "singular_duplicate_column.json").read_text())
    assert expected["information_rank"] == 3
    assert expected["bse"][2] is None and expected["bse"][3] is None
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert np.isfinite(RenewableHuberRegressor.load(FIXTURES / "singular_duplicate_column.npz").bse_[:2]).all()
