"""The verdict class of a finding: what kind of problem it is, for the record's totals and the report.

``Finding.verdict_class`` (issue 17) decides when the findings module has it; until then a local reading
of the same four classes stands in (``_local_class``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sonnx_check.findings import Finding

PROFILE_VIOLATION = "profile-violation"
UNEXPLAINED_DIVERGENCE = "unexplained-divergence"
KNOWN_DEPARTURE = "known-departure"
NOT_COMPARED = "not-compared"
CLASSES = (PROFILE_VIOLATION, UNEXPLAINED_DIVERGENCE, KNOWN_DEPARTURE, NOT_COMPARED)


def verdict_class(finding: Finding) -> str:
    own = getattr(finding, "verdict_class", None)
    return str(own) if own is not None else _local_class(finding)


def _local_class(finding: Finding) -> str:
    if finding.rule == "RUNTIME.not-compared":
        return NOT_COMPARED
    if finding.rule == "RUNTIME.divergence":
        data = finding.data or {}
        if data.get("known_divergence") and not data.get("unexplained"):
            return KNOWN_DEPARTURE
        return UNEXPLAINED_DIVERGENCE
    return PROFILE_VIOLATION


def class_totals(findings: Iterable[Finding]) -> dict[str, Any]:
    """Active findings per class (every class present, in a fixed order), and the waived ones apart."""
    active = dict.fromkeys(CLASSES, 0)
    waived = dict.fromkeys(CLASSES, 0)
    for finding in findings:
        bucket = waived if finding.waived is not None else active
        bucket[verdict_class(finding)] += 1
    return {"active": active, "waived": waived}
