"""The configuration and report-target fuzzer, bounded so the suite stays fast; tests/robustness/
fuzz_config.py runs it longer."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from fuzz_config import TARGETS, UNTRUSTED_SHAPES, configuration, run_case
from fuzz_git import GIT_STATES, run_git_case
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
        "huge", "truncated", "flipped", *UNTRUSTED_SHAPES,
    }  # fmt: skip


@pytest.mark.parametrize("shape", UNTRUSTED_SHAPES)
def test_every_untrusted_configuration_shape(shape: str) -> None:
    """A discovered file naming a program, a path outside its folder or a lifted limit: refused, never run."""
    rng = random.Random(shape)
    for _ in range(3):
        case_rng = random.Random(rng.getrandbits(64))
        with tempfile.TemporaryDirectory() as folder:
            outcome = run_case(_forcing(case_rng, shape), Path(folder))
        assert outcome.shape == shape
        assert not outcome.is_bug, (outcome.target, outcome.problems, outcome.stderr)


def _forcing(rng: random.Random, shape: str) -> random.Random:
    """``rng`` whose first configuration is of ``shape`` (the shape is drawn first)."""
    state = rng.getstate()
    while configuration(rng)[1] != shape:
        state = rng.getstate()
    rng.setstate(state)
    return rng


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False), state=st.sampled_from(GIT_STATES))
def test_git_states_are_judged_from_contents_and_never_silently(rng: random.Random, state: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        outcome = run_git_case(rng, Path(folder), state=state)
    assert not outcome.is_bug, (outcome.state, outcome.problems)
