import sys
from pathlib import Path

import pytest

# clikit (running the command, realistic models) lives in tests/cli and is shared by these folders.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """A suite run inside GitHub Actions must not append its test runs to the job's real step summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
