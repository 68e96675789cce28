"""Counts shared by every reporter, so that all formats agree on what failed."""

from __future__ import annotations

from dataclasses import dataclass

from sonnx_check.findings import Finding, ModelResult, Severity, VerdictClass

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
    info: int = 0  # active operator-level findings (severity info): beside the verdict, never failing
    classes: dict[str, int] | None = None  # the model's verdict: active findings per VerdictClass
    fixable: int = 0  # active findings --fix has a rewrite for
    profile_warnings: int = 0  # of the profile violations, those of severity warning (exit 0 by default)

    def to_json(self) -> dict[str, object]:
        return {
            "models": self.models,
            "findings": self.findings,
            "errors": self.errors,
            "warnings": self.warnings,
            "info": self.info,
            "waived": self.waived,
            "unreadable": self.unreadable,
            "internal_errors": self.internal_errors,
            "classes": dict(self.classes or class_counts([])),
            "fixable": self.fixable,
            "profile_warnings": self.profile_warnings,
        }

    def classes_line(self) -> str:
        """``verdict: 2 profile violation(s), 0 unexplained divergence(s), 1 known runtime departure(s), 0
        not compared``: the first line of the text report and of the step summary. Warnings are counted
        apart (``1 profile violation(s), 6 profile warning(s), ...``: six warnings above exit 0 read as six
        violations), and so are unreadable models (``1 unreadable``), which were not checked at all."""
        counts = dict(self.classes or class_counts([]))
        violations = VerdictClass.PROFILE_VIOLATION.value
        counts[violations] -= self.profile_warnings
        parts = [f"{counts[c.value]} {CLASS_TITLES[c]}" for c in VerdictClass]
        if self.profile_warnings:
            parts.insert(1, f"{self.profile_warnings} profile warning(s)")
        if self.unreadable:
            parts.append(f"{self.unreadable} unreadable")
        return "verdict: " + ", ".join(parts)

    def fixable_line(self) -> str:
        return f"{self.fixable} finding(s) fixable with `--fix`"

    def line(self) -> str:
        """``2 model(s) checked, 2 error(s), 0 warning(s), 1 unreadable in 2 model(s)`` (the unreadable model
        not among the errors nor the failing models): the text report's
        last line, the annotation format's and the stderr summary of a report written to a file."""
        # an unreadable model was not checked: "1 model(s) checked" for a missing path misled users
        checked = self.models - self.unreadable
        parts = [f"{checked} model(s) checked", f"{self.errors} error(s)", f"{self.warnings} warning(s)"]
        if self.info:
            parts.append(f"{self.info} info")
        if self.waived:
            parts.append(f"{self.waived} waived")
        if self.unreadable:
            parts.append(f"{self.unreadable} unreadable")
        if self.internal_errors:
            parts.append(f"{self.internal_errors} internal error(s)")
        tail = f" in {self.failing_models} model(s)" if self.failing_models else ""
        return ", ".join(parts) + tail


CLASS_TITLES = {
    VerdictClass.PROFILE_VIOLATION: "profile violation(s)",
    VerdictClass.UNEXPLAINED_DIVERGENCE: "unexplained divergence(s)",
    VerdictClass.KNOWN_DEPARTURE: "known runtime departure(s)",
    VerdictClass.NOT_COMPARED: "not compared",
}


# The finding that stands for a model that could not be read: the model was not checked, so it is counted as
# unreadable, never as a profile violation.
LOAD_RULE = "MODEL.load"


def in_verdict(finding: Finding) -> bool:
    """An active finding of the model's verdict: not waived, not operator-level evidence."""
    return finding.waived is None and not finding.operator_level


def class_counts(findings: list[Finding]) -> dict[str, int]:
    """Every class with its count of findings in the model's verdict (waived and operator-level apart; an
    unreadable model's MODEL.load is no class: it counts as unreadable)."""
    counts = dict.fromkeys((c.value for c in VerdictClass), 0)
    for finding in findings:
        if in_verdict(finding) and finding.rule != LOAD_RULE:
            counts[finding.verdict_class.value] += 1
    return counts


def summarise(results: list[ModelResult]) -> Summary:
    every = [f for r in results for f in r.findings]
    active = [f for f in every if f.waived is None]
    return Summary(
        models=len(results),
        findings=len(active),
        errors=sum(f.severity is Severity.ERROR and f.rule != LOAD_RULE for f in active),
        warnings=sum(f.severity is Severity.WARNING for f in active),
        info=sum(f.severity is Severity.INFO for f in active),
        classes=class_counts(every),
        fixable=sum(f.fixable for f in active),
        profile_warnings=sum(
            in_verdict(f)
            and f.rule != LOAD_RULE
            and f.severity is Severity.WARNING
            and f.verdict_class is VerdictClass.PROFILE_VIOLATION
            for f in every
        ),
        waived=sum(f.waived is not None for r in results for f in r.findings),
        unreadable=sum(r.load_error for r in results),
        internal_errors=sum(is_internal(r) for r in results),
        failing_models=sum(1 for r in results if not r.load_error and any(in_verdict(f) for f in r.findings)),
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
    fixable: int = 0  # active findings of the rule --fix has a rewrite for

    def to_json(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "count": self.count,
            "waived": self.waived,
            "severity": self.severity.value,
            "fixable": self.fixable,
        }


def rule_counts(results: list[ModelResult]) -> list[RuleCount]:
    """One entry per rule with at least one finding, most frequent first, then in catalogue order (so two
    runs over the same models print the same table)."""
    from sonnx_check.catalogue import catalogue

    order = {rule: i for i, rule in enumerate(catalogue())}
    active: dict[str, int] = {}
    waived: dict[str, int] = {}
    severity: dict[str, Severity] = {}
    fixable: dict[str, int] = {}
    for result in results:
        for finding in result.findings:
            bucket = waived if finding.waived is not None else active
            bucket[finding.rule] = bucket.get(finding.rule, 0) + 1
            if finding.fixable and finding.waived is None:
                fixable[finding.rule] = fixable.get(finding.rule, 0) + 1
            # the rule's severity as it fails a run: the highest of its findings (a divergence is an
            # error, its operator-level evidence info)
            if finding.severity.rank > severity.get(finding.rule, Severity.INFO).rank or (
                finding.rule not in severity
            ):
                severity[finding.rule] = finding.severity
    rules = sorted(
        severity, key=lambda r: (-active.get(r, 0), -waived.get(r, 0), order.get(r, len(order)), r)
    )
    return [RuleCount(r, active.get(r, 0), waived.get(r, 0), severity[r], fixable.get(r, 0)) for r in rules]
