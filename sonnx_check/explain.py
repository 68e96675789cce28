"""Rendering the catalogue for people: --list-rules and --explain."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sonnx_check.catalogue import catalogue, lookup


def list_rules(console: Console) -> None:
    table = Table(title="sonnx-check rules", show_lines=False)
    for column in ("ID", "severity", "scope", "title", "aliases"):
        table.add_column(column, overflow="fold")
    for entry in catalogue().values():
        table.add_row(entry.id, entry.severity.value, entry.scope, entry.title, ", ".join(entry.aliases))
    console.print(table)


def explain(console: Console, rule_id: str) -> None:
    entry = lookup(rule_id)
    console.print(Text(f"{entry.id}: {entry.title}", style="bold"))
    if entry.aliases:
        console.print(f"Aliases: {', '.join(entry.aliases)}")
    console.print(f"Default severity: {entry.severity.value}    Scope: {entry.scope}")
    for heading, body in (
        ("What it checks", entry.statement),
        ("Why", entry.rationale),
        ("Origin", entry.origin),
        ("How to fix", entry.fix),
    ):
        console.print(Text(f"\n{heading}", style="bold"))
        console.print(" ".join(body.split()))
