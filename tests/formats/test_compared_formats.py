"""A ``--compare`` run in every machine format: each validates against its schema (SARIF 2.1.0, GitLab's Code
Quality schema, the JUnit XSD, the evidence record's own), and each carries the comparison's typed records
as the JSON report does (the findings, their classes and known departures, the readings)."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from clikit import run_cli
from test_junit_schema import violations

from sonnx_check.findings import DIVERGENCE_RULE

HERE = Path(__file__).parent
SAMPLE = HERE.parents[1] / "sample_models" / "conforming" / "small_cnn.onnx"
FORMATS = {"sarif": "r.sarif", "junit": "r.xml", "gitlab": "r.gitlab.json"}


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("compared")
    shutil.copy(SAMPLE, folder / "small_cnn.onnx")
    extra = [a for fmt, name in FORMATS.items() for a in ("--output-format", f"{fmt}:{name}")]
    done = run_cli(
        ["--isolated", "--compare", "--format", "json", "small_cnn.onnx", *extra, "--evidence", "e.json"],
        cwd=folder,
    )
    assert done.code == 1, done.stderr  # small_cnn's MaxPool departs from the text: known departures
    out: dict[str, Any] = {
        "json": json.loads(done.stdout),
        "evidence": json.loads((folder / "e.json").read_text()),
    }
    out |= {fmt: (folder / name).read_text(encoding="utf-8") for fmt, name in FORMATS.items()}
    return out


def _divergences(compared: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in compared["json"]["models"][0]["findings"] if f["rule"] == DIVERGENCE_RULE]


def test_the_json_report_carries_each_divergence_record(compared: dict[str, Any]) -> None:
    divergences = _divergences(compared)
    assert divergences and all(f["class"] == "known-departure" for f in divergences)
    for finding in divergences:
        data = finding["data"]
        assert data["status"] == "differs" and data["unexplained"] == 0
        assert finding["known_departures"] == [k["id"] for k in data["known_divergence"]]
        assert sum(e["elements"] for e in data["explained_by"]) == data["mismatches"]
    comparison = compared["json"]["models"][0]["comparison"]
    assert comparison["status"] == "diverges" and comparison["node_edges"]["enabled"] is True


def test_sarif_of_a_comparison_validates(compared: dict[str, Any]) -> None:
    schema = json.loads((HERE / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    log = json.loads(compared["sarif"])
    assert not sorted(jsonschema.Draft4Validator(schema).iter_errors(log), key=str)
    results = [r for r in log["runs"][0]["results"] if r["ruleId"] == DIVERGENCE_RULE]
    expected = [f["known_departures"] for f in _divergences(compared)]
    assert sorted(r["properties"]["knownDepartures"] for r in results) == sorted(expected)


def test_gitlab_of_a_comparison_validates(compared: dict[str, Any]) -> None:
    schema = json.loads((HERE / "gitlab-codeclimate.json").read_text(encoding="utf-8"))
    issues = json.loads(compared["gitlab"])
    validator = jsonschema.Draft4Validator(schema)
    assert issues and all(not list(validator.iter_errors(issue)) for issue in issues)
    assert sum(i["check_name"] == DIVERGENCE_RULE for i in issues) == len(_divergences(compared))


def test_junit_of_a_comparison_validates_and_names_the_readings(compared: dict[str, Any]) -> None:
    assert violations(compared["junit"]) == []
    reference = compared["json"]["models"][0]["comparison"]["reference"]
    assert f'value="{reference["maxpool_nan"]}"' in compared["junit"]


def test_the_evidence_of_a_comparison_validates_and_lists_departures(compared: dict[str, Any]) -> None:
    schema = json.loads(
        resources.files("sonnx_check").joinpath("schemas/evidence.schema.json").read_text(encoding="utf-8")
    )
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(compared["evidence"]))
    model = compared["evidence"]["models"][0]
    listed = sorted(k["id"] for k in model["comparison"]["known_departures"])
    assert listed == sorted(i for f in _divergences(compared) for i in f["known_departures"])
