"""RUNTIME.divergence findings, each carrying its record (results.Divergence): a diverging node output or
end-to-end output, and the edge battery's diverging configurations (a crash included), named by their nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sonnx_check.compare.edges.battery import NodeEdges
from sonnx_check.compare.edges.configuration import OPERATOR_SCOPE, Configuration
from sonnx_check.compare.judging.known_departures import RunningRuntime
from sonnx_check.compare.judging.output_record import OutputRecord
from sonnx_check.compare.localise import NOT_COMPARED, NodeComparison, ancestors
from sonnx_check.compare.plan import all_exact
from sonnx_check.findings import DIVERGENCE_RULE as DIVERGENCE
from sonnx_check.findings import Finding, Severity
from sonnx_check.results.divergence import Divergence
from sonnx_check.results.edges import Battery
from sonnx_check.results.models import RuntimeRecord
from sonnx_check.view import ModelView


class DivergenceFindings:
    """The divergence findings of one comparison; ``findings``: those of the nodes, the battery and the
    end-to-end outputs, in the order they were asked for."""

    def __init__(
        self,
        view: ModelView,
        subject: str,
        runtime_record: Mapping[str, Any],
        ran: RuntimeRecord,
        runtime: Mapping[str, Any] | None = None,
    ) -> None:
        """``ran``: the runtime as the run reported it (a command's runtime.json), which "seen in this
        runtime at this version" is decided against (``seen``)."""
        self.view = view
        self.subject = subject  # how a sentence names the runtime under test
        self.runtime_record = runtime_record  # the runtime's own record, in every finding's data
        self.runtime = runtime or {}  # the runtime by its name, the neutral key of every finding's data
        self.seen = RunningRuntime.of(ran)
        self.findings: list[Finding] = []

    def output(
        self,
        index: int | None,
        record: OutputRecord,
        scope: str,
        configuration: dict[str, Any] | None = None,
    ) -> Finding:
        ref = self.view.refs[index] if index is not None else None
        label = "output" if scope == "node" else "end-to-end output"
        result = record.result(self.seen)
        return Finding(
            DIVERGENCE,
            record.message(label),
            Severity.ERROR,
            node=ref,
            tensor=record.name,
            actual=record.first.actual if record.first else None,
            expected=record.first.expected if record.first else None,
            record=Divergence(
                scope, self.runtime_record, result, configuration=configuration, runtime=self.runtime
            ),
        )

    def nodes(self, nodes: list[NodeComparison]) -> set[int]:
        """One finding per diverging output of a compared node; returns the diverging nodes' indices."""
        diverging = set()
        for entry in nodes:
            for record in entry.records.values():
                if record.diverges:
                    diverging.add(entry.index)
                    self.findings.append(self.output(entry.index, record, "node"))
        return diverging

    def end_to_end(self, records: Mapping[str, OutputRecord], diverging: set[int]) -> None:
        """The graph outputs compared end to end. Rounding differences of inexact operators add up with no
        bound defined for the sum: information (the JSON and the table), never a finding. Only an all-exact
        chain that diverges with none of its nodes ``diverging`` (a fusion the node-by-node run did not see)
        is one."""
        for name, record in records.items():
            upstream = ancestors(self.view, name)
            if record.diverges and not (upstream & diverging) and all_exact(self.view, upstream):
                producer = self.view.producers.get(name, [])
                self.findings.append(self.output(producer[0] if producer else None, record, "end-to-end"))

    def battery(self, edges: NodeEdges | None, nodes: list[NodeComparison]) -> Battery:
        """The node edge battery: one finding per diverging output of a configuration, naming its nodes.
        A configuration with the model's constants held is the model's verdict (an error); one with edge
        values on those constants too is operator-level evidence about the runtime (info, never failing)."""
        if edges is None:
            return Battery(enabled=False)
        in_context = {n.index: n.not_compared_reason() for n in nodes if n.status == NOT_COMPARED}
        for config in (*edges.accounting.diverging(), *edges.accounting.operator_diverging()):
            self._configuration_findings(config)
        return edges.accounting.result(self.seen, in_context)

    def _configuration_findings(self, config: Configuration) -> None:
        where = self._configuration_text(config)
        operator = config.scope == OPERATOR_SCOPE
        severity = Severity.INFO if operator else Severity.ERROR
        lead = (
            f"operator-level evidence about {self.subject}, not a finding against this model (edge values on "
            "the parameters the model fixes too): "
            if operator
            else ""
        )
        configuration = config.result(self.view.nodes, self.seen).brief_json()
        for record in config.records.values():
            if record.diverges:
                finding = self.output(config.nodes[0], record, config.scope, configuration)
                message = f"{lead}{record.message('output')}; {where}"
                self.findings.append(replace(finding, message=message, severity=severity))
        if config.crashes:
            dataset, how = next(iter(config.crashes.items()))
            more = f" and {len(config.crashes) - 1} other dataset(s)" if len(config.crashes) > 1 else ""
            self.findings.append(
                Finding(
                    DIVERGENCE,
                    f"{lead}{self.subject} did not finish on dataset {dataset}{more}: {how}; the "
                    f"specification defines a result for these inputs (the reference computed it); {where}",
                    severity,
                    node=self.view.refs[config.nodes[0]],
                    record=Divergence(
                        config.scope,
                        self.runtime_record,
                        crash=how,
                        crashed_on=tuple(sorted(config.crashes)),
                        configuration=configuration,
                        runtime=self.runtime,
                    ),
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
