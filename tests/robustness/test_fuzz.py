"""The mutation fuzzer, bounded so the suite stays fast; tests/robustness/fuzz.py runs it longer."""

from __future__ import annotations

import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from fuzz import MUTATIONS, run_case, seed_models
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow  # the model fuzzer: CI runs it, and -m "" does

SEEDS = seed_models()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(SEEDS),
    rng=st.randoms(use_true_random=False),
    count=st.integers(min_value=1, max_value=6),
)
def test_mutated_models_never_end_in_an_internal_error(seed: Path, rng: random.Random, count: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        outcome = run_case(seed, Path(folder), rng, count)
    assert not outcome.is_bug, (outcome.seed_model, outcome.mutations, outcome.output[-3000:])


def test_the_fuzzer_reaches_every_mutation_and_many_rules() -> None:
    """Guards the fuzzer itself: a fuzzer whose mutations all fail to apply would pass vacuously."""
    rng = random.Random(0)
    applied: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    for _ in range(120):
        with tempfile.TemporaryDirectory() as folder:
            outcome = run_case(rng.choice(SEEDS), Path(folder), rng, 3, compare=False)
        applied.update(outcome.mutations)
        rules.update({f["rule"] for m in json.loads(outcome.report)["models"] for f in m["findings"]})
    assert len(SEEDS) >= 20
    assert {m.__name__ for m in MUTATIONS} <= set(applied)
    assert len(rules) >= 15, rules
    # the hostile shapes reach the rules that judge them
    assert {"GRAPH.function", "MODEL.external-data", "MODEL.load"} <= set(rules), rules
