"""The pre-commit hook: its definition matches the installed command and selects models by name, and (when
asked, because it installs a fresh environment) `pre-commit try-repo` runs it from a clean clone."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from clikit import conforming_maxpool, save, torchscript_export

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / ".pre-commit-hooks.yaml"


def _field(name: str) -> str:
    match = re.search(rf"^\s+{name}: (.+)$", HOOKS.read_text(encoding="utf-8"), re.M)
    assert match, name
    return match[1].strip().strip("'\"")


def test_hook_runs_the_installed_command_on_onnx_files() -> None:
    assert re.search(r"^- id: sonnx-check$", HOOKS.read_text(encoding="utf-8"), re.M)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    command, *options = _field("entry").split()
    assert command in scripts
    # pre-commit names every file, and `args: [--fix]` must not let the unfixed model be committed
    assert options == ["--force-exclude", "--exit-non-zero-on-fix"]
    assert _field("language") == "python"
    files = re.compile(_field("files"))
    for name in ("model.onnx", "models/a/b.onnx", "EXPORT.ONNX", "net.Onnx"):
        assert files.search(name), name
    for name in ("model.onnx.data", "model.onnx.txt", "notes.md", "onnx"):
        assert not files.search(name), name


@pytest.mark.skipif(
    not (os.environ.get("SONNX_CHECK_TRY_PRE_COMMIT") and shutil.which("pre-commit") and shutil.which("git")),
    reason="set SONNX_CHECK_TRY_PRE_COMMIT=1 with pre-commit installed (it builds a hook environment)",
)
def test_pre_commit_try_repo_from_a_clean_clone(tmp_path: Path) -> None:
    def git(*args: str, cwd: Path) -> None:
        subprocess.run(
            ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args], cwd=cwd, check=True
        )

    clone = tmp_path / "clone"
    git("clone", "-q", str(ROOT), str(clone), cwd=tmp_path)
    demo = tmp_path / "demo"
    demo.mkdir()
    git("init", "-q", cwd=demo)
    save(torchscript_export(), demo / "models" / "export.onnx")
    save(conforming_maxpool(), demo / "models" / "clean.onnx")
    git("add", "-A", cwd=demo)
    git("commit", "-qm", "models", cwd=demo)
    run = subprocess.run(
        ["pre-commit", "try-repo", str(clone), "sonnx-check", "--all-files"],
        cwd=demo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "MaxPool.R2 error MaxPool '/pool/MaxPool' (node #2)" in run.stdout
    assert "models/clean.onnx conforms" in run.stdout
