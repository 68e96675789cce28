"""``--fix --diff``: what ``--fix`` would rewrite, as a unified diff of the graph, with nothing written.

ONNX has no canonical text whose lines follow the graph's parts (onnx.printer puts every initializer on one
line and leaves value_info out), so the diff is of a listing made here: one line per graph input and
output, per initializer (its type and shape, never its values: a weight of a million numbers would be a
million-character line), per declared value_info and per node (name, type, inputs, outputs, attributes).
A rewrite shows as the lines it changes: an attribute written, a declaration added, a node removed, a
weight's shape changed. Model strings are left exact here; the reporters display-sanitise every line.
"""

from __future__ import annotations

import difflib

import onnx

from sonnx_check.view import elem_type_name

CONTEXT = 1  # lines of context around each change, as ruff --diff shows few


def listing(model: onnx.ModelProto) -> list[str]:
    graph = model.graph
    lines = [f"opset {d.domain or 'ai.onnx'} {d.version}" for d in model.opset_import]
    lines += [f"input {vi.name}: {_type(vi.type)}" for vi in graph.input]
    lines += [f"output {vi.name}: {_type(vi.type)}" for vi in graph.output]
    lines += [f"initializer {t.name}: {_tensor(t)}" for t in graph.initializer]
    lines += [f"value_info {vi.name}: {_type(vi.type)}" for vi in graph.value_info]
    for node in graph.node:
        attributes = ", ".join(f"{a.name}={_attribute(a)}" for a in node.attribute)
        domain = f"{node.domain}::" if node.domain else ""
        lines.append(
            f"node {node.name or '(unnamed)'}: {domain}{node.op_type}({', '.join(node.input)}) -> "
            f"({', '.join(node.output)})" + (f" <{attributes}>" if attributes else "")
        )
    return lines


def unified(before: list[str], after: list[str], path: str) -> tuple[str, ...]:
    """The diff's lines (``--- path``, ``+++ path (after --fix)``, hunks), or () when nothing changed."""
    return tuple(difflib.unified_diff(before, after, path, f"{path} (after --fix)", n=CONTEXT, lineterm=""))


def _type(type_proto: onnx.TypeProto) -> str:
    if type_proto.WhichOneof("value") != "tensor_type":
        return type_proto.WhichOneof("value") or "?"
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return f"{elem_type_name(tensor.elem_type)} (rank unknown)"
    dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim]
    return f"{elem_type_name(tensor.elem_type)}[{', '.join(dims)}]"


def _tensor(tensor: onnx.TensorProto) -> str:
    where = " (external data)" if tensor.data_location == onnx.TensorProto.EXTERNAL else ""
    return f"{elem_type_name(tensor.data_type)}[{', '.join(str(d) for d in tensor.dims)}]{where}"


def _attribute(attribute: onnx.AttributeProto) -> str:
    kind = attribute.type
    if kind == onnx.AttributeProto.INT:
        return str(attribute.i)
    if kind == onnx.AttributeProto.FLOAT:
        return repr(attribute.f)
    if kind == onnx.AttributeProto.STRING:
        return repr(attribute.s.decode("utf-8", "backslashreplace"))
    if kind == onnx.AttributeProto.INTS:
        return str(list(attribute.ints))
    if kind == onnx.AttributeProto.FLOATS:
        return str(list(attribute.floats))
    if kind == onnx.AttributeProto.TENSOR:
        return _tensor(attribute.t)
    return onnx.AttributeProto.AttributeType.Name(kind).lower()
