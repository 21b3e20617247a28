"""A device batch's slices in one partial_fit_batches call (native/cuda/src/update_batches.cu):
the slices before the last are the engine's to read until the call returns,
so their updates do not wait for their closings; the call still returns
with nothing reading the caller's array, all slices or none, and the loop's
bits. On the pipeline routes (d = 33: the device loop for "none", LAMM for
"l1"), where the closings run after an update's wait. GPU only (marked `gpu`).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor
from renewable_huber.exceptions import ValidationError

pytestmark = pytest.mark.gpu

if importlib.util.find_spec("cupy") is None:  # pragma: no cover - the GPU machine has CuPy
    pytest.skip("CuPy is not installed", allow_module_level=True)


def rows(n=150_000, p=32, seed=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.standard_t(2, size=n)
    y[::53] -= 25.0
    return X, y


def assert_same_bits(a, b):
    sa, sb = a.state_, b.state_
    np.testing.assert_array_equal(sa.coefficients, sb.coefficients)
    np.testing.assert_array_equal(sa.information, sb.information)
    np.testing.assert_array_equal(sa.meat, sb.meat)
    assert (sa.batch_count, sa.n_samples_seen) == (sb.batch_count, sb.n_samples_seen)


@pytest.mark.parametrize("penalty", ["none", "l1"])
def test_device_slices_in_one_call_give_the_loops_bits_and_fail_whole(penalty):
    import cupy

    X, y = rows()
    dX, dy = cupy.asarray(X), cupy.asarray(y)
    size = 30_000
    looped = RenewableHuberRegressor(backend="native_cuda", penalty=penalty, inference=penalty == "none")
    batched = RenewableHuberRegressor(backend="native_cuda", penalty=penalty, inference=penalty == "none")
    for model in (looped, batched):
        model.fit(dX[:size], dy[:size])
    before = batched.state_
    # A NaN in the fourth of four slices: three committed on the engine, their closings possibly still
    # running when the fourth fails; the call gives back the model as it was and returns with the
    # device past them.
    bad = dX[size:].copy()
    bad[3 * size + 11, 5] = cupy.nan
    with pytest.raises(ValidationError, match="X must not contain NaN"):
        batched.partial_fit_batches(bad, dy[size:], batch_size=size)
    np.testing.assert_array_equal(batched.state_.information, before.information)
    assert batched.state_.batch_count == 1
    for start in range(size, len(y), size):
        looped.partial_fit(dX[start:start + size], dy[start:start + size])
    batched.partial_fit_batches(dX[size:], dy[size:], batch_size=size)
    assert_same_bits(looped, batched)
