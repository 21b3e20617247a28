"""The native tree's structure, as rules a change cannot break silently
(spec/CONVENTIONS.md; issue 25, "The ABI at the edge"):

- the CUDA engine speaks core's types: only the C ABI's entry points
  (c_api.cu), its translations (abi_conversions.*) and its compile-time
  contract check include rh_cuda.h, and no other source names an ABI struct
  or constant;
- one line search and one LAMM in core: the line search's steps are walked
  by core/newton_driver.hpp through core/search_steps.hpp, and no CPU
  evaluator lists them itself;
- one Newton driver and one LAMM driver in native/ (issue 25): no CUDA
  source makes a solver decision (a line search's acceptance, the
  majorization test, LAMM's stall, momentum or slack, convergence); the
  CUDA engine runs core::damped_newton and core::lamm, on the device (the
  block solver) or on the host over its passes;
- no source file under native/ is longer than ~450 lines (kernel .inc files
  excepted): one concept per file;
- no CUDA source calls the aligned block barrier (`__syncthreads`): every
  kernel's helpers use block_barrier() (block_barrier.cuh says why: the
  block solver's driver warp reaches them from another branch).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[1] / "native"
CUDA_SOURCES = sorted(p for p in (NATIVE / "cuda" / "src").iterdir() if p.suffix in {".cu", ".cuh", ".cpp", ".hpp"})
ABI_EDGE = {"c_api.cu", "abi_conversions.cpp", "abi_conversions.hpp", "abi_contract.cpp"}
SOURCES = sorted(
    p for p in NATIVE.rglob("*")
    if p.suffix in {".cu", ".cuh", ".cpp", ".hpp", ".h"} and not p.relative_to(NATIVE).parts[0].startswith("build")
)
LONGEST = 450


def abi_names(source: str) -> list[str]:
    """The ABI's include, struct and constant names in `source`, comments aside."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    return re.findall(r'#include\s+"rh_cuda\.hp?p?"|\brh_cuda_[a-z_]+\b|\bRH_CUDA_(?!CHECK\b|LAUNCHED\b)[A-Z_0-9]+\b', code)


@pytest.mark.parametrize("path", [p for p in CUDA_SOURCES if p.name not in ABI_EDGE], ids=lambda p: p.name)
def test_only_the_abi_edge_knows_the_abi(path):
    assert abi_names(path.read_text()) == [], f"{path.name} uses the C ABI's names; translate in abi_conversions.cpp"


def test_the_abi_rule_sees_what_it_forbids():
    assert abi_names('#include "rh_cuda.h"\nvoid f(const rh_cuda_batch& b) { if (x == RH_CUDA_FLOAT64) {} }') == [
        '#include "rh_cuda.h"', "rh_cuda_batch", "RH_CUDA_FLOAT64"]
    assert abi_names("RH_CUDA_CHECK(call); // rh_cuda_batch in a comment\nRH_CUDA_LAUNCHED();") == []


def test_the_edge_translates():
    assert abi_names((NATIVE / "cuda" / "src" / "c_api.cu").read_text())  # the rule's subject exists


def test_no_cpu_evaluator_lists_the_line_search_steps_itself():
    for path in sorted((NATIVE / "cpu").rglob("*evaluator.hpp")):
        code = path.read_text()
        assert "kSmallestStep" not in code and "kLargestMajorizerStep" not in code, (
            f"{path.relative_to(NATIVE)} repeats the line search's schedule; ask core::SearchSteps")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(NATIVE)))
def test_no_native_source_is_longer_than_its_concept(path):
    lines = path.read_text().count("\n")
    assert lines <= LONGEST, f"{path.relative_to(NATIVE)} has {lines} lines: split it by concept"


# core/solver_rules.hpp's decisions: whoever calls one is a solver driver.
DECISIONS = ("plain_decrease", "majorization_holds", "majorization_bound", "step_converged", "lamm_stalled",
             "momentum_next", "rounding_slack", "kMajorizationSlack", "kSmallestStep", "kLargestMajorizerStep",
             "kMaxMajorizationTrials", "kStallWindow")


def decisions_in(source: str) -> list[str]:
    """The solver rules `source` calls or names, comments aside."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    return re.findall(r"\b(?:" + "|".join(DECISIONS) + r")\b", code)


@pytest.mark.parametrize("path", CUDA_SOURCES, ids=lambda p: p.name)
def test_no_cuda_source_makes_a_solver_decision(path):
    assert decisions_in(path.read_text()) == [], (
        f"{path.name} makes a solver decision; core::damped_newton and core::lamm make them")


def test_the_decision_rule_sees_what_it_forbids():
    assert decisions_in("if (core::plain_decrease(f, value)) // step_converged\n t /= 2; x < core::kSmallestStep") == [
        "plain_decrease", "kSmallestStep"]


def test_one_newton_driver_and_one_lamm_driver_in_native():
    definitions = {}
    for path in SOURCES:
        code = path.read_text()
        # a definition: the name's parameter list, then its body (a call ends with ";")
        for name in re.findall(r"\b(damped_newton|lamm)\s*\((?:[^;{()]|\([^;{()]*\))*\)[^;{()]*\{", code):
            definitions.setdefault(name, []).append(str(path.relative_to(NATIVE)))
    assert definitions == {"damped_newton": ["core/newton_driver.hpp"], "lamm": ["core/lamm_driver.hpp"]}


def aligned_barriers_in(source: str) -> list[str]:
    """The aligned block barriers `source` calls, comments aside."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    return re.findall(r"\b__syncthreads(?:_count|_and|_or)?\b", code)


@pytest.mark.parametrize("path", CUDA_SOURCES, ids=lambda p: p.name)
def test_no_cuda_source_calls_the_aligned_block_barrier(path):
    assert aligned_barriers_in(path.read_text()) == [], (
        f"{path.name} calls __syncthreads; use block_barrier() (block_barrier.cuh)")


def test_the_barrier_rule_sees_what_it_forbids():
    assert aligned_barriers_in("__syncthreads(); // __syncthreads in a comment\nif (__syncthreads_or(x)) {}") == [
        "__syncthreads", "__syncthreads_or"]
