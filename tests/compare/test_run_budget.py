"""onnxruntime is run only when what it computes is bounded by --max-elements: no control flow, every tensor
size known before running (from the input shapes, or learnt from each dataset's values) and within the
budget. Otherwise RUNTIME.not-compared says why."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx
import pytest
from fake_runtime import FakeOrt
from models import finish
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.run_budget import run_budget_problem
from sonnx_check.view import ModelView

RANDOM = CompareOptions(node_edges=False, datasets=("random",), max_elements=1_000_000)


def constant_of_shape(shape: list[int]) -> onnx.ModelProto:
    """y = Max(x, ConstantOfShape(shape)): the shape is a constant, so its size is known before running."""
    fill = h.make_node("ConstantOfShape", ["shape"], ["zeros"], name="fill")
    mx = h.make_node("Max", ["x", "zeros"], ["y"], name="mx")
    shape_tensor = numpy_helper.from_array(np.array(shape, np.int64), "shape")
    graph = h.make_graph(
        [fill, mx], "g", [h.make_tensor_value_info("x", T.FLOAT, [1])],
        [h.make_tensor_value_info("y", T.FLOAT, None)], initializer=[shape_tensor],
    )  # fmt: skip
    return finish(graph)


def range_from_input() -> onnx.ModelProto:
    """Range(0, limit, 1) with ``limit`` a graph input: its size depends on the value fed."""
    start = numpy_helper.from_array(np.array(0, np.int64), "start")
    delta = numpy_helper.from_array(np.array(1, np.int64), "delta")
    node = h.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")
    graph = h.make_graph(
        [node], "g", [h.make_tensor_value_info("limit", T.INT64, [])],
        [h.make_tensor_value_info("y", T.INT64, None)], initializer=[start, delta],
    )  # fmt: skip
    return finish(graph)


def loop() -> onnx.ModelProto:
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"], name="again")],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, [])],
        [h.make_tensor_value_info("cond_out", T.BOOL, [])],
    )
    node = h.make_node("Loop", ["n", ""], [], name="loop", body=body)
    graph = h.make_graph([node], "g", [h.make_tensor_value_info("n", T.INT64, [])], [])
    return finish(graph)


def test_a_tensor_over_the_budget_stops_the_comparison_before_onnxruntime_starts(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(constant_of_shape([4096, 4096]), RANDOM)
    assert fake.sessions == []
    (finding,) = result.findings
    assert finding.rule == "RUNTIME.not-compared" and finding.node.index == 0
    assert finding.message == (
        "onnxruntime would compute tensor 'zeros' (ConstantOfShape 'fill' (node #0)) with 16777216 elements, "
        "more than --max-elements 1000000; raise --max-elements to compare it"
    )
    assert result.comparison["status"] == "not-compared"


def test_the_same_model_within_the_budget_passes():
    assert run_budget_problem(ModelView(constant_of_shape([512, 512])), {"x": (1,)}, 1_000_000) is None


def test_a_size_that_depends_on_input_values_is_learnt_from_the_data(tmp_path):
    """Range's limit read from the data: its size is learnt from each dataset before the runtime runs, and
    the node is compared (it was refused whole: tests/compare/test_data_shapes.py has the rest)."""
    pytest.importorskip("onnxruntime")
    np.savez(tmp_path / "data.npz", limit=np.array(4, np.int64))
    result = compare_loaded(range_from_input(), replace(RANDOM, datasets=(str(tmp_path / "data.npz"),)))
    assert not result.findings
    assert [n["status"] for n in result.comparison["nodes"]] == ["match"]


def test_control_flow_is_not_run_whatever_its_trip_count(monkeypatch):
    fake = FakeOrt().install(monkeypatch)
    result = compare_loaded(loop(), RANDOM)
    assert fake.sessions == []
    (finding,) = result.findings
    assert finding.message.startswith("Loop 'loop' (node #0) is control flow")


def test_declared_shapes_are_not_trusted_for_the_budget():
    """A model may declare a small intermediate shape while computing a huge one."""
    constant = constant_of_shape([4096, 4096])
    constant.graph.value_info.append(h.make_tensor_value_info("zeros", T.FLOAT, [1]))
    problem = run_budget_problem(ModelView(constant), {"x": (1,)}, 1_000_000)
    assert problem is not None and "16777216 elements" in problem.reason
