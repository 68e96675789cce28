"""What the model view reads once and shares between rules (the static check's speed rests on it) reads the
same as reading the protobuf each time."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from sonnx_check.profile import profile_operators
from sonnx_check.view import ModelView, declared_types, tensor_type_of


def _model() -> onnx.ModelProto:
    nodes = [
        h.make_node("Constant", [], ["k"], value=h.make_tensor("v", T.INT64, [2], [1, 2])),
        h.make_node("Max", ["x", "", "x"], ["y"]),
    ]
    untyped = onnx.ValueInfoProto(name="y")  # no type: a later declaration of "y" still counts
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, "n"])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 3])],
        initializer=[h.make_tensor("w", T.FLOAT, [2], [0.5, 1.5])],
        value_info=[untyped, h.make_tensor_value_info("k", T.INT64, [2])],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 22)])


def test_declared_types_read_as_each_declaration_alone() -> None:
    graph = _model().graph
    values = (*graph.input, *graph.value_info, *graph.output)
    expected: dict = {}
    for vi in values:
        tt = tensor_type_of(vi)
        if tt is not None:
            expected.setdefault(vi.name, tt)
    assert declared_types(values) == expected
    assert expected["y"].shape == (2, 3) and expected["x"].static_shape is None


def test_node_fields_are_the_protobuf_fields() -> None:
    model = _model()
    view = ModelView(model)
    for index, node in enumerate(model.graph.node):
        assert view.op_types[index] == node.op_type
        assert view.inputs[index] == tuple(node.input) and view.outputs[index] == tuple(node.output)
        assert [a.name for a in view.attribute_lists[index]] == [a.name for a in node.attribute]
    assert view.input_name(1, 1) is None and view.input_name(1, 2) == "x" and view.input_name(1, 3) is None
    assert dict(view.consumers) == {"x": [1, 1]} and view.refs[1].op_type == "Max"


def test_a_constant_is_decoded_once_and_read_only() -> None:
    view = ModelView(_model())
    first = view.constant("k")
    assert first is view.constant("k") and view.int_list("k") == [1, 2]
    with pytest.raises(ValueError):
        first[0] = 7  # shared by every rule that reads it
    np.testing.assert_array_equal(view.constant("w"), [0.5, 1.5])


def test_a_shared_fact_is_derived_once() -> None:
    view = ModelView(_model())
    calls = []
    for _ in range(3):
        assert view.shared(("fact", 1), lambda: calls.append(1) or "value") == "value"
    assert calls == [1]


def test_a_role_slot_binds_what_actuals_binds() -> None:
    node = h.make_node("Max", ["a", "", "c"], ["y"])
    op = profile_operators()["Max"]
    (role,) = (p.name for p in op.inputs)
    side, positions = op.slot(role)
    assert side == 0 and [n for n in node.input[positions] if n] == op.actuals(node, role) == ["a", "c"]
