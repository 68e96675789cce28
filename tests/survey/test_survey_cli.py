"""``sonnx-check --survey`` as a user types it: no model, the folder it writes, its exit codes, its usage
errors in one line (exit 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))
from clikit import run_cli  # noqa: E402


@pytest.mark.slow
def test_survey_runs_without_a_model_and_writes_its_folder(tmp_path: Path) -> None:
    done = run_cli(["--survey", "--survey-output", "out", "--seed", "3"], cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert "survey: 35 operator(s)" in done.stdout and "MaxPool" in done.stdout
    record = json.loads((tmp_path / "out" / "survey.json").read_text(encoding="utf-8"))
    assert record["settings"]["seed"] == 3 and record["exit_code"] == 0


def test_the_default_folder(tmp_path: Path) -> None:
    (tmp_path / "sonnx-survey").mkdir()
    (tmp_path / "sonnx-survey" / "x").write_text("kept")
    done = run_cli(["--survey"], cwd=tmp_path)
    assert done.code == 2 and "sonnx-survey" in done.stderr and "not empty" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    for args, words in (
        (["--survey", "model.onnx"], "takes no model"),
        (["--survey-output", "d"], "needs --survey"),
        (["--survey", "--runtime-command", "no-such-program-here"], "not found"),
    ):
        done = run_cli(args, cwd=tmp_path)
        assert done.code == 2 and words in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "sonnx-survey").exists()
