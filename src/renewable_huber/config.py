"""Estimator parameters: their defaults, their validation, and the solver config.

The order of the checks and the exact messages are part of the public contract
(spec/API.md, "Constructor"). Every number has a range every engine can
represent, checked here so that all backends answer alike (README,
"Parameter ranges"): reals are finite doubles (a Python int or Fraction too
large for a double is not one), max_iter, n_jobs and the device index are at
most MAX_INT32 (a C int, int32_t in the CUDA C ABI).
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass
from typing import Any, Mapping

from .exceptions import ValidationError

#: The 15 constructor parameters, in the order ``get_params`` returns them
#: (``inference``, amendment 0003, after the 14 of spec/API.md).
PARAMETER_DEFAULTS: dict[str, Any] = {
    "tau": 1.345,
    "penalty": "none",
    "lambda_scale": 1.0,
    "bandwidth_scale": 1.0,
    "fit_intercept": True,
    "max_iter": 100,
    "tol": 1e-6,
    "ridge": 1e-8,
    "backend": "auto",
    "device": "auto",
    "dtype": "float64",
    "n_jobs": None,
    "cuda_graphs": False,
    "cuda_fast_math": False,
    "inference": True,
}
PARAMETER_NAMES: tuple[str, ...] = tuple(PARAMETER_DEFAULTS)

PENALTIES = ("none", "l1")
BACKENDS = ("auto", "numpy", "native_cpu", "cupy", "native_cuda", "torch", "tensorflow")
DTYPES = ("float32", "float64")

#: the largest max_iter, n_jobs and CUDA device index: what every engine binds (a C int)
MAX_INT32 = 2**31 - 1


@dataclass(frozen=True)
class SolverConfig:
    """The numerical part of the configuration, as every engine receives it."""

    tau: float
    penalty: str
    lambda_scale: float
    bandwidth_scale: float
    fit_intercept: bool
    max_iter: int
    tol: float
    ridge: float

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "SolverConfig":
        return cls(
            tau=float(params["tau"]),
            penalty=str(params["penalty"]),
            lambda_scale=float(params["lambda_scale"]),
            bandwidth_scale=float(params["bandwidth_scale"]),
            fit_intercept=bool(params["fit_intercept"]),
            max_iter=int(params["max_iter"]),
            tol=float(params["tol"]),
            ridge=float(params["ridge"]),
        )


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _finite_real(value: Any) -> bool:
    """A real that is a finite double (float() of a huge int overflows)."""
    if not _is_real(value):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _is_integral(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_valid_device(device: Any) -> bool:
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` with N a non-negative integer."""
    if not isinstance(device, str):
        return False
    if device in ("auto", "cpu", "cuda"):
        return True
    prefix, _, index = device.partition(":")
    return (
        prefix == "cuda" and index.isascii() and index.isdigit() and index == str(int(index)) and int(index) <= MAX_INT32
    )


def validate_params(params: Mapping[str, Any]) -> None:
    """Raise ValidationError with the contract's message for the first bad parameter."""
    p = params

    def fail(message: str) -> None:
        raise ValidationError(message)

    if not (_finite_real(p["tau"]) and p["tau"] > 0):
        fail("tau must be greater than zero")
    if not (isinstance(p["penalty"], str) and p["penalty"] in PENALTIES):
        fail("penalty must be either 'none' or 'l1'")
    if not (_finite_real(p["lambda_scale"]) and p["lambda_scale"] >= 0):
        fail("lambda_scale must be non-negative")
    if not (_finite_real(p["bandwidth_scale"]) and p["bandwidth_scale"] > 0):
        fail("bandwidth_scale must be greater than zero")
    if not (_is_integral(p["max_iter"]) and p["max_iter"] >= 1):
        fail("max_iter must be at least one")
    if p["max_iter"] > MAX_INT32:
        fail(f"max_iter must be at most {MAX_INT32}")
    if not isinstance(p["fit_intercept"], bool):
        fail("fit_intercept must be a boolean")
    if not (_finite_real(p["tol"]) and p["tol"] > 0):
        fail("tol must be greater than zero")
    if not (_finite_real(p["ridge"]) and p["ridge"] >= 0):
        fail("ridge must be non-negative")
    if not (isinstance(p["backend"], str) and p["backend"] in BACKENDS):
        fail("unsupported backend")
    if not is_valid_device(p["device"]):
        fail("device must be 'auto', 'cpu', or 'cuda'")
    if not (isinstance(p["dtype"], str) and p["dtype"] in DTYPES):
        fail("dtype must be either 'float32' or 'float64'")
    n_jobs = p["n_jobs"]
    if not (n_jobs is None or (_is_integral(n_jobs) and (n_jobs == -1 or n_jobs >= 1))):
        fail("n_jobs must be None, -1, or a positive integer")
    if n_jobs is not None and n_jobs > MAX_INT32:
        fail(f"n_jobs must be None, -1, or a positive integer of at most {MAX_INT32}")
    if not isinstance(p["cuda_graphs"], bool):
        fail("cuda_graphs must be a boolean")
    if not isinstance(p["cuda_fast_math"], bool):
        fail("cuda_fast_math must be a boolean")
    if p["backend"] == "native_cuda" and p["cuda_fast_math"] and p["dtype"] != "float32":
        fail("cuda_fast_math requires dtype='float32'")
    if not isinstance(p["inference"], bool):
        fail("inference must be a boolean")


@functools.lru_cache(maxsize=256)
def _checked_config(key: tuple) -> SolverConfig:
    names, _, values = key
    params = dict(zip(names, values))
    validate_params(params)
    return SolverConfig.from_params(params)


def checked_solver_config(params: Mapping[str, Any]) -> SolverConfig:
    """``validate_params`` then ``SolverConfig.from_params``, remembered for
    parameter sets already accepted (every call of a stream repeats them).

    The cache key holds each value with its exact type, so values that
    compare equal but validate differently (``1`` and ``True``) never share an
    entry; only accepted sets are cached (a failure raises every time), and
    unhashable values are validated without the cache.
    """
    values = tuple(params.values())
    key = (tuple(params), tuple(map(type, values)), values)
    try:
        hash(key)
    except TypeError:
        validate_params(params)
        return SolverConfig.from_params(params)
    return _checked_config(key)


def json_safe_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters as plain JSON values (NumPy scalars become Python scalars)."""
    out: dict[str, Any] = {}
    for name in PARAMETER_NAMES:
        value = params[name]
        if isinstance(value, bool) or value is None or isinstance(value, str):
            out[name] = value
        elif _is_integral(value):
            out[name] = int(value)
        elif _is_real(value):
            out[name] = float(value)
        else:
            out[name] = value
    return out
