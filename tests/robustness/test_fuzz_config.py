"""The configuration and report-target fuzzer, bounded so the suite stays fast; tests/robustness/
fuzz_config.py runs it longer."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from fuzz_config import TARGETS, configuration, run_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_hostile_configurations_and_targets_never_crash_hang_or_touch_other_files(rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as folder:
        outcome = run_case(rng, Path(folder))
    assert not outcome.is_bug, (outcome.shape, outcome.target, outcome.problems, outcome.stderr)


@pytest.mark.parametrize("kind", TARGETS)
def test_every_report_target(kind: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        outcome = run_case(random.Random(kind), Path(folder), target_kind=kind)
    assert not outcome.is_bug, (outcome.shape, outcome.problems, outcome.stderr)


def test_the_fuzzer_draws_every_shape() -> None:
    """Guards the fuzzer itself: a generator stuck on one shape would pass vacuously."""
    rng = random.Random(0)
    shapes = {configuration(rng)[1] for _ in range(400)}
    assert shapes == {
        "valid", "deep", "deep-other-tool", "dotted-key", "dotted-header", "random-keys", "bytes", "utf16",
        "huge", "truncated", "flipped",
    }  # fmt: skip
