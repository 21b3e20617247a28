"""Which backend a stream runs on: the named one, or what ``backend="auto"``
picks (spec/API.md, "Backends and devices"), and when a new stream may keep
the engine of the stream before it.

An engine is described by its *signature* (backend name, device, dtype,
threads, CUDA options): a new stream whose signature equals the previous
stream's keeps that engine (its workspaces are warm). ``backend="auto"``
with a CUDA device takes the first usable GPU backend; on the CPU it is
decided on the stream's first batch (``choose_cpu_engine``: the CPU
selector's bounded evidence), and an auto-chosen engine that cannot be
built falls back to NumPy and says why in the dispatch record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

from .backends.auto import choose_cpu_backend, choose_gpu_backend
from .backends.registry import availability, create_backend


@dataclass(frozen=True)
class Engine:
    """A backend object and the signature it was made for."""

    backend: Any
    signature: tuple


def signature(name: str, params: Mapping[str, Any]) -> tuple:
    return (name, params["device"], params["dtype"], params["n_jobs"], params["cuda_graphs"],
            params["cuda_fast_math"])


def make_engine(name: str, params: Mapping[str, Any], reuse: Optional[Engine] = None) -> Engine:
    """The backend ``name`` for ``params``; ``reuse``'s own when the signatures match."""
    wanted = signature(name, params)
    if reuse is not None and reuse.signature == wanted:
        return reuse
    return Engine(create_backend(name, params["device"], params["dtype"], params["n_jobs"],
                                 cuda_graphs=params["cuda_graphs"], cuda_fast_math=params["cuda_fast_math"]), wanted)


def is_cuda(device: Any) -> bool:
    return device == "cuda" or str(device).startswith("cuda:")


@dataclass(frozen=True)
class Resolution:
    """A new stream's engine before its first batch: ``engine`` when it is
    known already; None when the CPU selector must still choose (from the
    first batch's shape). ``dispatch``: the auto choice's record."""

    engine: Optional[Engine]
    dispatch: Optional[dict]


def resolve(params: Mapping[str, Any], reuse: Optional[Engine] = None) -> Resolution:
    name, device = params["backend"], params["device"]
    if name != "auto":
        return Resolution(make_engine(name, params, reuse), None)
    if is_cuda(device):
        chosen, record = choose_gpu_backend(str(device))
        return Resolution(make_engine(chosen, params, reuse), record)
    return Resolution(None, None)


def choose_cpu_engine(params: Mapping[str, Any], n_rows: int, n_features: int,
                      reuse: Optional[Engine] = None) -> tuple[Engine, dict]:
    """``backend="auto"`` on the CPU for a first batch of this shape: the
    engine and its dispatch record."""
    n_parameters = n_features + int(params["fit_intercept"])
    name, record = choose_cpu_backend(n_rows, n_parameters, params["dtype"], params["penalty"], params["n_jobs"])
    cpu_params = dict(params, device="cpu")
    try:
        return make_engine(name, cpu_params, reuse), record
    except Exception as exc:  # an auto-chosen engine that cannot be built falls back
        if name == "numpy":
            raise
        record = dict(record, backend="numpy", reason=f"{name} could not be created ({exc}); using NumPy")
        return make_engine("numpy", cpu_params), record


def numpy_fallback(params: Mapping[str, Any], dispatch: dict, error: BaseException) -> tuple[Engine, dict]:
    """An auto-chosen CPU engine failed its first update: NumPy, and why."""
    record = dict(dispatch, backend="numpy", reason=f"native engine failed its first update ({error}); using NumPy")
    return make_engine("numpy", dict(params, device="cpu")), record


def for_resumed_stream(params: Mapping[str, Any]) -> Engine:
    """The engine of a stream resumed from a checkpoint. ``backend="auto"``
    on the CPU has no first batch to calibrate on: the native engine when it
    is installed, else the reference."""
    resolution = resolve(params)
    if resolution.engine is not None:
        return resolution.engine
    name = "native_cpu" if availability("native_cpu")[0] else "numpy"
    return make_engine(name, dict(params, device="cpu"))
