"""What the HTML report's template shows of one model, read from the typed records: the traceability matrix
grouped by specification text (the rules' verdicts), the findings with their fix, the compared outputs and
the plots.

Every string the template receives passes ``shown`` (display-sanitised: controls and bidi overrides made
visible), as the record's own strings do; the typed values arrive as the record states them
(``sanitise.for_data``), so the page says what the embedded record says.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import TYPE_CHECKING, Any

from sonnx_check import sanitise
from sonnx_check.catalogue import catalogue
from sonnx_check.evidence.revision import spec_text, text_url
from sonnx_check.evidence.verdicts import NOT_APPLICABLE
from sonnx_check.findings import DIVERGENCE_RULE, Finding

if TYPE_CHECKING:
    from sonnx_check.evidence.comparison import ComparedOutput
    from sonnx_check.evidence.record import ModelEvidence
    from sonnx_check.results.models import ComparisonOutcome, RuntimeRecord, Session
    from sonnx_check.results.outputs import ExplainedBy

HELD_SHOWN = 40  # node names listed per rule where it held (the record has every one)
LIMIT = sanitise.DISPLAY_MESSAGE_LIMIT
IN_MODEL = ("node", "end-to-end")  # the scopes of the model's own run (the others: the edge battery's)


# What the page reads of a model's entry in the record besides its identity (path, hashes, producer...):
# the comparison's settings and datasets (with their data's hashes). Its other lists (nodes, findings, rules,
# compared outputs...) are read from the typed records.
_ENTRY_RESULTS = frozenset({"nodes", "findings", "rules", "verdicts", "comparison"})
_COMPARISON_FACTS = frozenset({"settings", "datasets"})


def identity_part(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A model's entry in the record without the results the page reads from the typed records."""
    part = {key: value for key, value in entry.items() if key not in _ENTRY_RESULTS}
    comparison = entry.get("comparison")
    part["comparison"] = (
        None if comparison is None else {k: v for k, v in comparison.items() if k in _COMPARISON_FACTS}
    )
    return part


def shown(value: Any) -> Any:
    """Every string inside ``value`` display-sanitised: in dicts (keys too: a model names its inputs and
    operators), lists, tuples and the typed records (dataclasses, rebuilt field by field). An enum keeps
    its type."""
    if type(value) in _ATOMS:  # most fields of a record: checked first (a large model has many records)
        return value
    if isinstance(value, str) and not isinstance(value, enum.Enum):
        return sanitise.display(value, LIMIT)
    if isinstance(value, Mapping):
        return {shown(k): shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shown(v) for v in value]
    if isinstance(value, tuple):
        return tuple(shown(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return replace(value, **{name: shown(getattr(value, name)) for name in _init_fields(type(value))})
    return value


_ATOMS = frozenset({int, float, bool, type(None)})


@functools.cache
def _init_fields(record: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(record) if f.init)


@dataclass(frozen=True)
class ComparisonHeading:
    """What the page states about the comparison as a whole: its status, the runtime under test and, for
    onnxruntime, its session (read from the typed outcome, not its per-node results)."""

    status: str
    runtime: RuntimeRecord
    session: Session

    @classmethod
    def of(cls, outcome: ComparisonOutcome | None) -> ComparisonHeading | None:
        return None if outcome is None else cls(outcome.status, outcome.runtime, outcome.session)


@dataclass(frozen=True)
class Differing:
    """An output that differs, its differing elements split by the known departures that explain them
    (``departures``: (IDs joined by " + ", elements); what none explains is "unexplained")."""

    output: ComparedOutput
    departures: tuple[tuple[str, int], ...]


def model_view(model: Mapping[str, Any], evidence: ModelEvidence, plots: Any) -> dict[str, Any]:
    """The template's view of one model. ``model``: the record's entry for it, display-sanitised (the
    model's identity, which the template reads as the record states it)."""
    names = [
        (shown(sanitise.data(name)), shown(sanitise.data(op))) for name, op, _ in evidence.identity.nodes
    ]

    def node_label(index: int | None) -> str:
        if index is None:
            return "the model"
        if 0 <= index < len(names):
            name, op_type = names[index]
            quoted = f"'{name}'" if name else "(unnamed)"
            return f"{op_type} {quoted} #{index}"
        return f"#{index}"

    findings: list[Finding] = shown(evidence.result.findings)
    outputs: tuple[ComparedOutput, ...] = shown(evidence.outputs)
    # The plots show the model's own run (its nodes and graph outputs on the model-level datasets); the
    # edge batteries' outputs are in the table below them...
    in_model = [o for o in outputs if o.scope in IN_MODEL]
    # ...and the outputs that fail, whatever their scope (a node run alone on edge values too)
    failing = [o for o in outputs if o.scope not in IN_MODEL and o.status != "match"]
    coverage = shown(evidence.result.coverage)
    return {
        "model": model,
        "node_count": len(names),
        "outcome": shown(ComparisonHeading.of(evidence.result.comparison)),
        "departures": shown(evidence.departures),
        "texts": _matrix(evidence, node_label),
        "not_applicable": [r.rule for r in evidence.rules if r.result == NOT_APPLICABLE],
        "findings": [_finding_row(k, f, node_label) for k, f in enumerate(findings)],
        "outputs": [(o, ", ".join(node_label(n) for n in o.nodes) or "graph output") for o in outputs],
        "margin_plot": plots.margin_plot(in_model + failing) if in_model or failing else None,
        "distribution_plot": plots.distribution_plot(in_model) if in_model else None,
        "difference_plot": plots.difference_plot(differing(outputs, findings)),
        "coverage_plot": plots.coverage_plot(coverage),
    }


def _matrix(evidence: ModelEvidence, node_label: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    """The rules that apply to the model, grouped by their specification text. Rules of operators the model
    does not use would fill pages: they are named together, once (``not_applicable``)."""
    texts: dict[str, list[dict[str, Any]]] = {}
    for verdict in evidence.rules:
        if verdict.result == NOT_APPLICABLE:
            continue
        row: dict[str, Any] = shown(verdict.summary_json())
        held = [node_label(n) for n in verdict.held]
        rule = catalogue().get(verdict.rule)
        origin = rule.origin if rule else ""
        row.update(
            url=text_url(origin),
            violated_at=[node_label(n) for n in verdict.violated],
            waived_at=[node_label(n) for n in verdict.waived],
            held_at=held[:HELD_SHOWN],
            held_more=max(0, len(held) - HELD_SHOWN),
        )
        texts.setdefault(spec_text(origin), []).append(row)
    return sorted(texts.items())


def _finding_row(number: int, finding: Finding, node_label: Any) -> dict[str, Any]:
    entry = catalogue().get(finding.rule)
    return {
        "number": number,
        "rule": finding.rule,
        "severity": finding.severity.value,
        "class": finding.verdict_class.value,
        "waived": finding.waived is not None,
        "waiver_reason": finding.waived,
        "message": finding.message,
        "where": node_label(finding.node.index) if finding.node is not None else "the model",
        "fix": fix_text(" ".join(entry.fix.split()), finding) if entry else "",
        "title": entry.title if entry else finding.rule,
    }


def _explained(finding: Finding) -> tuple[ExplainedBy, ...]:
    """The groups of known departures that explain the divergence's elements (none when no departure was
    met, or for a crash)."""
    output = finding.record.output if finding.record is not None else None
    return output.explained_by if output is not None and output.known else ()


def differing(outputs: Sequence[ComparedOutput], findings: Sequence[Finding]) -> list[Differing]:
    """Every output that differs (exact ones included, any scope) with its differing elements split by the
    known departures that explain them, read from its RUNTIME.divergence finding; what no departure
    explains is "unexplained"."""
    rows = []
    for output in outputs:
        if output.status == "match" or output.mismatches <= 0:
            continue
        parts: list[tuple[str, int]] = []
        for finding in findings:
            record = finding.record
            if (
                finding.rule == DIVERGENCE_RULE
                and record is not None
                and record.output is not None
                and record.scope == output.scope
                and record.output.output == output.output
                and (finding.node.index if finding.node is not None else None) in output.nodes
            ):
                parts = [(" + ".join(e.ids), e.elements) for e in _explained(finding)]
                break
        explained = sum(n for _, n in parts)
        if output.mismatches > explained:
            parts.append(("unexplained", output.mismatches - explained))
        rows.append(Differing(output, tuple(parts)))
    return rows


def fix_text(declared: str, finding: Finding) -> str:
    """The rule's fix, and for a divergence the departures this finding met: the waiver to write names
    them (the declared text's example ID may be another departure than the one met)."""
    if finding.rule != DIVERGENCE_RULE:
        return declared
    met = [(e.ids, e.elements) for e in _explained(finding) if e.ids]
    output = finding.record.output if finding.record is not None else None
    unexplained = output.unexplained if output is not None and output.known else 0
    conform = (
        "Use a runtime version or configuration (for onnxruntime: graph optimisation level or provider) "
        "that conforms"
    )
    if not met:
        return (
            f"{conform}, or report the divergence: no known departure explains it, so no waiver by a "
            "known departure's ID covers it."
        )
    ids = sorted({i for group, _ in met for i in group})
    counts = "; ".join(f"{' + '.join(group)}: {n} element(s)" for group, n in met)
    known = ", ".join(f'"{i}"' for i in ids)
    text = (
        f"Departures met: {counts}. {conform}, or accept them by their IDs: [[tool.sonnx-check.waivers]] "
        f'rule = "RUNTIME.divergence", known = [{known}], models = "**", reason = "..." covers only the '
        "elements they explain."
    )
    if unexplained:
        text += (
            f" The {unexplained} element(s) no known departure explains stay a finding whatever the waiver."
        )
    return text
