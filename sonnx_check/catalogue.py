"""The rule catalogue: rules/*.toml, data that users read (``--explain``) and tools cite (SARIF, JSON).

The catalogue ships inside the wheel as ``sonnx_check/rules``; in a source checkout it is the top-level
``rules/`` folder.
"""

from __future__ import annotations

import fnmatch
import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sonnx_check.errors import UsageError
from sonnx_check.findings import Severity

REQUIRED_KEYS = ("id", "title", "statement", "rationale", "origin", "severity", "fix")


@dataclass(frozen=True)
class RuleEntry:
    id: str
    title: str
    statement: str
    rationale: str
    origin: str
    severity: Severity
    fix: str
    scope: str  # the catalogue file it comes from: model, graph, general, MaxPool, ...
    aliases: tuple[str, ...] = ()

    def names(self) -> tuple[str, ...]:
        return (self.id, *self.aliases)


def rules_dir() -> Path:
    packaged = Path(__file__).parent / "rules"
    return packaged if packaged.is_dir() else Path(__file__).parent.parent / "rules"


@functools.lru_cache(maxsize=1)
def catalogue() -> dict[str, RuleEntry]:
    """Every rule by ID, in catalogue order (files sorted by name, entries in file order)."""
    entries: dict[str, RuleEntry] = {}
    for file in sorted(rules_dir().glob("*.toml")):
        with open(file, "rb") as handle:
            data = tomllib.load(handle)
        for raw in data.get("rule", []):
            missing = [k for k in REQUIRED_KEYS if k not in raw]
            if missing:
                raise ValueError(f"{file.name}: rule {raw.get('id', '?')} lacks {', '.join(missing)}")
            if raw["id"] in entries:
                raise ValueError(f"{file.name}: rule {raw['id']} is defined twice")
            entries[raw["id"]] = RuleEntry(
                id=raw["id"],
                title=raw["title"],
                statement=raw["statement"].strip(),
                rationale=raw["rationale"].strip(),
                origin=raw["origin"],
                severity=Severity(raw["severity"]),
                fix=raw["fix"].strip(),
                scope=file.stem,
                aliases=tuple(raw.get("aliases", ())),
            )
    return entries


@functools.lru_cache(maxsize=1)
def _alias_index() -> dict[str, str]:
    return {name: entry.id for entry in catalogue().values() for name in entry.names()}


def lookup(rule_id: str) -> RuleEntry:
    """The entry for an ID or an alias (case-sensitive, as written in the SONNX documents)."""
    canonical = _alias_index().get(rule_id)
    if canonical is None:
        raise UsageError(f"unknown rule '{rule_id}' (see sonnx-check --list-rules)")
    return catalogue()[canonical]


def expand(patterns: list[str] | tuple[str, ...], *, what: str = "rule") -> set[str]:
    """Canonical IDs matched by exact IDs, aliases, prefixes ending in '.' or '*', or globs.

    A pattern that matches nothing is a user error: a typo in a CI configuration must not silently
    select or ignore nothing.
    """
    selected: set[str] = set()
    index = _alias_index()
    for pattern in patterns:
        pattern = pattern.strip()
        if not pattern:
            continue
        if pattern.upper() in ("ALL", "*"):
            selected.update(catalogue())
            continue
        glob = pattern + "*" if pattern.endswith(".") else pattern
        matched = {canonical for name, canonical in index.items() if fnmatch.fnmatchcase(name, glob)}
        if not matched:
            raise UsageError(f"unknown {what} '{pattern}' (see sonnx-check --list-rules)")
        selected.update(matched)
    return selected
