"""Exception hierarchy of renewable-huber (see spec/API.md, "Package surface")."""

from __future__ import annotations


class RenewableHuberError(Exception):
    """Base class of every error raised by renewable-huber."""


class NotFittedError(RenewableHuberError, ValueError, AttributeError):
    """The estimator was used before any batch was processed or a checkpoint loaded.

    Also a ValueError and an AttributeError, like scikit-learn's NotFittedError,
    so ``hasattr(model, "diagnostics_")`` is simply False before fitting.
    """


class BackendUnavailableError(RenewableHuberError):
    """A backend is missing, incompatible with this package, or cannot run on the device."""


class ValidationError(RenewableHuberError, ValueError):
    """Bad input data, configuration, state or checkpoint."""


class EngineError(RenewableHuberError, RuntimeError):
    """An engine (the NumPy reference, a framework backend, the native CPU or
    CUDA engine) could not complete an update. The model is unchanged."""


#: The name EngineError had while only the native engines raised it; kept so
#: ``except NativeEngineError`` goes on catching every engine failure.
NativeEngineError = EngineError


class NumericalOverflowError(EngineError, ArithmeticError):
    """The batch's values, finite but huge, overflowed the model's precision
    in the Newton system. Every engine raises it with the same message (what
    overflowed, and to scale the data); the model is unchanged."""


#: How that message begins, on every engine (native/core/invariants.hpp
#: system_overflow_message says the same).
SYSTEM_OVERFLOW_PREFIX = "the Newton system overflowed "


def system_overflow_message(dtype_name: str) -> str:
    """The message of a NumericalOverflowError for a model of ``dtype_name``."""
    return (f"{SYSTEM_OVERFLOW_PREFIX}{dtype_name}: the batch's values are too large for this precision; "
            "scale X and y (for example, standardize each column) and fit again")


class InferenceWarning(UserWarning):
    """Standard errors rest on a singular information matrix: some coefficients are not identified (NaN)."""


class BackendContractError(RenewableHuberError, TypeError):
    """A transport (DLPack) refused an input: dtype, contiguity, device or protocol."""


def _convergence_warning_base() -> type[Warning]:
    """Derive from scikit-learn's ConvergenceWarning when it is installed, so
    warning filters written for scikit-learn also catch ours."""
    try:
        from sklearn.exceptions import ConvergenceWarning as sklearn_warning
    except Exception:  # scikit-learn is optional
        return UserWarning
    return sklearn_warning


class ConvergenceWarning(_convergence_warning_base()):  # type: ignore[misc]
    """The solver hit ``max_iter`` or its line search stalled on a batch."""


__all__ = [
    "RenewableHuberError",
    "NotFittedError",
    "BackendUnavailableError",
    "ValidationError",
    "BackendContractError",
    "EngineError",
    "NativeEngineError",
    "NumericalOverflowError",
    "ConvergenceWarning",
    "InferenceWarning",
]
