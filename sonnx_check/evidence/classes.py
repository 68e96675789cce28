"""The verdict classes of findings (``findings.VerdictClass``), counted for the record and the report."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sonnx_check.findings import Finding, VerdictClass

CLASSES = tuple(c.value for c in VerdictClass)


def verdict_class(finding: Finding) -> str:
    return finding.verdict_class.value


def class_totals(findings: Iterable[Finding]) -> dict[str, Any]:
    """Findings per class (every class present, in a fixed order): ``active`` the verdict's own (as every
    report counts them), ``waived`` those a waiver accepted, ``operator_level`` the active evidence about the
    runtime's operator on the profile's edge parameters, which is reported beside the verdict."""
    totals = {name: dict.fromkeys(CLASSES, 0) for name in ("active", "waived", "operator_level")}
    for finding in findings:
        if finding.waived is not None:
            bucket = "waived"
        else:
            bucket = "operator_level" if finding.operator_level else "active"
        totals[bucket][verdict_class(finding)] += 1
    return totals
