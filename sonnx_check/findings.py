"""The data every rule produces and every reporter consumes.

Findings are plain frozen dataclasses so they can cross process boundaries (``--jobs``) and be compared
in tests; nothing here knows how a finding is rendered.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sonnx_check.results.divergence import Divergence
    from sonnx_check.results.models import ComparisonOutcome


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    # Evidence reported beside the model's verdict (operator-level runtime behaviour): below every
    # --fail-on, so it never fails a run.
    INFO = "info"

    @property
    def rank(self) -> int:
        return {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}[self]


class VerdictClass(enum.StrEnum):
    """What a finding means to the person deciding about the model (README, "Verdict classes")."""

    PROFILE_VIOLATION = "profile-violation"  # the model breaks a rule of the profile
    UNEXPLAINED_DIVERGENCE = "unexplained-divergence"  # the runtime departs from the text, cause unknown
    KNOWN_DEPARTURE = "known-departure"  # the runtime departs from the text in a way already understood
    NOT_COMPARED = "not-compared"  # something that could not be checked or compared


DIVERGENCE_RULE = "RUNTIME.divergence"
# Findings that say what was not checked rather than what is wrong (the internal error: a model sonnx-check
# could not check at all).
_NOT_COMPARED_RULES = frozenset({"RUNTIME.not-compared", "MODEL.internal-error"})


@dataclass(frozen=True)
class NodeRef:
    """Where a finding sits in the graph. ONNX node names are optional, so the index is the identity."""

    index: int
    name: str
    op_type: str
    graph: str = "main_graph"

    def label(self) -> str:
        shown = f"'{self.name}'" if self.name else "(unnamed)"
        return f"{self.op_type} {shown} (node #{self.index})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "index": self.index, "op_type": self.op_type, "graph": self.graph}


@dataclass(frozen=True)
class Finding:
    """One violation of one rule at one place.

    ``actual``/``expected`` are JSON-serialisable values shown to the user; ``data`` carries structured extras
    (comparison statistics, tensor names) that machine formats pass through unchanged. A divergence of the
    comparison carries its typed ``record`` (what the verdict class reads); its ``data`` is the record's JSON.
    """

    rule: str
    message: str
    severity: Severity = Severity.ERROR
    node: NodeRef | None = None
    tensor: str | None = None
    attribute: str | None = None
    actual: Any = None
    expected: Any = None
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    waived: str | None = None  # the waiver's reason when a configured waiver covers this finding
    fixable: bool = False  # --fix has a rewrite for it (set from the fix package's own table)
    record: Divergence | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.record is not None and not self.data:
            object.__setattr__(self, "data", self.record.to_json())

    def located_message(self) -> str:
        """The message prefixed with the node it concerns, for formats that carry no separate location."""
        return f"{self.node.label()}: {self.message}" if self.node is not None else self.message

    @property
    def known_departures(self) -> tuple[str, ...]:
        """The IDs of the known runtime departures that explain some of this divergence's elements."""
        return self.record.known_ids if self.record is not None else ()

    def explained_by(self, ids: frozenset[str] | set[str]) -> bool:
        """Whether every differing element of this divergence is explained by one of the known departures
        ``ids``: an element another departure (or none) explains is not covered. False for anything but
        a difference in values (a crash, a shape or type mismatch) and when the known departures were not
        searched."""
        if self.rule != DIVERGENCE_RULE or self.record is None:
            return False
        return self.record.explained_by(ids)

    @property
    def verdict_class(self) -> VerdictClass:
        """The class a finding counts in. A divergence whose differing elements are only partly explained
        by known departures is an unexplained divergence as a whole (classified conservatively, not
        split): the message says how many elements each known departure explains."""
        if self.rule in _NOT_COMPARED_RULES:
            return VerdictClass.NOT_COMPARED
        if self.rule == DIVERGENCE_RULE:
            if self.explained_by(frozenset(self.known_departures)):
                return VerdictClass.KNOWN_DEPARTURE
            return VerdictClass.UNEXPLAINED_DIVERGENCE
        return VerdictClass.PROFILE_VIOLATION

    @property
    def operator_level(self) -> bool:
        """Evidence about the runtime reported beside the model's verdict (operator-edges scope)."""
        return self.severity is Severity.INFO

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity.value,
            "class": self.verdict_class.value,
            "message": self.message,
        }
        if self.rule == DIVERGENCE_RULE and self.known_departures:
            out["known_departures"] = list(self.known_departures)
        if self.fixable:
            out["fixable"] = True
        if self.node is not None:
            out["node"] = self.node.to_json()
        for key in ("tensor", "attribute", "actual", "expected"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.data:
            out["data"] = self.data
        if self.waived is not None:
            out["waived"] = True
            out["waiver_reason"] = self.waived
        return out


@dataclass
class Coverage:
    """How deeply each node was checked, so that an operator without rules is never silently passed."""

    operator_rules: dict[str, int] = field(default_factory=dict)  # op_type -> nodes checked by operator rules
    draft_rules: dict[str, int] = field(default_factory=dict)  # checked against a draft text's rules
    general_only: dict[str, int] = field(default_factory=dict)  # specified, but no operator rules (a stub)
    unspecified: dict[str, int] = field(default_factory=dict)  # listed by REQ OP 000, no specification yet
    outside_profile: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "operator_rules": dict(sorted(self.operator_rules.items())),
            "draft_rules": dict(sorted(self.draft_rules.items())),
            "general_only": dict(sorted(self.general_only.items())),
            "unspecified": dict(sorted(self.unspecified.items())),
            "outside_profile": dict(sorted(self.outside_profile.items())),
            "nodes_with_operator_rules": sum(self.operator_rules.values()),
            "nodes_with_draft_rules": sum(self.draft_rules.values()),
            "nodes_with_general_rules_only": sum(self.general_only.values()),
            "nodes_unspecified": sum(self.unspecified.values()),
            "nodes_outside_profile": sum(self.outside_profile.values()),
        }

    def statement(self) -> str:
        """One sentence for people: how deeply the model's nodes were checked, by operator type."""

        def listing(counts: dict[str, int]) -> str:
            return ", ".join(f"{op} {n}" for op, n in sorted(counts.items())) or "none"

        parts = [
            f"{sum(self.operator_rules.values())} node(s) checked against operator rules "
            f"({listing(self.operator_rules)})"
        ]
        if self.draft_rules:
            parts.append(
                f"{sum(self.draft_rules.values())} against the rules of a draft specification "
                f"({listing(self.draft_rules)})"
            )
        parts.append(
            f"{sum(self.general_only.values())} against general rules only ({listing(self.general_only)})"
        )
        if self.unspecified:
            parts.append(
                f"{sum(self.unspecified.values())} listed by the profile without a specification yet "
                f"({listing(self.unspecified)})"
            )
        parts.append(
            f"{sum(self.outside_profile.values())} outside the profile ({listing(self.outside_profile)})"
        )
        return "coverage: " + "; ".join(parts)


@dataclass
class ModelResult:
    """Everything known about one model after checking. ``load_error`` is set when it could not be read."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    coverage: Coverage | None = None
    load_error: bool = False
    comparison: ComparisonOutcome | None = None  # filled by --compare: environment and per-output results

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "findings": [f.to_json() for f in self.findings]}
        if self.coverage is not None:
            out["coverage"] = self.coverage.to_json()
        if self.comparison is not None:
            out["comparison"] = self.comparison.to_json()
        return out
