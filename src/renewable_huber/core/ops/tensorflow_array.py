"""A ``tf.Tensor`` with the few NumPy-style operators the reference update
writes inline (``@`` on 1-D and 2-D operands, ``.T``, ``.all()``, elementwise
``==``), so the update runs on TensorFlow without a second copy of the math.

Only the ops and the backend see this wrapper: what a caller receives is the
plain ``tf.Tensor`` (``TensorflowArray.tensor``). Wrapping copies nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf


def unwrap(value: Any) -> Any:
    return value.tensor if isinstance(value, TensorflowArray) else value


def _operand(value: Any, dtype: tf.DType) -> tf.Tensor:
    """Another operand: an array as it is, a Python number in ``dtype`` (as
    NumPy casts a Python scalar to the array's dtype)."""
    value = unwrap(value)
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return value
    return tf.constant(value, dtype=dtype)


def matmul(a: tf.Tensor, b: tf.Tensor) -> tf.Tensor:
    """``a @ b`` with NumPy's meaning for 1-D and 2-D operands."""
    if a.shape.rank == 2 and b.shape.rank == 2:
        return tf.linalg.matmul(a, b)
    if a.shape.rank == 2:
        return tf.linalg.matvec(a, b)
    if b.shape.rank == 2:
        return tf.linalg.matvec(b, a, transpose_a=True)
    return tf.tensordot(a, b, 1)


def _binary(function: Any, reflected: bool = False) -> Any:
    def method(self: "TensorflowArray", other: Any) -> "TensorflowArray":
        other = _operand(other, self.tensor.dtype)
        return TensorflowArray(function(other, self.tensor) if reflected else function(self.tensor, other))

    return method


class TensorflowArray:
    """An eager ``tf.Tensor`` behind NumPy's operators (see the module docstring)."""

    __slots__ = ("tensor",)
    __array_priority__ = 100  # a NumPy operand on the left defers to us

    def __init__(self, tensor: tf.Tensor) -> None:
        self.tensor = tensor

    # shape and conversions
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.tensor.shape)

    @property
    def ndim(self) -> int:
        return self.tensor.shape.rank

    @property
    def dtype(self) -> tf.DType:
        return self.tensor.dtype

    @property
    def T(self) -> "TensorflowArray":
        return TensorflowArray(tf.transpose(self.tensor))

    def all(self) -> "TensorflowArray":
        return TensorflowArray(tf.reduce_all(self.tensor))

    def tolist(self) -> list:
        return self.tensor.numpy().tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.tensor.numpy(), dtype=dtype)

    def __float__(self) -> float:
        return float(self.tensor)

    def __bool__(self) -> bool:
        return bool(self.tensor)

    def __len__(self) -> int:
        return int(self.tensor.shape[0])

    def __getitem__(self, key: Any) -> "TensorflowArray":
        return TensorflowArray(self.tensor[key])

    def __repr__(self) -> str:
        return f"TensorflowArray({self.tensor!r})"

    # arithmetic
    __add__ = _binary(tf.add)
    __radd__ = _binary(tf.add, reflected=True)
    __sub__ = _binary(tf.subtract)
    __rsub__ = _binary(tf.subtract, reflected=True)
    __mul__ = _binary(tf.multiply)
    __rmul__ = _binary(tf.multiply, reflected=True)
    __truediv__ = _binary(tf.divide)
    __rtruediv__ = _binary(tf.divide, reflected=True)
    __matmul__ = _binary(matmul)
    __rmatmul__ = _binary(matmul, reflected=True)

    def __neg__(self) -> "TensorflowArray":
        return TensorflowArray(tf.negative(self.tensor))

    # elementwise comparisons (arrays are not hashable, as NumPy's are not)
    __lt__ = _binary(tf.less)
    __le__ = _binary(tf.less_equal)
    __gt__ = _binary(tf.greater)
    __ge__ = _binary(tf.greater_equal)
    __eq__ = _binary(tf.equal)  # type: ignore[assignment]
    __ne__ = _binary(tf.not_equal)  # type: ignore[assignment]
    __hash__ = None  # type: ignore[assignment]
