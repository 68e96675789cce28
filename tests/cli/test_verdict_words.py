"""The verdict's words match what happened: an unreadable model is counted as unreadable (never as a profile
violation), warnings are counted apart from violations, and rule IDs in --select/--ignore and waivers are
matched case-insensitively with a did-you-mean, as --explain does."""

from __future__ import annotations

import shutil
from pathlib import Path

from clikit import run_cli, write_pyproject

ROOT = Path(__file__).resolve().parents[2]
WARNS_ONLY = ROOT / "sample_models" / "torch" / "dynamo_cnn.onnx"  # two draft-rule warnings, no error
CEIL_MODE = ROOT / "sample_models" / "violating" / "maxpool_ceil_mode.onnx"  # MaxPool.R4


def _verdict(stdout: str) -> str:
    (line,) = [line for line in stdout.splitlines() if line.startswith("verdict: ")]
    return line


def test_a_missing_file_is_unreadable_not_a_violation(tmp_path: Path) -> None:
    run = run_cli(["--isolated", "missing.onnx"], cwd=tmp_path)
    assert run.code == 2
    assert _verdict(run.stdout) == (
        "verdict: 0 profile violation(s), 0 unexplained divergence(s), 0 known runtime departure(s), "
        "0 not compared, 1 unreadable"
    )
    assert run.stdout.splitlines()[-1] == "0 model(s) checked, 0 error(s), 0 warning(s), 1 unreadable"


def test_an_empty_folder_is_unreadable_not_a_violation(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    run = run_cli(["--isolated", "empty"], cwd=tmp_path)
    assert run.code == 2
    assert _verdict(run.stdout).startswith("verdict: 0 profile violation(s), ")
    assert _verdict(run.stdout).endswith(", 1 unreadable")


def test_an_unreadable_model_beside_a_violating_one_adds_nothing_to_the_violations(tmp_path: Path) -> None:
    shutil.copy(CEIL_MODE, tmp_path / "m.onnx")
    (tmp_path / "broken.onnx").write_bytes(b"not a model")
    run = run_cli(["--isolated", "--select", "MaxPool.R4", "m.onnx", "broken.onnx"], cwd=tmp_path)
    assert _verdict(run.stdout).startswith("verdict: 1 profile violation(s), ")
    assert run.stdout.splitlines()[-1] == (
        "1 model(s) checked, 1 error(s), 0 warning(s), 1 unreadable in 1 model(s)"
    )


def test_warnings_are_counted_apart_from_violations() -> None:
    run = run_cli(["--isolated", str(WARNS_ONLY)])
    assert run.code == 0  # warnings do not fail the run by default...
    # ...so the line above the exit code does not call them violations
    assert _verdict(run.stdout).startswith("verdict: 0 profile violation(s), 2 profile warning(s), ")


def test_select_is_case_insensitive(tmp_path: Path) -> None:
    shutil.copy(CEIL_MODE, tmp_path / "m.onnx")
    run = run_cli(["--isolated", "-q", "--select", "maxpool.r4", "m.onnx"], cwd=tmp_path)
    assert run.code == 1, run.stderr
    assert "MaxPool.R4 error" in run.stdout
    ignored = run_cli(
        ["--isolated", "-q", "--select", "maxpool.*", "--ignore", "MAXPOOL.R4", "m.onnx"], cwd=tmp_path
    )
    assert ignored.code == 0, ignored.stderr
    assert "MaxPool.R4" not in ignored.stdout


def test_an_unknown_rule_gets_a_did_you_mean(tmp_path: Path) -> None:
    shutil.copy(CEIL_MODE, tmp_path / "m.onnx")
    for option in ("--select", "--ignore", "--extend-select"):
        run = run_cli(["--isolated", option, "maxpol.r4", "m.onnx"], cwd=tmp_path)
        assert run.code == 2
        assert run.stderr.strip().splitlines() == [
            f"sonnx-check: error: {option}: unknown rule 'maxpol.r4'; did you mean MaxPool.R4? "
            "(see sonnx-check --list-rules)"
        ]


def test_a_waiver_names_its_rule_in_any_case(tmp_path: Path) -> None:
    shutil.copy(CEIL_MODE, tmp_path / "m.onnx")
    write_pyproject(
        tmp_path,
        """
        [tool.sonnx-check]
        select = ["maxpool.r4"]

        [[tool.sonnx-check.waivers]]
        rule = "maxpool.r4"
        models = ["m.onnx"]
        reason = "accepted: the runtime's ceil mode is validated elsewhere"
        """,
    )
    run = run_cli(["m.onnx"], cwd=tmp_path)
    assert run.code == 0, run.stdout + run.stderr
    assert "waived" in run.stdout
