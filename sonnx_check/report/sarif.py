"""SARIF 2.1.0 for GitHub code scanning (anchors.md §2.4).

A model is a binary file, so every result points at line 1 of the model (GitHub requires a region) and
names the node as a logical location and in its message. GitHub cannot hash "source lines" of a binary, so
each result carries its own fingerprint, computed from the model path, the rule and the node's identity
(its name, or its position and operator when it has none): a finding keeps its alert across runs and
across unrelated edits of the model.

The log names what was checked: ``artifacts`` holds each model (and each external-data file it names) with
its sha256, ``invocations`` the command line and when it ran, and each rule's ``helpUri`` the
working-group text it comes from, at the commit the rules encode.

Waived findings stay in the log with a SARIF ``suppressions`` entry (the waiver's reason as justification)
and at level ``note``, so they are visible but never fail a code-scanning gate.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shlex
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sonnx_check import __version__, sanitise
from sonnx_check.findings import Finding, ModelResult, Severity
from sonnx_check.masking import mask_arguments
from sonnx_check.report.readings import comparison_readings
from sonnx_check.report.summary import summarise
from sonnx_check.results.json_values import json_default

if TYPE_CHECKING:
    from sonnx_check.evidence.identity import ModelIdentity

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "sonnxCheckFinding/v1"
REGION = {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 2}


def render(
    results: list[ModelResult],
    *,
    identities: dict[str, ModelIdentity] | None = None,
    invocation: dict[str, Any] | None = None,
) -> str:
    """``identities``: each model's hashes, by its path as in ``results``; ``invocation``: SARIF's
    invocation object for this run."""
    rule_ids = _rules_in_order(results)
    index = {rule: i for i, rule in enumerate(rule_ids)}
    occurrences: dict[str, int] = {}
    sarif_results = []
    comparisons = []
    for result in results:
        uri = artifact_uri(result.path)
        for finding in result.findings:
            sarif_results.append(_result(finding, uri, index, occurrences))
        readings = comparison_readings(result.comparison)
        if readings:
            comparisons.append({"artifact": uri, **{k: sanitise.line(v) for k, v in readings.items()}})
    summary = summarise(results)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "sonnx-check",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_descriptor(rule) for rule in rule_ids],
                    }
                },
                **({"invocations": [invocation]} if invocation is not None else {}),
                **({"artifacts": _artifacts(results, identities)} if identities is not None else {}),
                "results": sarif_results,
                "columnKind": "unicodeCodePoints",
                "properties": {
                    "sonnxCheckClasses": summary.classes,
                    "sonnxCheckFixable": summary.fixable,
                    **({"sonnxCheckComparisons": comparisons} if comparisons else {}),
                },
            }
        ],
    }
    return json.dumps(log, indent=2, default=json_default) + "\n"


def _artifacts(results: list[ModelResult], identities: dict[str, ModelIdentity]) -> list[dict[str, Any]]:
    """Every model and every external-data file it names, with its sha256 and length when it was read."""
    artifacts: list[dict[str, Any]] = []
    index: dict[str, int] = {}

    def add(uri: str, sha256: str | None, size: int | None, parent: int | None, note: str = "") -> int:
        if uri not in index:
            item: dict[str, Any] = {"location": {"uri": uri}}
            if parent is None:
                item["roles"] = ["analysisTarget"]
            else:
                item["parentIndex"] = parent
            if size is not None:
                item["length"] = size
            if sha256 is not None:
                item["hashes"] = {"sha-256": sha256}
            elif note:  # not read, or not hashed in time (identity.py)
                item["description"] = {"text": sanitise.display(note, 1000)}
            index[uri] = len(artifacts)
            artifacts.append(item)
        return index[uri]

    for result in results:
        identity = identities.get(result.path)
        uri = artifact_uri(result.path)
        if identity is None:
            model = add(uri, None, None, None)
        else:
            model = add(uri, identity.sha256, identity.size, None, identity.note)
        folder = uri.rpartition("/")[0]
        for external in identity.external_data if identity else ():
            location = urllib.parse.quote(sanitise.display(external.location).replace(os.sep, "/"), safe="/")
            target = f"{folder}/{location}" if folder else location
            add(target, external.sha256, external.size, model, external.note)
    return artifacts


def invocation(
    argv: Sequence[str], started: datetime.datetime, seconds: float, *, succeeded: bool
) -> dict[str, Any]:
    """``invocations[0]``: the command line (``argv``: the arguments after the program's name), when it ran
    (``started``, UTC) and whether every model could be checked (``succeeded``)."""
    ended = started + datetime.timedelta(seconds=seconds)
    argv = mask_arguments(argv)  # uploaded to code scanning: no credential of the command line
    return {
        "commandLine": sanitise.display(shlex.join(["sonnx-check", *argv]), 100_000),
        "arguments": [sanitise.display(a, 10_000) for a in argv],
        "executionSuccessful": succeeded,
        "startTimeUtc": started.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "endTimeUtc": ended.isoformat(timespec="seconds").replace("+00:00", "Z"),
    }


def artifact_uri(path: str) -> str:
    """A relative path stays relative (GitHub resolves it against the repository root, so run sonnx-check
    from there); an absolute one becomes a file URI. Both are percent-encoded URI references."""
    if os.path.isabs(path):
        return Path(path).as_uri()
    text = path.replace(os.sep, "/")
    while text.startswith("./"):
        text = text[2:]
    return urllib.parse.quote(text, safe="/")


def fingerprint(uri: str, finding: Finding) -> str:
    """Stable identity of (model, rule, place): not the node's index when it has a name, so inserting an
    unrelated node does not turn every alert below it into a new one. ``uri`` is the artifact URI, so
    ``./m.onnx`` and ``m.onnx`` are the same model."""
    if finding.node is not None:
        place = (
            finding.node.graph + "/" + (finding.node.name or f"#{finding.node.index}:{finding.node.op_type}")
        )
    elif finding.tensor:
        place = f"tensor:{finding.tensor}"
    else:
        place = ""
    key = "\x1f".join((uri, finding.rule, place))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _rules_in_order(results: Sequence[ModelResult]) -> list[str]:
    from sonnx_check.catalogue import catalogue

    used = {f.rule for r in results for f in r.findings}
    order = list(catalogue())
    return [r for r in order if r in used] + sorted(used - set(order))


def _descriptor(rule: str) -> dict[str, Any]:
    from sonnx_check.catalogue import catalogue

    entry = catalogue().get(rule)
    if entry is None:  # not in the catalogue: still a valid descriptor
        return {"id": rule, "shortDescription": {"text": rule}}
    statement = " ".join(entry.statement.split())
    rationale = " ".join(entry.rationale.split())
    fix = " ".join(entry.fix.split())
    help_text = (
        f"{statement}\n\nWhy: {rationale}\n\nHow to fix: {fix}\n\nOrigin: {entry.origin}\n\n"
        f"Run 'sonnx-check --explain {entry.id}' for this text in a terminal."
    )
    help_markdown = (
        f"**{entry.id}: {entry.title}**\n\n{statement}\n\n### Why\n{rationale}\n\n### How to fix\n{fix}\n\n"
        f"### Origin\n{entry.origin}" + (f"\n\nAliases: {', '.join(entry.aliases)}" if entry.aliases else "")
    )
    from sonnx_check.evidence.revision import text_url

    url = text_url(entry.origin)
    return {
        "id": entry.id,
        **({"helpUri": url} if url else {}),
        "shortDescription": {"text": entry.title},
        "fullDescription": {"text": statement},
        "help": {"text": help_text, "markdown": help_markdown},
        "defaultConfiguration": {"level": entry.severity.value},
        "properties": {
            "tags": ["sonnx", entry.scope],
            "precision": "very-high",
            "problem.severity": entry.severity.value,
            "aliases": list(entry.aliases),
        },
    }


def _result(finding: Finding, uri: str, index: dict[str, int], occurrences: dict[str, int]) -> dict[str, Any]:
    digest = fingerprint(uri, finding)
    occurrences[digest] = occurrences.get(digest, 0) + 1
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": {"uri": uri}, "region": dict(REGION)},
    }
    logical = _logical_location(finding)
    if logical is not None:
        location["logicalLocations"] = [logical]
    out: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": index[finding.rule],
        "level": _level(finding),
        "message": {"text": finding.located_message()},
        "locations": [location],
        "partialFingerprints": {
            "primaryLocationLineHash": f"{digest[:16]}:{occurrences[digest]}",
            FINGERPRINT_KEY: f"{digest}:{occurrences[digest]}",
        },
        "properties": _properties(finding),
    }
    if finding.waived is not None:
        out["suppressions"] = [{"kind": "external", "status": "accepted", "justification": finding.waived}]
    return out


def _level(finding: Finding) -> str:
    """SARIF levels: error, warning, note. Waived findings and operator-level evidence (info) are notes."""
    if finding.waived is not None or finding.severity is Severity.INFO:
        return "note"
    return finding.severity.value


def _logical_location(finding: Finding) -> dict[str, Any] | None:
    node = finding.node
    if node is not None:
        return {
            "name": node.name or f"node[{node.index}]",
            "fullyQualifiedName": f"{node.graph}/node[{node.index}]:{node.name}",
            "kind": "member",
        }
    if finding.tensor:
        return {"name": finding.tensor, "kind": "variable"}
    return None


def _properties(finding: Finding) -> dict[str, Any]:
    props: dict[str, Any] = {
        "severity": finding.severity.value,
        "class": finding.verdict_class.value,
        "fixable": finding.fixable,
    }
    if finding.known_departures:
        props["knownDepartures"] = list(finding.known_departures)
    if finding.node is not None:
        props.update(
            opType=finding.node.op_type,
            nodeIndex=finding.node.index,
            nodeName=finding.node.name,
            graph=finding.node.graph,
        )
    for key in ("tensor", "attribute", "actual", "expected"):
        value = getattr(finding, key)
        if value is not None:
            props[key] = value
    if finding.waived is not None:
        props["waived"] = True
        props["waiverReason"] = finding.waived
    return props
