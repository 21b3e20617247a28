"""The renewable-huber command line: info, demo, fit, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor, __version__
from renewable_huber.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "renewable_huber.cli", *args], capture_output=True, text=True, timeout=300
    )


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"renewable-huber {__version__}"


def test_info_is_the_default_and_lists_every_backend(capsys):
    assert main([]) == 0
    text = capsys.readouterr().out
    for name in ("numpy", "native_cpu", "cupy", "native_cuda", "torch", "tensorflow"):
        assert f"\n{name} " in text
    assert "auto_dispatch_" in text


def test_unknown_command_exits_with_status_2():
    result = run_cli("bogus")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_demo_reports_and_resumes_bit_identically(capsys):
    assert main(["demo", "--samples", "30000", "--batch-size", "5000", "--backend", "numpy"]) == 0
    text = capsys.readouterr().out
    assert "bit-identical final state" in text
    assert "least squares" in text and "full-data fit" in text


@pytest.fixture
def table(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2500, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.25 + 0.1 * rng.standard_t(3, size=2500)
    y[::25] += 80.0
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["target"] = y
    frame["weight"] = rng.integers(1, 3, size=2500).astype(float)
    return frame


def _expected(frame, batch_size, weighted):
    """The stream the CLI runs, fed the arrays its reader makes: C-contiguous
    float64 batches. (Fed the DataFrame's column block instead, the numpy
    backend's products ran in another order: after two batches the
    information differed by 1.1e-12 and the intercept by 5.6e-17, and the
    final coefficients matched only by coincidence.)"""
    model = RenewableHuberRegressor(backend="numpy")
    for start in range(0, len(frame), batch_size):
        part = frame.iloc[start : start + batch_size]
        model.partial_fit(
            np.ascontiguousarray(part[["a", "b", "c"]].to_numpy(dtype=np.float64)),
            part["target"].to_numpy(dtype=np.float64),
            part["weight"].to_numpy(dtype=np.float64) if weighted else None,
        )
    return model


def _assert_same_state(model, expected):
    np.testing.assert_array_equal(model.state_.coefficients, expected.state_.coefficients)
    np.testing.assert_array_equal(model.state_.information, expected.state_.information)
    assert model.state_.n_samples_seen == expected.state_.n_samples_seen


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_fit_streams_a_file_and_matches_the_estimator(table, tmp_path, capsys, fmt):
    path = tmp_path / f"data.{fmt}"
    if fmt == "csv":
        table.to_csv(path, index=False)
    else:
        pytest.importorskip("pyarrow")
        table.to_parquet(path)
    checkpoint = tmp_path / "out" / "model.npz"
    code = main(
        [
            "fit", str(path), "--target", "target", "--weight", "weight", "--batch-size", "700",
            "--backend", "numpy", "--checkpoint-out", str(checkpoint), "--json",
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    expected = _expected(table, 700, weighted=True)
    np.testing.assert_allclose(list(printed["coef"].values()), expected.coef_, rtol=1e-12)
    assert list(printed["coef"]) == ["a", "b", "c"]
    loaded = RenewableHuberRegressor.load(checkpoint)
    assert list(loaded.feature_names_in_) == ["a", "b", "c"]
    np.testing.assert_array_equal(loaded.coef_, expected.coef_)


def test_fit_prints_the_inference_summary(table, tmp_path, capsys):
    path = tmp_path / "data.csv"
    table.to_csv(path, index=False)
    assert main(["fit", str(path), "--target", "target", "--features", "a,b,c", "--batch-size", "700",
                 "--backend", "numpy", "--summary"]) == 0
    printed = capsys.readouterr().out
    expected = _expected(table, 700, weighted=False)
    assert "std err" in printed and "P>|z|" in printed
    rows = {line.split()[0]: line for line in printed.splitlines() if line.split()[:1] in (["intercept"], ["a"],
                                                                                           ["b"], ["c"])}
    for name, coef, bse in zip(["intercept", "a", "b", "c"], [expected.intercept_, *expected.coef_], expected.bse_):
        assert f"{coef:>11.4g}{bse:>11.4g}" in rows[name], rows[name]


def test_fit_resumes_from_a_checkpoint(table, tmp_path, capsys):
    """Two CLI runs joined by a checkpoint give, bit for bit, the state of one
    stream over both files: at the checkpoint and at the end."""
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    table.iloc[:1400].to_csv(first, index=False)
    table.iloc[1400:].to_csv(second, index=False)
    checkpoint, final = tmp_path / "mid.npz", tmp_path / "final.npz"
    assert main(["fit", str(first), "--target", "target", "--features", "a,b,c", "--batch-size", "700",
                 "--backend", "numpy", "--checkpoint-out", str(checkpoint)]) == 0
    _assert_same_state(RenewableHuberRegressor.load(checkpoint), _expected(table.iloc[:1400], 700, weighted=False))
    assert main(["fit", str(second), "--target", "target", "--features", "a,b,c", "--batch-size", "700",
                 "--checkpoint-in", str(checkpoint), "--checkpoint-out", str(final), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    expected = _expected(table, 700, weighted=False)
    _assert_same_state(RenewableHuberRegressor.load(final), expected)
    np.testing.assert_array_equal(list(printed["coef"].values()), expected.coef_)


def test_fit_stdlib_csv_reader_without_pyarrow(table, tmp_path, monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def no_pyarrow(name, *args, **kwargs):
        if name.startswith("pyarrow"):
            raise ImportError("blocked for the test")
        return real_import(name, *args, **kwargs)

    path = tmp_path / "data.csv"
    table.to_csv(path, index=False)
    monkeypatch.setattr(builtins, "__import__", no_pyarrow)
    assert main(["fit", str(path), "--target", "target", "--features", "a,b,c", "--batch-size", "700",
                 "--backend", "numpy", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    np.testing.assert_allclose(list(printed["coef"].values()), _expected(table, 700, False).coef_, rtol=1e-12)


def test_fit_reports_missing_columns_and_files(table, tmp_path, capsys):
    path = tmp_path / "data.csv"
    table.to_csv(path, index=False)
    assert main(["fit", str(path), "--target", "nope"]) == 1
    assert "column 'nope' not found" in capsys.readouterr().err
    assert main(["fit", str(tmp_path / "absent.csv"), "--target", "target"]) == 1
    assert "no such file" in capsys.readouterr().err
