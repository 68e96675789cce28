"""The reviewer's report (``--output-format html:PATH``): one self-contained HTML file built from the evidence
record and the typed records beside it (``html_view.py``), readable on screen and printable to PDF from a
browser.

Nothing is fetched when it is opened (no script, no stylesheet, font or image from elsewhere: plots are
inline SVG), so an air-gapped reviewer sees all of it. The page is a Jinja2 template with autoescaping, and
every model-controlled string is display-sanitised first (controls and bidi overrides made visible), so a
node name can neither run script nor reorder what a reviewer reads. The record itself is embedded as JSON
(``<script type="application/json" id="evidence-record">``, with ``<``, ``>`` and ``&`` escaped), so the
file is also the evidence.

Jinja2 and matplotlib are the ``[report]`` extra; ``missing_extra`` says what to install when they are not.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sonnx_check.evidence.classes import CLASSES
from sonnx_check.operator_readings import declared
from sonnx_check.report.html_view import identity_part, model_view, shown

if TYPE_CHECKING:
    from sonnx_check.report.run_report import RunReport

EXTRA = ("jinja2", "matplotlib")


def missing_extra() -> str | None:
    """None when the report can be written, else one line saying what to install."""
    missing = [name for name in EXTRA if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (
        f"the HTML report needs {' and '.join(missing)}: install the report extra "
        '(pip install "sonnx-check[report]"; from a clone: pip install ".[report]")'
    )


def render(report: RunReport) -> str:
    """The page of a run: the record's facts (identity, environment, configuration, the datasets' hashes)
    as the template reads them from the record, and the results from the typed records beside it."""
    import jinja2

    from sonnx_check.report import plots

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["significant"] = significant
    evidence = report.evidence()
    # the run's facts as the record states them; each model's facts go with its view (the results, which
    # the record also lists, are shown from the typed records: not sanitised twice)
    record = shown({key: value for key, value in evidence.document.items() if key != "models"})
    models = [model_view(shown(identity_part(m.entry)), m, plots) for m in evidence.models]
    page = environment.get_template("report.html.j2").render(
        record=record,
        models=models,
        classes=CLASSES,
        readings=shown(declared_readings()),
        embedded=_embedded(evidence.document),
        css=Path(__file__).with_name("templates").joinpath("report.css").read_text(encoding="utf-8"),
    )
    return keep_hyphenated_whole(page)


def declared_readings() -> list[tuple[str, str]]:
    """(label, settings field) of every declared reading, in catalogue order: the page states each reading's
    value as the record's settings hold it ("MaxPool NaN reading" and ``maxpool_nan``)."""
    return [(reading.label, reading.record) for reading in declared().values()]


_TAG = re.compile(r"(<[^>]*>)")
_RAW = re.compile(r"<(/?)(script|style|svg|title)\b", re.I)  # text a span must not enter
_HYPHENATED = re.compile(r"\S*-\S*")


def keep_hyphenated_whole(page: str) -> str:
    """Each word of the page's text that holds a hyphen in a ``nb`` span (``white-space: nowrap``): a
    browser breaks a line after a hyphen, and "known-" / "departure", "REQ-" / "OP-070" or "sonnx-" /
    "check" read as two words. The page is split at its tags, so an attribute, a script, a style, an SVG
    plot or the title is never touched; the text is already escaped, and stays so."""
    out = []
    raw = 0
    for part in _TAG.split(page):
        if part.startswith("<"):
            tag = _RAW.match(part)
            if tag is not None and not part.endswith("/>"):
                raw += -1 if tag.group(1) else 1
            out.append(part)
        elif raw > 0 or "-" not in part:
            out.append(part)
        else:
            out.append(_HYPHENATED.sub(lambda m: f'<span class="nb">{m.group()}</span>', part))
    return "".join(out)


def _embedded(record: Mapping[str, Any]) -> str:
    """The record as JSON that cannot end the script element or start markup inside it."""
    text = json.dumps(record, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def significant(value: Any, digits: int = 3) -> str:
    """A margin as a reviewer reads it, to 3 significant digits (the embedded record keeps every digit)."""
    if value is None or isinstance(value, bool):
        return ""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{number:.{digits}g}"
