"""The report formats, one module each with one ``render(report, console=None) -> str``: the registry
``dispatch.render_report`` looks a format up in. A format's module is imported only when it is asked for
(the HTML report's jinja2 and matplotlib, the evidence record's hashing)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from sonnx_check.report.run_report import RunReport
    from sonnx_check.report.styled import PlainConsole

# format name (as --format and --output-format spell it) -> its module in this package
FORMATS = {
    "text": "text",
    "json": "json",
    "sarif": "sarif",
    "github": "github",
    "junit": "junit",
    "gitlab": "gitlab",
    "html": "html",
    "evidence": "evidence",
}


class Format(Protocol):
    def render(self, report: RunReport, console: Console | PlainConsole | None = None) -> str: ...


def format_module(name: str) -> Format:
    """The module that renders format ``name`` (KeyError: no such format)."""
    module: Format = importlib.import_module(f"{__name__}.{FORMATS[name]}")
    return module
