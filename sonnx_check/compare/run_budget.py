"""Whether onnxruntime may run a model at all under the memory budget, decided before it runs.

onnxruntime cannot be interrupted mid-run and shares the machine's memory (its worker process has no limit
of its own): a tensor sized by input values (a Loop's trip count, Range's limit, the shape fed to
ConstantOfShape or Expand) can make it allocate without bound or run for ever. So the model must hold no
control flow, and every node output must have a size known from the input shapes alone, within
``--max-elements``. A model inside the profile always passes: its shapes are static and explicit
(GRAPH.shapes), and it has no control flow."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from sonnx_check.view import ModelView, is_control_flow, tensor_type_of

# Initializers up to this size are kept for shape inference (shape and axis tensors are small); larger ones
# only contribute their declared shape, so no weight is copied.
_SHAPE_TENSOR_LIMIT = 1024


@dataclass(frozen=True)
class OverBudget:
    """Why onnxruntime is not run: one sentence, and the node it concerns. ``size_unknown`` problems can wait
    until onnxruntime has accepted the model (its refusal, when it refuses, says more than "size unknown")."""

    reason: str
    node: int | None
    size_unknown: bool = False


def run_budget_problem(
    view: ModelView,
    input_shapes: Mapping[str, Sequence[int]],
    max_elements: int,
    inferred: Mapping[str, tuple[int, int]] | None = None,
    runtime: str = "onnxruntime",
) -> OverBudget | None:
    """None when every tensor the runtime (``runtime``, as sentences name it) will compute has a known size
    within ``max_elements``; otherwise the first problem, control flow first, then sizes over the budget, then
    sizes not known. ``inferred``: ``inferred_sizes`` of the same shapes, when the caller has it already."""
    for index, node in enumerate(view.nodes):
        if is_control_flow(node):
            return OverBudget(
                f"{view.refs[index].label()} is control flow: the work {runtime} would do depends on input "
                "values, which --max-elements cannot bound, so the model is not run",
                index,
            )
    if inferred is None:
        inferred = inferred_sizes(view.model, input_shapes)
    sizes = {name: elements for name, (elements, _) in inferred.items()}
    outputs = [(index, name) for index, node in enumerate(view.nodes) for name in node.output if name]
    for index, name in outputs:
        size = sizes.get(name)
        if size is not None and size > max_elements:
            return OverBudget(
                f"{runtime} would compute tensor '{name}' ({view.refs[index].label()}) with {size} "
                f"elements, more than --max-elements {max_elements}; raise --max-elements to compare it",
                index,
            )
    for index, name in outputs:
        if name not in sizes:
            return OverBudget(
                f"the size of tensor '{name}' ({view.refs[index].label()}) is not known before running, "
                f"so {runtime}'s memory use cannot be bounded by --max-elements; the model is not run "
                "(declare static shapes, or give --shape for every dynamic input)",
                index,
                size_unknown=True,
            )
    return None


def inferred_sizes(
    model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]]
) -> dict[str, tuple[int, int]]:
    """Element count and element size (bytes) of every tensor whose shape ONNX inference derives from the
    input shapes alone.

    Declared intermediate shapes are not trusted (a hostile model can declare small shapes and compute huge
    ones): inference starts from the graph inputs and initializers only."""
    probe = _shape_probe(model, input_shapes)
    try:
        inferred = onnx.shape_inference.infer_shapes(probe, strict_mode=False, data_prop=True)
    except Exception:  # noqa: BLE001 - inference gives up on broken graphs: then no size is known
        return {}
    sizes: dict[str, tuple[int, int]] = {}
    for value_info in (*inferred.graph.value_info, *inferred.graph.output):
        declared = tensor_type_of(value_info)
        if declared is not None and declared.static_shape is not None:
            sizes[value_info.name] = (math.prod(declared.static_shape), _itemsize(declared.elem_type))
    return sizes


def _itemsize(elem_type: int) -> int:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize or 8
    except (KeyError, TypeError, ValueError):
        return 8  # strings and types numpy lacks: a pointer's worth, the reference compares none of them


def _shape_probe(model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]]) -> onnx.ModelProto:
    """The model's nodes with the concrete input shapes, the small initializers, nothing declared between."""
    graph = onnx.GraphProto(name=model.graph.name)
    graph.node.extend(model.graph.node)
    large: dict[str, onnx.TensorProto] = {}
    for tensor in model.graph.initializer:
        if math.prod(tensor.dims) <= _SHAPE_TENSOR_LIMIT:
            graph.initializer.append(tensor)
        else:
            large[tensor.name] = tensor
    inputs = {v.name for v in model.graph.input}
    for value_info in model.graph.input:
        elem = value_info.type.tensor_type.elem_type
        shape = input_shapes.get(value_info.name)
        if shape is None and value_info.name in large:
            shape = large[value_info.name].dims
        if shape is not None:
            graph.input.append(helper.make_tensor_value_info(value_info.name, elem, list(shape)))
        else:
            graph.input.append(value_info)
    for name, tensor in large.items():
        if name not in inputs:
            graph.input.append(helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims)))
    for output in model.graph.output:
        graph.output.append(onnx.ValueInfoProto(name=output.name))
    probe = onnx.ModelProto(ir_version=model.ir_version, graph=graph)
    probe.opset_import.extend(model.opset_import)
    return probe
