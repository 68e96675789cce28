"""Plan a comparison before anything runs: whether the model can be compared at all, what running it costs,
and which tensors each run exposes (the memory plan's batches) and which end-to-end outputs are compared."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from sonnx_check import reference
from sonnx_check.compare import memory
from sonnx_check.compare.inputs.specs import Dataset
from sonnx_check.compare.judging import bounds as accuracy_module
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import NodeComparison, plan
from sonnx_check.compare.options import CompareOptions
from sonnx_check.compare.revealed_sizes import dataset_sizes
from sonnx_check.compare.run_budget import OverBudget, inferred_sizes, run_budget_problem
from sonnx_check.findings import Finding, Severity
from sonnx_check.profile import profile_operators
from sonnx_check.view import ModelView


@dataclass(frozen=True)
class Refusal:
    """Why a model is not compared at all, and at which stage that was decided."""

    reason: str
    stage: str


def refusal_reason(
    model: onnx.ModelProto,
    options: CompareOptions,
    weight_bytes: int = 0,
    *,
    runtime: str,
    shares: memory.Shares | None = None,
) -> Refusal | None:
    """Why the model is not compared at all, decided before its external weights (``weight_bytes`` of
    them) are read: None when it may be. ``runtime``: how a sentence names the runtime under test;
    ``shares``: the model's ``budget_shares`` when the caller has them.

    A model-local function is never compared: onnxruntime runs a built-in operator of the same name and
    domain instead of the function's body (a default-domain function ``Relu`` whose body is ``Neg`` runs as
    Relu), while onnx's inliner expands the body, so which function the model computes is ambiguous, and a
    comparison of either reading would certify the other. GRAPH.function reports every function."""
    not_text = _name_not_text(model)
    if not_text is not None:
        return Refusal(
            f"the model's {not_text} is not UTF-8 text: ONNX requires UTF-8 strings, and neither "
            f"{runtime} nor the reference can be given it",
            "load",
        )
    if model.functions:
        names = ", ".join(_function_name(f) for f in model.functions[:5])
        more = f" and {len(model.functions) - 5} more" if len(model.functions) > 5 else ""
        return Refusal(
            f"the model defines local functions ({names}{more}): {runtime} may run a built-in operator "
            "instead of a function's body, so what it computes is not the model's function (GRAPH.function)",
            "functions",
        )
    if options.max_memory is not None and weight_bytes > options.max_memory:
        return Refusal(
            f"its external weights ({memory.text(weight_bytes)}) are over --max-memory "
            f"({memory.text(options.max_memory)}); they were not read",
            "budget",
        )
    problem = (shares or budget_shares(model, options)).problem
    if problem is not None:
        return Refusal(problem, "budget")
    return None


def weight_bytes_of(model: onnx.ModelProto) -> int:
    """The bytes of the model's initializers as their shapes declare them (read or not yet read)."""
    return sum(_tensor_bytes(t) for t in model.graph.initializer)


def _tensor_bytes(tensor: onnx.TensorProto) -> int:
    return math.prod(tensor.dims) * _itemsize(tensor.data_type)


def budget_shares(model: onnx.ModelProto, options: CompareOptions) -> memory.Shares:
    """--max-memory split between the runtime's process and sonnx-check, the model's weights counted on both
    sides (no process of the runtime loads the model when its outputs were saved beforehand)."""
    largest = max((_tensor_bytes(t) for t in model.graph.initializer), default=0)
    return memory.shares(options.max_memory, weight_bytes_of(model), options.saved_outputs is None, largest)


def _name_not_text(model: onnx.ModelProto) -> str | None:
    """Which name of the main graph protobuf handed back as bytes (invalid UTF-8), if any: every step of the
    comparison builds protobuf messages from these names, and protobuf refuses bytes that are not UTF-8."""
    graph = model.graph
    if type(graph.name) is not str:
        return f"graph name {_shown(graph.name)}"
    for kind, values in (("input", graph.input), ("output", graph.output), ("value_info", graph.value_info)):
        for value in values:
            if type(value.name) is not str:
                return f"{kind} name {_shown(value.name)}"
    for tensor in graph.initializer:
        if type(tensor.name) is not str:
            return f"initializer name {_shown(tensor.name)}"
    for index, node in enumerate(graph.node):
        names = [node.name, *node.input, *node.output, *(a.name for a in node.attribute)]
        for name in names:
            if type(name) is not str:
                return f"node #{index}'s name or tensor name {_shown(name)}"
    return None


def _shown(value: str | bytes) -> str:
    return repr(value)[1:] if isinstance(value, bytes) else repr(value)


def _function_name(function: onnx.FunctionProto) -> str:
    domain, name = function.domain, function.name
    domain = domain if isinstance(domain, str) else domain.decode("utf-8", "surrogateescape")
    name = name if isinstance(name, str) else name.decode("utf-8", "surrogateescape")
    return f"{domain}::{name}" if domain else name


def over_budget(
    model: onnx.ModelProto,
    view: ModelView,
    datasets: list[Dataset],
    max_elements: int,
    runtime: str,
) -> tuple[OverBudget | None, dict[str, memory.Size]]:
    """The first reason the runtime must not run on some dataset (shapes may differ between files), and the
    size of every tensor (the largest over the datasets) for the memory plan.

    A size the data's values decide (Range's limit read from an input) is learnt dataset by dataset
    (revealed_sizes); one still unknown on some dataset is left out of the sizes, and plan_run leaves the
    nodes that read or compute it uncompared, not the model (so the problem returned is never
    ``size_unknown``)."""
    sizes: dict[str, memory.Size] = {}
    for tensor in model.graph.initializer:
        sizes[tensor.name] = memory.Size(math.prod(tensor.dims), _itemsize(tensor.data_type))
    for dataset in datasets:
        for name, dtype, shape in dataset.inputs:
            _keep_larger(sizes, name, memory.Size(math.prod(shape), dtype.itemsize))
    unknown: dict[str, str] = {}
    skipped: dict[str, OverBudget] = {}
    for signature in sorted({_signature(d) for d in datasets}):
        inferred = inferred_sizes(model, dict(signature))
        problem = run_budget_problem(view, dict(signature), max_elements, inferred, runtime)
        if problem is not None and not problem.size_unknown:
            return problem, sizes
        found = [inferred]
        if problem is not None:  # some size follows from the data's values: each dataset's are learnt
            for dataset in (d for d in datasets if _signature(d) == signature):
                revealed = dataset_sizes(model, view, dataset.name, dataset.feeds, max_elements, runtime)
                if revealed.problem is not None:  # this dataset's values: the others may still run
                    skipped[dataset.name] = revealed.problem
                    continue
                found.append(revealed.sizes)
                for name in revealed.unknown:
                    unknown.setdefault(
                        name, revealed.stopped or f"on dataset '{dataset.name}' it was not learnt"
                    )
        for each in found:
            for name, (elements, itemsize) in each.items():
                _keep_larger(sizes, name, memory.Size(elements, itemsize))
    if skipped and len(skipped) == len(datasets):
        return next(iter(skipped.values())), sizes
    for name in unknown:  # known on one dataset is no bound on another
        sizes.pop(name, None)
    return None, PlannedSizes(sizes, unknown, skipped)


class PlannedSizes(dict[str, memory.Size]):
    """Tensor sizes for the memory plan (over the datasets that run), why each size left out could not be
    learnt (``unknown``), and the datasets not run because their values make a tensor over --max-elements
    (``skipped``: dataset -> why)."""

    def __init__(
        self,
        sizes: Mapping[str, memory.Size],
        unknown: Mapping[str, str],
        skipped: Mapping[str, OverBudget] | None = None,
    ) -> None:
        super().__init__(sizes)
        self.unknown = dict(unknown)
        self.skipped = dict(skipped or {})


@dataclass(frozen=True)
class NotRun:
    """The datasets left out of the runs (their values make a tensor over --max-elements), and the warning
    that names them."""

    finding: Finding
    reasons: Mapping[str, str]  # dataset -> why it is not run


def datasets_not_run(
    sizes: Mapping[str, memory.Size], datasets: list[Dataset], view: ModelView
) -> tuple[list[Dataset], NotRun | None]:
    """The datasets to run, and those left out (planned by over_budget); the other datasets are compared
    as usual."""
    skipped = sizes.skipped if isinstance(sizes, PlannedSizes) else {}
    if not skipped:
        return datasets, None
    first = next(iter(skipped.values()))
    message = (
        f"{len(skipped)} of {len(datasets)} datasets not run (first: {first.reason}); "
        "the other datasets were compared"
    )
    reasons = {name: problem.reason for name, problem in skipped.items()}
    finding = Finding(
        "RUNTIME.not-compared",
        message,
        Severity.WARNING,
        node=view.refs[first.node] if first.node is not None else None,
        data={"stage": "budget", "datasets": dict(reasons)},
    )
    return [d for d in datasets if d.name not in skipped], NotRun(finding, reasons)


def _signature(dataset: Dataset) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple(sorted((name, shape) for name, _, shape in dataset.inputs))


@dataclass
class RunPlan:
    """Which nodes are compared, which tensors each run exposes, and the end-to-end outputs."""

    nodes: list[NodeComparison]
    batches: list[memory.Batch]  # each: the tensors one run of the model exposes, and the nodes they serve
    end_to_end: dict[str, OutputRecord] | None  # None: not compared (``end_to_end_info`` says why)
    end_to_end_info: dict[str, object]
    end_to_end_spare: int | None = None


def plan_run(
    model: onnx.ModelProto,
    view: ModelView,
    datasets: list[Dataset],
    sizes: dict[str, memory.Size],
    max_memory: int | None,
    runtime: str,
    own: int | None = None,
) -> RunPlan:
    """``runtime``: how the records name the runtime under test; ``own``: sonnx-check's share of
    ``max_memory`` beyond the model (budget_shares); None: half of it."""
    nodes = plan(view, reference.supported_ops())
    _leave_unsized(view, nodes, sizes)
    planner = memory.Planner(
        view,
        sizes,
        feeds={name for d in datasets for name, _, _ in d.inputs},
        feeds_bytes=max((d.nbytes for d in datasets), default=0),
        budget=max_memory,
        own=own,
    )
    batches = planner.batches([n for n in nodes if n.has_kernel and not n.reason])
    if not nodes or not all(n.has_kernel for n in nodes):
        missing = sorted({n.op_type for n in nodes if not n.has_kernel})
        why = "the graph has no nodes" if not nodes else f"no reference kernel for {', '.join(missing)}"
        return RunPlan(nodes, batches, None, {"compared": False, "reason": why})
    unsized = [o.name for o in model.graph.output if o.name not in sizes]
    if unsized:
        why = f"the size of graph output '{unsized[0]}' is not known before running (see the nodes' reasons)"
        return RunPlan(nodes, batches, None, {"compared": False, "reason": why})
    fits = planner.end_to_end([o.name for o in model.graph.output])
    if fits.problem is not None:
        return RunPlan(nodes, batches, None, {"compared": False, "reason": fits.problem})
    records = {o.name: OutputRecord(o.name, i, runtime=runtime) for i, o in enumerate(model.graph.output)}
    return RunPlan(nodes, batches, records, {"compared": True}, fits.spare)


def _leave_unsized(view: ModelView, nodes: list[NodeComparison], sizes: Mapping[str, memory.Size]) -> None:
    """A node that reads or computes a tensor whose size was not learnt before running is not compared (its
    memory cannot be planned); the reason says which tensor and why its size stays unknown."""
    why = sizes.unknown if isinstance(sizes, PlannedSizes) else {}
    for entry in nodes:
        if not entry.has_kernel or entry.reason:
            continue
        node = view.nodes[entry.index]
        tensor = next((n for n in (*node.input, *node.output) if n and n not in sizes), None)
        if tensor is None:
            continue
        cause = why.get(tensor) or _unsized_cause(view, sizes, tensor)
        entry.reason = (
            f"the size of tensor '{tensor}' is not known before running: it follows from the data's values, "
            f"which the reference could not compute ({cause}), so its memory cannot be planned"
        )


def _unsized_cause(view: ModelView, sizes: Mapping[str, memory.Size], tensor: str) -> str:
    """For an input of unknown size that no node's record explains: the first node computing one."""
    first = next((i for i, n in enumerate(view.nodes) if any(o and o not in sizes for o in n.output)), None)
    return (
        f"first unknown at {view.refs[first].label()}" if first is not None else f"'{tensor}' is not computed"
    )


def exposed_tensors(run_plan: RunPlan, graph_outputs: list[str]) -> list[str]:
    """Every tensor the comparison reads from the runtime, graph outputs first (in their order): what a model
    written for another runtime exposes (--export-inputs)."""
    names = list(graph_outputs)
    for batch in run_plan.batches:
        names.extend(t for t in batch.tensors if t not in names)
    return list(dict.fromkeys(names))


def all_exact(view: ModelView, indices: set[int]) -> bool:
    operators = profile_operators()
    return all(
        view.nodes[i].op_type in operators
        and operators[view.nodes[i].op_type].accuracy == accuracy_module.EXACT
        for i in indices
    )


def _itemsize(elem_type: int) -> int:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize or 8
    except (KeyError, TypeError, ValueError):
        return 8


def _keep_larger(sizes: dict[str, memory.Size], name: str, size: memory.Size) -> None:
    if name not in sizes or size.nbytes > sizes[name].nbytes:
        sizes[name] = size
