"""The cases of one model's suite, computed by the reference kernels alone (onnxruntime is never run).

- The model case: the model itself on the comparison's datasets, its outputs the reference's end-to-end
  values. An output is judged with its producer's bound when everything upstream of the producer is exact
  (the producer's inputs are then the values a conforming runtime computes too, as ``--compare`` judges
  the node in context); through an inexact operator no bound is defined for the accumulated rounding, and
  the output is written but not judged (``--compare`` reports it as information only). Edge datasets go in
  only when some output is judged (``--compare`` compares them end to end for an exact graph only).
- One case per node configuration of the edge battery (battery.py): the node alone, the model's constants
  held as initializers, on the generic and the operator's own edge datasets, as ``--node-edges`` runs it.

Configurations are observed on the reference's own in-context values (``--compare`` observes them on
onnxruntime's): the same operator, attributes, types, shapes and held constants.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from sonnx_check import reference
from sonnx_check.compare import memory
from sonnx_check.compare.edges.battery import NodeEdges
from sonnx_check.compare.edges.configuration import NODE_SCOPE, Configuration
from sonnx_check.compare.inputs.specs import Dataset
from sonnx_check.compare.localise import ancestors, plan
from sonnx_check.compare.suite.judgement import Judgement, judge_output, not_judged
from sonnx_check.errors import first_line
from sonnx_check.profile import profile_operators
from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.view import ModelView

MODEL_KIND, CONFIGURATION_KIND = "model", "node-configuration"
_FLOAT_TYPES = frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16})


@dataclass
class CaseDataset:
    """One test_data_set: inputs and outputs (graph name, array) in graph order, a judgement per output."""

    name: str
    inputs: list[tuple[str, np.ndarray]]
    outputs: list[tuple[str, np.ndarray]]
    judgements: list[Judgement]


@dataclass
class Case:
    kind: str
    label: str  # what the folder name is made from (untrusted: sanitised by the writer)
    model: onnx.ModelProto  # a configuration's: set when its first dataset is computed
    # computed one at a time as they are read (one dataset's data in memory, as --compare holds it)
    datasets: Iterator[CaseDataset] = field(default_factory=lambda: iter(()))
    skipped: dict[str, str] = field(default_factory=dict)  # dataset -> why it is not in the case (once read)
    about: dict[str, Any] = field(default_factory=dict)  # JSON: what the case is (nodes, configuration)
    evidence_only: bool = False  # operator-level evidence: a failure is not the model's verdict


@dataclass
class SuiteSettings:
    """What the cases depend on (the comparison's own options)."""

    readings: reference.Readings = reference.DEFAULT_READINGS
    seed: int = 0
    max_elements: int = 100_000_000
    max_memory: int | None = None
    accuracy: Mapping[str, str] = field(default_factory=dict)
    node_edges: bool = True


class ModelCases:
    """Walks the model with the reference on each dataset (observing the node configurations), then yields
    the model case and one case per configuration."""

    def __init__(self, model: onnx.ModelProto, datasets: Sequence[Dataset], settings: SuiteSettings) -> None:
        self.model = model
        self.view = ModelView(model)
        self.datasets = list(datasets)
        self.settings = settings
        self.nodes = plan(self.view, reference.supported_ops())
        self.readings = settings.readings
        self.edges = NodeEdges(
            self.view.nodes,
            model,
            seed=settings.seed,
            max_elements=settings.max_elements,
            budget=memory.halves(settings.max_memory)[1],
            accuracy=settings.accuracy,
            readings=self.readings,
        )
        self.judged = {name: self._judged_end_to_end(name) for name in self.view.graph_outputs}
        self._walked = False  # the configurations are observed on the first walk

    # -- the model case ---------------------------------------------------------------------------------
    def model_case(self) -> Case:
        """The model on the comparison's datasets (read it before the configurations: reading it observes
        them)."""
        case = Case(MODEL_KIND, "model", self.model, about={"nodes": len(self.view.nodes)})
        case.datasets = self._model_datasets(case)
        return case

    def _model_datasets(self, case: Case) -> Iterator[CaseDataset]:
        wanted = [d for d in self.datasets if any(self.judged.values()) or not d.name.startswith("edge/")]
        for dataset in self.datasets:
            if dataset not in wanted:
                case.skipped[dataset.name] = (
                    "edge data end to end through inexact operators is not judged (--compare does not "
                    "compare it); the node configurations are"
                )
        if not wanted and self.datasets:
            self._walk(self.datasets[0].feeds)  # the configurations are observed all the same
        for dataset in wanted:
            feeds = dataset.feeds
            outputs, problem = self._walk(feeds)
            if problem is not None:
                case.skipped[dataset.name] = problem
                continue
            names = self.view.graph_outputs
            yield CaseDataset(
                dataset.name,
                [(name, np.asarray(feeds[name])) for name in self._fed_names(feeds)],
                [(name, outputs[name][0]) for name in names],
                [outputs[name][1] for name in names],
            )
            del feeds, outputs

    def _fed_names(self, feeds: Mapping[str, np.ndarray]) -> list[str]:
        """The fed inputs in graph input order (input_K.pb's K)."""
        return [v.name for v in self.model.graph.input if v.name in feeds]

    def _judged_end_to_end(self, name: str) -> bool:
        """Whether a graph output has a bound: everything upstream of its producer is exact."""
        producers = self.view.producers.get(name, [])
        if len(producers) != 1:
            return False
        upstream = ancestors(self.view, name) - {producers[0]}
        return all(self._exact(i) for i in upstream) and self.nodes[producers[0]].has_kernel

    def _exact(self, index: int) -> bool:
        operator = profile_operators().get(self.view.op_types[index])
        return operator is not None and getattr(operator, "accuracy", None) == "exact"

    def _walk(
        self, feeds: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, tuple[np.ndarray, Judgement]], str | None]:
        """Every node the reference can run, in graph order, each value released after its last use; the
        graph outputs with their judgements, or why one could not be computed. Observes configurations."""
        last_use: dict[str, int] = {}
        for index, names in enumerate(self.view.inputs):
            for name in names:
                if name:
                    last_use[name] = index
        outputs = set(self.view.graph_outputs)
        values: dict[str, np.ndarray] = {k: np.asarray(v) for k, v in feeds.items()}
        found: dict[str, tuple[np.ndarray, Judgement]] = {}
        problem: str | None = None
        stand_ins: set[str] = set()  # values standing in for what a node without a kernel computes
        self._walked = True
        for index, node in enumerate(self.view.nodes):
            entry = self.nodes[index]
            if not entry.has_kernel or entry.reason:
                continue
            try:
                inputs = self._inputs(index, values, stand_ins)
                if inputs is None:
                    continue
                results = reference.run_node(
                    node, inputs, max_elements=self.settings.max_elements, readings=self.readings
                )
            except reference.ReferenceError as exc:
                problem = (
                    problem
                    or f"the reference could not run node #{index} ({node.op_type}): {first_line(exc)}"
                )
                continue
            standing_in = [n for n in self.view.inputs[index] if n in stand_ins]
            if self.settings.node_edges and _observable(self.view, standing_in):
                self.edges.observe(index, inputs, list(results))
            for position, name in enumerate(self.view.outputs[index]):
                if not name or position >= len(results) or results[position] is None:
                    continue
                value = np.asarray(results[position])
                if standing_in:
                    stand_ins.add(name)  # computed from a stand-in: its shape holds, its values do not
                elif name in outputs:
                    found[name] = (value, self._end_to_end_judgement(name, node, inputs, value))
                if last_use.get(name, -1) > index:
                    values[name] = value
            for name in [n for n in values if last_use.get(n, -1) <= index and n not in feeds]:
                del values[name]
        missing = [name for name in self.view.graph_outputs if name not in found]
        if missing and problem is None:
            reasons = sorted({n.not_compared_reason() for n in self.nodes if not n.has_kernel or n.reason})
            problem = (
                "the reference computes no value for graph output(s) "
                + ", ".join(f"'{m}'" for m in missing)
                + (f" ({reasons[0]})" if reasons else "")
            )
        return found, problem if missing else None

    def _inputs(
        self, index: int, values: dict[str, np.ndarray], stand_ins: set[str]
    ) -> list[np.ndarray | None] | None:
        """The node's input values; a value no kernel computed is stood in for by zeros of its inferred type
        and shape (None when inference has none), so the configurations downstream are still observed."""
        inputs: list[np.ndarray | None] = []
        for name in self.view.inputs[index]:
            if not name:
                inputs.append(None)
            elif name in values:
                inputs.append(values[name])
            elif name in self.view.initializers:
                tensor = self.view.initializers[name]
                ensure_within_budget(f"initializer '{name}'", tensor.dims, self.settings.max_elements)
                values[name] = numpy_helper.to_array(tensor)
                inputs.append(values[name])
            else:
                stand_in = _stand_in(self.view, name, self.settings.max_elements)
                if stand_in is None:
                    return None  # produced by a node the reference did not run, of unknown shape
                values[name] = stand_in
                stand_ins.add(name)
                inputs.append(stand_in)
        return inputs

    def _end_to_end_judgement(
        self, name: str, node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], value: np.ndarray
    ) -> Judgement:
        if not self.judged[name]:
            return not_judged(
                "end to end through inexact operators: no bound is defined for the accumulated rounding "
                "(--compare reports it as information); the node configurations are judged"
            )
        override = self.settings.accuracy.get(node.op_type)
        return judge_output(node, inputs, value, override, self.settings.readings)

    # -- the configuration cases ------------------------------------------------------------------------
    def configuration_cases(self) -> Iterator[Case]:
        """One case per configuration of the battery (the model's own first, then operator-level evidence),
        computed one at a time (only one case's data is held)."""
        if not self._walked and self.datasets:
            self._walk(self.datasets[0].feeds)  # the model case was not read: observe them here
        every = (*self.edges.configurations.values(), *self.edges.operator_configurations.values())
        for config in every:
            yield self._configuration_case(config)

    def _configuration_case(self, config: Configuration) -> Case:
        about = {
            "op_type": config.op_type,
            "scope": config.scope,
            "configuration": config.digest,
            "nodes": [{"index": i, "name": self.view.nodes[i].name} for i in config.nodes],
        }
        evidence = config.scope != NODE_SCOPE
        label = f"{config.op_type}_{config.digest}" + ("_operator" if evidence else "")
        case = Case(CONFIGURATION_KIND, label, onnx.ModelProto(), about=about, evidence_only=evidence)
        if config.reason:
            case.skipped["*"] = config.reason
        else:
            case.datasets = self._configuration_datasets(config, case)
        return case

    def _configuration_datasets(self, config: Configuration, case: Case) -> Iterator[CaseDataset]:
        override = self.settings.accuracy.get(config.op_type)
        lone = self.edges.lone_model(config)
        try:
            produced: list[int] | None = None
            for dataset in self.edges.datasets(config):
                data = self.edges.reference_data(config, dataset)
                if data is None:
                    case.skipped[dataset] = config.skipped.get(dataset, "does not apply")
                    continue
                fed, inputs, expected = data.fed, data.inputs, data.expected
                available = [
                    k
                    for k, name in enumerate(config.node.output)
                    if name and k < len(expected) and expected[k] is not None
                ]
                if produced is None:
                    produced = available
                elif available != produced:
                    case.skipped[dataset] = "the reference computed other optional outputs on this dataset"
                    continue
                outputs = [(f"c0_out{k}", np.asarray(expected[k])) for k in produced]
                if not len(case.model.graph.node):
                    case.model = _typed(lone, outputs)
                yield CaseDataset(
                    dataset,
                    [(f"c0_in{position}", fed[position]) for position, _, _ in config.fed],
                    outputs,
                    [
                        judge_output(config.node, inputs, value, override, self.settings.readings)
                        for _, value in outputs
                    ],
                )
                del data, fed, inputs, expected
        finally:
            for position in config.held_from:  # the weights go with the case
                config.held.pop(position, None)


def _stand_in(view: ModelView, name: str, max_elements: int) -> np.ndarray | None:
    """Zeros of ``name``'s inferred type and shape, standing in for a value no kernel computed (None when
    inference has none, or it is over ``max_elements``)."""
    inferred = view.inferred.get(name)
    if inferred is None or inferred.static_shape is None or inferred.elem_type == 0:
        return None
    if math.prod(inferred.static_shape) > max_elements:
        return None
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(inferred.elem_type))
    except (KeyError, TypeError, ValueError):
        return None
    return np.zeros(inferred.static_shape, dtype=dtype)


def _observable(view: ModelView, standing_in: Sequence[str]) -> bool:
    """A configuration is keyed by its inputs' types and shapes and by the values of its constants and
    integer parameters: a stand-in may feed a float data input (edge values replace it), never one
    whose value is part of the key."""
    for name in standing_in:
        inferred = view.inferred.get(name)
        if inferred is None or inferred.elem_type not in _FLOAT_TYPES:
            return False
    return True


def _typed(model: onnx.ModelProto, outputs: Sequence[tuple[str, np.ndarray]]) -> onnx.ModelProto:
    """The lone model with only the outputs the reference computed as graph outputs, each declared with its
    type and shape: backend test runners read an output file by its declared type."""
    del model.graph.output[:]
    for name, value in outputs:
        element = helper.np_dtype_to_tensor_dtype(value.dtype)
        model.graph.output.append(helper.make_tensor_value_info(name, element, list(value.shape)))
    return model
