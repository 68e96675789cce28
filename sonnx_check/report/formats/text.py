"""The text report: on a terminal with its colours and width, else plain text for a file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sonnx_check import sanitise
from sonnx_check.report.styled import PlainConsole

if TYPE_CHECKING:
    from rich.console import Console

    from sonnx_check.report.run_report import RunReport


def render(report: RunReport, console: Console | PlainConsole | None = None) -> str:
    """``console``: stdout's, whose colour and terminal width the rendering follows; None: a file."""
    from sonnx_check.report import text as text_report

    results, fixes = report.display()
    target = console or PlainConsole()
    with target.capture() as captured:
        text_report.render(
            target,
            results,
            quiet=report.quiet,
            fixes=fixes,
            statistics=report.settings.statistics,
            configuration=report.configuration,
        )
    return sanitise.guard_lines(captured.get())
