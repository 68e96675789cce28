"""ModelView: the one picture of a model that every rule reads.

Built once per model: nodes in file order with their identity, producers and consumers of every tensor,
the operator version each node resolves to, and declared and inferred element types and shapes.
Inferred types come from onnx shape inference, run once and lazily (many rules never need it).
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import onnx
from onnx import defs, numpy_helper

from sonnx_check.external_data import external_tensors, text
from sonnx_check.findings import NodeRef
from sonnx_check.isolation import TimedOut, call_isolated_bytes

if TYPE_CHECKING:
    from sonnx_check.checker_verdict import CheckerVerdict

DEFAULT_DOMAINS = ("", "ai.onnx")
CONTROL_FLOW_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
_SUBGRAPH_TYPES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
# Data rules decode constants up to this size (shapes, axes, biases, BatchNormalization statistics); larger
# weights are never parsed by a static check, so a model is checked in about its file size in memory.
CONSTANT_ELEMENT_LIMIT = 1 << 16
_LIST_CONSTANTS = {"value_float": onnx.TensorProto.FLOAT, "value_int": onnx.TensorProto.INT64}
_LISTS_CONSTANTS = {"value_floats": onnx.TensorProto.FLOAT, "value_ints": onnx.TensorProto.INT64}
_UNRESOLVED = object()  # a schema not looked up yet (None means: no schema)
T = TypeVar("T")


def _constant_node_tensor(attrs: dict[str, onnx.AttributeProto]) -> onnx.TensorProto | None:
    """A Constant node's value as a tensor, whichever of its alternative attributes holds it."""
    if "value" in attrs and attrs["value"].type == onnx.AttributeProto.TENSOR:
        return attrs["value"].t
    for name, elem in _LIST_CONSTANTS.items():
        if name in attrs:
            a = attrs[name]
            value = a.f if elem == onnx.TensorProto.FLOAT else a.i
            return onnx.helper.make_tensor(name, elem, [], [value])
    for name, elem in _LISTS_CONSTANTS.items():
        if name in attrs:
            a = attrs[name]
            values = list(a.floats) if elem == onnx.TensorProto.FLOAT else list(a.ints)
            return onnx.helper.make_tensor(name, elem, [len(values)], values)
    return None


def subgraph_attributes(node: onnx.NodeProto) -> list[str]:
    """Names of the node's graph-valued attributes (the bodies of control flow)."""
    if not node.attribute:
        return []  # most nodes of the largest models (Relu, Add, Max) have no attribute at all
    return _subgraph_names(node.attribute)


def _subgraph_names(attributes: Iterable[onnx.AttributeProto]) -> list[str]:
    # a name that is not UTF-8 arrives as bytes: decoded like every other untrusted string (surrogateescape)
    return [text(a.name) for a in attributes if a.type in _SUBGRAPH_TYPES]


def is_control_flow(node: onnx.NodeProto) -> bool:
    return node.op_type in CONTROL_FLOW_OPS or bool(subgraph_attributes(node))


def normalise_domain(domain: str) -> str:
    return "" if domain in DEFAULT_DOMAINS else domain


@functools.lru_cache(maxsize=4096)
def resolve_schema(op_type: str, domain: str, opset_version: int) -> defs.OpSchema | None:
    """The schema a node resolves to, or None for an unknown operator (custom domain, typo, too new)."""
    try:
        return defs.get_schema(op_type, opset_version, domain)
    except defs.SchemaError:
        return None


@dataclass(frozen=True)
class TensorType:
    """An element type and a shape as declared (or inferred). ``shape`` is None when absent; a dim is an int
    when static, a str for a symbolic dim_param, None for an unknown dim."""

    elem_type: int  # onnx.TensorProto.DataType; 0 = UNDEFINED
    shape: tuple[int | str | None, ...] | None
    sparse: bool = False
    static_shape: tuple[int, ...] | None = field(init=False, compare=False)

    def __post_init__(self) -> None:
        # Computed once: rules ask for it on every node of models with 100k nodes.
        # A negative dimension is not a size (GRAPH.shapes reports it): no rule may compute with it.
        static = self.shape is not None and all(type(d) is int and d >= 0 for d in self.shape)
        object.__setattr__(self, "static_shape", self.shape if static else None)

    @property
    def type_name(self) -> str:
        return elem_type_name(self.elem_type)


@functools.lru_cache(maxsize=64)
def elem_type_name(elem_type: int) -> str:
    if elem_type == 0:
        return "undefined"
    try:
        return onnx.helper.tensor_dtype_to_string(elem_type).replace("TensorProto.", "").lower()
    except (ValueError, KeyError):
        return f"type {elem_type}"


def tensor_type_of(value_info: onnx.ValueInfoProto) -> TensorType | None:
    """The declared type of a value_info, or None when no tensor type is declared at all."""
    if not value_info.HasField("type"):
        return None
    t = value_info.type
    kind = t.WhichOneof("value")
    if kind not in ("tensor_type", "sparse_tensor_type"):
        return None
    tt = getattr(t, kind)
    shape: tuple[int | str | None, ...] | None = None
    if tt.HasField("shape"):
        shape = tuple(_dim(d) for d in tt.shape.dim)
    return TensorType(tt.elem_type, shape, sparse=kind == "sparse_tensor_type")


def declared_types(value_infos: Iterable[onnx.ValueInfoProto]) -> dict[str, TensorType]:
    """``tensor_type_of`` for many value_infos, by name (the first declaration of a name wins; an iterator
    keeps one value_info object alive at a time, which took a fifth off at 100k nodes). The tensors
    of a model share few distinct types (every activation of a block has the same), so each distinct type,
    keyed by its wire form, is converted once: converting each declaration was most of the view's
    construction on large models."""
    types: dict[str, TensorType] = {}
    converted: dict[bytes, TensorType | None] = {}
    for vi in value_infos:
        name = vi.name
        if name in types:
            continue
        wire = vi.type.SerializeToString()  # b"" for no type: tensor_type_of says None for it as well
        if wire not in converted:
            converted[wire] = tensor_type_of(vi)
        tt = converted[wire]
        if tt is not None:
            types[name] = tt
    return types


def _dim(d: onnx.TensorShapeProto.Dimension) -> int | str | None:
    which = d.WhichOneof("value")
    if which == "dim_value":
        return d.dim_value
    if which == "dim_param":
        return text(d.dim_param)  # bytes when not UTF-8: decoded as every untrusted string
    return None


def _header_only(value: onnx.ValueInfoProto) -> onnx.TensorProto:
    """An initializer's type and dims without its data (its data was never parsed)."""
    tensor = onnx.TensorProto(name=value.name, data_type=value.type.tensor_type.elem_type)
    tensor.dims.extend(d.dim_value for d in value.type.tensor_type.shape.dim)
    tensor.data_location = onnx.TensorProto.EXTERNAL  # no data here: view.constant never decodes it
    return tensor


class PhaseTimedOut(Exception):
    """A phase of the static check ran past its time limit (--timeout); ``phase`` names it."""

    def __init__(self, phase: str) -> None:
        self.phase = phase
        super().__init__(phase)


def _inferred_values(model: onnx.ModelProto) -> bytes:
    """In the child: the inferred model's inputs, value_info and outputs (all the view reads of it)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False)
    except Exception:  # noqa: BLE001 - inference failures are MODEL.onnx's business, not the view's
        return b""
    graph = onnx.GraphProto()
    graph.input.extend(inferred.graph.input)
    graph.value_info.extend(inferred.graph.value_info)
    graph.output.extend(inferred.graph.output)
    return graph.SerializeToString()


class ModelView:
    """Read-only, indexed access to the main graph of a model. ``op_types``, ``domains`` (normalised),
    ``inputs``, ``outputs`` and ``attribute_lists`` hold each node's fields by node index."""

    def __init__(
        self,
        model: onnx.ModelProto,
        path: str = "",
        elided: frozenset[str] = frozenset(),
        checker_verdict: CheckerVerdict | None = None,
    ) -> None:
        """``elided``: initializers the loader left out of the parse (their data is too large for any rule
        to decode) and declared as graph inputs of their type and shape instead; the view counts them as
        initializers again, with no data. ``checker_verdict``: onnx's full check, when it was run on the
        model's bytes before the parse (None: MODEL.onnx runs it on the model)."""
        self.model = model
        self.checker_verdict = checker_verdict
        self.path = path
        self.graph = model.graph
        self.graph_name = model.graph.name or "main_graph"
        self.nodes: Sequence[onnx.NodeProto] = model.graph.node
        self.opsets: dict[str, int] = {}
        for imp in model.opset_import:
            self.opsets[normalise_domain(imp.domain)] = imp.version
        # Every node's operator, input and output names and attributes, read out of the protobuf once: each
        # access to a field of a NodeProto builds a new Python object, and the rules read them several times
        # per node. (Slicing copies a repeated field in one C call.) The view is a snapshot: --fix, which
        # rewires nodes, reads them from the protobuf.
        self.op_types: list[str] = [n.op_type for n in self.nodes]
        self.domains: list[str] = [normalise_domain(n.domain) for n in self.nodes]
        self.inputs: list[tuple[str, ...]] = [tuple(n.input[:]) for n in self.nodes]
        self.outputs: list[tuple[str, ...]] = [tuple(n.output[:]) for n in self.nodes]
        self.attribute_lists: list[list[onnx.AttributeProto]] = [n.attribute[:] for n in self.nodes]
        self.producers: dict[str, list[int]] = defaultdict(list)
        for i, names in enumerate(self.outputs):
            for name in names:
                if name:
                    self.producers[name].append(i)
        self.initializers = {t.name: t for t in model.graph.initializer}
        for value in model.graph.input:
            if value.name in elided:
                self.initializers[value.name] = _header_only(value)
        self.graph_inputs = [v.name for v in model.graph.input if v.name not in elided]
        self.graph_input_names = frozenset(self.graph_inputs)  # membership tests on models with 10k inputs
        self.graph_outputs = [v.name for v in model.graph.output]
        self.declared = declared_types(chain(model.graph.input, model.graph.value_info, model.graph.output))
        initializer_types: dict[tuple[int, tuple[int, ...]], TensorType] = {}
        for name, init in self.initializers.items():
            # An initializer carries its type and shape in the tensor itself: explicit by construction.
            key = (init.data_type, tuple(init.dims[:]))
            if key not in initializer_types:
                initializer_types[key] = TensorType(*key)
            self.declared[name] = initializer_types[key]
        self._inferred: dict[str, TensorType] | None = None
        # The static check's time limit (--timeout): the engine sets both; None means no limit.
        self.time_limit: float | None = None
        self.deadline: float | None = None  # time.monotonic() at which the rules stop
        self._schemas: dict[tuple[str, str], defs.OpSchema | None] = {}
        self._attributes: list[dict[str, onnx.AttributeProto] | None] = [None] * len(self.nodes)
        self._constants: dict[str, np.ndarray | None] = {}
        self._shared: dict[Hashable, Any] = {}
        self._int_lists: dict[str, list[int] | None] = {}

    @functools.cached_property
    def consumers(self) -> dict[str, list[int]]:
        """The nodes reading each tensor (built when first asked: no static rule needs it)."""
        consumers: dict[str, list[int]] = defaultdict(list)
        for i, names in enumerate(self.inputs):
            for name in names:
                if name:
                    consumers[name].append(i)
        return consumers

    @functools.cached_property
    def refs(self) -> list[NodeRef]:
        """Every node's identity, as findings name it (built when first asked: a conforming model needs
        none)."""
        return [NodeRef(i, n.name, n.op_type, self.graph_name) for i, n in enumerate(self.nodes)]

    def attributes(self, index: int) -> dict[str, onnx.AttributeProto]:
        """The node's attributes by name (built on first use; several rules read the same node)."""
        cached = self._attributes[index]
        if cached is None:
            cached = self._attributes[index] = {a.name: a for a in self.attribute_lists[index]}
        return cached

    def subgraph_attributes(self, index: int) -> list[str]:
        """Names of the node's graph-valued attributes (the bodies of control flow)."""
        return _subgraph_names(self.attribute_lists[index]) if self.attribute_lists[index] else []

    def input_name(self, index: int, position: int) -> str | None:
        """The name of the node's input at ``position``, or None when it is absent or left empty."""
        names = self.inputs[index]
        return names[position] if position < len(names) and names[position] else None

    def output_name(self, index: int, position: int = 0) -> str | None:
        """The name of the node's output at ``position``, or None when it is absent or left empty."""
        names = self.outputs[index]
        return names[position] if position < len(names) and names[position] else None

    # -- operators --------------------------------------------------------------------------------------
    def domain(self, index: int) -> str:
        return self.domains[index]

    def opset_version(self, index: int) -> int | None:
        return self.opsets.get(self.domain(index))

    def schema(self, index: int) -> defs.OpSchema | None:
        # One opset per domain: every node of an operator resolves to the same schema.
        key = (self.op_types[index], self.domains[index])
        schema = self._schemas.get(key, _UNRESOLVED)
        if schema is _UNRESOLVED:
            version = self.opsets.get(key[1])
            schema = self._schemas[key] = None if version is None else resolve_schema(*key, version)
        return schema  # type: ignore[return-value]

    # -- tensors ----------------------------------------------------------------------------------------
    @property
    def inferred(self) -> dict[str, TensorType]:
        """Types and shapes from onnx shape inference (non-strict, so it never raises on a broken model).
        onnx's inference is native code and can take minutes on a hostile model (quadratic on If nodes that
        read outer names), so it runs in a child process, stopped at ``deadline`` (PhaseTimedOut)."""
        if self._inferred is None:
            left = None if self.deadline is None else max(self.deadline - time.monotonic(), 0.001)
            result = call_isolated_bytes(functools.partial(_inferred_values, self.model), timeout=left)
            if isinstance(result, TimedOut):
                raise PhaseTimedOut("onnx's shape inference")
            graph = onnx.GraphProto()
            if isinstance(result, bytes) and result:
                graph.ParseFromString(result)
            self._inferred = declared_types(chain(graph.input, graph.value_info, graph.output))
        return self._inferred

    def use_inferred_model(self, inferred_model: onnx.ModelProto | None) -> None:
        """Adopt an already inferred copy of the model (MODEL.onnx infers strictly; no second inference)."""
        self._inferred = {}
        if inferred_model is not None:
            g = inferred_model.graph
            self._inferred = declared_types(chain(g.input, g.value_info, g.output))

    def type_of(self, name: str) -> TensorType | None:
        """The declared type, else the inferred one: what a rule about values (not declarations) needs."""
        return self.declared.get(name) or self.inferred.get(name)

    def shape_of(self, name: str) -> tuple[int, ...] | None:
        """A static shape for ``name``, declared first, inferred otherwise."""
        declared = self.declared.get(name)
        if declared is not None and declared.static_shape is not None:
            return declared.static_shape
        inferred = self.inferred.get(name)
        return inferred.static_shape if inferred is not None else None

    def constant(self, name: str) -> np.ndarray | None:
        """The value of a constant tensor (an embedded initializer or a Constant node's output), or None.

        Weights stored as external data are never read by a static check, and a constant over
        ``CONSTANT_ELEMENT_LIMIT`` elements is not decoded: a data rule then stays silent rather than spend
        the memory (the comparison checks the same rule on the actual data). Decoded once per model (several
        rules of one node read the same constant), so the array is read-only."""
        if name not in self._constants:
            value = self._decode_constant(name)
            if value is not None:
                value.flags.writeable = False
            self._constants[name] = value
        return self._constants[name]

    def _decode_constant(self, name: str) -> np.ndarray | None:
        tensor = self.initializers.get(name)
        if tensor is None:
            producers = self.producers.get(name, ())
            if len(producers) != 1 or self.op_types[producers[0]] != "Constant":
                return None
            tensor = _constant_node_tensor(self.attributes(producers[0]))
            if tensor is None:
                return None
        if tensor.data_location == onnx.TensorProto.EXTERNAL or tensor.HasField("segment"):
            return None
        size = 1
        for d in tensor.dims:
            size *= d
        if size > CONSTANT_ELEMENT_LIMIT:
            return None
        try:
            return numpy_helper.to_array(tensor)
        except Exception:  # noqa: BLE001 - a malformed tensor is MODEL.onnx's finding, not a data rule's
            return None

    def int_list(self, name: str) -> list[int] | None:
        """The values of a 1-D integer constant (a shape, axes, starts, ...), or None when ``name`` is not
        one. Decoded once per model: several rules of one node read the same list."""
        if name not in self._int_lists:
            value = self.constant(name)
            ok = value is not None and value.ndim == 1 and value.dtype.kind in "iu"
            self._int_lists[name] = [int(v) for v in value] if ok else None  # type: ignore[union-attr]
        return self._int_lists[name]

    def shared(self, key: Hashable, derive: Callable[[], T]) -> T:
        """A fact several rules derive alike (a node's pooling geometry, Slice's entries, the tensors that
        must be declared): derived by the first rule that asks, then shared, so callers must not mutate it.
        ``key`` names the fact, with the node's index for a fact about one node."""
        if key not in self._shared:
            self._shared[key] = derive()
        return self._shared[key]

    @functools.cached_property
    def external_tensors(self) -> list[onnx.TensorProto]:
        """Tensors stored outside the file (initializers and tensor attributes, subgraphs included): found
        once for the rules that ask (it reads every initializer and attribute)."""
        return list(external_tensors(self.model, self.attribute_lists))

    def is_defined(self, name: str) -> bool:
        return name in self.producers or name in self.initializers or name in self.graph_input_names
