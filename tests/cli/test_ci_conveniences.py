"""What a CI job needs beyond the exit code: several reports in one run, a summary line when the report
goes to a file, a step summary on GitHub Actions, reports that are never half written nor written over
what the run reads, --fix that cannot pass a pre-commit hook silently, unwrapped logs, --help by purpose,
--timeout, and a clean stop on SIGINT/SIGTERM."""

from __future__ import annotations

import errno
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from clikit import conforming_maxpool, maxpool_r2, model_repository, run_cli, save, write_pyproject
from onnx import TensorProto as T
from onnx import helper as h

import sonnx_check.runner
from sonnx_check.engine import load_failure
from sonnx_check.errors import RunInterrupted
from sonnx_check.report import files


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    model_repository(tmp_path)
    (tmp_path / "models" / "broken.onnx").unlink()
    return tmp_path


# -- several reports, one run ---------------------------------------------------------------------------


def test_one_run_writes_annotations_sarif_and_junit(repo: Path) -> None:
    result = run_cli(
        [
            "--isolated",
            "--format",
            "github",
            "--output-format",
            "sarif:reports/sonnx-check.sarif",
            "--output-format",
            "junit:reports/junit/sonnx-check.xml",
            "models",
        ],
        cwd=repo,
    )
    assert result.code == 1
    assert result.stdout.startswith("::group::sonnx-check: ")  # the main report still goes to stdout
    sarif = json.loads((repo / "reports" / "sonnx-check.sarif").read_text(encoding="utf-8"))
    assert sarif["runs"][0]["results"]
    ET.fromstring((repo / "reports" / "junit" / "sonnx-check.xml").read_text(encoding="utf-8"))
    assert result.stderr == (
        "sonnx-check: report(s): reports/sonnx-check.sarif (sarif), reports/junit/sonnx-check.xml (junit)\n"
    )


def test_a_report_written_to_a_file_leaves_one_summary_line_in_the_log(repo: Path) -> None:
    result = run_cli(["--isolated", "--format", "sarif", "-o", "out.sarif", "models"], cwd=repo)
    assert result.code == 1 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("sonnx-check: 4 model(s) checked, ") and line.endswith(
        "; report(s): out.sarif (sarif)"
    )
    assert (
        run_cli(["--isolated", "-q", "--format", "sarif", "-o", "q.sarif", "models"], cwd=repo).stderr == ""
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output-format", "sarif"], "--output-format sarif: expected FORMAT:PATH with FORMAT one of"),
        (["--output-format", "xml:r.xml"], "--output-format xml:r.xml: expected FORMAT:PATH"),
        (
            ["-o", "r.json", "--output-format", "sarif:./r.json"],
            "--output-format sarif:./r.json: the same file",
        ),
    ],
)
def test_output_format_errors(repo: Path, args: list[str], message: str) -> None:
    result = run_cli(["--isolated", *args, "models"], cwd=repo)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"sonnx-check: error: {message}") and result.stderr.count("\n") == 1


def test_step_summary_is_appended_on_github_actions(repo: Path, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    save(maxpool_r2("[x](https://evil.example) | <img src=x>"), repo / "models" / "evil.onnx")
    result = run_cli(
        ["--isolated", "--format", "github", "models"], cwd=repo, env={"GITHUB_STEP_SUMMARY": str(summary)}
    )
    assert result.code == 1
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## sonnx-check\n")
    assert (
        "| models/classifier\\.onnx | violations |" in text and "| models/clean\\.onnx | conforms |" in text
    )
    assert "<img" not in text.replace("\\<img", "") and "](" not in text.replace("\\](", "")


# -- what --output may write over -----------------------------------------------------------------------


def _with_external_data(folder: Path) -> Path:
    weight = h.make_tensor("w", T.FLOAT, [1], [1.0])
    weight.data_location = T.EXTERNAL
    del weight.float_data[:]
    weight.external_data.add(key="location", value="model.onnx.data")
    model = conforming_maxpool()
    model.graph.initializer.append(weight)
    (folder / "model.onnx.data").write_bytes(b"\x00\x00\x80?")
    return save(model, folder / "model.onnx")


@pytest.mark.parametrize(
    ("output", "what"),
    [
        ("model.onnx.data", "the external data of model.onnx"),
        ("pyproject.toml", "a configuration file"),
        ("ci.toml", "a configuration file"),
    ],
)
def test_output_refuses_any_file_the_run_reads(tmp_path: Path, output: str, what: str) -> None:
    _with_external_data(tmp_path)
    write_pyproject(tmp_path, "[tool.sonnx-check]\n")
    (tmp_path / "ci.toml").write_text("[tool.sonnx-check]\n", encoding="utf-8")
    config = ["--config", "ci.toml"] if output == "ci.toml" else []
    before = (tmp_path / output).read_bytes()
    result = run_cli([*config, "--format", "json", "--output", output, "model.onnx"], cwd=tmp_path)
    assert result.code == 2 and result.stdout == ""
    assert (
        result.stderr
        == f"sonnx-check: error: --output {output}: refusing to write a report over {what} this run reads\n"
    )
    assert (tmp_path / output).read_bytes() == before
    other = run_cli([*config, "--output-format", f"sarif:{output}", "model.onnx"], cwd=tmp_path)
    assert other.code == 2 and f"--output-format sarif:{output}: refusing" in other.stderr


def test_missing_report_folders_are_created_before_the_run(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    real = sonnx_check.runner.run_all

    def run_all(targets, settings):  # type: ignore[no-untyped-def]
        seen.append((repo / "out" / "a" / "b").is_dir())
        return real(targets, settings)

    monkeypatch.setattr(sonnx_check.runner, "run_all", run_all)
    result = run_cli(
        ["--isolated", "--format", "json", "-o", "out/a/b/r.json", "models/clean.onnx"], cwd=repo
    )
    assert result.code == 0 and seen == [True]
    assert json.loads((repo / "out" / "a" / "b" / "r.json").read_text())["summary"]["models"] == 1


def test_a_failed_write_leaves_no_partial_report(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "r.sarif").write_text("previous report", encoding="utf-8")

    def full_disk(source: str, target: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "replace", full_disk)
    result = run_cli(["--isolated", "--format", "sarif", "-o", "r.sarif", "models"], cwd=repo)
    assert result.code == 2
    assert result.stderr.splitlines()[-1] == "sonnx-check: error: --output r.sarif: No space left on device"
    assert (repo / "r.sarif").read_text(encoding="utf-8") == "previous report"
    assert sorted(p.name for p in repo.iterdir()) == ["models", "r.sarif"]  # no temporary file left


def test_reports_are_replaced_whole(repo: Path) -> None:
    (repo / "r.json").write_text("x" * 100_000, encoding="utf-8")
    assert (
        run_cli(["--isolated", "--format", "json", "-o", "r.json", "models/clean.onnx"], cwd=repo).code == 0
    )
    json.loads((repo / "r.json").read_text(encoding="utf-8"))
    assert oct((repo / "r.json").stat().st_mode & 0o777) != oct(0o600)  # an ordinary file, not mkstemp's


# -- --fix in pre-commit --------------------------------------------------------------------------------


def test_exit_non_zero_on_fix(tmp_path: Path) -> None:
    save(maxpool_r2(), tmp_path / "m.onnx")
    assert run_cli(["--isolated", "--fix", "m.onnx"], cwd=tmp_path).code == 0  # the fixed model conforms
    result = run_cli(["--isolated", "--fix", "--exit-non-zero-on-fix", "m.onnx"], cwd=tmp_path)
    assert result.code == 1 and (tmp_path / "m.fixed.onnx").exists()
    save(conforming_maxpool(), tmp_path / "clean.onnx")  # nothing to fix: nothing written, exit 0
    assert run_cli(["--isolated", "--fix", "--exit-non-zero-on-fix", "clean.onnx"], cwd=tmp_path).code == 0


def test_the_pre_commit_hook_with_args_fix_fails_the_commit(tmp_path: Path) -> None:
    """What pre-commit runs for `args: [--fix]`: the hook's entry, then the args, then the staged files."""
    save(maxpool_r2(), tmp_path / "m.onnx")
    save(conforming_maxpool(), tmp_path / "m.fixed.onnx")  # an earlier output, staged by mistake
    result = run_cli(
        ["--force-exclude", "--exit-non-zero-on-fix", "--fix", "m.onnx", "m.fixed.onnx"], cwd=tmp_path
    )
    assert result.code == 1
    assert "--fix wrote m.fixed.onnx" in result.stdout and "m.fixed.fixed.onnx" not in result.stdout


def test_the_hook_with_args_fix_checks_a_staged_fixed_model(tmp_path: Path) -> None:
    # a violating model named like a --fix output is checked (not fixed again), so the commit fails
    save(maxpool_r2(), tmp_path / "x.fixed.onnx")
    hook = ["--force-exclude", "--exit-non-zero-on-fix", "--fix", "--format", "json"]
    result = run_cli([*hook, "x.fixed.onnx"], cwd=tmp_path)
    assert result.code == 1, result.stderr
    assert "x.fixed.onnx: checked, not fixed again" in result.stderr
    assert not list(tmp_path.glob("*.fixed.fixed.onnx"))


# -- logs -----------------------------------------------------------------------------------------------


def test_piped_text_is_never_wrapped(tmp_path: Path) -> None:
    name = "/backbone/" + "stage_with_a_long_name/" * 8 + "pool"
    deep = tmp_path / ("a_folder_with_a_long_name/" * 4)
    save(maxpool_r2(name), deep / "model.onnx")
    result = run_cli(["--isolated", str(deep / "model.onnx")])
    (line,) = [line for line in result.stdout.splitlines() if "MaxPool.R2" in line]
    assert f"MaxPool '{name}' (node #0)" in line
    assert any(line.startswith(str(deep / "model.onnx")) for line in result.stdout.splitlines())


def test_help_is_grouped_by_purpose_with_examples() -> None:
    text = run_cli(["--help"]).stdout
    sections = ["Rules:", "Reports:", "Exit code:", "Files and configuration:", "Fixing (--fix):"]
    sections += [
        "Comparing with onnxruntime (--compare):",
        "Running:",
        "Information:",
        "Examples:",
        "Exit codes:",
    ]
    positions = [text.index(s) for s in sections]
    assert positions == sorted(positions)
    assert "--output-format FORMAT:PATH" in text and "--timeout SECONDS" in text
    assert "interrupted by SIGINT or SIGTERM" in text
    assert "sonnx-check --format github --output-format sarif:sonnx-check.sarif models/" in text
    assert text.index("--timeout") > text.index("Comparing with onnxruntime")


# -- --timeout, interruption ----------------------------------------------------------------------------


@pytest.fixture
def captured_settings(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    seen: list[object] = []

    def run_all(targets, settings):  # type: ignore[no-untyped-def]
        seen.append(settings)
        return [sonnx_check.runner.ModelOutcome(load_failure(t.path, "not run")) for t in targets]

    monkeypatch.setattr(sonnx_check.runner, "run_all", run_all)
    return seen


@pytest.mark.parametrize(("value", "timeout"), [(None, 300.0), ("12.5", 12.5), ("0", None), ("none", None)])
def test_timeout_reaches_the_comparison_settings(
    repo: Path, captured_settings: list[object], value: str | None, timeout: float | None
) -> None:
    args = ["--timeout", value] if value is not None else []
    run_cli(["--isolated", *args, "models/clean.onnx"], cwd=repo)
    (settings,) = captured_settings
    assert settings.compare.timeout == timeout  # type: ignore[attr-defined]


def test_timeout_is_validated(repo: Path) -> None:
    result = run_cli(["--isolated", "--timeout", "-1", "models/clean.onnx"], cwd=repo)
    assert result.code == 2 and "expected a number of seconds >= 0, or 'none'" in result.stderr


@pytest.mark.parametrize(
    ("raised", "line"),
    [(RunInterrupted("SIGTERM"), "interrupted (SIGTERM)"), (KeyboardInterrupt(), "interrupted (SIGINT)")],
)
def test_an_interrupted_run_is_one_line_and_exit_2(
    repo: Path, monkeypatch: pytest.MonkeyPatch, raised: BaseException, line: str
) -> None:
    def run_all(targets, settings):  # type: ignore[no-untyped-def]
        raise raised

    monkeypatch.setattr(sonnx_check.runner, "run_all", run_all)
    result = run_cli(["--isolated", "--format", "json", "-o", "r.json", "models"], cwd=repo)
    assert result.code == 2 and result.stdout == ""
    assert result.stderr == f"sonnx-check: {line}\n"
    assert not (repo / "r.json").exists()
