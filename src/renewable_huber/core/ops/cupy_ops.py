"""``ArrayOps`` over CuPy arrays of one dtype on one CUDA device.

CuPy's array API is NumPy's, so most operations are NumPy's names; the solve
ladder's pieces are written with an explicit LU (``cupyx.scipy.linalg``):
cuSOLVER does not raise on a singular matrix the way LAPACK's callers in
NumPy do, so the exactly zero pivot is read off U's diagonal.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator, Optional

import cupy
import numpy as np
from cupyx.scipy import linalg as cupyx_linalg

from ...exceptions import BackendContractError
from ..solver_rules import singular_rcond_threshold
from .condition import reciprocal_from_norms


class CupyOps:
    """``ArrayOps`` (core/array_ops.py) over ``cupy.ndarray`` on device ``device_index``."""

    def __init__(self, dtype_name: str, device_index: int) -> None:
        self.dtype_name = dtype_name
        self.dtype = np.dtype(dtype_name)
        self.device_index = int(device_index)

    # ------------------------------------------------------------------ transfers
    @staticmethod
    def is_native(value: Any) -> bool:
        return isinstance(value, cupy.ndarray)

    def asarray(self, value: Any, name: str = "array") -> cupy.ndarray:
        if isinstance(value, cupy.ndarray):
            if value.device.id != self.device_index:
                raise BackendContractError(
                    f"{name} is a CuPy array on cuda:{value.device.id}, but backend='cupy' runs on "
                    f"cuda:{self.device_index}; copy it there first (with cupy.cuda.Device({self.device_index}): "
                    f"cupy.asarray(...))"
                )
            return value if value.dtype == self.dtype else value.astype(self.dtype)
        with cupy.cuda.Device(self.device_index):
            return cupy.asarray(np.asarray(value, dtype=self.dtype))  # host data: one upload

    def copy(self, value: Any) -> cupy.ndarray:
        with cupy.cuda.Device(self.device_index):
            return self.asarray(value).copy()

    @staticmethod
    def to_numpy(x: cupy.ndarray) -> np.ndarray:
        return cupy.asnumpy(x)

    @staticmethod
    def published(x: cupy.ndarray) -> cupy.ndarray:
        return x

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        with cupy.cuda.Device(self.device_index):
            yield

    # ------------------------------------------------------------------ input checks (framework_inputs.py)
    @staticmethod
    def kind(x: cupy.ndarray) -> str:
        return x.dtype.kind

    @staticmethod
    def flatten(x: cupy.ndarray) -> cupy.ndarray:
        return x.reshape(-1)

    @staticmethod
    def any_negative(x: cupy.ndarray) -> bool:
        return bool((x < 0).any())

    @staticmethod
    def sum_float64(x: cupy.ndarray) -> float:
        return float(x.sum(dtype=cupy.float64))

    # ------------------------------------------------------------------ ArrayOps
    def zeros(self, shape: tuple[int, ...]) -> cupy.ndarray:
        return cupy.zeros(shape, dtype=self.dtype)

    def scalar(self, value: float) -> cupy.ndarray:
        # a 0-d device array of the model dtype: NumPy's scalar of the dtype would
        # leave the promotion with a NumPy scalar to CuPy's rules
        return cupy.asarray(value, dtype=self.dtype)

    clip = staticmethod(cupy.clip)
    where = staticmethod(cupy.where)
    abs = staticmethod(cupy.abs)
    sign = staticmethod(cupy.sign)
    maximum = staticmethod(cupy.maximum)
    sum = staticmethod(cupy.sum)
    dot = staticmethod(cupy.dot)

    @staticmethod
    def norm(x: cupy.ndarray) -> float:
        return float(cupy.linalg.norm(x))

    @staticmethod
    def to_float(x: Any) -> float:
        return float(x)

    @staticmethod
    def to_list(x: cupy.ndarray) -> list:
        return x.tolist()

    @staticmethod
    def add_to_diagonal(a: cupy.ndarray, value: Any) -> cupy.ndarray:
        out = a.copy()
        index = cupy.arange(out.shape[0])
        out[index, index] += value
        return out

    @staticmethod
    def concatenate_columns(a: cupy.ndarray, b: cupy.ndarray) -> cupy.ndarray:
        return cupy.concatenate([a, b], axis=1)

    @staticmethod
    def set_leading(x: cupy.ndarray, count: int, value: float) -> cupy.ndarray:
        out = x.copy()
        out[:count] = value
        return out

    @staticmethod
    def all_finite(x: cupy.ndarray) -> bool:
        return bool(cupy.isfinite(x).all())

    # ------------------------------------------------------------------ the solve ladder's pieces
    @staticmethod
    def _lu(a: cupy.ndarray) -> Optional[tuple[cupy.ndarray, cupy.ndarray]]:
        """LU with partial pivoting (cuSOLVER getrf); None on an exactly zero pivot."""
        if not bool(cupy.isfinite(a).all()):
            return None  # NumPy's inverse of a non-finite matrix is not finite either: rcond 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the singular-matrix warning: decided below
            lu, pivots = cupyx_linalg.lu_factor(a, check_finite=False)
        if bool((cupy.diagonal(lu) == 0).any()):
            return None
        return lu, pivots

    def reciprocal_condition(self, a: cupy.ndarray) -> float:
        """The exact 1-norm reciprocal condition number; 0.0 on an exactly zero pivot."""
        factors = self._lu(a)
        if factors is None:
            return 0.0
        inverse = cupyx_linalg.lu_solve(factors, cupy.eye(a.shape[0], dtype=a.dtype), check_finite=False)
        return reciprocal_from_norms(float(cupy.linalg.norm(a, 1)), float(cupy.linalg.norm(inverse, 1)))

    def solve(self, a: cupy.ndarray, b: cupy.ndarray) -> Optional[cupy.ndarray]:
        """LU with partial pivoting; None on an exactly zero pivot."""
        factors = self._lu(a)
        if factors is None:
            return None
        return cupyx_linalg.lu_solve(factors, b, check_finite=False)

    def least_squares(self, a: cupy.ndarray, b: cupy.ndarray) -> cupy.ndarray:
        """The minimum-norm least-squares solution from the SVD, singular
        values at or below eps * d of the largest treated as zero (the rule
        of NumpyOps' gelsd, eps of the model dtype)."""
        u, s, vh = cupy.linalg.svd(a, full_matrices=False)
        keep = s > singular_rcond_threshold(a.shape[0], self.dtype_name) * s[0]
        inverse_s = cupy.where(keep, 1.0 / cupy.where(keep, s, 1.0), 0.0).astype(a.dtype)
        return vh.T @ ((u.T @ b) * inverse_s)
