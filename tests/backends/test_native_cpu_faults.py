"""native_cpu when an allocation fails (issue 18, item 8).

The engine's workspaces grow through one counter (cpu/buffer_growth.hpp),
whose test hook makes the n-th growth from now throw std::bad_alloc as an
exhausted allocator would. For every n that falls inside an update, the call
must raise a MemoryError that says what happened, leave every bit of the
model as it was (state, public attributes, the stream object itself), and
leave the engine usable: the same call afterwards gives the bits of a model
that never failed.
"""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest

if importlib.util.find_spec("_renewable_huber_native_cpu") is None:  # skip only when genuinely absent
    pytest.skip("renewable-huber-native-cpu is not installed", allow_module_level=True)

from renewable_huber import RenewableHuberRegressor  # noqa: E402

MESSAGE = r"native_cpu engine ran out of memory .*; the model is unchanged"


def _batches(dtype, big_rows, p=6):
    rng = np.random.default_rng(7)
    coef = rng.normal(size=p)
    out = []
    for rows in (200, big_rows, 300):  # the second batch makes the workspaces grow
        X = rng.normal(size=(rows, p))
        y = X @ coef + rng.standard_t(2, size=rows)
        out.append((X.astype(dtype), y.astype(dtype), rng.uniform(0.5, 2.0, size=rows).astype(dtype)))
    return out


def _model(dtype, penalty):
    return RenewableHuberRegressor(backend="native_cpu", dtype=dtype, penalty=penalty, n_jobs=2)


def _bits(model):
    """Every bit a caller can see, and the stream object's identity."""
    seen = {}
    for name, value in sorted(vars(model).items()):
        if name.endswith("_") and not name.startswith("_"):
            seen[name] = value.tobytes() if isinstance(value, np.ndarray) else repr(value)
    state = model.state_dict()
    for name, value in state.items():
        seen["state:" + name] = value.tobytes() if isinstance(value, np.ndarray) else repr(value)
    seen["stream"] = id(model.__dict__["_stream"])
    return seen


def _engine(model):
    return model._current_backend()._engine


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("penalty", ["none", "l1"])
# kernel="auto": 3000 x 7**2 rows * d * d is under FAST_KERNEL_THRESHOLD (2**18), 6000 x 7**2 above
@pytest.mark.parametrize("big_rows, kernel", [(3000, "reference_order"), (6000, "fast")])
@pytest.mark.parametrize("call", ["partial_fit", "fit"])
def test_every_failed_workspace_allocation_leaves_the_model_as_it_was(dtype, penalty, big_rows, kernel, call):
    first, big, last = _batches(dtype, big_rows)
    reference = _model(dtype, penalty).partial_fit(*first[:2], sample_weight=first[2])
    getattr(reference, call)(*big[:2], sample_weight=big[2])
    assert reference._current_backend().last_kernel_path == kernel
    reference.partial_fit(*last[:2], sample_weight=last[2])

    failures = 0
    for n in itertools.count(1):
        model = _model(dtype, penalty).partial_fit(*first[:2], sample_weight=first[2])
        before = _bits(model)
        _engine(model)._fail_nth_allocation(n)
        try:
            getattr(model, call)(*big[:2], sample_weight=big[2])
        except MemoryError as exc:
            assert _bits(model) == before, f"allocation {n}: the failed {call} changed the model"
            assert str(exc) and "bad_alloc" not in str(exc)
            with pytest.raises(MemoryError, match=MESSAGE):
                raise exc
            failures += 1
            getattr(model, call)(*big[:2], sample_weight=big[2])  # the hook fired once: this one allocates
        else:
            _engine(model)._fail_nth_allocation(0)
            break
        model.partial_fit(*last[:2], sample_weight=last[2])
        np.testing.assert_array_equal(model.coef_, reference.coef_, err_msg=f"allocation {n}")
        np.testing.assert_array_equal(model.state_.information, reference.state_.information, err_msg=f"allocation {n}")
        assert model.n_samples_seen_ == reference.n_samples_seen_
    assert failures >= 3, "the batch grew fewer workspaces than the test is about"

