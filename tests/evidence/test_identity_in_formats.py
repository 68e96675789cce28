"""SARIF, JUnit and the GitHub step summary name what was checked: each model's sha256 (and its external
data's), the tool's version and, in SARIF, the invocation and each rule's specification text."""

from __future__ import annotations

import hashlib
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from clikit import maxpool_r2, run_cli, save

from sonnx_check import __version__

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
SARIF_SCHEMA = json.loads(
    (Path(__file__).resolve().parents[1] / "formats" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8")
)
COMMIT = "652b76b8a6611585f4aaa9c1be56699b8629b0c0"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def models(tmp_path: Path) -> Path:
    save(maxpool_r2(), tmp_path / "m.onnx")
    for sample in ("external_weights.onnx", "external_weights.onnx.data"):
        shutil.copy(SAMPLES / "conforming" / sample, tmp_path / sample)
    return tmp_path


def test_sarif_lists_each_model_and_its_external_data_with_hashes(models: Path) -> None:
    result = run_cli(["--isolated", "--format", "sarif", "m.onnx", "external_weights.onnx"], cwd=models)
    log = json.loads(result.stdout)
    assert not list(jsonschema.Draft4Validator(SARIF_SCHEMA).iter_errors(log))
    run = log["runs"][0]
    assert run["artifacts"] == [
        {
            "location": {"uri": "m.onnx"},
            "roles": ["analysisTarget"],
            "length": (models / "m.onnx").stat().st_size,
            "hashes": {"sha-256": sha256(models / "m.onnx")},
        },
        {
            "location": {"uri": "external_weights.onnx"},
            "roles": ["analysisTarget"],
            "length": (models / "external_weights.onnx").stat().st_size,
            "hashes": {"sha-256": sha256(models / "external_weights.onnx")},
        },
        {
            "location": {"uri": "external_weights.onnx.data"},
            "parentIndex": 1,
            "length": (models / "external_weights.onnx.data").stat().st_size,
            "hashes": {"sha-256": sha256(models / "external_weights.onnx.data")},
        },
    ]
    (invocation,) = run["invocations"]
    assert invocation["commandLine"] == "sonnx-check --isolated --format sarif m.onnx external_weights.onnx"
    assert invocation["arguments"] == ["--isolated", "--format", "sarif", "m.onnx", "external_weights.onnx"]
    assert invocation["executionSuccessful"] is True
    assert invocation["startTimeUtc"].endswith("Z") and invocation["endTimeUtc"] >= invocation["startTimeUtc"]


def test_sarif_rules_link_to_their_specification_text_at_the_encoded_commit(models: Path) -> None:
    log = json.loads(run_cli(["--isolated", "--format", "sarif", "m.onnx"], cwd=models).stdout)
    (rule,) = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "MaxPool.R2"
    assert rule["helpUri"] == (
        f"https://github.com/onnx/working-groups/blob/{COMMIT}/safety-related-profile/sonnx/ops/maxpool/maxpool.md"
    )
    assert "How to fix" in rule["help"]["text"]


def test_sarif_says_when_a_model_could_not_be_checked(tmp_path: Path) -> None:
    (tmp_path / "broken.onnx").write_bytes(b"\xff\xfe not a model")
    log = json.loads(run_cli(["--isolated", "--format", "sarif", "broken.onnx"], cwd=tmp_path).stdout)
    run = log["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    assert run["artifacts"][0]["hashes"] == {"sha-256": sha256(tmp_path / "broken.onnx")}


def test_junit_names_the_tool_version_and_model_hashes(models: Path) -> None:
    result = run_cli(["--isolated", "--format", "junit", "m.onnx", "external_weights.onnx"], cwd=models)
    suites = ET.fromstring(result.stdout).findall("testsuite")
    properties = [{p.get("name"): p.get("value") for p in s.find("properties")} for s in suites]
    assert properties[0]["sonnx-check.version"] == __version__
    assert properties[0]["sonnx-check.model.sha256"] == sha256(models / "m.onnx")
    assert properties[1]["sonnx-check.external-data.sha256:external_weights.onnx.data"] == sha256(
        models / "external_weights.onnx.data"
    )


def test_step_summary_names_the_tool_version_and_model_hashes(models: Path) -> None:
    summary = models / "summary.md"
    run_cli(["--isolated", "m.onnx"], cwd=models, env={"GITHUB_STEP_SUMMARY": str(summary)})
    text = summary.read_text(encoding="utf-8")
    assert f"Checked by sonnx-check {__version__}." in text
    assert f"| `{sha256(models / 'm.onnx')}` |" in text
