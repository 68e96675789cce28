"""Every hostile or broken input of the corpus, checked the way CI checks it: in a run with a good model.

Each run is a separate process started in the test's folder, so what a user sees is what is asserted: the
exit code, the findings of both models, one line per problem, no traceback, nothing written anywhere. The
file outside the model folder that escaping locations point at is a FIFO: opening it for reading blocks, so
if anything (Python or onnx's C++ code) opened it, the run would hang and the test would time out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from corpus import CASES, COMPARED, SECRET, Case, good

from sonnx_check.cli import main

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120


def _layout(case: Case, tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "models"
    folder.mkdir()
    os.mkfifo(tmp_path / SECRET)
    return case.write(folder), good(folder)


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(folder.rglob("*"))}


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "sonnx_check", "--format", "json", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, env=env,
    )  # fmt: skip


def _assert_clean_failure_output(run: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in run.stdout + run.stderr
    assert "internal error" not in run.stderr
    for line in run.stderr.splitlines():
        assert line.startswith("sonnx-check: error: "), run.stderr


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_static_check_reports_the_input_and_still_checks_the_good_model(case: Case, tmp_path: Path) -> None:
    bad, conforming = _layout(case, tmp_path)
    before = _snapshot(tmp_path)

    run = _run(tmp_path, str(bad), str(conforming))

    assert run.returncode == case.exit_code, run.stderr
    _assert_clean_failure_output(run)
    models = json.loads(run.stdout)["models"]
    assert [m["path"] for m in models] == [str(bad), str(conforming)]
    assert models[1]["findings"] == []
    findings = models[0]["findings"]
    assert {f["rule"] for f in findings} == case.rules
    assert all(f["message"] and "\n" not in f["message"] for f in findings)
    if case.message:
        assert case.message in " ".join(f["message"] for f in findings)
    if case.exit_code == 2:  # an unreadable model: the one-line error names the file and the cause
        assert run.stderr.splitlines() == [f"sonnx-check: error: {bad}: {findings[0]['message']}"]
    assert _snapshot(tmp_path) == before


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_comparison_reports_what_stopped_it_and_still_checks_the_good_model(
    case: Case, tmp_path: Path
) -> None:
    bad, conforming = _layout(case, tmp_path)
    before = _snapshot(tmp_path)
    exit_code, words = COMPARED.get(case.name, (case.exit_code, case.message))

    run = _run(tmp_path, "--compare", "--inputs", "random", "--no-node-edges", str(bad), str(conforming))

    assert run.returncode == exit_code, run.stderr
    _assert_clean_failure_output(run)
    models = json.loads(run.stdout)["models"]
    assert [m["path"] for m in models] == [str(bad), str(conforming)]
    assert models[1]["findings"] == [] and models[1]["comparison"]["status"] == "match"
    findings = models[0]["findings"]
    assert case.rules <= {f["rule"] for f in findings}
    if case.name in COMPARED and exit_code == 1:
        not_compared = [f["message"] for f in findings if f["rule"] == "RUNTIME.not-compared"]
        assert len(not_compared) == 1 and words in not_compared[0], not_compared
    elif words:
        assert words in run.stderr + " ".join(f["message"] for f in findings)
    assert _snapshot(tmp_path) == before


@pytest.mark.slow
def test_a_folder_named_like_a_model_is_skipped_when_its_parent_is_scanned(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "x.onnx").mkdir()
    conforming = good(tmp_path / "models")
    run = _run(tmp_path, "models")
    assert run.returncode == 0, run.stderr
    assert [m["path"] for m in json.loads(run.stdout)["models"]] == [str(Path("models") / conforming.name)]


def test_a_file_without_read_permission_is_a_load_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = good(tmp_path)
    locked = locked.rename(tmp_path / "locked.onnx")
    locked.chmod(0)
    conforming = good(tmp_path)
    if os.geteuid() == 0:  # root reads anything: make os.open answer as it would for anyone else
        real_open = os.open

        def refusing_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
            if str(file) == str(locked):
                raise PermissionError(13, "Permission denied", str(file))
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(os, "open", refusing_open)
    result = CliRunner().invoke(main, ["--format", "json", str(locked), str(conforming)])
    assert result.exit_code == 2
    models = json.loads(result.stdout)["models"]
    assert [(f["rule"], f["message"]) for f in models[0]["findings"]] == [
        ("MODEL.load", "cannot read the model: permission denied")
    ]
    assert models[1]["findings"] == []
    assert f"sonnx-check: error: {locked}: cannot read the model: permission denied" in result.stderr


@pytest.mark.slow
def test_a_model_symlinked_from_outside_the_checked_folder_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    os.mkfifo(tmp_path / "secret.onnx")  # reading it would hang the run
    (tmp_path / "models" / "evil.onnx").symlink_to(tmp_path / "secret.onnx")
    (tmp_path / "models" / "alias.onnx").symlink_to("good.onnx")  # inside the folder: checked
    good(tmp_path / "models")
    run = _run(tmp_path, "models")
    assert run.returncode == 2, run.stderr
    reported = {
        Path(m["path"]).name: [f["message"] for f in m["findings"]] for m in json.loads(run.stdout)["models"]
    }
    assert reported == {
        "alias.onnx": [],
        "evil.onnx": [
            "cannot read the model: is a symbolic link to a file outside the folder being checked; "
            "it was not read"
        ],
        "good.onnx": [],
    }
