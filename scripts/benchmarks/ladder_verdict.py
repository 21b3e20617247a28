"""The verdict of a pending ladder (gpu_check.sh ladder's
pending_ladder_*.json, written by benchmark_cpu_engines.py): for every case
and every rung, the median and range of the per-round paired ratios
first-engine time / rung time (above 1: the rung is faster), and, where the
ladder ran a control (the first engine built twice, `main_again`), whether
the rung stood outside the noise that control shows in the same lease.

A rung is "faster" in a case when its median ratio is above the control's
highest per-round ratio and above 1, "slower" when below the control's
lowest and below 1, else "within noise". Without a control the verdict is
"no control". A rung a case does not touch (its path never runs there) is a
second control: its verdicts should read "within noise".

    python scripts/benchmarks/ladder_verdict.py docs/benchmarks/pending_ladder_<...>.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Iterable

CONTROL = "main_again"


def paired_ratios(first: list[float], other: list[float]) -> list[float]:
    """Per-round first / other (rounds run the engines in turn: the pairs share a round)."""
    return [a / b for a, b in zip(first, other) if b > 0]


def verdicts(record: dict) -> list[dict]:
    rows = []
    for case in record["cases"]:
        seconds = case["seconds"]
        names = list(seconds)
        first = names[0]
        control = paired_ratios(seconds[first], seconds[CONTROL]) if CONTROL in seconds else None
        for name in names[1:]:
            if name == CONTROL:
                continue
            ratios = paired_ratios(seconds[first], seconds[name])
            if not ratios:
                continue
            median = statistics.median(ratios)
            if control:
                if median > max(control) and median > 1.0:
                    verdict = "faster"
                elif median < min(control) and median < 1.0:
                    verdict = "slower"
                else:
                    verdict = "within noise"
            else:
                verdict = "no control"
            rows.append({"class": case["class"], "dtype": case["dtype"], "penalty": case["penalty"], "rung": name,
                         "median": median, "low": min(ratios), "high": max(ratios),
                         "control": (min(control), max(control)) if control else None, "verdict": verdict})
    return rows


def format_row(row: dict) -> str:
    control = f"control {row['control'][0]:.2f}-{row['control'][1]:.2f}" if row["control"] else "no control"
    return (f"{row['class']:<10} {row['dtype']:<8} {row['penalty']:<5} {row['rung']:<24} "
            f"{row['median']:.2f}x ({row['low']:.2f}-{row['high']:.2f})  {control}  {row['verdict']}")


def main(argv: Iterable[str] | None = None) -> int:
    for path in list(sys.argv[1:] if argv is None else argv):
        for row in verdicts(json.loads(Path(path).read_text())):
            print(format_row(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
