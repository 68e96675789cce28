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


TRY = pytest.mark.skipif(
    not (os.environ.get("SONNX_CHECK_TRY_PRE_COMMIT") and shutil.which("pre-commit") and shutil.which("git")),
    reason="set SONNX_CHECK_TRY_PRE_COMMIT=1 with pre-commit installed (it builds a hook environment)",
)


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.email=t@example.invalid",
            "-c",
            "user.name=t",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def _readme_snippet() -> str:
    """The .pre-commit-config.yaml the README shows, as a user copies it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```yaml\n(# \.pre-commit-config\.yaml\n.*?)```", readme, re.S)
    assert match, "README: the pre-commit snippet"
    return match[1]


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A clone of this repository with the release tag the README's snippet names (CI's checkout may
    have no tags: the tag is made where the release would make it, on the checked-out commit)."""
    tag = re.search(r"rev: (\S+)", _readme_snippet())[1]  # type: ignore[index]
    clone = tmp_path_factory.mktemp("release") / "sonnx-check"
    _git("clone", "-q", str(ROOT), str(clone), cwd=clone.parent)
    subprocess.run(["git", "tag", "-d", tag], cwd=clone, capture_output=True, check=False)
    _git("tag", tag, cwd=clone)
    return clone, tag


def _project(root: Path, clone: Path, extra: str = "") -> Path:
    snippet = _readme_snippet()
    snippet = re.sub(r"repo: \S+", f"repo: {clone}", snippet)
    snippet = snippet.replace("        # args: [--fail-on, warning]", extra or "        # args: []")
    root.mkdir()
    _git("init", "-q", cwd=root)
    (root / ".pre-commit-config.yaml").write_text(snippet, encoding="utf-8")
    return root


def _pre_commit(root: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PRE_COMMIT_HOME"] = str(root.parent / "pre-commit-home")  # one hook environment for the module
    return subprocess.run(
        ["pre-commit", "run", "--all-files"], cwd=root, capture_output=True, text=True, check=False, env=env
    )


@TRY
def test_the_readme_snippet_pinned_at_the_tag_blocks_a_violating_model(
    released: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    clone, _ = released
    demo = _project(tmp_path_factory.mktemp("demo") / "repo", clone)
    save(torchscript_export(), demo / "models" / "export.ONNX")
    save(conforming_maxpool(), demo / "models" / "clean.onnx")
    _git("add", "-A", cwd=demo)
    run = _pre_commit(demo)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "MaxPool.R2 error [*] MaxPool '/pool/MaxPool' (node #2)" in run.stdout
    assert "models/clean.onnx conforms" in run.stdout and "Failed" in run.stdout


@TRY
def test_the_readme_snippet_passes_a_conforming_model(
    released: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    clone, _ = released
    demo = _project(tmp_path_factory.mktemp("demo") / "repo", clone)
    save(conforming_maxpool(), demo / "models" / "clean.onnx")
    _git("add", "-A", cwd=demo)
    run = _pre_commit(demo)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Passed" in run.stdout


@TRY
def test_the_fix_hook_explains_what_to_do(
    released: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    clone, _ = released
    demo = _project(tmp_path_factory.mktemp("demo") / "repo", clone, extra="        args: [--fix]")
    save(torchscript_export(), demo / "models" / "export.onnx")
    _git("add", "-A", cwd=demo)
    run = _pre_commit(demo)
    assert run.returncode == 1, run.stdout + run.stderr
    assert (demo / "models" / "export.fixed.onnx").is_file()
    assert (
        "replace it with the fixed one and stage it (mv models/export.fixed.onnx models/export.onnx && "
        "git add models/export.onnx), then commit again" in run.stdout + run.stderr
    )


@TRY
def test_the_hook_blocks_a_model_staged_without_its_weights(
    released: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    clone, _ = released
    demo = _project(tmp_path_factory.mktemp("demo") / "repo", clone)
    (demo / "models").mkdir()
    for name in ("external_weights.onnx", "external_weights.onnx.data"):
        shutil.copyfile(ROOT / "sample_models" / "conforming" / name, demo / "models" / name)
    _git("add", ".pre-commit-config.yaml", "models/external_weights.onnx", cwd=demo)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PRE_COMMIT_HOME"] = str(demo.parent / "pre-commit-home")
    run = subprocess.run(
        ["pre-commit", "run"], cwd=demo, capture_output=True, text=True, check=False, env=env
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "'external_weights.onnx.data' is not in git's index" in run.stdout
