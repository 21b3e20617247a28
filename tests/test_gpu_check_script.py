"""scripts/device/gpu_check.sh, the GPU machine's one script, checked here
where it cannot run: the pending patches it applies must apply to this tree
in PENDING_ORDER, `ab_builds` must pair this tree's engine with every
commit RH_BASELINE_REVISION names, and `ladder` must build main and each
rung of RH_PENDING ("a+b": one rung) and pair them, with main's control
when asked (their git, wheel and benchmark calls stubbed, the commands
they would run compared)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "device" / "gpu_check.sh"
PENDING = ROOT / "scripts" / "device" / "pending"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("git") is None,
                                reason="needs bash and git")


def pending_order() -> list[str]:
    match = re.search(r'^PENDING_ORDER="([^"]*)"', SCRIPT.read_text(), re.MULTILINE)
    assert match, "gpu_check.sh defines PENDING_ORDER"
    return match.group(1).split()


def patched_paths(patch: Path) -> set[str]:
    paths = set()
    for line in patch.read_text().splitlines():
        if line.startswith(("--- a/", "+++ b/")):
            paths.add(line[6:])
    return paths


def section(name: str) -> str:
    """The text of gpu_check.sh's function `name` (its definition to its closing brace)."""
    text = SCRIPT.read_text()
    start = text.index(f"{name}() {{")
    return text[start:text.index("\n}\n", start) + 3]


def test_every_pending_patch_is_in_the_order_and_every_name_has_its_patch():
    order = pending_order()
    assert len(order) == len(set(order)), "a patch is named twice"
    on_disk = {p.stem for p in PENDING.glob("*.patch")}
    assert set(order) == on_disk, f"PENDING_ORDER {sorted(order)} against the folder's {sorted(on_disk)}"


def test_the_pending_patches_apply_to_this_tree_in_their_order(tmp_path):
    order = pending_order()
    if not order:
        pytest.skip("no pending patch")
    patches = [PENDING / f"{name}.patch" for name in order]
    touched = set().union(*(patched_paths(p) for p in patches))
    for relative in touched:  # the tree's copy of every file a patch touches (a new file has none)
        source = ROOT / relative
        if source.is_file():
            target = tmp_path / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for name, patch in zip(order, patches):
        applied = subprocess.run(["git", "apply", "-C1", str(patch)], cwd=tmp_path, capture_output=True, text=True)
        assert applied.returncode == 0, f"{name} does not apply after {order[:order.index(name)]}: {applied.stderr}"


def ab_builds_commands(tmp_path: Path, baselines: str, narrowing: str = "") -> list[str]:
    """The calls `ab_builds` makes, its helpers and the benchmark stubbed."""
    text = SCRIPT.read_text()
    start, end = text.index("BASELINE_TREE="), text.index("# Which pending patch moves which class")
    functions = tmp_path / "ab_functions.sh"
    functions.write_text(text[start:end])
    driver = tmp_path / "driver.sh"
    driver.write_text(f"""
source {functions}
engine_into_folder() {{ echo "build $1 $2 $3"; }}
git() {{ echo "git $*"; }}
bench() {{ echo "bench $*"; }}
PY=bench OUT=/out GPU_TAG=h200
{narrowing} RH_BASELINE_REVISION="{baselines}" RH_AB_ROUNDS=3 ab_builds
""")
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_ab_builds_pairs_one_baseline_as_before(tmp_path):
    lines = ab_builds_commands(tmp_path, "d519480")
    assert "git worktree add --detach /tmp/rh-baseline d519480" in lines
    assert "build /tmp/rh-baseline python-cuda /tmp/rh-baseline-site" in lines
    runs = [line for line in lines if line.startswith("bench ")]
    assert len(runs) == 2, runs  # device-fed, then host-fed
    device, host = runs
    assert "--engine after=bench:native_cuda@device --engine before=bench:native_cuda@device" in device
    assert "--engine-path before=/tmp/rh-baseline/src:/tmp/rh-baseline-site" in device
    assert device.endswith("--out /out/ab_builds_device_h200.json")
    assert "--engine before=bench:native_cuda --engine-path" in host and "@device" not in host
    assert "--rounds 3" in host


def test_ab_builds_pairs_every_baseline_in_one_run(tmp_path):
    lines = ab_builds_commands(tmp_path, "6da7550 d519480")
    assert "git worktree add --detach /tmp/rh-baseline 6da7550" in lines
    assert "git worktree add --detach /tmp/rh-baseline-1 d519480" in lines
    assert "build /tmp/rh-baseline-1 python-cuda /tmp/rh-baseline-site-1" in lines
    runs = [line for line in lines if line.startswith("bench ")]
    assert len(runs) == 2, runs
    for run in runs:
        engines = re.findall(r"--engine (\S+?)=", run)
        assert engines == ["after", "before_6da7550", "before_d519480"], run  # this tree first: the ratios' reference
        assert "--engine-path before_6da7550=/tmp/rh-baseline/src:/tmp/rh-baseline-site " in run
        assert "--engine-path before_d519480=/tmp/rh-baseline-1/src:/tmp/rh-baseline-site-1 " in run


def test_ab_builds_narrows_to_one_feed_some_classes_and_more_arguments(tmp_path):
    narrowing = 'RH_AB_FEEDS=device RH_AB_CLASSES="wide streaming" RH_AB_ARGS="--inference off" RH_AB_TAG=_inference_off'
    lines = ab_builds_commands(tmp_path, "d519480", narrowing)
    runs = [line for line in lines if line.startswith("bench ")]
    assert len(runs) == 1, runs  # device-fed only
    assert "--classes wide streaming --inference off" in runs[0]
    assert runs[0].endswith("--out /out/ab_builds_device_inference_off_h200.json")
    # unnarrowed: the four classes, no more arguments
    default = [line for line in ab_builds_commands(tmp_path, "d519480") if line.startswith("bench ")]
    assert all("--classes latency reference wide streaming --rounds 3" in run for run in default), default


def test_a_second_pairing_reuses_the_baseline_built_for_the_same_commit(tmp_path):
    text = SCRIPT.read_text()
    start, end = text.index("BASELINE_TREE="), text.index("# Which pending patch moves which class")
    (tmp_path / "ab_functions.sh").write_text(text[start:end])
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for message in ("first", "second"):
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", message], check=True)
    tree, site = tmp_path / "baseline", tmp_path / "baseline-site"
    driver = tmp_path / "driver.sh"
    driver.write_text(f"""
source {tmp_path / "ab_functions.sh"}
engine_into_folder() {{ echo "build $1"; mkdir -p "$3"; }}
cd {repo}
baseline_engine python-cuda HEAD~1 {tree} {site}
RH_BASELINE_REUSE=1 baseline_engine python-cuda HEAD~1 {tree} {site}
RH_BASELINE_REUSE=1 baseline_engine python-cuda HEAD {tree} {site}
baseline_engine python-cuda HEAD {tree} {site}
""")
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    said = [line for line in run.stdout.splitlines() if line.startswith(("build", "reusing"))]
    assert said == [f"build {tree}", f"reusing the engine of HEAD~1 in {site}", f"build {tree}", f"build {tree}"]


def test_kernel_detail_asks_nsight_compute_for_the_stall_reasons_of_the_named_kernels(tmp_path):
    driver = tmp_path / "driver.sh"
    driver.write_text(f"""
{section("kernel_detail")}
ncu() {{ echo "ncu $*"; }}
PY=py OUT={tmp_path}
RH_DETAIL_KERNELS="narrow_gram_kernel" kernel_detail
""")
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    line = (tmp_path / "kernel_detail_streaming.csv").read_text()
    assert '--kernel-name regex:narrow_gram_kernel' in line
    assert "--section WarpStateStats" in line and "--page details" in line
    assert "--section InstructionStats" in line and "--section SchedulerStats" in line  # instructions a warp, issue rate
    assert "profile_cuda_update.py --tool none --streams 1 --class streaming" in line


def ladder_commands(tmp_path: Path, settings: str) -> list[str]:
    """The calls `ladder` makes: git, the wheel builds, the copies and the benchmark stubbed."""
    text = SCRIPT.read_text()
    start, end = text.index("BASELINE_TREE="), text.index("# The CUPTI profile (profile_cuda_update.py, as `profile`")
    functions = tmp_path / "ladder_functions.sh"
    functions.write_text(text[start:end])
    tree = tmp_path / "ladder-tree"
    tree.mkdir()
    driver = tmp_path / "driver.sh"
    driver.write_text(f"""
source {functions}
engine_into_folder() {{ echo "build $1 $2 $3"; }}
git() {{ echo "git $*" >> {tmp_path / "git.log"}; }}  # git show's line goes down the pipe to git apply
cp() {{ :; }}
rm() {{ :; }}
bench() {{ echo "bench $*"; }}
LADDER_TREE={tree}
PY=bench OUT=/out GPU_TAG=h200 PENDING_ORDER="a b c"
{settings} ladder
""")
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return (tmp_path / "git.log").read_text().splitlines() + run.stdout.splitlines()


def test_ladder_builds_each_prefix_and_pairs_them_after_main(tmp_path):
    lines = ladder_commands(tmp_path, "")
    shown = [line.split(":")[-1] for line in lines if line.startswith("git show HEAD:")]
    assert shown == ["scripts/device/pending/a.patch", "scripts/device/pending/b.patch", "scripts/device/pending/c.patch"]
    builds = [line.split()[-1] for line in lines if line.startswith("build ")]
    assert builds == [f"/tmp/rh-ladder-site-{label}" for label in ("main", "a", "b", "c")]
    (run,) = [line for line in lines if line.startswith("bench ") and "benchmark_cpu_engines.py" in line]
    assert re.findall(r"--engine (\S+?)=", run) == ["main", "a", "b", "c"]  # main first: the ratios' reference
    # then each rung's verdict against the control, read from the record the run wrote
    (verdict,) = [line for line in lines if line.startswith("bench ") and "ladder_verdict.py" in line]
    assert verdict.split()[-1] == "/out/pending_ladder_device_h200.json" and verdict.split()[-1] in run


def test_ladder_rungs_of_several_patches_and_the_control(tmp_path):
    lines = ladder_commands(tmp_path, 'RH_PENDING="a+b c" RH_LADDER_CONTROL=1 RH_LADDER_BASE=session-main')
    shown = [line.split()[-1] for line in lines if line.startswith("git show ")]
    assert shown == ["session-main:scripts/device/pending/a.patch", "session-main:scripts/device/pending/b.patch",
                     "session-main:scripts/device/pending/c.patch"]
    builds = [line.split()[-1] for line in lines if line.startswith("build ")]
    assert builds == ["/tmp/rh-ladder-site-main", "/tmp/rh-ladder-site-b", "/tmp/rh-ladder-site-c"]  # a+b: one rung
    (run,) = [line for line in lines if line.startswith("bench ") and "benchmark_cpu_engines.py" in line]
    assert re.findall(r"--engine (\S+?)=", run) == ["main", "b", "c", "main_again"]
    assert "--engine-path main_again=/tmp/rh-ladder-site-main-src:/tmp/rh-ladder-site-main" in run


def test_ladder_adds_each_label_with_graphs_device_fed_only(tmp_path):
    lines = ladder_commands(tmp_path, 'RH_PENDING="a" RH_LADDER_CONTROL=1 RH_LADDER_GRAPHS=1 RH_LADDER_FEED="device host"')
    runs = [line for line in lines if line.startswith("bench ") and "benchmark_cpu_engines.py" in line]
    device, host = runs
    assert re.findall(r"--engine (\S+?)=", device) == ["main", "a", "main_again", "main_graphs", "a_graphs"]
    assert "--engine a_graphs=bench:native_cuda@device+graphs" in device
    assert "--engine-path a_graphs=/tmp/rh-ladder-site-a-src:/tmp/rh-ladder-site-a" in device
    assert re.findall(r"--engine (\S+?)=", host) == ["main", "a", "main_again"]  # graphs: device-fed only


def test_ladder_profile_runs_a_graphs_spec_with_cuda_graphs_into_its_own_record(tmp_path):
    driver = tmp_path / "driver.sh"
    driver.write_text(section("profile_cases") + section("ladder_profile") + f"""
mkdir() {{ :; }}
bench() {{ echo "bench $*"; }}
PY=bench OUT=/out PENDING_ORDER="a"
RH_LADDER_PROFILE="a" RH_PROFILE_SPECS="streaming float64 none device,streaming float64 none device graphs" ladder_profile
""")
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    plain, graphs = run.stdout.splitlines()
    assert "--cuda-graphs" not in plain and plain.endswith("--out /out/profile_a/streaming_float64_none_device.json")
    assert "--input device --cuda-graphs --out /out/profile_a/streaming_float64_none_device_graphs.json" in graphs


def stubbed_run(tmp_path: Path, sections: list[str], calls: str) -> list[str]:
    """The lines gpu_check.sh's ``sections`` print for ``calls`` (a shell
    snippet), the benchmark stubbed as `bench` (PY=bench OUT=/out GPU_TAG=h100)."""
    driver = tmp_path / "driver.sh"
    driver.write_text("".join(section(name) for name in sections) +
                      'bench() { echo "bench $*"; }\nPY=bench OUT=/out GPU_TAG=h100\n' + calls)
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_route_ab_pairs_the_host_route_with_the_default_and_the_control_in_one_build(tmp_path):
    ab, verdict = stubbed_run(tmp_path, ["route_ab"], "route_ab\n")
    assert re.findall(r"--engine (\S+?)=", ab) == ["main", "device_loop", "main_again"]
    assert "--engine-env main=RH_CUDA_SOLVER=pipeline" in ab and "--engine-env main_again=RH_CUDA_SOLVER=pipeline" in ab
    assert "--engine-env device_loop" not in ab  # the default route
    assert "--classes streaming --penalties none" in ab and "--engine-path" not in ab  # the installed build
    assert "--lifecycle cold" in ab and verdict.endswith("ladder_verdict.py /out/route_ab_device_cold_h100.json")


def test_route_ab_steady_pairs_primed_estimators_into_its_own_record(tmp_path):
    ab, verdict = stubbed_run(tmp_path, ["route_ab"], "RH_ROUTE_LIFECYCLE=steady route_ab\n")
    assert "--lifecycle steady --out /out/route_ab_device_steady_h100.json" in ab
    assert verdict.endswith("ladder_verdict.py /out/route_ab_device_steady_h100.json")


def test_route_timeline_times_both_routes_step_by_step_in_one_process(tmp_path):
    both, one = stubbed_run(tmp_path, ["route_timeline"],
                            "route_timeline\nRH_ROUTE_DTYPES=float32 RH_TIMELINE_ROUNDS=5 route_timeline\n")
    assert both == ("bench scripts/profiling/stream_timeline.py --routes pipeline auto --dtypes float64 float32 "
                    "--rounds 21 --out /out/stream_timeline_h100.json")
    assert "--dtypes float32 --rounds 5 " in one


def test_pack_leaves_one_archive_holding_every_file(tmp_path):
    out = tmp_path / "out"
    (out / "profile_main").mkdir(parents=True)
    for name in ("summary.txt", "ladder.log", "profile_main/streaming.json"):
        (out / name).write_text(name)
    driver = tmp_path / "driver.sh"
    driver.write_text(section("pack") + f"OUT={out}\npack\n")
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert [p.name for p in out.iterdir()] == ["all.tgz"]
    listing = subprocess.run(["tar", "tzf", str(out / "all.tgz")], capture_output=True, text=True).stdout.split()
    assert {"./summary.txt", "./ladder.log", "./profile_main/streaming.json"} <= set(listing)


def test_route_profile_profiles_the_host_route_and_the_default_of_the_installed_build(tmp_path):
    driver = tmp_path / "driver.sh"
    driver.write_text(section("profile_cases") + section("route_profile") + """
mkdir() { :; }
bench() { echo "bench RH_CUDA_SOLVER=$RH_CUDA_SOLVER $*"; }
PY=bench OUT=/out
route_profile
""")
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    main, loop = run.stdout.splitlines()
    assert main.startswith("bench RH_CUDA_SOLVER=pipeline ") and loop.startswith("bench RH_CUDA_SOLVER=auto ")
    assert main.endswith("--out /out/profile_route_main/streaming_float64_none_device.json")
    assert loop.endswith("--out /out/profile_route_device_loop/streaming_float64_none_device.json")
    assert "--class streaming --dtype float64 --penalty none --input device" in loop


def test_sanitizer_gtests_runs_each_binary_under_each_tool_into_its_own_log_and_reports_a_failure(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "compute-sanitizer"  # run by `timeout`, so a program, not a shell function
    fake.write_text('#!/usr/bin/env bash\necho "sanitizer $*"\n[[ "$*" == *rh_cuda_gram_tests* ]] && exit 9\nexit 0\n')
    fake.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    driver = tmp_path / "driver.sh"
    driver.write_text(section("sanitizer_gtests") + f"""
ctest_build() {{ echo "built"; }}
CTEST_BUILD=/b OUT={out} PATH={bin_dir}:$PATH
(RH_SANITIZER_TOOLS="racecheck memcheck" sanitizer_gtests)  # a subshell, as gpu_check.sh's `run` has it (set -e)
echo "status $?"
""")
    run = subprocess.run(["bash", str(driver)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "built" and run.stdout.splitlines()[-1] == "status 9"
    for tool in ("racecheck", "memcheck"):
        for binary in ("rh_cuda_rung_tests", "rh_cuda_newton_replay_tests", "rh_cuda_gram_tests"):
            log = (out / f"sanitizer_gtests_{tool}_{binary}.log").read_text()
            assert log == f"sanitizer --tool {tool} --error-exitcode 9 /b/tests/{binary}\n"
            assert f"--- {tool} {binary}" in run.stdout
