from __future__ import annotations

import sys
from pathlib import Path

import pytest

# clikit (running the command, realistic models) lives in tests/cli and is shared by these folders.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))

from clikit import waived_repository  # noqa: E402


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model repository whose configuration waives one finding (MaxPool.R2 in models/legacy/old.onnx)."""
    return waived_repository(tmp_path_factory.mktemp("repo"))
