"""Where each of a batch's exposed tensors is read for the last time, so that a run streamed from the worker
(runtimes/worker/arriving.py) lets each go as soon as the comparison has passed its last reader.

A node's comparison reads its inputs and outputs, and, for the known departures that span nodes, the
inputs of its producers (judging/upstream.from_values; asked only where an output differs, which cannot
be known before), up to ``upstream.REACH`` levels above it along float16 values: a tensor is kept until
the last node of the batch that may read it in any of these ways has been compared, so the verdicts are
the same as with every tensor held (a read past the plan raises arriving.Released, never a silent gap).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import onnx

from sonnx_check.compare.judging.upstream import REACH
from sonnx_check.view import ModelView


@dataclass
class ReleasePlan:
    """``after``: entry position -> the exposed tensors no later entry reads; ``kept``: every exposed tensor
    some entry reads (the others are let go as they arrive)."""

    after: dict[int, list[str]] = field(default_factory=dict)
    kept: set[str] = field(default_factory=set)


def release_plan(view: ModelView, indices: Sequence[int | None], exposed: Collection[str]) -> ReleasePlan:
    """The plan for comparing the nodes ``indices`` in their order (None: an entry that reads nothing)."""
    wanted = set(exposed)
    memo: dict[tuple[int, int], frozenset[str]] = {}
    last: dict[str, int] = {}
    for position, index in enumerate(indices):
        if index is None:
            continue
        node = view.nodes[index]
        reads = {n for n in (*node.input, *node.output) if n}
        reads |= _upstream_reads(view, node, REACH, memo)
        for name in reads & wanted:
            last[name] = position
    plan = ReleasePlan(kept=set(last))
    for name, position in last.items():
        plan.after.setdefault(position, []).append(name)
    return plan


def _upstream_reads(
    view: ModelView, node: onnx.NodeProto, depth: int, memo: dict[tuple[int, int], frozenset[str]]
) -> frozenset[str]:
    """What the known departures may read above ``node``: the inputs of each of its inputs' producers
    (compare/ops/folding.py: a BatchNormalization's Conv), and further up, to ``depth`` levels, only
    through float16 tensors (compare/ops/spanning.py follows a chain of float16 values and nothing else;
    a tensor of unknown type is followed too)."""
    names: set[str] = set()
    for name in node.input:
        producer = _producer(view, name)
        if producer is not None:
            names.update(n for n in view.nodes[producer].input if n)
    return frozenset(names | _float16_chain(view, node, depth, memo))


def _float16_chain(
    view: ModelView, node: onnx.NodeProto, depth: int, memo: dict[tuple[int, int], frozenset[str]]
) -> frozenset[str]:
    """The inputs of the producers up to ``depth`` levels above ``node`` along its float16 inputs."""
    names: set[str] = set()
    if depth < 1:
        return frozenset()
    for name in node.input:
        producer = _producer(view, name) if _maybe_float16(view, name) else None
        if producer is None:
            continue
        key = (producer, depth)
        if key not in memo:
            above = view.nodes[producer]
            memo[key] = frozenset(
                {n for n in above.input if n} | _float16_chain(view, above, depth - 1, memo)
            )
        names |= memo[key]
    return frozenset(names)


def _producer(view: ModelView, name: str) -> int | None:
    """The node computing ``name`` when one only does (upstream._producer)."""
    producers = view.producers.get(name, []) if name else []
    return producers[0] if len(producers) == 1 else None


def _maybe_float16(view: ModelView, name: str) -> bool:
    known = view.type_of(name)
    return known is None or known.elem_type in (onnx.TensorProto.FLOAT16, onnx.TensorProto.UNDEFINED)
