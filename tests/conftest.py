import os
import sys
from pathlib import Path

import pytest

# The builders and seed_data modules are shared by test folders without being a package of the project.
sys.path.insert(0, str(Path(__file__).parent))

CHECKOUT = Path(__file__).resolve().parent.parent
# Written by the tools that run the suite, not by a test: pytest's and hypothesis's caches, bytecode,
# virtual environments and build output (the folders .gitignore names). A virtual environment is recognised by
# its pyvenv.cfg, whatever its name.
_NOT_THE_CHECKOUT = {
    ".git", ".pytest_cache", ".hypothesis", ".ruff_cache", ".mypy_cache", "__pycache__", "build", "dist",
}  # fmt: skip


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under the checkout with its size and modification time: a plain walk, so that the guard
    works in a git clone, in an unpacked sdist and in a folder that is no repository at all."""
    files: dict[str, tuple[int, int]] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [
            d
            for d in dirs
            if d not in _NOT_THE_CHECKOUT
            and not d.endswith(".egg-info")
            and not (Path(folder, d) / "pyvenv.cfg").exists()
        ]
        for name in names:
            path = Path(folder, name)
            if name.endswith((".pyc", ".coverage")) or name.startswith(".coverage"):
                continue
            try:
                stat = path.lstat()
            except OSError:
                continue
            files[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return files


def _changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    added = [f"written: {p}" for p in sorted(after.keys() - before.keys())]
    removed = [f"removed: {p}" for p in sorted(before.keys() - after.keys())]
    changed = [f"changed: {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return added + removed + changed


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_CHECKOUT_BEFORE] = _snapshot(CHECKOUT)


_CHECKOUT_BEFORE = pytest.StashKey[dict[str, tuple[int, int]]]()


@pytest.fixture(autouse=True)
def _in_own_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in a fresh empty folder of its own, so that a relative path it (or the command it runs)
    writes can never land in the checkout. A folder apart from ``tmp_path``, so that a test that lists its
    ``tmp_path`` sees only what it put there."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture(autouse=True)
def _no_github_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite may itself run inside GitHub Actions: no test may append to that run's real step summary."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run in which no test passed (everything skipped or deselected) is not a green CI: fail it, as
    pytest already does when nothing is collected. And a run that wrote into, changed or removed a file of
    the checkout fails, naming the files: tests write only in their own temporary folders."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == pytest.ExitCode.OK and reporter is not None and not reporter.stats.get("passed"):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    before = session.config.stash.get(_CHECKOUT_BEFORE, None)
    if before is None:
        return
    changes = _changes(before, _snapshot(CHECKOUT))
    if changes:
        if reporter is not None:
            reporter.write_sep("=", "the suite changed the checkout", red=True)
            for line in changes[:50]:
                reporter.write_line(line)
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
