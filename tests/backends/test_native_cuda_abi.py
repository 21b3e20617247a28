"""The CUDA engine's C ABI cannot drift: the header (native/cuda/include/rh_cuda.h),
its contract (native/contracts/rh_cuda_contract.json, the single source of
truth, also compiled against the header by abi_contract.cpp), the RAII
wrapper and the binding are read together. Runs without a GPU."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADER = ROOT / "native" / "cuda" / "include" / "rh_cuda.h"
WRAPPER = ROOT / "native" / "cuda" / "include" / "rh_cuda.hpp"
CONTRACT = ROOT / "native" / "contracts" / "rh_cuda_contract.json"
BINDING = ROOT / "native" / "python" / "cuda_module.cpp"


def contract():
    return json.loads(CONTRACT.read_text())


def header_functions():
    text = HEADER.read_text()
    return {m.group(2): (m.group(1), [p.strip() for p in re.sub(r"\s+", " ", m.group(3)).split(",")])
            for m in re.finditer(r"RH_CUDA_API (\w+) (rh_cuda_\w+)\((.*?)\);", text, re.S)}


def test_every_function_of_the_contract_is_declared_as_the_contract_says():
    declared = header_functions()
    promised = {f["name"]: (f["returns"], f["parameters"]) for f in contract()["functions"]}
    assert declared == promised


def test_every_constant_and_struct_of_the_contract_is_in_the_header():
    text = HEADER.read_text()
    for name, value in contract()["constants"].items():
        assert re.search(rf"#define {name} {value}\b", text), name
    for struct, spec in contract()["structs"].items():
        body = re.search(rf"typedef struct {struct} \{{(.*?)\}} {struct};", text, re.S)
        assert body, struct
        fields = re.findall(r"^\s*[\w\s\*]+?\s\**(\w+)(?:\[\d+\])?;", body.group(1), re.M)
        assert fields == [f["name"] for f in spec["fields"]], struct
        # every struct is headed by its version and size
        assert fields[:2] == ["abi_version", "struct_size"], struct


def test_the_wrapper_uses_only_contract_functions_and_wraps_them_all():
    used = set(re.findall(r"\b(rh_cuda_\w+)\(", WRAPPER.read_text()))
    promised = {f["name"] for f in contract()["functions"]}
    assert used <= promised
    assert promised - used == set(), f"functions the wrapper does not wrap: {sorted(promised - used)}"


def test_the_binding_talks_to_the_engine_through_the_wrapper_only():
    text = BINDING.read_text()
    assert '#include "rh_cuda.hpp"' in text
    called = set(re.findall(r"\b(rh_cuda_\w+)\(", text)) - {"rh_cuda_abi_version"}
    assert called == set(), f"the binding calls the C ABI around the wrapper: {sorted(called)}"


def test_a_contract_edit_fails_the_compile_time_check(tmp_path):
    """abi_contract.cpp's generated static_asserts catch a field moved in the contract."""
    generator = ROOT / "native" / "contracts" / "generate_abi_asserts.py"
    edited = contract()
    edited["structs"]["rh_cuda_batch"]["fields"][2]["offset"] += 8
    (tmp_path / "contract.json").write_text(json.dumps(edited))
    subprocess.run([sys.executable, str(generator), str(tmp_path / "contract.json"),
                    str(tmp_path / "rh_cuda_contract_asserts.inc")], check=True)
    source = ROOT / "native" / "cuda" / "src" / "abi_contract.cpp"
    compile_ = ["g++", "-std=c++20", "-fsyntax-only", f"-I{HEADER.parent}", f"-I{tmp_path}", str(source)]
    broken = subprocess.run(compile_, capture_output=True, text=True)
    assert broken.returncode != 0 and "offset of rh_cuda_batch" in broken.stderr
    subprocess.run([sys.executable, str(generator), str(CONTRACT), str(tmp_path / "rh_cuda_contract_asserts.inc")],
                   check=True)
    assert subprocess.run(compile_, capture_output=True, text=True).returncode == 0


def test_the_header_compiles_as_c(tmp_path):
    source = tmp_path / "uses_header.c"
    source.write_text('#include "rh_cuda.h"\nint main(void) { return (int)rh_cuda_abi_version() - RH_CUDA_ABI_VERSION; }\n')
    result = subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-fsyntax-only",
                             f"-I{HEADER.parent}", str(source)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(importlib.util.find_spec("_renewable_huber_native_cuda") is None,
                    reason="renewable-huber-native-cuda is not installed")
def test_the_module_speaks_the_contracts_abi():
    import _renewable_huber_native_cuda as native

    version = contract()["abi_version"]
    assert native.CUDA_ABI_VERSION == (version["major"] << 16) | version["minor"]
    assert native.library_abi_version() == native.CUDA_ABI_VERSION
