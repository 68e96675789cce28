"""A model whose sizes follow from its input data's values is compared node by node, never refused whole
(issue 31 item 3): a Range whose limit is an input, a Reshape whose shape is an input, a Slice whose ends
are computed from Shape -> Gather and an input. Each dataset's sizes are learnt before the runtime runs
(the small inputs folded as constants, else a reference run); a node whose size stays unknown (past a node
the reference cannot run) is alone not compared, with its reason. Through the shipped path (sonnx_check.api
with onnxruntime itself)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from models import finish
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check import api
from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.revealed_sizes import dataset_sizes
from sonnx_check.compare.run_budget import inferred_sizes
from sonnx_check.compare.sizing_ops import run_for_size
from sonnx_check.reference.errors import BudgetExceededError
from sonnx_check.view import ModelView

pytest.importorskip("onnxruntime")


def _const(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value, name)


def range_model() -> onnx.ModelProto:
    """Range(0, limit, 1) with ``limit`` an int64 scalar input, then Add(r, r)."""
    nodes = [
        h.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"),
        h.make_node("Add", ["r", "r"], ["y"], name="twice"),
    ]
    graph = h.make_graph(
        nodes, "range", [h.make_tensor_value_info("limit", T.INT64, [])],
        [h.make_tensor_value_info("y", T.INT64, ["n"])],
        [_const("start", np.array(0, np.int64)), _const("delta", np.array(1, np.int64))],
    )  # fmt: skip
    return finish(graph)


def reshape_model() -> onnx.ModelProto:
    """Reshape(x [2, 6], shape) with ``shape`` an input, then Relu."""
    nodes = [
        h.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
        h.make_node("Relu", ["r"], ["y"], name="relu"),
    ]
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [2, 6]), h.make_tensor_value_info("shape", T.INT64, [2])]
    graph = h.make_graph(nodes, "reshape", inputs, [h.make_tensor_value_info("y", T.FLOAT, ["a", "b"])])
    return finish(graph)


def slice_model() -> onnx.ModelProto:
    """Relu(x [2, 8]) sliced to its first Shape(x)[1] - k columns (k an input), then Relu: the ends are
    computed by Shape -> Gather -> Sub -> Concat, as exporters write them."""
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="relu0"),
        h.make_node("Shape", ["a"], ["s"], name="shape"),
        h.make_node("Gather", ["s", "second"], ["d"], axis=0, name="gather"),
        h.make_node("Sub", ["d", "k"], ["e"], name="sub"),
        h.make_node("Concat", ["rows", "e"], ["ends"], axis=0, name="ends"),
        h.make_node("Slice", ["a", "starts", "ends", "axes", "steps"], ["b"], name="slice"),
        h.make_node("Relu", ["b"], ["y"], name="relu1"),
    ]
    graph = h.make_graph(
        nodes, "slice",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 8]), h.make_tensor_value_info("k", T.INT64, [1])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, "m"])],
        [_const("second", np.array([1], np.int64)), _const("rows", np.array([2], np.int64)),
         _const("starts", np.array([0, 0], np.int64)), _const("axes", np.array([0, 1], np.int64)),
         _const("steps", np.array([1, 1], np.int64))],
    )  # fmt: skip
    return finish(graph)


def argmax_range_model(through: tuple[str, ...] = ()) -> onnx.ModelProto:
    """Range's limit is ArgMax of a 2048-element input (too large to fold: learnt by a reference run),
    passed ``through`` the named unary float operators (between Casts to float and back), which the
    reference has no kernel for."""
    nodes = [h.make_node("ArgMax", ["x"], ["i"], axis=0, keepdims=0, name="argmax")]
    limit = "i"
    if through:
        nodes.append(h.make_node("Cast", ["i"], ["f0"], to=T.FLOAT, name="to_float"))
        for k, op_type in enumerate(through):
            nodes.append(h.make_node(op_type, [f"f{k}"], [f"f{k + 1}"], name=op_type.lower()))
        nodes.append(h.make_node("Cast", [f"f{len(through)}"], ["limit"], to=T.INT64, name="to_int"))
        limit = "limit"
    nodes += [
        h.make_node("Range", ["start", limit, "delta"], ["r"], name="range"),
        h.make_node("Add", ["r", "r"], ["y"], name="twice"),
    ]
    graph = h.make_graph(
        nodes, "argmax", [h.make_tensor_value_info("x", T.FLOAT, [2048])],
        [h.make_tensor_value_info("y", T.INT64, ["n"])],
        [_const("start", np.array(0, np.int64)), _const("delta", np.array(1, np.int64))],
    )  # fmt: skip
    return finish(graph)


def _saved(tmp_path: Path, model: onnx.ModelProto, **data: np.ndarray) -> tuple[Path, Path]:
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, **data)  # type: ignore[arg-type]
    return path, inputs


def _statuses(result: api.ModelResult) -> dict[str, str]:
    assert result.comparison is not None
    return {node.name: node.status for node in result.comparison.nodes}


def _reasons(result: api.ModelResult) -> dict[str, str]:
    assert result.comparison is not None
    return {node.name: node.reason for node in result.comparison.nodes}


def _not_compared(result: api.ModelResult) -> list[str]:
    return [f.message for f in result.findings if f.rule == "RUNTIME.not-compared"]


def test_a_range_whose_limit_is_an_input_is_compared(tmp_path: Path) -> None:
    path, inputs = _saved(tmp_path, range_model(), limit=np.array(7, np.int64))
    result = api.compare(path, inputs=[str(inputs)], node_edges=False)
    assert _statuses(result) == {"range": "match", "twice": "match"}
    assert result.comparison is not None and result.comparison.status == "match"
    assert result.comparison.end_to_end is not None and result.comparison.end_to_end.compared
    assert not _not_compared(result)


def test_a_reshape_whose_shape_is_an_input_is_compared(tmp_path: Path) -> None:
    x = np.arange(12, dtype=np.float32).reshape(2, 6) - 6
    path, inputs = _saved(tmp_path, reshape_model(), x=x, shape=np.array([3, -1], np.int64))
    result = api.compare(path, inputs=[str(inputs)], node_edges=False)
    assert _statuses(result) == {"reshape": "match", "relu": "match"}
    assert not _not_compared(result)


def test_slice_ends_from_shape_gather_and_an_input_are_compared(tmp_path: Path) -> None:
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    path, inputs = _saved(tmp_path, slice_model(), x=x, k=np.array([3], np.int64))
    result = api.compare(path, inputs=[str(inputs)], node_edges=False)
    statuses = _statuses(result)
    assert statuses["slice"] == "match" and statuses["relu1"] == "match" and statuses["sub"] == "match"
    assert statuses["gather"] == "not-compared"  # no reference kernel for Gather, said as such
    assert _reasons(result)["gather"] == "no SONNX reference kernel for Gather"
    (output,) = next(n for n in result.comparison.nodes if n.name == "slice").outputs  # type: ignore[union-attr]
    assert output.total == 2 * 5


def test_with_node_edges_the_nodes_of_revealed_shapes_are_run_alone(tmp_path: Path) -> None:
    """The battery takes each node's configuration from the values the run revealed: Reshape (its shape
    input as the data gave it) and Relu are run alone on edge values, and agree."""
    x = np.arange(12, dtype=np.float32).reshape(2, 6) - 6
    path, inputs = _saved(tmp_path, reshape_model(), x=x, shape=np.array([3, -1], np.int64))
    result = api.compare(path, inputs=[str(inputs)], node_edges=True)
    assert _statuses(result) == {"reshape": "match", "relu": "match"}
    assert result.comparison is not None and result.comparison.node_edges is not None
    battery = result.comparison.node_edges
    assert {n.name: n.edges for n in battery.nodes} == {"reshape": "run-alone", "relu": "run-alone"}
    assert battery.summary.not_run == 0 and battery.summary.diverging == 0
    assert result.comparison.status == "match"


def test_with_node_edges_range_is_compared_in_context(tmp_path: Path) -> None:
    """Range is compared on the data; the battery does not run it alone (edge values as its limit would
    size its output without bound) and says so; what follows it is run alone."""
    path, inputs = _saved(tmp_path, range_model(), limit=np.array(5, np.int64))
    result = api.compare(path, inputs=[str(inputs)], node_edges=True)
    assert _statuses(result) == {"range": "match", "twice": "match"}
    assert result.comparison is not None and result.comparison.node_edges is not None
    accounting = {n.name: n for n in result.comparison.node_edges.nodes}
    assert accounting["twice"].edges == "run-alone"
    assert (
        accounting["range"].reason == "not run alone: its output's length is computed from its input values"
    )


def test_a_size_learnt_by_a_reference_run_is_compared(tmp_path: Path) -> None:
    """ArgMax of 2048 values is too large to fold: the reference's run on the dataset reveals Range's size."""
    result = api.compare(_saved(tmp_path, argmax_range_model())[0], node_edges=False)
    assert _statuses(result) == {"argmax": "match", "range": "match", "twice": "match"}


def test_a_size_computed_through_operators_without_kernel_is_learnt(tmp_path: Path) -> None:
    """Cast and Floor have no reference kernel: onnx's evaluator computes them to learn Range's size (never
    compared: they stay not compared for want of a kernel), and Range and Add are compared."""
    result = api.compare(_saved(tmp_path, argmax_range_model(("Floor",)))[0], node_edges=False)
    statuses = _statuses(result)
    assert {k: statuses[k] for k in ("argmax", "range", "twice")} == dict.fromkeys(
        ("argmax", "range", "twice"), "match"
    )
    assert {statuses[k] for k in ("to_float", "floor", "to_int")} == {"not-compared"}
    assert _reasons(result)["floor"] == "no SONNX reference kernel for Floor"


def test_a_size_past_a_node_the_reference_refuses_is_learnt(tmp_path: Path) -> None:
    """A Slice without ``axes`` and ``steps`` (outside the profile: Slice.R1, R3) whose end is ArgMax of a
    large input: the reference refuses it, onnx's evaluator sizes it as the runtime computes it (every
    axis, steps of 1), and the Relu after it is compared; the Slice is not, with the reference's reason."""
    nodes = [
        h.make_node("ArgMax", ["x"], ["i"], axis=0, keepdims=1, name="argmax"),
        h.make_node("Slice", ["x", "zero", "i"], ["s"], name="slice"),
        h.make_node("Relu", ["s"], ["y"], name="relu"),
    ]
    graph = h.make_graph(
        nodes, "slice", [h.make_tensor_value_info("x", T.FLOAT, [2048])],
        [h.make_tensor_value_info("y", T.FLOAT, ["n"])], [_const("zero", np.array([0], np.int64))],
    )  # fmt: skip
    result = api.compare(_saved(tmp_path, finish(graph))[0], node_edges=False)
    statuses = _statuses(result)
    assert statuses == {"argmax": "match", "slice": "not-compared", "relu": "match"}
    assert "the profile takes no default (Slice.R1)" in _reasons(result)["slice"]


def test_past_a_node_nothing_can_run_only_the_unknown_sizes_are_not_compared(tmp_path: Path) -> None:
    """Softplus is run neither by the reference nor to learn sizes, so Range's size is not known before
    running: Range and Add are not compared, each saying why; ArgMax is, and the model is run."""
    result = api.compare(_saved(tmp_path, argmax_range_model(("Softplus",)))[0], node_edges=False)
    statuses = _statuses(result)
    assert statuses["argmax"] == "match"
    assert statuses["range"] == statuses["twice"] == "not-compared"
    reason = _reasons(result)["range"]
    assert reason.startswith("the size of tensor 'r' is not known before running")
    assert (
        "the reference stopped at Softplus 'softplus' (node #2): no SONNX reference kernel for Softplus"
        in reason
    )
    assert _reasons(result)["twice"].startswith("the size of tensor 'r' is not known before running")
    assert "--shape" not in reason and "static shape" not in reason  # advice that would not help
    assert result.comparison is not None and result.comparison.status == "partial"
    assert result.comparison.datasets[0].status == "ok"  # the runtime ran the model


def test_a_size_over_the_budget_from_the_data_names_the_dataset_and_what_helps(tmp_path: Path) -> None:
    path, inputs = _saved(tmp_path, range_model(), limit=np.array(10**7, np.int64))
    options = CompareOptions(node_edges=False, datasets=(str(inputs),), max_elements=1_000_000)
    result = compare_loaded(onnx.load(path), options)
    (message,) = [f.message for f in result.findings if f.rule == "RUNTIME.not-compared"]
    assert message == (
        f"on dataset '{inputs}', onnxruntime would compute tensor 'r' (Range 'range' (node #0)) "
        "with 10000000 elements, more than --max-elements 1000000: its size follows from the dataset's "
        "values; give inputs the model is meant for (--inputs PATH), or raise --max-elements"
    )
    assert "--shape" not in message


@settings(max_examples=25, deadline=None)
@given(limit=st.integers(-50, 50), start=st.integers(-20, 20), delta=st.integers(-5, 5).filter(bool))
def test_a_learnt_size_is_the_one_the_data_gives(limit: int, start: int, delta: int) -> None:
    """Property: the size learnt for Range's output is numpy's arange length on the same values."""
    model = range_model()
    model.graph.initializer[0].CopyFrom(_const("start", np.array(start, np.int64)))
    model.graph.initializer[1].CopyFrom(_const("delta", np.array(delta, np.int64)))
    revealed = dataset_sizes(model, ModelView(model), "d", {"limit": np.array(limit, np.int64)}, 10**6)
    assert revealed.problem is None and not revealed.unknown
    assert revealed.sizes["r"] == (len(np.arange(start, limit, delta)), 8)


def test_a_size_operator_over_the_budget_is_not_run_by_onnx_evaluator() -> None:
    """onnx's evaluator checks no budget: ConstantOfShape's size is bounded from its shape's values first."""
    node = h.make_node("ConstantOfShape", ["s"], ["z"])
    with pytest.raises(BudgetExceededError) as caught:
        run_for_size(node, [np.array([100_000, 100_000], np.int64)], 1_000_000, {"": 17})
    assert caught.value.elements == 10**10
    assert run_for_size(node, [np.array([3, 4], np.int64)], 1_000_000, {"": 17})[0].shape == (3, 4)  # type: ignore[index]


def test_an_operator_whose_size_is_not_bounded_here_is_not_run() -> None:
    assert run_for_size(h.make_node("Softplus", ["x"], ["y"]), [np.ones(3, np.float32)], 10, {"": 17}) is None
    assert run_for_size(h.make_node("Relu", ["x"], ["y"], domain="com.x"), [np.ones(3)], 10, {"": 17}) is None


def _bounded_node(op_type: str, shape: tuple[int, ...]) -> tuple[onnx.NodeProto, list[np.ndarray]]:
    """A node of ``op_type`` whose output size follows from ``shape`` (and, for NonZero, from values)."""
    ones = np.ones(shape, np.float32)
    if op_type == "Expand":
        return h.make_node("Expand", ["x", "s"], ["y"]), [np.ones(shape[-1:], np.float32), np.array(shape)]
    if op_type == "Tile":
        return h.make_node("Tile", ["x", "r"], ["y"]), [ones, np.array(shape, np.int64)]
    if op_type == "NonZero":
        return h.make_node("NonZero", ["x"], ["y"]), [np.arange(math.prod(shape)).reshape(shape) % 3]
    if op_type == "Gather":
        node = h.make_node("Gather", ["x", "i"], ["y"], axis=len(shape) - 1)
        return node, [ones, np.zeros(shape, np.int64)]
    if op_type == "Concat":
        return h.make_node("Concat", ["x", "x"], ["y"], axis=0), [ones, ones]
    node = h.make_node("Where", ["c", "a", "b"], ["y"])
    return node, [np.ones(shape[-1:], bool), ones, np.ones((1,) * len(shape), np.float32)]


_BOUNDED_OPS = ("Concat", "Expand", "Gather", "NonZero", "Tile", "Where")


@settings(max_examples=40, deadline=None)
@given(op_type=st.sampled_from(_BOUNDED_OPS), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_the_bound_checked_is_never_below_what_the_operator_computes(op_type: str, shape: list[int]) -> None:
    """Property: an output is never computed beyond the budget (one element under its actual size, the
    operator is refused before it runs); with the budget at that size it runs, except NonZero, whose bound
    is every element's index (its actual size depends on the values)."""
    node, inputs = _bounded_node(op_type, tuple(shape))
    (output,) = run_for_size(node, inputs, None, {"": 17}) or [None]
    assert output is not None
    if output.size > 0:
        with pytest.raises(BudgetExceededError):
            run_for_size(node, inputs, output.size - 1, {"": 17})
    if op_type != "NonZero":
        assert run_for_size(node, inputs, output.size, {"": 17}) is not None


INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(start=INT64, limit=INT64, delta=INT64.filter(bool))
def test_a_range_is_counted_exactly_over_all_int64_values(start: int, limit: int, delta: int) -> None:
    """Property: the length counted for Range is Python's exact one for the same bounds (onnx's own
    inference gives 0 for a limit of 2^63 - 1, and materialises a propagated Range: 10 GB at 4.7e18)."""
    model = range_model()
    model.graph.initializer[0].CopyFrom(_const("start", np.array(start, np.int64)))
    model.graph.initializer[1].CopyFrom(_const("delta", np.array(delta, np.int64)))
    sizes = inferred_sizes(model, {"limit": ()}, {"limit": np.array(limit, np.int64)})
    assert sizes["r"] == (len(range(start, limit, delta)), 8)


def test_the_largest_limit_is_over_the_budget_not_an_empty_range(tmp_path: Path) -> None:
    """An edge dataset's highest int64 as Range's limit: 2^63 - 1 elements, over the budget, named as
    such (inference alone said 0 elements, and the runtime would have been run on it)."""
    path, inputs = _saved(tmp_path, range_model(), limit=np.array(2**63 - 1, np.int64))
    options = CompareOptions(node_edges=False, datasets=(str(inputs),))
    (message,) = _not_compared(compare_loaded(onnx.load(path), options))  # type: ignore[arg-type]
    assert f"with {2**63 - 1} elements, more than --max-elements" in message


def test_a_constant_range_too_long_is_refused_before_running() -> None:
    """The same for a Range of constants (no data involved): counted exactly, refused before running."""
    model = range_model()
    model.graph.input.pop()
    model.graph.initializer.append(_const("limit", np.array(2**63 - 1, np.int64)))
    (finding,) = compare_loaded(model, CompareOptions(node_edges=False)).findings
    assert f"with {2**63 - 1} elements, more than --max-elements" in finding.message


def test_a_tile_beyond_int64_is_counted_exactly_and_not_run() -> None:
    """Tile's repeats from constants: its size is counted in exact integers before inference (onnx 1.22's
    inference wraps 4 x 2^62 to 0 elements, which would have let the runtime run), and the model is not
    run, the reason naming the node and the exact count."""
    nodes = [h.make_node("Tile", ["x", "repeats"], ["t"], name="tile"), h.make_node("Relu", ["t"], ["y"])]
    graph = h.make_graph(
        nodes, "tile", [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, ["n"])], [_const("repeats", np.array([2**62], np.int64))],
    )  # fmt: skip
    (finding,) = compare_loaded(finish(graph), CompareOptions(node_edges=False)).findings
    assert finding.message.startswith(
        f"onnxruntime would compute tensor 't' (Tile 'tile' (node #0)) with {2**64} elements, more than "
        "--max-elements 100000000"
    )


def test_only_what_a_size_depends_on_is_run_to_learn_it(tmp_path: Path) -> None:
    """A Softplus on another input comes first in the graph: nothing can run it before the runtime does,
    but Range's size does not depend on it, so Range is learnt and compared (the reference runs the
    nodes the unknown sizes read from, not the whole graph)."""
    model = argmax_range_model()
    model.graph.node.insert(0, h.make_node("Softplus", ["z"], ["soft"], name="softplus"))
    model.graph.input.append(h.make_tensor_value_info("z", T.FLOAT, [8]))
    model.graph.output.append(h.make_tensor_value_info("soft", T.FLOAT, [8]))
    statuses = _statuses(api.compare(_saved(tmp_path, model)[0], node_edges=False))
    assert statuses == {"softplus": "not-compared", "argmax": "match", "range": "match", "twice": "match"}


def test_a_dataset_whose_values_are_over_the_budget_is_left_out_not_the_model(tmp_path: Path) -> None:
    """Two datasets: Range's limit 7 in one, 10^9 in the other. The second is not run (a warning naming it
    and why), the first is compared; only when every dataset is over the budget is the model not run."""
    path, small = _saved(tmp_path, range_model(), limit=np.array(7, np.int64))
    large = tmp_path / "large.npz"
    np.savez(large, limit=np.array(10**9, np.int64))
    result = api.compare(path, inputs=[str(small), str(large)], node_edges=False)
    assert _statuses(result) == {"range": "match", "twice": "match"}
    (finding,) = [f for f in result.findings if f.rule == "RUNTIME.not-compared"]
    assert finding.severity.value == "warning"
    assert finding.message.startswith(
        f"1 of 2 datasets not run (first: on dataset '{large}', onnxruntime would compute tensor 'r' "
        "(Range 'range' (node #0)) with 1000000000 elements, more than --max-elements 100000000"
    )
    assert finding.message.endswith("; the other datasets were compared")
    assert result.comparison is not None
    assert [(d.name, d.status) for d in result.comparison.datasets] == [
        (str(small), "ok"),
        (str(large), "not-run"),
    ]
    output = result.comparison.nodes[0].outputs[0]
    assert [d.name for d in output.datasets] == [str(small)]


def test_random_and_edge_data_compare_what_their_values_allow(tmp_path: Path) -> None:
    """The documented --inputs random --inputs edge on a Range fed by an input: the edge datasets whose
    limit is huge are left out, the others (an empty range, a limit of 2) are compared."""
    path = tmp_path / "model.onnx"
    onnx.save(range_model(), path)
    result = api.compare(path, inputs=["random", "edge"], node_edges=False)
    assert result.comparison is not None
    statuses = {d.name: d.status for d in result.comparison.datasets}
    assert statuses["edge/highest"] == "not-run" and statuses["edge/tie-checkerboard"] == "ok"
    assert _statuses(result) == {"range": "match", "twice": "match"}


def test_values_the_reference_refuses_leave_the_nodes_out_with_advice_that_can_help(tmp_path: Path) -> None:
    """Range's delta read from the data as 0: no length (the reference refuses it, and nothing else sizes
    it), so Range and Add are not compared, the reason quoting the reference and advising inputs the model
    is meant for; no --shape advice (the input's shape is static)."""
    model = range_model()
    model.graph.initializer.pop()  # delta, now an input
    model.graph.input.append(h.make_tensor_value_info("delta", T.INT64, []))
    path, inputs = _saved(tmp_path, model, limit=np.array(5, np.int64), delta=np.array(0, np.int64))
    result = api.compare(path, inputs=[str(inputs)], node_edges=False)
    reason = _reasons(result)["twice"]
    assert "the reference stopped at Range 'range' (node #0): " in reason
    assert reason.endswith(
        "inputs the model is meant for (--inputs PATH) may let it run), so its memory cannot be planned"
    )
    assert "--shape" not in reason
