"""The whole graph on the reference kernels, one value at a time, for the end-to-end comparison.

``reference.evaluate`` keeps every value until the end; on a chain of large tensors that is the sum of all
of them. Here each graph output is handed to the caller as soon as it is computed (and compared there), and
every value is released after its last use, so the reference holds what the graph needs at once and no more
(what memory.Planner counts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from sonnx_check import reference
from sonnx_check.errors import first_line
from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import BudgetExceededError

# Element types whose raw bytes are the numpy array itself (little-endian): decoded without a second copy.
_PLAIN_TYPES = frozenset(
    {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16, onnx.TensorProto.BOOL,
     onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
     onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}
)  # fmt: skip


def decoded(tensor: onnx.TensorProto) -> np.ndarray:
    """An initializer's values. Stored as raw bytes (what exporters write), a read-only array over one copy of
    them: protobuf hands out a new copy of the bytes on each access, which numpy_helper.to_array then copies
    again (two copies of the weight at once, for VGG's classifier 784 MiB), and a read-only array over
    ``bytes`` is a constant the kernels' cache recognises (reference/constant_cache.py: its float64 form and
    magnitudes are kept across the datasets). Any other encoding: numpy_helper.to_array."""
    if tensor.data_type in _PLAIN_TYPES and tensor.HasField("raw_data") and not tensor.external_data:
        raw = tensor.raw_data
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).newbyteorder("<")
        shape = tuple(int(d) for d in tensor.dims)
        if len(raw) == math.prod(shape) * dtype.itemsize:
            return np.frombuffer(raw, dtype=dtype).reshape(shape)
    try:
        return numpy_helper.to_array(tensor)
    except (ValueError, TypeError, KeyError, OSError) as exc:  # bytes short of the shape, an unknown type
        # a damaged weight is reported where the model is read (onnx.checker); here the reference cannot run
        why = f"initializer '{tensor.name}' does not decode: {first_line(exc)}"
        raise reference.ReferenceError(why) from None


def _plain(tensor: onnx.TensorProto) -> bool:
    """Whether ``decoded`` takes the array over the tensor's raw bytes (it cannot fail then)."""
    if tensor.data_type not in _PLAIN_TYPES or not tensor.HasField("raw_data") or tensor.external_data:
        return False
    itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    return len(tensor.raw_data) == math.prod(int(d) for d in tensor.dims) * itemsize


class Decoded(Mapping[str, np.ndarray]):
    """Initializers decoded when first looked up, then kept (the same array for every later lookup: the
    kernels' constant cache keeps its derived forms). One that ``decoded`` could refuse is decoded at once,
    so a damaged weight is still reported before anything runs. A batch of intermediates decodes its
    weights as its nodes are compared, not beside the runtime's run of the batch."""

    def __init__(self, tensors: Sequence[onnx.TensorProto]) -> None:
        self._tensors = {t.name: t for t in tensors}
        self._arrays = {t.name: decoded(t) for t in tensors if not _plain(t)}

    def __getitem__(self, name: str) -> np.ndarray:
        array = self._arrays.get(name)
        if array is None:
            array = self._arrays[name] = decoded(self._tensors[name])  # KeyError: not an initializer here
        return array

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def __contains__(self, name: object) -> bool:
        return name in self._tensors


# (node, output position, the reference's value, the node's input values)
OutputSink = Callable[[onnx.NodeProto, int, np.ndarray, Sequence["np.ndarray | None"]], None]
# (node, its input values) -> its outputs, or None when it cannot compute them either
Fallback = Callable[[onnx.NodeProto, Sequence["np.ndarray | None"]], "list[np.ndarray] | None"]


def run_graph(
    model: onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    wanted: set[str],
    sink: OutputSink,
    *,
    max_elements: int | None,
    readings: reference.Readings = reference.DEFAULT_READINGS,
    held: Mapping[str, np.ndarray] | None = None,
    fallback: Fallback | None = None,
    only: set[int] | None = None,
) -> None:
    """Run every node in graph order and give ``sink`` each output named in ``wanted`` when computed.
    ``held``: initializers the caller holds decoded already (used as they are, not decoded again);
    ``fallback``: what computes a node the reference has no kernel for or refuses (a default the profile
    excludes); when it cannot either, the reference's own error is raised. ``only``: the indices of the
    nodes to run (closed under their inputs' producers: what they read is computed by one of them).

    Raises reference.ReferenceError (as reference.evaluate does) before computing anything when an input
    has no value or a wanted output is computed by no node."""
    graph = model.graph
    weights = {t.name: t for t in graph.initializer if t.name not in feeds}
    absent = [i.name for i in graph.input if i.name not in feeds and i.name not in weights]
    if absent:
        raise reference.ReferenceError(f"no value given for graph input(s) {', '.join(absent)}")
    produced = {name for node in graph.node for name in node.output if name}
    unproduced = [name for name in wanted if name not in produced]
    if unproduced:
        raise reference.ReferenceError(
            f"graph output(s) {', '.join(sorted(unproduced))} are computed by no node"
        )
    run = [(i, node) for i, node in enumerate(graph.node) if only is None or i in only]
    last_use: dict[str, int] = {}
    for index, node in run:
        for name in node.input:
            if name:
                last_use[name] = index
    values: dict[str, np.ndarray] = {}
    for index, node in run:
        inputs: list[np.ndarray | None] = []
        for name in node.input:
            if not name:
                inputs.append(None)
            elif name in values:
                inputs.append(values[name])
            elif name in feeds:
                inputs.append(np.asarray(feeds[name]))
            elif held is not None and name in held:
                inputs.append(held[name])
            elif name in weights:
                tensor = weights[name]
                ensure_within_budget(f"initializer '{name}'", tensor.dims, max_elements)
                values[name] = decoded(tensor)  # decoded when first needed
                inputs.append(values[name])
            else:
                raise reference.ReferenceError(
                    f"node {index} ({node.name or node.op_type}) reads '{name}' before any node computes it"
                )
        try:
            outputs = reference.run_node(node, inputs, max_elements=max_elements, readings=readings)
        except BudgetExceededError:
            raise
        except reference.ReferenceError as refused:
            if fallback is None:
                raise
            outputs = _by_fallback(fallback, node, inputs, refused)
        for position, (name, value) in enumerate(zip(node.output, outputs, strict=False)):
            if not name:
                continue
            if name in wanted:
                sink(node, position, value, inputs)
            if last_use.get(name, -1) > index:
                values[name] = value
        del inputs, outputs
        for name in [n for n in values if last_use.get(n, -1) <= index]:
            del values[name]


def _by_fallback(
    fallback: Fallback, node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], refused: Exception
) -> list[np.ndarray]:
    """The node's outputs by ``fallback``; the reference's error ``refused`` when it cannot compute them
    (its reason is the one the user can act on), a budget error as it is."""
    try:
        computed = fallback(node, inputs)
    except BudgetExceededError:
        raise
    except reference.ReferenceError:
        computed = None
    if computed is None:
        raise refused
    return computed
