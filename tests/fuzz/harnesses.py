"""Fuzz harnesses (issue 18, item 5): checkpoint loading, input validation,
the CLI's CSV/Parquet readers. Each ``one_*`` takes one input of bytes and
raises only if the code under test fails outside its documented errors:

- checkpoint: ``RenewableHuberRegressor.load`` refuses with ValidationError
  or loads a model that predicts;
- checkpoint_fields: a valid checkpoint's metadata fields set to values out
  of their type's range, loaded and resumed on every CPU engine;
- validation: ``partial_fit`` on arrays, lists and DataFrames of random
  shapes, dtypes and objects raises ValidationError or TypeError (the
  contract's two), NativeEngineError (the update could not be completed:
  finite values so large that the Newton system overflows) or fits;
- readers: ``TableSource.batches`` on random CSV text or Parquet bytes raises
  ValueError (arrow's ArrowInvalid and UnicodeDecodeError are ValueErrors) or
  yields batches of the documented shape.

run_fuzz.py drives them with atheris (coverage-guided) or, without it, as a
deterministic loop of seeded mutations of the committed corpora.
"""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np

from renewable_huber import RenewableHuberRegressor, ValidationError
from renewable_huber.config import MAX_INT32
from renewable_huber.exceptions import NativeEngineError
from renewable_huber.data_sources import TableSource

_SCRATCH = tempfile.mkdtemp(prefix="rh-fuzz-")


class Unexpected(AssertionError):
    """The code under test failed outside its documented errors."""


def _scratch(name: str, data: bytes) -> str:
    path = os.path.join(_SCRATCH, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


# ---------------------------------------------------------------- checkpoint
def one_checkpoint(data: bytes) -> None:
    path = _scratch("model.npz", data)
    try:
        model = RenewableHuberRegressor.load(path, backend="numpy")
    except ValidationError:
        return
    prediction = model.predict(np.zeros((2, model.n_features_in_)))
    if prediction.shape != (2,):
        raise Unexpected(f"a loaded checkpoint predicted shape {prediction.shape}")


# ---------------------------------------------------------------- checkpoint fields
#: Where a checkpoint's metadata keeps its numbers, flags and names.
FIELDS = (
    "format_version", "n_samples_seen", "batch_count", "previous_lambda", "n_features_in", "fit_intercept",
    "weight_sum", "feature_names_in", "config.tau", "config.max_iter", "config.n_jobs", "config.tol",
    "config.ridge", "config.lambda_scale", "config.bandwidth_scale", "config.penalty", "config.dtype",
    "config.fit_intercept", "config.backend", "config.device", "config.cuda_graphs",
)
#: Values outside each field's type or range: integers past int64 and int32,
#: their edges, floats past float64 (JSON reads 1e309 as inf), wrong types.
HOSTILE = (
    2**70, 2**64, 2**63, 2**63 - 1, 2**63 - 2, -(2**63) - 1, 2**31, 2**31 - 1, -1, 0, 1, 3, 10**400,
    1e308, 1e309, -1e309, 5e-324, 1.5, -0.0, True, False, None, "x", "", [], {}, ["a", "b", "c"], [1, 2, 3],
)


def _base_checkpoint() -> tuple[dict, np.ndarray, np.ndarray]:
    if not hasattr(_base_checkpoint, "cached"):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(40, 3))
        model = RenewableHuberRegressor(backend="numpy").fit(X, X @ [1.0, -1.0, 0.5] + rng.standard_t(3, size=40))
        path = model.save(os.path.join(_SCRATCH, "base.npz"))
        with np.load(path) as archive:
            import json

            _base_checkpoint.cached = (json.loads(str(archive["metadata"])), archive["coefficients"],
                                       archive["information"])
    return _base_checkpoint.cached


def one_checkpoint_fields(data: bytes) -> None:
    """A valid checkpoint whose metadata fields the input replaces with
    hostile values (byte-level mutation of a compressed archive rarely
    reaches them), loaded on every CPU engine and resumed: a ValidationError
    or NativeEngineError, or a model that predicts and absorbs a batch; never
    the binding's TypeError (a counter of 2**70 reached nanobind) or an
    overflowed counter."""
    source = _Bytes(data)
    replacements = [(source.pick(FIELDS), source.pick(HOSTILE)) for _ in range(1 + source.byte() % 3)]
    resume_with_fields(bounded_newton_budget(replacements), seed=source.byte())


#: the most Newton iterations a fuzzed resume may ask for (about 0.1 s on
#: the two CPU engines together)
FUZZ_MAX_ITER = 1000


def bounded_newton_budget(replacements: list) -> list:
    """``replacements`` with a max_iter that validation accepts (at most
    MAX_INT32 = 2**31 - 1) lowered to FUZZ_MAX_ITER. max_iter = 2**31 - 1 together with
    tol = 5e-324 is a valid request for 2**31 Newton iterations: plain
    decrease accepts an equal f at the optimum, so a tol below rounding never
    stops the solver before max_iter (the contract's rule, ALGORITHM.md), and
    at ~45 us an iteration the resume runs for a day, which libFuzzer reports
    as a hang (-timeout). Each hostile max_iter alone, 2**31 - 1 included,
    still loads and resumes in test_fuzz_harnesses.py's field-by-value test."""
    return [(field, FUZZ_MAX_ITER if field == "config.max_iter" and type(value) is int
             and FUZZ_MAX_ITER < value <= MAX_INT32 else value) for field, value in replacements]


def resume_with_fields(replacements: list, seed: int = 0) -> None:
    """The base checkpoint with ``replacements`` ((field, value) pairs) in its
    metadata, loaded and resumed as one_checkpoint_fields describes."""
    import copy
    import json

    from renewable_huber.backends.registry import availability

    metadata, coefficients, information = _base_checkpoint()
    metadata = copy.deepcopy(metadata)
    for field, value in replacements:
        if field.startswith("config."):
            metadata["config"][field[len("config."):]] = value
        else:
            metadata[field] = value
    path = os.path.join(_SCRATCH, "fields.npz")
    np.savez_compressed(path, coefficients=coefficients, information=information,
                        metadata=np.array(json.dumps(metadata)))
    X = np.random.default_rng(seed).normal(size=(8, 3))
    for backend in ("numpy", "native_cpu"):
        if not availability(backend)[0]:
            continue
        try:
            model = RenewableHuberRegressor.load(path, backend=backend)
        except ValidationError:
            continue
        except Exception as exc:
            raise Unexpected(f"loading {replacements} raised {type(exc).__name__}: {exc}") from exc
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if model.predict(X).shape != (8,):
                raise Unexpected("a loaded checkpoint predicted the wrong shape")
            before = model.state_dict()
            try:
                model.partial_fit(X, X @ [1.0, 2.0, 3.0])
            except (ValidationError, NativeEngineError):
                if model.state_dict()["batch_count"] != before["batch_count"]:
                    raise Unexpected("a failed resume changed the model") from None
                continue
            except Exception as exc:
                raise Unexpected(f"resuming {replacements} on {backend} raised {type(exc).__name__}: {exc}") from exc
        state = model.state_dict()
        if not (0 < state["batch_count"] <= 2**63 - 1 and 0 < state["n_samples_seen"] <= 2**63 - 1):
            raise Unexpected(f"counters out of range after a resume on {backend}: {state['batch_count']}, "
                             f"{state['n_samples_seen']}")


# ---------------------------------------------------------------- validation
class _Bytes:
    """Reads small integers and floats off the input, zeros once it is used up."""

    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def byte(self) -> int:
        value = self._data[self._at] if self._at < len(self._data) else 0
        self._at += 1
        return value

    def pick(self, options):
        return options[self.byte() % len(options)]

    def floats(self, n: int) -> np.ndarray:
        specials = [0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e308, -1e-308, 5e-324, 2.0**63]
        out = np.empty(n)
        for i in range(n):
            b = self.byte()
            out[i] = specials[b % len(specials)] if b >= 230 else (b - 115) / 7.0
        return out


def _array(source: _Bytes, rows: int):
    kind = source.pick(["float64", "float32", "int64", "bool", "object", "str", "complex", "uint8", "float16"])
    ndim = source.pick([2, 2, 2, 1, 0, 3])
    cols = source.pick([1, 2, 3, 0])
    shape = {0: (), 1: (rows,), 2: (rows, cols), 3: (rows, cols, 2)}[ndim]
    values = source.floats(int(np.prod(shape)) if shape else 1).reshape(shape) if shape else source.floats(1)[0]
    if kind == "object":
        flat = np.asarray(values, dtype=object).reshape(-1)
        for i in range(flat.size):
            flat[i] = source.pick([flat[i], None, "1.5", "x", [1.0], {}, b"2"])
        return flat.reshape(np.shape(values))
    if kind == "str":
        return np.asarray(values).astype(str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(values).astype(kind)


def _frame(source: _Bytes, rows: int):
    import pandas as pd

    columns = {}
    for j in range(source.pick([1, 2, 3])):
        base = source.floats(rows)
        kind = source.pick(["float", "category", "string", "Int64", "datetime", "bool", "Float64", "object"])
        if kind == "float":
            columns[f"c{j}"] = base
        elif kind == "category":
            columns[f"c{j}"] = pd.Categorical(base.astype(str))
        elif kind == "string":
            columns[f"c{j}"] = pd.array(base.astype(str), dtype="string")
        elif kind == "Int64":
            columns[f"c{j}"] = pd.array([int(v) if np.isfinite(v) and abs(v) < 2**53 else None for v in base], dtype="Int64")
        elif kind == "datetime":
            columns[f"c{j}"] = pd.to_datetime(np.arange(rows), unit="D")
        elif kind == "bool":
            columns[f"c{j}"] = base > 0
        elif kind == "Float64":
            columns[f"c{j}"] = pd.array(base, dtype="Float64")
        else:
            columns[f"c{j}"] = pd.Series(base, dtype=object)
    return pd.DataFrame(columns)


def _value(source: _Bytes, rows: int, vector: bool):
    kind = source.pick(["array", "array", "list", "frame", "none", "scalar", "series"])
    if kind == "array":
        return _array(source, rows)
    if kind == "list":
        return _array(source, rows).tolist()
    if kind == "frame":
        frame = _frame(source, rows)
        return frame.iloc[:, 0] if vector else frame
    if kind == "series":
        return _frame(source, rows).iloc[:, 0]
    if kind == "scalar":
        return source.pick([1.0, "a", object(), b"x"])
    return None


def one_validation(data: bytes) -> None:
    source = _Bytes(data)
    rows = source.pick([0, 1, 2, 3, 5, 8])
    X = _value(source, rows, vector=False)
    y = _value(source, source.pick([rows, rows, rows + 1]), vector=True)
    w = _value(source, rows, vector=True) if source.byte() % 2 else None
    model = RenewableHuberRegressor(backend="numpy", dtype=source.pick(["float64", "float32"]), max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model.partial_fit(X, y, w)
        except (ValidationError, TypeError, NativeEngineError):
            return
    if not np.all(np.isfinite(model.coef_)):
        raise Unexpected("a fit on validated input gave non-finite coefficients")


# ---------------------------------------------------------------- readers
def one_reader(data: bytes) -> None:
    fmt = "parquet" if data[:1] == b"P" else "csv"
    path = _scratch(f"data.{fmt}", data[1:])
    batch_size = 1 + (data[1] % 7 if len(data) > 1 else 0)
    try:
        for features, batch in TableSource(__import__("pathlib").Path(path), "y", None, None, batch_size).batches():
            if batch.X.ndim != 2 or batch.X.shape[1] != len(features) or not 0 < batch.X.shape[0] <= batch_size:
                raise Unexpected(f"a batch of shape {batch.X.shape} for {len(features)} features")
            if batch.y.shape != (batch.X.shape[0],):
                raise Unexpected("y does not match X's rows")
    except ValueError:
        return


HARNESSES = {"checkpoint": one_checkpoint, "checkpoint_fields": one_checkpoint_fields, "validation": one_validation,
             "readers": one_reader}
