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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
from onnx import numpy_helper

from sonnx_check import reference
from sonnx_check.compare import runtime
from sonnx_check.compare.aggregate import OutputRecord
from sonnx_check.compare.datasets import Dataset, InputBudgetExceeded, build_datasets, input_specs
from sonnx_check.compare.localise import (
    DIVERGES,
    NOT_COMPARED,
    NodeComparison,
    ancestors,
    compare_nodes,
    expose_all,
    merge,
    node_inputs,
    plan,
)
from sonnx_check.compare.run_budget import OverBudget, run_budget_problem
from sonnx_check.errors import UsageError
from sonnx_check.findings import Finding, NodeRef, Severity
from sonnx_check.loading import load_model
from sonnx_check.view import ModelView

DIVERGENCE = "RUNTIME.divergence"
NOT_COMPARED_RULE = "RUNTIME.not-compared"

DEFAULT_TIMEOUT = 300.0

__all__ = ["CompareOptions", "CompareResult", "compare_model", "compare_loaded"]


@dataclass(frozen=True)
class CompareOptions:
    datasets: tuple[str, ...] = (
        "random",
        "edge",
    )  # "random", "edge", or a path to .npz / test_data_set folder
    seed: int = 0
    ort_opt_level: str = "default"
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    max_elements: int = 100_000_000
    timeout: float | None = DEFAULT_TIMEOUT  # seconds onnxruntime may run per model (None: no limit)

    def __post_init__(self) -> None:
        if self.ort_opt_level not in runtime.OPT_LEVELS:
            levels = ", ".join(runtime.OPT_LEVELS)
            raise UsageError(f"--ort-opt-level {self.ort_opt_level!r}: expected one of {levels}")
        if self.max_elements < 1:
            raise UsageError(f"--max-elements {self.max_elements}: must be at least 1")


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
    return _Comparison(model, options).run()


class _Comparison:
    """One comparison run; kept as an object only to share its state between the steps."""

    def __init__(self, model: onnx.ModelProto, options: CompareOptions) -> None:
        self.model = model
        self.options = options
        self.view = ModelView(model)
        self.findings: list[Finding] = []
        self._weights: dict[str, Any] | None = None
        self.version: str | None = runtime.installed_version()
        self.comparison: dict[str, Any] = {
            "status": NOT_COMPARED,
            "onnxruntime": runtime.describe_unavailable(options.ort_opt_level),
            "reference": {"operators": sorted(reference.supported_ops())},
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
        problem = self._over_budget(datasets)
        if problem is not None and not problem.size_unknown:
            return self._not_run(problem)
        try:
            plain = runtime.OrtSession(self.model, self.options.ort_opt_level)
        except runtime.RuntimeUnavailable as exc:
            return self._nothing_compared(str(exc), {"stage": "import"})
        except runtime.RuntimeRefusal as exc:
            return self._refused(exc)
        self.version = plain.version
        self.comparison["onnxruntime"] = plain.info.to_json()
        if problem is not None:  # onnxruntime accepts the model, but what running it costs is unknown
            plain.close()
            return self._not_run(problem)

        nodes = plan(self.view, reference.supported_ops())
        exposing = self._exposing_session(plain, nodes)
        end_to_end = self._end_to_end_records(nodes)
        failed: dict[str, str] = {}
        try:
            for dataset in datasets:
                self._run_dataset(dataset, plain, exposing, nodes, end_to_end, failed)
        finally:
            for session in {plain, exposing} - {None}:
                session.close()  # each holds a worker process
        return self._finish(datasets, nodes, end_to_end, failed)

    def _over_budget(self, datasets: list[Dataset]) -> OverBudget | None:
        """The first reason onnxruntime must not run on some dataset (shapes may differ between files)."""
        signatures = {tuple((k, tuple(v.shape)) for k, v in sorted(d.feeds.items())) for d in datasets}
        for signature in sorted(signatures):
            problem = run_budget_problem(self.view, dict(signature), self.options.max_elements)
            if problem is not None:
                return problem
        return None

    def _exposing_session(
        self, plain: runtime.OrtSession, nodes: list[NodeComparison]
    ) -> runtime.OrtSession | None:
        """The session with every intermediate exposed; the plain one when that changes nothing (every node
        output is already a graph output), None when onnxruntime refuses the exposed copy."""
        if not any(n.has_kernel for n in nodes):
            return None
        exposed = expose_all(self.model)
        if len(exposed.graph.output) == len(self.model.graph.output):
            return plain
        try:
            return runtime.OrtSession(exposed, self.options.ort_opt_level)
        except runtime.RuntimeRefusal as exc:
            for entry in nodes:
                if entry.has_kernel:
                    entry.reason = f"onnxruntime refused the model with intermediates exposed: {exc.reason}"
            return None

    def _end_to_end_records(self, nodes: list[NodeComparison]) -> dict[str, OutputRecord] | None:
        if not nodes or not all(n.has_kernel for n in nodes):
            missing = sorted({n.op_type for n in nodes if not n.has_kernel})
            why = "the graph has no nodes" if not nodes else f"no reference kernel for {', '.join(missing)}"
            self.comparison["end_to_end"] = {"compared": False, "reason": why}
            return None
        self.comparison["end_to_end"] = {"compared": True}
        return {o.name: OutputRecord(o.name, i) for i, o in enumerate(self.model.graph.output)}

    def _run_dataset(
        self,
        dataset: Dataset,
        plain: runtime.OrtSession,
        exposing: runtime.OrtSession | None,
        nodes: list[NodeComparison],
        end_to_end: dict[str, OutputRecord] | None,
        failed: dict[str, str],
    ) -> None:
        try:
            actual = plain.run(dataset.feeds)
        except runtime.RuntimeRefusal as exc:
            failed[dataset.name] = exc.reason
            return
        values = {**self._initializers(), **dataset.feeds}
        if exposing is plain:
            values.update(actual)
        elif exposing is not None:
            try:
                values.update(exposing.run(dataset.feeds))
            except runtime.RuntimeRefusal as exc:
                for entry in nodes:
                    entry.failures.setdefault(
                        dataset.name, f"onnxruntime failed with intermediates exposed: {exc.reason}"
                    )
        compare_nodes(self.view, nodes, values, dataset.name, max_elements=self.options.max_elements)
        if end_to_end is not None:
            self._compare_end_to_end(dataset, actual, values, end_to_end)

    def _compare_end_to_end(
        self,
        dataset: Dataset,
        actual: Mapping[str, Any],
        values: Mapping[str, Any],
        records: dict[str, OutputRecord],
    ) -> None:
        try:
            expected = reference.evaluate(self.model, dataset.feeds, max_elements=self.options.max_elements)
        except reference.ReferenceError as exc:
            self.comparison["end_to_end"].setdefault("failures", {})[dataset.name] = _first_line(exc)
            return
        for name, record in records.items():
            if name not in expected or name not in actual:
                continue
            producer = self.view.producers.get(name, [])
            node = self.view.nodes[producer[0]] if producer else None
            position = list(node.output).index(name) if node is not None else record.position
            inputs = node_inputs(node, values)[0] if node is not None else []
            merge(record, dataset.name, node, position, expected[name], actual[name], inputs)

    def _initializers(self) -> dict[str, Any]:
        """The weights as arrays, decoded once: nodes are re-run on them for every dataset."""
        if self._weights is None:
            self._weights = {t.name: numpy_helper.to_array(t) for t in self.model.graph.initializer}
        return self._weights

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
        compared_anything = any(n.records for n in nodes) or any(
            r.datasets for r in (end_to_end or {}).values()
        )
        if failed:
            self._dataset_failures(datasets, failed, compared_anything)

        diverging = set()
        for entry in nodes:
            for record in entry.records.values():
                if record.diverges:
                    diverging.add(entry.index)
                    self.findings.append(self._divergence(entry.index, record, "node"))
        if end_to_end is not None:
            self.comparison["outputs"] = [r.to_json(self.version) for r in end_to_end.values()]
            for name, record in end_to_end.items():
                if record.diverges and not (ancestors(self.view, name) & diverging):
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
        self.comparison["status"] = self._status(nodes, end_to_end, failed, compared_anything)
        self.findings.sort(key=lambda f: (f.node.index if f.node else -1, f.rule))
        return CompareResult(self.findings, self.comparison)

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

    def _not_compared_nodes(self, nodes: list[NodeComparison], compared_anything: bool, silent: bool) -> None:
        """One warning per operator type whose nodes were (wholly or partly) not compared; an error when
        nothing in the model could be compared. ``silent``: onnxruntime failed on every dataset, which is
        already a finding, so nodes with a kernel are listed but get no finding of their own."""
        by_op: dict[str, list[NodeComparison]] = {}
        for entry in nodes:
            partial = entry.status != NOT_COMPARED and entry.failures
            if entry.status == NOT_COMPARED or partial:
                if not (silent and entry.has_kernel):
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
        severity = Severity.WARNING if compared_anything else Severity.ERROR
        for op_type, entries in by_op.items():
            reasons = sorted({e.not_compared_reason() for e in entries})
            listing = ", ".join(f"#{e.index}" + (f" '{e.name}'" if e.name else "") for e in entries[:10])
            if len(entries) > 10:
                listing += f", ... ({len(entries) - 10} more)"
            whole = [e for e in entries if e.status == NOT_COMPARED]
            what = "not compared" if len(whole) == len(entries) else "not compared on every dataset"
            message = f"{len(entries)} {op_type} node(s) {what} ({listing}): {reasons[0]}"
            if len(reasons) > 1:
                message += f" (and {len(reasons) - 1} other reason(s))"
            self.findings.append(
                Finding(
                    NOT_COMPARED_RULE,
                    message,
                    severity,
                    data={
                        "op_type": op_type,
                        "nodes": [{"index": e.index, "name": e.name} for e in entries],
                        "reasons": reasons,
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
        if any(n.status == DIVERGES for n in nodes) or any(r.diverges for r in (end_to_end or {}).values()):
            return "diverges" if complete else "diverges-partial"
        return "match" if complete else "partial"

    def _refused(self, exc: runtime.RuntimeRefusal) -> CompareResult:
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


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
