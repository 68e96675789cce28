"""Runtime behaviours that are already understood, so a divergence can be explained where it is reported.

An explanation is attached to the RUNTIME.divergence finding (message and ``data["known_divergence"]``); it
never turns the divergence into a pass: a known departure from SONNX is still a departure, and whether it
matters is the user's decision (a waiver), not the tool's.

Each entry says which mismatching elements it explains (a mask), so a finding can tell "all 12 differing
elements are the known -FLT_MAX padding" apart from "3 of them are, 9 are something new". An entry names a
behaviour, not a runtime, and matching is by the shape of the data, whatever the runtime and version: the
entry's observations record which runtimes showed it at which versions, and the report says when the running
runtime at its version is not among them (a regression, a new code path or a new runtime worth a look).

The entries are the operators' declarations (``[[comparison.departure]]`` in rules/<Op>.toml: ID, aliases,
observations, description, the reference of the predicate in compare/ops/<op>.py); this module is the engine
that resolves and matches them. The helpers below (``none``, ``input_value``, ...) are the predicates' own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from sonnx_check.profile import Observation, ObservedIn, profile_operators, resolve_reference
from sonnx_check.runtime_names import DEFAULT_RUNTIME


@dataclass(frozen=True)
class RunningRuntime:
    """The runtime under test as a run reports it, for "seen in this runtime at this version": its name
    (``onnxruntime``, ``openvino``, ``tract``; a command's name from its runtime.json; None when the run
    does not say) and its version (None when unknown)."""

    name: str | None
    version: str | None

    @classmethod
    def of(cls, record: Any) -> RunningRuntime:
        """From the run's ``RuntimeRecord``: a runtime command is named by what its runtime.json declared."""
        name = getattr(record, "name", None)
        if name == "command":
            name = (getattr(record, "options", None) or {}).get("runtime_name") or None
        elif name == "saved-outputs":
            name = None
        return cls(name if isinstance(name, str) else None, getattr(record, "version", None))


# what the records' ``result`` accepts: the running runtime, or a bare onnxruntime version (older callers)
RuntimeSeen = RunningRuntime | str | None


def running(seen: RuntimeSeen) -> RunningRuntime:
    if isinstance(seen, RunningRuntime):
        return seen
    return RunningRuntime(DEFAULT_RUNTIME, seen)


def runtime_key(name: str) -> str:
    """A runtime name compared loosely: "OpenVINO", "openvino" and "open-vino" are one runtime."""
    return re.sub(r"[^0-9a-z]", "", name.casefold())


@dataclass(frozen=True)
class Upstream:
    """The node that produces one input of a case's node: the node, which of its outputs it is, its own
    input values (the runtime's in context, SONNX's end to end) and, one level further, its own inputs'
    producers (None: not known)."""

    node: onnx.NodeProto
    position: int
    inputs: Sequence[np.ndarray | None]
    upstream: Callable[[int], Upstream | None] | None = None


@dataclass(frozen=True)
class DivergenceCase:
    """Everything a known-divergence predicate may look at for one node output on one dataset.

    ``inputs`` are the node's input values as the runtime under test computed them (None when absent or
    unknown); ``mismatch`` is True where ``actual`` (the runtime) and ``expected`` (SONNX) differ.
    ``upstream(k)``: the producer of input ``k`` and its inputs (judging/upstream.py), for a behaviour that
    spans two nodes (a float16 intermediate kept in float32, a BatchNormalization folded into its Conv);
    None where the caller cannot say (an operator run alone), and then such a behaviour explains nothing."""

    node: onnx.NodeProto
    output_position: int
    expected: np.ndarray
    actual: np.ndarray
    mismatch: np.ndarray
    inputs: Sequence[np.ndarray | None] = ()
    upstream: Callable[[int], Upstream | None] | None = None


Predicate = Callable[[DivergenceCase], np.ndarray]


@dataclass(frozen=True)
class KnownDivergence(ObservedIn):
    id: str
    operators: tuple[str, ...]
    outputs: tuple[int, ...] | None  # output positions the behaviour affects; None = every output
    summary: str  # one line, for messages
    explanation: str  # the mechanism, for the report and --explain style reading
    observed: tuple[Observation, ...]  # the runtimes, versions and configurations it was seen in
    predicate: Predicate
    aliases: tuple[str, ...] = ()  # the IDs it was known by before (ORT-...)
    refines: str | None = None  # a broader departure: an element both explain is reported under this one

    def explains(self, case: DivergenceCase) -> np.ndarray:
        """The mismatching elements this behaviour accounts for (a subset of ``case.mismatch``)."""
        if case.node.op_type not in self.operators:
            return np.zeros(case.mismatch.shape, dtype=bool)
        if self.outputs is not None and case.output_position not in self.outputs:
            return np.zeros(case.mismatch.shape, dtype=bool)
        if case.actual.shape != case.expected.shape or case.actual.dtype != case.expected.dtype:
            return np.zeros(case.mismatch.shape, dtype=bool)
        return self.predicate(case) & case.mismatch

    def seen_in_version(self, seen: RuntimeSeen) -> bool | None:
        """Whether this behaviour was observed in the running runtime at its version: an observation of that
        runtime (by name) whose ranges hold the version. None when the run names no runtime or its version
        is not a release number; a bare version is onnxruntime's."""
        runtime = running(seen)
        parsed = parse_version(runtime.version)
        if parsed is None or not runtime.name:
            return None
        key = runtime_key(runtime.name)
        return any(
            _release(lo) <= parsed <= _release(hi)
            for o in self.observed
            if runtime_key(o.runtime) == key
            for lo, hi in o.versions
        )


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
            observed=d.observed,
            predicate=_Declared(d.predicate),
            aliases=d.aliases,
            refines=d.refines,
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
    masks = _specific_first([(entry, mask) for entry, mask in masks if mask.any()])
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


def _specific_first(
    masks: list[tuple[KnownDivergence, np.ndarray]],
) -> list[tuple[KnownDivergence, np.ndarray]]:
    """Each element a departure and the broader one it ``refines`` both explain credited to the specific one
    alone (one behaviour per element where one is a special case of the other); entries left with no
    element dropped."""
    by_name = {entry.id: k for k, (entry, _) in enumerate(masks)}
    kept = [mask.copy() for _, mask in masks]
    for entry, mask in masks:
        broader = by_name.get(entry.refines) if entry.refines else None
        if broader is not None:
            kept[broader] &= ~mask
    return [(entry, mask) for (entry, _), mask in zip(masks, kept, strict=True) if mask.any()]


def explained_mask(case: DivergenceCase, table: Sequence[KnownDivergence] | None = None) -> np.ndarray:
    """The mismatching elements that some known behaviour accounts for."""
    mask = np.zeros(case.mismatch.shape, dtype=bool)
    for entry in known_departures() if table is None else table:
        mask |= entry.explains(case)
    return mask


def by_id(divergence_id: str) -> KnownDivergence:
    """The entry an ID or one of its aliases names (case-insensitively)."""
    folded = divergence_id.casefold()
    for entry in known_departures():
        if folded == entry.id.casefold() or folded in (a.casefold() for a in entry.aliases):
            return entry
    raise KeyError(divergence_id)
