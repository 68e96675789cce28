"""GR2 / GRAPH.shapes: declare the types and shapes that ONNX shape inference derives.

Declaring what inference derives changes no computation; it makes the model say explicitly what a runtime
would otherwise work out. Graph inputs are never rewritten (their shape is the model's interface, and a
symbolic batch size is a decision for a person), and nothing is declared that contradicts a declaration
already present.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx

from sonnx_check.findings import NodeRef
from sonnx_check.fix.outcome import NotFixed, Rewrite
from sonnx_check.view import elem_type_name

# The dimension names ONNX shape inference invents (unk__0, unk__1, ...): never written into a model, where
# they would read as the exporter's names and be reported again as symbolic dimensions.
INVENTED = "unk__"
TYPE_RULE = "GR2"
SHAPE_RULE = "GRAPH.shapes"


def declare_inferred(
    model: onnx.ModelProto, wanted: Sequence[tuple[str, str, NodeRef | None]]
) -> tuple[list[Rewrite], list[NotFixed]]:
    """Declare the inferred type (GR2) or static shape (GRAPH.shapes) of each (rule, tensor, node)."""
    graph = model.graph
    try:
        inferred_model = onnx.shape_inference.infer_shapes(
            model, check_type=False, strict_mode=False, data_prop=True
        )
    except Exception as exc:  # noqa: BLE001 - inference failing is MODEL.onnx's finding; nothing to declare
        reason = f"shape inference failed ({' '.join(str(exc).split())[:200]})"
        return [], [NotFixed(rule, reason, node, tensor) for rule, tensor, node in wanted]
    g = inferred_model.graph
    inferred = {vi.name: vi.type for vi in (*g.value_info, *g.output, *g.input) if vi.HasField("type")}
    inputs = {vi.name for vi in graph.input} - {t.name for t in graph.initializer}
    rewrites: list[Rewrite] = []
    left: list[NotFixed] = []
    for rule, name, node in wanted:
        if name in inputs:
            left.append(
                NotFixed(
                    rule,
                    "a graph input's type and shape are the model's interface (a symbolic batch size is a "
                    "decision); declare them when exporting",
                    node,
                    name,
                )
            )
            continue
        why_not = _why_not(rule, inferred.get(name), _declared(graph, name))
        if why_not is not None:
            left.append(NotFixed(rule, why_not, node, name))
            continue
        _write(graph, name, inferred[name])
        what = "element type" if rule == TYPE_RULE else "static shape"
        rewrites.append(
            Rewrite(rule, f"declared {_show(inferred[name])} ({what} from shape inference)", node, name)
        )
    return rewrites, left


def _why_not(rule: str, inferred: onnx.TypeProto | None, declared: onnx.ValueInfoProto | None) -> str | None:
    if (
        inferred is None
        or inferred.WhichOneof("value") != "tensor_type"
        or not inferred.tensor_type.elem_type
    ):
        return "shape inference gives no element type for it"
    tensor = inferred.tensor_type
    if rule == SHAPE_RULE and not _static(tensor):
        return f"shape inference gives {_show(inferred)}, not a static shape (is a graph input symbolic?)"
    if declared is not None and declared.type.WhichOneof("value") == "tensor_type":
        old = declared.type.tensor_type
        if old.elem_type and old.elem_type != tensor.elem_type:
            return (
                f"its declared type {elem_type_name(old.elem_type)} contradicts inference ({_show(inferred)})"
            )
        if old.HasField("shape") and tensor.HasField("shape"):
            if len(old.shape.dim) != len(tensor.shape.dim):
                return f"its declared rank contradicts inference ({_show(inferred)})"
            for a, b in zip(old.shape.dim, tensor.shape.dim, strict=True):
                if a.HasField("dim_value") and b.HasField("dim_value") and a.dim_value != b.dim_value:
                    return f"its declared shape contradicts inference ({_show(inferred)})"
    return None


def _static(tensor: onnx.TypeProto.Tensor) -> bool:
    return tensor.HasField("shape") and all(d.HasField("dim_value") for d in tensor.shape.dim)


def _declared(graph: onnx.GraphProto, name: str) -> onnx.ValueInfoProto | None:
    for vi in (*graph.output, *graph.value_info):
        if vi.name == name:
            return vi
    return None


def _write(graph: onnx.GraphProto, name: str, type_proto: onnx.TypeProto) -> None:
    """Graph outputs are declared in place; intermediate tensors get (or update) a value_info entry."""
    declared = _declared(graph, name)
    if declared is None:
        declared = graph.value_info.add()
        declared.name = name
    declared.type.CopyFrom(type_proto)
    for dim in declared.type.tensor_type.shape.dim:
        if dim.dim_param.startswith(INVENTED):
            dim.ClearField("dim_param")  # onnx's own placeholder, not a name of the model: left unknown


def _show(type_proto: onnx.TypeProto) -> str:
    tensor = type_proto.tensor_type
    if not tensor.HasField("shape"):
        return f"{elem_type_name(tensor.elem_type)} (rank unknown)"
    dims = [str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim]
    return f"{elem_type_name(tensor.elem_type)}[{', '.join(dims)}]"
