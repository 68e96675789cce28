"""The edge battery's batches are bounded in size (compare/edges/battery_room.py): a configuration's records
do not depend on the company it runs in, so the findings are those of one batch for all."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from fake_runtime import FakeOrt
from models import finish
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.compare import CompareOptions, compare_loaded
from sonnx_check.compare.edges.battery import NodeEdges

EDGES = CompareOptions(datasets=("random", "edge"))


def several_configurations() -> onnx.ModelProto:
    """Relu, LeakyRelu at three slopes, a Conv (its weight held: an operator-level configuration too), a
    Softmax behind them (rows of -inf alone: onnxruntime 1.21 to 1.32 depart there) and a MaxPool."""
    nodes = [h.make_node("Relu", ["x"], ["t0"], name="relu")]
    for i, alpha in enumerate((0.1, 0.2, 0.01), start=1):
        nodes.append(h.make_node("LeakyRelu", [f"t{i - 1}"], [f"t{i}"], name=f"leaky{i}", alpha=alpha))
    nodes.append(h.make_node("Conv", ["t3", "w"], ["t4"], name="conv", kernel_shape=[1, 1]))
    nodes.append(h.make_node("Softmax", ["t4"], ["t5"], name="softmax", axis=1))
    nodes.append(h.make_node("MaxPool", ["t5"], ["y"], name="pool", kernel_shape=[2, 2]))
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 2, 4, 4])
    y = h.make_tensor_value_info("y", T.FLOAT, [1, 2, 3, 3])
    w = numpy_helper.from_array(np.array([[[[0.5]], [[-1.0]]], [[[2.0]], [[0.25]]]], np.float32), "w")
    return finish(h.make_graph(nodes, "g", [x], [y], [w]), 13)


def _records(result) -> str:
    return json.dumps(
        {"battery": result.comparison["node_edges"], "findings": [f.to_json() for f in result.findings]},
        sort_keys=True,
        default=str,
    )


def _lone_models(fake: FakeOrt) -> list[onnx.ModelProto]:
    return [m for m in fake.sessions if m.graph.name == "sonnx-check node edges"]


def test_one_configuration_per_batch_finds_what_one_batch_finds(monkeypatch):
    together = FakeOrt().install(monkeypatch)
    whole = compare_loaded(several_configurations(), EDGES)
    monkeypatch.setattr(NodeEdges, "room", 1)
    apart = FakeOrt().install(monkeypatch)
    alone = compare_loaded(several_configurations(), EDGES)

    assert _records(alone) == _records(whole)
    count = whole.comparison["node_edges"]["summary"]["configurations"]
    assert count >= 7 and len(_lone_models(together)) == 1
    assert len(_lone_models(apart)) >= count  # the operator-level ones, if any, in batches of their own


def test_live_onnxruntime_one_configuration_per_batch_finds_what_one_batch_finds(monkeypatch):
    pytest.importorskip("onnxruntime")
    whole = compare_loaded(several_configurations(), EDGES)
    monkeypatch.setattr(NodeEdges, "room", 1)
    alone = compare_loaded(several_configurations(), EDGES)

    assert _records(alone) == _records(whole)
    assert whole.comparison["node_edges"]["summary"]["configurations"] >= 7
