"""``ArrayOps`` over eager TensorFlow tensors of one dtype on one device.

The ops hand the update ``TensorflowArray`` wrappers (tensorflow_array.py)
and accept wrapped or plain tensors; ``published`` gives callers the plain
``tf.Tensor``. TensorFlow runs eagerly only here: inside ``tf.function``
(``tf.executing_eagerly()`` is False) ``context()`` refuses with a
``BackendContractError``, since the update's decisions read values on the
host (line searches, convergence tests) and cannot be traced into a graph.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import numpy as np
import tensorflow as tf

from ...exceptions import BackendContractError
from ..solver_rules import singular_rcond_threshold
from .condition import reciprocal_from_norms
from .tensorflow_array import TensorflowArray, matmul, unwrap

_DTYPES = {"float64": tf.float64, "float32": tf.float32}

GRAPH_MODE_MESSAGE = (
    "backend='tensorflow' runs eagerly only: it was called inside tf.function (tf.executing_eagerly() is False); "
    "call partial_fit/predict outside the traced function"
)


def require_eager() -> None:
    if not tf.executing_eagerly():
        error = BackendContractError(GRAPH_MODE_MESSAGE)
        # AutoGraph re-raises an error of a type it cannot rebuild as a
        # StagingError; this attribute makes it pass the error on as it is.
        error.ag_pass_through = True
        raise error


def device_of(tensor: tf.Tensor) -> tuple[str, int]:
    """("CPU" or "GPU", index) of an eager tensor."""
    spec = tf.DeviceSpec.from_string(tensor.device)
    return (spec.device_type or "CPU").upper(), int(spec.device_index or 0)


def _wrap(tensor: tf.Tensor) -> TensorflowArray:
    return TensorflowArray(tensor)


class TensorflowOps:
    """``ArrayOps`` (core/array_ops.py) over ``tf.Tensor`` on ``device`` ("CPU", 0) or ("GPU", N)."""

    def __init__(self, dtype_name: str, device: tuple[str, int]) -> None:
        self.dtype_name = dtype_name
        self.dtype = _DTYPES[dtype_name]
        self.numpy_dtype = np.dtype(dtype_name)
        self.device = device
        self.device_name = f"/{device[0]}:{device[1]}"

    # ------------------------------------------------------------------ transfers
    @staticmethod
    def is_native(value: Any) -> bool:
        return isinstance(unwrap(value), (tf.Tensor, tf.Variable))

    def _tensor(self, value: Any, name: str) -> tf.Tensor:
        value = unwrap(value)
        if isinstance(value, tf.Variable):
            value = tf.convert_to_tensor(value)
        if isinstance(value, tf.Tensor):
            where = device_of(value)
            if where != self.device:
                if where[0] != "CPU":
                    raise BackendContractError(
                        f"{name} is a TensorFlow tensor on /{where[0]}:{where[1]}, but backend='tensorflow' runs on "
                        f"{self.device_name}; copy it there first (with tf.device('{self.device_name}'): tf.identity(...))"
                    )
                with tf.device(self.device_name):
                    value = tf.identity(value)  # host data: one upload
            return value if value.dtype == self.dtype else tf.cast(value, self.dtype)
        with tf.device(self.device_name):
            # identity runs on the scope's device: the converted host data lands there
            return tf.identity(tf.convert_to_tensor(np.asarray(value, dtype=self.numpy_dtype)))

    def asarray(self, value: Any, name: str = "array") -> TensorflowArray:
        return _wrap(self._tensor(value, name))

    def copy(self, value: Any) -> TensorflowArray:
        with tf.device(self.device_name):
            return _wrap(tf.identity(self._tensor(value, "array")))

    @staticmethod
    def to_numpy(x: Any) -> np.ndarray:
        return np.array(unwrap(x).numpy(), copy=True)

    @staticmethod
    def published(x: Any) -> tf.Tensor:
        return unwrap(x)

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        require_eager()
        with tf.device(self.device_name):
            yield

    # ------------------------------------------------------------------ input checks (framework_inputs.py)
    @staticmethod
    def kind(x: Any) -> str:
        dtype = unwrap(x).dtype
        if dtype.is_complex:
            return "c"
        if dtype.is_floating:
            return "f"
        return "b" if dtype.is_bool else "i"

    @staticmethod
    def flatten(x: Any) -> TensorflowArray:
        return _wrap(tf.reshape(unwrap(x), [-1]))

    @staticmethod
    def any_negative(x: Any) -> bool:
        return bool(tf.reduce_any(unwrap(x) < 0))

    @staticmethod
    def sum_float64(x: Any) -> float:
        return float(tf.reduce_sum(tf.cast(unwrap(x), tf.float64)))

    # ------------------------------------------------------------------ ArrayOps
    def zeros(self, shape: tuple[int, ...]) -> TensorflowArray:
        return _wrap(tf.zeros(shape, dtype=self.dtype))

    def scalar(self, value: float) -> TensorflowArray:
        return _wrap(tf.constant(value, dtype=self.dtype))

    @staticmethod
    def clip(x: Any, low: Any, high: Any) -> TensorflowArray:
        return _wrap(tf.minimum(tf.maximum(unwrap(x), unwrap(low)), unwrap(high)))

    @staticmethod
    def where(condition: Any, a: Any, b: Any) -> TensorflowArray:
        return _wrap(tf.where(unwrap(condition), unwrap(a), unwrap(b)))

    @staticmethod
    def abs(x: Any) -> TensorflowArray:
        return _wrap(tf.abs(unwrap(x)))

    @staticmethod
    def sign(x: Any) -> TensorflowArray:
        return _wrap(tf.sign(unwrap(x)))

    @staticmethod
    def maximum(x: Any, y: Any) -> TensorflowArray:
        return _wrap(tf.maximum(unwrap(x), unwrap(y)))

    @staticmethod
    def sum(x: Any) -> TensorflowArray:
        return _wrap(tf.reduce_sum(unwrap(x)))

    @staticmethod
    def dot(a: Any, b: Any) -> TensorflowArray:
        return _wrap(matmul(unwrap(a), unwrap(b)))

    @staticmethod
    def norm(x: Any) -> float:
        return float(tf.norm(unwrap(x)))

    @staticmethod
    def to_float(x: Any) -> float:
        return float(unwrap(x))

    @staticmethod
    def to_list(x: Any) -> list:
        return unwrap(x).numpy().tolist()

    @staticmethod
    def add_to_diagonal(a: Any, value: Any) -> TensorflowArray:
        a = unwrap(a)
        return _wrap(tf.linalg.set_diag(a, tf.linalg.diag_part(a) + unwrap(value)))

    @staticmethod
    def concatenate_columns(a: Any, b: Any) -> TensorflowArray:
        return _wrap(tf.concat([unwrap(a), unwrap(b)], axis=1))

    @staticmethod
    def set_leading(x: Any, count: int, value: float) -> TensorflowArray:
        x = unwrap(x)
        return _wrap(tf.concat([tf.fill([count], tf.constant(value, dtype=x.dtype)), x[count:]], axis=0))

    @staticmethod
    def all_finite(x: Any) -> bool:
        return bool(tf.reduce_all(tf.math.is_finite(unwrap(x))))

    # ------------------------------------------------------------------ the solve ladder's pieces
    @staticmethod
    def _lu(a: tf.Tensor) -> Optional[tuple[tf.Tensor, tf.Tensor]]:
        """LU with partial pivoting; None on an exactly zero pivot (or a
        non-finite matrix, whose inverse NumPy finds non-finite too)."""
        if not bool(tf.reduce_all(tf.math.is_finite(a))):
            return None
        try:
            lu, permutation = tf.linalg.lu(a)
        except tf.errors.InvalidArgumentError:  # the CPU kernel refuses an exactly zero pivot
            return None
        if bool(tf.reduce_any(tf.equal(tf.linalg.diag_part(lu), 0))):
            return None
        return lu, permutation

    def reciprocal_condition(self, a: Any) -> float:
        """The exact 1-norm reciprocal condition number; 0.0 on an exactly zero pivot."""
        a = unwrap(a)
        factors = self._lu(a)
        if factors is None:
            return 0.0
        inverse = tf.linalg.lu_solve(*factors, tf.eye(a.shape[0], dtype=a.dtype))
        return reciprocal_from_norms(_norm_1(a), _norm_1(inverse))

    def solve(self, a: Any, b: Any) -> Optional[TensorflowArray]:
        """LU with partial pivoting; None on an exactly zero pivot."""
        a, b = unwrap(a), unwrap(b)
        factors = self._lu(a)
        if factors is None:
            return None
        return _wrap(tf.linalg.lu_solve(*factors, b[:, None])[:, 0])

    def least_squares(self, a: Any, b: Any) -> TensorflowArray:
        """The minimum-norm least-squares solution from the SVD, singular
        values at or below eps * d of the largest treated as zero (the rule
        of NumpyOps' gelsd, eps of the model dtype)."""
        a, b = unwrap(a), unwrap(b)
        s, u, v = tf.linalg.svd(a, full_matrices=False)
        keep = s > singular_rcond_threshold(int(a.shape[0]), self.dtype_name) * s[0]
        inverse_s = tf.where(keep, 1.0 / tf.where(keep, s, tf.ones_like(s)), tf.zeros_like(s))
        return _wrap(tf.linalg.matvec(v, tf.linalg.matvec(u, b, transpose_a=True) * inverse_s))


def _norm_1(a: tf.Tensor) -> float:
    """The matrix 1-norm: the largest absolute column sum."""
    return float(tf.reduce_max(tf.reduce_sum(tf.abs(a), axis=0)))
