"""The reviewer's HTML report, rendered from the evidence record (report/html.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sonnx_check.report.run_report import RunReport


def render(report: RunReport, console: object = None) -> str:
    from sonnx_check.report import html

    return html.render(report)
