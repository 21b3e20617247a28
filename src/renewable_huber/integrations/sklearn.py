"""scikit-learn adapter: ``SklearnRenewableHuberRegressor`` passes ``check_estimator``."""

from __future__ import annotations

from typing import Any

try:
    from sklearn.base import BaseEstimator, RegressorMixin
    from sklearn.utils.validation import check_is_fitted, column_or_1d
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "renewable_huber.integrations.sklearn requires scikit-learn. "
        "Install it with: pip install 'renewable-huber[sklearn]'"
    ) from exc

from ..estimator import RenewableHuberRegressor


class SklearnRenewableHuberRegressor(RegressorMixin, RenewableHuberRegressor, BaseEstimator):
    """RenewableHuberRegressor with scikit-learn's regressor tags, repr and ``score``.

    Examples
    --------
    >>> import numpy as np
    >>> from renewable_huber.integrations.sklearn import SklearnRenewableHuberRegressor
    >>> X = np.arange(20.0).reshape(10, 2); y = X @ [1.0, 2.0] + 3.0
    >>> SklearnRenewableHuberRegressor(backend="numpy").fit(X, y).score(X, y) > 0.999
    True
    """

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return RenewableHuberRegressor.get_params(self, deep=deep)

    def set_params(self, **params: Any) -> "SklearnRenewableHuberRegressor":
        RenewableHuberRegressor.set_params(self, **params)
        return self

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "SklearnRenewableHuberRegressor":
        return super().fit(X, self._as_target(y), sample_weight)

    def partial_fit(self, X: Any, y: Any, sample_weight: Any = None) -> "SklearnRenewableHuberRegressor":
        return super().partial_fit(X, self._as_target(y), sample_weight)

    @staticmethod
    def _as_target(y: Any) -> Any:
        if y is None:
            raise ValueError("requires y to be passed, but the target y is None")
        if hasattr(y, "to_numpy"):
            y = y.to_numpy()
        try:
            return column_or_1d(y, warn=True)
        except TypeError:
            return y  # the estimator's own validation gives the contract's message

    def predict(self, X: Any) -> Any:
        check_is_fitted(self)
        return super().predict(X)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        return RegressorMixin.score(self, X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):  # type: ignore[no-untyped-def]
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        return tags
