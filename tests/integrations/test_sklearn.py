"""The scikit-learn adapter: estimator checks, clone/tags/repr, target handling, optional import."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import unittest
import warnings
from pathlib import Path

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone, is_regressor  # noqa: E402
from sklearn.exceptions import DataConversionWarning  # noqa: E402
from sklearn.exceptions import NotFittedError as SklearnNotFittedError  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402

import renewable_huber  # noqa: E402
from renewable_huber import RenewableHuberRegressor  # noqa: E402
from renewable_huber.integrations.sklearn import SklearnRenewableHuberRegressor  # noqa: E402


#: scikit-learn checks allowed to skip, with the reason their SkipTest gives:
#: the array-API check runs only with SCIPY_ARRAY_API=1 set before SciPy is
#: imported (process-wide; this package does not claim array-API input).
EXPECTED_SKIPS = {"check_array_api_input": "SCIPY_ARRAY_API is not set"}


@pytest.mark.parametrize("params", [{}, {"backend": "numpy"}], ids=["auto", "numpy"])
def test_check_estimator_passes_with_no_expected_failures(params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(SklearnRenewableHuberRegressor(max_iter=40, **params), on_fail=None)
    results = list(results)
    assert len(results) > 30
    problems, skipped = [], {}
    for result in results:
        if result["status"] == "passed":
            continue
        if result["status"] == "skipped" and isinstance(result["exception"], unittest.SkipTest):
            skipped[result["check_name"]] = str(result["exception"])
            continue
        problems.append((result["check_name"], result["status"], repr(result["exception"])[:300]))
    assert not problems, problems
    # Every skip is named with its reason: a check that starts skipping fails here.
    assert skipped.keys() == EXPECTED_SKIPS.keys(), skipped
    for name, reason in skipped.items():
        assert EXPECTED_SKIPS[name] in reason, (name, reason)
    assert not any(result["expected_to_fail"] for result in results)


def test_is_a_regressor_with_both_apis(make_data):
    X, y, _ = make_data()
    model = SklearnRenewableHuberRegressor(backend="numpy")
    assert is_regressor(model) and isinstance(model, RenewableHuberRegressor)
    assert model.fit(X, y) is model
    plain = RenewableHuberRegressor(backend="numpy").fit(X, y)
    np.testing.assert_array_equal(model.coef_, plain.coef_)
    assert model.score(X, y) == pytest.approx(r2_score(y, model.predict(X)), rel=1e-12)
    w = np.linspace(0.1, 2.0, len(y))
    assert model.score(X, y, sample_weight=w) == pytest.approx(r2_score(y, model.predict(X), sample_weight=w), rel=1e-12)


def test_get_params_order_clone_and_repr():
    model = SklearnRenewableHuberRegressor(tau=2.0, penalty="l1", n_jobs=2)
    assert list(model.get_params()) == list(RenewableHuberRegressor().get_params())
    copy = clone(model)
    assert copy is not model and copy.get_params() == model.get_params()
    text = repr(model)
    assert text.startswith("SklearnRenewableHuberRegressor(") and "tau=2.0" in text and "penalty='l1'" in text
    assert "ridge" not in text  # scikit-learn's repr shows changed parameters only
    with pytest.raises(ValueError, match=r"^Unknown parameter\(s\): nope$"):
        model.set_params(nope=1)


def test_column_vector_target_warns_and_is_raveled(make_data):
    X, y, _ = make_data()
    model = SklearnRenewableHuberRegressor(backend="numpy")
    with pytest.warns(DataConversionWarning):
        model.fit(X, y.reshape(-1, 1))
    np.testing.assert_array_equal(model.coef_, SklearnRenewableHuberRegressor(backend="numpy").fit(X, y).coef_)
    with pytest.raises(ValueError):
        model.partial_fit(X, None)


def test_predict_before_fit_uses_check_is_fitted():
    model = SklearnRenewableHuberRegressor()
    with pytest.raises(SklearnNotFittedError):
        model.predict(np.ones((2, 2)))


def test_partial_fit_stream_and_checkpoint_load_as_subclass(make_data, tmp_path):
    X, y, _ = make_data(n=90)
    model = SklearnRenewableHuberRegressor(backend="numpy")
    for start in range(0, 90, 30):
        model.partial_fit(X[start : start + 30], y[start : start + 30])
    assert model.n_samples_seen_ == 90
    loaded = SklearnRenewableHuberRegressor.load(model.save(tmp_path / "m"))
    assert type(loaded) is SklearnRenewableHuberRegressor
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_importing_without_sklearn_names_the_extra():
    src = Path(renewable_huber.__file__).resolve().parents[1]
    script = textwrap.dedent(
        """
        import sys

        class BlockSklearn:
            def find_spec(self, name, path=None, target=None):
                if name == "sklearn" or name.startswith("sklearn."):
                    raise ImportError("No module named 'sklearn' (blocked for the test)")
                return None

        sys.meta_path.insert(0, BlockSklearn())
        import renewable_huber  # the core package must not need scikit-learn
        from renewable_huber.exceptions import ConvergenceWarning
        assert issubclass(ConvergenceWarning, Warning)
        try:
            import renewable_huber.integrations.sklearn
        except ImportError as exc:
            print("IMPORT-ERROR:", exc)
        else:
            print("IMPORTED")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert completed.returncode == 0, completed.stderr
    line = completed.stdout.strip().splitlines()[-1]
    assert line.startswith("IMPORT-ERROR:"), completed.stdout
    assert "scikit-learn" in line and "pip install 'renewable-huber[sklearn]'" in line
