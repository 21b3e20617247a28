"""The engines a cross-engine contract runs on, once (tests/test_failure_contract.py,
tests/test_inference.py): the CPU backends here and in CI, native_cuda in CI
over the host stand-in of its engine (tests/host_cuda_engine.py), and the GPU
engines as ``gpu`` tests.

    @pytest.fixture(params=ENGINES)
    def engine(request, monkeypatch):
        with engine_of(request.param, monkeypatch) as (backend, device): yield backend, device
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import pytest

from renewable_huber.backends.registry import availability


def requires(name: str) -> Any:
    return pytest.mark.skipif(not availability(name)[0], reason=f"{name}: {availability(name)[1]}")


#: (backend, device); "host-stand-in": native_cuda over tests/host_cuda_engine.py (deferred results,
#: amendment 0004; "-immediate": RH_CUDA_RESULTS=immediate)
ENGINES = [
    pytest.param(("numpy", "cpu"), id="numpy"),
    pytest.param(("native_cpu", "cpu"), id="native_cpu", marks=requires("native_cpu")),
    pytest.param(("torch", "cpu"), id="torch-cpu", marks=requires("torch")),
    pytest.param(("tensorflow", "cpu"), id="tensorflow-cpu", marks=requires("tensorflow")),
    pytest.param(("native_cuda", "host-stand-in"), id="native_cuda-stand-in", marks=requires("native_cuda")),
    pytest.param(("native_cuda", "host-stand-in-immediate"), id="native_cuda-stand-in-immediate",
                 marks=requires("native_cuda")),
    pytest.param(("native_cuda", "cuda"), id="native_cuda", marks=[pytest.mark.gpu, requires("native_cuda")]),
    pytest.param(("cupy", "cuda"), id="cupy", marks=[pytest.mark.gpu, requires("cupy")]),
    pytest.param(("torch", "cuda"), id="torch-cuda", marks=[pytest.mark.gpu, requires("torch")]),
]
#: engines whose streams repeat bit for bit; the others (GPU reductions) to rounding
EXACT = {("numpy", "cpu"), ("native_cpu", "cpu"), ("torch", "cpu"), ("tensorflow", "cpu"),
         ("native_cuda", "host-stand-in"), ("native_cuda", "host-stand-in-immediate")}


@contextlib.contextmanager
def engine_of(param: tuple[str, str], monkeypatch: Any) -> Iterator[tuple[str, str]]:
    """(backend, device) to build models with; the stand-in installed for its block."""
    backend, device = param
    if not device.startswith("host-stand-in"):
        yield backend, device
        return
    import host_cuda_engine

    # "-immediate": every partial_fit reads its own outcome (RH_CUDA_RESULTS); else they are deferred
    monkeypatch.setenv("RH_CUDA_RESULTS", "immediate" if device.endswith("-immediate") else "deferred")
    with host_cuda_engine.installed(monkeypatch):
        yield backend, "cuda"
