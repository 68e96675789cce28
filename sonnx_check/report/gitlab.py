"""GitLab Code Quality (``--format gitlab``): the JSON array GitLab reads from an
``artifacts: reports: codequality:`` file and shows in the merge request widget.

GitLab keeps a subset of the Code Climate issue format: ``description``, ``check_name``, ``fingerprint``,
``severity`` (info, minor, major, critical, blocker) and ``location`` (``path`` and ``lines.begin``). A model
has no lines, so every issue sits on line 1 of its model file, like the GitHub annotations.

GitLab tells new findings from fixed ones by ``fingerprint`` alone, between the target branch's report and
the merge request's: it must not change when nothing about the finding changed, and must differ between two
findings of one report. It hashes what identifies a finding (model, rule, node, tensor, attribute) and not
its message, whose numbers may be reworded; two findings alike in all of these get an occurrence number.
Waived findings are listed as ``info``, with the waiver's reason, so a reviewer sees what was accepted, and
so is operator-level evidence (severity info). Each description names the finding's verdict class and
``[*]`` when --fix can rewrite it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

from sonnx_check.findings import Finding, ModelResult, Severity
from sonnx_check.report.github import repository_path

# info: operator-level evidence about the runtime, beside the model's verdict
SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def render(results: list[ModelResult]) -> str:
    issues: list[dict[str, Any]] = []
    seen: Counter[str] = Counter()
    for result in results:
        path = repository_path(result.path)
        for finding in result.findings:
            identity = _identity(path, finding)
            seen[identity] += 1
            issues.append(_issue(path, finding, f"{identity}\x00{seen[identity]}"))
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"


def _identity(path: str, finding: Finding) -> str:
    node = finding.node
    parts = [path, finding.rule]
    if node is not None:
        parts += [node.graph, str(node.index), node.name, node.op_type]
    parts += [finding.tensor or "", finding.attribute or ""]
    return "\x00".join(parts)


def _issue(path: str, finding: Finding, identity: str) -> dict[str, Any]:
    fixable = " [*]" if finding.fixable else ""
    description = f"{finding.rule}: [{finding.verdict_class.value}]{fixable} {finding.located_message()}"
    if finding.waived is not None:
        description += f" [waived: {finding.waived}]"
    return {
        "description": description,
        "check_name": finding.rule,
        "fingerprint": hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest(),
        "severity": "info" if finding.waived is not None else SEVERITY[finding.severity],
        "location": {"path": path, "lines": {"begin": 1}},
    }
