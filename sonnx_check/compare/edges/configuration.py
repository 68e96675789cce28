"""One distinct node configuration of the edge battery (operator, attributes, input types and shapes, the
values of the inputs the model fixes): what it is fed and holds, what it costs to run, its records, and its
typed result (battery.py runs it; observed.py finds it in the in-context run)."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx

from sonnx_check.compare.edges import values as edge_values
from sonnx_check.compare.judging.known_departures import RuntimeSeen
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import DIVERGES, MATCH, NOT_COMPARED
from sonnx_check.compare.memory import KNOWN_BYTES_PER_ELEMENT, MASK_BYTES_PER_ELEMENT, REFERENCE_WORK
from sonnx_check.profile import TYPE_NAMES, profile_operators
from sonnx_check.results.edges import ConfigurationResult, ConfiguredNode

NODE_SCOPE = "node-edges"  # the model's constants held: part of the model's verdict
OPERATOR_SCOPE = "operator-edges"  # edge values on the constants too: evidence about the runtime only
# Integer parameter inputs keep the values the model gives them: they are part of the configuration.
_INTEGER_TYPES = frozenset(
    TYPE_NAMES[n] for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
)
# Operators whose output shape is their inputs' values: a lone run on edge values has no shape to compare.
_VALUE_SHAPED = {"Range": "its output's length is computed from its input values"}


@dataclass
class Configuration:
    """One distinct way a node of the model is configured, and the nodes configured that way."""

    op_type: str
    node: onnx.NodeProto  # the first node with this configuration (its attributes and output names)
    # inputs given edge values: position, dtype, and the shape the battery runs (extents.py: reduced)
    fed: tuple[tuple[int, np.dtype, tuple[int, ...]], ...]
    held: dict[int, np.ndarray]  # inputs kept at the model's values (its constants, integer parameters)
    output_sizes: tuple[tuple[int, int], ...]  # (elements, itemsize) per output, as seen in context
    scope: str = NODE_SCOPE
    constants: frozenset[int] = frozenset()  # held positions the model fixes (the rest: integer parameters)
    digest: str = ""  # the configuration's key (hex): operator, attributes, types, shapes, held values
    # held inputs read from the model's initializers: decoded into ``held`` only while the configuration
    # runs (weights are not held twice through the in-context run); every held input's dtype, shape, sha256
    held_from: dict[int, str] = field(default_factory=dict)
    held_meta: dict[int, tuple[np.dtype, tuple[int, ...], str]] = field(default_factory=dict)
    nodes: list[int] = field(default_factory=list)
    model_shapes: dict[int, tuple[int, ...]] = field(default_factory=dict)  # the fed inputs' in the model
    # an earlier configuration whose run at reduced extents is this one's (the same operator, attributes,
    # held values and reduced shapes): run once, its results copied here (battery.py)
    same_run_as: Configuration | None = None
    records: dict[int, OutputRecord] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # dataset -> why this configuration did not run it
    crashes: dict[str, str] = field(default_factory=dict)  # dataset -> how onnxruntime ended
    reason: str = ""  # why the configuration was not run at all

    def take_results(self, run: Configuration) -> None:
        """The results of ``run``, whose battery run is this configuration's, as this one's own (its
        outputs under its own node's names)."""
        self.records = {}
        for k, record in run.records.items():
            own = copy.deepcopy(record)
            own.name = self.node.output[k] if k < len(self.node.output) else record.name
            self.records[k] = own
        self.skipped, self.crashes = dict(run.skipped), dict(run.crashes)
        self.reason = self.reason or run.reason

    @property
    def status(self) -> str:
        if self.crashes or any(r.diverges for r in self.records.values()):
            return DIVERGES
        return MATCH if self.records else NOT_COMPARED

    @property
    def nbytes(self) -> int:
        """What running it holds at once: the fed data twice (feeds and a copy in flight), onnxruntime's
        outputs, the reference's outputs and temporaries, the diff's masks and the known-behaviour match."""
        fed = sum(int(np.prod(shape)) * dtype.itemsize for _, dtype, shape in self.fed)
        # the array, and its copy in the lone model
        held = sum(int(np.prod(shape)) * dtype.itemsize for dtype, shape, _ in self.held_meta.values())
        outputs = sum(elements * itemsize for elements, itemsize in self.output_sizes)
        elements = sum(elements for elements, _ in self.output_sizes)
        per_element = MASK_BYTES_PER_ELEMENT + KNOWN_BYTES_PER_ELEMENT
        return 2 * fed + 2 * held + (2 + REFERENCE_WORK) * outputs + per_element * elements

    def inputs(self, fed: Mapping[int, np.ndarray]) -> list[np.ndarray | None]:
        """The node's input values in order: fed data, held parameters, None for an omitted input."""
        values: list[np.ndarray | None] = []
        for position, name in enumerate(self.node.input):
            values.append(
                None if not name else self.held[position] if position in self.held_meta else fed.get(position)
            )
        return values

    def result(self, view_nodes: Sequence[onnx.NodeProto], version: RuntimeSeen) -> ConfigurationResult:
        edge: list[dict[str, object]] = [
            {"position": p, "dtype": d.name, "shape": list(s), "values": "edge"} for p, d, s in self.fed
        ]
        for entry, (position, _, shape) in zip(edge, self.fed, strict=True):
            model = self.model_shapes.get(position, shape)
            if model != shape:  # run at a reduced shape (extents.py): the model's
                entry["model_shape"] = list(model)
        held: list[dict[str, object]] = [
            {
                "position": p,
                "dtype": dtype.name,
                "shape": list(shape),
                "values": "held",
                "held": "model-constant" if p in self.constants else "integer-parameter",
                "sha256": sha,
            }
            for p, (dtype, shape, sha) in sorted(self.held_meta.items())
        ]
        return ConfigurationResult(
            scope=self.scope,
            key=self.digest,
            op_type=self.op_type,
            attributes=edge_values.attribute_text(self.node),
            inputs=tuple(edge + held),
            nodes=tuple(ConfiguredNode(i, view_nodes[i].name) for i in self.nodes),
            status=self.status,
            outputs=tuple(self.records[k].result(version) for k in sorted(self.records)),
            reason=self.reason,
            skipped=dict(self.skipped),
            crashes=dict(self.crashes),
        )


def no_dataset_reason(config: Configuration) -> str:
    if config.skipped:
        dataset, why = next(iter(config.skipped.items()))
        return f"no edge dataset could be compared (first: {dataset}: {why})"
    return "no edge dataset applies to it"


def value_digest(value: np.ndarray) -> bytes:
    """The SHA-256 of a held value's bytes (its dtype and shape are hashed beside it)."""
    if value.dtype.hasobject:  # strings: their text, not the addresses of Python objects
        return hashlib.sha256(repr(value.tolist()).encode()).digest()
    return hashlib.sha256(np.ascontiguousarray(value).reshape(-1).view(np.uint8).data).digest()


def held_positions(node: onnx.NodeProto, count: int) -> set[int]:
    """Input positions whose role the declaration types as integers only: parameters (a shape, axes,
    starts), not data."""
    operator = profile_operators().get(node.op_type)
    if operator is None:
        return set()
    held: set[int] = set()
    for param in operator.inputs:
        types = operator.types.get(param.name)
        if types and types <= _INTEGER_TYPES:
            held |= set(range(param.position, count)) if param.variadic else {param.position}
    return held
