"""Applying configured waivers to the findings of one model.

A waiver never removes a finding: certification evidence must show what was accepted and why. It sets
``Finding.waived`` to the waiver's reason, which every reporter shows and the exit code ignores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sonnx_check.config import Waiver
from sonnx_check.findings import Finding, ModelResult


def covers(waiver: Waiver, finding: Finding) -> bool:
    """Whether a waiver (already matched to the model) covers a finding: same rule, and the node's name or
    operator type when the waiver names them. A waiver naming a node never covers a model-level finding."""
    if finding.rule not in waiver.rules:
        return False
    if waiver.node and (finding.node is None or finding.node.name not in waiver.node):
        return False
    if waiver.op_type and (finding.node is None or finding.node.op_type not in waiver.op_type):
        return False
    return True


def apply_waivers(result: ModelResult, waivers: Sequence[Waiver]) -> ModelResult:
    """The result with every covered finding marked waived (the first matching waiver's reason wins, so the
    order of the configuration file decides, predictably)."""
    if not waivers:
        return result
    findings: list[Finding] = []
    for finding in result.findings:
        waiver = next((w for w in waivers if covers(w, finding)), None)
        findings.append(replace(finding, waived=waiver.reason) if waiver is not None else finding)
    return replace(result, findings=findings)
