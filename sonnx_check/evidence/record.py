"""The evidence record of a run (``--evidence PATH``, and the data of the HTML report): what was checked,
against which texts, where, how configured, and what held, failed or was waived, node by node.

Keys come in a fixed order and every list in a fixed order (models in input order, rules in catalogue
order, nodes by index), so two runs over the same inputs give the same record apart from ``run.timestamp``
and ``run.seconds``. The JSON Schema is ``sonnx_check/schemas/evidence.schema.json``. Model strings are
exact (``sanitise.data``), as in the JSON report.
"""

from __future__ import annotations

import datetime
import json
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sonnx_check import __version__, sanitise
from sonnx_check.evidence import comparison as compared
from sonnx_check.evidence.classes import CLASSES, class_totals, verdict_class
from sonnx_check.evidence.environment import environment
from sonnx_check.evidence.identity import ModelIdentity, file_sha256, model_identity
from sonnx_check.evidence.revision import revision
from sonnx_check.evidence.verdicts import RuleVerdict, verdicts
from sonnx_check.findings import ModelResult, Severity
from sonnx_check.masking import mask_arguments
from sonnx_check.report.summary import in_verdict
from sonnx_check.results.deprecated_keys import DEPRECATED_RUNTIME_KEY
from sonnx_check.results.json_values import json_default

if TYPE_CHECKING:
    from sonnx_check.config import Settings, Waiver

FORMAT = "sonnx-check-evidence"
FORMAT_VERSION = 1
SCHEMA_NAME = "evidence.schema.json"
VOLATILE = ("timestamp", "seconds")  # the keys of ``run`` that differ between two identical runs


@dataclass(frozen=True)
class ModelEvidence:
    """One model's part of the record as typed values, for the readers that render it (the HTML report):
    its results as the record states them (``sanitise.for_data``), its identity, every selected rule's
    verdict and every compared tensor. ``entry`` is the record's JSON of the model."""

    result: ModelResult
    identity: ModelIdentity
    rules: tuple[RuleVerdict, ...]
    outputs: tuple[compared.ComparedOutput, ...]
    departures: tuple[compared.DepartureMet, ...]  # the known departures the findings met
    entry: dict[str, Any]


@dataclass(frozen=True)
class Evidence:
    """The record (``document``, the JSON of ``--evidence``) with each model's typed part beside it."""

    document: dict[str, Any]
    models: tuple[ModelEvidence, ...]


@dataclass(frozen=True)
class RunFacts:
    argv: Sequence[str]  # the arguments after the program name
    started: datetime.datetime  # UTC
    seconds: float


def build(
    results: Sequence[ModelResult],
    per_model: Sequence[Settings],
    facts: RunFacts,
    identities: dict[str, ModelIdentity] | None = None,
    sources: Sequence[str] | None = None,
) -> Evidence:
    """The record, and each model's typed part. ``results``: as checked (not yet sanitised);
    ``per_model[i]``: results[i]'s settings; ``identities``: models already identified (by path), filled
    in as models are identified;
    ``sources[i]``: the model results[i] stands for (with --fix, the original of a fixed model), whose path
    the configuration's rules and waivers were matched against."""
    identities = identities if identities is not None else {}
    sources = sources if sources is not None else [r.path for r in results]
    data_results, _ = sanitise.for_data(list(results), None)
    models = []
    for result, shown, settings, source in zip(results, data_results, per_model, sources, strict=True):
        identity = identities.get(result.path)
        if identity is None or not identity.structured:
            identity = model_identity(result.path, timeout=settings.compare.timeout)
            identities[result.path] = identity
        model = _model(shown, settings, identity, settings.rules_for(source))
        if source != result.path:
            model.entry["source"] = sanitise.data(source)
        models.append(model)
    totals = class_totals(f for r in results for f in r.findings)
    document = {
        "record": {"format": FORMAT, "version": FORMAT_VERSION, "schema": SCHEMA_NAME},
        "tool": {"name": "sonnx-check", "version": __version__},
        "specification": revision(),
        "environment": environment(),
        "run": {
            "timestamp": facts.started.astimezone(datetime.UTC).isoformat(timespec="seconds"),
            "seconds": round(facts.seconds, 3),
            "command_line": shlex.join(["sonnx-check", *mask_arguments(facts.argv)]),
            "arguments": mask_arguments(facts.argv),
        },
        "configuration": _configuration(results, per_model),
        "models": [m.entry for m in models],
        "summary": {
            "models": len(results),
            "unreadable": sum(r.load_error for r in results),
            "findings": sum(len(r.findings) for r in results),
            "classes": totals,
            "verdict": _verdict(results, per_model[0].fail_on if per_model else None),
        },
    }
    return Evidence(document, tuple(models))


def render(record: dict[str, Any]) -> str:
    """The record as JSON: the outer levels indented, each finding, node, verdict and compared output on one
    line (a reviewer can read and diff it; json's indenting encoder is pure Python and would cost seconds
    on a 10k-node model, the compact one is C)."""
    return _dump(record, 0) + "\n"


def _dump(value: Any, level: int) -> str:
    pad = " " * level
    if isinstance(value, dict) and value and level < 3:
        items = [f"{pad} {json.dumps(k, ensure_ascii=True)}: {_dump(v, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value and level < 4 and all(isinstance(v, dict) for v in value):
        return "[\n" + ",\n".join(f"{pad} {_dump(v, level + 1)}" for v in value) + "\n" + pad + "]"
    return json.dumps(
        value, ensure_ascii=True, allow_nan=False, separators=(", ", ": "), default=json_default
    )


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: a non-finite number is written as text ("nan", "inf", "-inf"), as the
    comparison's own data does. numpy scalars become Python numbers."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _verdict(results: Sequence[ModelResult], fail_on: Severity | None) -> str:
    """The run's verdict, as its exit code has it: ``unreadable`` (a model could not be read), ``fails`` (an
    active finding at or above --fail-on), ``passes-with-findings`` (active findings below it only) or
    ``conforms`` (no active finding)."""
    if any(r.load_error for r in results):
        return "unreadable"
    # Operator-level evidence (about the runtime, severity info) is reported beside the verdict.
    active = [f for r in results for f in r.findings if in_verdict(f)]
    threshold = (fail_on or Severity.ERROR).rank
    if any(f.severity.rank >= threshold for f in active):
        return "fails"
    return "passes-with-findings" if active else "conforms"


def _model(
    result: ModelResult, settings: Settings, identity: ModelIdentity, selected: frozenset[str]
) -> ModelEvidence:
    d = sanitise.data
    # Only a finding's values and the comparison's statistics can hold a non-finite or a numpy number.
    findings = []
    for f in result.findings:
        finding = {**f.to_json(), "class": verdict_class(f)}
        for key in ("actual", "expected", "data"):
            if key in finding and not isinstance(finding[key], str):
                finding[key] = _finite(finding[key])
        findings.append(finding)
    nodes = [
        {"index": i, "name": d(name), "op_type": d(op), "domain": d(domain)}
        for i, (name, op, domain) in enumerate(identity.nodes)
    ]
    entry: dict[str, Any] = {
        "path": result.path,
        **identity.to_json(),
        "readable": not result.load_error,
        "producer": {k: d(v) for k, v in identity.producer.items()},
        "ir_version": identity.ir_version,
        "opset_imports": {d(k): v for k, v in identity.opset_imports.items()},
        "graph": d(identity.graph_name) if identity.graph_name is not None else None,
        "configuration": settings.config_file,
        "coverage": result.coverage.to_json() if result.coverage is not None else None,
        "nodes": nodes,
        "findings": findings,
    }
    if result.load_error or any(f.rule == "MODEL.internal-error" for f in result.findings):
        rules: list[RuleVerdict] = []
    else:
        rules = verdicts(identity.nodes, selected, result.findings, result.comparison)
    entry["rules"] = [r.summary_json() for r in rules]
    entry["verdicts"] = [r.verdict_json() for r in rules]
    outputs = compared.compared_outputs(result.comparison) if result.comparison is not None else []
    departures = compared.known_departures(result.findings)
    compares = settings.compare.enabled
    entry["comparison"] = _finite(_comparison(result, settings, outputs, departures)) if compares else None
    entry["classes"] = class_totals(result.findings)
    return ModelEvidence(result, identity, tuple(rules), tuple(outputs), tuple(departures), entry)


def _comparison(
    result: ModelResult,
    settings: Settings,
    outputs: Sequence[compared.ComparedOutput],
    departures: Sequence[compared.DepartureMet],
) -> dict[str, Any] | None:
    comparison = result.comparison
    if comparison is None:
        return None
    model = None
    if comparison.datasets:
        from sonnx_check.errors import ModelLoadError
        from sonnx_check.loading import read_model_file

        try:
            model = read_model_file(result.path).skeleton()
        except ModelLoadError:
            model = None
    return {
        "status": comparison.status,
        "settings": compared.settings_json(settings.compare),
        DEPRECATED_RUNTIME_KEY: comparison.runtime_record,
        "runtime": comparison.runtime.to_json(),
        "reference": comparison.reference.readings.records(),
        "datasets": compared.datasets_json(model, settings.compare, comparison.datasets),
        "outputs": [o.to_json() for o in outputs],
        "not_compared": [n.to_json() for n in comparison.not_compared],
        "known_departures": [d.to_json() for d in departures],
    }


def _configuration(results: Sequence[ModelResult], per_model: Sequence[Settings]) -> dict[str, Any]:
    groups: dict[int, tuple[Settings, list[ModelResult]]] = {}
    for result, settings in zip(results, per_model, strict=True):
        groups.setdefault(id(settings), (settings, []))[1].append(result)
    files = []
    for settings, members in groups.values():
        files.append(_settings(settings, members))
    first = per_model[0] if per_model else None
    return {
        "fail_on": first.fail_on.value if first else "error",
        "exit_zero": first.exit_zero if first else False,
        "files": files,
    }


def _settings(settings: Settings, members: list[ModelResult]) -> dict[str, Any]:
    digest = None
    if settings.config_file is not None:
        try:
            digest = file_sha256(settings.config_file)[0]
        except OSError:
            digest = None
    covered: dict[int, list[dict[str, Any]]] = {}
    for result in members:
        waivers = settings.waivers_for(result.path)
        for k, finding in enumerate(result.findings):
            if finding.waived is None:
                continue
            waiver = _covering(waivers, finding)
            if waiver is not None:
                covered.setdefault(id(waiver), []).append(
                    {
                        "model": sanitise.data(result.path),
                        "finding": k,
                        "rule": finding.rule,
                        "node": finding.node.index if finding.node is not None else None,
                    }
                )
    return {
        "file": settings.config_file,
        "sha256": digest,
        "models": [sanitise.data(r.path) for r in members],
        "selected": sorted(settings.selected),
        "per_model_ignores": [
            {"models": pattern, "rules": sorted(rules)} for pattern, rules in settings.per_model_ignores
        ],
        "exclude": list(settings.exclude),
        "compare": compared.settings_json(settings.compare) if settings.compare.enabled else None,
        "waivers": [
            {
                "origin": w.origin,
                "rule": w.rule,
                "rules": sorted(w.rules),
                "models": list(w.models),
                "node": list(w.node),
                "op_type": list(w.op_type),
                "known": list(w.known),
                "reason": w.reason,
                "covered": covered.get(id(w), []),
            }
            for w in settings.waivers
        ],
    }


def _covering(waivers: Sequence[Waiver], finding: Any) -> Waiver | None:
    from sonnx_check.waivers import covers

    bare = replace(finding, waived=None)
    return next((w for w in waivers if covers(w, bare)), None)


__all__ = ["CLASSES", "Evidence", "ModelEvidence", "RunFacts", "build", "render"]
