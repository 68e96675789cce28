import sys
from pathlib import Path

import pytest

# The builders and seed_data modules are shared by test folders without being a package of the project.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def _no_github_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite may itself run inside GitHub Actions: no test may append to that run's real step summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run in which no test passed (everything skipped or deselected) is not a green CI: fail it, as
    pytest already does when nothing is collected."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == pytest.ExitCode.OK and reporter is not None and not reporter.stats.get("passed"):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
