"""The DLPack capsule rules of the CUDA binding (native/python/dlpack_import.hpp),
checked on the host with NumPy's capsules: no GPU needed, so they run in CI.

Every capsule is consumed exactly once (renamed, so its own destructor leaves
the tensor alone) and its deleter runs exactly once, when the binding is done
with it; NumPy's capsule holds a reference to its array, so the array's
reference count shows each deleter call. A capsule of an unknown DLPack major
version is refused and left untouched. The contract (device, dtype,
dimensions, C order, writability) is read from the tensor and its messages
name the argument.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest

native = pytest.importorskip("_renewable_huber_native_cuda")

CPU, CUDA = 1, 2


def check(capsule, what="X", ndim=2, bits=64, device_type=CPU, device_id=0, writable=False):
    return native._check_dlpack_capsule(capsule, what, ndim, bits, device_type, device_id, writable)


def capsule_name(capsule) -> bytes:
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule)


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_a_capsule_is_consumed_once_and_its_deleter_runs_once(versioned):
    X = np.arange(12.0).reshape(3, 4)
    baseline = sys.getrefcount(X)
    capsule = X.__dlpack__(max_version=(1, 0)) if versioned else X.__dlpack__()
    assert sys.getrefcount(X) == baseline + 1  # the capsule's tensor holds X
    read = check(capsule)
    assert read == {"shape": (3, 4), "data": X.ctypes.data, "versioned": versioned, "read_only": False}
    assert capsule_name(capsule) == (b"used_dltensor_versioned" if versioned else b"used_dltensor")
    assert sys.getrefcount(X) == baseline  # the deleter ran, once
    del capsule
    assert sys.getrefcount(X) == baseline  # the renamed capsule did not run it again
    with pytest.raises(native.DlpackContractError, match="already consumed"):
        again = X.__dlpack__()
        check(again)
        check(again)


def test_a_refused_capsule_is_released_exactly_once():
    """A contract violation after consumption still runs the deleter (once)."""
    X = np.zeros((3, 4), dtype=np.float32)
    baseline = sys.getrefcount(X)
    capsule = X.__dlpack__()
    with pytest.raises(native.DlpackContractError, match="X must be float64 like the model, not float32"):
        check(capsule)
    assert sys.getrefcount(X) == baseline
    del capsule
    assert sys.getrefcount(X) == baseline


def test_an_unknown_major_version_is_refused_and_left_untouched():
    class Version(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]

    class Managed(ctypes.Structure):  # DLManagedTensorVersioned's head: enough to read the version
        _fields_ = [("version", Version), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                    ("flags", ctypes.c_uint64)]

    managed = Managed(Version(2, 0), None, None, 0)
    new_capsule = ctypes.pythonapi.PyCapsule_New
    new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new_capsule(ctypes.addressof(managed), b"dltensor_versioned", None)
    with pytest.raises(native.DlpackContractError, match=r"DLPack version 2\.0 is not supported"):
        check(capsule)
    assert capsule_name(capsule) == b"dltensor_versioned"


def test_what_is_not_a_capsule_is_refused():
    with pytest.raises(native.DlpackContractError, match="y: not a DLPack capsule"):
        check(object(), what="y")


@pytest.mark.parametrize(
    "array, kwargs, message",
    [
        (np.zeros((3, 4)), dict(device_type=CUDA), r"X must be in CUDA device memory, not on the host \(cpu\)"),
        (np.zeros((3, 4)), dict(device_id=1), r"X is on the host \(cpu\), the engine on cuda:1"),
        (np.zeros((3, 4), np.float32), dict(), "X must be float64 like the model, not float32"),
        (np.zeros((3, 4)), dict(bits=32), "X must be float32 like the model, not float64"),
        (np.zeros((3, 4), np.int64), dict(), "X must be float64 like the model, not int64"),
        (np.zeros(3), dict(), "X must be two-dimensional, not 1-dimensional"),
        (np.zeros((3, 4)), dict(what="y", ndim=1), "y must be one-dimensional, not 2-dimensional"),
        (np.zeros((4, 3)).T, dict(), "X must be C-contiguous"),
        (np.zeros((3, 8))[:, ::2], dict(), "X must be C-contiguous"),
    ],
    ids=["host-for-cuda", "device-id", "float32", "float64-for-float32", "int", "1d", "y-2d", "fortran", "strided"],
)
def test_the_contract_names_the_argument(array, kwargs, message):
    with pytest.raises(native.DlpackContractError, match=message):
        check(array.__dlpack__(), **kwargs)


def test_unit_extents_and_empty_arrays_count_as_c_contiguous():
    column = np.zeros((5, 1))[:, :1]
    assert check(column.__dlpack__())["shape"] == (5, 1)
    assert check(np.zeros((0, 4)).__dlpack__())["shape"] == (0, 4)


def test_byte_offsets_are_applied():
    base = np.arange(20.0).reshape(5, 4)
    view = base[2:]
    assert check(view.__dlpack__())["data"] == base.ctypes.data + 2 * 4 * 8


def test_a_read_only_export_is_refused_where_the_engine_writes():
    out = np.zeros(3)
    out.flags.writeable = False
    capsule = out.__dlpack__(max_version=(1, 0))
    with pytest.raises(native.DlpackContractError, match="out must be writable"):
        check(capsule, what="out", ndim=1, writable=True)
    assert check(np.zeros(3).__dlpack__(max_version=(1, 0)), what="out", ndim=1, writable=True)["read_only"] is False
