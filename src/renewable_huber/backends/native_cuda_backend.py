"""The CUDA engine (``backend="native_cuda"``) behind the Backend protocol.

The engine lives in the separately installed distribution
``renewable-huber-native-cuda`` as the top-level module
``_renewable_huber_native_cuda``, a thin binding over the engine's C ABI.
One engine serves one (device, dtype, parameter count) and keeps the state
on the device across batches: the backend's state object carries host
coefficients (returned with every update at no extra synchronization) and a
``ResidentInformation`` token for the information matrix, which is copied to
the host only on demand (``state_``, ``state_dict()``, ``save()``). An engine
update stages its results and commits them only on success, so a failed
update leaves the state on the device as it was. What a call changes in the
engine before the model commits (a new stream's upload over a model's state,
an update the model never recorded because the call was interrupted) is
undone by ``rollback``: the engine reverts its last update, or gets back the
host copy or the engine object kept for it.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._version import __version__
from ..config import SolverConfig
from ..core.diagnostics import UpdateDiagnostics
from .. import device_arrays
from ..exceptions import BackendContractError, BackendUnavailableError, NativeEngineError, ValidationError
from ..state import RenewableHuberState
from . import native_adapter
from .base import BackendCapabilities
from .native_adapter import SUPPORTED_ABI_VERSION  # noqa: F401  (the ABI this adapter speaks)

INSTALL_HINT = "pip install 'renewable-huber[native-cuda]'"
#: the CUDA C ABI's major version this adapter was written for (rh_cuda.h)
SUPPORTED_CUDA_ABI_MAJOR = 1

try:
    import _renewable_huber_native_cuda as _native
except ImportError as exc:  # pragma: no cover - exercised when the module is absent
    raise BackendUnavailableError(
        f"The native CUDA backend requires the renewable-huber-native-cuda engine. Install it with: {INSTALL_HINT} "
        f"({exc})"
    ) from exc


def check_module_compatible(module: Any, package_version: str = __version__) -> None:
    """Refuse a native module built for another package version, binding ABI or C ABI."""
    native_adapter.check_module_compatible(module, "renewable-huber-native-cuda", INSTALL_HINT, package_version)
    library = module.library_abi_version()
    if library >> 16 != SUPPORTED_CUDA_ABI_MAJOR:
        raise BackendUnavailableError(
            f"the CUDA engine library has C ABI {library >> 16}.{library & 0xFFFF}, this renewable-huber needs "
            f"{SUPPORTED_CUDA_ABI_MAJOR}.x. Reinstall matching versions with: {INSTALL_HINT}"
        )


check_module_compatible(_native)

#: the GPU had not enough memory for the batch; the model is unchanged and the engine usable
DeviceOutOfMemoryError = native_adapter.EngineOutOfMemoryError


def _translate(error: BaseException):
    return native_adapter.translate(error, "native_cuda")


def device_index(device: str) -> int:
    """'auto', 'cuda' -> 0; 'cuda:N' -> N."""
    if device in ("auto", "cuda"):
        return 0
    if device.startswith("cuda:") and device[5:].isdigit():
        return int(device[5:])
    raise BackendUnavailableError(f"backend='native_cuda' requires a CUDA device, got device={device!r}")


def runtime_info() -> dict[str, Any]:
    """What the CUDA runtime reports here (devices, runtime and driver versions)."""
    return dict(_native.runtime_info())


_engine_ids = itertools.count(1)
#: every state an engine commits gets its own version, never reused (a
#: state that a rollback abandoned can never pass for a current one)
_versions = itertools.count(1)


@dataclass(frozen=True)
class ResidentInformation:
    """Stands for the information matrix kept on the device by one engine
    (``engine_id``) at one committed version of its state."""

    engine_id: int
    version: int
    shape: tuple[int, int]


@dataclass
class _Undo:
    """What ``rollback`` needs to give back the state (``version``) that an
    upload replaced: the engine that held it, when the upload needed an
    engine of another shape, else a host copy of it."""

    version: int
    engine: Optional[tuple[Any, tuple[int, bool], int]] = None  # (engine, shape, engine id)
    #: (coefficients, information, counters, meat or None)
    snapshot: Optional[tuple[np.ndarray, np.ndarray, Any, Optional[np.ndarray]]] = None


#: RH_CUDA_SOLVER's values, in the order of the ABI's RH_CUDA_SOLVER_* constants.
SOLVER_CHOICES = ("auto", "pipeline", "block")


def solver_choice_requested() -> str:
    """Which path new engines may take (RH_CUDA_SOLVER): "auto" (default: the
    block solver, one launch per update, for the small batches it serves
    well; the multi-kernel pipeline for the rest, its Newton solve driven on
    the device where it can be, one wait an update), "pipeline" (always, the
    host driving every Newton iteration) or "block" (whenever the parameters
    fit its arrays). For A/B measurements and the tests that compare the
    paths; the results agree to rounding (the two pipeline routes bit for bit)."""
    value = os.environ.get("RH_CUDA_SOLVER", "").strip() or "auto"
    if value not in SOLVER_CHOICES:
        raise ValidationError(f"RH_CUDA_SOLVER must be one of 'auto', 'pipeline', 'block', got {value!r}")
    return value


#: RH_CUDA_RESULTS' values.
RESULT_MODES = ("deferred", "immediate")


def results_requested() -> str:
    """When the outcome of a ``partial_fit`` on a fitted model is read
    (RH_CUDA_RESULTS): "deferred" (default, amendment 0004: the call returns
    once its update is queued on the GPU, and the next call that needs the
    outcome reads it, raising there what only the device could find) or
    "immediate" (every call waits for its update and raises its own errors)."""
    value = os.environ.get("RH_CUDA_RESULTS", "").strip() or "deferred"
    if value not in RESULT_MODES:
        raise ValidationError(f"RH_CUDA_RESULTS must be one of 'deferred', 'immediate', got {value!r}")
    return value


@dataclass(frozen=True)
class PendingUpdate:
    """An update the backend's engine left queued; ``NativeCudaBackend.settle_update`` reads it."""

    #: the engine's diagnostics at the return (its host synchronizations so far)
    queued: Any


#: The most tiles of rows per block the engine takes (its kMaxBlockTiles).
MAX_BLOCK_TILES = 4096


def block_tiles_requested() -> int:
    """The block solver's tiles of rows per block at least (RH_CUDA_BLOCK_TILES,
    an integer from 1 to 4096), or 0 for the engine's default: a calibration
    knob for the block solver's benchmark, passed to new engines as an option."""
    value = os.environ.get("RH_CUDA_BLOCK_TILES", "").strip()
    if not value:
        return 0
    if not value.isdigit() or not 1 <= int(value) <= MAX_BLOCK_TILES:
        raise ValidationError(f"RH_CUDA_BLOCK_TILES must be an integer from 1 to {MAX_BLOCK_TILES}, got {value!r}")
    return int(value)


class NativeCudaBackend:
    name = "native_cuda"
    n_jobs: Optional[int] = None
    capabilities = BackendCapabilities(
        checks_X_finite=True, reports_cuda_features=True, state_on_device=True, accepts_device_arrays=True,
        defers_results=True,
    )

    def __init__(
        self, dtype: str = "float64", device: str = "cuda", cuda_graphs: bool = False, fast_math: bool = False
    ) -> None:
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype("float64"), np.dtype("float32")):
            raise ValidationError("dtype must be either 'float32' or 'float64'")
        self.device_index = device_index(device)
        self.device = f"cuda:{self.device_index}"
        info = runtime_info()
        if info["device_count"] == 0:
            raise BackendUnavailableError(
                "backend='native_cuda' needs a CUDA device and none is usable here "
                f"(CUDA runtime {info['runtime_version']}, driver {info['driver_version'] or 'absent'})"
            )
        if self.device_index >= info["device_count"]:
            raise BackendUnavailableError(
                f"backend='native_cuda': CUDA device {self.device_index} does not exist "
                f"({info['device_count']} devices)"
            )
        self.cuda_graphs = bool(cuda_graphs)
        self.fast_math = bool(fast_math) and self.dtype == np.dtype("float32")
        #: which path may solve an update: "auto" (the block solver for small
        #: batches, else the pipeline), "pipeline" or "block" (RH_CUDA_SOLVER)
        self.solver_choice = solver_choice_requested()
        #: the block solver's tiles of rows per block (RH_CUDA_BLOCK_TILES; 0: the engine's default)
        self.block_tiles = block_tiles_requested()
        #: when a partial_fit's outcome is read: "deferred" or "immediate" (RH_CUDA_RESULTS); immediate
        #: with an engine that cannot leave an update queued (a binding without settle: C ABI before 1.7)
        requested = results_requested()
        self.results = requested if hasattr(_native.Engine, "settle") else "immediate"
        #: the update the engine holds queued and unread (None: none)
        self._pending: Optional[PendingUpdate] = None
        self._engine: Any = None
        self._engine_id = 0
        self._shape: Optional[tuple[int, bool]] = None
        self._version = 0  # of the engine's committed state; 0: none yet
        self._undo: Optional[_Undo] = None
        #: whether the engine accumulates the meat (its last restore gave one)
        self._tracks_meat = False
        self._native_config = native_adapter.NativeConfigs(_native)
        #: the engine's diagnostics of the last update read (host synchronizations included), or None
        self.last_native_diagnostics: Any = None

    # ------------------------------------------------------------------ engine and state
    def _engine_for(self, n_features_in: int, fit_intercept: bool) -> Any:
        shape = (int(n_features_in), bool(fit_intercept))
        if self._engine is None or self._shape != shape:
            try:
                engine = _native.Engine(
                    self.device_index, self.dtype.name, shape[0], shape[1], self.cuda_graphs, self.fast_math,
                    solver_choice=SOLVER_CHOICES.index(self.solver_choice), block_tiles=self.block_tiles,
                )
            except _native.EngineError as exc:
                raise _translate(exc) from None
            self._engine, self._shape, self._engine_id = engine, shape, next(_engine_ids)
        return self._engine

    def _token(self, state: RenewableHuberState) -> ResidentInformation:
        """What stands for the matrices (the information, and the meat when tracked) the engine holds now."""
        d = state.n_parameters
        return ResidentInformation(self._engine_id, self._version, (d, d))

    def _host_array(self, array: Any) -> np.ndarray:
        return native_adapter.host_array(array, self.dtype)

    def as_backend_state(self, state: RenewableHuberState) -> RenewableHuberState:
        """Upload a host state: the engine's state becomes it. A state the
        engine held (a model's, committed) stays recoverable by ``rollback``
        until ``settle``."""
        coefficients = np.array(state.coefficients, dtype=self.dtype)
        information = self._host_array(state.information)
        meat = None if state.meat is None else self._host_array(state.meat)
        if self._version:
            self._undo = self._undo_for((int(state.n_features_in), bool(state.fit_intercept)))
        engine = self._engine_for(state.n_features_in, state.fit_intercept)
        try:
            engine.restore(coefficients, information, native_adapter.state_counters(_native, state), meat)
        except _native.EngineError as exc:
            raise _translate(exc) from None
        self._version = next(_versions)
        self._tracks_meat = meat is not None
        token = self._token(state)
        return state.with_arrays(coefficients, token, None if meat is None else token)

    def _undo_for(self, shape: tuple[int, bool]) -> _Undo:
        """How to give back the engine's committed state once an upload of
        ``shape`` has replaced it."""
        if self._shape != shape:  # a new engine will hold the upload; this one keeps its state
            return _Undo(self._version, engine=(self._engine, self._shape, self._engine_id))
        coefficients, information, meat, counters = self._copy_out(self._engine, self._shape[0] + int(self._shape[1]),
                                                                   self._tracks_meat)
        return _Undo(self._version, snapshot=(coefficients, information, counters, meat))

    def _copy_out(self, engine: Any, d: int,
                  with_meat: bool) -> tuple[np.ndarray, np.ndarray, Optional[np.ndarray], Any]:
        """Host copies of ``engine``'s committed arrays, and its counters."""
        coefficients, information = np.empty(d, dtype=self.dtype), np.empty((d, d), dtype=self.dtype)
        meat = np.empty((d, d), dtype=self.dtype) if with_meat else None
        try:
            counters = engine.copy_state(coefficients, information, meat)
        except _native.EngineError as exc:
            raise _translate(exc) from None
        return coefficients, information, meat, counters

    def rollback(self, state: Optional[RenewableHuberState]) -> None:
        """Make ``state`` (the model's committed state) the engine's again:
        bring back the engine or the host copy an upload replaced, or revert
        an update the engine committed and the model never recorded (the
        call was interrupted between the two)."""
        undo, self._undo = self._undo, None
        self._discard_pending()
        if state is None or not isinstance(state.information, ResidentInformation):
            return
        token = state.information
        if undo is not None and undo.version == token.version:
            if undo.engine is not None:
                self._engine, self._shape, self._engine_id = undo.engine
            else:
                coefficients, information, counters, meat = undo.snapshot
                self._engine.restore(coefficients, information, counters, meat)
                self._tracks_meat = meat is not None
            self._version = token.version
            return
        if token.engine_id != self._engine_id:
            return
        if int(self._engine.counters().batch_count) != int(state.batch_count):
            self._engine.revert()
        self._version = token.version

    def settle(self) -> None:
        """The model committed: the replaced engine or host copy may go."""
        self._undo = None

    def _discard_pending(self) -> None:
        """Read a queued update that no model will record (a call failed or
        was interrupted after queuing it): the engine commits it (rollback's
        revert then puts back the state before it) or fails it (its state
        is then the one before it)."""
        if self._pending is None:
            return
        self._pending = None
        try:
            self._engine.settle(np.empty(self._engine.n_parameters, dtype=self.dtype))
        except _native.EngineError:
            pass

    def empty_state(self, n_features_in: int, fit_intercept: bool, dtype: str,
                    meat: bool = True) -> RenewableHuberState:
        return self.as_backend_state(RenewableHuberState.empty(n_features_in, fit_intercept, dtype, meat))

    def _current(self, state: RenewableHuberState) -> Any:
        """The engine holding `state`: a host state is uploaded first; a
        resident one must be the engine's committed version."""
        information = state.information
        if not isinstance(information, ResidentInformation):
            self.as_backend_state(state)
            return self._engine
        if information.engine_id != self._engine_id or information.version != self._version:
            raise NativeEngineError(
                "native_cuda: this state is not the engine's current one (an update committed after it was taken; "
                "resume from a checkpoint or state_dict)"
            )
        return self._engine

    def to_host_state(self, state: RenewableHuberState) -> RenewableHuberState:
        if not isinstance(state.information, ResidentInformation):
            return state.copy()
        coefficients, information, meat, _ = self._copy_out(self._current(state), state.n_parameters,
                                                            state.meat is not None)
        return state.with_arrays(coefficients, information, meat)

    # ------------------------------------------------------------------ the protocol
    def all_finite(self, array: Any) -> bool:
        from ..validation import all_finite

        return all_finite(array)

    def update(
        self,
        state: RenewableHuberState,
        X: Any,
        y: Any,
        sample_weight: Optional[Any],
        config: SolverConfig,
    ) -> tuple[RenewableHuberState, UpdateDiagnostics]:
        next_state, (native,) = self._absorb(state, X, y, sample_weight, config, None)
        return next_state, native_adapter.diagnostics(native)

    def update_deferred(self, state: RenewableHuberState, X: Any, y: Any, sample_weight: Optional[Any],
                        config: SolverConfig) -> Any:
        """``update``, except that with deferred results (RH_CUDA_RESULTS) the
        engine may return once the batch is queued (its arrays read to the
        end): then a ``PendingUpdate`` for ``settle_update``. An update the
        engine cannot leave queued (the block solver's, LAMM's, the host
        route's) returns as ``update`` does."""
        if self.results != "deferred":
            return self.update(state, X, y, sample_weight, config)
        absorbed = self._absorb(state, X, y, sample_weight, config, None, defer=True)
        if isinstance(absorbed, PendingUpdate):
            return absorbed
        next_state, (native,) = absorbed
        return next_state, native_adapter.diagnostics(native)

    def settle_update(self, state: RenewableHuberState,
                      pending: PendingUpdate) -> tuple[RenewableHuberState, UpdateDiagnostics]:
        """Read the queued update ``pending``, made on top of ``state``: the
        next state and the batch's diagnostics, or the batch's error (the
        engine's state is then ``state``, as after an update that failed)."""
        if pending is not self._pending:
            raise NativeEngineError("native_cuda: this queued update is not the engine's any more "
                                    "(it was read, or discarded by a rollback)")
        coefficients = np.empty(state.n_parameters, dtype=self.dtype)
        try:
            native, counters = self._engine.settle(coefficients)
        except _native.EngineError as exc:
            raise _translate(exc) from None
        finally:  # read by the engine (settled or failed) once the call was made
            self._pending = None
        next_state, (native,) = self._committed(state, coefficients, counters, [native])
        return next_state, native_adapter.diagnostics(native)

    def update_batches(self, state: RenewableHuberState, X: Any, y: Any, sample_weight: Optional[Any],
                       config: SolverConfig, batch_size: int) -> tuple[RenewableHuberState, list[UpdateDiagnostics]]:
        """Every slice in one native call (the engine's update_batches, C ABI
        1.6): all slices or none, and the engine's revert after it puts back
        the state before the call, which is what ``rollback`` asks of it."""
        next_state, natives = self._absorb(state, X, y, sample_weight, config, int(batch_size))
        return next_state, [native_adapter.diagnostics(native) for native in natives]

    def _absorb(self, state: RenewableHuberState, X: Any, y: Any, sample_weight: Optional[Any],
                config: SolverConfig, batch_size: Optional[int], defer: bool = False) -> Any:
        """The engine's update (``batch_size`` None) or update_batches: the
        next state and the native diagnostics of each batch; with ``defer``,
        a ``PendingUpdate`` when the engine left the update queued."""
        engine = self._current(state)
        coefficients = np.empty(state.n_parameters, dtype=self.dtype)
        sized = () if batch_size is None else (batch_size,)
        deferring = {"defer": True} if defer else {}
        try:
            if device_arrays.is_device_batch(X, y, sample_weight):
                absorb = engine.update_dlpack if batch_size is None else engine.update_dlpack_batches
                natives, counters = absorb(*self._capsules(engine, X=X, y=y, sample_weight=sample_weight),
                                           self._native_config(config), *sized, coefficients, **deferring)
            else:
                absorb = engine.update_host if batch_size is None else engine.update_host_batches
                natives, counters = absorb(self._host_array(X), self._host_array(y),
                                           None if sample_weight is None else self._host_array(sample_weight),
                                           self._native_config(config), *sized, coefficients, **deferring)
        except _native.EngineError as exc:
            raise _translate(exc) from None
        except _native.DlpackContractError as exc:
            raise BackendContractError(str(exc)) from None
        if defer and natives.deferred:
            self._pending = PendingUpdate(natives)
            return self._pending  # (last_native_diagnostics: of the last update read)
        return self._committed(state, coefficients, counters, [natives] if batch_size is None else list(natives))

    def _committed(self, state: RenewableHuberState, coefficients: np.ndarray, counters: Any,
                   natives: list[Any]) -> tuple[RenewableHuberState, list[Any]]:
        """The state after updates the engine committed on top of ``state``
        (a new version of it), and their native diagnostics."""
        self._version = next(_versions)
        self.last_native_diagnostics = natives[-1]
        token = self._token(state)
        return (native_adapter.next_state(state, coefficients, token, counters, None if state.meat is None else token),
                natives)

    def _capsules(self, engine: Any, **arrays: Any) -> list[Any]:
        """DLPack capsules of device arrays on the engine's device, exported on
        its stream (None stays None)."""
        for name, value in arrays.items():
            if value is not None:
                device_arrays.check_engine_device(value, name, self.device_index)
        return [None if value is None else device_arrays.export_capsule(value, engine.stream)
                for value in arrays.values()]

    def predict(self, state: RenewableHuberState, X: Any) -> Any:
        """Host X: a NumPy vector; device X: a vector of X's framework on X's
        device, computed by the engine in place (no host round trip)."""
        engine = self._current(state)
        if device_arrays.is_device_array(X):
            out, finish = device_arrays.empty_vector_like(X, int(X.shape[0]), self.dtype.name)
            try:
                engine.predict_dlpack(*self._capsules(engine, X=X, out=out))
            except _native.EngineError as exc:
                raise _translate(exc) from None
            except _native.DlpackContractError as exc:
                raise BackendContractError(str(exc)) from None
            return finish(out)
        X = self._host_array(X)
        out = np.empty(X.shape[0], dtype=self.dtype)
        try:
            engine.predict_host(X, out)
        except _native.EngineError as exc:
            raise _translate(exc) from None
        return out

    @property
    def cuda_features(self) -> dict[str, Any]:
        """The engine's counters (host synchronizations, workspace, CUDA graphs) and the device
        (the counters of the updates read: none while one is queued)."""
        features: dict[str, Any] = {"device": self.device, "cuda_graphs_requested": self.cuda_graphs,
                                    "fast_math": self.fast_math, "solver_choice": self.solver_choice,
                                    "block_tiles": self.block_tiles, "results": self.results}
        if self._engine is not None and self._pending is None:
            features.update(self._engine.features())
            features["device"] = self.device
        return features


def create(dtype: str, device: str, n_jobs: Any, cuda_graphs: bool = False, cuda_fast_math: bool = False) -> NativeCudaBackend:
    if device == "cpu":
        raise BackendUnavailableError("backend='native_cuda' requires a CUDA device")
    return NativeCudaBackend(dtype, device, cuda_graphs, cuda_fast_math)
