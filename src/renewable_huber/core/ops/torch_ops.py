"""``ArrayOps`` over PyTorch tensors of one dtype on one device (CPU or CUDA).

Every tensor these ops make or take is detached: inputs are ``.detach()``-ed
(no copy) and the backend runs inside ``torch.no_grad()``, so no autograd
graph is ever built and the tensors returned carry none.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Optional

import numpy as np
import torch

from ...exceptions import BackendContractError
from ..solver_rules import singular_rcond_threshold
from .condition import reciprocal_from_norms

_DTYPES = {"float64": torch.float64, "float32": torch.float32}


class TorchOps:
    """``ArrayOps`` (core/array_ops.py) over ``torch.Tensor`` on ``device``."""

    def __init__(self, dtype_name: str, device: torch.device) -> None:
        self.dtype_name = dtype_name
        self.dtype = _DTYPES[dtype_name]
        self.numpy_dtype = np.dtype(dtype_name)
        self.device = torch.device(device)

    # ------------------------------------------------------------------ transfers
    @staticmethod
    def is_native(value: Any) -> bool:
        return isinstance(value, torch.Tensor)

    def asarray(self, value: Any, name: str = "array") -> torch.Tensor:
        if isinstance(value, torch.Tensor):
            value = value.detach()
            if value.device != self.device:
                if value.device.type != "cpu":
                    raise BackendContractError(
                        f"{name} is a torch tensor on {value.device}, but backend='torch' runs on {self.device}; "
                        f"move it with .to('{self.device}') first"
                    )
                return value.to(device=self.device, dtype=self.dtype)  # host data: one upload
            return value if value.dtype == self.dtype else value.to(self.dtype)
        array = np.asarray(value, dtype=self.numpy_dtype)
        if not (array.flags.c_contiguous and array.flags.writeable):
            array = np.array(array, order="C")
        return torch.from_numpy(array).to(self.device)  # no copy on the CPU, one upload to a GPU

    def copy(self, value: Any) -> torch.Tensor:
        return self.asarray(value).clone()

    @staticmethod
    def to_numpy(x: torch.Tensor) -> np.ndarray:
        return np.array(x.detach().cpu().numpy(), copy=True)

    @staticmethod
    def published(x: torch.Tensor) -> torch.Tensor:
        return x

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        with torch.no_grad():
            if self.device.type == "cuda":
                with torch.cuda.device(self.device):
                    yield
            else:
                yield

    # ------------------------------------------------------------------ input checks (framework_inputs.py)
    @staticmethod
    def kind(x: torch.Tensor) -> str:
        """NumPy's dtype kind: "f", "c", "b" or "i"."""
        if x.is_complex():
            return "c"
        if x.is_floating_point():
            return "f"
        return "b" if x.dtype == torch.bool else "i"

    @staticmethod
    def flatten(x: torch.Tensor) -> torch.Tensor:
        return x.reshape(-1)

    @staticmethod
    def any_negative(x: torch.Tensor) -> bool:
        return bool((x < 0).any())

    @staticmethod
    def sum_float64(x: torch.Tensor) -> float:
        return float(x.sum(dtype=torch.float64))

    # ------------------------------------------------------------------ ArrayOps
    def zeros(self, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.zeros(shape, dtype=self.dtype, device=self.device)

    def scalar(self, value: float) -> torch.Tensor:
        return torch.tensor(value, dtype=self.dtype, device=self.device)

    @staticmethod
    def clip(x: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
        return torch.minimum(torch.maximum(x, low), high)

    where = staticmethod(torch.where)
    abs = staticmethod(torch.abs)
    sign = staticmethod(torch.sign)
    maximum = staticmethod(torch.maximum)
    sum = staticmethod(torch.sum)
    dot = staticmethod(torch.matmul)  # np.dot's meaning for the 1-D and 2-D operands the update uses

    @staticmethod
    def norm(x: torch.Tensor) -> float:
        return float(torch.linalg.vector_norm(x))

    @staticmethod
    def to_float(x: Any) -> float:
        return float(x)

    @staticmethod
    def to_list(x: torch.Tensor) -> list:
        return x.tolist()

    @staticmethod
    def add_to_diagonal(a: torch.Tensor, value: Any) -> torch.Tensor:
        out = a.clone()
        out.diagonal().add_(value)
        return out

    @staticmethod
    def concatenate_columns(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cat([a, b], dim=1)

    @staticmethod
    def set_leading(x: torch.Tensor, count: int, value: float) -> torch.Tensor:
        out = x.clone()
        out[:count] = value
        return out

    @staticmethod
    def all_finite(x: torch.Tensor) -> bool:
        return bool(torch.isfinite(x).all())

    # ------------------------------------------------------------------ the solve ladder's pieces
    def reciprocal_condition(self, a: torch.Tensor) -> float:
        """The exact 1-norm reciprocal condition number, from the inverse that
        LU with partial pivoting gives; 0.0 on an exactly zero pivot."""
        lu, pivots, info = torch.linalg.lu_factor_ex(a)
        if int(info) != 0:
            return 0.0
        identity = torch.eye(a.shape[0], dtype=a.dtype, device=a.device)
        inverse = torch.linalg.lu_solve(lu, pivots, identity)
        return reciprocal_from_norms(
            float(torch.linalg.matrix_norm(a, ord=1)), float(torch.linalg.matrix_norm(inverse, ord=1))
        )

    @staticmethod
    def solve(a: torch.Tensor, b: torch.Tensor) -> Optional[torch.Tensor]:
        """LU with partial pivoting (getrf/getrs); None on an exactly zero pivot."""
        x, info = torch.linalg.solve_ex(a, b)
        return None if int(info) != 0 else x

    def least_squares(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """The minimum-norm least-squares solution from the SVD, singular
        values at or below eps * d of the largest treated as zero (the rule
        of NumpyOps' gelsd, eps of the model dtype)."""
        u, s, vh = torch.linalg.svd(a, full_matrices=False)
        keep = s > singular_rcond_threshold(a.shape[0], self.dtype_name) * s[0]
        inverse_s = torch.where(keep, 1.0 / torch.where(keep, s, torch.ones_like(s)), torch.zeros_like(s))
        return vh.T @ ((u.T @ b) * inverse_s)
