"""The JSON report: the contract of rules.md (tool, models[path, findings], summary), plus coverage and
comparison data."""

from __future__ import annotations

import json

from sonnx_check import __version__
from sonnx_check.findings import ModelResult
from sonnx_check.report.summary import summarise


def render(results: list[ModelResult]) -> str:
    document = {
        "tool": {"name": "sonnx-check", "version": __version__},
        "models": [r.to_json() for r in results],
        "summary": summarise(results).to_json(),
    }
    return json.dumps(document, indent=2, default=_fallback) + "\n"


def _fallback(value: object) -> object:
    # numpy scalars and tuples from comparison statistics
    if hasattr(value, "item"):
        return value.item()  # type: ignore[attr-defined]
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)
