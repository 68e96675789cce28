"""A size computed from other shapes is known before running (issue 31 item 3): the ShuffleNet-v2 export
splits its channels with Shape -> Gather -> Add -> Div -> Mul -> Slice, and was refused whole ("the size of
tensor ... is not known before running"). The small values are computed from the input shapes and the
constants, the model runs, and its nodes are compared; a size that depends on the input data's values is
learnt from each dataset (tests/compare/test_data_shapes.py), and one over the budget is refused without
advice that cannot help."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from fake_runtime import FakeOrt
from models import finish
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.run_budget import _small_outputs, inferred_sizes, run_budget_problem
from sonnx_check.view import ModelView

RANDOM = CompareOptions(node_edges=False, datasets=("random",), max_elements=1_000_000)


def channel_split(channels: int = 6) -> onnx.ModelProto:
    """x [1, C, 4, 4] -> Relu -> the first half of its channels, the half computed as torch exports it:
    Shape(r)[1] + 1, divided by 2, times 1, as Slice's end on the channel axis (the profile's Slice names
    every axis); then Relu again."""

    def const(name: str, value: np.ndarray) -> onnx.NodeProto:
        return h.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name), name=name)

    nodes = [
        h.make_node("Relu", ["x"], ["r"], name="relu"),
        h.make_node("Shape", ["r"], ["shape"], name="shape"),
        const("one_axis", np.array(1, np.int64)),
        h.make_node("Gather", ["shape", "one_axis"], ["c"], axis=0, name="gather"),
        const("one", np.array(1, np.int64)),
        h.make_node("Add", ["c", "one"], ["c1"], name="add"),
        const("two", np.array(2, np.int64)),
        h.make_node("Div", ["c1", "two"], ["half"], name="div"),
        h.make_node("Mul", ["half", "one"], ["end0"], name="mul"),
        h.make_node("Unsqueeze", ["end0", "zero_axes"], ["end1"], name="unsqueeze"),
        h.make_node("Concat", ["batch_end", "end1", "spatial_ends"], ["end"], axis=0, name="ends"),
        h.make_node("Slice", ["r", "starts", "end", "axes", "steps"], ["s"], name="slice"),
        h.make_node("Relu", ["s"], ["y"], name="relu2"),
    ]
    initializers = [
        numpy_helper.from_array(np.array([0], np.int64), "zero_axes"),
        numpy_helper.from_array(np.array([1], np.int64), "batch_end"),
        numpy_helper.from_array(np.array([4, 4], np.int64), "spatial_ends"),
        numpy_helper.from_array(np.array([0, 0, 0, 0], np.int64), "starts"),
        numpy_helper.from_array(np.array([0, 1, 2, 3], np.int64), "axes"),
        numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "steps"),
    ]
    graph = h.make_graph(
        nodes, "split", [h.make_tensor_value_info("x", T.FLOAT, [1, channels, 4, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, None)], initializer=initializers,
    )  # fmt: skip
    return finish(graph)


def test_sizes_computed_from_shapes_are_known_before_running() -> None:
    model = channel_split(6)
    sizes = inferred_sizes(model, {"x": (1, 6, 4, 4)})
    assert sizes["s"] == (3 * 16, 4)  # (6 + 1) // 2 channels of 4 x 4 float32
    assert sizes["y"] == (3 * 16, 4)
    assert sizes["half"] == (1, 8)
    assert run_budget_problem(ModelView(model), {"x": (1, 6, 4, 4)}, 1_000_000) is None


def test_a_model_with_a_size_computed_from_shapes_is_compared_node_by_node() -> None:
    """With onnxruntime itself: the model runs, the Slice and what follows are compared (before: nothing
    was, the model was refused whole)."""
    pytest.importorskip("onnxruntime")
    result = compare_loaded(channel_split(6), RANDOM)
    assert not [f.message for f in result.findings if "not known before running" in f.message]
    status = {n["name"]: n["status"] for n in result.comparison["nodes"]}
    assert status["slice"] == "match"
    assert status["relu2"] == "match"
    assert status["relu"] == "match"
    assert result.comparison["status"] == "partial"  # Gather has no reference kernel: all else matches


def test_a_size_read_from_input_values_over_the_budget_gives_advice_that_can_help(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Range's limit read from an input's data: the size is learnt from the dataset; over --max-elements,
    the reason names the dataset and what helps (other inputs, a larger budget), never "declare static
    shapes" or --shape (the input shape is static already)."""
    FakeOrt().install(monkeypatch)
    start = numpy_helper.from_array(np.array(0, np.int64), "start")
    delta = numpy_helper.from_array(np.array(1, np.int64), "delta")
    node = h.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")
    graph = h.make_graph(
        [node], "g", [h.make_tensor_value_info("limit", T.INT64, [])],
        [h.make_tensor_value_info("y", T.INT64, None)], initializer=[start, delta],
    )  # fmt: skip
    np.savez(tmp_path / "data.npz", limit=np.array(2_000_000, np.int64))
    options = replace(RANDOM, datasets=(str(tmp_path / "data.npz"),))
    (finding,) = compare_loaded(finish(graph), options).findings
    assert (
        "with 2000000 elements, more than --max-elements 1000000: its size follows from the"
        in finding.message
    )
    assert "(--inputs PATH), or raise --max-elements" in finding.message
    assert "--shape" not in finding.message and "declare static shapes" not in finding.message


def test_broadcasting_small_values_into_a_large_one_is_not_computed() -> None:
    """Three small constants broadcast against each other would make 2^30 elements: not computed to
    size the plan (its size comes from inference, and --max-elements refuses it)."""
    where = h.make_node("Where", ["c", "a", "b"], ["w"])
    values = {
        "c": np.ones((1024, 1, 1), bool),
        "a": np.ones((1, 1024, 1), np.float32),
        "b": np.ones((1, 1, 1024), np.float32),
    }
    assert _small_outputs(where, values, {}) is None


def test_a_damaged_small_initializer_folds_nothing_and_is_no_internal_error() -> None:
    """A small initializer whose bytes do not fill its shape (a damaged file: the fuzzer's damage_weights) was
    decoded by the shape folding and ended the run in an internal error; it now only folds nothing, and the
    damage is reported where the model is read (onnx.checker, the runtime's refusal)."""
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 4])
    y = h.make_tensor_value_info("y", T.FLOAT, [1, 4])
    bias = numpy_helper.from_array(np.ones(4, np.float32), "b")
    bias.raw_data = bias.raw_data[:8]  # half of the declared bytes
    graph = h.make_graph([h.make_node("Add", ["x", "b"], ["y"])], "g", [x], [y], [bias])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    assert inferred_sizes(model, {"x": [1, 4]})["y"] == (4, 4)
