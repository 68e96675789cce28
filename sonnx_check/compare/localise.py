"""Per-node localisation: which node departs from SONNX, judged on the inputs onnxruntime itself gave it.

onnxruntime only returns graph outputs, so a copy of the model lists every node output as a graph output.
Each node that has a reference kernel is then re-run by the reference on exactly the values onnxruntime fed
it, so a divergence is pinned to the node that introduced it instead of being smeared over everything
downstream. Exposing intermediates can change which kernels and fusions onnxruntime picks (a tensor that is
a graph output cannot be fused away), which is why the end-to-end outputs come from a separate run of the
unmodified model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import onnx

from sonnx_check import reference
from sonnx_check.compare.judging import bounds as accuracy
from sonnx_check.compare.judging import upstream
from sonnx_check.compare.judging.diff import TensorDiff, compare_arrays, diff_of
from sonnx_check.compare.judging.elements import judge
from sonnx_check.compare.judging.known_departures import DivergenceCase, RuntimeSeen, explain
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.judging.upstream import UpstreamOf
from sonnx_check.compare.work_sizes import KNOWN_BYTES_PER_ELEMENT
from sonnx_check.errors import first_line
from sonnx_check.profile import profile_operators
from sonnx_check.results.models import NodeResult
from sonnx_check.view import ModelView, subgraph_attributes

MATCH, DIVERGES, NOT_COMPARED = "match", "diverges", "not-compared"


@contextmanager
def outputs_replaced(model: onnx.ModelProto, names: Sequence[str]) -> Iterator[onnx.ModelProto]:
    """``model`` with ``names`` as its only graph outputs, until the block ends (then restored).

    In place rather than on a copy: a copy would hold the weights once more, only to be serialised for
    onnxruntime and dropped. The outputs carry only a name: onnxruntime takes their type from its own
    inference, and declaring one here could contradict it."""
    original = [onnx.ValueInfoProto() for _ in model.graph.output]
    for saved, output in zip(original, model.graph.output, strict=True):
        saved.CopyFrom(output)
    del model.graph.output[:]
    model.graph.output.extend(onnx.ValueInfoProto(name=name) for name in names)
    try:
        yield model
    finally:
        del model.graph.output[:]
        model.graph.output.extend(original)


@dataclass
class NodeComparison:
    """One node: whether it could be compared, and its outputs' records over all datasets."""

    index: int
    name: str
    op_type: str
    has_kernel: bool
    reason: str = ""  # why it is not compared (for every dataset)
    records: dict[int, OutputRecord] = field(default_factory=dict)
    # dataset -> why it could not be compared there, naming who failed (the reference, or the runtime
    # under test with the intermediate tensors exposed)
    failures: dict[str, str] = field(default_factory=dict)
    # rule -> (dataset, why): a data constraint of the specification the actual data break (no result defined)
    data_violations: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def status(self) -> str:
        if not self.records:
            return NOT_COMPARED
        return DIVERGES if any(r.diverges for r in self.records.values()) else MATCH

    def not_compared_reason(self) -> str:
        if self.reason:
            return self.reason
        if self.failures:
            dataset, why = next(iter(self.failures.items()))
            return f"dataset {dataset}: {why}"
        return "no output could be compared"

    def result(self, version: RuntimeSeen) -> NodeResult:
        return NodeResult(
            index=self.index,
            name=self.name,
            op_type=self.op_type,
            status=self.status,
            outputs=tuple(self.records[k].result(version) for k in sorted(self.records)),
            reason=self.not_compared_reason() if self.status == NOT_COMPARED else "",
            reference_failures=dict(self.failures),
        )


def plan(view: ModelView, supported: frozenset[str]) -> list[NodeComparison]:
    """Which nodes can be compared at all: a reference kernel exists for the operator in the default domain,
    and the node carries no subgraph (the reference does not execute control flow)."""
    nodes: list[NodeComparison] = []
    for index, node in enumerate(view.nodes):
        entry = NodeComparison(index, node.name, node.op_type, has_kernel=False)
        domain = view.domain(index)
        if domain:
            entry.reason = f"operator of domain '{domain}': no SONNX reference kernel"
        elif subgraph_attributes(node):
            entry.reason = "carries a subgraph: control flow is not executed by the reference"
        elif node.op_type not in supported:
            entry.reason = f"no SONNX reference kernel for {node.op_type}"
        else:
            entry.has_kernel = True
        nodes.append(entry)
    return nodes


def compare_nodes(
    view: ModelView,
    nodes: Sequence[NodeComparison],
    values: Mapping[str, np.ndarray],
    dataset: str,
    *,
    max_elements: int | None,
    spare: Mapping[int, int | None] | None = None,
    accuracy: Mapping[str, str] | None = None,
    readings: reference.Readings = reference.DEFAULT_READINGS,
    runtime: str,
) -> None:
    """Run every node that has a kernel on the runtime's values for one dataset and merge the comparison
    of each of its outputs into that node's records. ``spare``: memory left per node for explaining a
    divergence (memory.Batch)."""
    for entry in nodes:
        if not entry.has_kernel or entry.reason:
            continue
        node = view.nodes[entry.index]
        inputs, missing = node_inputs(node, values)
        if missing:
            entry.failures.setdefault(dataset, f"{runtime} did not expose input '{missing}'")
            continue
        try:
            expected, abs_sum = reference.run_node_with_abs(
                node, inputs, max_elements=max_elements, readings=readings
            )
        except reference.ReferenceError as exc:
            rule = getattr(exc, "rule", None)  # a DataConstraintError names the rule the data break
            if rule is not None:
                entry.data_violations.setdefault(rule, (dataset, first_line(exc)))
            else:
                entry.failures.setdefault(dataset, f"the reference could not run it: {first_line(exc)}")
            continue
        for position, name in enumerate(node.output):
            if not name or position >= len(expected) or expected[position] is None or name not in values:
                continue
            record = entry.records.setdefault(position, OutputRecord(name, position, runtime=runtime))
            room = (spare or {}).get(entry.index)
            override = (accuracy or {}).get(node.op_type)
            merge(record, dataset, node, position, expected[position], values[name], inputs, room, override,
                  abs_sum=abs_sum if position == 0 else None,
                  upstream=upstream.from_values(view, node, values))  # fmt: skip
        del expected, abs_sum


def describe_inputs(node: onnx.NodeProto, inputs: Sequence[np.ndarray | None]) -> str:
    """What a dataset looks like by the time it reaches a node, by its float inputs' special values (an edge
    dataset of -inf is all NaN after a Conv): a divergence names the data the node actually received."""
    parts = []
    for position, (name, value) in enumerate(zip(node.input, inputs, strict=False)):
        if value is None or value.dtype.kind != "f" or value.size == 0 or value.size > 1 << 24:
            continue
        shares = {
            "NaN": np.count_nonzero(np.isnan(value)),
            "+inf": np.count_nonzero(np.isposinf(value)),
            "-inf": np.count_nonzero(np.isneginf(value)),
            "±0": np.count_nonzero(value == 0),
        }
        special = ", ".join(f"{100 * n / value.size:.3g}% {k}" for k, n in shares.items() if n)
        if special or position == 0:  # weights and biases are named only when they hold special values
            parts.append(f"'{name}' {special or 'finite and non-zero'}")
    return "; ".join(parts)


def _inexact(op_type: str, expected: np.ndarray) -> bool:
    """A float output of an operator whose class is not exact: the bound decides what differs."""
    if expected.dtype.kind != "f" or op_type not in profile_operators():
        return False
    return accuracy.accuracy_class(op_type, expected.dtype) != accuracy.EXACT


def merge(
    record: OutputRecord,
    dataset: str,
    node: onnx.NodeProto | None,
    position: int,
    expected: np.ndarray,
    actual: np.ndarray,
    inputs: Sequence[np.ndarray | None] = (),
    spare: int | None = None,
    override: str | None = None,
    *,
    describe_received: bool = True,
    abs_sum: np.ndarray | None = None,
    upstream: UpstreamOf | None = None,
) -> None:
    """Compare one output on one dataset and add it, with the known behaviours it matches, to ``record``.
    ``spare`` (bytes, None: no limit) is the memory the known-behaviour matching may use. The output of an
    inexact operator is judged against its accuracy bound (``override``: the user's tighter one): only the
    elements beyond it, and special-value mismatches, differ. ``describe_received``: say what the data
    looked like when it reached the node (not for data fed to the node directly). ``abs_sum``: sum |a b|
    (+ |c|) of a sum-of-products node when the caller has it from the kernel (its bound then needs no second
    pass over the data). ``upstream``: the producers of the node's inputs (judging/upstream.py), for the
    known departures that span two nodes."""
    diff = _judged(record, node, expected, actual, inputs, override, abs_sum)
    known, explained, by_set = [], 0, {}
    if diff.mask is not None and diff.mismatches and node is not None:
        if spare is not None and diff.total * KNOWN_BYTES_PER_ELEMENT > spare:
            record.add(dataset, diff, [], 0, {})
            record.unexplained_reason = (
                "not matched against the known runtime departures: too large for --max-memory"
            )
            return
        if describe_received and record.first is None and not record.received:
            record.received = describe_inputs(node, inputs)
        case = DivergenceCase(
            node, position, np.asarray(expected), np.asarray(actual), diff.mask, inputs, upstream
        )
        explanation = explain(case)
        known, explained, by_set = explanation.matches, explanation.explained, explanation.by_set
    record.add(dataset, diff, known, explained, by_set)


def _judged(
    record: OutputRecord,
    node: onnx.NodeProto | None,
    expected: np.ndarray,
    actual: np.ndarray,
    inputs: Sequence[np.ndarray | None],
    override: str | None,
    abs_sum: np.ndarray | None,
) -> TensorDiff:
    """The comparison of one output; an inexact operator's judged against its bound, in one pass
    (judging.judge: the classification the record notes and the divergent elements together). The bound
    is evaluated only where something differs, as before: bit for bit equal outputs are compared as such."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if (
        node is None
        or expected.dtype != actual.dtype
        or expected.shape != actual.shape
        or not _inexact(node.op_type, expected)
    ):
        return compare_arrays(expected, actual)
    unsigned = np.dtype(f"u{expected.dtype.itemsize}")
    differs = expected.view(unsigned) != actual.view(unsigned)
    first = np.unravel_index(int(np.argmax(differs)), differs.shape) if differs.size else ()
    if not differs.size or not differs[first]:
        return compare_arrays(expected, actual)  # nothing differs: no bound to evaluate
    if np.isnan(expected[first]) and np.isnan(actual[first]):  # NaN payloads, maybe nothing else
        diff = compare_arrays(expected, actual)
        if not diff.mismatches:
            return diff
    del differs
    bound = accuracy.bound_for(node.op_type, expected.dtype, override)
    tolerance = bound.evaluate(node, inputs, expected, abs_sum)
    judged = judge(expected, actual, tolerance, expected.dtype)
    if judged.classification.counts[accuracy.MATCH] == expected.size:
        return compare_arrays(expected, actual)  # NaN payloads alone differ: nothing to note
    record.note_accuracy(judged.classification)
    return diff_of(expected, actual, judged.divergent)


def node_inputs(
    node: onnx.NodeProto, values: Mapping[str, np.ndarray]
) -> tuple[list[np.ndarray | None], str | None]:
    """The node's input values in order (None for an omitted optional input), or the first missing name."""
    inputs: list[np.ndarray | None] = []
    for name in node.input:
        if not name:
            inputs.append(None)
        elif name in values:
            inputs.append(values[name])
        else:
            return [], name
    return inputs, None


def ancestors(view: ModelView, tensor: str) -> set[int]:
    """Every node whose output ``tensor`` depends on, including its producer."""
    seen: set[int] = set()
    stack = list(view.producers.get(tensor, ()))
    while stack:
        index = stack.pop()
        if index in seen:
            continue
        seen.add(index)
        for name in view.nodes[index].input:
            if name:
                stack.extend(view.producers.get(name, ()))
    return seen
