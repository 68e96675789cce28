"""The terminal report (rich): the verdict's class totals and how many findings --fix can rewrite, then
findings grouped by model (``[*]`` marks one --fix can rewrite), a coverage line per model, a summary line.

Colour and styles are decided by the Console the caller passes (no colour when not a terminal).
With --fix, each model's rewrites and what was left to a person come before the re-checked model; with
--statistics, a count per rule replaces the per-finding lines (as ruff does).

Every string here that a model controls arrives display-sanitised (``sanitise.for_display``) and is put in a
``Text`` (a ``styled.StyledText``: rich's ``Text`` once a rich Console prints it), never in a markup
string: a node named ``[link=...]`` stays those characters. Piped without colour, a ``styled.PlainConsole``
writes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sonnx_check.findings import Coverage, Finding, ModelResult, Severity
from sonnx_check.report import NARROW_TERMINAL
from sonnx_check.report.styled import PlainConsole
from sonnx_check.report.styled import StyledText as Text
from sonnx_check.report.summary import in_verdict, is_internal, rule_counts, summarise

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text as RichText

    from sonnx_check.fix.outcome import FixOutcome

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "blue"}
_DIFF_STYLES = {"---": "bold", "+++": "bold", "@@ ": "cyan", "-": "red", "+": "green"}
FIXABLE_MARK = "[*]"


def render(
    console: Console | PlainConsole,
    results: list[ModelResult],
    *,
    quiet: bool = False,
    fixes: Sequence[FixOutcome | None] | None = None,
    statistics: bool = False,
    configuration: str | None = None,
) -> None:
    """``configuration`` heads the report: which configuration file the models were checked with."""
    if configuration and not quiet:
        console.print(Text(f"configuration: {configuration}", style="dim"))
    if not quiet:
        summary = summarise(results)
        # soft_wrap off: on a narrow terminal rich breaks the line between words, not the terminal mid-word
        console.print(Text(summary.classes_line(), style="bold"), soft_wrap=False)
        hidden = _unsafe_only(results)
        more = f"; {hidden} more with `--unsafe-fixes`" if hidden else ""
        console.print(Text(f"{summary.fixable_line()} (marked {FIXABLE_MARK}){more}"), soft_wrap=False)
    if statistics:
        render_statistics(console, results)
    else:
        for i, result in enumerate(results):
            fix = fixes[i] if fixes is not None else None
            if fix is not None:
                _fix_block(console, fix, result)
            rechecked = fix is not None and fix.output is not None
            _model(console, result, quiet, "(fixed model, re-checked)" if rechecked else "")
    if not quiet:
        console.print(_summary_line(results))


def _unsafe_only(results: list[ModelResult]) -> int:
    """Active findings only an unsafe rewrite removes, not marked (ruff says how many fixes it hides)."""
    candidates = [f for r in results for f in r.findings if not f.fixable and in_verdict(f)]
    if not candidates:
        return 0
    from sonnx_check.fix import UNSAFE_RULES, fixable

    return sum(f.rule in UNSAFE_RULES and fixable(f, unsafe=True) for f in candidates)


def render_statistics(console: Console | PlainConsole, results: list[ModelResult]) -> None:
    """One line per rule that fired, as ruff prints them: active count, waived count when any, rule ID, the
    fixable marker ``[*]`` (with how many of the rule's findings --fix can rewrite when not all), title."""
    from sonnx_check.catalogue import catalogue

    counts = rule_counts(results)
    width = max((len(c.rule) for c in counts), default=0)
    show_waived = any(c.waived for c in counts)
    show_fixable = any(c.fixable for c in counts)
    for c in counts:
        entry = catalogue().get(c.rule)
        line = Text(f"{c.count:6d}  ")
        if show_waived:
            line.append(f"{c.waived:4d} waived  " if c.waived else " " * 13, style="dim")
        line.append(c.rule.ljust(width), style="bold cyan")
        if show_fixable:
            line.append(f"  {FIXABLE_MARK}" if c.fixable else "     ", style="green")
        line.append(f"  {entry.title if entry else ''}".rstrip())
        if c.fixable and c.fixable != c.count:
            line.append(f" ({c.fixable} fixable)", style="green")
        console.print(line)


def _fix_block(console: Console | PlainConsole, fix: FixOutcome, result: ModelResult) -> None:
    """What --fix rewrote, what it left and why; then how many findings remain for a person."""
    remaining = sum(f.waived is None for f in result.findings)
    if not fix.rewrites and not fix.not_fixed and not remaining:
        return  # a conforming model: nothing to say
    if fix.preview:
        head = Text.assemble(
            (fix.source, "bold"),
            f": --fix would make {len(fix.rewrites)} rewrite(s) (--diff: nothing written)",
        )
    elif fix.output is not None:
        head = Text.assemble(
            (fix.source, "bold"), f": --fix wrote {fix.output} ({len(fix.rewrites)} rewrite(s))"
        )
        if fix.data is not None:
            head.append(f", its external data to {fix.data}")
    else:
        head = Text.assemble((fix.source, "bold"), ": --fix found nothing it can rewrite; no file written")
    console.print(head)
    for text in fix.diff:  # ruff --diff's colours: removed red, added green, hunk headers cyan
        style = _DIFF_STYLES.get(text[:3], _DIFF_STYLES.get(text[:1], ""))
        console.print(Text(text, style=style))
    for rewrite in fix.rewrites:
        line = Text("  would fix " if fix.preview else "  fixed ", style="green")
        line.append(rewrite.rule, style="bold cyan")
        line.append(" " + rewrite.located())
        console.print(line)
    for left in fix.not_fixed:
        line = Text("  not fixed ", style="yellow")
        line.append(left.rule, style="bold cyan")
        line.append(" " + left.located())
        console.print(line)
    if remaining and not fix.preview:  # with --diff, the findings below are the unfixed model's
        where = "the fixed model" if fix.output is not None else "the model"
        console.print(Text(f"  {remaining} finding(s) remain in {where}: they need a person", style="yellow"))


def _model(console: Console | PlainConsole, result: ModelResult, quiet: bool, note: str = "") -> None:
    if quiet and not result.findings:
        return
    if result.load_error:
        status = Text("unreadable", style="red")
    elif is_internal(result):
        status = Text("not checked (internal error)", style="red")
    elif not any(in_verdict(f) for f in result.findings):
        status = Text("conforms", style="green")
    else:
        status = Text("")
    header = Text(result.path, style="bold")
    for part in (Text(note, style="dim"), status):
        if part.plain:
            header.append(" ").append(part)
    console.print(header)
    for finding in result.findings:
        print_hanging(console, _finding_line(finding))
    if result.comparison and not quiet:
        from sonnx_check.report.comparison_table import render_comparison

        # soft_wrap off: on a terminal rich then breaks long lines between words, not the terminal mid-word
        table = render_comparison(result.comparison, wrap=console.is_terminal, width=console.width)
        console.print(table, soft_wrap=False)
    if result.coverage is not None and not quiet:
        narrow = console.is_terminal and console.width < NARROW_TERMINAL
        line = Text("  " + coverage_line(result.coverage, compact=narrow), style="dim")
        console.print(line, soft_wrap=False)


HANGING = 6  # a finding's continuation lines on a terminal start under its rule ID's text, plus four


def print_hanging(console: Console | PlainConsole, line: Text) -> None:
    """A finding on a terminal: wrapped between words at the terminal's width, its continuation lines
    indented (a RUNTIME.divergence line runs to 650 characters, which the terminal would cut anywhere).
    Piped, one line, whatever its length (a CI log line is never split)."""
    if isinstance(console, PlainConsole) or not console.is_terminal:
        console.print(line)
        return
    rich_line: RichText = line.__rich__()
    wrapped = rich_line.wrap(console, max(20, console.width - HANGING), overflow="fold")
    for i, part in enumerate(wrapped):
        if i:
            part.pad_left(HANGING)
        console.print(part, soft_wrap=False)


def _finding_line(finding: Finding) -> Text:
    line = Text("  ")
    line.append(f"{finding.rule}", style="bold cyan")
    line.append(" ")
    if finding.waived is not None:
        line.append("waived", style="dim")
    else:
        line.append(finding.severity.value, style=_STYLE[finding.severity])
    if finding.rule.startswith("RUNTIME."):  # a static finding is always a profile violation
        line.append(f" [{finding.verdict_class.value}]", style="magenta")
    if finding.fixable:
        line.append(" " + FIXABLE_MARK, style="green")
    line.append(" ")
    line.append(finding.located_message())
    if finding.waived is not None:
        line.append(f" [waived: {finding.waived}]", style="dim")
    return line


def coverage_line(coverage: Coverage, *, compact: bool = False) -> str:
    """The whole statement; ``compact`` (a narrow terminal, where the statement took four lines per
    model) keeps the counts of the non-empty depths and leaves the per-operator lists to --format json."""
    if not compact:
        return coverage.statement()
    depths = (
        ("operator rules", coverage.operator_rules),
        ("draft rules", coverage.draft_rules),
        ("general rules only", coverage.general_only),
        ("no specification yet", coverage.unspecified),
        ("outside the profile", coverage.outside_profile),
    )
    counts = [f"{sum(counts.values())} {name}" for name, counts in depths if counts]
    return "coverage: " + (", ".join(counts) if counts else "no node")


def _summary_line(results: list[ModelResult]) -> Text:
    s = summarise(results)
    style = "bold red" if s.errors or s.unreadable else ("yellow" if s.warnings else "bold green")
    return Text(s.line(), style=style)
