"""One lock per model: calls that read or replace a model's stream serialize.

The native engines release the GIL, so two threads calling ``partial_fit`` on
one model really run at once; without a lock both would read the same state,
both would commit, and the last commit would silently drop the other batch.
Every public method that reads or replaces the stream (``fit``,
``partial_fit``, ``predict``, ``score``, ``save``, ``state_dict``,
``load_state_dict``, ``set_params``, ``reset``, ``state_``, ``to_device``,
``advance``, through which ``renewable_huber.dask`` commits) takes the
model's lock for the whole call. Different models never share a lock, so
they still run in parallel.

The lock is created on first use, not in ``__init__`` (scikit-learn requires
``__init__`` to store parameters only), and is never pickled or copied: an
unpickled or deep-copied model gets a fresh one. It is reentrant, because
``fit`` resets and ``score`` predicts under the same lock.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

#: instance attribute holding the model's lock (dropped by ``__getstate__``)
LOCK_ATTRIBUTE = "_model_lock"

# Guards the lazy creation only: two threads that first touch one model at
# the same moment must end up with the same lock.
_CREATION = threading.Lock()

F = TypeVar("F", bound=Callable[..., Any])


class ModelLock:
    """The model's reentrant lock, created on first use (a mixin of the estimator)."""

    def _own_lock(self) -> "threading.RLock":
        lock = self.__dict__.get(LOCK_ATTRIBUTE)
        if lock is None:
            with _CREATION:
                lock = self.__dict__.get(LOCK_ATTRIBUTE)
                if lock is None:
                    lock = threading.RLock()
                    self.__dict__[LOCK_ATTRIBUTE] = lock
        return lock


def serialized(method: F) -> F:
    """Run ``method`` holding its model's lock."""

    @functools.wraps(method)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._own_lock():
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]
