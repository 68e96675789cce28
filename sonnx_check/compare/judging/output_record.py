"""Statistics of one compared tensor (a node output, or a graph output end to end) over every dataset.

A user wants one finding per output that diverges, not one per dataset: the record adds the datasets up
(mismatch counts, classes, the largest difference), keeps the first mismatch of the first dataset that showed
one, and remembers which known runtime behaviours account for how many of the differing elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sonnx_check.compare.judging.bounds import Classification
from sonnx_check.compare.judging.diff import ElementPair, MismatchClass, Outcome, TensorDiff
from sonnx_check.compare.judging.known_departures import KnownDivergence, KnownMatch, RuntimeSeen
from sonnx_check.results.outputs import (
    NOT_COMPARED,
    Accuracy,
    DatasetTally,
    ExplainedBy,
    FirstMismatch,
    KnownDeparture,
    ObservedIn,
    OutputResult,
)
from sonnx_check.runtime_names import DEFAULT_RUNTIME


def _ratio_text(ratio: float) -> str:
    return f"{ratio:.3g}" if math.isfinite(ratio) else str(ratio)


@dataclass
class _KnownTally:
    entry: KnownDivergence
    explained: int = 0


@dataclass
class OutputRecord:
    name: str  # the tensor name
    position: int  # the output's position on its node (or among the graph outputs)
    outcome: Outcome = Outcome.MATCH
    total: int = 0
    mismatches: int = 0
    unexplained: int = 0  # differing elements no known behaviour accounts for
    classes: dict[MismatchClass, int] = field(default_factory=lambda: dict.fromkeys(MismatchClass, 0))
    first: ElementPair | None = None
    first_dataset: str | None = None
    detail: str = ""  # the first shape/type/not-supported reason
    detail_dataset: str | None = None
    max_abs_diff: float | None = None
    datasets: list[DatasetTally] = field(default_factory=list)
    known: dict[str, _KnownTally] = field(default_factory=dict)
    # differing elements per exact set of known behaviours explaining them (sorted IDs), every dataset
    explained_by: dict[tuple[str, ...], int] = field(default_factory=dict)
    unexplained_reason: str = ""  # why the known behaviours were not looked for (the memory budget)
    bound: str = ""  # the accuracy bound an inexact operator's output was judged against
    outcomes: dict[str, int] = field(default_factory=dict)  # elements per accuracy outcome, every dataset
    margin: float = 0.0  # the largest |runtime - reference| / allowed over the judged elements
    received: str = ""  # what the first diverging dataset looked like when it reached this node
    runtime: str = DEFAULT_RUNTIME  # how the messages name the runtime under test (its description's label)

    def note_accuracy(self, classification: Classification) -> None:
        """Add one dataset's accuracy classification (the margin is the worst over the datasets)."""
        self.bound = classification.bound
        for outcome, count in classification.counts.items():
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + count
        self.margin = max(self.margin, classification.max_ratio)

    @property
    def diverges(self) -> bool:
        return self.outcome is not Outcome.MATCH

    def add(
        self,
        dataset: str,
        diff: TensorDiff,
        known: list[KnownMatch],
        explained: int = 0,
        by_set: dict[tuple[str, ...], int] | None = None,
    ) -> None:
        """Merge one dataset's comparison. ``explained`` is how many of its mismatches some known behaviour
        accounts for (elements, not entries: two entries may explain the same element); ``by_set`` splits
        them by the exact set of entries that explain them."""
        for ids, count in (by_set or {}).items():
            self.explained_by[ids] = self.explained_by.get(ids, 0) + count
        self.total += diff.total
        self.mismatches += diff.mismatches
        self.unexplained += diff.mismatches - explained
        for cls, count in diff.classes.items():
            self.classes[cls] += count
        if diff.outcome.severity_rank > self.outcome.severity_rank:
            self.outcome = diff.outcome
        if diff.first is not None and self.first is None:
            self.first, self.first_dataset = diff.first, dataset
        if diff.detail and not self.detail and diff.outcome is not Outcome.DIFFERS:
            self.detail, self.detail_dataset = diff.detail_for(self.runtime), dataset
        if diff.max_abs_diff is not None:
            self.max_abs_diff = max(self.max_abs_diff or 0.0, diff.max_abs_diff)
        for match in known:
            tally = self.known.setdefault(match.entry.id, _KnownTally(match.entry))
            tally.explained += match.explained
        self.datasets.append(DatasetTally(dataset, diff.outcome.value, diff.mismatches, diff.total))

    def count_text(self) -> str:
        if self.outcome in (Outcome.SHAPE_MISMATCH, Outcome.TYPE_MISMATCH, Outcome.NOT_SUPPORTED):
            return self.detail
        return f"{self.mismatches} of {self.total} elements differ"

    def message(self, scope: str = "output") -> str:
        """The finding's message: what differs, where first, and what is already known about it."""
        parts = [f"{scope} '{self.name}': {self.count_text()}"]
        present = [f"{n} {c.value}" for c, n in self.classes.items() if n]
        if present and self.outcome is Outcome.DIFFERS:
            parts[0] += f" ({', '.join(present)})"
        if self.first is not None:
            reached = f", which reached this node as {self.received}" if self.received else ""
            parts.append(f"{self.first.describe(self.runtime)} (dataset {self.first_dataset}{reached})")
        elif self.detail_dataset:
            parts[0] += f" (dataset {self.detail_dataset})"
        for tally in self.known.values():
            share = (
                ""
                if tally.explained == self.mismatches
                else f" ({tally.explained} of the differing elements)"
            )
            parts.append(f"known {self.runtime} divergence {tally.entry.id}{share}: {tally.entry.summary}")
        if self.known and self.unexplained:
            parts.append(f"{self.unexplained} differing element(s) match no known divergence")
        if self.unexplained_reason:
            parts.append(self.unexplained_reason)
        if self.bound:
            parts.append(f"bound: {self.bound}; {self.accuracy_text()}")
        return "; ".join(parts)

    def accuracy_text(self) -> str:
        """The outcome counts and the margin, for the finding and the comparison table."""
        counts = ", ".join(f"{n} {o}" for o, n in self.outcomes.items() if n)
        return f"{counts}; largest error/bound {_ratio_text(self.margin)}"

    def result(self, version: RuntimeSeen = None) -> OutputResult:
        """The typed record every report reads (``version``: the running runtime, or onnxruntime's bare
        version, for "seen in this runtime at this version" of the known departures)."""
        first = None
        if self.first is not None:
            first = FirstMismatch(
                dataset=self.first_dataset or "",
                index=tuple(self.first.index),
                runtime=self.first.actual,
                runtime_bits=self.first.actual_bits,
                sonnx=self.first.expected,
                sonnx_bits=self.first.expected_bits,
                kind=self.first.kind.value,
                dataset_at_node=self.received,
            )
        known = tuple(
            KnownDeparture(
                id=tally.entry.id,
                operators=tuple(tally.entry.operators),
                summary=tally.entry.summary,
                explanation=tally.entry.explanation,
                seen_in=tuple(tally.entry.seen_in),
                explained=tally.explained,
                aliases=tuple(tally.entry.aliases),
                observed=tuple(
                    ObservedIn(o.runtime, tuple(o.versions), o.configuration, o.where)
                    for o in tally.entry.observed
                ),
                seen_in_this_version=tally.entry.seen_in_version(version),
            )
            for tally in self.known.values()
        )
        return OutputResult(
            output=self.name,
            position=self.position,
            # no dataset reached the comparison (the runtime failed on all): nothing matched, nothing differed
            status=self.outcome.value if self.datasets else NOT_COMPARED,
            mismatches=self.mismatches,
            total=self.total,
            summary=self.count_text() if self.datasets else "not compared",
            classes={c.value: n for c, n in self.classes.items()},
            datasets=tuple(self.datasets),
            first_mismatch=first,
            detail=self.detail,
            max_abs_diff=self.max_abs_diff,
            known=known,
            unexplained=self.unexplained,
            explained_by=tuple(ExplainedBy(ids, n) for ids, n in sorted(self.explained_by.items())),
            not_searched=self.unexplained_reason,
            accuracy=Accuracy(self.bound, dict(self.outcomes), self.margin) if self.bound else None,
        )

    def to_json(self, version: RuntimeSeen = None) -> dict[str, Any]:
        return self.result(version).to_json()
