"""The JSON report: the contract of docs/rule-ids.md#json-report (tool, models[path, findings], summary), plus
coverage, comparison data, the --fix outcome of each model, the configuration in force (the run's file, each
model's file, and the waivers and ignores that did nothing) and, with --statistics, the count per rule.

Model strings are exact (``sanitise.for_data``: only invalid UTF-8 and strings over 4096 characters are
changed), and ``json.dumps`` writes every control and non-ASCII character as a ``\\uXXXX`` escape: the file
is plain ASCII, so no consumer meets a raw control character, and a node name can be matched exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sonnx_check import __version__
from sonnx_check.findings import ModelResult, Severity
from sonnx_check.report.summary import rule_counts, summarise
from sonnx_check.results.json_values import json_default

if TYPE_CHECKING:
    from sonnx_check.fix.outcome import FixOutcome


def render(
    results: list[ModelResult],
    *,
    fixes: Sequence[FixOutcome | None] | None = None,
    statistics: bool = False,
    config_file: str | None = None,
    fail_on: Severity = Severity.ERROR,
    model_configs: Sequence[str | None] | None = None,
    unused: Sequence[dict[str, Any]] = (),
) -> str:
    """``model_configs[i]``: the configuration file results[i] was checked with (None: defaults)."""
    models = []
    for i, result in enumerate(results):
        entry = result.to_json()
        if model_configs is not None:
            entry["configuration"] = model_configs[i]
        fix = fixes[i] if fixes is not None else None
        if fix is not None:
            entry["fix"] = fix.to_json()
        models.append(entry)
    configuration: dict[str, Any] = {"file": config_file, "fail_on": fail_on.value}
    if model_configs is not None:
        configuration["files"] = sorted({c for c in model_configs if c is not None})
    configuration["unused"] = list(unused)
    document: dict[str, Any] = {
        "tool": {"name": "sonnx-check", "version": __version__},
        "configuration": configuration,
        "models": models,
        "summary": summarise(results).to_json(),
    }
    if statistics:
        document["statistics"] = [count.to_json() for count in rule_counts(results)]
    return json.dumps(document, indent=2, default=json_default, ensure_ascii=True) + "\n"
