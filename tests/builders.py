"""Small model builders shared by the tests: every model is written to disk and checked through the same
path a user's file takes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from sonnx_check.engine import check_file
from sonnx_check.findings import Finding

MAXPOOL_ALL = {
    "auto_pad": "NOTSET",
    "ceil_mode": 0,
    "dilations": [1, 1],
    "kernel_shape": [3, 3],
    "pads": [0, 0, 0, 0],
    "storage_order": 0,
    "strides": [1, 1],
}


def vi(
    name: str, elem: int = T.FLOAT, shape: Sequence[int | str] | None = (1, 1, 8, 8)
) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, shape)


def model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    *,
    value_info: list[onnx.ValueInfoProto] = (),
    initializers: list[onnx.TensorProto] = (),
    opset: int = 22,
    extra_opsets: Sequence[tuple[str, int]] = (),
    ir_version: int | None = None,
) -> onnx.ModelProto:
    graph = h.make_graph(
        nodes, "g", inputs, outputs, initializer=list(initializers), value_info=list(value_info)
    )
    imports = [h.make_opsetid("", opset), *(h.make_opsetid(d, v) for d, v in extra_opsets)]
    m = h.make_model(graph, opset_imports=imports, producer_name="sonnx-check-tests")
    m.ir_version = ir_version or min(m.ir_version, 10)
    return m


def maxpool_model(
    x_shape: Sequence[int | str] = (1, 1, 8, 8),
    y_shape: Sequence[int | str] | None = (1, 1, 6, 6),
    *,
    elem: int = T.FLOAT,
    indices: tuple[int, Sequence[int]] | None = None,
    opset: int = 22,
    **attrs: object,
) -> onnx.ModelProto:
    """A one-node MaxPool model; ``attrs`` override MAXPOOL_ALL (value None removes the attribute)."""
    merged = {**MAXPOOL_ALL, **attrs}
    merged = {k: v for k, v in merged.items() if v is not None}
    outputs = [vi("y", elem, y_shape)]
    node_outputs = ["y"]
    if indices is not None:
        outputs.append(vi("i", indices[0], indices[1]))
        node_outputs.append("i")
    node = h.make_node("MaxPool", ["x"], node_outputs, name="pool", **merged)
    return model([node], [vi("x", elem, x_shape)], outputs, opset=opset)


def max_model(
    shapes: Sequence[Sequence[int]],
    y_shape: Sequence[int] | None,
    *,
    elems: Sequence[int] | None = None,
    y_elem: int | None = None,
    opset: int = 22,
) -> onnx.ModelProto:
    elems = list(elems or [T.FLOAT] * len(shapes))
    inputs = [vi(f"x{i}", e, s) for i, (e, s) in enumerate(zip(elems, shapes, strict=True))]
    node = h.make_node("Max", [v.name for v in inputs], ["y"], name="max")
    return model([node], inputs, [vi("y", y_elem or elems[0], y_shape)], opset=opset)


def save(m: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    path = folder / name
    onnx.save(m, path)
    return path


def check(m: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> list[Finding]:
    return check_file(str(save(m, folder, name))).findings


def rules_of(findings: list[Finding]) -> set[str]:
    return {f.rule for f in findings}


def external_data_model(location: str, folder: Path) -> onnx.ModelProto:
    """Max(x, w) with w stored as external data at ``location``; the file is created when it is inside
    ``folder`` (a location that escapes is left absent on purpose)."""
    weights = numpy_helper.from_array(np.ones((1, 1, 8, 8), np.float32), "w")
    weights.data_location = T.EXTERNAL
    weights.ClearField("raw_data")
    for key, value in (("location", location), ("offset", "0"), ("length", "256")):
        entry = weights.external_data.add()
        entry.key, entry.value = key, value
    if not location.startswith(("..", "/")):
        (folder / location).write_bytes(np.ones(64, np.float32).tobytes())
    node = h.make_node("Max", ["x", "w"], ["y"], name="max")
    return model([node], [vi("x")], [vi("y")], initializers=[weights])
