"""Edge values at every node: each distinct node configuration run alone, in onnxruntime and in the reference.

Edge inputs fed to a whole model rarely reach its inner nodes as edge values: -inf becomes NaN after a
Conv, and a MaxPool behind a Relu never sees -inf, ties or -0. So every distinct configuration of the model
(operator, attributes, input types and shapes, and the values of the inputs the model fixes) is also run on
its own, on the generic edge patterns (datasets.py) and on the operator's own edge values (edge_values.py),
in onnxruntime with the session options of the model run and in the reference kernel, and compared with the
same accuracy-aware diff as the in-context run. Nodes sharing a configuration are run once; a finding names
all of them.

Two scopes (semantics.md, "Edge values at a node keep the model's own constants"):

- ``node-edges``, the model's verdict: the inputs the model fixes (model_constants.py: weights, biases,
  Clip bounds, Pow exponents, and values folded from them) and the integer parameters keep their values,
  which are part of the configuration's key; only the data inputs take edge values.
- ``operator-edges``, evidence about the runtime: the same operator, attributes, types and shapes with edge
  values on the model's constants too (only the integer parameters held, a shape or axes being what makes
  the node run at all). Run only for configurations that hold a constant; what it finds is reported apart,
  at severity info, never as the model's error.

The in-context comparison is kept (it feeds each node the values onnxruntime computed, and sees fusions and
layout rewrites a lone node does not); the shapes, types and parameter values of a configuration are the
ones onnxruntime fed the node there.

The configurations are run together, as independent nodes of one small model (one worker and one session
for as many as the memory budget allows: starting a worker costs more than running the nodes a dataset does
not concern on zeros); a crash is then pinned by running each configuration of the batch alone.

Data a configuration must not receive (a zero integer divisor, a negative variance: data constraints of the
profile) is never sent to onnxruntime: such a dataset is tried with the pattern on the first input only,
then skipped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import onnx
from onnx import numpy_helper

from sonnx_check import reference
from sonnx_check.compare.edges import values as edge_values
from sonnx_check.compare.edges.lone_model import (
    configurations_model,
    input_name,
    output_name,
    source_initializers,
)
from sonnx_check.compare.edges.model_constants import fixed_tensors
from sonnx_check.compare.inputs.datasets import edge_array, edge_pattern_names, random_array, seeded
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import DIVERGES, MATCH, NOT_COMPARED, merge
from sonnx_check.compare.memory import KNOWN_BYTES_PER_ELEMENT, MASK_BYTES_PER_ELEMENT, REFERENCE_WORK
from sonnx_check.compare.runtimes.base import (
    ONNXRUNTIME_LIKE,
    Capabilities,
    DatasetRun,
    Feeds,
    RunFailure,
    Session,
)
from sonnx_check.errors import first_line
from sonnx_check.profile import TYPE_NAMES, profile_operators
from sonnx_check.results.edges import (
    NOT_RUN,
    RUN_ALONE,
    SHARED,
    Battery,
    ConfigurationResult,
    ConfiguredNode,
    NodeAccounting,
)

EDGE_PREFIX = "edge/"
NODE_SCOPE = "node-edges"  # the model's constants held: part of the model's verdict
OPERATOR_SCOPE = "operator-edges"  # edge values on the constants too: evidence about the runtime only
STOPPED = "onnxruntime was stopped by the time limit (--timeout) before this configuration ran"
# Integer parameter inputs keep the values the model gives them: they are part of the configuration.
_INTEGER_TYPES = frozenset(
    TYPE_NAMES[n] for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
)
# Operators whose output shape is their inputs' values: a lone run on edge values has no shape to compare.
_VALUE_SHAPED = {"Range": "its output's length is computed from its input values"}

# a session on a configurations model and the initializers it takes from the compared model (None: none)
OpenSession = Callable[[onnx.ModelProto, Mapping[str, str] | None], Session]
CheckRun = Callable[[DatasetRun], None]  # raises to stop the battery (the time limit ran out)


@dataclass
class Configuration:
    """One distinct way a node of the model is configured, and the nodes configured that way."""

    op_type: str
    node: onnx.NodeProto  # the first node with this configuration (its attributes and output names)
    fed: tuple[tuple[int, np.dtype, tuple[int, ...]], ...]  # inputs given edge values: position, dtype, shape
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
    records: dict[int, OutputRecord] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # dataset -> why this configuration did not run it
    crashes: dict[str, str] = field(default_factory=dict)  # dataset -> how onnxruntime ended
    reason: str = ""  # why the configuration was not run at all

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

    def result(self, view_nodes: Sequence[onnx.NodeProto], version: str | None) -> ConfigurationResult:
        edge = [{"position": p, "dtype": d.name, "shape": list(s), "values": "edge"} for p, d, s in self.fed]
        held = [
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


@dataclass
class _Prepared:
    fed: dict[int, np.ndarray]
    inputs: list[np.ndarray | None]
    expected: list[np.ndarray]
    abs_sum: np.ndarray | None = None  # sum |a b| (+ |c|) of a sum-of-products node, from its kernel


class NodeEdges:
    """The edge battery of one comparison: configurations are observed during the in-context run, then
    run alone on edge data."""

    def __init__(
        self,
        nodes: Sequence[onnx.NodeProto],
        model: onnx.ModelProto,
        *,
        seed: int,
        max_elements: int,
        budget: int | None,
        accuracy: Mapping[str, str],
        operator_edges: bool = True,
        runner: Capabilities = ONNXRUNTIME_LIKE,
        readings: reference.Readings = reference.DEFAULT_READINGS,
    ) -> None:
        self.nodes = nodes
        self.model = model
        self.fixed = fixed_tensors(model)
        self._initializers = {t.name: t for t in model.graph.initializer}
        self.operator_edges = operator_edges
        self.seed = seed
        self.max_elements = max_elements
        self.budget = budget  # bytes sonnx-check may hold for one batch (None: no limit)
        self.accuracy = accuracy
        self.readings = readings
        # A runtime that computes every graph output whatever is asked (a command) runs every configuration
        # of a batch on each dataset: those the dataset does not concern get data the reference accepted for
        # them (zeros could be data the profile excludes, an integer division by zero). A runner holding
        # the compared model takes the held weights from it: no copy in the batch's model.
        self.runner = runner
        self.subject = runner.subject  # how findings name the runtime under test
        self._fillers: dict[int, dict[int, np.ndarray]] = {}
        self.configurations: dict[bytes, Configuration] = {}  # the model's verdict (NODE_SCOPE)
        self.operator_configurations: dict[bytes, Configuration] = {}  # OPERATOR_SCOPE
        self._observed: set[int] = set()

    # -- observing --------------------------------------------------------------------------------------
    def observe(
        self, index: int, inputs: Sequence[np.ndarray | None], outputs: Sequence[np.ndarray | None]
    ) -> None:
        """Record the configuration of node ``index`` from the values onnxruntime fed it in context."""
        if index in self._observed:
            return
        self._observed.add(index)
        node = self.nodes[index]
        integer = _held_positions(node, len(inputs))
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
        fed, held, meta = [], {}, {}
        for position, value in enumerate(inputs):
            if value is None:
                key.update(b"|absent")
                continue
            key.update(f"|{value.dtype.str}{value.shape}".encode())
            if position in held_positions:
                held[position] = value
                sha = _value_digest(value)
                meta[position] = (value.dtype, tuple(int(d) for d in value.shape), sha.hex()[:16])
                key.update(b"=" + sha)
            else:
                fed.append((position, value.dtype, tuple(int(d) for d in value.shape)))
        digest = key.digest()
        if digest not in table:
            lazy = {p: node.input[p] for p in held if node.input[p] in self._initializers}
            kept = {p: np.array(v, copy=True) for p, v in held.items() if p not in lazy}
            config = Configuration(
                node.op_type, node, tuple(fed), kept, sizes, scope, digest=digest.hex()[:16]
            )
            config.held_from, config.held_meta = lazy, meta
            self._check_runnable(config)
            table[digest] = config
        return table[digest]

    def _check_runnable(self, config: Configuration) -> None:
        """Set ``config.reason`` when it cannot be run alone."""
        node, fed, sizes = config.node, config.fed, config.output_sizes
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

    # -- running ----------------------------------------------------------------------------------------
    def datasets(self, config: Configuration) -> list[str]:
        generic = edge_pattern_names([dtype for _, dtype, _ in config.fed])
        return [EDGE_PREFIX + n for n in (*generic, *edge_values.specific_names(config.op_type))]

    def run(self, open_session: OpenSession, run: CheckRun) -> None:
        """Run every configuration through the runner's sessions (raises whatever ``open_session`` and the
        ``run`` check raise for a timeout; the configurations not reached keep no records)."""
        # the model's configurations first: a time limit reached later costs only operator-level evidence
        every = (*self.configurations.values(), *self.operator_configurations.values())
        pending = [c for c in every if not c.reason]
        try:
            for batch in self._batches(pending):
                self._load_held(batch)
                try:
                    self._run_batch(batch, open_session, run)
                finally:
                    for config in batch:  # the weights go with the batch
                        for position in config.held_from:
                            config.held.pop(position, None)
        except BaseException:
            for config in pending:
                if not config.records and not config.crashes and not config.reason:
                    config.reason = STOPPED
            raise

    def _load_held(self, batch: list[Configuration]) -> None:
        for config in batch:
            for position, name in config.held_from.items():
                config.held[position] = numpy_helper.to_array(self._initializers[name])

    def _batches(self, configs: list[Configuration]) -> list[list[Configuration]]:
        batches: list[list[Configuration]] = []
        used = 0
        for config in configs:
            if not batches or (self.budget is not None and used + config.nbytes > self.budget):
                batches.append([])
                used = 0
            batches[-1].append(config)
            used += config.nbytes
        return batches

    def _run_batch(
        self,
        batch: list[Configuration],
        open_session: OpenSession,
        run: CheckRun,
        only: str | None = None,
    ) -> None:
        """Run ``batch`` on its datasets (``only``: that one), in one session."""
        shared = self.runner.shares_constants
        try:
            model = configurations_model(self.model, batch, by_reference=shared)
            session = open_session(model, source_initializers(batch) if shared else None)
            del model
        except RunFailure as exc:
            if len(batch) > 1:
                for config in batch:
                    self._run_batch([config], open_session, run, only)
            else:
                batch[0].reason = f"{self.subject} refused the node alone: {exc.reason}"
            return
        names = [only] if only else list(dict.fromkeys(d for c in batch for d in self.datasets(c)))
        prepared: dict[str, dict[int, _Prepared | None]] = {}  # the reference's side of the datasets sent
        self._fillers.clear()
        try:
            for done in session.run_datasets(self._feeds(batch, names, prepared)):
                self._compare_dataset(batch, done, prepared.pop(done.dataset), open_session, run)
                del done
        finally:
            session.close()
            self._fillers.clear()

    def _filler(
        self, config: Configuration, shape: tuple[int, ...], dtype: np.dtype, position: int
    ) -> np.ndarray:
        """What a configuration is fed on a dataset that does not concern it: zeros for a runtime that runs
        only the asked outputs, else the data of its first dataset the reference accepts."""
        if not self.runner.prunes_outputs:
            if id(config) not in self._fillers:
                ready = next((r for d in self.datasets(config) if (r := self._prepare(config, d))), None)
                self._fillers[id(config)] = ready.fed if ready is not None else {}
            if position in self._fillers[id(config)]:
                return self._fillers[id(config)][position]
        return np.zeros(shape, dtype=dtype)

    def _feeds(
        self, batch: list[Configuration], names: list[str], prepared: dict[str, dict[int, _Prepared | None]]
    ) -> Iterator[Feeds]:
        """The datasets that concern a configuration of the batch, prepared one at a time (the others are
        fed zeros, and their outputs are not asked for)."""
        for dataset in names:
            ready = {id(c): self._prepare(c, dataset) for c in batch}
            if all(r is None for r in ready.values()):
                continue
            values: dict[str, np.ndarray] = {}
            for number, config in enumerate(batch):
                own = ready[id(config)]
                for position, dtype, shape in config.fed:
                    value = (
                        own.fed[position] if own is not None else self._filler(config, shape, dtype, position)
                    )
                    values[input_name(number, position)] = value
            outputs = [
                output_name(number, k)
                for number, config in enumerate(batch)
                if ready[id(config)] is not None
                for k, name in enumerate(config.node.output)
                if name
            ]
            prepared[dataset] = ready
            yield Feeds(dataset, values, outputs)

    def _compare_dataset(
        self,
        batch: list[Configuration],
        done: DatasetRun,
        prepared: dict[int, _Prepared | None],
        open_session: OpenSession,
        run: CheckRun,
    ) -> None:
        dataset = done.dataset
        wanted = [c for c in batch if prepared[id(c)] is not None]
        if done.failure is not None:
            run(done)
            exc = done.failure
            if (exc.crashed or exc.bad_output) and len(wanted) > 1:
                for config in wanted:  # pin the crash (or the bad output) to its configuration
                    self._run_batch([config], open_session, run, only=dataset)
                return
            for config in wanted:
                if exc.crashed:
                    config.crashes[dataset] = exc.reason
                else:
                    config.skipped[dataset] = f"{self.subject} failed: {exc.reason}"
            return
        actual = done.outputs or {}
        for number, config in enumerate(batch):
            ready = prepared[id(config)]
            if ready is None:
                continue
            for k, name in enumerate(config.node.output):
                got = actual.get(output_name(number, k))
                if not name or got is None or k >= len(ready.expected) or ready.expected[k] is None:
                    continue
                record = config.records.setdefault(k, OutputRecord(name, k))
                override = self.accuracy.get(config.op_type)
                # describe_received: the dataset's name says what the node was fed
                merge(record, dataset, config.node, k, ready.expected[k], got, ready.inputs, None, override,
                      describe_received=False, abs_sum=ready.abs_sum if k == 0 else None)  # fmt: skip

    def _prepare(self, config: Configuration, dataset: str) -> _Prepared | None:
        """The data and the reference's outputs for one configuration and dataset; None when the dataset
        does not apply or the reference will not run it (the reason is kept in ``skipped``)."""
        if dataset not in self.datasets(config):
            return None
        pattern = dataset.removeprefix(EDGE_PREFIX)
        specific = pattern in edge_values.specific_names(config.op_type)
        variants = ("all",) if specific or len(config.fed) == 1 else ("all", "first")
        refusal = ""
        for variant in variants:
            fed = self._data(config, pattern, variant, specific)
            if fed is None:
                return None
            inputs = config.inputs(fed)
            try:
                expected, abs_sum = reference.run_node_with_abs(
                    config.node, inputs, max_elements=self.max_elements, readings=self.readings
                )
            except reference.ReferenceError as exc:
                rule = getattr(exc, "rule", None)
                if rule is None:
                    config.skipped[dataset] = f"the reference could not run it: {first_line(exc)}"
                    return None
                refusal = f"the data break {rule}, which the profile excludes"
                continue
            return _Prepared(fed, inputs, expected, abs_sum)
        config.skipped[dataset] = f"not run: {refusal}"
        return None

    def _data(
        self, config: Configuration, pattern: str, variant: str, specific: bool
    ) -> dict[int, np.ndarray] | None:
        rng = seeded(self.seed, "node-edges", config.op_type, pattern, variant)
        if specific:
            return edge_values.build_specific(pattern, config.node, config.fed, rng)
        fed = {}
        for number, (position, dtype, shape) in enumerate(config.fed):
            if variant == "first" and number > 0:
                fed[position] = random_array(dtype, shape, rng)
            else:
                fed[position] = edge_array(pattern, dtype, shape, rng, number)
        return fed

    # -- for --export-suite (compare/suite/): a configuration alone, without a session ---------------------
    def lone_model(self, config: Configuration) -> onnx.ModelProto:
        """The configuration as the one node of a model, its held weights decoded (the caller drops them)."""
        self._load_held([config])
        return configurations_model(self.model, [config])

    def reference_data(self, config: Configuration, dataset: str) -> _Prepared | None:
        """Fed data, inputs and reference outputs for one dataset, after ``lone_model``; None: see skipped."""
        return self._prepare(config, dataset)

    # -- reporting --------------------------------------------------------------------------------------
    def compared(self) -> bool:
        """Whether a configuration of the model's verdict was compared (operator-level evidence is not)."""
        return any(c.records for c in self.configurations.values())

    def diverging(self) -> list[Configuration]:
        """The model's configurations that diverge (NODE_SCOPE)."""
        return [c for c in self.configurations.values() if c.status == DIVERGES]

    def operator_diverging(self) -> list[Configuration]:
        return [c for c in self.operator_configurations.values() if c.status == DIVERGES]

    def result(self, version: str | None, in_context: Mapping[int, str]) -> Battery:
        """The battery's record; ``in_context``: for a node the in-context run did not compare, why (the
        battery observes a node's configuration there)."""
        return Battery(
            configurations=tuple(c.result(self.nodes, version) for c in self.configurations.values()),
            nodes=tuple(self.node_accounting(in_context)),
            operator_configurations=tuple(
                c.result(self.nodes, version) for c in self.operator_configurations.values()
            ),
        )

    def node_accounting(self, in_context: Mapping[int, str]) -> list[NodeAccounting]:
        """Every node of the model and what the battery did with it: run alone (the first node of its
        configuration), shared (run as the configuration of an earlier node), or not run and why."""
        where: dict[int, tuple[int, Configuration]] = {}
        for number, config in enumerate(self.configurations.values()):
            for index in config.nodes:
                where[index] = (number, config)
        operator_of: dict[int, int] = {}
        for number, config in enumerate(self.operator_configurations.values()):
            for index in config.nodes:
                operator_of[index] = number
        out: list[NodeAccounting] = []
        for index, node in enumerate(self.nodes):
            entry = NodeAccounting(
                index, node.name, node.op_type, NOT_RUN, operator_configuration=operator_of.get(index)
            )
            if index not in where:
                why = in_context.get(index, "its inputs in context were not all available")
                entry = replace(entry, reason=f"not compared in context: {why}")
            else:
                number, config = where[index]
                entry = replace(entry, configuration=number)
                if config.reason or config.status == NOT_COMPARED:
                    entry = replace(entry, reason=config.reason or _no_dataset(config))
                elif config.nodes[0] == index:
                    entry = replace(entry, edges=RUN_ALONE)
                else:
                    entry = replace(entry, edges=SHARED, shares_with=config.nodes[0])
            out.append(entry)
        return out


def _no_dataset(config: Configuration) -> str:
    if config.skipped:
        dataset, why = next(iter(config.skipped.items()))
        return f"no edge dataset could be compared (first: {dataset}: {why})"
    return "no edge dataset applies to it"


def _value_digest(value: np.ndarray) -> bytes:
    """The SHA-256 of a held value's bytes (its dtype and shape are hashed beside it)."""
    if value.dtype.hasobject:  # strings: their text, not the addresses of Python objects
        return hashlib.sha256(repr(value.tolist()).encode()).digest()
    return hashlib.sha256(np.ascontiguousarray(value).reshape(-1).view(np.uint8)).digest()


def _held_positions(node: onnx.NodeProto, count: int) -> set[int]:
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
