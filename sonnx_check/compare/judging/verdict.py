"""Judge what a comparison observed: RUNTIME.* findings and the outcome's verdict.

Policy: a comparison that could not run is reported (RUNTIME.not-compared), never counted as a pass; a known
divergence of the runtime is explained, never forgiven.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from sonnx_check.compare.edges.battery import NodeEdges
from sonnx_check.compare.judging.divergence_findings import DivergenceFindings
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import DIVERGES, NOT_COMPARED, NodeComparison
from sonnx_check.compare.options import CompareOptions
from sonnx_check.compare.outcome import CompareResult, ComparisonOutcome
from sonnx_check.compare.run import Observed, Stopped
from sonnx_check.compare.runtimes.base import NOT_SAVED, REFUSED, STAGES, RunFailure, RunnerFacts
from sonnx_check.findings import Finding, NodeRef, Severity
from sonnx_check.results.deprecated_keys import DEPRECATED_RUNTIME_ERROR_KEY, DEPRECATED_RUNTIME_KEY
from sonnx_check.results.models import EndToEnd, NotComparedNode, Stop
from sonnx_check.results.outputs import OutputResult
from sonnx_check.view import ModelView

DIVERGENCE = "RUNTIME.divergence"
NOT_COMPARED_RULE = "RUNTIME.not-compared"


class Judge:
    """Turns one model's observations into findings and returns its outcome (``finish``: the outcome is
    built once, from what was observed; ``self.outcome`` holds only what is known before the judging: the
    datasets, and the runtime as the runner described it before the run, then as it ran)."""

    def __init__(
        self, view: ModelView, options: CompareOptions, outcome: ComparisonOutcome, subject: str
    ) -> None:
        self.view = view
        self.options = options
        self.outcome = outcome
        self.subject = subject  # how a sentence names the runtime under test
        self.findings: list[Finding] = []

    # -- a comparison that did not run ------------------------------------------------------------------
    def nothing_compared(
        self, message: str, data: dict[str, Any], node: NodeRef | None = None
    ) -> CompareResult:
        self.outcome = replace(self.outcome, reason=message)
        data = {**data, **runtime_keys(self.outcome)}
        self.findings.append(Finding(NOT_COMPARED_RULE, message, Severity.ERROR, node=node, data=data))
        return CompareResult(self.findings, self.outcome)

    def refused(self, exc: RunFailure) -> CompareResult:
        error = exc.full.strip()[:4000]  # also under the deprecated key, for one release
        detail = {"stage": exc.stage, "failure": exc.kind, "runtime_error": error}
        detail[DEPRECATED_RUNTIME_ERROR_KEY] = error
        if exc.over_memory or exc.crashed or exc.bad_output or exc.kind == NOT_SAVED:
            # not a refusal: the reason says what happened
            return self.nothing_compared(exc.reason, detail)
        return self.nothing_compared(
            f"{self.subject} refused the model: {exc.reason}", detail, node=self.node_named_in(exc.full)
        )

    def stop_message(self, stopped: Stopped) -> str:
        what = STAGES.get(stopped.failure.stage, stopped.failure.stage)
        where = f" on dataset {stopped.dataset}" if stopped.dataset else ""
        return (
            f"{self.subject} was stopped at the --timeout of {self.options.timeout:g} s while {what}{where}"
        )

    # -- a comparison that ran ---------------------------------------------------------------------------
    def finish(self, observed: Observed, ran: RunnerFacts) -> CompareResult:
        """``ran``: the runner once it ran (the versions and providers a runtime reported, a command's
        runtime.json), which the reports record."""
        self.outcome = replace(self.outcome, runtime=ran.runtime, runtime_record=dict(ran.runtime_record))
        datasets, failed = observed.datasets, observed.failed
        nodes, end_to_end = observed.run_plan.nodes, observed.run_plan.end_to_end
        info = observed.run_plan.end_to_end_info
        end_to_end_info = EndToEnd(
            bool(info["compared"]), str(info.get("reason", "")), dict(observed.end_to_end_failures)
        )
        edges = observed.edges
        own, named = self.outcome.runtime_record, runtime_named(self.outcome)
        divergences = DivergenceFindings(self.view, self.subject, own, self.outcome.runtime, runtime=named)
        seen = divergences.seen  # "seen in this runtime at this version": the runtime as the run reported it
        compared_anything = (
            any(n.records for n in nodes)
            or any(r.datasets for r in (end_to_end or {}).values())
            or (edges is not None and edges.accounting.compared())
        )
        if failed:
            self._dataset_failures(len(datasets), failed, compared_anything, observed.failure_kinds)
        stop = None
        if observed.stopped is not None:
            stop = self._timeout_finding(observed.stopped, nodes, compared_anything)

        diverging = divergences.nodes(nodes)
        battery = divergences.battery(edges, nodes)
        outputs: tuple[OutputResult, ...] = ()
        if end_to_end is not None:
            outputs = tuple(r.result(seen) for r in end_to_end.values())
            divergences.end_to_end(end_to_end, diverging)
        self.findings += divergences.findings

        if failed and len(failed) == len(datasets):
            # the runtime produced nothing: that finding says it all, the nodes need no finding of their own
            for entry in nodes:
                if entry.has_kernel and not entry.reason:
                    entry.reason = f"{self.subject} {_failed(observed.failure_kinds)} on every dataset"
        results = tuple(n.result(seen) for n in nodes)
        silent = set(failed) == {d.name for d in datasets}
        not_compared = self._not_compared_nodes(nodes, compared_anything, silent)
        self._data_violations(nodes)
        outcome = replace(
            self.outcome,
            status=_status(nodes, end_to_end, failed, compared_anything, edges, end_to_end_info),
            datasets=tuple(
                replace(d, status="failed", error=failed[d.name], failure=observed.failure_kinds.get(d.name))
                if d.name in failed
                else (d if d.status == "not-run" else replace(d, status="ok"))  # not-run: values over budget
                for d in self.outcome.datasets
            ),
            nodes=results,
            outputs=outputs,
            not_compared=not_compared,
            end_to_end=end_to_end_info,
            node_edges=battery,
            stopped=stop,
        )
        self.findings.sort(key=lambda f: (f.node.index if f.node else -1, f.rule))
        return CompareResult(self.findings, outcome)

    def _timeout_finding(
        self, stopped: Stopped, nodes: list[NodeComparison], compared_anything: bool
    ) -> Stop:
        message = self.stop_message(stopped)
        message += (
            "; what was compared before is reported, the rest was not run"
            if compared_anything
            else "; nothing was compared"
        )
        for entry in nodes:
            if entry.has_kernel and not entry.reason and not entry.records:
                entry.reason = self.stopped_before

        self.findings.append(
            Finding(
                NOT_COMPARED_RULE,
                message,
                Severity.ERROR,
                data={
                    "stage": "timeout",
                    "timeout": self.options.timeout,
                    **runtime_keys(self.outcome),
                },
            )
        )
        return Stop(self.options.timeout, stopped.dataset)

    @property
    def stopped_before(self) -> str:
        return f"{self.subject} was stopped by the time limit (--timeout) before it was compared"

    def _dataset_failures(
        self, count: int, failed: dict[str, str], compared_anything: bool, kinds: dict[str, str]
    ) -> None:
        first, reason = next(iter(failed.items()))
        everything = len(failed) == count
        scope = "every dataset" if everything else f"{len(failed)} of {count} datasets"
        what = _failed({first: kinds.get(first, "")})
        message = f"{self.subject} {what} on {scope} (first: {first}): {reason}"
        if not everything:
            message += "; the other datasets were compared"
        severity = Severity.ERROR if everything or not compared_anything else Severity.WARNING
        self.findings.append(
            Finding(
                NOT_COMPARED_RULE,
                message,
                severity,
                node=self.node_named_in(reason),
                data={
                    "stage": "run",
                    "failure": kinds.get(first),  # refused, failed, crashed, ... (runners/base.py)
                    "datasets": dict(failed),
                    **runtime_keys(self.outcome),
                },
            )
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

    def _not_compared_nodes(
        self, nodes: list[NodeComparison], compared_anything: bool, silent: bool
    ) -> tuple[NotComparedNode, ...]:
        """One warning per operator type whose nodes were (wholly or partly) not compared; an error when
        nothing in the model could be compared. ``silent``: the runtime failed on every dataset, which is
        already a finding, so the nodes (with a kernel or not) are listed but get no finding of their own."""
        by_op: dict[str, list[NodeComparison]] = {}
        listed: list[NotComparedNode] = []
        for entry in nodes:
            partial = entry.status != NOT_COMPARED and entry.failures
            if entry.status == NOT_COMPARED or partial:
                # the timeout's own finding covers the nodes it left out
                if not silent and entry.reason != self.stopped_before:
                    by_op.setdefault(entry.op_type, []).append(entry)
                listed.append(
                    NotComparedNode(
                        entry.index, entry.name, entry.op_type, entry.not_compared_reason(), bool(partial)
                    )
                )
        if not by_op:
            return tuple(listed)
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
        return tuple(listed)

    def node_named_in(self, message: str) -> NodeRef | None:
        """The node a runtime's message names ("... node with name 'x'") when exactly one has that name."""
        match = re.search(r"node with name '([^']*)'", message) or re.search(r"Node \(([^)]*)\)", message)
        if not match or not match[1]:
            return None
        indices = [i for i, n in enumerate(self.view.nodes) if n.name == match[1]]
        return self.view.refs[indices[0]] if len(indices) == 1 else None


def _status(
    nodes: list[NodeComparison],
    end_to_end: dict[str, OutputRecord] | None,
    failed: dict[str, str],
    compared_anything: bool,
    edges: NodeEdges | None,
    end_to_end_info: EndToEnd,
) -> str:
    """match / diverges when everything was compared; partial / diverges-partial when something was
    left out (a dataset, a node, an end-to-end run); not-compared when nothing was."""
    if not compared_anything:
        return NOT_COMPARED
    complete = (
        not failed
        and all(n.status != NOT_COMPARED and not n.failures for n in nodes)
        and not end_to_end_info.failures
    )
    edges_diverge = edges is not None and bool(edges.accounting.diverging())
    if (
        any(n.status == DIVERGES for n in nodes)
        or any(r.diverges for r in (end_to_end or {}).values())
        or edges_diverge
    ):
        return "diverges" if complete else "diverges-partial"
    return "match" if complete else "partial"


def _failed(kinds: dict[str, str]) -> str:
    """How a sentence says the runtime failed on datasets: "refused the model" when each was a refusal (the
    finding, the nodes' reason and the table say the same), "failed at run time" otherwise."""
    return "refused the model" if kinds and set(kinds.values()) == {REFUSED} else "failed at run time"


def runtime_keys(outcome: ComparisonOutcome) -> dict[str, Any]:
    """The runtime under test in a finding's data: by its name under "runtime" (runtime_named), and its own
    record under the deprecated key (kept for one release, whatever the runtime)."""
    return {DEPRECATED_RUNTIME_KEY: dict(outcome.runtime_record), "runtime": runtime_named(outcome)}


def runtime_named(outcome: ComparisonOutcome) -> dict[str, Any]:
    """The runtime by its name, its own record (e.g. onnxruntime's session options and CPU) under "details"
    when that says more."""
    own = dict(outcome.runtime_record)
    named = outcome.runtime.to_json()
    return named if own == named else {**named, "details": own}
