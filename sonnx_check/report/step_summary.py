"""The Markdown summary a GitHub Actions job shows on its run page (appended to ``$GITHUB_STEP_SUMMARY``).

A table of models with their counts, then the findings (at most ``ROWS``; GitHub accepts 1 MiB per step, and
a page of thousands of rows helps nobody: the SARIF and JSON reports hold everything). Every model string
goes through ``sanitise.markdown``: control characters escaped, then every ASCII punctuation character
backslash-escaped, so a node name can be neither a link, an image, an HTML tag nor a table separator.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from sonnx_check import __version__
from sonnx_check.findings import Finding, ModelResult, Severity
from sonnx_check.report.readings import readings_text
from sonnx_check.report.summary import class_counts, is_internal, summarise
from sonnx_check.sanitise import markdown as _markdown

if TYPE_CHECKING:
    from sonnx_check.evidence.identity import ModelIdentity

ROWS = 200  # findings listed


def markdown(text: str) -> str:
    # The results arrive display-sanitised and cut already; this only makes them inert in Markdown.
    return _markdown(text, 100_000)


def render(
    results: list[ModelResult],
    *,
    configuration: str | None = None,
    fail_on: Severity = Severity.ERROR,
    identities: dict[str, ModelIdentity] | None = None,
) -> str:
    """``fail_on``: the run's failing severity, so that "conforms" means here what the exit code and the
    JUnit report mean by it: no unwaived finding at or above it. ``identities``: each model's hashes, by its
    path as in ``results`` (the sha256 column)."""
    s = summarise(results)
    identities = identities or {}
    lines = ["## sonnx-check", ""]
    failing = any(_failing(r, fail_on) for r in results)
    verdict = "failed" if failing or s.unreadable or s.internal_errors else "passed"
    lines.append(f"**{verdict}**: {markdown(s.line())}")
    lines.append("")
    lines.append(f"{markdown(s.classes_line())}; {markdown(s.fixable_line())}")
    if configuration:
        lines.append(f"(configuration: {markdown(configuration)})")
    lines.append(f"Checked by sonnx-check {__version__}.")
    lines += [
        "",
        "| model | status | errors | warnings | waived | profile violations | unexplained divergences "
        "| known departures | not compared | rules | sha256 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for result in results:
        active = [f for f in result.findings if f.waived is None]
        counts = Counter(f.severity.value for f in active)
        classes = " | ".join(str(n) for n in class_counts(result.findings).values())
        rules = ", ".join(f"{rule} ×{n}" for rule, n in Counter(f.rule for f in active).items())
        identity = identities.get(result.path)
        digest = f"`{identity.sha256}`" if identity is not None and identity.sha256 else "not read"
        if identity is not None and not identity.sha256 and identity.not_hashed:
            digest = markdown(identity.note)
        lines.append(
            f"| {markdown(result.path)} | {_status(result, active, fail_on)} | {counts['error']} | "
            f"{counts['warning']} | {len(result.findings) - len(active)} | {classes} | {markdown(rules)} | "
            f"{digest} |"
        )
    compared = [(r.path, readings_text(r.comparison)) for r in results if r.comparison]
    if compared:
        lines += [""] + [f"Compared {markdown(path)}: {markdown(text)}" for path, text in compared[:ROWS]]
    findings = [(r.path, f) for r in results for f in r.findings if f.waived is None]
    if findings:
        lines += ["", "<details><summary>Findings</summary>", ""]
        lines += ["| model | rule | severity | class | message |", "|---|---|---|---|---|"]
        lines += [_row(path, f) for path, f in findings[:ROWS]]
        if len(findings) > ROWS:
            lines += ["", f"{len(findings) - ROWS} more finding(s): see the SARIF or JSON report or the log."]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n\n"


def _failing(result: ModelResult, fail_on: Severity) -> bool:
    return any(f.waived is None and f.severity.rank >= fail_on.rank for f in result.findings)


def _status(result: ModelResult, active: list[Finding], fail_on: Severity) -> str:
    if result.load_error:
        return "unreadable"
    if is_internal(result):
        return "not checked (internal error)"
    if _failing(result, fail_on):
        return "violations"
    return f"conforms ({len(active)} below --fail-on)" if active else "conforms"


def _row(path: str, finding: Finding) -> str:
    fixable = " \\[\\*\\]" if finding.fixable else ""
    return (
        f"| {markdown(path)} | {markdown(finding.rule)} | {finding.severity.value} | "
        f"{finding.verdict_class.value}{fixable} | {markdown(finding.located_message())} |"
    )
