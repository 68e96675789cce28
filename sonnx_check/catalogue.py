"""The rule catalogue: rules/*.toml, data that users read (``--explain``) and tools cite (SARIF, JSON).

Each file is one scope: model, graph, general, runtime, or one operator of the profile. An operator's file
opens with its declaration (``[operator]``: signature, type sets, versions, accuracy class, a conforming
example) followed by its rules; every rule names its check (``check = { ... }``), so the catalogue is the
one place that binds IDs to code. The catalogue ships inside the wheel as ``sonnx_check/rules``; in a source
checkout it is the top-level ``rules/`` folder.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sonnx_check.errors import UsageError
from sonnx_check.findings import Severity

REQUIRED_KEYS = ("id", "title", "statement", "rationale", "origin", "fix", "check")
STATUSES = ("stable", "draft")


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
    check: Mapping[str, Any] = field(default_factory=dict, compare=False)  # one key: the kind of check
    aliases: tuple[str, ...] = ()
    status: str = "stable"  # "draft": from a specification text the working group marks as draft
    op_type: str | None = None  # operator rules: the operator whose nodes the rule applies to
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)  # test cases, params

    def names(self) -> tuple[str, ...]:
        return (self.id, *self.aliases)


def rules_dir() -> Path:
    packaged = Path(__file__).parent / "rules"
    return packaged if packaged.is_dir() else Path(__file__).parent.parent / "rules"


@functools.lru_cache(maxsize=1)
def catalogue_files() -> tuple[tuple[str, Mapping[str, Any]], ...]:
    """Every catalogue file as (stem, parsed TOML), sorted by name: read once, shared by the rule entries
    and the operator declarations. The parse comes from the user's cache when the files and the package
    version are those it was made from (catalogue_cache.py)."""
    from sonnx_check import __version__, catalogue_cache

    # sorted by name (str), not as Paths: comparing Paths costs more than reading the forty files
    files = sorted((file for file in rules_dir().glob("*.toml")), key=lambda file: file.name)
    contents = [(file.name, file.read_bytes()) for file in files]
    stems = [name.removesuffix(".toml") for name, _ in contents]
    key = catalogue_cache.cache_key(__version__, contents)
    cached = catalogue_cache.load(key, stems)
    if cached is not None:
        return cached
    import tomllib  # only without a usable cache: a static run then never loads the parser

    parsed = tuple(
        (stem, tomllib.loads(content.decode())) for stem, (_, content) in zip(stems, contents, strict=True)
    )
    catalogue_cache.store(key, parsed)
    return parsed


@functools.lru_cache(maxsize=1)
def catalogue() -> dict[str, RuleEntry]:
    """Every rule by ID, in catalogue order (files sorted by name, entries in file order)."""
    entries: dict[str, RuleEntry] = {}
    for stem, data in catalogue_files():
        declaration = data.get("operator")
        op_type = declaration["op_type"] if declaration else None
        draft = declaration is not None and declaration.get("status") == "draft"
        for raw in data.get("rule", []):
            missing = [k for k in REQUIRED_KEYS if k not in raw]
            if missing:
                raise ValueError(f"{stem}.toml: rule {raw.get('id', '?')} lacks {', '.join(missing)}")
            if raw["id"] in entries:
                raise ValueError(f"{stem}.toml: rule {raw['id']} is defined twice")
            status = raw.get("status", "draft" if draft else "stable")
            if status not in STATUSES:
                raise ValueError(f"{stem}.toml: rule {raw['id']} has status {status!r}")
            # A draft text's rules warn by default: the working group may still change them.
            severity = raw.get("severity", "warning" if status == "draft" else "error")
            entries[raw["id"]] = RuleEntry(
                id=raw["id"],
                title=raw["title"],
                statement=raw["statement"].strip(),
                rationale=raw["rationale"].strip(),
                origin=raw["origin"],
                severity=Severity(severity),
                fix=raw["fix"].strip(),
                scope=stem,
                check=raw["check"],
                aliases=tuple(raw.get("aliases", ())),
                status=status,
                op_type=op_type,
                raw=raw,
            )
    return entries


@functools.lru_cache(maxsize=1)
def _alias_index() -> dict[str, str]:
    return {name: entry.id for entry in catalogue().values() for name in entry.names()}


def lookup(rule_id: str) -> RuleEntry:
    """The entry for an ID or an alias. Exact spelling first (IDs are written as in the SONNX documents),
    then case-insensitively (``maxpool.r4`` typed in a hurry), where that names one rule."""
    index = _alias_index()
    canonical = index.get(rule_id)
    if canonical is None:
        folded = {index[name] for name in index if name.casefold() == rule_id.casefold()}
        canonical = folded.pop() if len(folded) == 1 else None
    if canonical is None:
        raise UsageError(
            f"unknown rule '{rule_id}'{_suggestion(rule_id, index)} (see sonnx-check --list-rules)"
        )
    return catalogue()[canonical]


def _suggestion(rule_id: str, index: Mapping[str, str]) -> str:
    """'; did you mean X?' for the closest name, compared case-insensitively."""
    import difflib  # only for an unknown rule's message

    by_folded = {name.casefold(): name for name in index}
    close = difflib.get_close_matches(rule_id.casefold(), list(by_folded), n=1, cutoff=0.6)
    if not close:
        return ""
    return f"; did you mean {by_folded[close[0]]}?"


def expand(patterns: list[str] | tuple[str, ...], *, what: str = "rule") -> set[str]:
    """Canonical IDs matched by exact IDs, aliases, prefixes ending in '.' or '*', or globs; a pattern
    that matches nothing as written is matched case-insensitively (as ``lookup`` does for --explain).

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
        if not matched:  # then case-insensitively, as --explain: ``maxpool.r4`` typed in a hurry
            folded = glob.casefold()
            matched = {c for name, c in index.items() if fnmatch.fnmatchcase(name.casefold(), folded)}
        if not matched:
            raise UsageError(
                f"unknown {what} '{pattern}'{_suggestion(pattern, index)} (see sonnx-check --list-rules)"
            )
        selected.update(matched)
    return selected
