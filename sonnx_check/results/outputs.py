"""One compared tensor's result over every dataset: a node output, a graph output end to end, or an output
of a node configuration run alone on edge values (``compare/judging/output_record.py`` adds the datasets
up)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sonnx_check.results.deprecated_keys import DEPRECATED_RUNTIME_BITS_KEY, DEPRECATED_RUNTIME_KEY
from sonnx_check.results.json_values import json_float

NOT_COMPARED = "not-compared"
DIFFERS = "differs"


@dataclass(frozen=True)
class FirstMismatch:
    """The first differing element of the first dataset that showed one."""

    dataset: str
    index: tuple[int, ...]
    runtime: str  # the runtime under test's value, as text that round-trips
    runtime_bits: str
    sonnx: str  # the reference's value
    sonnx_bits: str
    kind: str  # the mismatch class ("value", "nan-position", "signed-zero", ...)
    dataset_at_node: str = ""  # what the dataset looked like when it reached the node

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "index": list(self.index),
            "runtime": self.runtime,
            "runtime_bits": self.runtime_bits,
            # deprecated, for one release: the runtime under test's value whatever the runtime
            DEPRECATED_RUNTIME_KEY: self.runtime,
            DEPRECATED_RUNTIME_BITS_KEY: self.runtime_bits,
            "sonnx": self.sonnx,
            "sonnx_bits": self.sonnx_bits,
            "class": self.kind,
        }
        if self.dataset_at_node:
            out["dataset_at_node"] = self.dataset_at_node
        return out


@dataclass(frozen=True)
class ObservedIn:
    """One observation of a departure: the runtime, its inclusive version ranges, the configuration it needs
    ("" when any) and the cases."""

    runtime: str
    versions: tuple[tuple[str, str], ...]
    configuration: str
    where: str

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "versions": [list(span) for span in self.versions],
            "configuration": self.configuration,
            "where": self.where,
        }


@dataclass(frozen=True)
class KnownDeparture:
    """A known runtime departure (a behaviour, by its ID) that explains some of an output's differing
    elements."""

    id: str
    operators: tuple[str, ...]
    summary: str
    explanation: str
    seen_in: tuple[str, ...]  # the observations as lines (deprecated: ``observed``)
    explained: int  # differing elements it accounts for
    # whether the running runtime, at its version, is among the observations; None: the run names no
    # runtime or its version is not a release number
    seen_in_this_version: bool | None
    aliases: tuple[str, ...] = ()
    observed: tuple[ObservedIn, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "aliases": list(self.aliases),
            "operators": list(self.operators),
            "summary": self.summary,
            "explanation": self.explanation,
            "observed": [o.to_json() for o in self.observed],
            "seen_in": list(self.seen_in),
            "explained": self.explained,
            "seen_in_this_version": self.seen_in_this_version,
        }


@dataclass(frozen=True)
class ExplainedBy:
    """How many differing elements exactly this set of known departures explains."""

    ids: tuple[str, ...]
    elements: int

    def to_json(self) -> dict[str, Any]:
        return {"ids": list(self.ids), "elements": self.elements}


@dataclass(frozen=True)
class Accuracy:
    """An inexact operator's output judged against its accuracy bound."""

    bound: str
    outcomes: Mapping[str, int]  # elements per accuracy outcome
    margin: float  # the largest |runtime - reference| / allowed

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.bound, "outcomes": dict(self.outcomes), "margin": json_float(self.margin)}


@dataclass(frozen=True)
class DatasetTally:
    """One dataset's comparison of the tensor."""

    name: str
    status: str
    mismatches: int
    total: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "mismatches": self.mismatches, "total": self.total}


@dataclass(frozen=True)
class OutputResult:
    """One compared tensor: its status, the differing elements and what explains them."""

    output: str  # the tensor's name
    position: int  # its position on its node (or among the graph outputs)
    status: str  # match, differs, shape-mismatch, type-mismatch, not-supported, or not-compared
    mismatches: int
    total: int
    summary: str
    classes: Mapping[str, int]  # differing elements per mismatch class
    datasets: tuple[DatasetTally, ...] = ()
    first_mismatch: FirstMismatch | None = None
    detail: str = ""  # the first shape/type/not-supported reason
    max_abs_diff: float | None = None
    known: tuple[KnownDeparture, ...] = ()
    unexplained: int = 0  # differing elements no known departure explains
    explained_by: tuple[ExplainedBy, ...] = ()
    not_searched: str = ""  # why the known departures were not looked for (the memory budget)
    accuracy: Accuracy | None = None

    @property
    def known_ids(self) -> tuple[str, ...]:
        return tuple(k.id for k in self.known)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "output": self.output,
            "position": self.position,
            "status": self.status,
            "mismatches": self.mismatches,
            "total": self.total,
            "summary": self.summary,
            "classes": dict(self.classes),
            "datasets": [d.to_json() for d in self.datasets],
        }
        if self.first_mismatch is not None:
            out["first_mismatch"] = self.first_mismatch.to_json()
        if self.detail:
            out["detail"] = self.detail
        if self.max_abs_diff is not None:
            out["max_abs_diff"] = json_float(self.max_abs_diff)
        if self.known:
            out["known_divergence"] = [k.to_json() for k in self.known]
            out["unexplained"] = self.unexplained
            out["explained_by"] = [e.to_json() for e in self.explained_by]
        if self.not_searched:
            out["known_divergence_not_searched"] = self.not_searched
        if self.accuracy is not None:
            out["accuracy"] = self.accuracy.to_json()
        return out
