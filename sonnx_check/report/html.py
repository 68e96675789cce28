"""The reviewer's report (``--output-format html:PATH``): one self-contained HTML file built from the evidence
record, readable on screen and printable to PDF from a browser.

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
from typing import Any

from sonnx_check import sanitise
from sonnx_check.catalogue import catalogue
from sonnx_check.evidence.classes import CLASSES
from sonnx_check.evidence.revision import spec_text, text_url
from sonnx_check.findings import DIVERGENCE_RULE

EXTRA = ("jinja2", "matplotlib")
HELD_SHOWN = 40  # node names listed per rule where it held (the record has every one)
_LIMIT = sanitise.DISPLAY_MESSAGE_LIMIT


def missing_extra() -> str | None:
    """None when the report can be written, else one line saying what to install."""
    missing = [name for name in EXTRA if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (
        f"the HTML report needs {' and '.join(missing)}: install the report extra "
        '(pip install "sonnx-check[report]"; from a clone: pip install ".[report]")'
    )


def render(record: Mapping[str, Any]) -> str:
    import jinja2

    from sonnx_check.report import plots

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["significant"] = significant
    shown = _shown(record)
    models = [_model_view(m, plots) for m in shown["models"]]
    page = environment.get_template("report.html.j2").render(
        record=shown,
        models=models,
        classes=CLASSES,
        embedded=_embedded(record),
        css=Path(__file__).with_name("templates").joinpath("report.css").read_text(encoding="utf-8"),
    )
    return keep_hyphenated_whole(page)


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


def _shown(value: Any) -> Any:
    """Every string of the record display-sanitised (the record holds them exact, as JSON does)."""
    if isinstance(value, str):
        return sanitise.display(value, _LIMIT)
    if isinstance(value, Mapping):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return value


def _embedded(record: Mapping[str, Any]) -> str:
    """The record as JSON that cannot end the script element or start markup inside it."""
    text = json.dumps(record, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _model_view(model: Mapping[str, Any], plots: Any) -> dict[str, Any]:
    """What the template shows of one model: the traceability matrix grouped by specification text, the
    findings with their fix, and the plots."""
    nodes = model.get("nodes", [])

    def node_label(index: Any) -> str:
        if index is None:
            return "the model"
        if isinstance(index, int) and 0 <= index < len(nodes):
            node = nodes[index]
            name = f"'{node['name']}'" if node["name"] else "(unnamed)"
            return f"{node['op_type']} {name} #{index}"
        return f"#{index}"

    verdicts = {v["rule"]: v for v in model.get("verdicts", [])}
    texts: dict[str, list[dict[str, Any]]] = {}
    # Rules of operators the model does not use would fill pages: they are named together, once.
    absent = [r["rule"] for r in model.get("rules", []) if r["result"] == "not-applicable"]
    for rule in model.get("rules", []):
        if rule["result"] == "not-applicable":
            continue
        verdict = verdicts.get(rule["rule"], {})
        held = [node_label(n) for n in verdict.get("held", [])]
        row = {
            **rule,
            "url": text_url(rule["origin"]),
            "violated_at": [node_label(v["node"]) for v in verdict.get("violated", [])],
            "waived_at": [node_label(v["node"]) for v in verdict.get("waived", [])],
            "held_at": held[:HELD_SHOWN],
            "held_more": max(0, len(held) - HELD_SHOWN),
        }
        texts.setdefault(spec_text(rule["origin"]), []).append(row)
    entries = catalogue()
    findings = []
    for k, finding in enumerate(model.get("findings", [])):
        entry = entries.get(finding["rule"])
        node = finding.get("node")
        findings.append(
            {
                **finding,
                "number": k,
                "where": node_label(node["index"]) if node else "the model",
                "fix": fix_text(" ".join(entry.fix.split()), finding) if entry else "",
                "title": entry.title if entry else finding["rule"],
            }
        )
    comparison = model.get("comparison")
    outputs = comparison.get("outputs", []) if comparison else []
    # The plots show the model's own run (its nodes and graph outputs on the model-level datasets); the
    # edge batteries' outputs are in the table below them.
    in_model = [o for o in outputs if o["scope"] in ("node", "end-to-end")]
    # ...and the outputs that fail, whatever their scope (a node run alone on edge values too)
    failing = [o for o in outputs if o["scope"] not in ("node", "end-to-end") and o["status"] != "match"]
    margin = plots.margin_plot(in_model + failing) if in_model or failing else None
    distribution = plots.distribution_plot(in_model) if in_model else None
    difference = plots.difference_plot(differing(outputs, model.get("findings", [])))
    for output in outputs:
        output["where"] = ", ".join(node_label(n) for n in output["nodes"]) or "graph output"
    return {
        "model": model,
        "texts": sorted(texts.items()),
        "not_applicable": absent,
        "findings": findings,
        "comparison": comparison,
        "margin_plot": margin,
        "distribution_plot": distribution,
        "difference_plot": difference,
        "coverage_plot": plots.coverage_plot(model.get("coverage")),
    }


def significant(value: Any, digits: int = 3) -> str:
    """A margin as a reviewer reads it, to 3 significant digits (the embedded record keeps every digit)."""
    if value is None or isinstance(value, bool):
        return ""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{number:.{digits}g}"


def differing(outputs: list[Mapping[str, Any]], findings: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every output that differs (exact ones included, any scope) with its differing elements split by the
    known departures that explain them, read from its RUNTIME.divergence finding (the one place the plots
    read a finding's comparison data); what no departure explains is "unexplained"."""
    rows = []
    for output in outputs:
        mismatches = int(output.get("mismatches") or 0)
        if output.get("status") == "match" or mismatches <= 0:
            continue
        parts: list[tuple[str, int]] = []
        for finding in findings:
            data = finding.get("data") or {}
            node = finding.get("node") or {}
            if (
                finding.get("rule") == DIVERGENCE_RULE
                and data.get("scope") == output.get("scope")
                and data.get("output") == output.get("output")
                and node.get("index") in output.get("nodes", [])
            ):
                parts = [(" + ".join(e["ids"]), int(e["elements"])) for e in data.get("explained_by", [])]
                break
        explained = sum(n for _, n in parts)
        if mismatches > explained:
            parts.append(("unexplained", mismatches - explained))
        rows.append({**output, "departures": parts})
    return rows


def fix_text(declared: str, finding: Mapping[str, Any]) -> str:
    """The rule's fix, and for a divergence the departures this finding met: the waiver to write names
    them (the declared text's example ID may be another departure than the one met)."""
    if finding.get("rule") != DIVERGENCE_RULE:
        return declared
    data = finding.get("data") or {}
    met = [(e["ids"], int(e["elements"])) for e in data.get("explained_by", []) if e.get("ids")]
    unexplained = int(data.get("unexplained") or 0)
    conform = (
        "Use a runtime version or configuration (for onnxruntime: graph optimisation level or provider) "
        "that conforms"
    )
    if not met:
        return (
            f"{conform}, or report the divergence: no known departure explains it, so no waiver by a "
            "known departure's ID covers it."
        )
    ids = sorted({i for group, _ in met for i in group})
    counts = "; ".join(f"{' + '.join(group)}: {n} element(s)" for group, n in met)
    known = ", ".join(f'"{i}"' for i in ids)
    text = (
        f"Departures met: {counts}. {conform}, or accept them by their IDs: [[tool.sonnx-check.waivers]] "
        f'rule = "RUNTIME.divergence", known = [{known}], models = "**", reason = "..." covers only the '
        "elements they explain."
    )
    if unexplained:
        text += (
            f" The {unexplained} element(s) no known departure explains stay a finding whatever the waiver."
        )
    return text
