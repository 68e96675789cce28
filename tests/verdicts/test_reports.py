"""The verdict's class totals and the fixable marker, in every report format."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from clikit import run_cli, save, torchscript_export

from sonnx_check import fix
from sonnx_check.findings import VerdictClass

CLASSES = [c.value for c in VerdictClass]


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """A TorchScript-style export: GR2/GRAPH.shapes and defaulted attributes (--fix rewrites them), and a
    ceil_mode MaxPool (MaxPool.R4, which --fix rewrites as explicit pads)."""
    return save(torchscript_export(), tmp_path / "net.onnx")


def _json(path: Path, *args: str) -> dict:
    return json.loads(run_cli(["--isolated", "--format", "json", *args, str(path)]).stdout)


def test_json_carries_the_class_and_fixable_of_each_finding_and_the_totals(export: Path) -> None:
    document = _json(export)
    findings = document["models"][0]["findings"]
    assert findings and all(f["class"] == "profile-violation" for f in findings)
    fixable = [f for f in findings if f.get("fixable")]
    assert {f["rule"] for f in fixable} >= {"GR2", "GRAPH.shapes", "MaxPool.R2"}
    # marked only for a rule --fix rewrites, and only where it can: not a graph input's declaration
    assert all(f["rule"] in fix.fixable_rules() for f in fixable)
    assert not [f for f in fixable if f["message"].startswith("graph input ")]
    summary = document["summary"]
    assert list(summary["classes"]) == CLASSES
    assert summary["classes"]["profile-violation"] == len(findings)
    assert summary["fixable"] == len(fixable)


def test_text_opens_with_the_class_totals_and_marks_fixable_findings(export: Path) -> None:
    document = _json(export)
    findings = document["models"][0]["findings"]
    fixable = sum(bool(f.get("fixable")) for f in findings)
    lines = run_cli(["--isolated", str(export)]).stdout.splitlines()
    assert lines[0] == "configuration: none (--isolated)"
    lines = lines[1:]
    warnings = sum(f["severity"] == "warning" for f in findings)
    counted_apart = f"{warnings} profile warning(s), " if warnings else ""
    assert lines[0] == (
        f"verdict: {len(findings) - warnings} profile violation(s), {counted_apart}"
        "0 unexplained divergence(s), "
        "0 known runtime departure(s), 0 not compared"
    )
    # the Gemm's transposition is an unsafe rewrite: counted apart, as ruff counts the fixes it hides
    assert lines[1] == f"{fixable} finding(s) fixable with `--fix` (marked [*]); 1 more with `--unsafe-fixes`"
    marked = [line for line in lines if line.startswith("  ") and " [*] " in line]
    assert len(marked) == fixable
    assert all(line.split()[1:3] == ["error", "[*]"] for line in marked if line.startswith("  GR2 "))


def test_statistics_mark_the_fixable_rules(export: Path) -> None:
    lines = run_cli(["--isolated", "--statistics", str(export)]).stdout.splitlines()
    rows = {line.split()[1]: line for line in lines if line.strip() and line.split()[0].isdigit()}
    assert "[*]" in rows["GR2"] and "[*]" in rows["MaxPool.R2"]
    assert lines[2].endswith("fixable with `--fix` (marked [*]); 1 more with `--unsafe-fixes`")
    statistics = _json(export, "--statistics")["statistics"]
    assert {s["rule"]: s["fixable"] for s in statistics}["GR2"] == 4


def test_sarif_junit_github_and_the_step_summary_carry_the_classes(export: Path, tmp_path: Path) -> None:
    sarif = json.loads(run_cli(["--isolated", "--format", "sarif", str(export)]).stdout)
    run = sarif["runs"][0]
    assert all(r["properties"]["class"] == "profile-violation" for r in run["results"])
    assert list(run["properties"]["sonnxCheckClasses"]) == CLASSES

    junit = ET.fromstring(run_cli(["--isolated", "--format", "junit", str(export)]).stdout)
    properties = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert {f"sonnx-check.class.{c}" for c in CLASSES} <= set(properties)
    assert int(properties["sonnx-check.class.profile-violation"]) > 0
    assert "[profile-violation]" in "".join(f.text or "" for f in junit.iter("failure"))

    github = run_cli(["--isolated", "--format", "github", str(export)]).stdout.splitlines()
    assert "verdict: " in github[-1] and "fixable with `--fix`" in github[-1]
    assert any(" [profile-violation] [*] " in line for line in github)

    summary_file = tmp_path / "step.md"
    run_cli(["--isolated", str(export)], env={"GITHUB_STEP_SUMMARY": str(summary_file)})
    summary = summary_file.read_text(encoding="utf-8")
    assert "verdict\\: " in summary and "known departures" in summary and "| profile-violation" in summary


def test_which_findings_are_fixable_comes_from_the_fix_package(
    export: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a rewrite added to fix.NODE_REWRITES makes its rule's findings fixable; FIXABLE_WHEN narrows a rule
    monkeypatch.setattr(fix, "NODE_REWRITES", (*fix.NODE_REWRITES, ("Gemm.R1", fix.NODE_REWRITES[0][1])))
    monkeypatch.setitem(fix.FIXABLE_WHEN, "GR2", lambda finding: finding.tensor == "/conv/Conv_output_0")
    findings = _json(export)["models"][0]["findings"]
    gr2 = {f["tensor"]: f.get("fixable", False) for f in findings if f["rule"] == "GR2"}
    assert gr2["/conv/Conv_output_0"] is True and sum(gr2.values()) == 1
    assert fix.fixable_rules() >= {"Gemm.R1"}


def test_a_waived_finding_is_not_fixable(export: Path, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.sonnx-check]\n[[tool.sonnx-check.waivers]]\nrule = "GR2"\nmodels = "**"\nreason = "r"\n',
        encoding="utf-8",
    )
    document = json.loads(run_cli(["--format", "json", "net.onnx"], cwd=tmp_path).stdout)
    gr2 = [f for f in document["models"][0]["findings"] if f["rule"] == "GR2"]
    assert gr2 and all(f["waived"] and not f.get("fixable") for f in gr2)


def test_text_tags_each_runtime_finding_with_its_class() -> None:
    import io

    from records import divergence
    from rich.console import Console

    from sonnx_check.findings import Finding, ModelResult, NodeRef
    from sonnx_check.report import text

    known = divergence(
        {("MAXPOOL-NAN-POSITIONAL",): 4}, node=NodeRef(1, "p", "MaxPool"), message="output 'y'"
    )
    other = Finding("RUNTIME.divergence", "output 'z'", node=NodeRef(2, "q", "MaxPool"))
    console = Console(file=io.StringIO(), color_system=None, width=500)
    with console.capture() as captured:
        text.render(console, [ModelResult("m.onnx", [known, other])])
    out = captured.get()
    assert "RUNTIME.divergence error [known-departure] MaxPool 'p'" in out
    assert "RUNTIME.divergence error [unexplained-divergence] MaxPool 'q'" in out
    assert out.startswith("verdict: 0 profile violation(s), 1 unexplained divergence(s), 1 known runtime")


def test_gitlab_names_the_class_and_lists_operator_level_evidence_as_info() -> None:
    from sonnx_check.findings import Finding, ModelResult, NodeRef, Severity
    from sonnx_check.report import gitlab

    node = NodeRef(0, "clip", "Clip")
    evidence = Finding("RUNTIME.divergence", "output 'y'", Severity.INFO, node=node)
    static = Finding("GR4", "attribute(s) axis not set", node=node, fixable=True)
    issues = json.loads(gitlab.render([ModelResult("m.onnx", [evidence, static])]))
    assert [i["severity"] for i in issues] == ["info", "major"]
    assert issues[0]["description"].startswith("RUNTIME.divergence: [unexplained-divergence] Clip 'clip'")
    assert issues[1]["description"].startswith("GR4: [profile-violation] [*] Clip 'clip'")
