"""The machine formats: SARIF validates against the SARIF 2.1.0 schema and has what GitHub code scanning
needs, annotations follow GitHub's workflow-command syntax, JUnit parses with the expected cases, and every
format carries the same findings as the JSON report."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import jsonschema
import onnx
import pytest
from clikit import WAIVER_REASON, maxpool_r2, run_cli, save
from onnx import helper as h

from sonnx_check.findings import Finding, ModelResult, NodeRef
from sonnx_check.report import github, junit, sarif

SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
REASON = WAIVER_REASON
# ::command key=value,key=value::message, with ',' ':' CR LF and '%' escaped in values (actions/toolkit).
ANNOTATION = re.compile(
    r"^::(?P<command>error|warning|notice) "
    r"file=(?P<file>[^,:\r\n]+),line=1,col=1,title=(?P<title>[^,:\r\n]+)"
    r"::(?P<message>[^\r\n]*)$"
)


@pytest.fixture(scope="module")
def reports(repo: Path) -> dict[str, str]:
    return {
        fmt: run_cli(["--format", fmt, "models"], cwd=repo).stdout
        for fmt in ("json", "sarif", "github", "junit")
    }


def _json_findings(reports: dict[str, str]) -> Counter[tuple[str, str]]:
    document = json.loads(reports["json"])
    return Counter((m["path"], f["rule"]) for m in document["models"] for f in m["findings"])


# -- SARIF ----------------------------------------------------------------------------------------------


def test_sarif_validates_against_the_sarif_2_1_0_schema(reports: dict[str, str]) -> None:
    log = json.loads(reports["sarif"])
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    errors = sorted(jsonschema.Draft4Validator(SCHEMA).iter_errors(log), key=str)
    assert not errors, errors[0]
    assert log["version"] == "2.1.0"
    assert log["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    # the validator does reject what the schema forbids (a result without its message)
    del log["runs"][0]["results"][0]["message"]
    assert list(jsonschema.Draft4Validator(SCHEMA).iter_errors(log))


def test_sarif_has_what_github_code_scanning_requires(reports: dict[str, str]) -> None:
    run = json.loads(reports["sarif"])["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert run["tool"]["driver"]["name"] == "sonnx-check"
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"].startswith("models/")
        assert physical["region"] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 2}
        assert re.fullmatch(r"[0-9a-f]{16}:\d+", result["partialFingerprints"]["primaryLocationLineHash"])
        assert result["message"]["text"]


def test_sarif_names_the_node_as_a_logical_location(reports: dict[str, str]) -> None:
    results = json.loads(reports["sarif"])["runs"][0]["results"]
    r4 = next(r for r in results if r["ruleId"] == "MaxPool.R4")
    (logical,) = r4["locations"][0]["logicalLocations"]
    assert logical == {
        "name": "/pool/MaxPool",
        "fullyQualifiedName": "main_graph/node[2]:/pool/MaxPool",
        "kind": "member",
    }
    assert r4["message"]["text"].startswith("MaxPool '/pool/MaxPool' (node #2): ceil_mode=1")
    assert r4["properties"]["opType"] == "MaxPool" and r4["properties"]["nodeIndex"] == 2
    load = next(r for r in results if r["ruleId"] == "MODEL.load")
    assert "logicalLocations" not in load["locations"][0]


def test_sarif_waived_finding_is_suppressed_with_its_reason(reports: dict[str, str]) -> None:
    results = json.loads(reports["sarif"])["runs"][0]["results"]
    waived = [r for r in results if "suppressions" in r]
    assert len(waived) == 1
    assert (
        waived[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "models/legacy/old.onnx"
    )
    assert waived[0]["suppressions"] == [{"kind": "external", "status": "accepted", "justification": REASON}]
    assert waived[0]["level"] == "note"
    older = next(
        r
        for r in results
        if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("older.onnx")
    )
    assert older["level"] == "error" and "suppressions" not in older


def _fingerprints(log: str) -> dict[tuple[str, str, int | None], str]:
    out = {}
    for r in json.loads(log)["runs"][0]["results"]:
        uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        key = (uri, r["ruleId"], r["properties"].get("nodeIndex"), r["properties"].get("tensor"))
        out[key] = r["partialFingerprints"]["primaryLocationLineHash"]
    return out


def test_sarif_fingerprints_are_stable_and_distinct(repo: Path, reports: dict[str, str]) -> None:
    first = _fingerprints(reports["sarif"])
    assert _fingerprints(run_cli(["--format", "sarif", "models"], cwd=repo).stdout) == first
    assert len(set(first.values())) == len(first)  # one per (model, rule, node)


def test_sarif_fingerprint_survives_an_unrelated_node_inserted_before(tmp_path: Path) -> None:
    model = maxpool_r2("/backbone/pool1")
    path = save(model, tmp_path / "m.onnx")
    before = json.loads(run_cli(["--isolated", "--format", "sarif", "m.onnx"], cwd=tmp_path).stdout)
    graph = model.graph
    graph.node[0].input[0] = "x_id"
    graph.node.insert(0, h.make_node("Identity", ["x"], ["x_id"], name="/stem/id"))
    graph.value_info.append(onnx.helper.make_tensor_value_info("x_id", onnx.TensorProto.FLOAT, [1, 1, 8, 8]))
    onnx.save(model, path)
    after = json.loads(run_cli(["--isolated", "--format", "sarif", "m.onnx"], cwd=tmp_path).stdout)

    def r2(log: dict) -> dict:
        return next(r for r in log["runs"][0]["results"] if r["ruleId"] == "MaxPool.R2")

    assert r2(after)["properties"]["nodeIndex"] == r2(before)["properties"]["nodeIndex"] + 1
    assert r2(after)["partialFingerprints"] == r2(before)["partialFingerprints"]


def test_sarif_uri_is_percent_encoded_and_absolute_paths_become_file_uris() -> None:
    assert sarif.artifact_uri("./my models/net#1.onnx") == "my%20models/net%231.onnx"
    assert sarif.artifact_uri("/abs/net.onnx") == "file:///abs/net.onnx"


# -- GitHub annotations -----------------------------------------------------------------------------------


def _github(report: str) -> tuple[list[str], list[str], str]:
    """The log group's lines, the annotations, the summary line."""
    lines = report.splitlines()
    assert lines[0].startswith("::group::sonnx-check: ") and "::endgroup::" in lines
    end = lines.index("::endgroup::")
    return lines[1:end], lines[end + 1 : -1], lines[-1]


def test_github_annotations_match_the_workflow_command_syntax(reports: dict[str, str]) -> None:
    log, annotations, summary = _github(reports["github"])
    assert summary.startswith("sonnx-check: ")
    for line in annotations:
        assert ANNOTATION.match(line), line
    commands = Counter(ANNOTATION.match(line)["command"] for line in annotations)  # type: ignore[index]
    assert commands["notice"] == 1  # the waived finding
    document = json.loads(reports["json"])
    groups = {
        (f["severity"], m["path"], f["rule"])
        for m in document["models"]
        for f in m["findings"]
        if not f.get("waived")
    }
    for kind in ("error", "warning"):  # one annotation per (model, rule)
        assert commands[kind] == sum(1 for g in groups if g[0] == kind)
    waived = next(line for line in annotations if line.startswith("::notice"))
    assert "file=models/legacy/old.onnx," in waived
    assert "title=sonnx-check (MaxPool.R2)::" in waived
    assert f"[reason: {REASON}]" in waived
    # the log lists every finding, one line each, starting with a word of ours
    assert len(log) == sum(_json_findings(reports).values())
    assert all(line.split(" ", 1)[0] in ("error", "warning", "waived") for line in log)


def test_github_annotation_lists_every_node_of_its_rule(tmp_path: Path) -> None:
    model = maxpool_r2("first")
    second = onnx.helper.make_node("MaxPool", ["y"], ["z"], name="second")
    second.attribute.extend(a for a in model.graph.node[0].attribute)
    model.graph.node.append(second)
    save(model, tmp_path / "m.onnx")
    report = run_cli(["--isolated", "--select", "MaxPool.R2", "--format", "github", "m.onnx"], cwd=tmp_path)
    _, annotations, _ = _github(report.stdout)
    (line,) = annotations
    match = ANNOTATION.match(line)
    assert match and match["title"] == "sonnx-check (MaxPool.R2)"
    assert match["message"].startswith("2 finding(s):%0AMaxPool 'first' (node #0): ")
    assert "%0AMaxPool 'second' (node #1): " in match["message"]


def test_github_stays_under_the_annotation_limits_and_says_what_it_left_out() -> None:
    few = [
        ModelResult(f"m{i}.onnx", [Finding("MaxPool.R2", "a"), Finding("MaxPool.R4", "b")]) for i in range(4)
    ]
    _, annotations, _ = _github(github.render(few))
    assert len(annotations) == 8  # 8 groups fit: one per (model, rule)
    many = [
        ModelResult(f"m{i:02d}.onnx", [Finding(rule, "m") for rule in ("MaxPool.R2", "MaxPool.R4")])
        for i in range(12)
    ]
    many.append(ModelResult("w.onnx", [Finding("GR4", "w", waived="accepted") for _ in range(3)]))
    _, annotations, summary = _github(github.render(many))
    commands = Counter(line.split(" ", 1)[0].split("::")[1] for line in annotations)
    assert commands == {"error": github.LIMIT, "notice": 2}
    # 24 groups do not fit: one annotation per model instead, listing each rule's findings
    assert "title=sonnx-check (2 rules)::2 finding(s):%0AMaxPool.R2: m%0AMaxPool.R4: m" in annotations[0]
    overflow = annotations[-1]
    assert overflow.startswith("::notice title=sonnx-check::2 error annotation(s) not shown")
    assert summary == (
        "sonnx-check: 13 model(s) checked, 24 error(s), 0 warning(s), 3 waived in 12 model(s); verdict: 24 "
        "profile violation(s), 0 unexplained divergence(s), 0 known runtime departure(s), 0 not compared; "
        "0 finding(s) fixable with `--fix`"
    )


def test_github_escapes_what_would_break_or_inject_a_command() -> None:
    node = NodeRef(0, "evil,name:x\n::error::injected", "MaxPool")
    result = ModelResult("./dir,1/a:b.onnx", [Finding("MaxPool.R4", "50% off\r\nsecond line", node=node)])
    log, (line,), summary = _github(github.render([result]))
    match = ANNOTATION.match(line)
    assert match, line
    assert match["file"] == "dir%2C1/a%3Ab.onnx"
    assert "%0A::error::injected" in match["message"] and "50%25 off%0D%0Asecond line" in match["message"]
    assert summary.startswith("sonnx-check: 1 model(s) checked")
    (entry,) = log  # the log line keeps the finding on one line
    assert entry.startswith("error MaxPool.R4 ./dir,1/a:b.onnx: ") and "\\n::error::injected" in entry


# -- JUnit ----------------------------------------------------------------------------------------------


def test_junit_parses_with_one_case_per_model_and_rule(reports: dict[str, str]) -> None:
    root = ET.fromstring(reports["junit"])
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {m for m, _ in _json_findings(reports)} | {"models/clean.onnx"}
    cases = {
        (s.get("name"), c.get("name")): c for s in root.findall("testsuite") for c in s.findall("testcase")
    }
    # Jenkins splits classname at its last dot: folders are the package, the model the class
    assert {c.get("classname") for s in root.findall("testsuite") for c in s.findall("testcase")} >= {
        "models.clean",
        "models.legacy.old",
    }
    for path, rule in _json_findings(reports):
        assert (path, rule) in cases
    clean = cases[("models/clean.onnx", junit.CLEAN_CASE)]
    assert list(clean) == []  # a passing case
    r4 = cases[("models/classifier.onnx", "MaxPool.R4")].find("failure")
    assert r4 is not None and "ceil_mode=1" in (r4.get("message") or "")
    broken = cases[("models/broken.onnx", "MODEL.load")].find("error")
    assert broken is not None and "cannot read the model" in (broken.get("message") or "")
    waived = cases[("models/legacy/old.onnx", "MaxPool.R2")].find("skipped")
    assert waived is not None and waived.get("message") == f"waived: {REASON}"
    # a model whose only finding is waived conforms
    assert ("models/legacy/old.onnx", junit.CLEAN_CASE) in cases
    assert ("models/legacy/older.onnx", junit.CLEAN_CASE) not in cases
    totals = {k: int(root.get(k, "-1")) for k in ("tests", "failures", "errors")}
    assert totals["tests"] == len(cases)
    assert totals["errors"] == 1 and sum(int(s.get("skipped", "0")) for s in suites.values()) == 1
    assert totals["failures"] == sum(1 for c in cases.values() if c.find("failure") is not None)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("models/net.onnx", "models.net"),
        ("./models/vision/resnet.v2.ONNX", "models.vision.resnet_v2"),
        ("net.onnx", "net"),
        ("weird/name", "weird.name"),
    ],
)
def test_junit_classname_has_no_onnx_class(path: str, expected: str) -> None:
    assert junit.classname(path) == expected


def test_junit_survives_control_characters_in_node_names() -> None:
    node = NodeRef(0, "bad\x00name\x1b", "MaxPool")
    text = junit.render([ModelResult("m.onnx", [Finding("MaxPool.R4", "m", node=node)])])
    case = ET.fromstring(text).find("testsuite/testcase")
    assert case is not None and case.find("failure") is not None


# -- same findings everywhere ---------------------------------------------------------------------------


def test_every_format_carries_the_same_findings(reports: dict[str, str]) -> None:
    expected = _json_findings(reports)
    results = json.loads(reports["sarif"])["runs"][0]["results"]
    in_sarif = Counter(
        (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["ruleId"]) for r in results
    )
    assert in_sarif == expected
    in_github = Counter()
    for line in _github(reports["github"])[0]:
        _, rule, path, _ = line.split(" ", 3)
        in_github[(path.removesuffix(":"), rule)] += 1
    assert in_github == expected
    root = ET.fromstring(reports["junit"])
    in_junit = Counter()
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            if case.get("name") == junit.CLEAN_CASE:
                continue
            body = next(iter(case), None)
            lines = (body.text or "").splitlines() if body is not None else []
            in_junit[(suite.get("name"), case.get("name"))] += len(lines)
    assert in_junit == expected


def test_json_report_keeps_the_rules_md_contract_and_marks_waivers(reports: dict[str, str]) -> None:
    document = json.loads(reports["json"])
    assert document["tool"]["name"] == "sonnx-check"
    assert document["configuration"] == {
        "file": "pyproject.toml",
        "fail_on": "error",
        "files": ["pyproject.toml"],
        "unused": [],
    }
    assert {m["configuration"] for m in document["models"]} == {"pyproject.toml"}
    for key in ("models", "findings", "errors", "warnings"):
        assert key in document["summary"]
    waived = [f for m in document["models"] for f in m["findings"] if f.get("waived")]
    assert [(f["rule"], f["waiver_reason"], f["node"]["name"]) for f in waived] == [
        ("MaxPool.R2", REASON, "/backbone/pool1")
    ]
    broken = next(m for m in document["models"] if m["path"].endswith("broken.onnx"))
    assert [f["rule"] for f in broken["findings"]] == ["MODEL.load"] and "node" not in broken["findings"][0]


def test_junit_and_the_step_summary_agree_on_what_conforms() -> None:
    """A model whose findings are all below --fail-on passes the run: JUnit gives it its passing "conforms"
    case, and the step summary must not call it "violations" (it did)."""
    from sonnx_check.findings import Severity
    from sonnx_check.report import step_summary

    warned = ModelResult("m.onnx", [Finding("Gemm.R2", "transB=1", severity=Severity.WARNING)])
    failed = ModelResult("f.onnx", [Finding("MaxPool.R4", "ceil_mode=1")])
    suites = {s.get("name"): s for s in ET.fromstring(junit.render([warned, failed])).findall("testsuite")}
    assert suites["m.onnx"].find(f"testcase[@name='{junit.CLEAN_CASE}']") is not None
    assert suites["f.onnx"].find(f"testcase[@name='{junit.CLEAN_CASE}']") is None
    text = step_summary.render([warned])
    assert "| m\\.onnx | conforms (1 below --fail-on) |" in text and "**passed**" in text
    text = step_summary.render([warned, failed])
    assert "| f\\.onnx | violations |" in text and "**failed**" in text
    strict = step_summary.render([warned], fail_on=Severity.WARNING)
    assert "| m\\.onnx | violations |" in strict and "**failed**" in strict
    strict_junit = ET.fromstring(junit.render([warned], fail_on=Severity.WARNING)).find("testsuite")
    assert strict_junit is not None and strict_junit.find(f"testcase[@name='{junit.CLEAN_CASE}']") is None
