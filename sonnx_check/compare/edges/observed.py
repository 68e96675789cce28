"""The edge battery's configurations as the in-context run meets them: each node's configuration is observed
once, from the values the runtime fed it there, and registered under its key (nodes configured alike share
one); a configuration that cannot be run alone says why."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.compare.edges import extents
from sonnx_check.compare.edges.configuration import (
    _INTEGER_TYPES,  # noqa: F401 - the integer types held_positions keeps
    _VALUE_SHAPED,
    NODE_SCOPE,
    OPERATOR_SCOPE,
    Configuration,
    held_positions,
    value_digest,
)
from sonnx_check.compare.edges.model_constants import fixed_tensors


class Observed:
    """The configurations of one model: the model's verdict's (node-edges) and, for those that hold a
    constant, the operator-level ones (operator-edges)."""

    def __init__(
        self,
        nodes: Sequence[onnx.NodeProto],
        model: onnx.ModelProto,
        *,
        max_elements: int,
        budget: int | None,
        operator_edges: bool = True,
        extent: str | None = None,
    ) -> None:
        self.nodes = nodes
        # the shapes the battery runs at (extents.py): reduced (the default), or the model's
        self.extent = extent or extents.DEFAULT_EXTENT
        self.fixed = fixed_tensors(model)
        self.initializers = {t.name: t for t in model.graph.initializer}
        self.operator_edges = operator_edges
        self.max_elements = max_elements
        self.budget = budget  # bytes sonnx-check may hold for one batch (None: no limit)
        self.configurations: dict[bytes, Configuration] = {}  # the model's verdict (NODE_SCOPE)
        self.operator_configurations: dict[bytes, Configuration] = {}  # OPERATOR_SCOPE
        self._observed: set[int] = set()
        self._runs: dict[tuple[str, bytes], Configuration] = {}  # the first configuration of each run

    def seen(self, index: int) -> bool:
        """Whether node ``index``'s configuration was recorded."""
        return index in self._observed

    def observe(
        self, index: int, inputs: Sequence[np.ndarray | None], outputs: Sequence[np.ndarray | None]
    ) -> None:
        """Record the configuration of node ``index`` from the values the runtime fed it in context (or,
        where the runtime's run failed, the reference computed for it)."""
        if index in self._observed:
            return
        self._observed.add(index)
        node = self.nodes[index]
        integer = held_positions(node, len(inputs))
        constant = {p for p, name in enumerate(node.input[: len(inputs)]) if name and name in self.fixed}
        sizes = tuple((int(v.size), v.dtype.itemsize) if v is not None else (0, 0) for v in outputs)
        model_level = self._register(self.configurations, node, inputs, integer | constant, sizes, NODE_SCOPE)
        model_level.constants = frozenset(constant & set(model_level.held_meta))
        model_level.nodes.append(index)
        if self.operator_edges and model_level.constants - integer:
            # the constants the model fixes also get edge values: evidence about the runtime, reported apart
            operator = self._register(
                self.operator_configurations, node, inputs, integer, sizes, OPERATOR_SCOPE
            )
            operator.nodes.append(index)

    def _register(
        self,
        table: dict[bytes, Configuration],
        node: onnx.NodeProto,
        inputs: Sequence[np.ndarray | None],
        held_positions: set[int],
        sizes: tuple[tuple[int, int], ...],
        scope: str,
    ) -> Configuration:
        """The configuration of ``node`` fed ``inputs`` with ``held_positions`` kept at their values (found
        in ``table``, or added to it)."""
        key = hashlib.sha256(node.op_type.encode())
        for attribute in sorted(node.attribute, key=lambda a: a.name):
            bare = onnx.AttributeProto()
            bare.CopyFrom(attribute)
            bare.doc_string = ""
            key.update(bare.SerializeToString())
        model_fed, held, meta = [], {}, {}
        for position, value in enumerate(inputs):
            if value is None:
                continue
            if position in held_positions:
                held[position] = value
                sha = value_digest(value)
                meta[position] = (value.dtype, tuple(int(d) for d in value.shape), sha.hex()[:16], sha)
            else:
                model_fed.append((position, value.dtype, tuple(int(d) for d in value.shape)))
        # the configuration's key: the model's shapes (each keeps its own findings); the run's key: the
        # shapes the battery runs, shared by configurations whose reduced runs coincide
        shapes = extents.reduced_shapes(node, model_fed, {p: m[1] for p, m in meta.items()}, self.extent)
        fed = [(position, dtype, shapes[position]) for position, dtype, _ in model_fed]
        run_shapes = {position: shape for position, _, shape in fed}
        run_key = key.copy()
        for position, value in enumerate(inputs):
            if value is None:
                key.update(b"|absent")
                run_key.update(b"|absent")
                continue
            key.update(f"|{value.dtype.str}{value.shape}".encode())
            run_key.update(f"|{value.dtype.str}{run_shapes.get(position, value.shape)}".encode())
            if position in meta:
                key.update(b"=" + meta[position][3])
                run_key.update(b"=" + meta[position][3])
        digest = key.digest()
        if digest not in table:
            lazy = {p: node.input[p] for p in held if node.input[p] in self.initializers}
            kept = {p: np.array(v, copy=True) for p, v in held.items() if p not in lazy}
            config = Configuration(
                node.op_type, node, tuple(fed), kept, _scaled(sizes, model_fed, fed), scope,
                digest=digest.hex()[:16],
            )  # fmt: skip
            config.held_from, config.held_meta = lazy, {p: m[:3] for p, m in meta.items()}
            config.model_shapes = {position: shape for position, _, shape in model_fed}
            self._check_runnable(config, model_fed, sizes)
            table[digest] = config
            first = self._runs.setdefault((scope, run_key.digest()), config)
            if first is not config and not config.reason and not first.reason:
                config.same_run_as = first  # run once, its results copied (battery.py)
        return table[digest]

    def _check_runnable(
        self,
        config: Configuration,
        model_fed: Sequence[tuple[int, np.dtype, tuple[int, ...]]],
        sizes: tuple[tuple[int, int], ...],
    ) -> None:
        """Set ``config.reason`` when it cannot be run alone (--max-elements judged on the model's shapes,
        as in context)."""
        node, fed = config.node, model_fed
        if node.op_type in _VALUE_SHAPED:
            config.reason = f"not run alone: {_VALUE_SHAPED[node.op_type]}"
        elif not fed:
            config.reason = (
                "not run alone: every input is a constant of the model or an integer parameter (the "
                "in-context run compared it on the only values the model gives it)"
                if config.held_meta and config.scope == NODE_SCOPE
                else "not run alone: no input to give edge values"
            )
        elif any(int(np.prod(s)) > self.max_elements for _, _, s in fed) or any(
            e > self.max_elements for e, _ in sizes
        ):
            config.reason = f"not run alone: a tensor is over --max-elements {self.max_elements}"
        elif self.budget is not None and config.nbytes > self.budget:
            config.reason = "not run alone: too large for --max-memory"


def _scaled(
    sizes: tuple[tuple[int, int], ...],
    model_fed: Sequence[tuple[int, np.dtype, tuple[int, ...]]],
    fed: Sequence[tuple[int, np.dtype, tuple[int, ...]]],
) -> tuple[tuple[int, int], ...]:
    """The output sizes seen in context, scaled as the fed inputs are reduced (the memory plan's figure)."""
    model = sum(int(np.prod(shape)) for _, _, shape in model_fed)
    run = sum(int(np.prod(shape)) for _, _, shape in fed)
    if model == run or model == 0:
        return sizes
    return tuple((-(-elements * run // model), itemsize) for elements, itemsize in sizes)
