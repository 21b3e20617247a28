"""The release check (scripts/release/check_dist.py) on synthetic artifacts:
a correct set passes, and each defect it exists to catch is caught. Plus the
repository's own release metadata: one version, one Python range, the pins,
the license in every distribution."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import io
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VERSION = "9.8.7"
LICENSE = b"MIT License\n\nsynthetic\n"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


check_dist = _load("check_dist", ROOT / "scripts" / "release" / "check_dist.py")
cuda_dependencies = _load("cuda_dependencies", ROOT / "native" / "python-cuda" / "cuda_dependencies.py")


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(directory: Path, name: str, tag: str, files: dict[str, bytes], requires: list[str], *,
               version: str = VERSION, requires_python: str = ">=3.10", license_text: bytes | None = LICENSE,
               purelib: bool | None = None, wheel_tags: list[str] | None = None, corrupt_record: bool = False) -> Path:
    dist_name = name.replace("-", "_")
    dist_info = f"{dist_name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.4\nName: {name}\nVersion: {version}\nRequires-Python: {requires_python}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    purelib = tag == "py3-none-any" if purelib is None else purelib
    wheel = f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: {str(purelib).lower()}\n"
    wheel += "".join(f"Tag: {t}\n" for t in (wheel_tags or [tag]))
    contents = dict(files)
    contents[f"{dist_info}/METADATA"] = metadata.encode()
    contents[f"{dist_info}/WHEEL"] = wheel.encode()
    if license_text is not None:
        contents[f"{dist_info}/licenses/LICENSE"] = license_text
    record = "".join(f"{path},{_digest(data)},{len(data)}\n" for path, data in contents.items())
    if corrupt_record:
        first = next(iter(files))
        record = record.replace(_digest(files[first]), _digest(b"something else"))
    record += f"{dist_info}/RECORD,,\n"
    contents[f"{dist_info}/RECORD"] = record.encode()
    path = directory / f"{dist_name}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for file_name, data in contents.items():
            archive.writestr(file_name, data)
    return path


def make_sdist(directory: Path, *, version: str = VERSION, license_text: bytes = LICENSE) -> Path:
    top = f"renewable_huber-{version}"
    members = {
        f"{top}/LICENSE": license_text,
        f"{top}/PKG-INFO": f"Metadata-Version: 2.4\nName: renewable-huber\nVersion: {version}\n"
                           f"Requires-Python: >=3.10\n".encode(),
        f"{top}/src/renewable_huber/__init__.py": b"",
    }
    path = directory / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


CPU_TAG = "cp311-cp311-manylinux_2_34_x86_64"
CPU_FILES = {"_renewable_huber_native_cpu.cpython-311-x86_64-linux-gnu.so": b"\x7fELF cpu",
             "renewable_huber_native_cpu.libs/libscipy_openblas.so": b"\x7fELF blas"}
CUDA_FILES = {"_renewable_huber_native_cuda.cpython-311-x86_64-linux-gnu.so": b"\x7fELF cuda",
              "renewable_huber_native_cuda.libs/librh_cuda.so": b"\x7fELF rh_cuda"}
BASE_FILES = {"renewable_huber/__init__.py": b"", "renewable_huber/estimator.py": b""}
BASE_REQUIRES = ["numpy>=1.24", f'renewable-huber-native-cpu=={VERSION}; extra == "native-cpu"',
                 f'renewable-huber-native-cuda=={VERSION}; extra == "native-cuda"']
CUDA_REQUIRES = [f"renewable-huber=={VERSION}", "nvidia-cuda-runtime<14,>=13.0", "nvidia-cublas<14,>=13.0",
                 "nvidia-cusolver<13,>=12.0"]


def good_set(directory: Path, **changes) -> Path:
    """A correct release; `changes` replaces one artifact's arguments."""
    make_sdist(directory, **changes.pop("sdist", {}))
    artifacts = {
        "base": dict(name="renewable-huber", tag="py3-none-any", files=BASE_FILES, requires=BASE_REQUIRES),
        "cpu": dict(name="renewable-huber-native-cpu", tag=CPU_TAG, files=CPU_FILES,
                    requires=[f"renewable-huber=={VERSION}"]),
        "cuda": dict(name="renewable-huber-native-cuda", tag=CPU_TAG, files=CUDA_FILES, requires=CUDA_REQUIRES),
    }
    for key, arguments in artifacts.items():
        make_wheel(directory, **{**arguments, **changes.pop(key, {})})
    assert not changes
    return directory


def problems(directory: Path, **options) -> list[str]:
    return check_dist.check_distribution(directory, version=VERSION, license_text=LICENSE, **options).problems


def test_a_correct_release_passes(tmp_path):
    assert problems(good_set(tmp_path), require_cuda=True) == []


@pytest.mark.parametrize("changes, expected", [
    (dict(cpu=dict(requires=["renewable-huber==9.8.6"])), "must require renewable-huber==9.8.7"),
    (dict(cpu=dict(requires=["renewable-huber>=9.8.7"])), "must require renewable-huber==9.8.7"),
    (dict(base=dict(requires=["numpy", 'renewable-huber-native-cpu>=9; extra == "native-cpu"',
                              f'renewable-huber-native-cuda=={VERSION}; extra == "native-cuda"'])),
     "extra native-cpu must require"),
    (dict(cpu=dict(license_text=None)), "LICENSE is not in"),
    (dict(cuda=dict(license_text=b"another license")), "LICENSE is not in"),
    (dict(sdist=dict(license_text=b"another")), "LICENSE differs"),
    (dict(cpu=dict(requires_python=">=3.9")), "Requires-Python"),
    (dict(cpu=dict(version="9.8.8")), "is not 9.8.7"),
    (dict(cpu=dict(files={**CPU_FILES, "tests/test_engine.py": b""})), "a test tree"),
    (dict(cpu=dict(files={**CPU_FILES, "build/CMakeFiles/x.o": b""})), "a build tree"),
    (dict(cpu=dict(files={**CPU_FILES, "renewable_huber_native_cuda.libs/librh_cuda.so": b""})), "another engine"),
    (dict(cuda=dict(files={**CUDA_FILES, "renewable_huber_native_cuda.libs/libcublas.so.13": b""})),
     "vendors CUDA libraries"),
    (dict(cuda=dict(requires=[f"renewable-huber=={VERSION}", "nvidia-cublas"])), "one CUDA major"),
    (dict(cpu=dict(files={"renewable_huber_native_cpu.libs/libscipy_openblas.so": b"x"})), "nothing matches"),
    (dict(base=dict(files={**BASE_FILES, "renewable_huber/_fast.so": b""})), "native code"),
    (dict(cpu=dict(tag="cp311-cp311-linux_x86_64")), "not a manylinux"),
    (dict(cpu=dict(tag="py3-none-any", purelib=False)), "not one CPython"),
    (dict(cpu=dict(purelib=True)), "Root-Is-Purelib: true"),
    (dict(cpu=dict(wheel_tags=["cp312-cp312-manylinux_2_34_x86_64"])), "do not match"),
    (dict(cpu=dict(corrupt_record=True)), "RECORD's hash"),
])
def test_each_defect_is_caught(tmp_path, changes, expected):
    found = problems(good_set(tmp_path, **changes))
    assert any(expected in p for p in found), found


def test_the_set_is_checked(tmp_path):
    good_set(tmp_path)
    (tmp_path / f"renewable_huber-{VERSION}.tar.gz").unlink()
    (tmp_path / "notes.txt").write_text("x")
    found = problems(tmp_path)
    assert any("0 sdists" in p for p in found) and any("unexpected files" in p for p in found)
    for wheel in tmp_path.glob("renewable_huber_native_cuda-*.whl"):
        wheel.unlink()
    assert any("no renewable-huber-native-cuda wheel" in p for p in problems(tmp_path, require_cuda=True))


def test_an_unrepaired_linux_tag_needs_the_flag(tmp_path):
    good_set(tmp_path, cpu=dict(tag="cp311-cp311-linux_x86_64"))
    assert problems(tmp_path, allow_linux_tag=True) == []


def test_the_command_line_reports_and_fails(tmp_path, capsys):
    good_set(tmp_path, cpu=dict(requires=["renewable-huber"]))
    import json

    out = tmp_path.parent / "summary.json"
    assert check_dist.main([str(tmp_path), "--json", str(out)]) == 1
    assert "problems" in capsys.readouterr().err
    summary = json.loads(out.read_text())
    assert summary["problems"] and len(summary["artifacts"]) == 4


# ---------------------------------------------------------------- the repository's own metadata


def _pyproject(path: str) -> dict:
    return tomllib.loads((ROOT / path).read_text())


def test_one_version_one_python_range_and_exact_pins():
    version = check_dist.project_version()
    base = _pyproject("pyproject.toml")["project"]
    cpu = _pyproject("native/python-cpu/pyproject.toml")["project"]
    cuda = _pyproject("native/python-cuda/pyproject.toml")["project"]
    assert {base["requires-python"], cpu["requires-python"], cuda["requires-python"]} == {check_dist.REQUIRES_PYTHON}
    assert base["optional-dependencies"]["native-cpu"] == [f"renewable-huber-native-cpu=={version}"]
    assert base["optional-dependencies"]["native-cuda"] == [f"renewable-huber-native-cuda=={version}"]
    cpu_settings = _pyproject("native/python-cpu/pyproject.toml")["tool"]["scikit-build"]["metadata"]
    assert cpu_settings["dependencies"]["result"] == ["renewable-huber=={project[version]}"]


def test_every_distribution_ships_the_license():
    license_text = (ROOT / "LICENSE").read_bytes()
    assert license_text.startswith(b"MIT License")
    assert _pyproject("pyproject.toml")["project"]["license-files"] == ["LICENSE"]
    for native in ("native/python-cpu", "native/python-cuda"):
        assert (ROOT / native / "LICENSE").read_bytes() == license_text, native
        assert _pyproject(f"{native}/pyproject.toml")["tool"]["scikit-build"]["wheel"]["license-files"] == ["LICENSE"]


def test_the_cuda_wheel_depends_on_nvidias_libraries_of_its_major(monkeypatch):
    version = check_dist.project_version()
    assert cuda_dependencies.base_version() == version
    for major in (12, 13):
        requires = cuda_dependencies.dependencies(major, version)
        assert requires[0] == f"renewable-huber=={version}"
        names = [check_dist._requirement_name(r) for r in requires[1:]]
        assert names == [check_dist.normalize(n) for n in check_dist.NVIDIA_WHEELS[str(major)]]
    with pytest.raises(RuntimeError, match="CUDA 11 is not supported"):
        cuda_dependencies.dependencies(11, version)
    monkeypatch.setenv("RH_CUDA_MAJOR", "12")
    assert cuda_dependencies.dynamic_metadata("dependencies")[1].startswith("nvidia-cuda-runtime-cu12")
    monkeypatch.delenv("RH_CUDA_MAJOR")
    monkeypatch.setenv("CUDACXX", "/nonexistent/nvcc")
    with pytest.raises(RuntimeError, match="cannot run nvcc"):
        cuda_dependencies.cuda_major()


def test_two_wheels_of_one_engine_for_one_interpreter_are_refused(tmp_path):
    good_set(tmp_path)
    make_wheel(tmp_path, "renewable-huber-native-cpu", "cp311-cp311-manylinux_2_28_x86_64", files=CPU_FILES,
               requires=[f"renewable-huber=={VERSION}"])
    assert any("two renewable-huber-native-cpu wheels for one interpreter" in p for p in problems(tmp_path))
