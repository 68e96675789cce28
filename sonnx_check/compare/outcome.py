"""What a comparison found, typed: the findings and the ``ComparisonOutcome`` the reports render.

The reports and the public API read the outcome's JSON form (``CompareResult.comparison``, the ``comparison``
object of ``--format json`` and the evidence record), whose keys are kept as they were; the comparison's
steps fill the typed fields, so a key cannot be misspelt on the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sonnx_check.findings import Finding

NOT_COMPARED = "not-compared"
STATUSES = ("match", "partial", "diverges", "diverges-partial", NOT_COMPARED)


@dataclass
class ComparisonOutcome:
    """One model's comparison, as every report states it."""

    runtime: dict[str, Any]  # the runner's description: name, version, providers, options
    onnxruntime: dict[str, Any]  # the runtime record (for onnxruntime: its session options and the CPU)
    reference: dict[str, Any]  # the reference kernels and the readings of the specification used
    status: str = NOT_COMPARED  # one of STATUSES
    datasets: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[dict[str, Any]] = field(default_factory=list)  # the end-to-end outputs
    not_compared: list[dict[str, Any]] = field(default_factory=list)
    end_to_end: dict[str, Any] | None = None  # whether the end-to-end outputs were compared, and why not
    node_edges: dict[str, Any] | None = None  # the edge battery's configurations and accounting
    stopped: dict[str, Any] | None = None  # the time limit that stopped the comparison
    reason: str | None = None  # why nothing was compared

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "onnxruntime": self.onnxruntime,
            "runtime": self.runtime,
            "reference": self.reference,
            "datasets": self.datasets,
            "nodes": self.nodes,
            "outputs": self.outputs,
            "not_compared": self.not_compared,
        }
        optional = {
            "end_to_end": self.end_to_end,
            "node_edges": self.node_edges,
            "stopped": self.stopped,
            "reason": self.reason,
        }
        out.update({key: value for key, value in optional.items() if value is not None})
        return out


@dataclass
class CompareResult:
    findings: list[Finding]
    outcome: ComparisonOutcome

    @property
    def comparison(self) -> dict[str, Any]:
        """The outcome as the reports and the JSON output carry it."""
        return self.outcome.to_json()
