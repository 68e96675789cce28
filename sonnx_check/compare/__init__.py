"""``--compare``: run the model in onnxruntime and in the SONNX reference kernels; report where they differ.

The flow: load the model with its weights, build the input datasets, run onnxruntime twice (the unmodified
model for the end-to-end outputs, and a copy exposing every intermediate tensor for per-node localisation),
re-run every node that has a reference kernel on onnxruntime's own inputs for that node, diff, attach known
onnxruntime behaviours, and turn the result into RUNTIME.* findings plus a JSON-ready ``comparison`` dict.

Policy: a comparison that could not run is reported (RUNTIME.not-compared), never counted as a pass; a known
onnxruntime divergence is explained, never forgiven.

onnxruntime is imported only by ``runtime`` and only once a comparison starts, so importing this package is
cheap and a static check never loads it.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from sonnx_check import reference
from sonnx_check import settings as declared
from sonnx_check.compare import accuracy as accuracy_module
from sonnx_check.compare import memory, runtime
from sonnx_check.compare.aggregate import OutputRecord
from sonnx_check.compare.battery import OPERATOR_SCOPE, Configuration, NodeEdges
from sonnx_check.compare.datasets import Dataset, InputBudgetExceeded, build_datasets, input_specs
from sonnx_check.compare.localise import (
    DIVERGES,
    NOT_COMPARED,
    NodeComparison,
    ancestors,
    compare_nodes,
    merge,
    node_inputs,
    plan,
)
from sonnx_check.compare.run_budget import OverBudget, inferred_sizes, run_budget_problem
from sonnx_check.compare.stream import run_graph
from sonnx_check.errors import UsageError, first_line
from sonnx_check.findings import Finding, NodeRef, Severity
from sonnx_check.loading import load_model
from sonnx_check.profile import profile_operators
from sonnx_check.reference import nan_policy
from sonnx_check.view import ModelView

DIVERGENCE = "RUNTIME.divergence"
NOT_COMPARED_RULE = "RUNTIME.not-compared"

DEFAULT_TIMEOUT = 300.0
DEFAULT_MAX_MEMORY = memory.DEFAULT_MAX_MEMORY

__all__ = ["CompareOptions", "CompareResult", "compare_model", "compare_loaded"]


@dataclass(frozen=True)
class CompareOptions:
    # model-level inputs: "random", "edge", or a path to .npz / test_data_set folder
    datasets: tuple[str, ...] = ("random",)
    node_edges: bool = True  # each distinct node configuration also run alone on edge values (battery.py)
    maxpool_nan: str = nan_policy.NAN_AS_NEGATIVE_INFINITY  # the MaxPool NaN reading (nan_policy.py)
    seed: int = 0
    ort_opt_level: str = "default"
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    max_elements: int = 100_000_000
    timeout: float | None = DEFAULT_TIMEOUT  # seconds onnxruntime may run per model (None: no limit)
    # bytes one model's comparison may use beyond the model itself, onnxruntime's worker and sonnx-check's
    # side each getting half (compare/memory.py); None: no limit
    max_memory: int | None = DEFAULT_MAX_MEMORY
    # per operator, a bound tighter than its annex's ("2 ulp", "1e-6 rel", "1e-9 abs"): compare/accuracy.py
    accuracy: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        problem = declared.compare_problem(self)  # each option's check, declared with it (settings.py)
        if problem is not None:
            raise UsageError(problem)
        for op_type, bound in self.accuracy.items():
            try:
                accuracy_module.check_override(op_type, accuracy_module.parse_override(bound))
            except accuracy_module.AccuracyError as exc:
                raise UsageError(f"compare.accuracy.{op_type}: {exc}") from None


@dataclass
class CompareResult:
    findings: list[Finding]
    comparison: dict[str, Any]


def compare_model(path: Path, options: CompareOptions) -> CompareResult:
    """Compare one model file. Raises UsageError for bad options or input data and ModelLoadError when the
    model or its weights cannot be read; everything about the runtime itself is a finding."""
    model = load_model(path, load_weights=True)
    return compare_loaded(model, options)


def compare_loaded(model: onnx.ModelProto, options: CompareOptions) -> CompareResult:
    """Compare a model already in memory (with its weights)."""
    refused = refusal(model, options)
    if refused is not None:
        return refused
    return _Comparison(model, options).run()


def refusal(model: onnx.ModelProto, options: CompareOptions, weight_bytes: int = 0) -> CompareResult | None:
    """Why the model is not compared at all, decided before its external weights (``weight_bytes`` of
    them) are read: None when it may be.

    A model-local function is never compared: onnxruntime runs a built-in operator of the same name and
    domain instead of the function's body (a default-domain function ``Relu`` whose body is ``Neg`` runs as
    Relu), while onnx's inliner expands the body, so which function the model computes is ambiguous, and a
    comparison of either reading would certify the other. GRAPH.function reports every function."""
    reason = None
    not_text = _name_not_text(model)
    if not_text is not None:
        reason = (
            f"the model's {not_text} is not UTF-8 text: ONNX requires UTF-8 strings, and neither onnxruntime "
            "nor the reference can be given it"
        )
        stage = "load"
    elif model.functions:
        names = ", ".join(_function_name(f) for f in model.functions[:5])
        more = f" and {len(model.functions) - 5} more" if len(model.functions) > 5 else ""
        reason = (
            f"the model defines local functions ({names}{more}): onnxruntime may run a built-in operator "
            "instead of a function's body, so what it computes is not the model's function (GRAPH.function)"
        )
        stage = "functions"
    elif options.max_memory is not None and weight_bytes > options.max_memory:
        reason = (
            f"its external weights ({memory.text(weight_bytes)}) are over --max-memory "
            f"({memory.text(options.max_memory)}); they were not read"
        )
        stage = "budget"
    if reason is None:
        return None
    return _Comparison(model, options)._nothing_compared(reason, {"stage": stage})


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


_STOPPED_BEFORE = "onnxruntime was stopped by the time limit (--timeout) before it was compared"


class _Stopped(Exception):
    """The comparison's time limit ran out: onnxruntime's worker was killed and nothing more is run."""

    def __init__(self, refusal: runtime.RuntimeRefusal, dataset: str | None = None) -> None:
        self.refusal = refusal
        self.dataset = dataset
        super().__init__(refusal.reason)


class _Comparison:
    """One comparison run; kept as an object only to share its state between the steps."""

    def __init__(self, model: onnx.ModelProto, options: CompareOptions) -> None:
        self.model = model
        self.options = options
        self.readings = nan_policy.Readings(maxpool_nan=options.maxpool_nan)
        self.view = ModelView(model)
        self.findings: list[Finding] = []
        self.version: str | None = runtime.installed_version()
        self.worker_budget, _ = memory.halves(options.max_memory)
        self.deadline: float | None = None
        self.stopped: _Stopped | None = None
        self.end_to_end_spare: int | None = None
        self.sizes: dict[str, memory.Size] = {}
        self.edges: NodeEdges | None = None
        self.host = runtime.SessionHost(self.worker_budget)  # started on the first session
        self.comparison: dict[str, Any] = {
            "status": NOT_COMPARED,
            "onnxruntime": runtime.describe_unavailable(options.ort_opt_level),
            "reference": {
                "operators": sorted(reference.supported_ops()),
                # a reading of the specification the user chose (or the default): every report carries it
                "maxpool_nan": options.maxpool_nan,
                "maxpool_nan_reading": nan_policy.READINGS[options.maxpool_nan],
            },
            "datasets": [],
            "nodes": [],
            "outputs": [],
            "not_compared": [],
        }

    # -- the steps --------------------------------------------------------------------------------------
    def run(self) -> CompareResult:
        specs = input_specs(self.model, self.options.shapes)
        feedable = [v.name for v in self.model.graph.input]
        try:
            datasets = build_datasets(
                self.options.datasets,
                specs,
                seed=self.options.seed,
                max_elements=self.options.max_elements,
                feedable=feedable,
            )
        except InputBudgetExceeded as exc:
            return self._nothing_compared(f"input data over budget: {exc}", {"stage": "inputs"})
        self.comparison["datasets"] = [d.to_json() for d in datasets]
        problem, self.sizes = self._over_budget(datasets)
        if problem is not None and not problem.size_unknown:
            return self._not_run(problem)
        if self.options.timeout is not None:
            self.deadline = time.monotonic() + self.options.timeout
        try:
            return self._run_sessions(datasets, problem)
        finally:
            self.host.close()

    def _run_sessions(self, datasets: list[Dataset], problem: OverBudget | None) -> CompareResult:
        try:
            self.host.set_base(self.model)
            plain = self._session(None)
        except runtime.RuntimeUnavailable as exc:
            return self._nothing_compared(str(exc), {"stage": "import"})
        except _Stopped as exc:
            return self._nothing_compared(self._stop_message(exc), {"stage": "timeout"})
        except runtime.RuntimeRefusal as exc:
            return self._refused(exc)
        self.version = plain.version
        self.comparison["onnxruntime"] = plain.info.to_json()
        if problem is not None:  # onnxruntime accepts the model, but what running it costs is unknown
            plain.close()
            return self._not_run(problem)

        nodes = plan(self.view, reference.supported_ops())
        planner = memory.Planner(
            self.view,
            self.sizes,
            feeds={name for d in datasets for name, _, _ in d.inputs},
            feeds_bytes=max((d.nbytes for d in datasets), default=0),
            budget=self.options.max_memory,
        )
        end_to_end = self._end_to_end_records(nodes, planner)
        batches = planner.batches([n for n in nodes if n.has_kernel and not n.reason])
        failed: dict[str, str] = {}
        if self.options.node_edges:
            self.edges = NodeEdges(
                self.view.nodes,
                self.model,
                seed=self.options.seed,
                max_elements=self.options.max_elements,
                budget=memory.halves(self.options.max_memory)[1],
                accuracy=self.options.accuracy,
                readings=self.readings,
            )
        try:
            try:
                batches = self._plain_pass(plain, datasets, batches, end_to_end, failed)
            finally:
                plain.close()  # one session at a time: the memory budget counts one
            for batch in batches:
                self._batch_pass(batch, datasets, failed)
            if self.edges is not None:
                self.edges.run(self._session, self._run)
        except _Stopped as exc:
            self.stopped = exc
        return self._finish(datasets, nodes, end_to_end, failed)

    def _over_budget(self, datasets: list[Dataset]) -> tuple[OverBudget | None, dict[str, memory.Size]]:
        """The first reason onnxruntime must not run on some dataset (shapes may differ between files), and
        the size of every tensor (the largest over the datasets) for the memory plan."""
        sizes: dict[str, memory.Size] = {}
        for tensor in self.model.graph.initializer:
            sizes[tensor.name] = memory.Size(math.prod(tensor.dims), _itemsize(tensor.data_type))
        signatures = {tuple(sorted((name, shape) for name, _, shape in d.inputs)) for d in datasets}
        for dataset in datasets:
            for name, dtype, shape in dataset.inputs:
                _keep_larger(sizes, name, memory.Size(math.prod(shape), dtype.itemsize))
        for signature in sorted(signatures):
            inferred = inferred_sizes(self.model, dict(signature))
            problem = run_budget_problem(self.view, dict(signature), self.options.max_elements, inferred)
            if problem is not None:
                return problem, sizes
            for name, (elements, itemsize) in inferred.items():
                _keep_larger(sizes, name, memory.Size(elements, itemsize))
        return None, sizes

    def _session(self, model: onnx.ModelProto | None, outputs: list[str] | None = None) -> runtime.OrtSession:
        """A session in the comparison's one worker: on ``model``, or (None) on the model under comparison
        with ``outputs`` as its graph outputs (built in the worker from the copy it already holds)."""
        try:
            return runtime.OrtSession(
                model,
                self.options.ort_opt_level,
                deadline=self.deadline,
                memory_budget=self.worker_budget,
                host=self.host,
                outputs=outputs,
            )
        except runtime.RuntimeRefusal as exc:
            if exc.timed_out:
                raise _Stopped(exc) from None
            raise

    def _run(
        self, session: runtime.OrtSession, feeds: Mapping[str, Any], names: list[str] | None, dataset: str
    ) -> dict[str, Any]:
        try:
            return session.run(feeds, names)
        except runtime.RuntimeRefusal as exc:
            if exc.timed_out:
                raise _Stopped(exc, dataset) from None
            raise

    def _end_to_end_records(
        self, nodes: list[NodeComparison], planner: memory.Planner
    ) -> dict[str, OutputRecord] | None:
        if not nodes or not all(n.has_kernel for n in nodes):
            missing = sorted({n.op_type for n in nodes if not n.has_kernel})
            why = "the graph has no nodes" if not nodes else f"no reference kernel for {', '.join(missing)}"
            self.comparison["end_to_end"] = {"compared": False, "reason": why}
            return None
        fits = planner.end_to_end([o.name for o in self.model.graph.output])
        if fits.problem is not None:
            self.comparison["end_to_end"] = {"compared": False, "reason": fits.problem}
            return None
        self.end_to_end_spare = fits.spare
        self.comparison["end_to_end"] = {"compared": True}
        return {o.name: OutputRecord(o.name, i) for i, o in enumerate(self.model.graph.output)}

    def _plain_pass(
        self,
        plain: runtime.OrtSession,
        datasets: list[Dataset],
        batches: list[memory.Batch],
        end_to_end: dict[str, OutputRecord] | None,
        failed: dict[str, str],
    ) -> list[memory.Batch]:
        """Run the unmodified model on every dataset, one dataset in memory at a time: the end-to-end
        outputs, and the nodes' tensors too when they all are graph outputs already (no second session).
        Returns the batches still to run."""
        outputs = self.view.graph_outputs
        serves = len(batches) == 1 and set(batches[0].tensors) <= set(outputs)
        wanted = set(end_to_end or ()) | (set(batches[0].tensors) if serves else set())
        names: list[str] | None = [n for n in outputs if n in wanted] or self._smallest_output()
        for dataset in datasets:
            feeds = dataset.feeds
            try:
                actual = self._run(plain, feeds, names, dataset.name)
            except runtime.RuntimeRefusal as exc:
                failed[dataset.name] = exc.reason
                del feeds  # the next dataset is built only once this one is gone
                continue
            if serves:
                self._compare_batch(batches[0], feeds, actual, dataset)
            if end_to_end is not None and self._end_to_end_wanted(dataset):
                self._compare_end_to_end(dataset, feeds, actual, end_to_end)
            del actual, feeds
        return batches[1:] if serves else batches

    def _end_to_end_wanted(self, dataset: Dataset) -> bool:
        """End to end, an edge dataset only tells something about an all-exact graph (a fusion the node by
        node run did not see); through inexact operators it is information at the cost of a second reference
        run of the whole graph on every edge dataset, and the nodes get their edge values each."""
        return not dataset.name.startswith("edge/") or self._all_exact(set(range(len(self.view.nodes))))

    def _smallest_output(self) -> list[str] | None:
        """When no graph output is compared, onnxruntime still runs the model (a run-time failure is a
        finding), but returns only its smallest output."""
        outputs = self.view.graph_outputs
        if not outputs:
            return None
        unknown = memory.Size(2**62, 1)
        return [min(outputs, key=lambda name: self.sizes.get(name, unknown).nbytes)]

    def _batch_pass(self, batch: memory.Batch, datasets: list[Dataset], failed: dict[str, str]) -> None:
        """Run a copy of the model that returns one batch's tensors, compare them dataset by dataset, and
        let them go before the next batch."""
        try:
            session = self._session(None, outputs=list(batch.tensors))
        except runtime.RuntimeRefusal as exc:
            for entry in batch.entries:
                entry.reason = f"onnxruntime refused the model with intermediates exposed: {exc.reason}"
            return
        try:
            for dataset in datasets:
                if dataset.name in failed:
                    continue  # the unmodified model already failed on it: that is the finding
                feeds = dataset.feeds
                try:
                    values = self._run(session, feeds, batch.tensors, dataset.name)
                except runtime.RuntimeRefusal as exc:
                    for entry in batch.entries:
                        entry.failures.setdefault(
                            dataset.name, f"onnxruntime failed with intermediates exposed: {exc.reason}"
                        )
                    del feeds
                    continue
                self._compare_batch(batch, feeds, values, dataset)
                del values, feeds
        finally:
            session.close()

    def _compare_batch(
        self, batch: memory.Batch, feeds: Mapping[str, Any], actual: Mapping[str, Any], dataset: Dataset
    ) -> None:
        values = {**self._weights(batch), **feeds, **actual}
        compare_nodes(
            self.view,
            batch.entries,
            values,
            dataset.name,
            max_elements=self.options.max_elements,
            spare=batch.spare,
            accuracy=self.options.accuracy,
            readings=self.readings,
        )
        if self.edges is not None:
            for entry in batch.entries:
                if entry.records:
                    node = self.view.nodes[entry.index]
                    inputs, missing = node_inputs(node, values)
                    if not missing:
                        self.edges.observe(entry.index, inputs, [values.get(n) for n in node.output])

    def _weights(self, batch: memory.Batch) -> dict[str, Any]:
        """The initializers the batch's nodes read, decoded for this dataset only (memory.Planner counts
        them with the batch)."""
        wanted = {name for entry in batch.entries for name in self.view.nodes[entry.index].input if name}
        return {t.name: numpy_helper.to_array(t) for t in self.model.graph.initializer if t.name in wanted}

    def _compare_end_to_end(
        self,
        dataset: Dataset,
        feeds: Mapping[str, Any],
        actual: Mapping[str, Any],
        records: dict[str, OutputRecord],
    ) -> None:
        def compare_output(node: onnx.NodeProto, position: int, expected: Any, inputs: Any) -> None:
            name = node.output[position]
            if name in actual:
                merge(records[name], dataset.name, node, position, expected, actual[name], inputs, spare)

        spare = self.end_to_end_spare
        try:
            run_graph(
                self.model,
                feeds,
                set(records),
                compare_output,
                max_elements=self.options.max_elements,
                readings=self.readings,
            )
        except reference.ReferenceError as exc:
            self.comparison["end_to_end"].setdefault("failures", {})[dataset.name] = first_line(exc)

    # -- turning results into findings ------------------------------------------------------------------
    def _finish(
        self,
        datasets: list[Dataset],
        nodes: list[NodeComparison],
        end_to_end: dict[str, OutputRecord] | None,
        failed: dict[str, str],
    ) -> CompareResult:
        for entry in self.comparison["datasets"]:
            if entry["name"] in failed:
                entry["status"], entry["error"] = "failed", failed[entry["name"]]
            else:
                entry["status"] = "ok"
        compared_anything = (
            any(n.records for n in nodes)
            or any(r.datasets for r in (end_to_end or {}).values())
            or (self.edges is not None and self.edges.compared())
        )
        if failed:
            self._dataset_failures(datasets, failed, compared_anything)
        if self.stopped is not None:
            self._timeout_finding(nodes, compared_anything)

        diverging = set()
        for entry in nodes:
            for record in entry.records.values():
                if record.diverges:
                    diverging.add(entry.index)
                    self.findings.append(self._divergence(entry.index, record, "node"))
        self._edge_findings(nodes)
        if end_to_end is not None:
            self.comparison["outputs"] = [r.to_json(self.version) for r in end_to_end.values()]
            for name, record in end_to_end.items():
                upstream = ancestors(self.view, name)
                # End to end, rounding differences of inexact operators add up with no bound defined for the
                # sum: information (the JSON and the table), never a finding. Only an all-exact chain that
                # diverges with none of its nodes diverging (a fusion the node-by-node run did not see) is.
                if record.diverges and not (upstream & diverging) and self._all_exact(upstream):
                    producer = self.view.producers.get(name, [])
                    self.findings.append(
                        self._divergence(producer[0] if producer else None, record, "end-to-end")
                    )

        if failed and len(failed) == len(datasets):
            # onnxruntime produced nothing: that finding says it all, the nodes need no finding of their own
            for entry in nodes:
                if entry.has_kernel and not entry.reason:
                    entry.reason = "onnxruntime failed at run time on every dataset"
        self.comparison["nodes"] = [n.to_json(self.version) for n in nodes]
        self._not_compared_nodes(nodes, compared_anything, silent=set(failed) == {d.name for d in datasets})
        self._data_violations(nodes)
        self.comparison["status"] = self._status(nodes, end_to_end, failed, compared_anything)
        self.findings.sort(key=lambda f: (f.node.index if f.node else -1, f.rule))
        return CompareResult(self.findings, self.comparison)

    def _edge_findings(self, nodes: list[NodeComparison]) -> None:
        """The node edge battery: one finding per diverging output of a configuration, naming its nodes.
        A configuration with the model's constants held is the model's verdict (an error); one with edge
        values on those constants too is operator-level evidence about onnxruntime (info, never failing)."""
        if self.edges is None:
            self.comparison["node_edges"] = {"enabled": False}
            return
        in_context = {n.index: n.not_compared_reason() for n in nodes if n.status == NOT_COMPARED}
        accounting = self.edges.node_accounting(in_context)
        self.comparison["node_edges"] = self.edges.to_json(self.version, accounting)
        for config in (*self.edges.diverging(), *self.edges.operator_diverging()):
            self._configuration_findings(config)

    def _configuration_findings(self, config: Configuration) -> None:
        where = self._configuration_text(config)
        operator = config.scope == OPERATOR_SCOPE
        severity = Severity.INFO if operator else Severity.ERROR
        lead = (
            "operator-level evidence about onnxruntime, not a finding against this model (edge values on "
            "the parameters the model fixes too): "
            if operator
            else ""
        )
        for record in config.records.values():
            if record.diverges:
                finding = self._divergence(config.nodes[0], record, config.scope)
                finding.data["configuration"] = self._configuration_json(config)
                message = f"{lead}{record.message('output')}; {where}"
                self.findings.append(replace(finding, message=message, severity=severity))
        if config.crashes:
            dataset, how = next(iter(config.crashes.items()))
            more = f" and {len(config.crashes) - 1} other dataset(s)" if len(config.crashes) > 1 else ""
            self.findings.append(
                Finding(
                    DIVERGENCE,
                    f"{lead}onnxruntime did not finish on dataset {dataset}{more}: {how}; the specification "
                    f"defines a result for these inputs (the reference computed it); {where}",
                    severity,
                    node=self.view.refs[config.nodes[0]],
                    data={
                        "scope": config.scope,
                        "crash": how,
                        "datasets": sorted(config.crashes),
                        "configuration": self._configuration_json(config),
                        "onnxruntime": self.comparison["onnxruntime"],
                    },
                )
            )

    def _configuration_text(self, config: Configuration) -> str:
        names = [f"'{self.view.nodes[i].name}'" if self.view.nodes[i].name else f"#{i}" for i in config.nodes]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        values = (
            "edge values on every input but its integer parameters"
            if config.scope == OPERATOR_SCOPE
            else "edge values" + (" (the model's constants held)" if config.constants else "")
        )
        return f"{config.op_type} run alone on {values}, configuration of {len(names)} node(s): {shown}"

    def _configuration_json(self, config: Configuration) -> dict[str, Any]:
        described = config.to_json(self.view.nodes, self.version)
        return {k: described[k] for k in ("scope", "key", "op_type", "attributes", "inputs", "nodes")}

    def _timeout_finding(self, nodes: list[NodeComparison], compared_anything: bool) -> None:
        assert self.stopped is not None
        message = self._stop_message(self.stopped)
        message += (
            "; what was compared before is reported, the rest was not run"
            if compared_anything
            else "; nothing was compared"
        )
        for entry in nodes:
            if entry.has_kernel and not entry.reason and not entry.records:
                entry.reason = _STOPPED_BEFORE
        self.comparison["stopped"] = {"timeout": self.options.timeout, "dataset": self.stopped.dataset}
        self.findings.append(
            Finding(
                NOT_COMPARED_RULE,
                message,
                Severity.ERROR,
                data={
                    "stage": "timeout",
                    "timeout": self.options.timeout,
                    "onnxruntime": self.comparison["onnxruntime"],
                },
            )
        )

    def _stop_message(self, stopped: _Stopped) -> str:
        what = runtime.STAGES.get(stopped.refusal.stage, stopped.refusal.stage)
        where = f" on dataset {stopped.dataset}" if stopped.dataset else ""
        return f"onnxruntime was stopped at the --timeout of {self.options.timeout:g} s while {what}{where}"

    def _divergence(self, index: int | None, record: OutputRecord, scope: str) -> Finding:
        ref = self.view.refs[index] if index is not None else None
        label = "output" if scope == "node" else "end-to-end output"
        data = {"scope": scope, "onnxruntime": self.comparison["onnxruntime"], **record.to_json(self.version)}
        return Finding(
            DIVERGENCE,
            record.message(label),
            Severity.ERROR,
            node=ref,
            tensor=record.name,
            actual=record.first.actual if record.first else None,
            expected=record.first.expected if record.first else None,
            data=data,
        )

    def _dataset_failures(
        self, datasets: list[Dataset], failed: dict[str, str], compared_anything: bool
    ) -> None:
        first, reason = next(iter(failed.items()))
        everything = len(failed) == len(datasets)
        scope = "every dataset" if everything else f"{len(failed)} of {len(datasets)} datasets"
        message = f"onnxruntime failed at run time on {scope} (first: {first}): {reason}"
        if not everything:
            message += "; the other datasets were compared"
        severity = Severity.ERROR if everything or not compared_anything else Severity.WARNING
        self.findings.append(
            Finding(
                NOT_COMPARED_RULE,
                message,
                severity,
                node=self._node_named_in(reason),
                data={
                    "stage": "run",
                    "datasets": dict(failed),
                    "onnxruntime": self.comparison["onnxruntime"],
                },
            )
        )

    def _all_exact(self, indices: set[int]) -> bool:
        operators = profile_operators()
        return all(
            self.view.nodes[i].op_type in operators
            and operators[self.view.nodes[i].op_type].accuracy == accuracy_module.EXACT
            for i in indices
        )

    def _data_violations(self, nodes: list[NodeComparison]) -> None:
        """A data constraint the actual data break (integer Div by zero, a negative variance, ...): reported
        under the constraint's own rule ID, as the static check does for a constant tensor."""
        for entry in nodes:
            for rule, (dataset, why) in entry.data_violations.items():
                self.findings.append(
                    Finding(
                        rule,
                        f"on the data of dataset {dataset}: {why}",
                        Severity.ERROR,
                        node=self.view.refs[entry.index],
                        data={"dataset": dataset, "stage": "compare"},
                    )
                )

    def _not_compared_nodes(self, nodes: list[NodeComparison], compared_anything: bool, silent: bool) -> None:
        """One warning per operator type whose nodes were (wholly or partly) not compared; an error when
        nothing in the model could be compared. ``silent``: onnxruntime failed on every dataset, which is
        already a finding, so nodes with a kernel are listed but get no finding of their own."""
        by_op: dict[str, list[NodeComparison]] = {}
        for entry in nodes:
            partial = entry.status != NOT_COMPARED and entry.failures
            if entry.status == NOT_COMPARED or partial:
                # the timeout's own finding covers the nodes it left out
                if not (silent and entry.has_kernel) and entry.reason != _STOPPED_BEFORE:
                    by_op.setdefault(entry.op_type, []).append(entry)
                self.comparison["not_compared"].append(
                    {
                        "index": entry.index,
                        "name": entry.name,
                        "op_type": entry.op_type,
                        "reason": entry.not_compared_reason(),
                        "partial": bool(partial),
                    }
                )
        if not by_op:
            return
        # One finding per model. Its severity goes with its sentence: nodes left out of a comparison that
        # compared others are a gap in coverage (a warning); a comparison that compared nothing is an error.
        parts, total = [], 0
        for op_type, entries in sorted(by_op.items()):
            total += len(entries)
            reasons = sorted({e.not_compared_reason() for e in entries})
            whole = [e for e in entries if e.status == NOT_COMPARED]
            partly = "" if len(whole) == len(entries) else ", partly"
            more = f" (and {len(reasons) - 1} other reason(s))" if len(reasons) > 1 else ""
            parts.append(f"{op_type} {len(entries)}{partly}: {reasons[0]}{more}")
        scope = "no node could be compared" if not compared_anything else f"{total} node(s) not compared"
        self.findings.append(
            Finding(
                NOT_COMPARED_RULE,
                f"{scope}: " + "; ".join(parts),
                Severity.WARNING if compared_anything else Severity.ERROR,
                data={
                    "nodes": total,
                    "by_operator": {
                        op_type: {
                            "nodes": [{"index": e.index, "name": e.name} for e in entries],
                            "reasons": sorted({e.not_compared_reason() for e in entries}),
                        }
                        for op_type, entries in sorted(by_op.items())
                    },
                },
            )
        )

    def _status(
        self,
        nodes: list[NodeComparison],
        end_to_end: dict[str, OutputRecord] | None,
        failed: dict[str, str],
        compared_anything: bool,
    ) -> str:
        """match / diverges when everything was compared; partial / diverges-partial when something was
        left out (a dataset, a node, an end-to-end run); not-compared when nothing was."""
        if not compared_anything:
            return NOT_COMPARED
        complete = (
            not failed
            and all(n.status != NOT_COMPARED and not n.failures for n in nodes)
            and not self.comparison.get("end_to_end", {}).get("failures")
        )
        edges_diverge = self.edges is not None and bool(self.edges.diverging())
        if (
            any(n.status == DIVERGES for n in nodes)
            or any(r.diverges for r in (end_to_end or {}).values())
            or edges_diverge
        ):
            return "diverges" if complete else "diverges-partial"
        return "match" if complete else "partial"

    def _refused(self, exc: runtime.RuntimeRefusal) -> CompareResult:
        if exc.over_memory or exc.crashed:  # not a refusal: the reason says what happened
            return self._nothing_compared(
                exc.reason, {"stage": exc.stage, "onnxruntime_error": exc.full.strip()[:4000]}
            )
        return self._nothing_compared(
            f"onnxruntime refused the model: {exc.reason}",
            {"stage": exc.stage, "onnxruntime_error": exc.full.strip()[:4000]},
            node=self._node_named_in(exc.full),
        )

    def _not_run(self, problem: OverBudget) -> CompareResult:
        node = self.view.refs[problem.node] if problem.node is not None else None
        return self._nothing_compared(problem.reason, {"stage": "budget"}, node=node)

    def _nothing_compared(
        self, message: str, data: dict[str, Any], node: NodeRef | None = None
    ) -> CompareResult:
        self.comparison["reason"] = message
        data = {**data, "onnxruntime": self.comparison["onnxruntime"]}
        self.findings.append(Finding(NOT_COMPARED_RULE, message, Severity.ERROR, node=node, data=data))
        return CompareResult(self.findings, self.comparison)

    def _node_named_in(self, message: str) -> NodeRef | None:
        """The node an onnxruntime message names ("... node with name 'x'") when exactly one has that name."""
        match = re.search(r"node with name '([^']*)'", message) or re.search(r"Node \(([^)]*)\)", message)
        if not match or not match[1]:
            return None
        indices = [i for i, n in enumerate(self.view.nodes) if n.name == match[1]]
        return self.view.refs[indices[0]] if len(indices) == 1 else None


def _itemsize(elem_type: int) -> int:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize or 8
    except (KeyError, TypeError, ValueError):
        return 8


def _keep_larger(sizes: dict[str, memory.Size], name: str, size: memory.Size) -> None:
    if name not in sizes or size.nbytes > sizes[name].nbytes:
        sizes[name] = size
