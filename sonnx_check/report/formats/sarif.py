"""SARIF 2.1.0, with the run's invocation and each model's identity."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from sonnx_check.report.summary import is_internal

if TYPE_CHECKING:
    from sonnx_check.report.run_report import RunReport


def render(report: RunReport, console: object = None) -> str:
    from sonnx_check.report import sarif

    results, _ = report.display()
    return sarif.render(
        results,
        identities=report.shown_identities(),
        invocation=sarif.invocation(
            report.argv,
            report.started_utc or datetime.datetime.now(datetime.UTC),
            report.seconds,
            succeeded=not any(r.load_error or is_internal(r) for r in report.results),
        ),
    )
