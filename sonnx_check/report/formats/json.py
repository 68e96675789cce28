"""``--format json``: model strings exact (the data flavour of the sanitiser)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sonnx_check import sanitise

if TYPE_CHECKING:
    from sonnx_check.report.run_report import RunReport


def render(report: RunReport, console: object = None) -> str:
    from sonnx_check.report import json_report

    settings = report.settings
    results, fixes = sanitise.for_data(report.results, report.fixes)
    return json_report.render(
        results,
        fixes=fixes,
        statistics=settings.statistics,
        config_file=settings.config_file,
        fail_on=settings.fail_on,
        model_configs=report.model_configs,
        unused=report.unused,
    )
