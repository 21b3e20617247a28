"""RenewableHuberRegressor: streaming (renewable) Huber regression, optionally L1-penalised.

The scikit-learn surface only: parameters, fit/partial_fit, predict/score,
fitted attributes, state and checkpoints. The running stream (engine choice,
validation, transitions, restore, device moves) is stream.py's ``Stream``;
the model replaces its stream in one step when a transition has succeeded.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Optional

from . import serialization
from .config import PARAMETER_DEFAULTS, PARAMETER_NAMES, SolverConfig, checked_solver_config, json_safe_params
from .config import validate_params
from .core.diagnostics import UpdateDiagnostics
from .exceptions import NotFittedError
from .inference import StatisticalInference, prediction_std
from .model_lock import LOCK_ATTRIBUTE, ModelLock, serialized
from .state import RenewableHuberState
from .pending_reads import PendingReads
from .stream import Stream, rolling_back

NOT_FITTED_MESSAGE = "Call fit or partial_fit before using this estimator"

#: public fitted attributes; ``reset`` drops all of them
_FITTED_ATTRIBUTES = frozenset(("coef_", "intercept_", "n_features_in_", "feature_names_in_", "n_samples_seen_",
                                "n_iter_", "backend_", "device_", "n_jobs_", "cuda_features_", "auto_dispatch_",
                                "_stream"))

#: ``advance``'s step: (the current stream or None, parameters, solver config) -> the next stream
Step = Callable[[Optional[Stream], Mapping[str, Any], SolverConfig], Optional[Stream]]


class RenewableHuberRegressor(PendingReads, StatisticalInference, ModelLock):
    """Streaming Huber regression that keeps only coefficients and a d x d information matrix.

    Each call to :meth:`partial_fit` absorbs one batch with the renewable update
    of spec/ALGORITHM.md (damped Newton for ``penalty="none"``, LAMM for
    ``penalty="l1"``); :meth:`fit` starts a new stream with one batch.
    Standard errors, p-values, intervals and a summary come from the same
    d x d state (``bse_``, ``summary()``: inference.py, docs/inference.md).

    Parameters
    ----------
    tau : float, default=1.345
        Huber threshold on the absolute residual scale.
    penalty : {"none", "l1"}, default="none"
        "l1" adds a lasso penalty with level ``lambda_scale * tau * sqrt(ln p / N)``.
    lambda_scale, bandwidth_scale : float, default=1.0
        Multipliers of the L1 level and of the curvature-smoothing bandwidth.
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
    inference : bool, default=True
        Accumulate what standard errors need (the meat S beside J: one more
        weighted Gram per batch); False skips it and refuses inference.

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

    def __init__(self, *, tau: float = 1.345, penalty: str = "none", lambda_scale: float = 1.0,
                 bandwidth_scale: float = 1.0, fit_intercept: bool = True, max_iter: int = 100, tol: float = 1e-6,
                 ridge: float = 1e-8, backend: str = "auto", device: str = "auto", dtype: str = "float64",
                 n_jobs: Optional[int] = None, cuda_graphs: bool = False, cuda_fast_math: bool = False,
                 inference: bool = True) -> None:
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
        self.inference = inference

    # ------------------------------------------------------------------ parameters
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The 15 constructor parameters, in constructor order."""
        return {name: getattr(self, name) for name in PARAMETER_NAMES}

    @serialized
    def set_params(self, **params: Any) -> "RenewableHuberRegressor":
        """Assign parameters (not validated here), drop the fitted state, return self."""
        unknown = sorted(set(params) - set(PARAMETER_NAMES))
        if unknown:
            raise ValueError(f"Unknown parameter(s): {', '.join(unknown)}")
        for name, value in params.items():
            setattr(self, name, value)
        return self.reset()

    @serialized
    def reset(self) -> "RenewableHuberRegressor":
        """Forget the stream: state, backend, diagnostics and every fitted attribute."""
        self._install(None)
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return self.__dict__.get("_stream") is not None

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "RenewableHuberRegressor":
        """Start a new stream with one batch. Every input is validated before
        the previous model is dropped, and the new model replaces the old one
        only when the whole update succeeded."""
        name = type(self).__name__
        return self.advance(lambda current, params, config: Stream.begin(params, config, X, y, sample_weight, name,
                                                                         reuse=current))

    def partial_fit(self, X: Any, y: Any, sample_weight: Any = None) -> "RenewableHuberRegressor":
        """Absorb exactly one batch into the stream (the first batch starts it)."""
        name = type(self).__name__
        return self.advance(lambda current, params, config: Stream.extended(current, params, config, X, y,
                                                                            sample_weight, name))

    def partial_fit_batches(self, X: Any, y: Any, sample_weight: Any = None, *,
                            batch_size: int) -> "RenewableHuberRegressor":
        """Absorb consecutive slices of ``batch_size`` rows (the last may be
        shorter), each as :meth:`partial_fit` absorbs a batch: bit for bit the
        loop of partial_fit over the slices, in one engine call where the
        engine takes several (native_cpu). All slices or none: a failure
        leaves the model as it was."""
        name = type(self).__name__
        return self.advance(lambda current, params, config: Stream.sliced(current, params, config, X, y,
                                                                          sample_weight, name, batch_size))

    @serialized
    def advance(self, step: Step, *, warn: bool = True, stacklevel: int = 2) -> "RenewableHuberRegressor":
        """Replace the stream by ``step(current stream or None, parameters,
        solver config)``, for integrations that compute the next stream
        elsewhere (``renewable_huber.dask``). The parameters are validated
        first; the model changes only when ``step`` returned, and on any
        failure its engine holds the previous state again. With ``warn``, an unconverged last
        batch warns as partial_fit's do (``stacklevel``: of its caller's caller, by default)."""
        params = self.get_params()
        config = checked_solver_config(params)
        current = self._settled_stream(install=False)
        try:
            with rolling_back(current):
                stream = step(current, params, config)
                self._install(stream)
        except BaseException:
            self._keep_read(current)
            raise
        if stream is not None:  # (a step over no rows leaves an unfitted model unfitted)
            stream.backend.settle()
            if warn:
                stream.warn_if_not_converged(type(self).__name__, config, stacklevel=stacklevel + 2)
        return self

    def _install(self, stream: Optional[Stream], params: Optional[Mapping[str, Any]] = None) -> None:
        """The stream, its public attributes (and new ``params``) in one
        assignment: an interrupt leaves the old model or the new one, never a
        mix, and a reader that does not take the lock sees old or new
        attributes, never none."""
        attributes = {name: value for name, value in self.__dict__.items() if name not in _FITTED_ATTRIBUTES}
        attributes.update(params or {})
        if stream is not None:
            attributes.update(stream.fitted_attributes(), _stream=stream)
        self.__dict__ = attributes

    def _fitted_stream(self) -> Stream:
        stream = self._settled_stream()
        if stream is None:
            raise NotFittedError(NOT_FITTED_MESSAGE)
        return stream

    def _current_backend(self) -> Any:
        stream = self.__dict__.get("_stream")
        return None if stream is None else stream.backend

    # ------------------------------------------------------------------ prediction
    @serialized
    def predict(self, X: Any, return_std: bool = False) -> Any:
        """``X @ coef_ + intercept_`` in the backend's array type; with
        ``return_std``, also the standard error of each mean prediction
        (a host NumPy array)."""
        stream, name = self._fitted_stream(), type(self).__name__
        if not return_std:
            return stream.predict(X, name)
        X = stream.features(X, name)
        return stream.backend.predict(stream.state, X), prediction_std(self._inference(), X, self.fit_intercept)

    @serialized
    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Coefficient of determination R^2 (weighted when ``sample_weight`` is given).

        Device arrays stay on their device until the final scalar."""
        return self._fitted_stream().score(X, y, sample_weight, type(self).__name__)

    # ------------------------------------------------------------------ state
    @property
    def state_(self) -> RenewableHuberState:
        """An independent host copy of the state."""
        with self._own_lock():
            return self._fitted_stream().host_state()

    @property
    def diagnostics_(self) -> UpdateDiagnostics:
        """Diagnostics of the last processed batch."""
        stream = self._settled_stream()
        if stream is None or stream.diagnostics is None:
            raise NotFittedError("No batch has been processed")
        return stream.diagnostics

    @serialized
    def state_dict(self) -> dict[str, Any]:
        """Configuration and state as plain values and host NumPy arrays."""
        return self._fitted_stream().state_dict(json_safe_params(self.get_params()))

    @serialized
    def load_state_dict(self, state_dict: Mapping[str, Any]) -> "RenewableHuberRegressor":
        """Restore from :meth:`state_dict` output, validated like :meth:`load`."""
        return self._resume(serialization.payload_from_state_dict(state_dict), {})

    # ------------------------------------------------------------------ checkpoints
    @serialized
    def save(self, path: "os.PathLike[str] | str") -> "os.PathLike[str]":
        """Write a checkpoint to exactly ``path`` (atomically); return it as a Path."""
        return serialization.write_checkpoint(path, self.state_dict())

    @classmethod
    def load(cls, path: "os.PathLike[str] | str", *, backend: Optional[str] = None, device: Optional[str] = None,
             dtype: Optional[str] = None) -> "RenewableHuberRegressor":
        """Read a checkpoint; ``backend``/``device``/``dtype`` override the stored values."""
        payload = serialization.read_checkpoint(path)
        overrides = {"backend": backend, "device": device, "dtype": dtype}
        return cls()._resume(payload, {name: value for name, value in overrides.items() if value is not None})

    def _resume(self, payload: serialization.CheckpointPayload, overrides: Mapping[str, Any]) -> "RenewableHuberRegressor":
        """The stream of ``payload`` with its stored parameters, ``overrides``
        replacing them (a backend without a device moves to device="auto")."""
        params = dict(PARAMETER_DEFAULTS, **payload.config)
        if "backend" in overrides and "device" not in overrides:
            params["device"] = "auto"
        params.update(overrides)
        self._install(Stream.resumed(payload, params), params)
        return self

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
            return self.set_params(backend=backend, device=device)
        payload = serialization.payload_from_state_dict(self.state_dict())
        return self._resume(payload, {"backend": backend, "device": device})

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        """The attributes without the lock (an unpickled model gets one of its
        own); the stream pickles itself (engines are rebuilt)."""
        self._settled_stream()
        attributes = dict(self.__dict__)
        attributes.pop(LOCK_ATTRIBUTE, None)
        return attributes
