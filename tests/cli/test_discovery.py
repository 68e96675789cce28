"""Which files a folder scan checks: sorted *.onnx files, minus hidden folders, earlier --fix outputs,
what git ignores and the configuration's `exclude`; named files always, unless --force-exclude and the
user's own `exclude` skip them; a tree a
thousand folders deep is walked without exhausting Python's stack."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
from clikit import conforming_maxpool, maxpool_r2, run_cli, save, write_pyproject

from sonnx_check.discovery import discover


def _touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


def _found(root: Path, **options: object) -> list[str]:
    return [os.path.relpath(t.path, root) for t in discover([str(root)], **options).targets]  # type: ignore[arg-type]


def test_scan_is_sorted_and_skips_hidden_folders_and_fix_outputs(tmp_path: Path) -> None:
    _touch(tmp_path, "b/z.onnx", "a/y.onnx", "a/x.onnx", "a/notes.txt", ".cache/c.onnx", "a/x.fixed.onnx")
    found = discover([str(tmp_path), str(tmp_path / "missing.onnx")])
    names = [os.path.relpath(t.path, tmp_path) for t in found.targets]
    assert names == ["a/x.onnx", "a/y.onnx", "b/z.onnx", "missing.onnx"]
    assert found.targets[-1].error == "no such file or folder"
    assert [(os.path.relpath(p, tmp_path), why) for p, why in found.skipped] == [
        ("a/x.fixed.onnx", "it is a --fix output")
    ]
    assert found.scanned_folder


def test_named_files_are_checked_even_with_force_exclude(tmp_path: Path) -> None:
    # *.fixed.onnx is a folder walk's rule: a model handed over by name (as pre-commit does) is checked
    _touch(tmp_path, "m.fixed.onnx", ".hidden/h.onnx")
    named = [str(tmp_path / "m.fixed.onnx"), str(tmp_path / ".hidden" / "h.onnx")]
    assert [t.path for t in discover(named).targets] == named
    forced = discover(named, force_exclude=True)
    assert [t.path for t in forced.targets] == named and forced.skipped == []
    assert not forced.scanned_folder


def test_force_exclude_does_not_apply_gitignore_to_named_files(tmp_path: Path) -> None:
    # a model force-added (git add -f) under an ignored folder is in the commit: the hook must check it
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("vendor/\n*.tmp.onnx\n", encoding="utf-8")
    _touch(tmp_path, "vendor/v.onnx", "m.tmp.onnx", "m.onnx")
    previous = os.getcwd()
    os.chdir(tmp_path)
    try:
        found = discover(["vendor/v.onnx", "m.tmp.onnx", "m.onnx"], force_exclude=True)
        scanned = discover(["."])
    finally:
        os.chdir(previous)
    assert [t.path for t in found.targets] == ["vendor/v.onnx", "m.tmp.onnx", "m.onnx"]
    assert [t.path for t in scanned.targets] == ["./m.onnx"]  # a folder walk still follows .gitignore


def test_named_violating_models_fail_the_hook(tmp_path: Path) -> None:
    """What pre-commit runs (``--force-exclude --exit-non-zero-on-fix`` and the staged names) on a violating
    model named ``x.fixed.onnx`` and on one force-added under a .gitignore'd folder: both checked, exit 1."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build/\n", encoding="utf-8")
    save(maxpool_r2(), tmp_path / "x.fixed.onnx")
    save(maxpool_r2(), tmp_path / "build" / "b.onnx")
    hook = ["--force-exclude", "--exit-non-zero-on-fix", "--format", "json"]
    for name in ("x.fixed.onnx", "build/b.onnx"):
        result = run_cli([*hook, name], cwd=tmp_path)
        assert result.code == 1, (name, result.stdout, result.stderr)
        assert [m["path"] for m in json.loads(result.stdout)["models"]] == [name]


def test_a_run_that_checks_no_model_says_so(tmp_path: Path) -> None:
    write_pyproject(tmp_path, '[tool.sonnx-check]\nexclude = ["legacy"]\n')
    save(maxpool_r2(), tmp_path / "legacy" / "old.onnx")
    result = run_cli(["--force-exclude", "legacy/old.onnx"], cwd=tmp_path)
    assert result.code == 0
    assert "warning: 0 models checked: every path given was skipped (excluded by" in result.stderr
    assert 'exclude "legacy"' in result.stderr
    checked = run_cli(["legacy/old.onnx"], cwd=tmp_path)  # without --force-exclude: named, so checked
    assert checked.code == 1 and "0 models checked" not in checked.stderr


def test_exclude_in_the_configuration(tmp_path: Path) -> None:
    write_pyproject(
        tmp_path, '[tool.sonnx-check]\nexclude = ["third_party", "models/legacy/**", "*.tmp.onnx"]\n'
    )
    for name in ("models/a.onnx", "models/legacy/b.onnx", "third_party/c.onnx", "models/d.tmp.onnx"):
        save(conforming_maxpool(), tmp_path / name)
    result = run_cli(["--format", "json", "."], cwd=tmp_path)
    assert [m["path"] for m in json.loads(result.stdout)["models"]] == ["./models/a.onnx"]
    named = run_cli(
        ["--format", "json", "--force-exclude", "models/d.tmp.onnx", "models/a.onnx"], cwd=tmp_path
    )
    assert [m["path"] for m in json.loads(named.stdout)["models"]] == ["models/a.onnx"]
    assert run_cli(["--format", "json", "--isolated", "."], cwd=tmp_path).stdout.count('"path"') == 4


@pytest.fixture
def deep_tree(tmp_path: Path) -> Iterator[str]:
    """1000 nested folders, built and removed one level at a time: Path.mkdir(parents=True), os.walk and
    the shutil.rmtree pytest uses to clean old temporary folders all recurse and would fail on it."""
    deep = str(tmp_path / "tree")
    os.mkdir(deep)
    for _ in range(1000):
        deep = os.path.join(deep, "d")
        os.mkdir(deep)
    yield deep
    folders, pending = [], [str(tmp_path / "tree")]
    while pending:  # os.walk recurses too (before Python 3.12)
        folder = pending.pop()
        folders.append(folder)
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
            else:
                os.unlink(entry.path)
    for folder in reversed(folders):
        os.rmdir(folder)


def test_a_tree_a_thousand_folders_deep(deep_tree: str, tmp_path: Path) -> None:
    onnx.save(conforming_maxpool(), os.path.join(deep_tree, "m.onnx"))
    result = run_cli(["--format", "json", "tree"], cwd=tmp_path)
    assert result.code == 0, result.stderr
    (model,) = json.loads(result.stdout)["models"]
    assert model["path"].count("/d") == 1000
    text = run_cli(["tree"], cwd=tmp_path).stdout  # a long path is shown whole, never cut
    assert os.path.relpath(os.path.join(deep_tree, "m.onnx"), tmp_path) + " conforms" in text


@pytest.mark.skipif(os.geteuid() == 0, reason="root lists any folder")
def test_an_unreadable_folder_is_reported_not_skipped(tmp_path: Path) -> None:
    _touch(tmp_path, "ok.onnx", "locked/x.onnx")
    (tmp_path / "locked").chmod(0)
    try:
        found = discover([str(tmp_path)])
    finally:
        (tmp_path / "locked").chmod(0o755)
    errors = [t for t in found.targets if t.error]
    assert [os.path.basename(t.path) for t in errors] == ["locked"]
    assert errors[0].error.startswith("folder cannot be read")  # type: ignore[union-attr]
