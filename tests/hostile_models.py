"""Hostile model shapes shared by the static, comparison and fuzzing tests: model-local functions (one that
shadows a standard operator), external data with hostile entries, names that are not UTF-8."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

OPSET = 17
IR_VERSION = 10  # what every supported onnxruntime reads


def _model(graph: onnx.GraphProto, **kwargs: object) -> onnx.ModelProto:
    kwargs.setdefault("opset_imports", [h.make_opsetid("", OPSET)])
    model = h.make_model(graph, **kwargs)  # type: ignore[arg-type]
    model.ir_version = IR_VERSION
    return model


def vi(name: str, shape: tuple[int, ...] = (4,)) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, T.FLOAT, list(shape))


def shadowing_relu() -> onnx.ModelProto:
    """A default-domain function ``Relu`` whose body is ``Neg``, called by the main graph: onnxruntime runs
    the built-in Relu, onnx's inliner gives Neg."""
    function = h.make_function(
        "",
        "Relu",
        ["X"],
        ["Y"],
        [h.make_node("Neg", ["X"], ["Y"])],
        opset_imports=[h.make_opsetid("", OPSET)],
    )
    graph = h.make_graph([h.make_node("Relu", ["x"], ["y"], name="relu")], "g", [vi("x")], [vi("y")])
    return _model(graph, functions=[function])


def external(tensor: onnx.TensorProto, location: str, **entries: str) -> onnx.TensorProto:
    tensor.ClearField("raw_data")
    tensor.data_location = T.EXTERNAL
    for key, value in (("location", location), *entries.items()):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def add_external(location: str = "w.data", n: int = 4, **entries: str) -> onnx.ModelProto:
    """y = x + w, with w (n float32: 4n bytes) stored as external data at ``location``."""
    weights = external(numpy_helper.from_array(np.ones(n, np.float32), "w"), location, **entries)
    graph = h.make_graph(
        [h.make_node("Add", ["x", "w"], ["y"], name="add")], "g", [vi("x", (n,))], [vi("y", (n,))], [weights]
    )
    return _model(graph)


def function_with_external_constant(location: str) -> onnx.ModelProto:
    """A custom-domain function whose body's Constant keeps its value in external data at ``location``."""
    constant = external(numpy_helper.from_array(np.ones(4, np.float32), "c"), location)
    body = [h.make_node("Constant", [], ["C"], value=constant), h.make_node("Add", ["X", "C"], ["Y"])]
    imports = [h.make_opsetid("", OPSET)]
    function = h.make_function("local", "F", ["X"], ["Y"], body, opset_imports=imports)
    graph = h.make_graph(
        [h.make_node("F", ["x"], ["y"], name="f", domain="local")], "g", [vi("x")], [vi("y")]
    )
    return _model(graph, opset_imports=[*imports, h.make_opsetid("local", 1)], functions=[function])


def with_bytes(model: onnx.ModelProto, placeholder: str, raw: bytes) -> bytes:
    """The serialised model with a string field's value ``placeholder`` replaced by ``raw`` (bytes protobuf
    cannot be given as a str: NUL, invalid UTF-8); the lengths must match, so the wire format stays valid."""
    assert len(placeholder.encode()) == len(raw)
    data = model.SerializeToString()
    assert data.count(placeholder.encode()) >= 1
    return data.replace(placeholder.encode(), raw)


def relu_chain_named(x: str = "x", t: str = "t", graph: str = "g") -> onnx.ModelProto:
    nodes = [h.make_node("Relu", [x], [t], name="r1"), h.make_node("Relu", [t], ["y"], name="r2")]
    g = h.make_graph(nodes, graph, [vi(x)], [vi("y")], value_info=[vi(t)])
    return _model(g)


def if_chain(count: int) -> onnx.ModelProto:
    """``count`` chained If nodes whose branches read the previous If's output from the outer scope: onnx's
    checker and shape inference are quadratic in them (6 MB: about 40 minutes)."""
    cond = numpy_helper.from_array(np.array(True), "cond")
    nodes, previous = [], "x"
    for i in range(count):
        then = h.make_graph([h.make_node("Relu", [previous], [f"t{i}"])], f"then{i}", [], [vi(f"t{i}")])
        other = h.make_graph([h.make_node("Neg", [previous], [f"e{i}"])], f"else{i}", [], [vi(f"e{i}")])
        nodes.append(
            h.make_node("If", ["cond"], [f"y{i}"], name=f"if{i}", then_branch=then, else_branch=other)
        )
        previous = f"y{i}"
    return _model(h.make_graph(nodes, "g", [vi("x")], [vi(previous)], [cond]))
