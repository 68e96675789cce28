"""The evidence record (``--evidence``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sonnx_check.report.run_report import RunReport


def render(report: RunReport, console: object = None) -> str:
    from sonnx_check.evidence.record import render as render_record

    return render_record(report.record())
