"""RenewableHuberRegressor: streaming (renewable) Huber regression, optionally L1-penalised."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import numpy as np

from . import device_arrays, serialization
from .backends.auto import choose_cpu_backend, choose_gpu_backend
from .backends.registry import availability, create_backend
from .config import (
    PARAMETER_DEFAULTS,
    PARAMETER_NAMES,
    SolverConfig,
    checked_solver_config,
    json_safe_params,
    validate_params,
)
from .core.diagnostics import UpdateDiagnostics, convergence_message
from .exceptions import ConvergenceWarning, NotFittedError, ValidationError
from .model_lock import LOCK_ATTRIBUTE, model_lock, serialized
from .state import RenewableHuberState
from .validation import (
    all_finite,
    check_feature_names,
    check_X_shape,
    feature_names_of,
    require_finite,
    validate_sample_weight,
    validate_vector,
    validate_X,
)

NOT_FITTED_MESSAGE = "Call fit or partial_fit before using this estimator"


#: private attributes that hold a fitted stream; ``reset`` drops all of them
_STREAM_ATTRIBUTES = ("_stream",)
#: public fitted attributes; ``reset`` drops all of them
_FITTED_ATTRIBUTES = (
    "coef_",
    "intercept_",
    "n_features_in_",
    "feature_names_in_",
    "n_samples_seen_",
    "n_iter_",
    "backend_",
    "device_",
    "n_jobs_",
    "cuda_features_",
    "auto_dispatch_",
)


@dataclass
class _Stream:
    """Everything a fitted model carries, replaced as a whole on every commit."""

    backend: Any
    #: (backend name, device, dtype, n_jobs) the engine was made for: a new
    #: stream with the same signature keeps the engine (warm workspaces)
    signature: tuple
    state: RenewableHuberState  # in the backend's array type
    feature_names: Optional[np.ndarray]
    diagnostics: Optional[UpdateDiagnostics]
    auto_dispatch: Optional[dict]
    dtype: str


class RenewableHuberRegressor:
    """Streaming Huber regression that keeps only coefficients and a d x d information matrix.

    Each call to :meth:`partial_fit` absorbs one batch with the renewable update
    of spec/ALGORITHM.md (damped Newton for ``penalty="none"``, LAMM for
    ``penalty="l1"``); :meth:`fit` starts a new stream with one batch.

    Parameters
    ----------
    tau : float, default=1.345
        Huber threshold on the absolute residual scale.
    penalty : {"none", "l1"}, default="none"
        "l1" adds a lasso penalty with level ``lambda_scale * tau * sqrt(ln p / N)``.
    lambda_scale : float, default=1.0
        Multiplier of the L1 level.
    bandwidth_scale : float, default=1.0
        Multiplier of the curvature-smoothing bandwidth.
    fit_intercept : bool, default=True
        Append an unpenalised intercept column.
    max_iter : int, default=100
        Newton/LAMM iterations per batch.
    tol : float, default=1e-6
        Relative step-size convergence tolerance.
    ridge : float, default=1e-8
        Diagonal damping of the Newton system (not part of the objective).
    backend : str, default="auto"
        "auto", "numpy", "native_cpu", "cupy", "native_cuda", "torch" or "tensorflow".
    device : str, default="auto"
        "auto", "cpu", "cuda" or "cuda:N".
    dtype : {"float32", "float64"}, default="float64"
        Precision of the state and of every computation.
    n_jobs : int or None, default=None
        Threads of the native CPU engine (None: library default, -1: all cores).
    cuda_graphs, cuda_fast_math : bool, default=False
        Options of the native CUDA engine.

    Examples
    --------
    >>> import numpy as np
    >>> from renewable_huber import RenewableHuberRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)); y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=2000)
    >>> y[::50] += 100.0  # gross outliers
    >>> model = RenewableHuberRegressor(backend="numpy")
    >>> for start in range(0, 2000, 500):
    ...     _ = model.partial_fit(X[start:start + 500], y[start:start + 500])
    >>> np.round(model.coef_, 1)
    array([ 1. , -2. ,  0.5])
    """

    def __init__(
        self,
        *,
        tau: float = 1.345,
        penalty: str = "none",
        lambda_scale: float = 1.0,
        bandwidth_scale: float = 1.0,
        fit_intercept: bool = True,
        max_iter: int = 100,
        tol: float = 1e-6,
        ridge: float = 1e-8,
        backend: str = "auto",
        device: str = "auto",
        dtype: str = "float64",
        n_jobs: Optional[int] = None,
        cuda_graphs: bool = False,
        cuda_fast_math: bool = False,
    ) -> None:
        self.tau = tau
        self.penalty = penalty
        self.lambda_scale = lambda_scale
        self.bandwidth_scale = bandwidth_scale
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.ridge = ridge
        self.backend = backend
        self.device = device
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.cuda_graphs = cuda_graphs
        self.cuda_fast_math = cuda_fast_math

    # ------------------------------------------------------------------ parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The 14 constructor parameters, in constructor order."""
        return {name: getattr(self, name) for name in PARAMETER_NAMES}

    @serialized
    def set_params(self, **params: Any) -> "RenewableHuberRegressor":
        """Assign parameters (not validated here), drop the fitted state, return self."""
        unknown = sorted(set(params) - set(PARAMETER_NAMES))
        if unknown:
            raise ValueError(f"Unknown parameter(s): {', '.join(unknown)}")
        for name, value in params.items():
            setattr(self, name, value)
        self.reset()
        return self

    @serialized
    def reset(self) -> "RenewableHuberRegressor":
        """Forget the stream: state, backend, diagnostics and every fitted attribute."""
        for name in _STREAM_ATTRIBUTES + _FITTED_ATTRIBUTES:
            self.__dict__.pop(name, None)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return self.__dict__.get("_stream") is not None

    def _validated_params(self) -> tuple[dict[str, Any], SolverConfig]:
        """The parameters and the solver configuration they give (validated)."""
        params = self.get_params()
        return params, checked_solver_config(params)

    # ------------------------------------------------------------------ fitting
    @serialized
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "RenewableHuberRegressor":
        """Start a new stream with one batch.

        Every input is validated before the previous model is dropped, and the
        new model replaces the old one only when the whole update succeeded.
        """
        params, config = self._validated_params()
        engine, auto_pending, auto_record = self._resolve_backend(params, reuse=self.__dict__.get("_stream"))
        self._absorb(params, config, None, engine, auto_pending, X, y, sample_weight, auto_record)
        return self

    @serialized
    def partial_fit(self, X: Any, y: Any, sample_weight: Any = None) -> "RenewableHuberRegressor":
        """Absorb exactly one batch into the stream (the first batch starts it)."""
        params, config = self._validated_params()
        stream = self.__dict__.get("_stream")
        if stream is None:
            engine, auto_pending, auto_record = self._resolve_backend(params)
        else:
            self._check_stream_compatible(params, stream)
            engine, auto_pending, auto_record = (stream.backend, stream.signature), False, None
        self._absorb(params, config, stream, engine, auto_pending, X, y, sample_weight, auto_record)
        return self

    def _check_stream_compatible(self, params: Mapping[str, Any], stream: _Stream) -> None:
        if params["fit_intercept"] != stream.state.fit_intercept:
            raise ValidationError("fit_intercept cannot change during a stream; call fit or reset first")
        if params["dtype"] != stream.dtype:
            raise ValidationError("dtype cannot change during a stream; call fit or reset first")

    def _current_backend(self) -> Any:
        stream = self.__dict__.get("_stream")
        return None if stream is None else stream.backend

    @staticmethod
    def _make_backend(name: str, params: Mapping[str, Any], reuse: Optional[_Stream] = None) -> tuple[Any, tuple]:
        """(backend for ``name``, its signature); the engine of the previous
        stream is reused when its name, device, dtype and threads match (its
        workspaces are warm)."""
        options = {"cuda_graphs": params["cuda_graphs"], "cuda_fast_math": params["cuda_fast_math"]}
        signature = (name, params["device"], params["dtype"], params["n_jobs"], *options.values())
        if reuse is not None and reuse.signature == signature:
            return reuse.backend, signature
        return create_backend(name, params["device"], params["dtype"], params["n_jobs"], **options), signature

    def _resolve_backend(
        self, params: Mapping[str, Any], reuse: Optional[_Stream] = None
    ) -> tuple[Optional[tuple[Any, tuple]], bool, Optional[dict]]:
        """((backend, signature) or None, whether the CPU auto selector must
        still choose, the GPU auto choice's record or None)."""
        name, device = params["backend"], params["device"]
        if name == "auto":
            if device == "cuda" or str(device).startswith("cuda:"):
                chosen, record = choose_gpu_backend(str(device))
                return self._make_backend(chosen, params, reuse), False, record
            return None, True, None
        return self._make_backend(name, params, reuse), False, None

    def _validate_batch(
        self, params: Mapping[str, Any], stream: Optional[_Stream], backend: Any, X: Any, y: Any, sample_weight: Any
    ) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray], Optional[np.ndarray]]:
        dtype = np.dtype(params["dtype"])
        # A backend may supply a faster finiteness test (same answer, same place in the order).
        finite = backend.all_finite if backend is not None else all_finite
        names, expected = self._batch_names(stream, X)
        # A backend that tests X itself (in the read that prepares it) gets X
        # untested; should y or the weights fail, X is tested first, so the
        # error reported is the one the order of the checks gives.
        x_tested_by_backend = backend is not None and backend.capabilities.checks_X_finite
        X_array = validate_X(X, dtype, expected, type(self).__name__, None if x_tested_by_backend else finite)
        try:
            y_array = validate_vector(y, "y", dtype, X_array.shape[0], finite)
            weights = validate_sample_weight(sample_weight, dtype, X_array.shape[0], finite)
        except Exception:
            if x_tested_by_backend:
                require_finite(X_array, "X", finite)
            raise
        return X_array, y_array, weights, names

    @staticmethod
    def _batch_names(stream: Optional[_Stream], X: Any) -> tuple[Optional[np.ndarray], Optional[int]]:
        """(X's feature names, checked against the stream's; the stream's feature count or None)."""
        if stream is None:
            return feature_names_of(X), None
        return check_feature_names(stream.feature_names, X), stream.state.n_features_in

    def _validate_device_batch(
        self, params: Mapping[str, Any], stream: Optional[_Stream], backend: Any, X: Any, y: Any, sample_weight: Any
    ) -> tuple[Any, Any, Any, Optional[np.ndarray]]:
        """A device batch's shapes (its values are checked by the engine, on
        the device, before any state changes); the arrays stay where they are."""
        device_arrays.require_device_backend(backend, X, params["backend"], params["device"])
        names, expected = self._batch_names(stream, X)
        X, y, sample_weight = device_arrays.check_device_batch(X, y, sample_weight, expected, type(self).__name__)
        return X, y, sample_weight, names

    def _absorb(
        self,
        params: Mapping[str, Any],
        config: SolverConfig,
        stream: Optional[_Stream],
        engine: Optional[tuple[Any, tuple]],
        auto_pending: bool,
        X: Any,
        y: Any,
        sample_weight: Any,
        auto_record: Optional[dict] = None,
    ) -> None:
        backend, signature = engine if engine is not None else (None, ())
        if backend is not None and backend.capabilities.framework_arrays:
            names, expected = self._batch_names(stream, X)
            X_array, y_array, weights = backend.validated_batch(X, y, sample_weight, expected, type(self).__name__)
        elif device_arrays.is_device_batch(X, y, sample_weight):
            X_array, y_array, weights, names = self._validate_device_batch(params, stream, backend, X, y, sample_weight)
        else:
            X_array, y_array, weights, names = self._validate_batch(params, stream, backend, X, y, sample_weight)
        auto_dispatch = stream.auto_dispatch if stream is not None else auto_record
        if auto_pending:
            backend, signature, auto_dispatch = self._choose_cpu_engine(params, X_array.shape[0], X_array.shape[1],
                                                                        self.__dict__.get("_stream"))
        committed = self.__dict__.get("_stream")
        try:  # from the first touch of an engine to the commit: any failure (an interrupt too) rolls back
            if stream is None:
                state = backend.empty_state(X_array.shape[1], params["fit_intercept"], params["dtype"])
                feature_names = names
            else:
                state, feature_names = stream.state, stream.feature_names
            try:
                next_state, diagnostics = backend.update(state, X_array, y_array, weights, config)
            except Exception as exc:
                if isinstance(exc, ValidationError) or not (auto_pending and backend.name != "numpy" and stream is None):
                    raise
                # A CPU engine auto-chosen for this stream that fails its first update falls back to NumPy.
                backend, signature = self._make_backend("numpy", dict(params, device="cpu"))
                auto_dispatch = dict(auto_dispatch, backend="numpy",
                                     reason=f"native engine failed its first update ({exc}); using NumPy")
                state = backend.empty_state(X_array.shape[1], params["fit_intercept"], params["dtype"])
                next_state, diagnostics = backend.update(state, X_array, y_array, weights, config)
            new_stream = _Stream(backend, signature, next_state, feature_names, diagnostics, auto_dispatch,
                                 params["dtype"])
            self._commit(new_stream)
        except BaseException:
            if committed is not None:
                committed.backend.rollback(committed.state)
            raise
        backend.settle()
        self._warn_if_not_converged(new_stream, config, stacklevel=4)

    def _finish_update(self, stream: _Stream, config: SolverConfig, stacklevel: int) -> None:
        """Install an update's stream; warn when its solver did not converge."""
        self._commit(stream)
        self._warn_if_not_converged(stream, config, stacklevel + 1)

    def _warn_if_not_converged(self, stream: _Stream, config: SolverConfig, stacklevel: int) -> None:
        diagnostics = stream.diagnostics
        if not diagnostics.converged:
            warnings.warn(
                convergence_message(type(self).__name__, stream.state.batch_count, diagnostics, config.penalty,
                                    config.max_iter),
                ConvergenceWarning,
                stacklevel=stacklevel,
            )

    def _partitioned_update(self, like: Any, transition: Any) -> None:
        """One update of a batch this process does not hold (``renewable_huber.dask``'s
        parallel-batch mode). ``like``: an X-like object with the batch's
        columns and no rows (a frame's meta, or an empty array), checked as
        partial_fit checks X's columns before ``transition(state, config)``
        runs; it returns the next state (host arrays) and its diagnostics.
        Same atomicity as partial_fit: the model changes only when the
        transition returns."""
        params, config = self._validated_params()
        stream = self.__dict__.get("_stream")
        if stream is not None:
            self._check_stream_compatible(params, stream)
        names, expected = self._batch_names(stream, like)
        n_features = int(like.shape[1])
        check_X_shape((1, n_features), expected, type(self).__name__)
        if stream is not None:
            backend, signature, auto_dispatch = stream.backend, stream.signature, stream.auto_dispatch
            state, names = stream.state, stream.feature_names
        else:
            # the engine partial_fit would resolve (auto on the CPU: the selector's
            # choice for a large batch of this width)
            engine, auto_pending, auto_dispatch = self._resolve_backend(params)
            if auto_pending:
                backend, signature, auto_dispatch = self._choose_cpu_engine(params, 1 << 20, n_features, None)
            else:
                backend, signature = engine
            state = None
        if backend.capabilities.state_on_device or backend.capabilities.framework_arrays:
            raise ValidationError(
                f"a batch spread over partitions is solved on the CPU, but this model's backend "
                f"{backend.name!r} keeps its state elsewhere: use backend='auto', 'numpy' or 'native_cpu'")
        if state is None:
            state = backend.empty_state(n_features, params["fit_intercept"], params["dtype"])
        next_state, diagnostics = transition(state, config)
        self._finish_update(_Stream(backend, signature, next_state, names, diagnostics, auto_dispatch,
                                    params["dtype"]), config, stacklevel=4)

    def _choose_cpu_engine(
        self, params: Mapping[str, Any], n_rows: int, n_features: int, reuse: Optional[_Stream]
    ) -> tuple[Any, tuple, dict]:
        n_parameters = n_features + int(params["fit_intercept"])
        name, record = choose_cpu_backend(n_rows, n_parameters, params["dtype"], params["penalty"], params["n_jobs"])
        cpu_params = dict(params, device="cpu")
        try:
            return (*self._make_backend(name, cpu_params, reuse), record)
        except Exception as exc:  # an auto-chosen engine that cannot be built falls back
            if name == "numpy":
                raise
            record = dict(record, backend="numpy", reason=f"{name} could not be created ({exc}); using NumPy")
            return (*self._make_backend("numpy", cpu_params), record)

    def _commit(self, stream: _Stream, *, from_checkpoint: bool = False) -> None:
        """Install a new stream and its public attributes in one step."""
        state = stream.state
        p = state.n_features_in
        backend = stream.backend
        coefficients = backend.host_coefficients(state) if backend.capabilities.framework_arrays else state.coefficients
        fitted: dict[str, Any] = {
            "coef_": coefficients[:p].copy(),
            "intercept_": float(coefficients[p]) if state.fit_intercept else 0.0,
            "n_features_in_": p,
            "n_samples_seen_": int(state.n_samples_seen),
            "backend_": stream.backend.name,
            "device_": stream.backend.device,
            "n_jobs_": stream.backend.n_jobs,
        }
        if stream.feature_names is not None:
            fitted["feature_names_in_"] = stream.feature_names.copy()
        if stream.diagnostics is not None and not from_checkpoint:
            fitted["n_iter_"] = int(stream.diagnostics.iterations)
        if stream.auto_dispatch is not None and not from_checkpoint:
            fitted["auto_dispatch_"] = dict(stream.auto_dispatch)
        if stream.backend.capabilities.reports_cuda_features:
            fitted["cuda_features_"] = dict(stream.backend.cuda_features)
        # All attributes at once, in one assignment: an interrupt sees the
        # old model or the new one, never a mix, and a reader that does not
        # take the lock sees old or new attributes, never none.
        attributes = {name: value for name, value in self.__dict__.items() if name not in _FITTED_ATTRIBUTES}
        attributes.update(fitted, _stream=stream)
        self.__dict__ = attributes

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """Pickle the stream as host arrays plus the backend's name: engines
        (native handles, device memory) are rebuilt on unpickling."""
        attributes = dict(self.__dict__)
        attributes.pop(LOCK_ATTRIBUTE, None)  # an unpickled model gets a lock of its own
        stream = attributes.pop("_stream", None)
        if stream is not None:
            backend = stream.backend
            attributes["_pickled_stream"] = {
                "backend": (backend.name, backend.device, stream.dtype, self.n_jobs),
                "signature": stream.signature,
                "state": backend.to_host_state(stream.state),
                "feature_names": stream.feature_names,
                "diagnostics": stream.diagnostics,
                "auto_dispatch": stream.auto_dispatch,
            }
        return attributes

    def __setstate__(self, attributes: dict[str, Any]) -> None:
        attributes = dict(attributes)
        pickled = attributes.pop("_pickled_stream", None)
        self.__dict__.update(attributes)
        if pickled is not None:
            signature = pickled["signature"]
            backend = create_backend(
                *pickled["backend"], cuda_graphs=signature[4], cuda_fast_math=signature[5]
            )
            self._stream = _Stream(
                backend,
                signature,
                backend.as_backend_state(pickled["state"]),
                pickled["feature_names"],
                pickled["diagnostics"],
                pickled["auto_dispatch"],
                pickled["backend"][2],
            )

    # ------------------------------------------------------------------ prediction
    def _fitted_stream(self) -> _Stream:
        stream = self.__dict__.get("_stream")
        if stream is None:
            raise NotFittedError(NOT_FITTED_MESSAGE)
        return stream

    @serialized
    def predict(self, X: Any) -> Any:
        """``X @ coef_ + intercept_`` in the backend's array type."""
        stream = self._fitted_stream()
        check_feature_names(stream.feature_names, X)
        if stream.backend.capabilities.framework_arrays:
            X_array = stream.backend.validated_X(X, stream.state.n_features_in, type(self).__name__)
            return stream.backend.predict(stream.state, X_array)
        if device_arrays.is_device_array(X):
            device_arrays.require_device_backend(stream.backend, X, stream.backend.name, stream.backend.device)
            device_arrays.check_device_batch(X, None, None, stream.state.n_features_in, type(self).__name__)
            device_arrays.require_finite(X, "X")
            return stream.backend.predict(stream.state, X)
        X_array = validate_X(
            X, np.dtype(stream.dtype), stream.state.n_features_in, type(self).__name__, stream.backend.all_finite
        )
        return stream.backend.predict(stream.state, X_array)

    @serialized
    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Coefficient of determination R^2 (weighted when ``sample_weight`` is given).

        Device arrays stay on their device until the final scalar."""
        backend = self._fitted_stream().backend
        if backend.capabilities.framework_arrays:
            prediction = self.predict(X)
            y, sample_weight = backend.validated_targets(y, sample_weight, int(prediction.shape[0]))
            if backend.owns(y) and (sample_weight is None or backend.owns(sample_weight)):
                return device_arrays.device_r2(prediction, y, sample_weight)
            # host targets: the comparison on the host
            host = [None if a is None else backend.host_array(a) if backend.owns(a) else a
                    for a in (prediction, y, sample_weight)]
            return self._host_r2(*host)
        if device_arrays.is_device_batch(X, y, sample_weight):
            prediction = self.predict(X)
            _, y, sample_weight = device_arrays.check_device_batch(X, y, sample_weight, None, type(self).__name__)
            return device_arrays.device_r2(prediction, y, sample_weight)
        return self._host_r2(self.predict(X), y, sample_weight)

    @staticmethod
    def _host_r2(prediction: Any, y: Any, sample_weight: Any) -> float:
        prediction = np.asarray(prediction, dtype=np.float64)
        n_rows = prediction.shape[0]
        truth = validate_vector(y, "y", np.dtype(np.float64), n_rows)
        weights = (
            np.ones(n_rows)
            if sample_weight is None
            else validate_sample_weight(sample_weight, np.dtype(np.float64), n_rows)
        )
        mean = np.average(truth, weights=weights)
        residual_sum = float(np.sum(weights * (truth - prediction) ** 2))
        total_sum = float(np.sum(weights * (truth - mean) ** 2))
        if total_sum == 0.0:
            return 1.0 if residual_sum == 0.0 else 0.0
        return 1.0 - residual_sum / total_sum

    # ------------------------------------------------------------------ state
    @property
    def state_(self) -> RenewableHuberState:
        """An independent host copy of the state."""
        with model_lock(self):
            stream = self._fitted_stream()
            return stream.backend.to_host_state(stream.state)

    @property
    def diagnostics_(self) -> UpdateDiagnostics:
        """Diagnostics of the last processed batch."""
        stream = self.__dict__.get("_stream")
        if stream is None or stream.diagnostics is None:
            raise NotFittedError("No batch has been processed")
        return stream.diagnostics

    @serialized
    def state_dict(self) -> dict[str, Any]:
        """Configuration and state as plain values and host NumPy arrays."""
        stream = self._fitted_stream()
        state = stream.backend.to_host_state(stream.state)
        return {
            "config": json_safe_params(self.get_params()),
            "coefficients": state.coefficients,
            "information": state.information,
            "n_samples_seen": int(state.n_samples_seen),
            "batch_count": int(state.batch_count),
            "previous_lambda": float(state.previous_lambda),
            "n_features_in": int(state.n_features_in),
            "fit_intercept": bool(state.fit_intercept),
            "weight_sum": None if state.weight_sum is None else float(state.weight_sum),
            "feature_names_in": None if stream.feature_names is None else [str(n) for n in stream.feature_names],
        }

    @serialized
    def load_state_dict(self, state_dict: Mapping[str, Any]) -> "RenewableHuberRegressor":
        """Restore from :meth:`state_dict` output, validated like :meth:`load`."""
        payload = serialization.payload_from_state_dict(state_dict)
        self._restore(payload, backend=None, device=None, dtype=None)
        return self

    # ------------------------------------------------------------------ checkpoints
    @serialized
    def save(self, path: "os.PathLike[str] | str") -> "os.PathLike[str]":
        """Write a v2 checkpoint to exactly ``path`` (atomically); return it as a Path."""
        return serialization.write_checkpoint(path, self.state_dict())

    @classmethod
    def load(
        cls,
        path: "os.PathLike[str] | str",
        *,
        backend: Optional[str] = None,
        device: Optional[str] = None,
        dtype: Optional[str] = None,
    ) -> "RenewableHuberRegressor":
        """Read a checkpoint; ``backend``/``device``/``dtype`` override the stored values."""
        payload = serialization.read_checkpoint(path)
        model = cls()
        model._restore(payload, backend=backend, device=device, dtype=dtype)
        return model

    def _restore(
        self,
        payload: serialization.CheckpointPayload,
        *,
        backend: Optional[str],
        device: Optional[str],
        dtype: Optional[str],
    ) -> None:
        params = dict(PARAMETER_DEFAULTS)
        params.update(payload.config)
        if backend is not None:
            params["backend"] = backend
            if device is None:
                params["device"] = "auto"
        if device is not None:
            params["device"] = device
        if dtype is not None:
            params["dtype"] = dtype
        state = payload.state
        state.validate()
        validate_params(params)
        if params["fit_intercept"] != state.fit_intercept:
            raise ValidationError("checkpoint fit_intercept does not match configuration")
        engine, auto_pending, _ = self._resolve_backend(params)
        if auto_pending:
            # A resumed stream has no first batch to calibrate on: the native
            # engine when it is installed, else the reference.
            name = "native_cpu" if availability("native_cpu")[0] else "numpy"
            engine = self._make_backend(name, dict(params, device="cpu"))
        resolved, signature = engine
        host_state = state.with_arrays(
            np.array(state.coefficients, dtype=params["dtype"]), np.array(state.information, dtype=params["dtype"])
        )
        names = payload.feature_names
        if names is not None:
            if len(names) != state.n_features_in or not all(isinstance(n, str) for n in names):
                raise ValidationError("checkpoint feature names do not match feature metadata")
            names = np.asarray(list(names), dtype=object)
        backend_state = resolved.as_backend_state(host_state)  # may fail (device memory): nothing changed yet
        for name, value in params.items():
            setattr(self, name, value)
        self._commit(
            _Stream(resolved, signature, backend_state, names, None, None, params["dtype"]), from_checkpoint=True
        )

    @serialized
    def to_device(self, device: str, backend: str = "auto") -> "RenewableHuberRegressor":
        """Move the model to ``device`` ("cpu", "cuda", "cuda:N") and ``backend``
        (default "auto": on a GPU the first available of native_cuda, cupy,
        torch, tensorflow; on the CPU native_cpu when installed, else numpy).

        The only way state changes device: ``partial_fit`` never moves it.
        The stream continues where it was (coefficients, information,
        counters, feature names; the bits in the same dtype), the
        ``backend`` and ``device`` parameters are updated, and the last
        batch's diagnostics (``n_iter_``) are not carried, as with
        :meth:`load`. An unfitted model only has its parameters set. On any
        failure the model is left as it was."""
        validate_params(dict(self.get_params(), backend=backend, device=device))
        if self.__dict__.get("_stream") is None:
            self.set_params(backend=backend, device=device)
            return self
        payload = serialization.payload_from_state_dict(self.state_dict())
        self._restore(payload, backend=backend, device=device, dtype=None)
        return self
