"""Counts shared by every reporter, so that all formats agree on what failed."""

from __future__ import annotations

from dataclasses import dataclass

from sonnx_check.findings import ModelResult, Severity

# The finding that stands for a model whose check failed inside sonnx-check (exit 3): the model stays in every
# report, so a SARIF upload after a crash does not close that model's open alerts.
INTERNAL_RULE = "MODEL.internal-error"


@dataclass(frozen=True)
class Summary:
    models: int
    findings: int
    errors: int
    warnings: int
    waived: int
    unreadable: int
    internal_errors: int = 0
    failing_models: int = 0  # models with at least one active finding

    def to_json(self) -> dict[str, int]:
        return {
            "models": self.models,
            "findings": self.findings,
            "errors": self.errors,
            "warnings": self.warnings,
            "waived": self.waived,
            "unreadable": self.unreadable,
            "internal_errors": self.internal_errors,
        }

    def line(self) -> str:
        """``2 model(s) checked, 2 error(s), 0 warning(s), 1 unreadable in 2 model(s)``: the text report's
        last line, the annotation format's and the stderr summary of a report written to a file."""
        # an unreadable model was not checked: "1 model(s) checked" for a missing path misled users
        checked = self.models - self.unreadable
        parts = [f"{checked} model(s) checked", f"{self.errors} error(s)", f"{self.warnings} warning(s)"]
        if self.waived:
            parts.append(f"{self.waived} waived")
        if self.unreadable:
            parts.append(f"{self.unreadable} unreadable")
        if self.internal_errors:
            parts.append(f"{self.internal_errors} internal error(s)")
        tail = f" in {self.failing_models} model(s)" if self.failing_models else ""
        return ", ".join(parts) + tail


def summarise(results: list[ModelResult]) -> Summary:
    active = [f for r in results for f in r.findings if f.waived is None]
    return Summary(
        models=len(results),
        findings=len(active),
        errors=sum(f.severity is Severity.ERROR for f in active),
        warnings=sum(f.severity is Severity.WARNING for f in active),
        waived=sum(f.waived is not None for r in results for f in r.findings),
        unreadable=sum(r.load_error for r in results),
        internal_errors=sum(is_internal(r) for r in results),
        failing_models=sum(1 for r in results if any(f.waived is None for f in r.findings)),
    )


def is_internal(result: ModelResult) -> bool:
    return any(f.rule == INTERNAL_RULE for f in result.findings)


@dataclass(frozen=True)
class RuleCount:
    """``--statistics``: how often one rule fired, active and waived apart."""

    rule: str
    count: int
    waived: int
    severity: Severity

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "count": self.count,
            "waived": self.waived,
            "severity": self.severity.value,
        }


def rule_counts(results: list[ModelResult]) -> list[RuleCount]:
    """One entry per rule with at least one finding, most frequent first, then in catalogue order (so two
    runs over the same models print the same table)."""
    from sonnx_check.catalogue import catalogue

    order = {rule: i for i, rule in enumerate(catalogue())}
    active: dict[str, int] = {}
    waived: dict[str, int] = {}
    severity: dict[str, Severity] = {}
    for result in results:
        for finding in result.findings:
            bucket = waived if finding.waived is not None else active
            bucket[finding.rule] = bucket.get(finding.rule, 0) + 1
            severity.setdefault(finding.rule, finding.severity)
    rules = sorted(
        severity, key=lambda r: (-active.get(r, 0), -waived.get(r, 0), order.get(r, len(order)), r)
    )
    return [RuleCount(r, active.get(r, 0), waived.get(r, 0), severity[r]) for r in rules]
