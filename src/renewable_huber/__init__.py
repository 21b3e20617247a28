"""renewable-huber: streaming robust (Huber) regression with a bounded memory.

>>> from renewable_huber import RenewableHuberRegressor
>>> RenewableHuberRegressor().get_params()["tau"]
1.345
"""

from ._version import __version__
from .estimator import RenewableHuberRegressor
from .exceptions import BackendUnavailableError, NotFittedError, RenewableHuberError, ValidationError

__all__ = [
    "RenewableHuberRegressor",
    "RenewableHuberError",
    "NotFittedError",
    "BackendUnavailableError",
    "ValidationError",
    "__version__",
]
