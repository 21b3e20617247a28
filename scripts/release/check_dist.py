#!/usr/bin/env python3
"""The release check: what `make dist` built is what we mean to publish.

    python scripts/release/check_dist.py [DIST_DIR] [--json OUT]

Checks, for every artifact in DIST_DIR (default dist/):

* the set: one sdist and one pure-Python wheel of renewable-huber, at least one
  renewable-huber-native-cpu wheel, and renewable-huber-native-cuda wheels
  when present (``--require-cuda`` makes one mandatory);
* names and versions: every distribution has the version of
  src/renewable_huber/_version.py, and the file names agree with the metadata;
* pins: each native wheel requires ``renewable-huber==<version>``; the base
  package's extras ``native-cpu`` / ``native-cuda`` require the native
  distributions ``==<version>``; the CUDA wheel requires NVIDIA's runtime,
  cuBLAS and cuSOLVER wheels of one CUDA major;
* one Python range (``Requires-Python: >=3.10``) everywhere;
* the license: the MIT LICENSE of the repository, byte for byte, in every
  wheel's .dist-info and in the sdist;
* contents: the module each wheel exists for (and its vendored libraries),
  nothing else of size: no tests, no build trees or object files, no module
  or library of the other engine, no CUDA library in the CUDA wheel (they come
  from NVIDIA's wheels), no .so in the pure wheel;
* wheel tags: ``py3-none-any`` for the pure wheel; ``cpXY-cpXY-manylinux_*``
  (or ``linux_*`` only with ``--allow-linux-tag``) for the native ones,
  consistent between file name and WHEEL file, ``Root-Is-Purelib: false``;
* RECORD: every file listed with its sha256 and size, and nothing unlisted.

Exit status 1 with every problem listed; 0 with a summary (names and sizes).
"""

from __future__ import annotations

import argparse
import base64
import email.parser
import hashlib
import json
import re
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIRES_PYTHON = ">=3.10"
BASE = "renewable-huber"
CPU = "renewable-huber-native-cpu"
CUDA = "renewable-huber-native-cuda"
#: what each native wheel must contain (regular expressions over its file names)
REQUIRED_FILES = {
    CPU: [r"_renewable_huber_native_cpu\.cpython-\d+[a-z]*-[\w-]+\.so",
          r"renewable_huber_native_cpu\.libs/libscipy_openblas[\w.-]*\.so[\w.]*"],
    CUDA: [r"_renewable_huber_native_cuda\.cpython-\d+[a-z]*-[\w-]+\.so",
           r"renewable_huber_native_cuda\.libs/librh_cuda[\w.-]*\.so[\w.]*"],
    BASE: [r"renewable_huber/__init__\.py", r"renewable_huber/estimator\.py"],
}
#: files no wheel may carry
FORBIDDEN = [
    (r"(^|/)tests?/", "a test tree"),
    (r"(^|/)CMakeFiles/|CMakeCache\.txt|\.ninja_|build\.ninja", "a build tree"),
    (r"\.(o|obj|a)$", "an object file or static library"),
    (r"\.(pyc)$|__pycache__/", "compiled bytecode"),
]
#: the other engine's module, per wheel
OTHER_ENGINE = {CPU: r"native_cuda|librh_cuda", CUDA: r"native_cpu|openblas", BASE: r"\.so($|\.)"}
#: CUDA libraries that must come from NVIDIA's wheels, never vendored
CUDA_LIBRARIES = r"lib(cudart|cublas|cublasLt|cusolver|cusparse|nvJitLink)[\w.-]*\.so"
#: NVIDIA's pip distributions per CUDA major (native/python-cuda/cuda_dependencies.py)
NVIDIA_WHEELS = {
    "12": ["nvidia-cuda-runtime-cu12", "nvidia-cublas-cu12", "nvidia-cusolver-cu12"],
    "13": ["nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cusolver"],
}
WHEEL_NAME = re.compile(r"^(?P<name>[\w.]+)-(?P<version>[\w.+]+)-(?P<python>\w+)-(?P<abi>\w+)-(?P<platform>[\w.]+)\.whl$")


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    artifacts: list[dict] = field(default_factory=list)

    def check(self, condition: bool, message: str) -> bool:
        if not condition:
            self.problems.append(message)
        return condition


def project_version() -> str:
    text = (ROOT / "src" / "renewable_huber" / "_version.py").read_text(encoding="utf-8")
    return re.search(r'__version__\s*=\s*"([^"]+)"', text).group(1)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return normalize(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1))


def _record_ok(archive: zipfile.ZipFile, dist_info: str, where: str, report: Report) -> None:
    record_name = f"{dist_info}/RECORD"
    if not report.check(record_name in archive.namelist(), f"{where}: no {record_name}"):
        return
    listed = {}
    for line in archive.read(record_name).decode().splitlines():
        if not line.strip():
            continue
        path, digest, size = line.rsplit(",", 2)
        listed[path] = (digest, size)
    for name in archive.namelist():
        if name.endswith("/"):
            continue
        if not report.check(name in listed, f"{where}: {name} is not in RECORD"):
            continue
        digest, size = listed[name]
        if name == record_name:
            continue
        data = archive.read(name)
        expected = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        report.check(digest == expected and size == str(len(data)), f"{where}: RECORD's hash or size of {name} is wrong")
    for path in listed:
        report.check(path in archive.namelist(), f"{where}: RECORD lists {path}, which the wheel lacks")


def check_wheel(path: Path, version: str, license_text: bytes, report: Report, allow_linux_tag: bool) -> str | None:
    where = path.name
    match = WHEEL_NAME.match(path.name)
    if not report.check(match is not None, f"{where}: not a wheel file name"):
        return None
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        dist_infos = sorted({n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")})
        if not report.check(len(dist_infos) == 1, f"{where}: {len(dist_infos)} .dist-info folders"):
            return None
        dist_info = dist_infos[0]
        metadata = email.parser.Parser().parsestr(archive.read(f"{dist_info}/METADATA").decode())
        wheel_file = email.parser.Parser().parsestr(archive.read(f"{dist_info}/WHEEL").decode())
        name = normalize(metadata["Name"])
        report.check(name in (BASE, CPU, CUDA), f"{where}: unknown distribution {metadata['Name']!r}")
        report.check(normalize(match["name"]) == name, f"{where}: file name says {match['name']}, metadata {name}")
        report.check(metadata["Version"] == version, f"{where}: version {metadata['Version']} is not {version}")
        report.check(match["version"] == version, f"{where}: file name version {match['version']} is not {version}")
        report.check(metadata["Requires-Python"] == REQUIRES_PYTHON,
                     f"{where}: Requires-Python {metadata['Requires-Python']!r} is not {REQUIRES_PYTHON!r}")
        requires = metadata.get_all("Requires-Dist") or []
        # the license, byte for byte
        licenses = [n for n in names if n.startswith(f"{dist_info}/") and re.search(r"/(licenses/)?LICEN[CS]E[^/]*$", n)]
        report.check(any(archive.read(n) == license_text for n in licenses),
                     f"{where}: the repository's LICENSE is not in {dist_info} (found {licenses})")
        # tags
        tags = wheel_file.get_all("Tag") or []
        file_tag = f"{match['python']}-{match['abi']}-{match['platform']}"
        expanded = {f"{py}-{abi}-{plat}" for py in match["python"].split(".") for abi in match["abi"].split(".")
                    for plat in match["platform"].split(".")}
        report.check(set(tags) == expanded, f"{where}: WHEEL tags {tags} do not match the file name's {file_tag}")
        purelib = (wheel_file["Root-Is-Purelib"] or "").strip().lower() == "true"
        if name == BASE:
            report.check(file_tag == "py3-none-any", f"{where}: the pure wheel is tagged {file_tag}")
            report.check(purelib, f"{where}: the pure wheel says Root-Is-Purelib: false")
            for extra, dist in (("native-cpu", CPU), ("native-cuda", CUDA)):
                pins = [r for r in requires if _requirement_name(r) == dist and f'extra == "{extra}"' in r]
                report.check(len(pins) == 1 and f"=={version}" in pins[0].replace(" ", ""),
                             f"{where}: extra {extra} must require {dist}=={version} (found {pins})")
        else:
            platform_ok = re.fullmatch(r"(manylinux_\d+_\d+|manylinux\d+)_x86_64", match["platform"].split(".")[0])
            if allow_linux_tag:
                platform_ok = platform_ok or match["platform"] == "linux_x86_64"
            report.check(bool(platform_ok), f"{where}: platform tag {match['platform']} is not a manylinux x86-64 tag")
            report.check(re.fullmatch(r"cp3\d+", match["python"]) is not None and match["abi"] == match["python"],
                         f"{where}: tags {match['python']}-{match['abi']} are not one CPython's")
            report.check(not purelib, f"{where}: a native wheel says Root-Is-Purelib: true")
            pins = [r for r in requires if _requirement_name(r) == BASE]
            report.check(len(pins) == 1 and pins[0].replace(" ", "").endswith(f"=={version}"),
                         f"{where}: must require {BASE}=={version} (found {pins})")
        if name == CUDA:
            majors = [major for major, dists in NVIDIA_WHEELS.items()
                      if all(any(_requirement_name(r) == normalize(d) for r in requires) for d in dists)]
            report.check(len(majors) == 1, f"{where}: must require NVIDIA's runtime, cuBLAS and cuSOLVER wheels of "
                                           f"one CUDA major (requires {requires})")
            report.check(not [n for n in names if re.search(CUDA_LIBRARIES, n)],
                         f"{where}: vendors CUDA libraries that NVIDIA's wheels provide")
        # contents
        payload = [n for n in names if not n.startswith(f"{dist_info}/") and not n.endswith("/")]
        for pattern in REQUIRED_FILES.get(name, []):
            report.check(any(re.fullmatch(pattern, n) for n in payload), f"{where}: nothing matches {pattern}")
        for pattern, what in FORBIDDEN:
            stray = [n for n in payload if re.search(pattern, n)]
            report.check(not stray, f"{where}: {what}: {stray[:5]}")
        if name in OTHER_ENGINE:
            other = [n for n in payload if re.search(OTHER_ENGINE[name], n)]
            report.check(not other, f"{where}: files of another engine or native code: {other[:5]}")
        _record_ok(archive, dist_info, where, report)
    report.artifacts.append({"file": path.name, "distribution": name, "bytes": path.stat().st_size,
                             "tag": file_tag, "requires": requires})
    return name


def check_sdist(path: Path, version: str, license_text: bytes, report: Report) -> None:
    where = path.name
    report.check(path.name == f"renewable_huber-{version}.tar.gz", f"{where}: expected renewable_huber-{version}.tar.gz")
    with tarfile.open(path) as archive:
        members = {m.name: m for m in archive.getmembers()}
        top = f"renewable_huber-{version}"
        license_member = members.get(f"{top}/LICENSE")
        if report.check(license_member is not None, f"{where}: no {top}/LICENSE"):
            report.check(archive.extractfile(license_member).read() == license_text, f"{where}: LICENSE differs")
        pkg_info = members.get(f"{top}/PKG-INFO")
        if report.check(pkg_info is not None, f"{where}: no PKG-INFO"):
            metadata = email.parser.Parser().parsestr(archive.extractfile(pkg_info).read().decode())
            report.check(metadata["Version"] == version, f"{where}: version {metadata['Version']}")
            report.check(metadata["Requires-Python"] == REQUIRES_PYTHON, f"{where}: Requires-Python")
        report.check(f"{top}/src/renewable_huber/__init__.py" in members, f"{where}: the package sources are missing")
        stray = [n for n in members if re.search(r"\.(so|o|a|whl)$|/\.venv/|/build-|CMakeFiles", n)]
        report.check(not stray, f"{where}: build products: {stray[:5]}")
    report.artifacts.append({"file": path.name, "distribution": f"{BASE} (sdist)", "bytes": path.stat().st_size})


def check_distribution(dist: Path, *, version: str | None = None, license_text: bytes | None = None,
                       require_cuda: bool = False, allow_linux_tag: bool = False) -> Report:
    version = version or project_version()
    license_text = license_text if license_text is not None else (ROOT / "LICENSE").read_bytes()
    report = Report()
    files = sorted(p for p in dist.iterdir() if p.is_file())
    sdists = [p for p in files if p.name.endswith(".tar.gz")]
    wheels = [p for p in files if p.suffix == ".whl"]
    others = [p.name for p in files if p not in sdists and p not in wheels]
    report.check(not others, f"{dist}: unexpected files {others}")
    report.check(len(sdists) == 1, f"{dist}: {len(sdists)} sdists (expected 1)")
    for sdist in sdists:
        check_sdist(sdist, version, license_text, report)
    names = [check_wheel(w, version, license_text, report, allow_linux_tag) for w in wheels]
    report.check(names.count(BASE) == 1, f"{dist}: {names.count(BASE)} renewable-huber wheels (expected 1)")
    report.check(names.count(CPU) >= 1, f"{dist}: no {CPU} wheel")
    if require_cuda:
        report.check(names.count(CUDA) >= 1, f"{dist}: no {CUDA} wheel")
    for dist_name in (CPU, CUDA):
        tags = [a["tag"].split("-")[0] for a in report.artifacts if a["distribution"] == dist_name]
        report.check(len(tags) == len(set(tags)), f"{dist}: two {dist_name} wheels for one interpreter: {tags}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", nargs="?", default=str(ROOT / "dist"))
    parser.add_argument("--require-cuda", action="store_true", help="a renewable-huber-native-cuda wheel must be there")
    parser.add_argument("--allow-linux-tag", action="store_true", help="accept linux_x86_64 (unrepaired) native wheels")
    parser.add_argument("--json", help="write the summary (artifacts, sizes, problems) here")
    args = parser.parse_args(argv)
    report = check_distribution(Path(args.dist), require_cuda=args.require_cuda, allow_linux_tag=args.allow_linux_tag)
    if args.json:
        Path(args.json).write_text(json.dumps({"artifacts": report.artifacts, "problems": report.problems}, indent=1))
    for artifact in report.artifacts:
        print(f"{artifact['file']}  {artifact['bytes'] / 2**20:.1f} MiB")
    if report.problems:
        print(f"check_dist: {len(report.problems)} problems", file=sys.stderr)
        for problem in report.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    print(f"check_dist: {len(report.artifacts)} artifacts, all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
