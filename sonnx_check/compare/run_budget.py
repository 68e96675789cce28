"""Whether onnxruntime may run a model at all under the memory budget, decided before it runs.

onnxruntime cannot be interrupted mid-run and shares the machine's memory (its worker process has no limit
of its own): a tensor sized by input values (a Loop's trip count, Range's limit, the shape fed to
ConstantOfShape or Expand) can make it allocate without bound or run for ever. So the model must hold no
control flow, and every node output a size known before running within ``--max-elements``: here from the
input shapes and the constants (a size the data decides is learnt per dataset, compare/revealed_sizes.py).
A model inside the profile always passes: its shapes are static and explicit (GRAPH.shapes), and it has no
control flow.

A size computed from other shapes (torch exports a channel split as Shape -> Gather -> Div -> Slice) is
known before running too: those small values are computed from the input shapes and the constants
(``_fold_shape_values``) and shape inference runs again on them; given a dataset's small input values
(``inferred_sizes``' ``input_values``), the same folding settles the sizes read from them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from sonnx_check.runtime_names import DEFAULT_RUNTIME
from sonnx_check.view import ModelView, is_control_flow, tensor_type_of

# Initializers up to this size are kept for shape inference (shape and axis tensors are small); larger ones
# only contribute their declared shape, so no weight is copied.
_SHAPE_TENSOR_LIMIT = 1024
# The most a node's folded inputs may hold together, as the product of their sizes (see _small_outputs).
_FOLD_WORK = 2**20


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
    runtime: str = DEFAULT_RUNTIME,
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
                f"the size of tensor '{name}' ({view.refs[index].label()}) is not known before running "
                "(it depends on values the model computes from its inputs' data, not only on their shapes "
                f"and the model's constants), so {runtime}'s memory use cannot be bounded by "
                "--max-elements; the model is not run",
                index,
                size_unknown=True,
            )
    return None


def inferred_sizes(
    model: onnx.ModelProto,
    input_shapes: Mapping[str, Sequence[int]],
    input_values: Mapping[str, np.ndarray] | None = None,
) -> dict[str, tuple[int, int]]:
    """Element count and element size (bytes) of every tensor whose shape ONNX inference derives from the
    input shapes alone, or also from ``input_values`` (one dataset's small inputs: a Range's limit, a
    Reshape's shape read from an input), whose sizes are then that dataset's.

    Declared intermediate shapes are not trusted (a hostile model can declare small shapes and compute huge
    ones): inference starts from the graph inputs and initializers only."""
    probe = _shape_probe(model, input_shapes, input_values or {})
    folded: dict[str, np.ndarray] = {}
    counted: dict[str, tuple[int, int]] = {}  # Range outputs too large to fold: (elements, itemsize)
    shapes: dict[str, tuple[tuple[int, ...], int]] = {}
    # A size computed from other shapes (Shape -> Gather -> Div -> Slice's ends, as torch exports a channel
    # split) is known once those small values are: they are computed here and inferred again, as long as
    # that reveals more (each round at least one node more, so at most one round per node). Inference
    # propagates no data itself (data_prop): onnx materialises a propagated Range, 10 GB for a limit of
    # 4.7e18 read from an input, and its own Range length overflows (0 for a limit of 2^63 - 1); Ranges
    # are counted here instead, exactly, before inference reads their inputs (_fold_shape_values).
    _fold_shape_values(probe, shapes, folded, counted)
    for _ in range(len(model.graph.node) + 1):
        try:
            inferred = onnx.shape_inference.infer_shapes(probe, strict_mode=False, data_prop=False)
        except Exception:  # noqa: BLE001 - inference gives up on broken graphs: what it knew stays
            break
        for value_info in (*inferred.graph.value_info, *inferred.graph.output):
            declared = tensor_type_of(value_info)
            if declared is not None and declared.static_shape is not None:
                shapes[value_info.name] = (tuple(declared.static_shape), declared.elem_type)
        if not _fold_shape_values(probe, shapes, folded, counted):
            break
    sizes = {name: (math.prod(shape), _itemsize(elem)) for name, (shape, elem) in shapes.items()}
    sizes.update({name: (value.size, value.dtype.itemsize) for name, value in folded.items()})
    sizes.update(counted)
    return sizes


def _fold_shape_values(
    probe: onnx.ModelProto,
    shapes: Mapping[str, tuple[tuple[int, ...], int]],
    folded: dict[str, np.ndarray],
    counted: dict[str, tuple[int, int]],
) -> bool:
    """Replace, in ``probe``, every node whose outputs follow from the known shapes and small constants alone
    by those outputs as initializers (``folded`` gets them); whether any was. Only small tensors are
    computed (at most _SHAPE_TENSOR_LIMIT elements each), by onnx's own evaluator: these values only size
    the plan, they are not compared. A Range of known scalars longer than that is counted instead
    (``counted``: its elements and itemsize) and its output declared as a graph input of that length."""
    graph = probe.graph
    values = _decodable(graph.initializer)
    kept: list[onnx.NodeProto] = []
    for node in graph.node:
        length = _range_length(node, values)
        if length is None and _is_range(node) and all(n in values for n in node.input):
            continue  # known inputs but no length (a delta of 0, an infinite limit): not left to inference
        if length is not None:
            start = values[node.input[0]]
            if length > _SHAPE_TENSOR_LIMIT:
                counted[node.output[0]] = (length, start.dtype.itemsize)
                elem = helper.np_dtype_to_tensor_dtype(start.dtype)
                graph.input.append(helper.make_tensor_value_info(node.output[0], elem, [min(length, 2**62)]))
            else:
                delta = values[node.input[2]]
                value = (start + np.arange(length, dtype=start.dtype) * delta).astype(start.dtype)
                values[node.output[0]] = folded[node.output[0]] = value
                graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
            continue
        tiled = _tile_shape(node, values, shapes, graph)
        if tiled is not None:  # counted exactly, as Range: onnx 1.22's inference wraps 4 x 2^62 to 0
            dims, tile_type = tiled
            counted[node.output[0]] = (math.prod(dims), _itemsize(tile_type))
            clipped = [min(d, 2**62) for d in dims]
            graph.input.append(helper.make_tensor_value_info(node.output[0], tile_type, clipped))
            continue
        outputs = _small_outputs(node, values, shapes)
        if outputs is None:
            kept.append(node)
            continue
        for name, value in outputs.items():
            values[name] = folded[name] = value
            graph.initializer.append(numpy_helper.from_array(value, name))
    if len(kept) == len(graph.node):
        return False
    del graph.node[:]
    graph.node.extend(kept)
    return True


def _tile_shape(
    node: onnx.NodeProto,
    values: Mapping[str, np.ndarray],
    shapes: Mapping[str, tuple[tuple[int, ...], int]],
    graph: onnx.GraphProto,
) -> tuple[list[int], int] | None:
    """A Tile's output dims in exact integers and its element type, when its input's shape and its repeats
    are known; None otherwise (inference then sizes it, or the size is learnt)."""
    if node.op_type != "Tile" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
        return None
    repeats = values.get(node.input[1])
    known = shapes.get(node.input[0]) or _declared_shape(node.input[0], graph)
    if repeats is None or known is None or repeats.dtype.kind not in "iu" or repeats.ndim != 1:
        return None
    shape, elem = known
    counts = [int(r) for r in repeats.tolist()]
    if len(shape) != len(counts) or any(r < 0 for r in counts):
        return None  # malformed: left to inference, which reports nothing it cannot size
    return [d * r for d, r in zip(shape, counts, strict=True)], elem


def _declared_shape(name: str, graph: onnx.GraphProto) -> tuple[tuple[int, ...], int] | None:
    """A graph input's static shape and element type (the probe's inputs are the model's, trusted as the
    datasets are made to them), or an initializer's."""
    for value_info in graph.input:
        declared = tensor_type_of(value_info) if value_info.name == name else None
        if declared is not None and declared.static_shape is not None:
            return tuple(declared.static_shape), declared.elem_type
    for tensor in graph.initializer:
        if tensor.name == name:
            return tuple(int(d) for d in tensor.dims), tensor.data_type
    return None


def _is_range(node: onnx.NodeProto) -> bool:
    return node.op_type == "Range" and node.domain in ("", "ai.onnx")


def _range_length(node: onnx.NodeProto, values: Mapping[str, np.ndarray]) -> int | None:
    """How many elements a Range of known scalar inputs computes, max(ceil((limit - start) / delta), 0), in
    exact integer arithmetic for integer types (float types: in float64, as the value is computed); None
    when the node is no such Range (its inputs unknown, not scalars, or a delta of 0)."""
    if not _is_range(node) or len(node.input) != 3:
        return None
    if not all(name in values and values[name].size == 1 for name in node.input):
        return None
    start, limit, delta = (values[name].reshape(()) for name in node.input)
    if start.dtype.kind in "iu" and limit.dtype.kind in "iu" and delta.dtype.kind in "iu":
        first, last, step = int(start), int(limit), int(delta)
        return None if step == 0 else max(-((first - last) // step), 0)
    if start.dtype.kind != "f":
        return None
    span = (float(limit) - float(start)) / float(delta) if float(delta) else math.nan
    return max(math.ceil(span), 0) if math.isfinite(span) else None


def _decodable(initializers: Sequence[onnx.TensorProto]) -> dict[str, np.ndarray]:
    """The small initializers' values by name, leaving out those whose data does not decode (a damaged
    tensor: the comparison reports it where it reads the weights; here it only folds nothing)."""
    values: dict[str, np.ndarray] = {}
    for tensor in initializers:
        try:
            values[tensor.name] = numpy_helper.to_array(tensor)
        except (ValueError, TypeError, KeyError, OSError):  # wrong byte count, unknown type, external data
            continue
    return values


# Operators whose outputs follow from their inputs' values alone (nothing random, no subgraph): the ones a
# shape computation is made of. None makes an output larger than the product of its inputs' sizes (Range,
# Expand, Tile, ConstantOfShape would: their size is what is being bounded), so _FOLD_WORK bounds it.
_FOLDABLE = frozenset(
    {"Constant", "Shape", "Size", "Gather", "Add", "Sub", "Mul", "Div", "Cast", "Concat", "Unsqueeze",
     "Squeeze", "Slice", "Reshape", "Floor", "Ceil", "Min", "Max", "Neg", "Abs", "Identity", "Equal",
     "Where", "ReduceProd", "Mod", "Sqrt"}
)  # fmt: skip


def _small_outputs(
    node: onnx.NodeProto,
    values: Mapping[str, np.ndarray],
    shapes: Mapping[str, tuple[tuple[int, ...], int]],
) -> dict[str, np.ndarray] | None:
    """The node's outputs by name when they follow from known values (a Shape or Size from a known shape)
    and are all small; None otherwise."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in _FOLDABLE:
        return None
    feeds: dict[str, np.ndarray] = {}
    for name in node.input:
        if not name:
            continue
        if name in values:
            feeds[name] = values[name]
        elif node.op_type in ("Shape", "Size") and name in shapes:
            shape, elem = shapes[name]  # only the shape is read: a broadcast zero holds no memory
            dtype = helper.tensor_dtype_to_np_dtype(elem) if elem else np.dtype(np.float32)
            feeds[name] = np.broadcast_to(np.zeros((), dtype), shape)
        else:
            return None
    if node.op_type not in ("Shape", "Size") and math.prod(v.size for v in feeds.values()) > _FOLD_WORK:
        return None  # broadcasting small inputs against each other can still make a large output
    from onnx.reference import ReferenceEvaluator  # only for models that need it: it is slow to import

    try:
        computed = ReferenceEvaluator(node).run(None, feeds)
    except Exception:  # noqa: BLE001 - what onnx's evaluator cannot compute stays unknown
        return None
    outputs = {}
    for name, value in zip(node.output, computed, strict=False):
        value = np.asarray(value)
        if value.size > _SHAPE_TENSOR_LIMIT or value.dtype == object:
            return None
        if name:
            outputs[name] = value
    return outputs


def _itemsize(elem_type: int) -> int:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize or 8
    except (KeyError, TypeError, ValueError):
        return 8  # strings and types numpy lacks: a pointer's worth, the reference compares none of them


def _shape_probe(
    model: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]], input_values: Mapping[str, np.ndarray]
) -> onnx.ModelProto:
    """The model's nodes with the concrete input shapes, the small initializers, nothing declared between;
    a graph input whose value is given (small, at most _SHAPE_TENSOR_LIMIT elements) is a constant of it."""
    graph = onnx.GraphProto(name=model.graph.name)
    graph.node.extend(model.graph.node)
    given: dict[str, onnx.TensorProto] = {}
    for name, value in input_values.items():
        if value.size > _SHAPE_TENSOR_LIMIT or value.dtype == object:
            continue
        try:
            given[name] = numpy_helper.from_array(value, name)
        except (TypeError, ValueError, KeyError):  # a type ONNX cannot hold: its value sizes nothing here
            continue
    graph.initializer.extend(given.values())
    large: dict[str, onnx.TensorProto] = {}
    for tensor in model.graph.initializer:
        if tensor.name in given:
            continue  # the dataset's value replaces the default an initializer gives
        if math.prod(tensor.dims) <= _SHAPE_TENSOR_LIMIT:
            graph.initializer.append(tensor)
        else:
            large[tensor.name] = tensor
    inputs = {v.name for v in model.graph.input}
    for value_info in model.graph.input:
        if value_info.name in given:
            continue
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
