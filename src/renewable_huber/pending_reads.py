"""Reading a batch a backend left pending (amendment 0004: native_cuda's
deferred results), a mixin of the estimator.

A ``partial_fit`` whose backend deferred its result installs a stream with
a pending batch (``Stream.pending``): the attributes that need no outcome
(``n_samples_seen_``, the names, the backend) are there at once, those that
do (``stream.OUTCOME_ATTRIBUTES``: ``coef_``, ``intercept_``, ``n_iter_``,
``cuda_features_``) are not. Every reader of the model reads the batch
first: the estimator's readers through ``_settled_stream`` (its
``_fitted_stream``, ``advance``, ``diagnostics_``, pickling), the missing
attributes through ``__getattr__``, which Python calls only for a name the
model does not hold. The read installs the stream after the batch, with the
batch's ConvergenceWarning, or, when the batch failed, the stream before it,
and raises the batch's error naming it.
"""

from __future__ import annotations

from typing import Any, Optional

from .model_lock import serialized
from .stream import OUTCOME_ATTRIBUTES, BatchFailedLater, Stream


class PendingReads:
    """The estimator's reads of a pending batch (it needs ``_install``)."""

    @serialized
    def _settled_stream(self, install: bool = True) -> Optional[Stream]:
        """The stream with its pending batch read and installed (a stream
        with none is returned as it is). A batch that failed raises its error
        here, the model then as it was before that batch. ``install=False``:
        the read stream is returned only, for a caller that installs the next
        one at once (``advance``: one install a call instead of two; it
        installs the read stream itself when its step fails)."""
        stream = self.__dict__.get("_stream")
        if stream is None or stream.pending is None:
            return stream
        config = stream.pending.config
        try:
            settled = stream.settled()
        except BatchFailedLater as failure:
            self._install(failure.before)
            raise failure.for_the_caller() from failure.error
        if install:
            self._install(settled)
        settled.warn_if_not_converged(type(self).__name__, config, stacklevel=4)
        return settled

    def _keep_read(self, stream: Optional[Stream]) -> None:
        """After a failed ``advance`` whose current ``stream`` was read
        without being installed (``install=False``): the model holds it, so
        the batch read stays read."""
        if self.__dict__.get("_stream") is not stream:
            self._install(stream)

    def __getattr__(self, name: str) -> Any:
        """A fitted attribute that needs the last batch's outcome, read when
        asked for (OUTCOME_ATTRIBUTES); any other name as Python answers it."""
        if name in OUTCOME_ATTRIBUTES:
            stream = self.__dict__.get("_stream")
            if stream is not None and stream.pending is not None:
                self._settled_stream()
                if name in self.__dict__:
                    return self.__dict__[name]
        # Python's own answer: a property whose getter raised AttributeError
        # (NotFittedError, say) raises it again; a name nobody has, the usual error.
        return object.__getattribute__(self, name)

