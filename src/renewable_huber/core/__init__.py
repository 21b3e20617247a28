"""The NumPy-reference renewable update (the oracle every engine must match)."""

from .array_ops import ArrayOps, NumpyOps
from .diagnostics import UpdateDiagnostics
from .update import renewable_update

__all__ = ["ArrayOps", "NumpyOps", "UpdateDiagnostics", "renewable_update"]
