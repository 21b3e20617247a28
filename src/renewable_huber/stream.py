"""A model's running stream: the engine it runs on, its state, its feature
names, the last batch's diagnostics and the auto choice's record.

A :class:`Stream` is a value. Each transition returns a new one and leaves
the old one as it was:

    Stream.begin(...)        the first batch of a new stream (fit, or partial_fit on an unfitted model)
    stream.then(...)         the next batch (partial_fit)
    Stream.extended(...)     begin or then, one batch or consecutive slices of
                             one (partial_fit, partial_fit_batches)
    Stream.partitioned(...)  one batch whose rows this process does not hold (renewable_huber.dask)
    Stream.resumed(...)      from a checkpoint's payload (load, load_state_dict, to_device)

so a model replaces its stream in one step once a transition has succeeded.
An engine that keeps its state itself (native_cuda, on the device) is put
back by ``rolling_back`` when anything fails before that step. Reading:
``predict``, ``score``, ``host_state``, ``state_dict``, ``fitted_attributes``.
A stream pickles as host arrays and its engine's description; the engine is
rebuilt on unpickling.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Optional

import numpy as np

from . import engine_choice, inputs
from .config import SolverConfig
from .core.diagnostics import UpdateDiagnostics, convergence_message
from .exceptions import ConvergenceWarning, ValidationError
from .serialization import CheckpointPayload
from .state import RenewableHuberState
from .validation import check_X_shape

#: ``Stream.partitioned``'s transition: (state, config) -> (next host state, diagnostics)
Transition = Callable[[RenewableHuberState, SolverConfig], tuple[RenewableHuberState, UpdateDiagnostics]]


@dataclass(frozen=True)
class Stream:
    """Everything a fitted model carries."""

    backend: Any
    #: the engine's signature (engine_choice.signature): a new stream with the
    #: same one keeps the engine
    signature: tuple
    #: in the backend's array type
    state: RenewableHuberState
    feature_names: Optional[np.ndarray]
    #: of the last batch (None after a checkpoint)
    diagnostics: Optional[UpdateDiagnostics]
    #: backend="auto"'s record of its choice (None when a backend was named, or after a checkpoint)
    auto_dispatch: Optional[dict]
    dtype: str
    #: batches whose solver converged (None: unknown, a stream resumed from a format 1 or 2 checkpoint)
    converged_batches: Optional[int] = 0
    #: the diagnostics of each batch the last call absorbed (partial_fit_batches: one per slice)
    batch_diagnostics: tuple = ()
    #: a batch absorbed and not read yet (a backend that defers results,
    #: amendment 0004): ``state`` and the fields above are the stream before
    #: it, ``settled()`` the stream after it
    pending: Optional["PendingBatch"] = None

    # ------------------------------------------------------------------ transitions
    @classmethod
    def begin(cls, params: Mapping[str, Any], config: SolverConfig, X: Any, y: Any, sample_weight: Any,
              estimator_name: str, reuse: Optional["Stream"] = None, batch_size: Optional[int] = None) -> "Stream":
        """A new stream from its first batch (with ``batch_size``: from
        consecutive slices of it, the first choosing the engine as a batch of
        its rows would). Every input is checked before any engine works;
        ``reuse``: the stream this one replaces (its engine is kept when the
        signatures match)."""
        previous = None if reuse is None else reuse.engine
        resolution = engine_choice.resolve(params, previous)
        engine, dispatch = resolution.engine, resolution.dispatch
        batch = inputs.batch(None if engine is None else engine.backend, X, y, sample_weight,
                             inputs.Expected(np.dtype(params["dtype"])), estimator_name, params)
        bounds = inputs.slice_bounds(None if engine is None else engine.backend, batch, batch_size)
        first = batch.rows(*bounds[0])
        choosing = engine is None
        if choosing:
            engine, dispatch = engine_choice.choose_cpu_engine(params, first.n_rows, batch.n_features, previous)
        try:
            state, diagnostics = engine.backend.update(empty_state(engine.backend, params, batch.n_features),
                                                       first.X, first.y, first.sample_weight, config)
        except Exception as exc:
            if isinstance(exc, ValidationError) or not choosing or engine.backend.name == "numpy":
                raise
            # A CPU engine auto-chosen for this stream that fails its first update falls back to NumPy.
            engine, dispatch = engine_choice.numpy_fallback(params, dispatch, exc)
            state, diagnostics = engine.backend.update(empty_state(engine.backend, params, batch.n_features),
                                                       first.X, first.y, first.sample_weight, config)
        stream = cls(engine.backend, engine.signature, state, batch.names, diagnostics, dispatch, params["dtype"],
                     int(diagnostics.converged), (diagnostics,))
        return stream if len(bounds) == 1 else stream.absorbed(batch.rows(bounds[1][0], batch.n_rows), batch_size,
                                                               config, earlier=(diagnostics,))

    def then(self, params: Mapping[str, Any], config: SolverConfig, X: Any, y: Any, sample_weight: Any,
             estimator_name: str, batch_size: Optional[int] = None) -> "Stream":
        """The stream after one more batch (with ``batch_size``: after
        consecutive slices of it, each absorbed as a batch)."""
        self.check_compatible(params)
        batch = inputs.batch(self.backend, X, y, sample_weight, self.expected, estimator_name, params)
        if batch_size is None:
            if not self.backend.capabilities.defers_results:
                return self.after(*self.backend.update(self.state, batch.X, batch.y, batch.sample_weight, config))
            absorbed = self.backend.update_deferred(self.state, batch.X, batch.y, batch.sample_weight, config)
            if isinstance(absorbed, tuple):
                return self.after(*absorbed)
            return dataclasses.replace(self, pending=PendingBatch(absorbed, batch.n_rows, config), batch_diagnostics=())
        inputs.slice_bounds(self.backend, batch, batch_size)
        return self.absorbed(batch, batch_size, config)

    @classmethod
    def extended(cls, current: Optional["Stream"], params: Mapping[str, Any], config: SolverConfig, X: Any, y: Any,
                 sample_weight: Any, estimator_name: str, batch_size: Optional[int] = None) -> "Stream":
        """``current`` after one more batch, or a new stream from it (partial_fit;
        with ``batch_size``, partial_fit_batches)."""
        if current is None:
            return cls.begin(params, config, X, y, sample_weight, estimator_name, batch_size=batch_size)
        return current.then(params, config, X, y, sample_weight, estimator_name, batch_size)

    @classmethod
    def sliced(cls, current: Optional["Stream"], params: Mapping[str, Any], config: SolverConfig, X: Any, y: Any,
               sample_weight: Any, estimator_name: str, batch_size: Any) -> "Stream":
        """``extended`` over consecutive slices of ``batch_size`` rows (partial_fit_batches)."""
        return cls.extended(current, params, config, X, y, sample_weight, estimator_name,
                            inputs.checked_batch_size(batch_size))

    def absorbed(self, batch: inputs.Batch, batch_size: int, config: SolverConfig, earlier: tuple = ()) -> "Stream":
        """This stream after consecutive slices of ``batch_size`` rows of a
        validated ``batch``, in one engine call where the engine takes several
        (Backend.update_batches); ``earlier``: diagnostics of batches this call
        absorbed before."""
        state, diagnostics = self.backend.update_batches(self.state, batch.X, batch.y, batch.sample_weight, config,
                                                         batch_size)
        return self.after(state, diagnostics, earlier)

    @classmethod
    def partitioned(cls, current: Optional["Stream"], params: Mapping[str, Any], config: SolverConfig, like: Any,
                    transition: Transition, estimator_name: str) -> "Stream":
        """One batch this process does not hold: ``like`` (an X-like object with
        the batch's columns and no rows) is checked as ``then`` checks X's
        columns, then ``transition(state, config)`` gives the next state
        (host arrays). The state must live on the host."""
        if current is not None:
            current.check_compatible(params)
        expected = inputs.Expected(np.dtype(params["dtype"])) if current is None else current.expected
        names = inputs.batch_names(like, expected)
        n_features = int(like.shape[1])
        check_X_shape((1, n_features), expected.n_features, estimator_name)
        if current is not None:
            _require_host_state(current.backend)
            return current.after(*transition(current.state, config))
        # the engine partial_fit would resolve (auto on the CPU: the selector's
        # choice for a large batch of this width)
        resolution = engine_choice.resolve(params)
        engine, dispatch = resolution.engine, resolution.dispatch
        if engine is None:
            engine, dispatch = engine_choice.choose_cpu_engine(params, 1 << 20, n_features)
        _require_host_state(engine.backend)
        next_state, diagnostics = transition(empty_state(engine.backend, params, n_features), config)
        return cls(engine.backend, engine.signature, next_state, names, diagnostics, dispatch, params["dtype"],
                   int(diagnostics.converged), (diagnostics,))

    @classmethod
    def resumed(cls, payload: CheckpointPayload, params: Mapping[str, Any]) -> "Stream":
        """The stream a checkpoint's payload holds, on the engine ``params``
        name (validated: state, then parameters, then their agreement)."""
        from .config import validate_params

        state = payload.state
        state.validate()
        validate_params(params)
        if params["fit_intercept"] != state.fit_intercept:
            raise ValidationError("checkpoint fit_intercept does not match configuration")
        engine = engine_choice.for_resumed_stream(params)
        host_state = state.map_arrays(lambda array: np.array(array, dtype=params["dtype"]))
        names = payload.feature_names
        if names is not None:
            if len(names) != state.n_features_in or not all(isinstance(n, str) for n in names):
                raise ValidationError("checkpoint feature names do not match feature metadata")
            names = np.asarray(list(names), dtype=object)
        backend_state = engine.backend.as_backend_state(host_state)  # may fail (device memory): nothing changed yet
        return cls(engine.backend, engine.signature, backend_state, names, None, None, params["dtype"],
                   payload.converged_batches)

    def check_compatible(self, params: Mapping[str, Any]) -> None:
        """Refuse parameters that cannot continue this stream."""
        if params["fit_intercept"] != self.state.fit_intercept:
            raise ValidationError("fit_intercept cannot change during a stream; call fit or reset first")
        if params["dtype"] != self.dtype:
            raise ValidationError("dtype cannot change during a stream; call fit or reset first")

    def after(self, state: RenewableHuberState, diagnostics: Any, earlier: tuple = ()) -> "Stream":
        """This stream with the next ``state`` its engine computed and the
        ``diagnostics`` of that batch (or a list, one per batch absorbed);
        ``earlier``: diagnostics of batches this call absorbed before."""
        batches = tuple(diagnostics) if isinstance(diagnostics, (list, tuple)) else (diagnostics,)
        converged = (None if self.converged_batches is None
                     else self.converged_batches + sum(int(d.converged) for d in batches))
        return Stream(self.backend, self.signature, state, self.feature_names, batches[-1], self.auto_dispatch,
                      self.dtype, converged, earlier + batches)

    def settled(self) -> "Stream":
        """This stream with its pending batch read (itself when none is
        pending). A batch that failed raises ``BatchFailedLater``, whose
        ``before`` is the stream before it: the engine holds that state."""
        if self.pending is None:
            return self
        before = dataclasses.replace(self, pending=None)
        try:
            state, diagnostics = self.backend.settle_update(self.state, self.pending.handle)
        except Exception as exc:
            raise BatchFailedLater(before, self.state.batch_count + 1, exc) from exc
        return before.after(state, diagnostics)

    # ------------------------------------------------------------------ reading
    @property
    def engine(self) -> engine_choice.Engine:
        return engine_choice.Engine(self.backend, self.signature)

    @property
    def expected(self) -> inputs.Expected:
        """What the stream's next inputs must be (dtype, width, names)."""
        return inputs.Expected(np.dtype(self.dtype), self.state.n_features_in, self.feature_names)

    def predict(self, X: Any, estimator_name: str) -> Any:
        """``X coef + intercept`` in the backend's array type."""
        return self.backend.predict(self.state, self.features(X, estimator_name))

    def features(self, X: Any, estimator_name: str) -> Any:
        """X validated for this stream's engine (names, width, finiteness), where it lives."""
        return inputs.features(self.backend, X, self.expected, estimator_name)

    def score(self, X: Any, y: Any, sample_weight: Any, estimator_name: str) -> float:
        prediction = self.predict(X, estimator_name)
        return inputs.r_squared(self.backend, prediction, X, y, sample_weight, estimator_name)

    def host_state(self) -> RenewableHuberState:
        """An independent host copy of the state."""
        return self.backend.to_host_state(self.state)

    def state_dict(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """``config`` (JSON-safe parameters) and the state as plain values and host arrays."""
        state = self.host_state()
        return {
            "config": dict(config),
            "coefficients": state.coefficients,
            "information": state.information,
            "n_samples_seen": int(state.n_samples_seen),
            "batch_count": int(state.batch_count),
            "previous_lambda": float(state.previous_lambda),
            "n_features_in": int(state.n_features_in),
            "fit_intercept": bool(state.fit_intercept),
            "weight_sum": None if state.weight_sum is None else float(state.weight_sum),
            "feature_names_in": None if self.feature_names is None else [str(n) for n in self.feature_names],
            "meat": state.meat,
            "converged_batches": self.converged_batches,
        }

    def fitted_attributes(self) -> dict[str, Any]:
        """The model's public fitted attributes (spec/API.md, "Fitted
        attributes"); with a batch pending, those that need no outcome
        (OUTCOME_ATTRIBUTES are read when asked for)."""
        state, backend = self.state, self.backend
        p = state.n_features_in
        fitted: dict[str, Any] = {
            "n_features_in_": p,
            "n_samples_seen_": int(state.n_samples_seen) + (0 if self.pending is None else self.pending.rows),
            "backend_": backend.name,
            "device_": backend.device,
            "n_jobs_": backend.n_jobs,
        }
        if self.feature_names is not None:
            fitted["feature_names_in_"] = self.feature_names.copy()
        if self.auto_dispatch is not None:
            fitted["auto_dispatch_"] = dict(self.auto_dispatch)
        if self.pending is not None:
            return fitted
        coefficients = backend.host_coefficients(state) if backend.capabilities.framework_arrays else state.coefficients
        fitted["coef_"] = coefficients[:p].copy()
        fitted["intercept_"] = float(coefficients[p]) if state.fit_intercept else 0.0
        if self.diagnostics is not None:
            fitted["n_iter_"] = int(self.diagnostics.iterations)
        if backend.capabilities.reports_cuda_features:
            fitted["cuda_features_"] = dict(backend.cuda_features)
        return fitted

    def warn_if_not_converged(self, estimator_name: str, config: SolverConfig, stacklevel: int) -> None:
        """A ConvergenceWarning for each batch of the last call that did not converge."""
        first = self.state.batch_count - len(self.batch_diagnostics) + 1
        for k, diagnostics in enumerate(self.batch_diagnostics):
            if not diagnostics.converged:
                warnings.warn(convergence_message(estimator_name, first + k, diagnostics, config.penalty,
                                                  config.max_iter), ConvergenceWarning, stacklevel=stacklevel + 1)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """Host arrays and the engine's description: engines (native handles,
        device memory) are rebuilt on unpickling. A pending batch is read by
        the model first (its pickling settles)."""
        if self.pending is not None:
            raise ValidationError("a stream with a batch not read yet cannot be pickled: pickle its model")
        return {"backend": (self.backend.name, self.backend.device), "signature": self.signature,
                "state": self.host_state(), "feature_names": self.feature_names, "diagnostics": self.diagnostics,
                "auto_dispatch": self.auto_dispatch, "dtype": self.dtype, "converged_batches": self.converged_batches}

    def __setstate__(self, pickled: dict[str, Any]) -> None:
        from .backends.registry import create_backend

        name, device = pickled["backend"]
        signature = pickled["signature"]
        backend = create_backend(name, device, pickled["dtype"], signature[3], cuda_graphs=signature[4],
                                 cuda_fast_math=signature[5])
        for field, value in (("backend", backend), ("signature", signature),
                             ("state", backend.as_backend_state(pickled["state"])),
                             ("feature_names", pickled["feature_names"]), ("diagnostics", pickled["diagnostics"]),
                             ("auto_dispatch", pickled["auto_dispatch"]), ("dtype", pickled["dtype"]),
                             ("converged_batches", pickled["converged_batches"]), ("batch_diagnostics", ())):
            object.__setattr__(self, field, value)


#: the fitted attributes that need the last batch's outcome: absent from a
#: model whose last batch is pending, and read (settled) when asked for
OUTCOME_ATTRIBUTES = frozenset(("coef_", "intercept_", "n_iter_", "cuda_features_"))


@dataclass(frozen=True)
class PendingBatch:
    """A batch a backend queued and nobody has read: its handle (for
    ``settle_update``) and its rows."""

    handle: Any
    rows: int
    #: the configuration it was solved with (its ConvergenceWarning's words)
    config: SolverConfig


class BatchFailedLater(Exception):
    """A pending batch failed when it was read: ``before`` is the stream
    without it, ``batch`` its number in the stream, ``error`` what it raised."""

    def __init__(self, before: Stream, batch: int, error: Exception) -> None:
        super().__init__(str(error))
        self.before, self.batch, self.error = before, batch, error

    def for_the_caller(self) -> Exception:
        """The error to raise where the batch was read: the batch's own
        error type, its message saying which batch failed and that the
        model is as before it."""
        message = (f"batch {self.batch}, absorbed by an earlier call and read now, failed: {self.error}; "
                   f"the model is as it was before batch {self.batch}")
        try:
            return type(self.error)(message)
        except Exception:  # an error type that takes other arguments keeps its own words
            return self.error


def empty_state(backend: Any, params: Mapping[str, Any], n_features: int) -> RenewableHuberState:
    """The state a new stream of ``n_features`` starts from, in ``backend``'s arrays."""
    return backend.empty_state(n_features, params["fit_intercept"], params["dtype"], tracks_meat(params))


def _require_host_state(backend: Any) -> None:
    """Partition sums are added on the CPU: a state held elsewhere cannot take them."""
    capabilities = backend.capabilities
    if capabilities.state_on_device or capabilities.framework_arrays:
        raise ValidationError(
            f"a batch spread over partitions is solved on the CPU, but this model's backend "
            f"{backend.name!r} keeps its state elsewhere: use backend='auto', 'numpy' or 'native_cpu'")


def tracks_meat(params: Mapping[str, Any]) -> bool:
    """Whether a new stream accumulates the meat: inference on, and no L1
    penalty (which refuses inference)."""
    return bool(params["inference"]) and params["penalty"] == "none"


@contextlib.contextmanager
def rolling_back(committed: Optional[Stream]) -> Iterator[None]:
    """Around a transition and the commit of its result: on any failure
    (interrupts too) the engine of the ``committed`` stream holds its state
    again (Backend.rollback)."""
    try:
        yield
    except BaseException:
        if committed is not None:
            committed.backend.rollback(committed.state)
        raise
