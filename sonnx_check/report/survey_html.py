"""The survey's HTML report (``OUTPUT/survey.html``): the conformance table, the unexplained divergences
with their reproducers, refusals and what was not compared, in the evidence report's style (its stylesheet,
its escaping). Built from the JSON record alone, embedded in the page as the evidence report embeds its own.

Every string is display-sanitised and autoescaped: a runtime's name, version or refusal reason is the
runtime's own text (a command's runtime.json, its stderr) and may hold markup."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sonnx_check.report.html import _embedded, keep_hyphenated_whole
from sonnx_check.report.html_view import shown

TEMPLATE = "survey.html.j2"


def render_survey_html(record: Mapping[str, Any]) -> str:
    import jinja2

    templates = Path(__file__).with_name("templates")
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates), autoescape=True, trim_blocks=True, lstrip_blocks=True
    )
    page = environment.get_template(TEMPLATE).render(
        record=shown(record),
        embedded=_embedded(record),
        css=templates.joinpath("report.css").read_text(encoding="utf-8"),
    )
    return keep_hyphenated_whole(page)
