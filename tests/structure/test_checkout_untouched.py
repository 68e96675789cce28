"""The suite's own hygiene, as a contributor meets it: a test that writes a relative path writes into a
folder of its own, and a run that writes into the checkout fails and names the file. Checked by running the
project's tests/conftest.py in a copy of a checkout (a plain folder: no git needed, as in an sdist)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"


def _checkout(root: Path, test_body: str) -> Path:
    (root / "tests").mkdir(parents=True)
    shutil.copy(CONFTEST, root / "tests" / "conftest.py")
    (root / "tests" / "test_writer.py").write_text(textwrap.dedent(test_body), encoding="utf-8")
    (root / "README.md").write_text("a file of the checkout\n", encoding="utf-8")
    return root


def _pytest(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_a_relative_path_lands_in_the_tests_own_folder(tmp_path: Path) -> None:
    root = _checkout(
        tmp_path / "checkout",
        """
        from pathlib import Path

        def test_writes_relative():
            Path("max_broadcast").mkdir()
            Path("max_broadcast", "model.onnx").write_bytes(b"x")
            assert Path("max_broadcast", "model.onnx").is_file()
        """,
    )
    before = _files(root)
    run = _pytest(root)
    assert run.returncode == 0, run.stdout + run.stderr
    assert _files(root) == before


@pytest.mark.slow
def test_a_run_that_writes_into_the_checkout_fails_naming_the_file(tmp_path: Path) -> None:
    root = _checkout(
        tmp_path / "checkout",
        """
        from pathlib import Path

        CHECKOUT = Path(__file__).resolve().parents[1]

        def test_writes_into_the_checkout():
            (CHECKOUT / "leak.txt").write_text("output")

        def test_changes_a_file_of_the_checkout():
            (CHECKOUT / "README.md").write_text("changed by a test, a longer text\\n")
        """,
    )
    run = _pytest(root)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    assert "the suite changed the checkout" in run.stdout
    assert "written: leak.txt" in run.stdout
    assert "changed: README.md" in run.stdout
