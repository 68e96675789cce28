"""The report and export target fuzzer, bounded so the suite stays fast; tests/robustness/fuzz_targets.py runs
it longer."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from fuzz_targets import FAULTS, OPTIONS, SHAPES, run_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_hostile_targets_and_disk_faults_never_crash_or_touch_other_files(rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as folder:
        outcome = run_case(rng, Path(folder))
    assert not outcome.is_bug, (
        outcome.option,
        outcome.shape,
        outcome.fault,
        outcome.problems,
        outcome.stderr,
    )


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("option", ["--evidence", "--export-inputs", "--export-suite"])
def test_every_shape_for_a_report_and_both_exports(option: str, shape: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        outcome = run_case(random.Random(f"{option}{shape}"), Path(folder), option=option, shape=shape)
    assert not outcome.is_bug, (outcome.fault, outcome.problems, outcome.stderr)


def test_the_fuzzer_draws_every_option_shape_and_fault() -> None:
    """Guards the fuzzer itself: a generator stuck on one shape would pass vacuously."""
    rng = random.Random(0)
    drawn = set()
    for _ in range(300):
        drawn.add(rng.choice(OPTIONS))
        drawn.add(rng.choice(SHAPES))
        drawn.add(rng.choice(FAULTS))
    assert drawn == {*OPTIONS, *SHAPES, *FAULTS}
