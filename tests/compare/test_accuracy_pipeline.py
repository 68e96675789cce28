"""The comparison judges an inexact operator's output against its accuracy bound: a correct runtime's
rounding differences are not divergences, the margin is reported, and a tighter configured bound that the
runtime exceeds is."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.compare import CompareOptions, compare_loaded

pytestmark = pytest.mark.live_ort


def _softmax_rows(columns: int = 1000) -> onnx.ModelProto:
    node = h.make_node("Softmax", ["x"], ["y"], name="softmax", axis=1)
    graph = h.make_graph(
        [node], "g", [h.make_tensor_value_info("x", T.FLOAT, [4, columns])],
        [h.make_tensor_value_info("y", T.FLOAT, [4, columns])],
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    return model


def _softmax_output(comparison: dict) -> dict:
    (node,) = [n for n in comparison["nodes"] if n["op_type"] == "Softmax"]
    (output,) = node["outputs"]
    return output


def test_rounding_differences_within_the_bound_are_not_divergences() -> None:
    result = compare_loaded(_softmax_rows(), CompareOptions(node_edges=False, datasets=("random",), seed=3))
    assert not [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    output = _softmax_output(result.comparison)
    assert output["status"] == "match"
    accuracy = output.get("accuracy")
    if accuracy is not None:  # onnxruntime's sums differ in the last bits: judged, and within
        assert (
            0 < accuracy["margin"] <= 1 and "Softmax" in accuracy["bound"] or "softmax" in accuracy["bound"]
        )
        assert accuracy["outcomes"].get("beyond-bound", 0) == 0


def test_a_tighter_configured_bound_the_runtime_exceeds_is_a_divergence_naming_the_bound() -> None:
    options = CompareOptions(node_edges=False, datasets=("random",), seed=3, accuracy={"Softmax": "0 abs"})
    result = compare_loaded(_softmax_rows(), options)
    output = _softmax_output(result.comparison)
    if "accuracy" not in output:
        pytest.skip("this onnxruntime computes these rows bit for bit like the reference")
    (finding,) = [f for f in result.findings if f.rule == "RUNTIME.divergence"]
    assert "bound:" in finding.message and "largest error/bound" in finding.message
    assert finding.data["accuracy"]["outcomes"]["beyond-bound"] > 0
    assert np.isfinite(finding.data["accuracy"]["margin"]) or finding.data["accuracy"]["margin"] == "inf"


def test_a_data_constraint_the_actual_data_break_is_reported_under_its_rule() -> None:
    """Abs of the int8 minimum has no result in the int section (Abs.X.C2); the edge datasets hold it."""
    node = h.make_node("Abs", ["x"], ["y"], name="abs")
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", T.INT8, [2, 8])],
        [h.make_tensor_value_info("y", T.INT8, [2, 8])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])
    model.ir_version = 10
    result = compare_loaded(model, CompareOptions(node_edges=False, datasets=("edge",)))
    (finding,) = [f for f in result.findings if f.rule == "Abs.X.C2"]
    assert finding.node is not None and finding.node.name == "abs"
    assert "on the data of dataset edge/" in finding.message and finding.data["stage"] == "compare"
