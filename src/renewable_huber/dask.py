"""Streams held in Dask: fit a RenewableHuberRegressor from a Dask DataFrame or
Dask arrays without collecting the data on the client (``pip install
'renewable-huber[dask]'``).

Stream mode (:func:`fit_stream`): the partitions, in their order, are the
batches. Each partition's renewable update runs as a Dask task whose inputs
are the model (its state: d coefficients and a d x d matrix, a few kilobytes)
and the partition, so the scheduler runs it where the partition is: the state
travels to the data and back, the data never travels to the client. Up to
``window`` partitions ahead of the update in progress are loaded meanwhile
on the workers (their loading overlaps the updates; at most that many are
held). The
result is the one ``partial_fit`` over the same partitions gives on one
machine, bit for bit on the same engine with the same threads (Dask workers
run their BLAS on one thread by default: fix ``n_jobs`` for native_cpu, and
note that NumPy's products may round differently with another thread count).

Empty partitions (a filtered frame has them) are skipped. The call is
atomic: the caller's model changes only when every partition was
absorbed; a partition that fails validation raises the same error
``partial_fit`` gives locally and leaves the model as it was. A task lost
with its worker is rescheduled by Dask from inputs the client still holds
(the model that came back, the partition's future), so the result does not
change.

:func:`predict` maps ``model.predict`` over the partitions and returns a
Dask collection.

Parallel-batch mode (one batch's sums spread over workers) is not
implemented: it needs an engine entry point returning a partition's partial
sums at given coefficients (docs/dask.md says what exists).
"""

from __future__ import annotations

import copy
from typing import Any, Optional

import numpy as np

from .exceptions import BackendUnavailableError, ValidationError
from .model_lock import LOCK_ATTRIBUTE, model_lock

INSTALL_HINT = "pip install 'renewable-huber[dask]'"

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise BackendUnavailableError(f"renewable_huber.dask needs Dask. Install it with: {INSTALL_HINT} ({exc})") from exc


def _absorb(model: Any, X: Any, y: Any, sample_weight: Any) -> Any:
    """One partition into a copy of the model (the task's output is a new
    model; its input stays as it was, for a retry). An empty partition (a
    filtered frame's) is skipped."""
    if len(X) == 0:
        return model
    model = copy.deepcopy(model)
    return model.partial_fit(X, y, sample_weight)


def _frame_batch(frame: Any, target: str, weight: Optional[str]) -> tuple[Any, Any, Any]:
    missing = [name for name in (target, weight) if name is not None and name not in frame.columns]
    if missing:
        raise ValidationError(f"column(s) {missing} not in the DataFrame's columns {list(frame.columns)}")
    features = frame.drop(columns=[name for name in (target, weight) if name is not None])
    return features, frame[target], None if weight is None else frame[weight]


def _absorb_frame(model: Any, frame: Any, target: str, weight: Optional[str]) -> Any:
    return _absorb(model, *_frame_batch(frame, target, weight))


def partitions(X: Any, y: Any = None, *, target: Optional[str] = None, sample_weight: Any = None,
               weight: Optional[str] = None) -> list[tuple]:
    """The stream's batches as lists of Dask delayed objects, in partition order:
    [(frame,)] for a DataFrame (with ``target``/``weight`` columns), or
    [(X_block, y_block, weight_block)] for Dask arrays with matching row chunks."""
    if isinstance(X, dd.DataFrame):
        if y is not None or sample_weight is not None:
            raise ValidationError("with a Dask DataFrame, name the target (and weight) columns: target=, weight=")
        if target is None:
            raise ValidationError("target must name the DataFrame's target column")
        return [(part,) for part in X.to_delayed()]
    if not isinstance(X, da.Array):
        raise ValidationError(f"X must be a Dask DataFrame or a Dask array, not {type(X).__name__}")
    if target is not None or weight is not None:
        raise ValidationError("target= and weight= name DataFrame columns; with Dask arrays pass y and sample_weight")
    if y is None:
        raise ValidationError("y must be given with a Dask array X")
    arrays = [X.rechunk({1: -1}) if X.ndim == 2 else X, y] + ([] if sample_weight is None else [sample_weight])
    for name, array in zip(("y", "sample_weight"), arrays[1:]):
        if not isinstance(array, da.Array):
            raise ValidationError(f"{name} must be a Dask array like X, not {type(array).__name__}")
        if array.chunks[0] != arrays[0].chunks[0]:
            raise ValidationError(f"{name}'s row chunks {array.chunks[0]} must match X's {arrays[0].chunks[0]}")
    blocks = [array.to_delayed().ravel() for array in arrays]
    return [tuple(block[i] for block in blocks) + ((None,) if sample_weight is None else ()) for i in
            range(len(blocks[0]))]


def fit_stream(model: Any, X: Any, y: Any = None, *, target: Optional[str] = None, sample_weight: Any = None,
               weight: Optional[str] = None, client: Any = None, window: int = 2) -> Any:
    """Absorb every partition of ``X`` (and ``y``/``sample_weight``, or the
    DataFrame's ``target``/``weight`` columns) into ``model``, in order, each
    update on the worker holding its partition; returns ``model``.

    ``client``: a ``distributed.Client`` (default: the current one, else
    Dask's local scheduler runs the tasks in this process). ``window``: how
    many partitions are loaded ahead of the update in progress (>= 1)."""
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise ValidationError("window must be a positive integer")
    batches = partitions(X, y, target=target, sample_weight=sample_weight, weight=weight)
    frame = isinstance(X, dd.DataFrame)
    if client is None:
        client = _current_client()
    # The model's lock (model_lock.py) is held for the whole stream: a
    # partial_fit from another thread waits instead of being overwritten by
    # the commit below, and the fitted copy's own lock is not taken over.
    with model_lock(model):
        fitted = (_fit_distributed(model, batches, frame, target, weight, client, window) if client is not None
                  else _fit_local(model, batches, frame, target, weight))
        # the caller's object becomes the fitted model, in one step
        model.__dict__.update({name: value for name, value in fitted.__dict__.items() if name != LOCK_ATTRIBUTE})
    return model


def _current_client() -> Any:
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:  # no client: Dask's local scheduler
        return None


def _fit_local(model: Any, batches: list[tuple], frame: bool, target: Optional[str], weight: Optional[str]) -> Any:
    current = copy.deepcopy(model)
    for batch in batches:
        values = dask.compute(*batch)
        current = _absorb_frame(current, values[0], target, weight) if frame else _absorb(current, *values)
    return current


def _fit_distributed(model: Any, batches: list[tuple], frame: bool, target: Optional[str], weight: Optional[str],
                     client: Any, window: int) -> Any:
    """Each update waits for the one before (the chain is serial) and its
    result, the small model, comes back to the client; the partitions load
    ``window`` ahead on the workers. The client holds every future it still
    needs, so a task lost with its worker (a partition's loading, an update)
    is recomputed by Dask from inputs it still knows."""
    loaded: dict[int, list] = {}
    current = model
    for index in range(len(batches)):
        for ahead in range(index, min(index + window + 1, len(batches))):
            if ahead not in loaded:
                loaded[ahead] = [None if part is None else client.compute(part) for part in batches[ahead]]
        parts = loaded.pop(index)
        if frame:
            update = client.submit(_absorb_frame, current, parts[0], target, weight, pure=False)
        else:
            update = client.submit(_absorb, current, *parts, pure=False)
        current = update.result()
    return current


def predict(model: Any, X: Any) -> Any:
    """``model.predict`` over the partitions of a Dask DataFrame (its feature
    columns) or a Dask array; a Dask Series or array of the predictions."""
    if isinstance(X, dd.DataFrame):
        return X.map_partitions(lambda part: _series(model.predict(part), part.index), meta=(None, model.dtype))
    if isinstance(X, da.Array):
        X = X.rechunk({1: -1})
        return X.map_blocks(lambda block: np.asarray(model.predict(block)), drop_axis=1, dtype=model.dtype)
    raise ValidationError(f"X must be a Dask DataFrame or a Dask array, not {type(X).__name__}")


def _series(values: Any, index: Any) -> Any:
    import pandas as pd

    return pd.Series(np.asarray(values), index=index)
