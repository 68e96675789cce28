"""Counts shared by every reporter, so that all formats agree on what failed."""

from __future__ import annotations

from dataclasses import dataclass

from sonnx_check.findings import ModelResult, Severity


@dataclass(frozen=True)
class Summary:
    models: int
    findings: int
    errors: int
    warnings: int
    waived: int
    unreadable: int

    def to_json(self) -> dict[str, int]:
        return {
            "models": self.models,
            "findings": self.findings,
            "errors": self.errors,
            "warnings": self.warnings,
            "waived": self.waived,
            "unreadable": self.unreadable,
        }


def summarise(results: list[ModelResult]) -> Summary:
    active = [f for r in results for f in r.findings if f.waived is None]
    return Summary(
        models=len(results),
        findings=len(active),
        errors=sum(f.severity is Severity.ERROR for f in active),
        warnings=sum(f.severity is Severity.WARNING for f in active),
        waived=sum(f.waived is not None for r in results for f in r.findings),
        unreadable=sum(r.load_error for r in results),
    )
