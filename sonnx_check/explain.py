"""Rendering the catalogue for people: --list-rules and --explain.

The catalogue's text is ours, but it is prose full of brackets (``pads`` as ``[x1_begin, ...]``): it goes to
rich as ``Text``, never as markup, so nothing in it is swallowed as a tag.
"""

from __future__ import annotations

import json

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from sonnx_check.catalogue import RuleEntry, catalogue, lookup
from sonnx_check.errors import UsageError

NARROW = 100  # below this many columns the table keeps ID, severity and title (scope and status in --explain)


def list_rules(console: Console, aliases: bool = False) -> None:
    """One row per rule; the aliases (up to 7 per rule, ~250 characters) only with ``--aliases``.

    On a terminal, a table that fits its width: an ID is never split, titles and aliases wrap between words,
    and below NARROW columns the scope and status columns give way to the title. Piped (``| grep``), one
    plain line per rule, columns aligned, no box: ``ID  severity  scope  status  title[  aliases: ...]``."""
    entries = list(catalogue().values())
    if not console.is_terminal:
        _plain_rows(console, entries, aliases)
        return
    narrow = console.width < NARROW
    table = Table(title=Text("sonnx-check rules"), show_lines=False, box=None if narrow else box.SIMPLE_HEAD)
    table.add_column("ID", no_wrap=True, style="bold cyan")
    table.add_column("severity", no_wrap=True)
    if not narrow:
        table.add_column("scope", no_wrap=True)
        table.add_column("status", no_wrap=True)
    table.add_column("title", overflow="fold", ratio=1)
    for entry in entries:
        title = Text(entry.title)
        if aliases and entry.aliases:
            title.append(f"\naliases: {', '.join(entry.aliases)}", style="dim")
        wide = (entry.scope, entry.status) if not narrow else ()
        table.add_row(Text(entry.id), Text(entry.severity.value), *map(Text, wide), title)
    console.print(table)
    if not aliases:
        console.print(Text("aliases: sonnx-check --list-rules --aliases", style="dim"))


def _plain_rows(console: Console, entries: list[RuleEntry], aliases: bool) -> None:
    widths = [max(len(getattr(e, field)) for e in entries) for field in ("id", "scope", "status")]
    severity = max(len(e.severity.value) for e in entries)
    for e in entries:
        line = (
            f"{e.id:<{widths[0]}}  {e.severity.value:<{severity}}  {e.scope:<{widths[1]}}  "
            f"{e.status:<{widths[2]}}  {e.title}"
        )
        if aliases and e.aliases:
            line += f"  aliases: {', '.join(e.aliases)}"
        console.print(Text(line), soft_wrap=True)


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
    return json.dumps({"rules": rules, "departures": departures_json()}, indent=2, ensure_ascii=False) + "\n"


def departures_json() -> list[dict[str, object]]:
    """The known runtime departures (the IDs a waiver's ``known`` may name), with their aliases and
    observations, from the declarations; no comparison code is imported."""
    from sonnx_check.profile import profile_operators

    return [
        {
            "id": d.id,
            "aliases": list(d.aliases),
            "operators": list(d.operators),
            "summary": " ".join(d.summary.split()),
            "explanation": " ".join(d.explanation.split()),
            "runtimes": list(d.runtimes),
            "observed": [
                {
                    "runtime": o.runtime,
                    "versions": [list(span) for span in o.versions],
                    "configuration": o.configuration,
                    "where": o.where,
                }
                for o in d.observed
            ],
        }
        for op in profile_operators().values()
        for d in op.comparison.departures
    ]


def explain(console: Console, rule_id: str) -> None:
    """One rule's explanation, or one known runtime departure's (by its ID or an alias)."""
    try:
        entry = lookup(rule_id)
    except UsageError:
        if _explain_departure(console, rule_id):
            return
        from sonnx_check.config.departures import closest_departure

        # a departure ID has hyphens and no dot (MAXPOOL-LOWEST-INIT); a rule ID has a dot, or is GR<n>
        close = closest_departure(rule_id) if "-" in rule_id and "." not in rule_id else None
        if close is not None:
            raise UsageError(
                f"unknown rule or departure '{rule_id}'; did you mean {close}? "
                "(see sonnx-check --list-rules, --explain RUNTIME.divergence)"
            ) from None
        raise
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
        Text(
            "\nKnown runtime departures (the IDs a waiver's known = ... may name; an alias is accepted too;"
            " sonnx-check --explain ID for one)",
            style="bold",
        )
    )
    for departure in (d for op in profile_operators().values() for d in op.comparison.departures):
        line = Text(f"  {departure.id}", style="bold cyan")
        line.append(f" ({', '.join(departure.operators)}): {' '.join(departure.summary.split())}")
        line.append(f" [seen in {', '.join(departure.runtimes)}]")
        if departure.aliases:
            line.append(f" (alias {', '.join(departure.aliases)})", style="dim")
        console.print(line)


def _explain_departure(console: Console, given: str) -> bool:
    """--explain for a known runtime departure (its ID or an alias): what the text says, what a runtime
    does, where it was seen. False when ``given`` names none."""
    from sonnx_check.config.departures import canonical_departure
    from sonnx_check.profile import profile_operators

    canonical = canonical_departure(given)
    found = [d for op in profile_operators().values() for d in op.comparison.departures if d.id == canonical]
    if not found:
        return False
    departure = found[0]
    console.print(Text(f"{departure.id}: {' '.join(departure.summary.split())}", style="bold"))
    if departure.aliases:
        console.print(Text(f"Aliases: {', '.join(departure.aliases)}"))
    console.print(Text(f"A known runtime departure (RUNTIME.divergence) of {', '.join(departure.operators)}"))
    console.print(Text("\nWhat the text says and what the runtime does", style="bold"))
    console.print(Text(" ".join(departure.explanation.split())))
    console.print(Text("\nObserved in", style="bold"))
    for observation in departure.observed:
        console.print(Text(f"  {observation.text()}"))
    console.print(Text("\nHow to accept it", style="bold"))
    console.print(
        Text(
            f'[[tool.sonnx-check.waivers]] rule = "RUNTIME.divergence", known = "{departure.id}", '
            'reason = "...": covers only the elements this departure explains.'
        )
    )
    return True


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
