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

Parallel-batch mode (:func:`fit_batch`): the whole collection is ONE batch
(one renewable update, as ``partial_fit`` of the concatenated rows). Each
partition is validated and turned into its design Z on its worker, once, and
stays there. Every term of the update that depends on rows (f, its
gradient, the Newton matrix, the majorizer, each line-search or LAMM trial,
the information update) is a sum over rows: the client asks the workers for
their partitions' sums at the current coefficients (the engine's
``partition_sums`` entry point: native_cpu on the worker when installed,
else the NumPy reference), adds them in partition order, and takes every
Newton/LAMM decision itself with d and d x d quantities only
(core/partition_sums.py over the reference drivers). The result equals the
local update of the concatenated batch up to summation order (tests: float64
within 1e-9 relative, float32 within 5e-4).
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, fields
from typing import Any, Callable, Optional

import numpy as np

from .backends.base import ValueStates
from .core.array_ops import NumpyOps
from .core.partition_sums import PartitionSums, add_partition_sums, partitioned_update
from .exceptions import BackendUnavailableError, ValidationError
from .config import SolverConfig
from .stream import BatchFailedLater, Stream
from .validation import ALL_ZERO_WEIGHTS_MESSAGE, validate_sample_weight, validate_vector, validate_X

INSTALL_HINT = "pip install 'renewable-huber[dask]'"

try:
    import dask
    import dask.array as da
    import dask.dataframe as dd
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise BackendUnavailableError(f"renewable_huber.dask needs Dask. Install it with: {INSTALL_HINT} ({exc})") from exc


@dataclass(frozen=True)
class _Model:
    """What a partition's task needs of the model: its parameters, solver
    configuration and class name (its stream travels beside it)."""

    params: dict
    config: SolverConfig
    name: str


def _absorb(stream: Optional[Stream], model: _Model, X: Any, y: Any, sample_weight: Any) -> Optional[Stream]:
    """One partition absorbed as partial_fit absorbs a batch (the task's
    output is a new stream; its input stays as it was, for a retry: a value
    state is never modified by an update, an engine that updates its state in
    place works on a copy). An empty partition (a filtered frame's) is skipped."""
    if len(X) == 0:
        return stream
    if stream is None:
        stream = Stream.begin(model.params, model.config, X, y, sample_weight, model.name)
    else:
        if not isinstance(stream.backend, ValueStates):
            stream = copy.deepcopy(stream)
        stream = stream.then(model.params, model.config, X, y, sample_weight, model.name)
        try:  # a task's output is a read stream (it may travel to another process)
            stream = stream.settled()
        except BatchFailedLater as failure:
            raise failure.error from None
    stream.warn_if_not_converged(model.name, model.config, stacklevel=1)
    return stream


def _frame_batch(frame: Any, target: str, weight: Optional[str]) -> tuple[Any, Any, Any]:
    missing = [name for name in (target, weight) if name is not None and name not in frame.columns]
    if missing:
        raise ValidationError(f"column(s) {missing} not in the DataFrame's columns {list(frame.columns)}")
    features = frame.drop(columns=[name for name in (target, weight) if name is not None])
    return features, frame[target], None if weight is None else frame[weight]


def _absorb_frame(stream: Optional[Stream], model: _Model, frame: Any, target: str,
                  weight: Optional[str]) -> Optional[Stream]:
    return _absorb(stream, model, *_frame_batch(frame, target, weight))


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

    def step(current: Optional[Stream], params: Any, config: SolverConfig) -> Optional[Stream]:
        task = _Model(dict(params), config, type(model).__name__)
        if client is not None:
            return _fit_distributed(current, task, batches, frame, target, weight, client, window)
        return _fit_local(current, task, batches, frame, target, weight)

    # The model's lock is held for the whole stream (advance takes it): a
    # partial_fit from another thread waits instead of being overwritten by
    # the commit. Each partition's task has warned about its own convergence.
    return model.advance(step, warn=False)


def _current_client() -> Any:
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:  # no client: Dask's local scheduler
        return None


def _fit_local(current: Optional[Stream], model: _Model, batches: list[tuple], frame: bool, target: Optional[str],
               weight: Optional[str]) -> Optional[Stream]:
    for batch in batches:
        values = dask.compute(*batch)
        current = (_absorb_frame(current, model, values[0], target, weight) if frame
                   else _absorb(current, model, *values))
    return current


def _fit_distributed(current: Optional[Stream], model: _Model, batches: list[tuple], frame: bool,
                     target: Optional[str], weight: Optional[str], client: Any, window: int) -> Optional[Stream]:
    """Each update waits for the one before (the chain is serial) and its
    result, the small model, comes back to the client; the partitions load
    ``window`` ahead on the workers. The client holds every future it still
    needs, so a task lost with its worker (a partition's loading, an update)
    is recomputed by Dask from inputs it still knows."""
    loaded: dict[int, list] = {}
    for index in range(len(batches)):
        for ahead in range(index, min(index + window + 1, len(batches))):
            if ahead not in loaded:
                loaded[ahead] = [None if part is None else client.compute(part) for part in batches[ahead]]
        parts = loaded.pop(index)
        if frame:
            update = client.submit(_absorb_frame, current, model, parts[0], target, weight, pure=False)
        else:
            update = client.submit(_absorb, current, model, *parts, pure=False)
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


# ---------------------------------------------------------------- parallel-batch mode

#: engines a worker can form a partition's sums with (``engine=`` of fit_batch)
PARTITION_ENGINES = ("auto", "native_cpu", "numpy")


@dataclass
class _Partition:
    """A validated partition on its worker: Z (intercept column included), y, w (None: all ones)."""

    design: np.ndarray
    y: np.ndarray
    weights: Optional[np.ndarray]
    n_features: int

    @property
    def rows(self) -> int:
        return int(self.design.shape[0])


def _prepare(X: Any, y: Any, sample_weight: Any, dtype: str, fit_intercept: bool, expected: Optional[int],
             estimator_name: str) -> _Partition:
    """A partition validated as partial_fit validates a batch (the same errors),
    except that its weights may sum to zero; then its design Z, once."""
    dtype = np.dtype(dtype)
    if len(X) == 0:  # a filtered frame's empty partition adds nothing
        return _Partition(np.empty((0, 0), dtype=dtype), np.empty(0, dtype=dtype), None, 0)
    X_array = validate_X(X, dtype, expected, estimator_name)
    n_rows = X_array.shape[0]
    y_array = validate_vector(y, "y", dtype, n_rows)
    weights = validate_sample_weight(sample_weight, dtype, n_rows, positive_sum=False)
    design = np.hstack([X_array, np.ones((n_rows, 1), dtype=dtype)]) if fit_intercept else np.ascontiguousarray(X_array)
    return _Partition(design, y_array, weights, X_array.shape[1])


def _prepare_frame(frame: Any, target: str, weight: Optional[str], *args: Any) -> _Partition:
    return _prepare(*_frame_batch(frame, target, weight), *args)


_worker_engines = threading.local()  # one engine per worker thread: an engine runs one call at a time


def _worker_engine(engine: str, dtype: str, n_jobs: Optional[int]) -> Any:
    from .backends.registry import availability, create_backend

    if engine == "auto":
        engine = "native_cpu" if availability("native_cpu")[0] else "numpy"
    cache = getattr(_worker_engines, "engines", None)
    if cache is None:
        cache = _worker_engines.engines = {}
    key = (engine, dtype, n_jobs)
    if key not in cache:
        cache[key] = create_backend(engine, "cpu", dtype, n_jobs)
    return cache[key]


def _partition_sums(part: _Partition, theta: np.ndarray, terms: frozenset, tau: float, bandwidth: float,
                    engine: str, dtype: str, n_jobs: Optional[int]) -> tuple[str, PartitionSums]:
    backend = _worker_engine(engine, dtype, n_jobs)
    sums = backend.partition_sums(part.design, part.y, part.weights, theta.astype(dtype), tau, bandwidth, terms)
    return backend.name, sums


def _partition_summary(part: _Partition) -> tuple[int, int, float]:
    """(rows, features, weight sum) of a prepared partition."""
    weight = float(part.rows) if part.weights is None else float(np.sum(part.weights, dtype=np.float64))
    return part.rows, part.n_features, weight


def _meta_features(X: Any, target: Optional[str], weight: Optional[str], dtype: str) -> Any:
    """An X-like object with the batch's columns and no rows (checked by the estimator)."""
    if isinstance(X, dd.DataFrame):
        import pandas as pd

        return pd.DataFrame(columns=[name for name in X.columns if name not in (target, weight)])
    columns = X.shape[1] if X.ndim == 2 else 0
    return np.empty((0, columns), dtype=dtype)


@dataclass
class BatchReport:
    """What :func:`fit_batch` did: partitions used, rounds over them (one per
    request of the solver), the engines the workers formed their sums with,
    and where the wall time went (preparing: loading, validating and forming
    each partition's Z; solving: the rounds and the client's decisions)."""

    partitions: int = 0
    rows: int = 0
    rounds: int = 0
    engines: tuple = ()
    seconds_preparing: float = 0.0
    seconds_solving: float = 0.0


#: test hook: called on the client with the round's number before each round
_before_round: Optional[Callable[[int], None]] = None


def fit_batch(model: Any, X: Any, y: Any = None, *, target: Optional[str] = None, sample_weight: Any = None,
              weight: Optional[str] = None, client: Any = None, engine: str = "auto", n_jobs: Optional[int] = 1,
              report: Optional[BatchReport] = None) -> Any:
    """Absorb the whole collection as ONE batch (one renewable update, as
    ``model.partial_fit`` of the concatenated rows would), its sums spread over
    the workers holding the partitions; returns ``model``.

    ``engine``: what forms a partition's sums on its worker: "native_cpu",
    "numpy", or "auto" (native_cpu where installed); ``n_jobs``: that
    engine's threads per task (default 1: Dask runs partitions in parallel).
    ``report``: a :class:`BatchReport` filled in on success. The model's
    backend must keep its state on the host ("auto", "numpy", "native_cpu").
    Atomic: a bad partition raises the error partial_fit gives locally and
    the model is unchanged."""
    if engine not in PARTITION_ENGINES:
        raise ValidationError(f"engine must be one of {list(PARTITION_ENGINES)}, not {engine!r}")
    batches = partitions(X, y, target=target, sample_weight=sample_weight, weight=weight)
    frame = isinstance(X, dd.DataFrame)
    if client is None:
        client = _current_client()
    outcome = BatchReport()
    name = type(model).__name__

    def step(current: Optional[Stream], params: Any, config: SolverConfig) -> Stream:
        dtype, fit_intercept = params["dtype"], params["fit_intercept"]
        runner = _DistributedRunner(client) if client is not None else _LocalRunner()

        def transition(state: Any, config: Any) -> tuple:
            """Runs once the stream has checked the batch's columns and chosen its state."""
            started = time.perf_counter()
            expected = state.n_features_in if state.batch_count > 0 else None
            prepare_args = (dtype, fit_intercept, expected, name)
            parts = [runner.prepare(batch, frame, target, weight, prepare_args) for batch in batches]
            summaries = runner.gather([runner.submit(_partition_summary, part) for part in parts])
            kept = [part for part, (rows, _, _) in zip(parts, summaries) if rows > 0]
            n_rows = sum(rows for rows, _, _ in summaries)
            batch_weight = float(sum(weight_sum for _, _, weight_sum in summaries))
            if n_rows == 0:
                raise ValidationError("the batch has no rows: every partition is empty")
            if not batch_weight > 0:
                raise ValidationError(ALL_ZERO_WEIGHTS_MESSAGE)
            engines: set = set()
            prepared = time.perf_counter()

            def sums_at(theta: np.ndarray, terms: frozenset, tau: float, bandwidth: float) -> PartitionSums:
                outcome.rounds += 1
                if _before_round is not None:
                    _before_round(outcome.rounds)
                results = runner.gather([runner.submit(_partition_sums, part, theta, terms, tau, bandwidth, engine,
                                                       dtype, n_jobs) for part in kept])
                engines.update(engine_name for engine_name, _ in results)
                return add_partition_sums([sums for _, sums in results])

            next_state, diagnostics, _ = partitioned_update(NumpyOps(dtype), state, sums_at, n_rows, batch_weight,
                                                            state.n_features_in, config)
            outcome.partitions, outcome.rows, outcome.engines = len(kept), n_rows, tuple(sorted(engines))
            outcome.seconds_preparing, outcome.seconds_solving = prepared - started, time.perf_counter() - prepared
            return next_state, diagnostics

        like = _meta_features(X, target, weight, dtype)
        return Stream.partitioned(current, params, config, like, transition, name)

    model.advance(step)
    if report is not None:
        for field in fields(BatchReport):
            setattr(report, field.name, getattr(outcome, field.name))
    return model


class _LocalRunner:
    """Without a distributed client: partitions computed and held in this process."""

    def prepare(self, batch: tuple, frame: bool, target: Optional[str], weight: Optional[str], args: tuple) -> Any:
        values = dask.compute(*batch)
        return _prepare_frame(values[0], target, weight, *args) if frame else _prepare(*values, *args)

    def submit(self, function: Callable, *args: Any) -> Any:
        return function(*args)

    def gather(self, results: list) -> list:
        return results


class _DistributedRunner:
    """Each partition prepared on a worker and kept there (the client holds its
    future, so a partition lost with its worker is recomputed from its
    lineage); each round is one task per partition, run where it is."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def prepare(self, batch: tuple, frame: bool, target: Optional[str], weight: Optional[str], args: tuple) -> Any:
        loaded = [None if part is None else self.client.compute(part) for part in batch]
        if frame:
            return self.client.submit(_prepare_frame, loaded[0], target, weight, *args, pure=False)
        return self.client.submit(_prepare, *loaded, *args, pure=False)

    def submit(self, function: Callable, *args: Any) -> Any:
        return self.client.submit(function, *args, pure=False)

    def gather(self, futures: list) -> list:
        return self.client.gather(futures)
