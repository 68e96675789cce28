"""JUnit XML validated against the Jenkins xUnit plugin's JUnit schema (junit-10.xsd), vendored here.

The schema is read, not hand-copied: every element it declares, with its attributes (required ones, and no
other), its allowed children, the SUREFIRE_TIME pattern and whether it may hold text, is checked on every
element of the report. The validator rejects what sonnx-check wrote before (``file`` on a test case,
``skipped`` on ``testsuites``), so it is not vacuous."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from clikit import model_repository, run_cli, write_pyproject

from sonnx_check.findings import Finding, ModelResult, NodeRef, Severity
from sonnx_check.report import junit

XS = "{http://www.w3.org/2001/XMLSchema}"
XSD = Path(__file__).parent / "junit-10.xsd"


@dataclass
class Declared:
    attributes: dict[str, str] = field(default_factory=dict)  # name -> type
    required: set[str] = field(default_factory=set)
    children: set[str] = field(default_factory=set)
    text: bool = False  # mixed content or a simple string type


def _schema() -> tuple[dict[str, Declared], dict[str, re.Pattern[str]]]:
    root = ET.parse(XSD).getroot()
    patterns = {
        simple.get("name", ""): re.compile(simple.find(f"{XS}restriction/{XS}pattern").get("value") + r"\Z")  # type: ignore[union-attr]
        for simple in root.findall(f"{XS}simpleType")
    }
    named = {c.get("name"): c for c in root.findall(f"{XS}complexType")}
    elements: dict[str, Declared] = {}
    for element in root.findall(f"{XS}element"):
        declared = Declared()
        kind = element.get("type")
        complex_type = element.find(f"{XS}complexType") if kind is None else named.get(kind)
        if complex_type is None:  # xs:string
            declared.text = True
        else:
            declared.text = complex_type.get("mixed") == "true"
            for attribute in complex_type.iter(f"{XS}attribute"):
                declared.attributes[attribute.get("name", "")] = attribute.get("type", "xs:string")
                if attribute.get("use") == "required":
                    declared.required.add(attribute.get("name", ""))
            for child in complex_type.iter(f"{XS}element"):
                declared.children.add(child.get("ref") or child.get("name") or "")
        elements[element.get("name", "")] = declared
    return elements, patterns


ELEMENTS, PATTERNS = _schema()


def violations(document: str) -> list[str]:
    root = ET.fromstring(document)
    problems = [] if root.tag in ("testsuites", "testsuite") else [f"root element {root.tag}"]
    for element in root.iter():
        declared = ELEMENTS.get(element.tag)
        if declared is None:
            problems.append(f"undeclared element {element.tag}")
            continue
        for name, value in element.attrib.items():
            if name not in declared.attributes:
                problems.append(f"{element.tag}: undeclared attribute {name}")
            elif declared.attributes[name] in PATTERNS and not PATTERNS[declared.attributes[name]].match(
                value
            ):
                problems.append(f"{element.tag}: {name}={value!r} does not match {declared.attributes[name]}")
        problems += [f"{element.tag}: missing {name}" for name in declared.required - set(element.attrib)]
        problems += [f"{element.tag}: child {c.tag}" for c in element if c.tag not in declared.children]
        texts = [element.text or ""] + [c.tail or "" for c in element]
        if not declared.text and any(t.strip() for t in texts):
            problems.append(f"{element.tag}: text content")
    return problems


def test_the_schema_is_read() -> None:
    assert {"testsuites", "testsuite", "testcase", "failure", "error", "skipped", "system-out"} <= set(
        ELEMENTS
    )
    assert ELEMENTS["testsuite"].required == {"name", "tests", "failures", "errors"}
    assert (
        "file" not in ELEMENTS["testcase"].attributes and "skipped" not in ELEMENTS["testsuites"].attributes
    )
    assert PATTERNS["SUREFIRE_TIME"].match("0.125") and not PATTERNS["SUREFIRE_TIME"].match("1e-3")


def test_the_validator_rejects_what_sonnx_check_used_to_write() -> None:
    old = (
        '<testsuites name="sonnx-check" tests="1" failures="0" errors="0" skipped="0">'
        '<testsuite name="m.onnx" tests="1" failures="0" errors="0" skipped="0">'
        '<testcase classname="m.onnx" name="conforms" file="m.onnx" /></testsuite></testsuites>'
    )
    assert violations(old) == [
        "testsuites: undeclared attribute skipped",
        "testcase: undeclared attribute file",
    ]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    model_repository(root)
    write_pyproject(
        root,
        """
        [tool.sonnx-check]
        [[tool.sonnx-check.waivers]]
        rule = "MaxPool.R2"
        models = "models/legacy/old.onnx"
        reason = "accepted"
        """,
    )
    return root


@pytest.mark.parametrize("fail_on", ["error", "warning"])
def test_every_junit_report_is_valid(repo: Path, fail_on: str) -> None:
    result = run_cli(["--format", "junit", "--fail-on", fail_on, "models"], cwd=repo)
    assert result.code == 2  # broken.onnx
    assert violations(result.stdout) == []
    root = ET.fromstring(result.stdout)
    assert PATTERNS["SUREFIRE_TIME"].match(root.get("time", "")) and float(root.get("time", "x")) >= 0
    kinds = {child.tag for case in root.iter("testcase") for child in case}
    assert {"failure", "error", "skipped"} <= kinds  # every shape of case is covered
    assert all(suite.get("file") == suite.get("name") for suite in root.iter("testsuite"))


def test_hostile_names_and_internal_errors_stay_valid() -> None:
    node = NodeRef(0, "a\x00b\x1b\ufffe]]>&<", "Op\x0c")
    results = [
        ModelResult("m\x01.onnx", [Finding("GR4", "m\x02", Severity.WARNING, node=node)]),
        ModelResult("c.onnx", [Finding("MODEL.internal-error", "crashed", Severity.ERROR)]),
    ]
    document = junit.render(results, seconds=1234.5, timestamp="2025-01-01T00:00:00")
    assert violations(document) == []
    assert ET.fromstring(document).find("testsuite[2]/testcase/error") is not None
