"""JUnit XML: one test suite per model, one test case per (model, rule) that fired, one passing case per
model that conforms (anchors.md §2.3: better than ruff's single "No errors found" case, because a CI
dashboard then counts models).

A rule whose findings are all waived is a skipped case whose message is the waiver's reason; findings
below the failing severity (``--fail-on``) are a passing case that lists them; an unreadable model is an
``error`` case (MODEL.load), matching exit code 2, and so is a model whose check failed inside sonnx-check
(MODEL.internal-error, exit code 3).

The document is valid against the Jenkins xUnit plugin's JUnit schema (junit-10.xsd, vendored in
tests/formats): ``file`` on the test suite (the schema has no ``file`` on a test case), no ``skipped`` on
``testsuites``, and ``time`` (seconds, the whole run) on ``testsuites``; per-model durations are not
measured, so test suites carry a ``timestamp`` instead of a made-up ``time``.

Each test suite's properties name the tool's version and the model's sha256 (and each external-data
file's), so a CI dashboard shows which file a verdict is about.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from sonnx_check import __version__
from sonnx_check.findings import Finding, ModelResult, Severity
from sonnx_check.report.readings import comparison_readings
from sonnx_check.report.summary import INTERNAL_RULE, class_counts
from sonnx_check.sanitise import display

if TYPE_CHECKING:
    from sonnx_check.evidence.identity import ModelIdentity

CLEAN_CASE = "conforms"
# XML 1.0 cannot carry most control characters, which node names from a model file may contain.
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _INVALID_XML.sub("\ufffd", text)


def classname(path: str) -> str:
    """The model as a Java-style class name: Jenkins splits ``classname`` at its last dot into package and
    class, so ``models/net.onnx`` would show as class ``onnx`` of package ``models/net``. Folders become the
    package and the file name without ``.onnx`` the class (``models.net``); a dot in a name becomes ``_``."""
    text = path.replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    if text.lower().endswith(".onnx"):
        text = text[: -len(".onnx")]
    parts = [part.replace(".", "_") for part in text.split("/") if part]
    return _clean(".".join(parts) or path)


def _line(finding: Finding) -> str:
    fixable = " [*]" if finding.fixable else ""
    text = (
        f"{finding.rule} {finding.severity.value} [{finding.verdict_class.value}]{fixable}: "
        f"{finding.located_message()}"
    )
    return text + (f" [waived: {finding.waived}]" if finding.waived is not None else "")


def render(
    results: list[ModelResult],
    *,
    fail_on: Severity = Severity.ERROR,
    seconds: float | None = None,
    timestamp: str | None = None,
    identities: dict[str, ModelIdentity] | None = None,
) -> str:
    """``seconds``: how long the run took; ``timestamp``: when it started (ISO 8601, no time zone, as
    the schema's consumers expect); ``identities``: each model's hashes, by its path as in ``results``."""
    root = ET.Element("testsuites", name="sonnx-check")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for result in results:
        suite = _suite(result, fail_on, (identities or {}).get(result.path))
        if timestamp is not None:
            suite.set("timestamp", timestamp)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    if seconds is not None:
        root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(result: ModelResult, fail_on: Severity, identity: ModelIdentity | None) -> ET.Element:
    path = _clean(result.path)
    suite = ET.Element("testsuite", name=path, file=path)
    model_class = classname(result.path)
    # the schema puts properties first in a testsuite: the tool and the model's identity, the verdict's
    # classes, then the comparison's readings
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="sonnx-check.version", value=__version__)
    if identity is not None:
        value = identity.sha256 or _clean(display(identity.note))
        ET.SubElement(properties, "property", name="sonnx-check.model.sha256", value=value)
    for external in identity.external_data if identity is not None else ():
        ET.SubElement(
            properties,
            "property",
            name=_clean(f"sonnx-check.external-data.sha256:{display(external.location)}"),
            value=external.sha256 or _clean(display(external.note)),
        )
    for name, count in class_counts(result.findings).items():
        ET.SubElement(properties, "property", name=f"sonnx-check.class.{name}", value=str(count))
    for name, value in comparison_readings(result.comparison).items():
        ET.SubElement(properties, "property", name=f"sonnx-check.compare.{name}", value=_clean(value))
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    by_rule: dict[str, list[Finding]] = {}
    for finding in result.findings:
        by_rule.setdefault(finding.rule, []).append(finding)
    failing_model = False
    for rule, findings in by_rule.items():
        case = ET.SubElement(suite, "testcase", classname=model_class, name=_clean(rule))
        counts["tests"] += 1
        active = [f for f in findings if f.waived is None]
        failing = [f for f in active if f.severity.rank >= fail_on.rank]
        body = _clean("\n".join(_line(f) for f in findings))
        if (result.load_error and rule == "MODEL.load") or rule == INTERNAL_RULE:
            element = ET.SubElement(case, "error", type=rule, message=_clean(findings[0].message))
            element.text = body
            counts["errors"] += 1
            failing_model = True
        elif failing:
            more = f" (and {len(failing) - 1} more)" if len(failing) > 1 else ""
            message = _clean(failing[0].located_message() + more)
            element = ET.SubElement(case, "failure", type=failing[0].severity.value, message=message)
            element.text = body
            counts["failures"] += 1
            failing_model = True
        elif not active:
            reasons = "; ".join(dict.fromkeys(f.waived or "" for f in findings))
            ET.SubElement(case, "skipped", message=_clean(f"waived: {reasons}")).text = body
            counts["skipped"] += 1
        else:
            ET.SubElement(case, "system-out").text = body  # below --fail-on: reported, passing
    if not failing_model:
        ET.SubElement(suite, "testcase", classname=model_class, name=CLEAN_CASE)
        counts["tests"] += 1
    for key, count in counts.items():
        suite.set(key, str(count))
    return suite
