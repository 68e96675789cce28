"""Rendering the catalogue for people: --list-rules and --explain.

The catalogue's text is ours, but it is prose full of brackets (``pads`` as ``[x1_begin, ...]``): it goes to
rich as ``Text``, never as markup, so nothing in it is swallowed as a tag.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sonnx_check.catalogue import RuleEntry, catalogue, lookup


def list_rules(console: Console) -> None:
    """One row per rule. On a terminal long titles fold; piped (``| grep``), every row stays on one line."""
    table = Table(title=Text("sonnx-check rules"), show_lines=False)
    wrap = console.is_terminal
    for column in ("ID", "severity", "scope", "status", "title", "aliases"):
        if wrap:
            table.add_column(column, overflow="fold")
        else:
            table.add_column(column, no_wrap=True)
    for entry in catalogue().values():
        table.add_row(
            *(
                Text(cell)
                for cell in (
                    entry.id,
                    entry.severity.value,
                    entry.scope,
                    entry.status,
                    entry.title,
                    ", ".join(entry.aliases),
                )
            )
        )
    console.print(table)


def rules_json() -> str:
    """The catalogue for tools (``--list-rules --format json``): one object per rule, in catalogue order,
    with the same fields --explain shows."""
    rules = [
        {
            "id": entry.id,
            "title": entry.title,
            "severity": entry.severity.value,
            "scope": entry.scope,
            "status": entry.status,
            "operator": entry.op_type,
            "aliases": list(entry.aliases),
            "statement": " ".join(entry.statement.split()),
            "rationale": " ".join(entry.rationale.split()),
            "origin": entry.origin,
            "fix": " ".join(entry.fix.split()),
            "checked_by": _checked_by(entry),
        }
        for entry in catalogue().values()
    ]
    return json.dumps({"rules": rules}, indent=2, ensure_ascii=False) + "\n"


def explain(console: Console, rule_id: str) -> None:
    entry = lookup(rule_id)
    console.print(Text(f"{entry.id}: {entry.title}", style="bold"))
    if entry.aliases:
        console.print(Text(f"Aliases: {', '.join(entry.aliases)}"))
    console.print(Text(f"Default severity: {entry.severity.value}    Scope: {entry.scope}"))
    if entry.status == "draft":
        console.print(
            Text("Status: draft (from a specification text the working group marks as draft; it may change)")
        )
    console.print(Text(f"Checked by: {_checked_by(entry)}"))
    for heading, body in (
        ("What it checks", entry.statement),
        ("Why", entry.rationale),
        ("Origin", entry.origin),
        ("How to fix", entry.fix),
    ):
        console.print(Text(f"\n{heading}", style="bold"))
        console.print(Text(" ".join(body.split())))
    if entry.id == "RUNTIME.divergence":
        _known_departures(console)


def _known_departures(console: Console) -> None:
    """The IDs a waiver's ``known`` may name, from the operators' declarations (``[[comparison.departure]]``
    of rules/<Op>.toml), in the order the comparison matches them; no comparison code is imported."""
    from sonnx_check.profile import profile_operators

    console.print(
        Text("\nKnown onnxruntime departures (the IDs a waiver's known = ... may name)", style="bold")
    )
    for departure in (d for op in profile_operators().values() for d in op.comparison.departures):
        line = Text(f"  {departure.id}", style="bold cyan")
        line.append(f" ({', '.join(departure.operators)}): {' '.join(departure.summary.split())}")
        console.print(line)


def _checked_by(entry: RuleEntry) -> str:
    """How the rule is decided, in words: a vocabulary constraint, code, or a stage."""
    ((kind, params),) = entry.check.items()
    if kind in ("node", "graph"):
        where = "the graph" if kind == "graph" else f"every {entry.op_type or ''} node".replace("  ", " ")
        return f"code, sonnx_check.{str(params).replace(':', '.')} (on {where})"
    if kind == "stage":
        return f"the {params} stage"
    words = f"the shared constraint '{kind.replace('_', ' ')}'"
    detail = _prose(params)
    return f"{words} ({detail})" if detail else words


def _prose(value: object) -> str:
    """A declaration's parameters as words: ``{'role': 'X', 'min': 1}`` reads "role X, min 1"."""
    if value is True or value is None:
        return ""
    if isinstance(value, dict):
        return "; ".join(f"{str(k).replace('_', ' ')} {_prose(v) or 'yes'}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_prose(v) for v in value)
    return str(value).replace("_", " ") if isinstance(value, str) and value.isidentifier() else str(value)
