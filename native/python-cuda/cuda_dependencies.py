"""scikit-build-core metadata provider: the dependencies of renewable-huber-native-cuda.

The wheel needs the CUDA runtime, cuBLAS and cuSOLVER of the CUDA major it
was compiled with, from NVIDIA's pip wheels (librh_cuda.so finds them through
its RUNPATH, native/cuda/CMakeLists.txt, RH_CUDA_PIP_RUNTIME), and exactly the
base package's version. The major is nvcc's (CUDACXX, else nvcc on PATH, else
/usr/local/cuda), or RH_CUDA_MAJOR when set.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

#: NVIDIA's pip distributions of the libraries the engine links, per CUDA major
CUDA_RUNTIME_WHEELS = {
    12: ["nvidia-cuda-runtime-cu12>=12.0,<13", "nvidia-cublas-cu12>=12.0,<13", "nvidia-cusolver-cu12>=11.4,<12"],
    13: ["nvidia-cuda-runtime>=13.0,<14", "nvidia-cublas>=13.0,<14", "nvidia-cusolver>=12.0,<13"],
}

_VERSION_FILE = Path(__file__).resolve().parents[2] / "src" / "renewable_huber" / "_version.py"


def cuda_major() -> int:
    forced = os.environ.get("RH_CUDA_MAJOR")
    if forced:
        return int(forced)
    nvcc = os.environ.get("CUDACXX") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    try:
        output = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise RuntimeError(f"cannot run nvcc ({nvcc}) to learn the CUDA major version: {exc}") from exc
    match = re.search(r"release (\d+)\.", output)
    if match is None:
        raise RuntimeError(f"cannot read the CUDA version from nvcc's output: {output!r}")
    return int(match.group(1))


def base_version() -> str:
    match = re.search(r'__version__\s*=\s*"([^"]+)"', _VERSION_FILE.read_text(encoding="utf-8"))
    if match is None:
        raise RuntimeError(f"no __version__ in {_VERSION_FILE}")
    return match.group(1)


def dependencies(major: int, version: str) -> list[str]:
    if major not in CUDA_RUNTIME_WHEELS:
        raise RuntimeError(f"CUDA {major} is not supported (supported: {sorted(CUDA_RUNTIME_WHEELS)})")
    return [f"renewable-huber=={version}", *CUDA_RUNTIME_WHEELS[major]]


def dynamic_metadata(field: str, settings: dict | None = None) -> list[str]:
    if field != "dependencies":
        raise ValueError(f"this provider only gives 'dependencies', not {field!r}")
    return dependencies(cuda_major(), base_version())
