"""memory.Planner.batches keeps the current batch's bytes as it grows instead of summing its tensors again
for every node (quadratic in the nodes: 485k generator steps on DenseNet-121): the plan is the same batch for
batch, byte for byte, as the former whole sums (kept here as the reference)."""

from __future__ import annotations

import onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check import reference
from sonnx_check.compare import memory
from sonnx_check.compare.localise import plan
from sonnx_check.view import ModelView


def _former_batches(planner: memory.Planner, entries):  # the plan before, verbatim
    batches: list[memory.Batch] = []
    held: list[str] = []
    current, current_extra = memory.Batch(), 0
    for entry in entries:
        exposed, weights, extra = planner.exposed(entry), planner._weights(entry), planner._extra(entry)
        if planner.own is not None:
            alone = planner.feeds_bytes + planner._bytes([*exposed, *weights]) + extra
            if alone > planner.own:
                entry.reason = planner._too_large("comparing it", alone)
                continue
            together = (
                planner.feeds_bytes + planner._bytes([*held, *exposed, *weights]) + max(current_extra, extra)
            )
            if current.entries and together > planner.own:
                batches.append(current)
                current, held, current_extra = memory.Batch(), [], 0
        current.entries.append(entry)
        current.tensors.extend(n for n in exposed if n not in current.tensors)
        held.extend([*exposed, *weights])
        current_extra = max(current_extra, extra)
        current.held = planner.feeds_bytes + planner._bytes(held)
    if current.entries:
        batches.append(current)
    for batch in batches:
        for entry in batch.entries:
            batch.spare[entry.index] = (
                None if planner.own is None else planner.own - batch.held - planner._extra(entry)
            )
    return batches


def _model(reads: list[tuple[int, int, bool]]) -> onnx.ModelProto:
    """Add nodes, node k reading two earlier tensors (or a weight shared by several nodes)."""
    names, nodes = ["x"], []
    for k, (a, b, weight) in enumerate(reads):
        second = f"w{b % 3}" if weight else names[b % len(names)]
        nodes.append(h.make_node("Add", [names[a % len(names)], second], [f"t{k}"]))
        names.append(f"t{k}")
    weights = [h.make_tensor(f"w{i}", T.FLOAT, [4], [0.0] * 4) for i in range(3)]
    graph = h.make_graph(
        nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info(names[-1], T.FLOAT, [4])], weights,
    )  # fmt: skip
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


@settings(max_examples=60, deadline=None)
@given(
    reads=st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.booleans()), min_size=1, max_size=25),
    elements=st.lists(st.integers(1, 1 << 16), min_size=30, max_size=30),
    own=st.one_of(st.none(), st.integers(1 << 18, 1 << 22)),
)
def test_the_plan_is_the_former_plan(reads, elements, own):
    model = _model(reads)
    view = ModelView(model)
    tensors = ["x", *(f"t{k}" for k in range(len(reads))), "w0", "w1", "w2"]
    sizes = {name: memory.Size(elements[i % len(elements)], 4) for i, name in enumerate(tensors)}
    plans = []
    for batches_of in (memory.Planner.batches, _former_batches):
        budget = None if own is None else 2 * own
        planner = memory.Planner(view, sizes, {"x"}, sizes["x"].nbytes, budget, own=own)
        entries = [n for n in plan(view, reference.supported_ops()) if n.has_kernel]
        batches = batches_of(planner, entries)
        plans.append(
            (
                [([e.index for e in b.entries], b.tensors, b.held, dict(b.spare)) for b in batches],
                [(e.index, e.reason) for e in entries],
            )
        )
    assert plans[0] == plans[1]
