"""One model's comparison as every report states it: the runtime and reference used, the datasets, every
node's and end-to-end output's result, the edge battery, and why anything was not compared."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from sonnx_check.results.deprecated_keys import DEPRECATED_RUNTIME_KEY
from sonnx_check.results.edges import Battery, ConfigurationResult
from sonnx_check.results.outputs import NOT_COMPARED, OutputResult

STATUSES = ("match", "partial", "diverges", "diverges-partial", NOT_COMPARED)


@dataclass(frozen=True)
class RuntimeRecord:
    """What ran the comparison (the runner): needed to reproduce it."""

    name: str  # "onnxruntime", "command", "saved-outputs"
    version: str | None = None
    providers: tuple[str, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    # how the reports name the runtime under test (a command: its program or the name it declares)
    label: str = ""

    @property
    def shown(self) -> str:
        return self.label or self.name

    # The runner's options are open (each runtime records its own): the keys the reports show are read here.
    @property
    def handed_options(self) -> Any:
        """What it was handed: --runtime-option's KEY=VALUE table, or a command's declared options."""
        return self.options.get("runtime_options")

    @property
    def device(self) -> str:
        return str(self.options.get("device") or "")

    @property
    def precision(self) -> str:
        """The precision it computed in (OpenVINO's effective inference_precision_hint)."""
        return str(self.options.get("inference_precision_hint") or "")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.shown,
            "version": self.version,
            "providers": list(self.providers),
            "options": dict(self.options),
        }


class ChosenReadings(Protocol):
    """The readings a comparison used (operator_readings.Readings, named by what the records need of it, so
    that the results import nothing of the catalogue)."""

    def records(self) -> dict[str, str]: ...

    def settings_json(self) -> dict[str, str]: ...

    def of(self, op_type: str) -> list[tuple[Any, str]]: ...


@dataclass(frozen=True)
class ReferenceRecord:
    """The reference kernels and the readings of the specification the comparison used."""

    operators: tuple[str, ...]
    readings: ChosenReadings  # the readings chosen (or the defaults): each recorded with its meaning

    def to_json(self) -> dict[str, Any]:
        return {"operators": list(self.operators), **self.readings.records()}


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset of the comparison: its inputs and whether the runtime ran it."""

    name: str
    source: str  # random, edge, or the user's file
    inputs: Mapping[str, Mapping[str, Any]]  # input name -> dtype and shape
    status: str = ""  # ok, failed, or not-run (its values size a tensor over budget); "" before running
    error: str | None = None  # how the runtime failed on it
    failure: str | None = None  # which failure (runtimes/base.FAILURE_KINDS: refused, failed, crashed, ...)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "source": self.source,
            "inputs": {k: dict(v) for k, v in self.inputs.items()},
        }
        if self.status:
            out["status"] = self.status
        if self.error is not None:
            out["error"] = self.error
        if self.failure is not None:
            out["failure"] = self.failure
        return out


@dataclass(frozen=True)
class NodeResult:
    """One node: whether it was compared, and each output's result."""

    index: int
    name: str
    op_type: str
    status: str  # match, diverges, not-compared
    outputs: tuple[OutputResult, ...] = ()
    reason: str = ""  # why not compared
    # dataset -> why the node was not compared there, naming who failed: the reference or the runtime under
    # test with the intermediates exposed (the key's name is historical)
    reference_failures: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "name": self.name,
            "op_type": self.op_type,
            "status": self.status,
            "outputs": [o.to_json() for o in self.outputs],
        }
        if self.status == NOT_COMPARED:
            out["reason"] = self.reason
        if self.reference_failures:
            out["reference_failures"] = dict(self.reference_failures)
        return out


@dataclass(frozen=True)
class NotComparedNode:
    index: int
    name: str
    op_type: str
    reason: str
    partial: bool  # compared on some datasets only

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "op_type": self.op_type,
            "reason": self.reason,
            "partial": self.partial,
        }


@dataclass(frozen=True)
class EndToEnd:
    """Whether the graph outputs were compared end to end, why not, and the datasets that failed there."""

    compared: bool
    reason: str = ""
    failures: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"compared": self.compared}
        if self.reason:
            out["reason"] = self.reason
        if self.failures:
            out["failures"] = dict(self.failures)
        return out


@dataclass(frozen=True)
class Stop:
    """The time limit that stopped the comparison."""

    timeout: float | None
    dataset: str | None

    def to_json(self) -> dict[str, Any]:
        return {"timeout": self.timeout, "dataset": self.dataset}


@dataclass(frozen=True)
class Session:
    """What the runtime's own record (``ComparisonOutcome.runtime_record``, as its worker reported it) says
    about the session: read here once, so that no report reads its keys."""

    version: str | None
    providers: tuple[str, ...]
    optimization_level: str | None
    machine: str | None
    flags: tuple[str, ...]

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Session:
        cpu = record.get("cpu") or {}
        return cls(
            version=record.get("version") or None,
            providers=tuple(record.get("providers") or ()),
            optimization_level=record.get("optimization_level") or None,
            machine=cpu.get("machine") or None,
            flags=tuple(cpu.get("flags") or ()),
        )


@dataclass(frozen=True)
class ComparisonOutcome:
    """One model's comparison, as every report states it."""

    runtime: RuntimeRecord  # the runner's description
    runtime_record: Mapping[str, Any]  # the runtime's own record (for onnxruntime: session options, the CPU)
    reference: ReferenceRecord
    status: str = NOT_COMPARED  # one of STATUSES
    datasets: tuple[DatasetEntry, ...] = ()
    nodes: tuple[NodeResult, ...] = ()
    outputs: tuple[OutputResult, ...] = ()  # the end-to-end outputs
    not_compared: tuple[NotComparedNode, ...] = ()
    end_to_end: EndToEnd | None = None  # None: the comparison did not get that far
    node_edges: Battery | None = None  # None: the comparison did not get that far
    stopped: Stop | None = None
    reason: str | None = None  # why nothing was compared

    @property
    def session(self) -> Session:
        return Session.of(self.runtime_record)

    @property
    def onnxruntime(self) -> Mapping[str, Any]:
        """Deprecated (kept for one release): ``runtime_record``, the record of whatever runtime ran."""
        return self.runtime_record

    @property
    def edge_configurations(self) -> tuple[ConfigurationResult, ...]:
        """Every configuration of the edge battery, the model's and the operator-level ones."""
        if self.node_edges is None:
            return ()
        return (*self.node_edges.configurations, *self.node_edges.operator_configurations)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            DEPRECATED_RUNTIME_KEY: self.runtime_record,
            "runtime": self.runtime.to_json(),
            "reference": self.reference.to_json(),
            "datasets": [d.to_json() for d in self.datasets],
            "nodes": [n.to_json() for n in self.nodes],
            "outputs": [o.to_json() for o in self.outputs],
            "not_compared": [n.to_json() for n in self.not_compared],
        }
        optional = {
            "end_to_end": self.end_to_end,
            "node_edges": self.node_edges,
            "stopped": self.stopped,
        }
        out.update({key: value.to_json() for key, value in optional.items() if value is not None})
        if self.reason is not None:
            out["reason"] = self.reason
        return out
