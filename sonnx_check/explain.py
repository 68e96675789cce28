"""Rendering the catalogue for people: --list-rules and --explain.

The catalogue's text is ours, but it is prose full of brackets (``pads`` as ``[x1_begin, ...]``): it goes to
rich as ``Text``, never as markup, so nothing in it is swallowed as a tag.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sonnx_check.catalogue import catalogue, lookup


def list_rules(console: Console) -> None:
    """One row per rule. On a terminal long titles fold; piped (``| grep``), every row stays on one line."""
    table = Table(title=Text("sonnx-check rules"), show_lines=False)
    wrap = console.is_terminal
    for column in ("ID", "severity", "scope", "title", "aliases"):
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
                    entry.title,
                    ", ".join(entry.aliases),
                )
            )
        )
    console.print(table)


def explain(console: Console, rule_id: str) -> None:
    entry = lookup(rule_id)
    console.print(Text(f"{entry.id}: {entry.title}", style="bold"))
    if entry.aliases:
        console.print(Text(f"Aliases: {', '.join(entry.aliases)}"))
    console.print(Text(f"Default severity: {entry.severity.value}    Scope: {entry.scope}"))
    for heading, body in (
        ("What it checks", entry.statement),
        ("Why", entry.rationale),
        ("Origin", entry.origin),
        ("How to fix", entry.fix),
    ):
        console.print(Text(f"\n{heading}", style="bold"))
        console.print(Text(" ".join(body.split())))
