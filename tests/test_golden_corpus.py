"""Golden corpora replayed through every backend available here.

The project corpus always runs; the external contract corpus
(``../shared/golden/contract_corpus_v1.json``) runs whenever it exists.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from differential import EXTERNAL_CORPUS, PROJECT_CORPUS, ROOT, load_cases, replay_case
from renewable_huber.backends import availability

CPU_BACKENDS = ["numpy", "native_cpu"]


def _backend_param(name: str):
    available, hint = availability(name)
    return pytest.param(name, id=name, marks=[] if available else pytest.mark.skip(reason=f"{name}: {hint}"))


BACKENDS = [_backend_param(name) for name in CPU_BACKENDS]
PROJECT_CASES = load_cases(PROJECT_CORPUS)
EXTERNAL_CASES = load_cases(EXTERNAL_CORPUS) if EXTERNAL_CORPUS.exists() else []


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", PROJECT_CASES, ids=[c["id"] for c in PROJECT_CASES])
def test_project_corpus(case, backend):
    replay_case(case, backend, oracle=backend == "numpy")


@pytest.mark.skipif(not EXTERNAL_CASES, reason="external corpus ../shared/golden/contract_corpus_v1.json not present")
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", EXTERNAL_CASES or [None], ids=[c["id"] for c in EXTERNAL_CASES] or ["absent"])
def test_external_corpus(case, backend):
    replay_case(case, backend, oracle=backend == "numpy")


@pytest.mark.skipif(not EXTERNAL_CASES, reason="external corpus not present")
def test_project_corpus_agrees_with_external_on_shared_cases():
    project = {case["id"]: case for case in PROJECT_CASES}
    assert len(PROJECT_CASES) >= len(EXTERNAL_CASES)
    for external in EXTERNAL_CASES:
        ours = project[external["id"]]
        assert ours["config"] == external["config"]
        assert ours["batches"] == external["batches"]
        assert ours["probe_X"] == external["probe_X"]
        for mine, theirs in zip(ours["expected"]["states"], external["expected"]["states"]):
            for key in ("coefficients", "information"):
                np.testing.assert_allclose(mine[key], theirs[key], rtol=external["rtol"], atol=external["atol"])
        np.testing.assert_allclose(
            ours["expected"]["predictions"], external["expected"]["predictions"], rtol=external["rtol"], atol=external["atol"]
        )


def test_generator_check_passes():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "generate_native_golden.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _shortened(case, **diagnostics_changes):
    import copy

    broken = copy.deepcopy(case)
    if diagnostics_changes:
        broken["expected"]["states"][0]["diagnostics"].update(diagnostics_changes)
    else:
        broken["expected"]["states"].pop()
    return broken


def test_the_harness_refuses_fewer_expected_states_than_batches():
    """zip() would silently replay only the batches that have an expected state."""
    case = next(c for c in PROJECT_CASES if len(c["batches"]) > 1)
    with pytest.raises(AssertionError, match="expected states"):
        replay_case(_shortened(case), "numpy", oracle=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_harness_compares_routes_and_the_fallback_flag(backend):
    case = next(c for c in PROJECT_CASES if c["id"] == "rank_deficient_lstsq_f64")
    with pytest.raises(AssertionError):
        replay_case(_shortened(case, used_regularized_fallback=False), backend, oracle=False)
    with pytest.raises(AssertionError):
        replay_case(_shortened(case, solve_route="lu", used_regularized_fallback=True), backend, oracle=False)
    with pytest.raises(AssertionError):
        replay_case(_shortened(case, stop_reason="max_iter"), "numpy", oracle=True)
