"""The command as a CI gate: exit codes, --fail-on, --exit-zero, --statistics, --output, --jobs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from clikit import maxpool_r2, model_repository, run_cli, save, torchscript_export

from sonnx_check.cli import exit_code
from sonnx_check.findings import Finding, ModelResult, Severity

FORMATS = ("text", "json", "sarif", "github", "junit")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    model_repository(tmp_path)
    return tmp_path


def test_help_lists_every_option() -> None:
    result = run_cli(["--help"])
    assert result.code == 0
    for option in (
        "--select",
        "--extend-select",
        "--ignore",
        "--config",
        "--isolated",
        "--format",
        "--output",
        "--quiet",
        "--statistics",
        "--fail-on",
        "--exit-zero",
        "--jobs",
        "--fix",
        "--fix-output",
        "--list-rules",
        "--explain",
        "--compare / --no-compare",
        "--show-traceback",
        "--version",
    ):
        assert option in result.stdout, option
    for fmt in FORMATS:
        assert fmt in result.stdout


def test_exit_codes_clean_findings_unreadable(repo: Path) -> None:
    models = repo / "models"
    assert run_cli(["--isolated", str(models / "clean.onnx")]).code == 0
    assert run_cli(["--isolated", str(models / "classifier.onnx")]).code == 1
    broken = run_cli(["--isolated", str(models / "broken.onnx"), str(models / "clean.onnx")])
    assert broken.code == 2
    assert f"sonnx-check: error: {models / 'broken.onnx'}: cannot read the model" in broken.stderr


def test_exit_zero_keeps_findings_visible_but_passes(repo: Path) -> None:
    model = str(repo / "models" / "classifier.onnx")
    result = run_cli(["--isolated", "--exit-zero", model])
    assert result.code == 0
    assert "MaxPool.R2 error" in result.stdout
    # an unreadable model is not a finding: --exit-zero does not hide it
    assert run_cli(["--isolated", "--exit-zero", str(repo / "models" / "broken.onnx")]).code == 2


def test_fail_on_decides_which_severity_fails() -> None:
    warning = ModelResult("m.onnx", [Finding("GR4", "m", Severity.WARNING)])
    waived = ModelResult("m.onnx", [Finding("GR4", "m", Severity.ERROR, waived="accepted")])
    assert exit_code([warning], [], Severity.ERROR) == 0
    assert exit_code([warning], [], Severity.WARNING) == 1
    assert exit_code([waived], [], Severity.WARNING) == 0


def test_fail_on_option_is_accepted_and_validated(repo: Path) -> None:
    model = str(repo / "models" / "classifier.onnx")
    assert run_cli(["--isolated", "--fail-on", "warning", model]).code == 1
    bad = run_cli(["--isolated", "--fail-on", "info", model])
    assert bad.code == 2 and "'info' is not one of" in bad.stderr


def test_statistics_counts_per_rule_in_text_and_json(repo: Path) -> None:
    model = str(repo / "models" / "classifier.onnx")
    text = run_cli(["--isolated", "--statistics", "--quiet", model])
    lines = [line.split() for line in text.stdout.splitlines() if line.strip()]
    counts = {parts[1]: int(parts[0]) for parts in lines if parts[0].isdigit()}
    expected = {"GR2": 4, "GRAPH.shapes": 4, "GR4": 2, "MaxPool.R2": 1, "MaxPool.R4": 1}
    assert {rule: counts.get(rule) for rule in expected} == expected  # other operators' rules may add more
    assert "ceil_mode=1" not in text.stdout  # the table replaces the per-finding lines
    document = json.loads(run_cli(["--isolated", "--statistics", "--format", "json", model]).stdout)
    assert {s["rule"]: s["count"] for s in document["statistics"]} == counts
    assert len(document["models"][0]["findings"]) == sum(counts.values())


def test_statistics_of_machine_formats_go_to_stderr(repo: Path) -> None:
    model = str(repo / "models" / "classifier.onnx")
    result = run_cli(["--isolated", "--statistics", "--format", "sarif", model])
    json.loads(result.stdout)  # still a SARIF document
    assert "MaxPool.R4" in result.stderr and "GRAPH.shapes" in result.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_writes_the_report_to_a_file(repo: Path, tmp_path: Path, fmt: str) -> None:
    report = tmp_path / f"report.{fmt}"
    result = run_cli(["--isolated", "--format", fmt, "--output", str(report), str(repo / "models")])
    assert result.code == 2  # broken.onnx is unreadable
    assert result.stdout == ""
    assert "classifier.onnx" in report.read_text(encoding="utf-8")


def test_output_refuses_to_overwrite_a_model(repo: Path) -> None:
    model = str(repo / "models" / "clean.onnx")
    result = run_cli(["--isolated", "--output", model, model])
    assert result.code == 2
    assert (
        result.stderr.strip()
        == f"sonnx-check: error: --output {model}: refusing to write a report over a model file"
    )


def test_many_files_in_one_batch_like_pre_commit(tmp_path: Path) -> None:
    paths = [str(save(torchscript_export(), tmp_path / f"m{i:03d}.onnx")) for i in range(40)]
    document = json.loads(run_cli(["--isolated", "--format", "json", *paths]).stdout)
    assert [m["path"] for m in document["models"]] == paths
    assert document["summary"]["models"] == 40


@pytest.mark.parametrize("fmt", FORMATS)
def test_jobs_output_is_byte_identical_to_serial(repo: Path, fmt: str) -> None:
    folder = str(repo / "models")
    serial = run_cli(["--isolated", "--format", fmt, folder])
    parallel = run_cli(["--isolated", "--format", fmt, "--jobs", "2", folder])
    assert _untimed(parallel.stdout) == _untimed(serial.stdout)
    assert parallel.stderr == serial.stderr
    assert parallel.code == serial.code == 2


def _untimed(report: str) -> str:
    """JUnit carries the run's duration and start time, SARIF's invocation the command line and times:
    everything else is byte-identical."""
    if report.startswith("{") and '"invocations"' in report:
        log = json.loads(report)
        for run in log["runs"]:
            run.pop("invocations", None)
        return json.dumps(log, indent=2)
    return re.sub(r' (time|timestamp)="[^"]*"', "", report)


@pytest.mark.slow
def test_jobs_in_a_real_process_matches_serial(repo: Path) -> None:
    """End to end through the installed entry point, as CI runs it."""
    command = [sys.executable, "-m", "sonnx_check", "--isolated", "--format", "json", str(repo / "models")]
    serial = subprocess.run(command, capture_output=True, text=True, check=False)
    parallel = subprocess.run([*command, "--jobs", "2"], capture_output=True, text=True, check=False)
    assert parallel.returncode == serial.returncode == 2
    assert parallel.stdout == serial.stdout
    assert [m["path"] for m in json.loads(serial.stdout)["models"]] == sorted(
        str(p) for p in (repo / "models").rglob("*.onnx")
    )


def test_no_model_is_a_usage_error() -> None:
    result = run_cli(["--isolated"])
    assert result.code == 2
    assert result.stderr.startswith("sonnx-check: error: no model given")


def test_a_missing_path_is_not_counted_as_a_checked_model(tmp_path: Path) -> None:
    result = run_cli(["--isolated", "nothere.onnx"], cwd=tmp_path)
    assert result.code == 2
    last = result.stdout.splitlines()[-1]
    assert last == "0 model(s) checked, 0 error(s), 0 warning(s), 1 unreadable"
    assert result.stdout.splitlines()[1].startswith("verdict: 0 profile violation(s), ")
    assert result.stderr.count("nothere.onnx") == 1


def test_a_missing_inputs_file_stops_the_run_before_any_report(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    for source, cause in (("nothere.npz", "no such file or folder"), ("m.onnx", "expected 'random', 'edge'")):
        result = run_cli(["--isolated", "--compare", "--inputs", source, "m.onnx"], cwd=tmp_path)
        assert result.code == 2
        assert result.stdout == ""  # no report printed, green or not
        assert result.stderr.startswith(f"sonnx-check: error: --inputs {source}: {cause}")


def test_the_fix_hook_says_which_file_to_replace_and_stage(tmp_path: Path) -> None:
    """The pre-commit hook's mode (--exit-non-zero-on-fix) fails even when the fixed model conforms: the
    user must be told what to do next, with a command that survives odd file names."""
    save(torchscript_export(), tmp_path / "my net.onnx")
    result = run_cli(
        ["--isolated", "--force-exclude", "--exit-non-zero-on-fix", "--fix", "my net.onnx"], cwd=tmp_path
    )
    assert result.code == 1
    (line,) = [text for text in result.stderr.splitlines() if "fixed model was written" in text]
    assert line == (
        "sonnx-check: my net.onnx: a fixed model was written to my net.fixed.onnx; the original still "
        "violates and fails this run: replace it with the fixed one and stage it "
        "(mv 'my net.fixed.onnx' 'my net.onnx' && git add 'my net.onnx'), then commit again"
    )
    quiet = run_cli(["--isolated", "-q", "--exit-non-zero-on-fix", "--fix", "my net.onnx"], cwd=tmp_path)
    assert "fixed model was written" not in quiet.stderr
