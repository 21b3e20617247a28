"""partial_fit_batches (issue 28, "Streams, not calls"): consecutive slices
of one array, each absorbed as partial_fit absorbs a batch, in one call. On
every engine the model ends where the loop of partial_fit over the same
slices ends, bit for bit on the CPU engines (and the native_cuda stand-in),
to rounding on the GPU ones: state, counters, converged batches, feature
names, the last slice's diagnostics and each unconverged slice's warning.
The failure contract (all slices or none) is in test_failure_contract.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine_matrix import ENGINES, EXACT, engine_of
from renewable_huber import RenewableHuberRegressor, ValidationError
from renewable_huber.exceptions import ConvergenceWarning

pd = pytest.importorskip("pandas")


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch):
    with engine_of(request.param, monkeypatch) as (backend, device):
        yield backend, device, request.param in EXACT


def _data(n=1300, p=4, seed=28):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + 0.2 + rng.standard_t(2, size=n)
    y[rng.choice(n, size=n // 40, replace=False)] += 60.0
    w = rng.uniform(0.1, 2.0, size=n)
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(p)]), y, w


def _loop(model, X, y, w, size):
    for start in range(0, len(y), size):
        model.partial_fit(X.iloc[start:start + size], y[start:start + size],
                          None if w is None else w[start:start + size])
    return model


def _assert_same(a, b, exact):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        if isinstance(sa[key], np.ndarray):
            if exact:
                assert np.array_equal(sa[key], sb[key]), key
            else:
                np.testing.assert_allclose(sa[key], sb[key], rtol=1e-9, atol=1e-11, err_msg=key)
        else:
            assert sa[key] == sb[key], key
    assert a.n_iter_ == b.n_iter_
    assert a.diagnostics_ == b.diagnostics_ or not exact


@pytest.mark.parametrize("penalty", ["none", "l1"])
@pytest.mark.parametrize("size, weighted", [(400, True), (325, False), (1300, True), (5000, False)],
                         ids=["short-last-slice", "even-slices", "one-slice", "larger-than-X"])
@pytest.mark.parametrize("fitted", [False, True], ids=["new-stream", "going-on"])
def test_batches_equal_the_loop_of_partial_fit(engine, penalty, size, weighted, fitted):
    backend, device, exact = engine
    X, y, w = _data()
    w = w if weighted else None
    looped, batched = (RenewableHuberRegressor(backend=backend, device=device, penalty=penalty) for _ in range(2))
    if fitted:
        X0, y0, _ = _data(300, seed=1)
        for model in (looped, batched):
            model.partial_fit(X0, y0)
    _loop(looped, X, y, w, size)
    assert batched.partial_fit_batches(X, y, w, batch_size=size) is batched
    _assert_same(looped, batched, exact)
    assert list(batched.feature_names_in_) == list(X.columns)
    assert batched.n_samples_seen_ == looped.n_samples_seen_ == len(y) + (300 if fitted else 0)


def test_each_unconverged_slice_warns_as_its_partial_fit_would(engine):
    backend, device, _ = engine
    X, y, _ = _data()
    messages = []
    # the loop's last batch read (with native_cuda's deferred results its warning comes with the read)
    for run in (lambda m: (_loop(m, X, y, None, 400), m.coef_), lambda m: m.partial_fit_batches(X, y, batch_size=400)):
        model = RenewableHuberRegressor(backend=backend, device=device, max_iter=1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run(model)
        messages.append([str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)])
    assert len(messages[0]) == 4  # every slice stops at max_iter=1
    assert messages[1] == messages[0]


@pytest.mark.parametrize("batch_size", [0, -3, 1.5, True, "400", None])
def test_a_batch_size_that_is_not_a_positive_integer_is_refused_by_name(batch_size):
    X, y, _ = _data()
    model = RenewableHuberRegressor(backend="numpy")
    with pytest.raises(ValidationError, match=f"batch_size must be a positive integer, got {batch_size!r}"):
        model.partial_fit_batches(X, y, batch_size=batch_size)
    assert not hasattr(model, "coef_")


def test_a_slice_that_weighs_nothing_is_named():
    X, y, w = _data()
    w[400:800] = 0.0
    with pytest.raises(ValidationError, match=r"sample_weight cannot be all zero \(rows 400:800, batch 2 of 4 of "
                                              r"batch_size 400\)"):
        RenewableHuberRegressor(backend="numpy").partial_fit_batches(X, y, w, batch_size=400)


def test_batch_size_is_keyword_only():
    X, y, w = _data()
    with pytest.raises(TypeError):
        RenewableHuberRegressor(backend="numpy").partial_fit_batches(X, y, w, 400)
