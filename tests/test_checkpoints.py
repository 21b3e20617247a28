"""The checkpoint codec (serialization.py): format v2 (v1 readable), atomic writes,
load overrides, bit-identical resumption, and refusal of hostile files."""

from __future__ import annotations

import io
import json
import math
import os
import pathlib
import pickle
import zipfile

import numpy as np
import pytest

from renewable_huber import BackendUnavailableError, NotFittedError, RenewableHuberRegressor, ValidationError

CORRUPTED = "Invalid or corrupted renewable-huber checkpoint"
UNSUPPORTED = "Unsupported renewable-huber checkpoint format"
BAD_CONFIG = "Invalid renewable-huber checkpoint configuration"
METADATA_KEYS = {
    "format_version", "config", "n_samples_seen", "batch_count", "previous_lambda",
    "n_features_in", "fit_intercept", "weight_sum", "feature_names_in",
    "converged_batches",  # format 3 (amendment 0003)
}


@pytest.fixture
def batches(make_data):
    out = []
    for k in range(4):
        X, y, _ = make_data(n=50, p=3, outliers=2, shift=0.3 * k)
        w = np.random.default_rng(k).integers(0, 3, size=50).astype(float)
        w[0] = 1.0
        out.append((X, y, w))
    return out


@pytest.fixture
def fitted(batches):
    model = RenewableHuberRegressor(backend="numpy", penalty="l1", tau=1.2)
    for X, y, w in batches[:2]:
        model.partial_fit(X, y, sample_weight=w)
    return model


def read_parts(path):
    with np.load(path, allow_pickle=False) as archive:
        return archive["coefficients"], archive["information"], json.loads(str(archive["metadata"]))


def write_parts(path, coefficients, information, metadata, **extra):
    """Write an npz by hand (to exactly ``path``); ``metadata`` may be a dict or any array."""
    arrays = dict(coefficients=coefficients, information=information, **extra)
    if metadata is not None:
        arrays["metadata"] = np.array(json.dumps(metadata)) if isinstance(metadata, dict) else metadata
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    return path


def assert_same_state(a, b):
    sa, sb = a.state_, b.state_
    assert sa.coefficients.dtype == sb.coefficients.dtype
    assert np.array_equal(sa.coefficients, sb.coefficients)
    assert np.array_equal(sa.information, sb.information)
    for field in ("n_samples_seen", "batch_count", "previous_lambda", "n_features_in", "fit_intercept", "weight_sum"):
        assert getattr(sa, field) == getattr(sb, field), field


# ---------------------------------------------------------------- writing


def test_save_writes_exactly_the_path_creates_parents_and_returns_a_path(fitted, tmp_path):
    target = tmp_path / "deep" / "er" / "model"
    result = fitted.save(str(target))
    assert isinstance(result, pathlib.Path) and result == target
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["deep", "deep/er", "deep/er/model"]
    other = fitted.save(tmp_path / "weird.name.ckpt")
    assert other == tmp_path / "weird.name.ckpt" and other.is_file()
    assert not (tmp_path / "weird.name.ckpt.npz").exists() and not (tmp_path / "deep/er/model.npz").exists()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_file_content(dtype, batches, tmp_path):
    X, y, w = batches[0]
    model = RenewableHuberRegressor(dtype=dtype, penalty="l1").partial_fit(X, y, w).partial_fit(*batches[1])
    path = model.save(tmp_path / "m.ckpt")
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == ["coefficients.npy", "information.npy", "metadata.npy"]
        assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in archive.infolist())
    with np.load(path, allow_pickle=False) as archive:
        assert set(archive.files) == {"coefficients", "information", "metadata"}
        coefficients, information, raw = archive["coefficients"], archive["information"], archive["metadata"]
    state = model.state_
    assert coefficients.dtype == np.dtype(dtype) and information.dtype == np.dtype(dtype)
    assert coefficients.shape == (4,) and information.shape == (4, 4)
    assert np.array_equal(coefficients, state.coefficients) and np.array_equal(information, state.information)
    assert raw.shape == () and raw.dtype.kind == "U"
    metadata = json.loads(str(raw))
    assert set(metadata) == METADATA_KEYS
    assert metadata["format_version"] == 3  # amendment 0003 (an l1 model keeps no meat: no meat array)
    assert list(metadata["config"]) == list(model.get_params())
    assert metadata["config"] == model.get_params()
    assert metadata["config"]["backend"] == "auto" and metadata["config"]["device"] == "auto"  # "auto" kept
    assert metadata["n_samples_seen"] == 100 and metadata["batch_count"] == 2
    assert metadata["n_features_in"] == 3 and metadata["fit_intercept"] is True
    assert metadata["previous_lambda"] == state.previous_lambda == model.diagnostics_.lambda_value
    assert metadata["weight_sum"] == state.weight_sum == pytest.approx(w.sum() + batches[1][2].sum())
    assert metadata["feature_names_in"] is None


def test_feature_names_are_saved_and_restored(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(np.random.default_rng(0).normal(size=(30, 2)), columns=["alpha", "beta"])
    model = RenewableHuberRegressor(backend="numpy").fit(frame, frame["alpha"] * 2 + 1)
    path = model.save(tmp_path / "named")
    assert read_parts(path)[2]["feature_names_in"] == ["alpha", "beta"]
    loaded = RenewableHuberRegressor.load(path)
    assert loaded.feature_names_in_.dtype == object and loaded.feature_names_in_.tolist() == ["alpha", "beta"]
    with pytest.raises(ValidationError, match="^X feature names must match"):
        loaded.predict(frame[["beta", "alpha"]])


def test_overwrite_and_no_leftover_temporary_files(fitted, batches, tmp_path):
    path = fitted.save(tmp_path / "m")
    fitted.partial_fit(*batches[2])
    assert fitted.save(tmp_path / "m") == path
    assert [p.name for p in tmp_path.iterdir()] == ["m"]
    assert read_parts(path)[2]["batch_count"] == 3


def test_write_is_atomic(fitted, batches, tmp_path, monkeypatch):
    path = fitted.save(tmp_path / "m.ckpt")
    before = path.read_bytes()

    def crash(src, dst):
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr(os, "replace", crash)
    fitted.partial_fit(*batches[2])
    with pytest.raises(OSError, match="simulated crash"):
        fitted.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.ckpt"]
    with pytest.raises(OSError):
        fitted.save(tmp_path / "new.ckpt")
    assert [p.name for p in tmp_path.iterdir()] == ["m.ckpt"]
    monkeypatch.undo()
    assert RenewableHuberRegressor.load(path).state_.batch_count == 2


def test_saving_an_unfitted_model_raises_and_writes_nothing(tmp_path):
    with pytest.raises(NotFittedError, match="^Call fit or partial_fit before using this estimator$"):
        RenewableHuberRegressor().save(tmp_path / "x" / "m")
    assert list(tmp_path.iterdir()) in ([], [tmp_path / "x"])
    assert not (tmp_path / "x" / "m").exists()


# ---------------------------------------------------------------- loading


def test_load_round_trip(fitted, batches, tmp_path):
    path = fitted.save(tmp_path / "m")
    loaded = RenewableHuberRegressor.load(path)
    assert type(loaded) is RenewableHuberRegressor
    assert loaded.get_params() == fitted.get_params()
    assert_same_state(loaded, fitted)
    X = batches[3][0]
    assert np.array_equal(loaded.predict(X), fitted.predict(X))
    assert np.array_equal(loaded.coef_, fitted.coef_) and loaded.intercept_ == fitted.intercept_
    assert loaded.n_samples_seen_ == fitted.n_samples_seen_ and loaded.n_features_in_ == 3
    assert loaded.backend_ == "numpy" and loaded.device_ == "cpu"
    assert loaded.__sklearn_is_fitted__()
    assert not hasattr(loaded, "n_iter_") and not hasattr(loaded, "auto_dispatch_")
    assert not hasattr(loaded, "feature_names_in_")
    with pytest.raises(NotFittedError, match="^No batch has been processed$"):
        loaded.diagnostics_
    loaded.partial_fit(*batches[2])
    assert loaded.n_iter_ == loaded.diagnostics_.iterations


def test_load_accepts_str_and_pathlike(fitted, tmp_path):
    path = fitted.save(tmp_path / "m")
    assert_same_state(RenewableHuberRegressor.load(str(path)), RenewableHuberRegressor.load(path))


@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("via", ["file", "state_dict"])
def test_resuming_a_float64_stream_is_bit_identical(penalty, via, batches, tmp_path):
    straight = RenewableHuberRegressor(backend="numpy", penalty=penalty)
    for X, y, w in batches:
        straight.partial_fit(X, y, sample_weight=w)

    first = RenewableHuberRegressor(backend="numpy", penalty=penalty)
    for X, y, w in batches[:2]:
        first.partial_fit(X, y, sample_weight=w)
    if via == "file":
        resumed = RenewableHuberRegressor.load(first.save(tmp_path / "ckpt"))
    else:
        resumed = RenewableHuberRegressor().load_state_dict(first.state_dict())
    for X, y, w in batches[2:]:
        resumed.partial_fit(X, y, sample_weight=w)

    assert_same_state(resumed, straight)
    assert resumed.diagnostics_ == straight.diagnostics_
    assert np.array_equal(resumed.predict(batches[0][0]), straight.predict(batches[0][0]))


def test_overrides_dtype(fitted, batches, tmp_path):
    path = fitted.save(tmp_path / "m")
    as32 = RenewableHuberRegressor.load(path, dtype="float32")
    assert as32.dtype == "float32" and as32.get_params()["dtype"] == "float32"
    assert as32.coef_.dtype == np.float32 and as32.state_.information.dtype == np.float32
    assert as32.predict(batches[0][0]).dtype == np.float32
    np.testing.assert_allclose(as32.coef_, fitted.coef_, rtol=1e-6)
    as32.partial_fit(*batches[2])
    assert as32.state_.coefficients.dtype == np.float32
    back = RenewableHuberRegressor.load(as32.save(tmp_path / "m32"), dtype="float64")
    assert back.coef_.dtype == np.float64
    assert read_parts(tmp_path / "m32")[0].dtype == np.float32


def test_overrides_backend_and_device(fitted, tmp_path):
    coefficients, information, metadata = read_parts(fitted.save(tmp_path / "m"))
    metadata["config"].update(backend="numpy", device="cpu")
    path = write_parts(tmp_path / "numpy-cpu", coefficients, information, metadata)
    assert RenewableHuberRegressor.load(path).device == "cpu"
    assert RenewableHuberRegressor.load(path, backend="numpy").device == "auto"  # backend without device
    assert RenewableHuberRegressor.load(path, backend="numpy", device="cpu").device == "cpu"
    assert RenewableHuberRegressor.load(path, device="auto").backend == "numpy"

    metadata["config"].update(backend="cupy", device="cuda")
    gpu = write_parts(tmp_path / "cupy-cuda", coefficients, information, metadata)
    with pytest.raises(BackendUnavailableError):  # never a silent downgrade
        RenewableHuberRegressor.load(gpu)
    with pytest.raises(BackendUnavailableError):
        RenewableHuberRegressor.load(gpu, device="cpu")  # cupy on the CPU
    moved = RenewableHuberRegressor.load(gpu, backend="numpy")  # device falls back to "auto"
    assert (moved.backend, moved.device, moved.backend_, moved.device_) == ("numpy", "auto", "numpy", "cpu")
    np.testing.assert_array_equal(moved.coef_, fitted.coef_)
    with pytest.raises(BackendUnavailableError, match="^backend='numpy' requires device='cpu'$"):
        RenewableHuberRegressor.load(gpu, backend="numpy", device="cuda")


@pytest.mark.parametrize(
    "override,message",
    [
        (dict(dtype="float16"), "dtype must be either 'float32' or 'float64'"),
        (dict(backend="jax"), "unsupported backend"),
        (dict(device="tpu"), "device must be 'auto', 'cpu', or 'cuda'"),
    ],
)
def test_invalid_overrides_are_validated(override, message, fitted, tmp_path, raises_exact):
    path = fitted.save(tmp_path / "m")
    with raises_exact(ValidationError, message):
        RenewableHuberRegressor.load(path, **override)


def test_version_1_checkpoint_is_readable(batches, tmp_path):
    """v1: no weight_sum (falls back to n_samples_seen) and no feature names."""
    straight = RenewableHuberRegressor(backend="numpy")
    for X, y, _ in batches[:3]:
        straight.partial_fit(X, y)
    first = RenewableHuberRegressor(backend="numpy")
    for X, y, _ in batches[:2]:
        first.partial_fit(X, y)
    coefficients, information, metadata = read_parts(first.save(tmp_path / "v2"))
    v1 = {key: metadata[key] for key in ("config", "n_samples_seen", "batch_count", "previous_lambda", "n_features_in", "fit_intercept")}
    v1["format_version"] = 1
    v1["feature_names_in"] = ["a", "b", "c"]  # ignored in version 1
    path = write_parts(tmp_path / "v1", coefficients, information, v1)

    loaded = RenewableHuberRegressor.load(path)
    assert loaded.state_.weight_sum is None and loaded.state_.effective_weight == 100.0
    assert not hasattr(loaded, "feature_names_in_")
    np.testing.assert_array_equal(loaded.coef_, first.coef_)
    X, y, _ = batches[2]
    loaded.partial_fit(X, y)  # unweighted stream: rows == weight, so identical to not stopping
    np.testing.assert_array_equal(loaded.state_.coefficients, straight.state_.coefficients)
    np.testing.assert_array_equal(loaded.state_.information, straight.state_.information)
    assert loaded.state_.weight_sum == 150.0
    assert loaded.state_dict()["weight_sum"] == 150.0


def test_version_1_weight_fallback_drives_the_schedules(batches, tmp_path):
    first = RenewableHuberRegressor(backend="numpy").fit(*batches[0][:2])
    coefficients, information, metadata = read_parts(first.save(tmp_path / "v2"))
    metadata = {k: v for k, v in metadata.items() if k not in ("weight_sum", "feature_names_in")}
    metadata["format_version"] = 1
    metadata["n_samples_seen"] = 400  # the row count is the only weight a v1 file knows
    loaded = RenewableHuberRegressor.load(write_parts(tmp_path / "v1", coefficients, information, metadata))
    X, y, w = batches[1]
    loaded.partial_fit(X, y, sample_weight=w)
    N = 400 + w.sum()
    assert loaded.diagnostics_.bandwidth == pytest.approx(1.0 / (math.sqrt(N) * math.log(3)), rel=1e-12)
    assert loaded.state_.weight_sum == pytest.approx(N)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        RenewableHuberRegressor.load(tmp_path / "absent.ckpt")


# ---------------------------------------------------------------- hostile files


class ArmedPayload:
    """Unpickling this runs code that writes ``marker``: a loader that unpickles is caught."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"import pathlib; pathlib.Path({self.marker!r}).write_text('unpickled')",))


def _good(fitted, tmp_path):
    return read_parts(fitted.save(tmp_path / "good"))


@pytest.mark.parametrize("keep", [0.5, 0.9, 10, 0], ids=["half", "most", "10-bytes", "empty"])
def test_truncated_file(keep, fitted, tmp_path, raises_exact):
    data = fitted.save(tmp_path / "m").read_bytes()
    size = int(len(data) * keep) if isinstance(keep, float) else keep
    (tmp_path / "m").write_bytes(data[:size])
    with raises_exact(ValidationError, CORRUPTED):
        RenewableHuberRegressor.load(tmp_path / "m")


@pytest.mark.parametrize("prefix", [b"", b"PK\x03\x04", b"\x93NUMPY"], ids=["random", "zip-magic", "npy-magic"])
def test_garbage_bytes(prefix, tmp_path, raises_exact):
    path = tmp_path / "garbage"
    path.write_bytes(prefix + np.random.default_rng(3).bytes(4096))
    with raises_exact(ValidationError, CORRUPTED):
        RenewableHuberRegressor.load(path)


def test_corrupted_compressed_payload(fitted, tmp_path, raises_exact):
    """Flipping bytes anywhere inside the archive is either harmless (the file
    loads into exactly the saved model: same state bits, counters,
    configuration and names) or a corrupted-checkpoint error."""
    original = fitted.state_dict()
    data = fitted.save(tmp_path / "m").read_bytes()
    rejected = loaded = 0
    for start in range(0, len(data) - 8, max(1, len(data) // 60)):
        damaged = bytearray(data)
        for k in range(start, start + 8):
            damaged[k] ^= 0xA5
        path = tmp_path / "damaged"
        path.write_bytes(bytes(damaged))
        try:
            model = RenewableHuberRegressor.load(path)
        except ValidationError as exc:
            assert str(exc) == CORRUPTED or str(exc).startswith("state "), str(exc)
            rejected += 1
            continue
        loaded += 1
        state = model.state_dict()
        assert state.keys() == original.keys()
        for key, value in original.items():
            if isinstance(value, np.ndarray):
                assert state[key].dtype == value.dtype and state[key].tobytes() == value.tobytes(), (start, key)
            else:
                assert state[key] == value, (start, key)
    assert rejected > 20
    assert rejected + loaded == len(range(0, len(data) - 8, max(1, len(data) // 60)))


def test_plain_npy_file(tmp_path, raises_exact):
    path = tmp_path / "array.npy"
    np.save(path, np.zeros(4))
    with raises_exact(ValidationError, CORRUPTED):
        RenewableHuberRegressor.load(path)


def test_plain_pickle_file_is_never_unpickled(tmp_path, raises_exact):
    marker = tmp_path / "marker"
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(ArmedPayload(marker)))
    with raises_exact(ValidationError, CORRUPTED):
        RenewableHuberRegressor.load(path)
    assert not marker.exists()
    pickle.loads(path.read_bytes())  # the control: this payload is live
    assert marker.exists()


@pytest.mark.parametrize("key", ["coefficients", "information", "metadata"])
def test_pickled_object_array_in_the_npz_is_never_unpickled(key, fitted, tmp_path, raises_exact):
    coefficients, information, metadata = _good(fitted, tmp_path)
    marker = tmp_path / f"marker-{key}"
    parts = {"coefficients": coefficients, "information": information, "metadata": np.array(json.dumps(metadata))}
    parts[key] = np.array([ArmedPayload(marker)], dtype=object)
    path = write_parts(tmp_path / "evil", parts["coefficients"], parts["information"], parts["metadata"])
    with raises_exact(ValidationError, CORRUPTED):
        RenewableHuberRegressor.load(path)
    assert not marker.exists()
    with np.load(path, allow_pickle=True) as archive:  # the control: the payload is live
        archive[key]
    assert marker.exists()


def test_pickled_extra_array_is_refused_and_not_unpickled(fitted, tmp_path, raises_exact):
    coefficients, information, metadata = _good(fitted, tmp_path)
    marker = tmp_path / "marker"
    path = write_parts(tmp_path / "evil", coefficients, information, metadata, extra=np.array([ArmedPayload(marker)], dtype=object))
    with raises_exact(ValidationError, CORRUPTED):
        RenewableHuberRegressor.load(path)
    assert not marker.exists()


def _mutations():
    def drop(key):
        return lambda m: {k: v for k, v in m.items() if k != key}

    def put(key, value):
        return lambda m: {**m, key: value}

    def config(**changes):
        return lambda m: {**m, "config": {**m["config"], **changes}}

    return {
        # (mutation of the metadata, expected message)
        "version-4": (put("format_version", 4), UNSUPPORTED),  # 3: amendment 0003
        "version-0": (put("format_version", 0), UNSUPPORTED),
        "version-string": (put("format_version", "2"), UNSUPPORTED),
        "version-true": (put("format_version", True), UNSUPPORTED),
        "version-missing": (drop("format_version"), UNSUPPORTED),
        "config-missing": (drop("config"), BAD_CONFIG),
        "config-list": (put("config", [1, 2]), BAD_CONFIG),
        "config-string": (put("config", "tau=1"), BAD_CONFIG),
        "config-null": (put("config", None), BAD_CONFIG),
        "config-unknown-key": (config(alpha=1.0), BAD_CONFIG),
        "config-bad-tau": (config(tau=-1.0), "tau must be greater than zero"),
        "config-bad-penalty": (config(penalty="l2"), "penalty must be either 'none' or 'l1'"),
        "config-intercept-mismatch": (config(fit_intercept=False), "checkpoint fit_intercept does not match configuration"),
        "default-intercept-mismatch": (
            lambda m: {**m, "config": {}, "fit_intercept": False, "n_features_in": 4},
            "checkpoint fit_intercept does not match configuration",
        ),
        "counter-negative": (put("n_samples_seen", -1), "state counters must be non-negative"),
        "batches-negative": (put("batch_count", -2), "state counters must be non-negative"),
        "lambda-negative": (put("previous_lambda", -0.5), "state previous lambda must be finite and non-negative"),
        "lambda-nan": (put("previous_lambda", math.nan), "state previous lambda must be finite and non-negative"),
        "weight-negative": (put("weight_sum", -1.0), "state weight sum must be finite and non-negative"),
        "weight-infinite": (put("weight_sum", math.inf), "state weight sum must be finite and non-negative"),
        "weight-zero": (put("weight_sum", 0.0), "state weight sum must be positive after observing samples"),
        "features-mismatch": (put("n_features_in", 2), "state coefficient shape does not match feature metadata"),
        "names-too-few": (put("feature_names_in", ["a", "b"]), "checkpoint feature names do not match feature metadata"),
        "names-too-many": (put("feature_names_in", ["a", "b", "c", "d"]), "checkpoint feature names do not match feature metadata"),
        "names-not-strings": (put("feature_names_in", ["a", 1, "c"]), "checkpoint feature names do not match feature metadata"),
        "counter-not-integer": (put("n_samples_seen", "100"), CORRUPTED),
        "counter-float": (put("batch_count", 2.5), CORRUPTED),
        "intercept-not-bool": (put("fit_intercept", 1), CORRUPTED),
        "missing-counter": (drop("n_samples_seen"), CORRUPTED),
        # order: version, then config structure, then state, then config values, then fit_intercept, backend, names
        "order-version-before-config": (lambda m: {**m, "format_version": 9, "config": []}, UNSUPPORTED),
        "order-config-before-state": (lambda m: {**m, "config": [], "n_samples_seen": -1}, BAD_CONFIG),
        "order-state-before-config-values": (
            lambda m: {**m, "config": {**m["config"], "tau": -1}, "n_samples_seen": -1},
            "state counters must be non-negative",
        ),
        "order-config-values-before-intercept": (
            lambda m: {**m, "config": {**m["config"], "tau": 0, "fit_intercept": False}},
            "tau must be greater than zero",
        ),
        "order-names-after-intercept": (
            lambda m: {**m, "config": {**m["config"], "fit_intercept": False}, "feature_names_in": ["a"]},
            "checkpoint fit_intercept does not match configuration",
        ),
    }


MUTATIONS = _mutations()


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_bad_metadata(case, fitted, tmp_path, raises_exact):
    coefficients, information, metadata = _good(fitted, tmp_path)
    mutate, message = MUTATIONS[case]
    path = tmp_path / "bad"
    with open(path, "wb") as handle:  # json.dumps writes NaN for the lambda-nan case, as a hostile file might
        np.savez_compressed(handle, coefficients=coefficients, information=information, metadata=np.array(json.dumps(mutate(metadata))))
    with raises_exact(ValidationError, message):
        RenewableHuberRegressor.load(path)


@pytest.mark.parametrize("case", [c for c in MUTATIONS if "version" not in c])
def test_bad_state_dict_gets_the_same_messages(case, fitted, raises_exact, assert_untouched):
    d = fitted.state_dict()
    metadata = {k: v for k, v in d.items() if k not in ("coefficients", "information")}
    mutate, message = MUTATIONS[case]
    bad = {**mutate(metadata), "coefficients": d["coefficients"], "information": d["information"]}
    target = RenewableHuberRegressor()
    with assert_untouched(target), raises_exact(ValidationError, message):
        target.load_state_dict(bad)


def test_names_backend_order(fitted, tmp_path):
    """Backend resolution comes before the names check."""
    coefficients, information, metadata = _good(fitted, tmp_path)
    metadata["config"].update(backend="cupy", device="cuda")
    metadata["feature_names_in"] = ["only-one"]
    with pytest.raises(BackendUnavailableError):
        RenewableHuberRegressor.load(write_parts(tmp_path / "bad", coefficients, information, metadata))


@pytest.mark.parametrize(
    "arrays,message",
    [
        (lambda c, i: (c[:-1], i), "state coefficient shape does not match feature metadata"),
        (lambda c, i: (c.reshape(1, -1), i), "state coefficient shape does not match feature metadata"),
        (lambda c, i: (c, i[:-1]), "state information shape does not match feature metadata"),
        (lambda c, i: (c, i.ravel()), "state information shape does not match feature metadata"),
        (lambda c, i: (np.where(np.arange(c.size) == 1, np.nan, c), i), "state coefficients must contain only finite values"),
        (lambda c, i: (c, np.where(np.eye(len(i)) > 0, np.inf, i)), "state information must contain only finite values"),
    ],
    ids=["short-coef", "2d-coef", "short-info", "flat-info", "nan-coef", "inf-info"],
)
def test_bad_state_arrays(arrays, message, fitted, tmp_path, raises_exact):
    coefficients, information, metadata = _good(fitted, tmp_path)
    c, i = arrays(coefficients, information)
    with raises_exact(ValidationError, message):
        RenewableHuberRegressor.load(write_parts(tmp_path / "bad", c, i, metadata))


@pytest.mark.parametrize(
    "build",
    [
        lambda c, i, m: dict(coefficients=c, information=i),  # no metadata
        lambda c, i, m: dict(coefficients=c, metadata=np.array(json.dumps(m))),  # no information
        lambda c, i, m: dict(coefficients=c, information=i, metadata=np.array(json.dumps(m)), extra=np.zeros(2)),
        lambda c, i, m: dict(coefficients=c, information=i, metadata=np.array("{not json")),
        lambda c, i, m: dict(coefficients=c, information=i, metadata=np.array(json.dumps([m]))),
        lambda c, i, m: dict(coefficients=c, information=i, metadata=np.array([json.dumps(m)])),
        lambda c, i, m: dict(coefficients=c, information=i, metadata=np.array(json.dumps(m).encode())),
        lambda c, i, m: dict(coefficients=c.astype(str), information=i, metadata=np.array(json.dumps(m))),
    ],
    ids=["no-metadata", "no-information", "extra-array", "bad-json", "json-list", "1d-metadata", "bytes-metadata", "string-coefficients"],
)
def test_malformed_archives(build, fitted, tmp_path, raises_exact):
    coefficients, information, metadata = _good(fitted, tmp_path)
    path = tmp_path / "bad"
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **build(coefficients, information, metadata))
    with raises_exact(ValidationError, CORRUPTED):
        RenewableHuberRegressor.load(path)


def test_config_missing_keys_take_defaults(fitted, tmp_path):
    coefficients, information, metadata = _good(fitted, tmp_path)
    metadata["config"] = {"penalty": "l1"}
    loaded = RenewableHuberRegressor.load(write_parts(tmp_path / "partial", coefficients, information, metadata))
    params = RenewableHuberRegressor().get_params()
    params["penalty"] = "l1"
    assert loaded.get_params() == params


# ---------------------------------------------------------------- state_dict


def test_state_dict_contents(fitted):
    d = fitted.state_dict()
    assert list(d) == [
        "config", "coefficients", "information", "n_samples_seen", "batch_count", "previous_lambda",
        "n_features_in", "fit_intercept", "weight_sum", "feature_names_in",
        "meat", "converged_batches",  # amendment 0003
    ]
    assert d["config"] == fitted.get_params()
    json.dumps(d["config"])
    assert type(d["coefficients"]) is np.ndarray and d["coefficients"].dtype == np.float64
    assert type(d["information"]) is np.ndarray and d["information"].shape == (4, 4)
    assert (type(d["n_samples_seen"]), type(d["batch_count"]), type(d["n_features_in"])) == (int, int, int)
    assert type(d["previous_lambda"]) is float and type(d["weight_sum"]) is float
    assert d["fit_intercept"] is True and d["feature_names_in"] is None
    json.dumps({k: v for k, v in d.items() if k not in ("coefficients", "information", "meat")})


def test_load_state_dict_round_trip_and_validation(fitted, batches, raises_exact, assert_untouched):
    target = RenewableHuberRegressor(tau=5.0)
    assert target.load_state_dict(fitted.state_dict()) is target
    assert target.get_params() == fitted.get_params()
    assert_same_state(target, fitted)
    assert not hasattr(target, "n_iter_")

    other = RenewableHuberRegressor(backend="numpy").fit(*batches[3][:2])
    bad = fitted.state_dict()
    bad["coefficients"] = bad["coefficients"] * np.nan
    with assert_untouched(other), raises_exact(ValidationError, "state coefficients must contain only finite values"):
        other.load_state_dict(bad)
    with assert_untouched(other), raises_exact(ValidationError, CORRUPTED):
        other.load_state_dict({k: v for k, v in fitted.state_dict().items() if k != "information"})
    with assert_untouched(other), raises_exact(ValidationError, BAD_CONFIG):
        other.load_state_dict({**fitted.state_dict(), "config": {"nope": 1}})
