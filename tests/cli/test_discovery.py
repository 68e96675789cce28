"""Which files a folder scan checks: sorted *.onnx files, minus hidden folders, earlier --fix outputs,
what git ignores and the configuration's `exclude`; named files always, unless --force-exclude; a tree a
thousand folders deep is walked without exhausting Python's stack."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
from clikit import conforming_maxpool, run_cli, save, write_pyproject

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


def test_named_files_are_checked_unless_force_exclude(tmp_path: Path) -> None:
    _touch(tmp_path, "m.fixed.onnx")
    named = str(tmp_path / "m.fixed.onnx")
    assert [t.path for t in discover([named]).targets] == [named]
    forced = discover([named], force_exclude=True)
    assert forced.targets == [] and forced.skipped == [(named, "it is a --fix output")]
    assert not forced.scanned_folder


def test_gitignore_is_respected_inside_a_work_tree(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("local/\n", encoding="utf-8")
    (tmp_path / ".gitignore").write_text("# generated\nbuild/\n*.tmp.onnx\n/top.onnx\n", encoding="utf-8")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / ".gitignore").write_text("scratch*\n!scratch_keep.onnx\n", encoding="utf-8")
    _touch(
        tmp_path,
        "top.onnx",
        "models/top.onnx",
        "build/out.onnx",
        "models/build/deep.onnx",
        "models/a.tmp.onnx",
        "models/scratch1.onnx",
        "models/scratch_keep.onnx",
        "local/x.onnx",
        "models/ok.onnx",
    )
    assert _found(tmp_path) == ["models/ok.onnx", "models/scratch_keep.onnx", "models/top.onnx"]
    assert len(_found(tmp_path, respect_gitignore=False)) == 9
    # outside a work tree, .gitignore files mean nothing
    (tmp_path / ".git" / "info" / "exclude").unlink()
    (tmp_path / ".git" / "info").rmdir()
    (tmp_path / ".git").rmdir()
    assert len(_found(tmp_path)) == 9


def test_force_exclude_applies_gitignore_to_named_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("vendor/\n", encoding="utf-8")
    _touch(tmp_path, "vendor/v.onnx", "m.onnx")
    previous = os.getcwd()
    os.chdir(tmp_path)
    try:
        found = discover(["vendor/v.onnx", "m.onnx"], force_exclude=True)
    finally:
        os.chdir(previous)
    assert [t.path for t in found.targets] == ["m.onnx"]
    assert found.skipped == [("vendor/v.onnx", "ignored by git (.gitignore)")]


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
