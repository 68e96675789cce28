"""The fuzzer of what a runtime hands back (fuzz_outputs.py), bounded so the suite stays fast; a longer run:
``python tests/process/fuzz_outputs.py --cases 200 --seed 1``."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_outputs import run_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [
    pytest.mark.slow,  # real processes signalled and fuzzed: CI runs them (-m ""), the README command not
    pytest.mark.process,
    pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc"),
]


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**31), mode=st.sampled_from(["command", "saved"]))
def test_whatever_a_runtime_hands_back_the_run_ends_clean(
    seed: int, mode: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outcome = run_case(seed, tmp_path_factory.mktemp("case"), mode)
    assert outcome.problems == [], (seed, mode, outcome.stderr[-3000:])


def test_the_fuzzer_reaches_the_bounded_reads(tmp_path: Path) -> None:
    """Guards the fuzzer itself: its files reach the refusals they are there for (a fuzzer whose planted
    files were never read would pass vacuously)."""
    reasons: list[str] = []
    for seed, mode in ((5, "command"), (2, "saved"), (3, "saved"), (7, "saved")):
        folder = tmp_path / f"{mode}{seed}"
        folder.mkdir()
        outcome = run_case(seed, folder, mode)
        assert outcome.problems == [], (seed, mode, outcome.stderr[-3000:])
        reasons.extend(outcome.reasons)
    text = "\n".join(reasons)
    found = {
        cause
        for cause in ("is not a regular file", "is a symbolic link", "bytes, more than")
        if cause in text
    }
    assert len(found) == 3, text
