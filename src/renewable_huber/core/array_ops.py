"""The small array-namespace protocol the reference update is written against.

The reference math in this package (``huber``, ``objective``, ``newton``,
``lamm``, ``update``) only touches arrays through an ``ArrayOps`` object, so a
GPU framework (CuPy, PyTorch, TensorFlow) reuses the same math by supplying
its own ops instead of a second copy of the algorithm.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol

import numpy as np

from .solver_rules import singular_rcond_threshold

Array = Any


class ArrayOps(Protocol):
    """Operations the reference update needs; every array is of one dtype."""

    dtype: Any
    dtype_name: str  # "float64" or "float32"

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
    def to_list(self, x: Array) -> list: ...
    def add_to_diagonal(self, a: Array, value: Array) -> Array: ...
    def concatenate_columns(self, a: Array, b: Array) -> Array: ...
    def set_leading(self, x: Array, count: int, value: float) -> Array: ...
    def all_finite(self, x: Array) -> bool: ...
    # The solve ladder's pieces (solve_ladder.py takes the decisions):
    def reciprocal_condition(self, a: Array) -> float: ...
    def solve(self, a: Array, b: Array) -> Optional[Array]: ...
    def least_squares(self, a: Array, b: Array) -> Array: ...


class NumpyOps:
    """``ArrayOps`` over NumPy arrays of one floating dtype."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = np.dtype(dtype)
        self.dtype_name = self.dtype.name

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
    def to_list(x: np.ndarray) -> list:
        return x.tolist()

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
    def all_finite(x: np.ndarray) -> bool:
        return bool(np.all(np.isfinite(x)))

    @staticmethod
    def reciprocal_condition(a: np.ndarray) -> float:
        """The exact 1-norm reciprocal condition number 1 / (||a||_1 ||a^-1||_1)
        in the model dtype; 0.0 when LAPACK reports an exactly zero pivot or
        the inverse (or a norm) is not finite, which is what a singular
        matrix produces, not a failure."""
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                inverse = np.linalg.inv(a)
                product = float(np.linalg.norm(a, 1)) * float(np.linalg.norm(inverse, 1))
        except np.linalg.LinAlgError:
            return 0.0
        if not (np.isfinite(product) and product > 0.0):
            return 0.0
        return 1.0 / product

    @staticmethod
    def solve(a: np.ndarray, b: np.ndarray) -> Optional[np.ndarray]:
        """LU with partial pivoting (LAPACK gesv); None on an exactly zero pivot."""
        try:
            with np.errstate(all="ignore"):
                return np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            return None

    def least_squares(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The minimum-norm least-squares solution (SVD, gelsd), singular
        values below eps * d of the largest treated as zero, eps of the model
        dtype (numpy's rcond=None would take float64's for a float32 matrix,
        which it solves in float64). The ladder (solve_ladder.py) passes only
        finite systems: LAPACK's SVD on inf/NaN may never return."""
        rcond = singular_rcond_threshold(a.shape[0], self.dtype_name)
        return np.linalg.lstsq(a, b, rcond=rcond)[0].astype(a.dtype, copy=False)
