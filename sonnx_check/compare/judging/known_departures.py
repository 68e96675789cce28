"""onnxruntime behaviours that are already understood, so a divergence can be explained where it is reported.

An explanation is attached to the RUNTIME.divergence finding (message and ``data["known_divergence"]``); it
never turns the divergence into a pass: a known departure from SONNX is still a departure, and whether it
matters is the user's decision (a waiver), not the tool's.

Each entry says which mismatching elements it explains (a mask), so a finding can tell "all 12 differing
elements are the known -FLT_MAX padding" apart from "3 of them are, 9 are something new". Matching is by the
shape of the data, not by onnxruntime version: ``seen_in`` records where the behaviour was observed, and the
report says when the running version is not among them (a regression or a new code path worth a look).

The entries are the operators' declarations (``[[comparison.departure]]`` in rules/<Op>.toml: ID, versions,
description, the reference of the predicate in compare/ops/<op>.py); this module is the engine that
resolves and matches them. The helpers below (``none``, ``input_value``, ...) are the predicates' own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from sonnx_check.profile import profile_operators, resolve_reference


@dataclass(frozen=True)
class DivergenceCase:
    """Everything a known-divergence predicate may look at for one node output on one dataset.

    ``inputs`` are the node's input values as onnxruntime computed them (None when absent or unknown);
    ``mismatch`` is True where ``actual`` (onnxruntime) and ``expected`` (SONNX) differ."""

    node: onnx.NodeProto
    output_position: int
    expected: np.ndarray
    actual: np.ndarray
    mismatch: np.ndarray
    inputs: Sequence[np.ndarray | None] = ()


Predicate = Callable[[DivergenceCase], np.ndarray]


@dataclass(frozen=True)
class KnownDivergence:
    id: str
    operators: tuple[str, ...]
    outputs: tuple[int, ...] | None  # output positions the behaviour affects; None = every output
    summary: str  # one line, for messages
    explanation: str  # the mechanism, for the report and --explain style reading
    seen_in: tuple[str, ...]  # "versions: where", one per observation
    versions: tuple[tuple[str, str], ...]  # inclusive onnxruntime version ranges it was observed in
    predicate: Predicate

    def explains(self, case: DivergenceCase) -> np.ndarray:
        """The mismatching elements this behaviour accounts for (a subset of ``case.mismatch``)."""
        if case.node.op_type not in self.operators:
            return np.zeros(case.mismatch.shape, dtype=bool)
        if self.outputs is not None and case.output_position not in self.outputs:
            return np.zeros(case.mismatch.shape, dtype=bool)
        if case.actual.shape != case.expected.shape or case.actual.dtype != case.expected.dtype:
            return np.zeros(case.mismatch.shape, dtype=bool)
        return self.predicate(case) & case.mismatch

    def seen_in_version(self, version: str | None) -> bool | None:
        """Whether ``version`` lies in a range where this behaviour was observed (None: not a release)."""
        parsed = parse_version(version)
        if parsed is None:
            return None
        return any(_release(lo) <= parsed <= _release(hi) for lo, hi in self.versions)


@dataclass(frozen=True)
class KnownMatch:
    entry: KnownDivergence
    explained: int  # differing elements this entry accounts for


def parse_version(version: str | None) -> tuple[int, int, int] | None:
    """'1.23.2' -> (1, 23, 2); None for anything that is not a plain release number."""
    if not version:
        return None
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _release(version: str) -> tuple[int, int, int]:
    parsed = parse_version(version)
    if parsed is None:
        raise ValueError(f"not a release number: {version!r}")
    return parsed


# -- what predicates share -------------------------------------------------------------------------------
def none(case: DivergenceCase) -> np.ndarray:
    return np.zeros(case.mismatch.shape, dtype=bool)


def input_value(case: DivergenceCase, position: int) -> np.ndarray | None:
    if position >= len(case.inputs) or case.inputs[position] is None:
        return None
    return np.asarray(case.inputs[position])


def attribute(node: onnx.NodeProto, name: str, default: Any) -> Any:
    for found in node.attribute:
        if found.name == name:
            return onnx.helper.get_attribute_value(found)
    return default


def as_output(value: np.ndarray, case: DivergenceCase) -> np.ndarray | None:
    """``value`` broadcast to the output's shape (None where it does not broadcast)."""
    try:
        return np.broadcast_to(value, case.actual.shape)
    except ValueError:
        return None


def doubles(case: DivergenceCase) -> tuple[np.ndarray, np.ndarray]:
    return case.expected.astype(np.float64), case.actual.astype(np.float64)


# -- the table ------------------------------------------------------------------------------------------
class _Declared:
    """A declaration's predicate reference, imported when first called: only a node of the departure's
    operators calls it (``KnownDivergence.explains``), so a comparison imports the modules of the operators
    it meets, not every operator's."""

    def __init__(self, reference: str) -> None:
        self.reference = reference
        self._function: Predicate | None = None

    def __call__(self, case: DivergenceCase) -> np.ndarray:
        if self._function is None:
            self._function = resolve_reference(self.reference)
        return self._function(case)


@functools.cache
def known_departures() -> tuple[KnownDivergence, ...]:
    """Every declared departure, in catalogue order (operators by name, then as each declaration lists
    them); each predicate is imported when a node of its operators first needs it."""
    return tuple(
        KnownDivergence(
            id=d.id,
            operators=d.operators,
            outputs=d.outputs,
            summary=d.summary,
            explanation=d.explanation,
            seen_in=d.seen_in,
            versions=d.versions,
            predicate=_Declared(d.predicate),
        )
        for op in profile_operators().values()
        for d in op.comparison.departures
    )


def __getattr__(name: str) -> Any:
    if name == "KNOWN":  # the table, resolved on first use (``from ...known import KNOWN`` works)
        return known_departures()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def match_known(case: DivergenceCase, table: Sequence[KnownDivergence] | None = None) -> list[KnownMatch]:
    """Every known behaviour that accounts for at least one mismatching element of ``case``."""
    matches: list[KnownMatch] = []
    for entry in known_departures() if table is None else table:
        explained = int(np.count_nonzero(entry.explains(case)))
        if explained:
            matches.append(KnownMatch(entry, explained))
    return matches


@dataclass(frozen=True)
class Explanation:
    """What the known behaviours say about one output on one dataset: the entries that match, how many
    mismatching elements some entry explains, and how many are explained by exactly each set of entries
    (so a waiver naming some IDs can tell whether they cover every element they are asked to)."""

    matches: list[KnownMatch]
    explained: int
    by_set: dict[tuple[str, ...], int]


def explain(case: DivergenceCase, table: Sequence[KnownDivergence] | None = None) -> Explanation:
    table = known_departures() if table is None else table
    masks = [(entry, entry.explains(case)) for entry in table]
    masks = [(entry, mask) for entry, mask in masks if mask.any()]
    if not masks:
        return Explanation([], 0, {})
    matches = [KnownMatch(entry, int(np.count_nonzero(mask))) for entry, mask in masks]
    code = np.zeros(case.mismatch.shape, dtype=np.uint64)
    for bit, (_, mask) in enumerate(masks):
        code |= mask.astype(np.uint64) << np.uint64(bit)
    values, counts = np.unique(code[code != 0], return_counts=True)
    by_set = {
        tuple(sorted(e.id for bit, (e, _) in enumerate(masks) if int(value) >> bit & 1)): int(count)
        for value, count in zip(values, counts, strict=True)
    }
    return Explanation(matches, int(counts.sum()), by_set)


def explained_mask(case: DivergenceCase, table: Sequence[KnownDivergence] | None = None) -> np.ndarray:
    """The mismatching elements that some known behaviour accounts for."""
    mask = np.zeros(case.mismatch.shape, dtype=bool)
    for entry in known_departures() if table is None else table:
        mask |= entry.explains(case)
    return mask


def by_id(divergence_id: str) -> KnownDivergence:
    for entry in known_departures():
        if entry.id == divergence_id:
            return entry
    raise KeyError(divergence_id)
