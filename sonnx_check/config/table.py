"""Validating a ``[tool.sonnx-check]`` table: every key, the first problem raising a ConfigError that names
the file and the dotted key. The comparison keys are declared with their options (``settings.py``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sonnx_check import settings as declared
from sonnx_check.config.departures import canonical_departure, closest_departure
from sonnx_check.config.reader import TABLE, Reader
from sonnx_check.config.resolved import Waiver
from sonnx_check.sanitise import display

FORMATS = ("text", "json", "sarif", "github", "junit", "gitlab")
FAIL_ON = ("error", "warning")
# Every top-level key with what a configuration file found by discovery may set (settings.TRUST; the
# comparison's keys declare theirs with their options): none of these runs a program or names a path, so a
# file that comes with the models may set them all (they are the project's policy, as its waivers are),
# ``jobs`` up to the CPU count.
TOP_KEY_TRUST = {
    "select": declared.TRUST_ANY,
    "extend-select": declared.TRUST_ANY,
    "ignore": declared.TRUST_ANY,
    "per-model-ignores": declared.TRUST_ANY,
    "fail-on": declared.TRUST_ANY,
    "format": declared.TRUST_ANY,  # of the run's report on stdout: --output alone names a file
    "jobs": declared.TRUST_CPUS,  # never more workers than models, nor (from such a file) than CPUs
    "compare": declared.TRUST_ANY,  # the table; each of its keys has its own trust (settings.OPTIONS)
    "waivers": declared.TRUST_ANY,
    "exclude": declared.TRUST_ANY,  # model globs: they only narrow what a folder scan reads
    "respect-gitignore": declared.TRUST_ANY,
}
TOP_KEYS = tuple(TOP_KEY_TRUST)
COMPARE_KEYS = declared.CONFIG_KEYS
WAIVER_KEYS = ("rule", "models", "node", "op_type", "known", "reason")
KNOWN_WAIVER_RULE = "RUNTIME.divergence"  # the one rule a waiver may narrow to known departures (``known``)


@dataclass(frozen=True)
class FileConfig:
    """A validated ``[tool.sonnx-check]`` table."""

    path: str  # as shown in messages and reports
    folder: str = ""  # absolute folder of the file: relative model globs and dataset paths start here
    select: frozenset[str] | None = None
    extend_select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    per_model_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    fail_on: str | None = None
    output_format: str | None = None
    jobs: int | None = None
    compare: dict[str, Any] = field(default_factory=dict)  # option name -> value, the keys the file gives
    waivers: tuple[Waiver, ...] = ()
    exclude: tuple[str, ...] = ()
    respect_gitignore: bool | None = None


def parse_table(
    table: Mapping[str, Any], file: str, folder_of: str | None = None, discovered: bool = True
) -> FileConfig:
    """Validate every key; the first problem raises a ConfigError naming it. A ``discovered`` file (found
    beside the models, not named by --config) may set each key only as far as its trust allows."""
    r = Reader(file)
    r.unknown_keys(table, TOP_KEYS, TABLE)
    key = f"{TABLE}."
    folder = str(Path(folder_of or Path(file).parent).resolve())
    config = FileConfig(path=file, folder=folder)
    if "select" in table:
        config = replace(config, select=r.rules(r.strings(table["select"], key + "select"), key + "select"))
    if "extend-select" in table:
        k = key + "extend-select"
        config = replace(config, extend_select=r.rules(r.strings(table["extend-select"], k), k))
    if "ignore" in table:
        config = replace(config, ignore=r.rules(r.strings(table["ignore"], key + "ignore"), key + "ignore"))
    if "per-model-ignores" in table:
        config = replace(config, per_model_ignores=_per_model_ignores(r, table["per-model-ignores"]))
    if "fail-on" in table:
        config = replace(config, fail_on=r.choice(table["fail-on"], key + "fail-on", FAIL_ON))
    if "format" in table:
        config = replace(config, output_format=r.choice(table["format"], key + "format", FORMATS))
    if "jobs" in table:
        jobs = r.integer(table["jobs"], key + "jobs", 0)
        if discovered and TOP_KEY_TRUST["jobs"] == declared.TRUST_CPUS:
            jobs = min(jobs, os.cpu_count() or 1)  # 0 (every CPU) stays 0
        config = replace(config, jobs=jobs)
    if "compare" in table:
        config = replace(config, compare=_compare_table(r, table["compare"], Path(folder), discovered))
    if "waivers" in table:
        config = replace(config, waivers=_waivers(r, table["waivers"]))
    if "exclude" in table:
        exclude = r.strings(table["exclude"], key + "exclude")
        config = replace(config, exclude=r.globs(exclude, key + "exclude"))
    if "respect-gitignore" in table:
        k = key + "respect-gitignore"
        config = replace(config, respect_gitignore=r.boolean(table["respect-gitignore"], k))
    return config


def _per_model_ignores(r: Reader, value: Any) -> tuple[tuple[str, frozenset[str]], ...]:
    key = f"{TABLE}.per-model-ignores"
    if not isinstance(value, dict):
        raise r.fail(key, 'expected a table of model glob = [rules], e.g. "legacy/**" = ["GR4"]')
    r.entries(value, key)
    entries = []
    for pattern, rules in value.items():
        entry_key = f'{key}."{pattern}"'
        r.globs([pattern], entry_key)
        entries.append((pattern, r.rules(r.strings(rules, entry_key), entry_key)))
    return tuple(entries)


def _compare_table(r: Reader, value: Any, base: Path, discovered: bool) -> dict[str, Any]:
    key = f"{TABLE}.compare"
    if not isinstance(value, dict):
        raise r.fail(key, "expected a table ([tool.sonnx-check.compare])")
    r.unknown_keys(value, declared.config_keys(), key)
    return declared.read_config(r, value, base, discovered)


def _waivers(r: Reader, value: Any) -> tuple[Waiver, ...]:
    key = f"{TABLE}.waivers"
    if not isinstance(value, list) or not all(isinstance(w, dict) for w in value):
        raise r.fail(key, "expected an array of tables ([[tool.sonnx-check.waivers]])")
    r.entries(value, key)
    return tuple(_waiver(r, raw, f"{key}[{number}]") for number, raw in enumerate(value, start=1))


def _waiver(r: Reader, raw: Mapping[str, Any], wkey: str) -> Waiver:
    r.unknown_keys(raw, WAIVER_KEYS, wkey)
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise r.fail(f"{wkey}.reason", "required: every waiver states why the finding is acceptable")
    if "rule" not in raw:
        raise r.fail(f"{wkey}.rule", "required: the rule ID (or glob) the waiver covers")
    if not isinstance(raw["rule"], str):
        raise r.fail(f"{wkey}.rule", f"expected a string, got {raw['rule']!r}")
    if "models" not in raw:
        raise r.fail(f"{wkey}.models", 'required: a model glob ("**" for every model)')
    models = r.globs(r.string_or_strings(raw["models"], f"{wkey}.models"), f"{wkey}.models")
    if not models:
        raise r.fail(f"{wkey}.models", "must not be empty")
    rules = r.rules([raw["rule"]], f"{wkey}.rule")
    known: tuple[str, ...] = ()
    if "known" in raw:
        known = r.string_or_strings(raw["known"], f"{wkey}.known")
        if rules != {KNOWN_WAIVER_RULE}:
            raise r.fail(
                f"{wkey}.known",
                f'names known onnxruntime departures: only with rule = "{KNOWN_WAIVER_RULE}"',
            )
        known = _known_ids(r, known, f"{wkey}.known")
    return Waiver(
        rule=raw["rule"],
        rules=rules,
        models=models,
        reason=" ".join(reason.split()),
        node=r.string_or_strings(raw["node"], f"{wkey}.node") if "node" in raw else (),
        op_type=r.string_or_strings(raw["op_type"], f"{wkey}.op_type") if "op_type" in raw else (),
        known=known,
        origin=f"{r.file}: {wkey}",
    )


def _known_ids(r: Reader, given: tuple[str, ...], key: str) -> tuple[str, ...]:
    """Each ID in its canonical spelling; an ID no known departure has is an error, not a waiver that would
    silently hide nothing."""
    if not given:
        raise r.fail(
            key, "expected the ID of a known departure (as MAXPOOL-NAN-POSITIONAL), got an empty list"
        )
    canonical = []
    for name in given:
        found = canonical_departure(name)
        if found is None:
            close = closest_departure(name)
            hint = (
                f"; did you mean '{close}'?"
                if close
                else " (sonnx-check --explain RUNTIME.divergence lists them)"
            )
            raise r.fail(key, f"expected the ID of a known departure, got '{display(name)}'{hint}")
        canonical.append(found)
    return tuple(dict.fromkeys(canonical))  # "ort-x" and "ORT-X" are one ID
