"""Model strings and catalogue prose never reach rich as markup: the --compare table, --explain and
--list-rules show brackets as written, a trailing ``[/]`` crashes nothing, and ``[link=...]`` never becomes a
terminal hyperlink. Piped, the table and the rule list are never wrapped."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import records
from clikit import run_cli
from rich.console import Console

from sonnx_check import explain
from sonnx_check.catalogue import RuleEntry
from sonnx_check.findings import Severity
from sonnx_check.operator_readings import Readings
from sonnx_check.report.comparison_table import render_comparison
from sonnx_check.results import (
    ComparisonOutcome,
    DatasetEntry,
    DatasetTally,
    FirstMismatch,
    NodeResult,
    ReferenceRecord,
    RuntimeRecord,
)

LINK = "[link=https://evil.example/]trusted[/link]"
LONG = "/backbone/stage4/block3/" + "very_long_segment_" * 6 + "pool[/]"


def _comparison() -> ComparisonOutcome:
    first = FirstMismatch("edge", (0, 1), "1.0", "0x3f800000", "2.0", "0x40000000", "value")
    output = records.output_result({("ORT-[b]X[/b]",): 1}, name="y[/]", first=first, total=4)
    output = replace(output, datasets=(DatasetTally("edge", "differs", 1, 4),))
    return ComparisonOutcome(
        runtime=RuntimeRecord("onnxruntime"),
        runtime_record={"version": "[bold]1.32[/bold]", "providers": ["CPU[/]"], "optimization_level": "all"},
        reference=ReferenceRecord((), Readings()),
        reason="refused by [red]onnxruntime[/red]",
        datasets=(DatasetEntry("edge[/]", "edge", {}, status="failed"),),
        nodes=(
            NodeResult(0, LINK, "MaxPool", "not-compared", reason="x [/] y"),
            NodeResult(1, LONG, "Max", "diverges", outputs=(output,)),
        ),
    )


def _render(renderable: Any, *, terminal: bool, width: int = 100) -> str:
    console = Console(force_terminal=terminal, color_system="truecolor" if terminal else None, width=width)
    with console.capture() as captured:
        console.print(renderable)
    return captured.get()


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "piped"])
def test_comparison_table_shows_names_as_written(terminal: bool) -> None:
    table = render_comparison(_comparison(), wrap=terminal)
    text = _render(table, terminal=terminal, width=100 if terminal else 100_000)
    assert "\x1b]8;" not in text  # no hyperlink
    for literal in ("[bold]1.32[/bold]", "CPU[/]", "refused by [red]onnxruntime[/red]", "edge[/]", "y[/]"):
        assert literal in text, literal
    if not terminal:  # one line per row: the names are whole and greppable
        assert any(LINK in line and "not-compared" in line for line in text.splitlines())
        assert any(LONG in line and "1 of 4" in line for line in text.splitlines())


def _entry(**changes: Any) -> RuleEntry:
    fields = dict(
        id="X.pads.C1",
        title="pads [begin, end] [/]",
        statement="pads is [x1_begin, x2_begin, x1_end, x2_end].",
        rationale="[link=https://evil.example/]why[/link]",
        origin="seed [003]",
        severity=Severity.ERROR,
        fix="Write pads as [0, 0, 0, 0] [/b]",
        scope="X",
        aliases=("X.[a]",),
        check={"attribute_in": {"attribute": "p[/]", "values": ["[b]"]}},
    )
    return RuleEntry(**(fields | changes))


def test_explain_keeps_bracketed_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(explain, "lookup", lambda rule_id: _entry())
    result = run_cli(["--explain", "X.pads.C1"])
    assert result.code == 0, result.stderr
    for literal in ("pads [begin, end] [/]", "[x1_begin, x2_begin, x1_end, x2_end]", "[0, 0, 0, 0] [/b]"):
        assert literal in result.stdout
    assert "[link=https://evil.example/]why[/link]" in result.stdout and "X.[a]" in result.stdout
    assert "(attribute p[/]; values [b])" in result.stdout


def test_list_rules_keeps_brackets_and_is_not_wrapped_when_piped(monkeypatch: pytest.MonkeyPatch) -> None:
    long_title = "a title long enough to be wrapped at eighty columns by any table [/] " * 2
    entries = {"X.pads.C1": _entry(title=long_title.strip())}
    monkeypatch.setattr(explain, "catalogue", lambda: entries)
    result = run_cli(["--list-rules", "--aliases"])
    assert result.code == 0, result.stderr
    (row,) = [line for line in result.stdout.splitlines() if "X.pads.C1" in line]
    assert long_title.strip() in row and "X.[a]" in row
