"""JUnit XML: one test suite per model."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sonnx_check.report.run_report import RunReport


def render(report: RunReport, console: object = None) -> str:
    from sonnx_check.report import junit

    results, _ = report.display()
    return junit.render(
        results,
        fail_on=report.settings.fail_on,
        seconds=report.seconds,
        timestamp=report.timestamp,
        identities=report.shown_identities(),
    )
