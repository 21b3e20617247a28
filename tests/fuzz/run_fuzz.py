"""Run the fuzz harnesses (harnesses.py), bounded.

    python tests/fuzz/run_fuzz.py [--seconds 20] [--mode auto|atheris|loop] [--iterations N] [harness ...]

atheris (coverage-guided, libFuzzer) when it is installed, each harness in
its own process for --seconds, starting from its committed corpus
tests/fuzz/corpus/<harness>/ (new inputs go to a temporary folder, the
committed corpus is not changed). Without atheris (or --mode loop): a
deterministic loop, seed 0, over the corpus and --iterations mutations of it.
A crash, a hang (libFuzzer's -timeout) or an exception outside the documented
ones fails the run; the input is written to fuzz-failure-<harness>.bin (or
libFuzzer's crash-* file) in the current folder.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"


def corpus(name: str) -> list[bytes]:
    return [path.read_bytes() for path in sorted((CORPUS / name).iterdir()) if path.is_file()]


def mutate(data: bytes, rng: random.Random, seeds: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        action = rng.randrange(6)
        at = rng.randrange(len(out) + 1)
        if action == 0 and out:
            out[min(at, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif action == 1:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif action == 2 and out:
            del out[at : at + rng.randint(1, 16)]
        elif action == 3:
            out = out[:at]
        elif action == 4 and out:
            out[min(at, len(out) - 1)] = rng.choice([0, 0xFF, 0x7F, 0x80, ord(","), ord("\n"), ord("-")])
        else:
            other = rng.choice(seeds)
            out[at:] = other[rng.randrange(len(other) + 1):]
    return bytes(out)


def loop(name: str, iterations: int, seed: int = 0) -> int:
    from harnesses import HARNESSES

    harness, seeds = HARNESSES[name], corpus(name)
    rng = random.Random(seed)
    inputs = list(seeds) + [mutate(rng.choice(seeds), rng, seeds) for _ in range(iterations)]
    for index, data in enumerate(inputs):
        try:
            harness(data)
        except Exception:
            failure = Path(f"fuzz-failure-{name}.bin")
            failure.write_bytes(data)
            print(f"{name}: input {index} failed; written to {failure}", file=sys.stderr)
            raise
    print(f"{name}: {len(inputs)} inputs (corpus {len(seeds)}, seed {seed}), no failure")
    return 0


def atheris_worker(name: str, libfuzzer_args: list[str]) -> None:
    import atheris

    with atheris.instrument_imports(include=["renewable_huber", "harnesses"]):
        from harnesses import HARNESSES
    atheris.Setup([sys.argv[0], *libfuzzer_args], HARNESSES[name])
    atheris.Fuzz()


def run_atheris(name: str, seconds: int) -> int:
    with tempfile.TemporaryDirectory(prefix=f"rh-fuzz-{name}-") as fresh:
        args = [fresh, str(CORPUS / name), f"-max_total_time={seconds}", "-timeout=30", "-rss_limit_mb=4096",
                "-print_final_stats=1"]
        child = subprocess.run([sys.executable, __file__, "--worker", name, "--", *args])
    print(f"{name}: atheris {seconds} s, exit {child.returncode}")
    return child.returncode


def main() -> int:
    sys.path.insert(0, str(HERE))
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        atheris_worker(sys.argv[2], sys.argv[4:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("harness", nargs="*", default=["checkpoint", "checkpoint_fields", "validation", "readers"])
    parser.add_argument("--mode", choices=("auto", "atheris", "loop"), default="auto")
    parser.add_argument("--seconds", type=int, default=20, help="per harness, atheris mode")
    parser.add_argument("--iterations", type=int, default=2000, help="mutations per harness, loop mode")
    args = parser.parse_args()
    mode = args.mode
    if mode == "auto":
        try:
            import atheris  # noqa: F401

            mode = "atheris"
        except ImportError:
            mode = "loop"
            print("atheris is not installed: the deterministic loop runs instead")
    failed = 0
    for name in args.harness:
        code = run_atheris(name, args.seconds) if mode == "atheris" else loop(name, args.iterations)
        failed = failed or code
    return failed


if __name__ == "__main__":
    sys.exit(main())
