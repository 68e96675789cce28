from __future__ import annotations

import sys
from pathlib import Path

import pytest

# clikit (running the command, realistic models) lives in tests/cli and is shared by these folders.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))

from clikit import WAIVER_REASON, model_repository, write_pyproject  # noqa: E402


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model repository whose configuration waives one finding (MaxPool.R2 in models/legacy/old.onnx)."""
    root = tmp_path_factory.mktemp("repo")
    model_repository(root)
    write_pyproject(
        root,
        f"""
        [tool.sonnx-check]
        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.R2"
        models = "models/legacy/old.onnx"
        node = "/backbone/pool1"
        reason = "{WAIVER_REASON}"
        """,
    )
    return root
