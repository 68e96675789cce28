"""The JSON report: the contract of rules.md (tool, models[path, findings], summary), plus coverage,
comparison data, the --fix outcome of each model, the configuration in force and, with --statistics, the
count per rule."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sonnx_check import __version__
from sonnx_check.findings import ModelResult, Severity
from sonnx_check.report.summary import rule_counts, summarise

if TYPE_CHECKING:
    from sonnx_check.fix.outcome import FixOutcome


def render(
    results: list[ModelResult],
    *,
    fixes: Sequence[FixOutcome | None] | None = None,
    statistics: bool = False,
    config_file: str | None = None,
    fail_on: Severity = Severity.ERROR,
) -> str:
    models = []
    for i, result in enumerate(results):
        entry = result.to_json()
        fix = fixes[i] if fixes is not None else None
        if fix is not None:
            entry["fix"] = fix.to_json()
        models.append(entry)
    document: dict[str, Any] = {
        "tool": {"name": "sonnx-check", "version": __version__},
        "configuration": {"file": config_file, "fail_on": fail_on.value},
        "models": models,
        "summary": summarise(results).to_json(),
    }
    if statistics:
        document["statistics"] = [count.to_json() for count in rule_counts(results)]
    return json.dumps(document, indent=2, default=_fallback) + "\n"


def _fallback(value: object) -> object:
    # numpy scalars and tuples from comparison statistics
    if hasattr(value, "item"):
        return value.item()  # type: ignore[attr-defined]
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
