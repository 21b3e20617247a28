#!/usr/bin/env python3
"""The markdown table of a native_cuda benchmark record (docs/native-cuda.md
and the README carry it): milliseconds per update, median of the rounds.

    python scripts/benchmarks/cuda_table.py docs/benchmarks/native_cuda_h200.json [--compact]

--compact: one row per class, "cuda / [device-resident cuda /] cpu" per dtype
and penalty (the README's).
"""

from __future__ import annotations

import json
import sys


def rows(record: dict) -> list[str]:
    device = any("native_cuda_device" in case["engines"] for case in record["cases"])
    graphs = any("native_cuda_device_graphs" in case["engines"] for case in record["cases"])
    cupy = any("cupy" in case["engines"] for case in record["cases"])
    out = ["| class (rows x features, batch) | dtype | penalty | native_cuda | "
           + ("native_cuda, device-resident | " if device else "")
           + ("device-resident, cuda_graphs | " if graphs else "") + ("cupy backend | " if cupy else "")
           + "native_cpu (16 cores) | numpy | syncs / iterations (last batch) |",
           "|---|---|---|---:|" + ("---:|" if device else "") + ("---:|" if graphs else "") + ("---:|" if cupy else "")
           + "---:|---:|---|"]
    for case in record["cases"]:
        n, p = case["shape"]
        engines = case["engines"]

        def ms(name: str) -> str:
            return f"{engines[name]['per_update_ms']:.2f}" if name in engines else "-"

        last = case["native_cuda_last_batch"]
        out.append(f"| {case['class']} ({n:,} x {p}, {case['batch']:,}) | {case['dtype']} | {case['penalty']} "
                   f"| {ms('native_cuda')} | " + (f"{ms('native_cuda_device')} | " if device else "")
                   + (f"{ms('native_cuda_device_graphs')} | " if graphs else "") + (f"{ms('cupy')} | " if cupy else "")
                   + f"{ms('native_cpu')} | {ms('numpy')} "
                   f"| {last['host_syncs']} / {last['iterations']} |")
    return out


def compact_rows(record: dict) -> list[str]:
    """One row per class; each cell the engines' figures in the order host-fed cuda /
    device-resident cuda / device-resident cuda with graphs / cpu (those recorded)."""
    columns = [("float64", "none"), ("float64", "l1"), ("float32", "none"), ("float32", "l1")]
    engines = [e for e in ("native_cuda", "native_cuda_device", "native_cuda_device_graphs", "native_cpu")
               if any(e in case["engines"] for case in record["cases"])]
    out = ["| class (rows x features, batch) | f64 none | f64 l1 | f32 none | f32 l1 |", "|---|---:|---:|---:|---:|"]
    classes: dict[str, dict] = {}
    for case in record["cases"]:
        classes.setdefault(case["class"], {})[case["dtype"], case["penalty"]] = case
    for cases in classes.values():
        first = next(iter(cases.values()))
        n, p = first["shape"]
        cells = [" / ".join(f"{cases[c]['engines'][e]['per_update_ms']:.2f}" for e in engines) for c in columns]
        out.append(f"| {first['class']} ({n:,} x {p}, {first['batch']:,}) | " + " | ".join(cells) + " |")
    return out


if __name__ == "__main__":
    record = json.loads(open(sys.argv[1]).read())
    print("\n".join(compact_rows(record) if "--compact" in sys.argv[2:] else rows(record)))
