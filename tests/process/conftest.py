"""Process tests start sonnx-check as a separate process and signal it: they need Linux's /proc to see
every process it started, and they are marked so a quick run can leave them out (``-m "not process"``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "compare"))  # its model builders (models.py)

from procs import Run  # noqa: E402 - found through the path above


@pytest.fixture
def runs() -> Iterator[list[Run]]:
    """The runs a test starts (append them): whatever the outcome, nothing they started outlives it."""
    started: list[Run] = []
    yield started
    for run in started:
        run.cleanup()
