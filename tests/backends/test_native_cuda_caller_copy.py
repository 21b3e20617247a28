"""A caller's device batch on the pipeline routes (native/cuda/src/caller_batch_copy.cuh):
the engine copies it into its own rows beside the solve, the closings read
the copy, and the update returns once the solve and the copy are done, with
the closings still running. What the caller may then do with its arrays
(overwrite them, free them) must not reach the model: every batch gives the
bits of the same stream fed from the host. (The engine before the copy
passes too, by waiting for its whole stream; a closing that read the
caller's arrays after the return is a race this test catches when the
closing outlasts Python's return path, which its long batches make likely,
and a correct engine never fails it.) GPU only (marked `gpu`).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from renewable_huber import RenewableHuberRegressor

pytestmark = pytest.mark.gpu

if importlib.util.find_spec("cupy") is None:  # pragma: no cover - the GPU machine has CuPy
    pytest.skip("CuPy is not installed", allow_module_level=True)


def batches(dtype, count=6, rows=30000, p=32, seed=11):
    rng = np.random.default_rng(seed)
    beta = rng.normal(size=p)
    out = []
    for _ in range(count):
        X = rng.normal(size=(rows, p))
        y = X @ beta + rng.standard_t(2, size=rows)
        y[::41] += 30.0
        out.append((X.astype(dtype), y.astype(dtype)))
    return out


def model(monkeypatch, route, **options):
    monkeypatch.setenv("RH_CUDA_SOLVER", route)  # read when the first batch makes the engine
    return RenewableHuberRegressor(backend="native_cuda", device="cuda", **options)


def assert_same_bits(a, b):
    sa, sb = a.state_, b.state_
    np.testing.assert_array_equal(sa.coefficients, sb.coefficients)
    np.testing.assert_array_equal(sa.information, sb.information)
    np.testing.assert_array_equal(sa.meat, sb.meat)
    assert sa.batch_count == sb.batch_count and a.n_iter_ == b.n_iter_


# (route, penalty): the device loop ("auto", "none"), the host route's Newton and LAMM
ROUTES = [("auto", "none"), ("pipeline", "none"), ("auto", "l1")]


@pytest.mark.parametrize("route,penalty", ROUTES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_callers_arrays_overwritten_once_partial_fit_returns_do_not_reach_the_model(monkeypatch, dtype, route,
                                                                                     penalty):
    import cupy

    fed = model(monkeypatch, route, dtype=dtype, penalty=penalty, inference=True)
    reference = model(monkeypatch, route, dtype=dtype, penalty=penalty, inference=True)
    other = cupy.cuda.Stream(non_blocking=True)  # ordered after nothing the engine does
    # Long batches (400,000 x 32: 102 MB in float64, under the copy's 128 MiB), so that the closings a
    # wrong engine would leave reading the caller's arrays run longer than Python's return path.
    for X, y in batches(dtype, count=3, rows=400_000):
        X_device, y_device = cupy.asarray(X), cupy.asarray(y)
        cupy.cuda.get_current_stream().synchronize()
        fed.partial_fit(X_device, y_device)
        with other:  # what a caller may do once the call returned: the closings still running must not see it
            X_device.fill(cupy.nan)
            y_device.fill(cupy.nan)
        other.synchronize()  # the fills done before the arrays go back to CuPy's pool
        reference.partial_fit(X, y)
    assert_same_bits(fed, reference)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_pipeline_update_of_a_callers_batch_keeps_the_copys_rows(monkeypatch, weighted):
    """The copy's rows are the engine's host-batch rows: a caller's device
    batch places them as a host batch does (without the copy, the engine
    would hold no rows of X)."""
    import cupy

    (X, y), = batches("float64", count=1)
    w = np.linspace(0.5, 1.5, len(y)) if weighted else None
    fed = model(monkeypatch, "pipeline", dtype="float64")
    fed.partial_fit(cupy.asarray(X), cupy.asarray(y), None if w is None else cupy.asarray(w))
    from_host = model(monkeypatch, "pipeline", dtype="float64")
    from_host.partial_fit(X, y, w)
    assert fed.cuda_features_["workspace_bytes"] == from_host.cuda_features_["workspace_bytes"]
    assert_same_bits(fed, from_host)
