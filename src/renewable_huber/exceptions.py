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


class NativeEngineError(RenewableHuberError, RuntimeError):
    """An engine (native CPU or CUDA, or the NumPy reference) could not complete
    an update (e.g. an unsolvable Newton system: finite inputs so large that
    it overflows). The model is unchanged."""


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
    "ConvergenceWarning",
]
