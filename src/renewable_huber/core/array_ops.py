"""The small array-namespace protocol the reference update is written against.

The reference math in this package (``huber``, ``objective``, ``newton``,
``lamm``, ``update``) only touches arrays through an ``ArrayOps`` object, so a
GPU framework (CuPy, PyTorch, TensorFlow) reuses the same math by supplying
its own ops instead of a second copy of the algorithm.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

Array = Any


class ArrayOps(Protocol):
    """Operations the reference update needs; every array is of one dtype."""

    dtype: Any

    def asarray(self, value: Any) -> Array: ...
    def zeros(self, shape: tuple[int, ...]) -> Array: ...
    def scalar(self, value: float) -> Array: ...
    def clip(self, x: Array, low: Array, high: Array) -> Array: ...
    def where(self, condition: Array, a: Array, b: Array) -> Array: ...
    def abs(self, x: Array) -> Array: ...
    def sign(self, x: Array) -> Array: ...
    def maximum(self, x: Array, y: Array) -> Array: ...
    def sum(self, x: Array) -> Array: ...
    def dot(self, a: Array, b: Array) -> Array: ...
    def norm(self, x: Array) -> float: ...
    def to_float(self, x: Array) -> float: ...
    def add_to_diagonal(self, a: Array, value: Array) -> Array: ...
    def concatenate_columns(self, a: Array, b: Array) -> Array: ...
    def set_leading(self, x: Array, count: int, value: float) -> Array: ...
    def solve_with_fallback(self, a: Array, b: Array) -> tuple[Array, bool]: ...


class NumpyOps:
    """``ArrayOps`` over NumPy arrays of one floating dtype."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)

    def asarray(self, value: Any) -> np.ndarray:
        return np.asarray(value, dtype=self.dtype)

    def zeros(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape, dtype=self.dtype)

    def scalar(self, value: float) -> np.generic:
        return self.dtype.type(value)

    clip = staticmethod(np.clip)
    where = staticmethod(np.where)
    abs = staticmethod(np.abs)
    sign = staticmethod(np.sign)
    maximum = staticmethod(np.maximum)
    sum = staticmethod(np.sum)
    dot = staticmethod(np.dot)

    @staticmethod
    def norm(x: np.ndarray) -> float:
        return float(np.linalg.norm(x))

    @staticmethod
    def to_float(x: Any) -> float:
        return float(x)

    @staticmethod
    def add_to_diagonal(a: np.ndarray, value: Any) -> np.ndarray:
        out = a.copy()
        out[np.diag_indices_from(out)] += value
        return out

    @staticmethod
    def concatenate_columns(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.concatenate([a, b], axis=1)

    @staticmethod
    def set_leading(x: np.ndarray, count: int, value: float) -> np.ndarray:
        out = x.copy()
        out[:count] = value
        return out

    @staticmethod
    def solve_with_fallback(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, bool]:
        """Solve ``a x = b``; returns ``(x, used_least_squares_fallback)``.

        A regular LU solve with partial pivoting first; when ``a`` is singular
        (LAPACK reports an exactly zero pivot) or the result is not finite, the
        minimum-norm least-squares solution from the SVD.
        """
        try:
            with np.errstate(all="ignore"):
                x = np.linalg.solve(a, b)
            if np.all(np.isfinite(x)):
                return x, False
        except np.linalg.LinAlgError:
            pass
        x = np.linalg.lstsq(a, b, rcond=None)[0]
        return x.astype(a.dtype, copy=False), True
