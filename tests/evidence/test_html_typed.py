"""The HTML report reads the typed records (issue 28), and shows exactly what the evidence record embedded in
it says: every cell of the compared-outputs table, the findings table and the traceability matrix, and the
numbers of the difference plot, are derived here from the record's JSON (the path the report was rendered
from before) and compared with the page's parsed DOM, for samples with and without known departures."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from clikit import run_cli

from sonnx_check import sanitise
from sonnx_check.report.html import missing_extra, significant

SAMPLES = Path(__file__).resolve().parents[2] / "sample_models"
MODELS = (
    "conforming/small_cnn.onnx",  # known departures: the difference plot, the fix naming them
    "conforming/residual_cnn.onnx",  # inexact operators: margins, bounds, outcomes
    "violating/maxpool_wrong_output_shape.onnx",  # a profile violation beside the comparison
    "violating/dead_node.onnx",  # a model-scope finding that names a node
)


@dataclass
class Table:
    rows: list[list[str]] = field(default_factory=list)


class _Page(HTMLParser):
    """Tables (by id, or by class when they have none) as rows of cell texts (``<br>`` a line break), and
    each figure's text (by id)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, Table] = {}
        self.classed: dict[str, list[Table]] = {}  # tables without an id, by class, in page order
        self.figures: dict[str, str] = {}
        self._table: Table | None = None
        self._cell: list[str] | None = None
        self._figure: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "table":
            self._table = Table()
            if attributes.get("id"):
                self.tables[attributes["id"] or ""] = self._table
            else:
                self.classed.setdefault(attributes.get("class") or "", []).append(self._table)
        elif tag == "tr" and self._table is not None:
            self._table.rows.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")
        elif tag == "figure":
            self._figure = (attributes.get("id") or "", [])

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._table is not None and self._cell is not None:
            self._table.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "figure" and self._figure is not None:
            self.figures[self._figure[0]] = "".join(self._figure[1])
            self._figure = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._figure is not None:
            self._figure[1].append(data)


def shown(text: str) -> str:
    return sanitise.display(text, sanitise.DISPLAY_MESSAGE_LIMIT)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[_Page, dict[str, Any]]:
    if missing_extra() is not None:
        pytest.skip("the [report] extra (jinja2, matplotlib) is not installed")
    folder = tmp_path_factory.mktemp("typed")
    names = []
    for model in MODELS:
        name = model.replace("/", "_")
        shutil.copy(SAMPLES / model, folder / name)
        names.append(name)
    args = ["--isolated", "--compare", "--output-format", "html:r.html", "--evidence", "e.json", *names]
    result = run_cli(args, cwd=folder)
    assert result.code == 1, result.stderr
    page = _Page()
    page.feed((folder / "r.html").read_text(encoding="utf-8"))
    return page, json.loads((folder / "e.json").read_text(encoding="utf-8"))


def _models(record: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    yield from enumerate(record["models"], start=1)


def _labeller(model: dict[str, Any]) -> Any:
    def label(index: int | None) -> str:
        if index is None:
            return "the model"
        node = model["nodes"][index]
        name = f"'{shown(node['name'])}'" if node["name"] else "(unnamed)"
        return f"{shown(node['op_type'])} {name} #{index}"

    return label


def test_every_compared_output_row_says_what_the_record_says(rendered: tuple[_Page, dict[str, Any]]) -> None:
    page, record = rendered
    compared = 0
    for n, model in _models(record):
        label = _labeller(model)
        expected = []
        for o in model["comparison"]["outputs"]:
            outcomes = "".join(f"{count} {name}\n" for name, count in o["outcomes"].items() if count)
            known = "".join(f"\nknown: {k}" for k in o["known_departures"])
            expected.append(
                [
                    o["scope"],
                    ", ".join(label(i) for i in o["nodes"]) or "graph output",
                    shown(o["output"]),
                    o["accuracy_class"] or "",
                    shown(o["bound"] or ""),
                    significant(o["margin"]),
                    outcomes.strip(),
                    o["status"] + known,
                ]
            )
        rows = page.tables[f"compared-outputs-{n}"].rows[1:]  # after the header
        assert rows == expected, model["path"]
        compared += len(rows)
    assert compared > 20  # the samples' node outputs, graph outputs and edge configurations


def test_every_finding_row_says_what_the_record_says(rendered: tuple[_Page, dict[str, Any]]) -> None:
    page, record = rendered
    tables = iter(page.classed["findings-table"])  # one per model with findings, in model order
    met_departures = 0
    for _, model in _models(record):
        label = _labeller(model)
        findings = model["findings"]
        if not findings:
            continue
        rows = next(tables).rows[1:]
        assert [r[0] for r in rows] == [str(k) for k in range(len(findings))]
        for row, finding in zip(rows, findings, strict=True):
            assert row[1].startswith(f"{finding['rule']} {finding['severity']}\n{finding['class']}")
            node = finding.get("node")
            assert row[2] == label(node["index"] if node else None)
            assert row[3].startswith(shown(finding["message"]))
            if finding["rule"] == "RUNTIME.divergence":
                groups = [e["ids"] for e in finding["data"].get("explained_by", []) if e["ids"]]
                for ids in groups:
                    assert " + ".join(ids) + ":" in row[3]  # the fix names each group of departures met
                met_departures += len(groups)
    assert met_departures >= 2


def test_the_matrix_lists_each_applicable_rule_with_where_it_failed(
    rendered: tuple[_Page, dict[str, Any]],
) -> None:
    page, record = rendered
    tables = iter(page.classed["matrix"])
    for _, model in _models(record):
        label = _labeller(model)
        verdicts = {v["rule"]: v for v in model["verdicts"]}
        applicable = [r for r in model["rules"] if r["result"] != "not-applicable"]
        rows = [r for r in next(tables).rows[1:]]
        # each row: [text (first row of a text only)], rule and title, result, per node
        cells = [r[-3:] for r in rows]
        assert sorted(c[0].split(" ")[0] for c in cells) == sorted(r["rule"] for r in applicable)
        for rule_cell, result, per_node in cells:
            rule = rule_cell.split(" ")[0]
            verdict = verdicts[rule]
            assert result == verdict["result"]
            for violated in verdict["violated"]:
                assert f"violated: {label(violated['node'])}" in per_node


def test_the_difference_plot_counts_what_the_record_counts(rendered: tuple[_Page, dict[str, Any]]) -> None:
    page, record = rendered
    plotted = 0
    for n, model in _models(record):
        differing = [
            o for o in model["comparison"]["outputs"] if o["status"] != "match" and o["mismatches"] > 0
        ]
        figure = page.figures.get(f"difference-plot-{n}")
        if not differing:
            assert figure is None
            continue
        assert figure is not None
        for output in differing:
            assert f"{output['mismatches']} of {output['total']}" in figure
        for finding in model["findings"]:
            for group in finding.get("data", {}).get("explained_by", []):
                assert " + ".join(group["ids"]) in figure
        assert re.search(rf"The {len(differing)} output\(s\) that differ", figure)
        plotted += 1
    assert plotted >= 1


def test_a_model_named_input_is_display_sanitised_in_the_datasets_table(tmp_path: Path) -> None:
    """A name the model gives that the record holds as a key (an input of the datasets table) is
    display-sanitised like every other string of the page: no bidi override reorders the table."""
    if missing_extra() is not None:
        pytest.skip("the [report] extra (jinja2, matplotlib) is not installed")
    import onnx
    from onnx import TensorProto
    from onnx import helper as h

    name = "x\u202e<b>"
    graph = h.make_graph(
        [h.make_node("Relu", [name], ["y"], name="r")],
        "g",
        [h.make_tensor_value_info(name, TensorProto.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    onnx.save(model, tmp_path / "m.onnx")
    result = run_cli(["--isolated", "--compare", "--output-format", "html:r.html", "m.onnx"], cwd=tmp_path)
    assert result.code == 0, result.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "\u202e" not in page and "x\u202e<b>" not in page
    datasets = _Page()
    datasets.feed(page)
    inputs = [row[3] for row in datasets.tables["datasets-1"].rows[1:]]
    assert inputs and all(cell.startswith("x\\u202e<b>: float32[1,4]") for cell in inputs)
