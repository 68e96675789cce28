"""What a comparison found: the findings and the typed ``ComparisonOutcome`` the reports render
(``sonnx_check.results``: the records every reader reads)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sonnx_check.findings import Finding
from sonnx_check.results.models import STATUSES, ComparisonOutcome
from sonnx_check.results.outputs import NOT_COMPARED

__all__ = ["NOT_COMPARED", "STATUSES", "CompareResult", "ComparisonOutcome"]


@dataclass
class CompareResult:
    findings: list[Finding]
    outcome: ComparisonOutcome

    @property
    def comparison(self) -> dict[str, Any]:
        """The outcome's JSON form, as the JSON output and the evidence record carry it."""
        return self.outcome.to_json()
