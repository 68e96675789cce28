"""MODEL.external-data-committed: a tracked model whose weights git's index lacks (or holds stale) is
reported; outside git, or for an untracked model, nothing is judged."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import onnx
import pytest
from clikit import run_cli, torchscript_export

RULE = "MODEL.external-data-committed"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
        cwd=folder,
        check=True,
        capture_output=True,
    )


def _repository(tmp_path: Path, location: str = "net.onnx.data") -> tuple[Path, Path]:
    root = tmp_path / "repo"
    (root / "models").mkdir(parents=True)
    _git(root, "init", "-q")
    model = root / "models" / "net.onnx"
    onnx.save(torchscript_export(), model, save_as_external_data=True, location=location, size_threshold=0)
    return root, model


def _findings(model: Path, cwd: Path) -> list[dict]:
    run = run_cli(["--isolated", "--select", RULE, "--format", "json", str(model)], cwd=cwd)
    assert run.code in (0, 1), run.stdout
    report = json.loads(run.stdout)
    [entry] = report["models"]
    return [f for f in entry["findings"] if f["rule"] == RULE]


def test_a_model_staged_without_its_data_file_is_reported(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models/net.onnx")
    run = run_cli(["--isolated", "--select", RULE, "models/net.onnx"], cwd=root)
    assert run.code == 1, run.stdout
    assert "external data file 'net.onnx.data' is not in git's index" in run.stdout
    assert "git add -- 'models/net.onnx.data'" in run.stdout  # the command works where the user is


def test_the_model_and_its_data_staged_together_pass(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models")
    assert _findings(model, root) == []


def test_data_changed_after_staging_is_reported(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models")
    data = model.parent / "net.onnx.data"
    data.write_bytes(bytes(reversed(data.read_bytes())))
    [finding] = _findings(model, root)
    assert "has changes that are not staged" in finding["message"]


def test_nothing_is_judged_outside_git_or_for_an_untracked_model(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    assert _findings(model, root) == []  # in a work tree, but the model is not tracked
    shutil.rmtree(root / ".git")
    assert _findings(model, root) == []  # no work tree at all


def test_a_data_file_name_that_is_a_pattern_is_taken_literally(tmp_path: Path) -> None:
    root, model = _repository(tmp_path, location="w[0-9]*.data")
    (model.parent / "w1.data").write_bytes(b"")  # would match the pattern if git read it as a glob
    _git(root, "add", "models/net.onnx", "models/w1.data")
    [finding] = _findings(model, root)
    assert "'w[0-9]*.data' is not in git's index" in finding["message"]


def test_the_repository_is_not_written(tmp_path: Path) -> None:
    root, model = _repository(tmp_path)
    _git(root, "add", "models")
    index = (root / ".git" / "index").read_bytes()
    _findings(model, root)
    assert (root / ".git" / "index").read_bytes() == index
