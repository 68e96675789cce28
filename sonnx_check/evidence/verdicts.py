"""Every selected rule at every place it applies to: held, violated, waived, or not applicable.

Which node a rule applies to is the engine's own dispatch (``engine.node_dispatch``): a node rule runs on
every default-domain node of its operator (a generic one on every node), a graph rule on the model, the
comparison's rules on the nodes the comparison planned. A place with no finding of the rule held; with an
active finding it is violated; with waived findings only, waived. The findings are referred to by their
position in the model's ``findings`` list.

The record lists node indices per rule rather than one object per (rule, node): a 10k-node model has some
30k applications, and the record must stay small enough to file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sonnx_check.catalogue import catalogue
from sonnx_check.engine import node_dispatch
from sonnx_check.findings import Finding
from sonnx_check.registry import CHECKS

if TYPE_CHECKING:
    from sonnx_check.results.models import ComparisonOutcome

HELD, VIOLATED, WAIVED, NOT_APPLICABLE = "held", "violated", "waived", "not-applicable"
SKIPPED_STAGE_RULES = frozenset({"MODEL.internal-error"})  # stands for a crash, not for a requirement


@dataclass
class RuleVerdict:
    rule: str
    scope: str  # "model", "node" or "comparison"
    places: int = 0  # nodes (or the model) the rule was checked at
    held: list[int | None] = field(default_factory=list)
    violated: dict[int | None, list[int]] = field(default_factory=dict)
    waived: dict[int | None, list[int]] = field(default_factory=dict)
    not_applicable: int = 0  # nodes of the model the rule does not apply to

    @property
    def result(self) -> str:
        if self.violated:
            return VIOLATED
        if self.waived:
            return WAIVED
        return HELD if self.places else NOT_APPLICABLE

    def summary_json(self) -> dict[str, Any]:
        entry = catalogue().get(self.rule)
        return {
            "rule": self.rule,
            "title": entry.title if entry else self.rule,
            "origin": entry.origin if entry else "",
            "severity": entry.severity.value if entry else "error",
            "status": entry.status if entry else "stable",
            "scope": self.scope,
            "result": self.result,
            "checked": self.places,
            "held": len(self.held),
            "violated": len(self.violated),
            "waived": len(self.waived),
            "not_applicable": self.not_applicable,
        }

    def verdict_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "result": self.result,
            "held": self.held,
            "violated": [{"node": n, "findings": ks} for n, ks in self.violated.items()],
            "waived": [{"node": n, "findings": ks} for n, ks in self.waived.items()],
        }


def verdicts(
    nodes: Sequence[tuple[str, str, str]],
    selected: frozenset[str],
    findings: Sequence[Finding],
    comparison: ComparisonOutcome | None,
) -> list[RuleVerdict]:
    """One RuleVerdict per selected rule, in catalogue order. ``nodes``: (name, op_type, domain) of the
    main graph's nodes; ``comparison``: the model's comparison (None: not compared)."""
    order = list(catalogue())
    rules = [r for r in order if r in selected and r not in SKIPPED_STAGE_RULES]
    by_rule: dict[str, RuleVerdict] = {}
    generic, by_op = node_dispatch([CHECKS[r] for r in rules if r in CHECKS])
    for rule in rules:
        check = CHECKS.get(rule)
        if check is None:
            scope = "comparison" if rule.startswith("RUNTIME.") else "model"
        else:
            scope = "node" if check.scope == "node" else "model"
        by_rule[rule] = RuleVerdict(rule, scope)
    applies: dict[str, list[int]] = {rule: [] for rule in rules}
    for index, (_, op_type, domain) in enumerate(nodes):
        for check in by_op.get(op_type, generic) if not domain else generic:
            applies[check.rule].append(index)
    compared = [n.index for n in comparison.nodes] if comparison is not None else []
    numbered: dict[str, list[tuple[int, Finding]]] = {}  # a rule's findings with their positions
    for k, finding in enumerate(findings):
        numbered.setdefault(finding.rule, []).append((k, finding))
    for rule, verdict in by_rule.items():
        if verdict.scope == "node":
            places: list[int | None] = list(applies[rule])
            verdict.not_applicable = len(nodes) - len(places)
        elif verdict.scope == "comparison":
            places = list(compared) if comparison is not None else []
            verdict.not_applicable = len(nodes) - len(places)
        else:
            places = [None]
        _judge(verdict, places, numbered.get(rule, []))
    return [by_rule[r] for r in rules]


def _judge(verdict: RuleVerdict, places: list[int | None], numbered: list[tuple[int, Finding]]) -> None:
    at: dict[int | None, list[int]] = {}
    waived: set[int] = set()
    for k, finding in numbered:
        # A model-scope rule may name a node (a dead node): the place is the model, which it violates.
        place = finding.node.index if finding.node is not None and verdict.scope != "model" else None
        at.setdefault(place, []).append(k)
        if finding.waived is not None:
            waived.add(k)
    known = set(places)
    for place in at:
        if place not in known:  # a finding where the rule was not planned (an end-to-end output)
            places.append(place)
            known.add(place)
    verdict.places = len(places)
    for place in places:
        ks = at.get(place)
        if not ks:
            verdict.held.append(place)
        elif any(k not in waived for k in ks):
            verdict.violated[place] = ks
        else:
            verdict.waived[place] = ks
