"""GitHub Actions workflow commands (annotations)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sonnx_check.report.run_report import RunReport


def render(report: RunReport, console: object = None) -> str:
    from sonnx_check.report import github

    results, fixes = report.display()
    return github.render(results, fixes=fixes, quiet=report.quiet)
