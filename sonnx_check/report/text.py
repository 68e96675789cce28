"""The terminal report (rich): findings grouped by model, a coverage line per model, a summary line.

Colour and styles are decided by the Console the caller passes (no colour when not a terminal)."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from sonnx_check.findings import Coverage, Finding, ModelResult, Severity
from sonnx_check.report.summary import summarise

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow"}


def render(console: Console, results: list[ModelResult], *, quiet: bool = False) -> None:
    for result in results:
        _model(console, result, quiet)
    if not quiet:
        console.print(_summary_line(results))


def _model(console: Console, result: ModelResult, quiet: bool) -> None:
    if quiet and not result.findings:
        return
    status = (
        "[red]unreadable[/]"
        if result.load_error
        else ("[green]conforms[/]" if not any(f.waived is None for f in result.findings) else "")
    )
    console.print(Text.assemble((result.path, "bold"), " ") + Text.from_markup(status))
    for finding in result.findings:
        console.print(_finding_line(finding))
    if result.comparison and not quiet:
        from sonnx_check.report.comparison_table import render_comparison

        console.print(render_comparison(result.comparison))
    if result.coverage is not None and not quiet:
        console.print(Text("  " + coverage_line(result.coverage), style="dim"))


def _finding_line(finding: Finding) -> Text:
    line = Text("  ")
    line.append(f"{finding.rule}", style="bold cyan")
    line.append(" ")
    if finding.waived is not None:
        line.append("waived", style="dim")
    else:
        line.append(finding.severity.value, style=_STYLE[finding.severity])
    line.append(" ")
    line.append(finding.located_message())
    if finding.waived is not None:
        line.append(f" [waived: {finding.waived}]", style="dim")
    return line


def coverage_line(coverage: Coverage) -> str:
    def listing(counts: dict[str, int]) -> str:
        return ", ".join(f"{op} {n}" for op, n in sorted(counts.items())) or "none"

    with_rules = sum(coverage.operator_rules.values())
    general = sum(coverage.general_only.values())
    outside = sum(coverage.outside_profile.values())
    operator_rules = listing(coverage.operator_rules)
    return (
        f"coverage: {with_rules} node(s) checked against operator rules ({operator_rules}); "
        f"{general} against general rules only ({listing(coverage.general_only)}); "
        f"{outside} outside the profile ({listing(coverage.outside_profile)})"
    )


def _summary_line(results: list[ModelResult]) -> Text:
    s = summarise(results)
    failing = sum(1 for r in results if any(f.waived is None for f in r.findings))
    parts = [f"{s.models} model(s) checked", f"{s.errors} error(s)", f"{s.warnings} warning(s)"]
    if s.waived:
        parts.append(f"{s.waived} waived")
    if s.unreadable:
        parts.append(f"{s.unreadable} unreadable")
    style = "bold red" if s.errors or s.unreadable else ("yellow" if s.warnings else "bold green")
    tail = f" in {failing} model(s)" if failing else ""
    return Text(", ".join(parts) + tail, style=style)
