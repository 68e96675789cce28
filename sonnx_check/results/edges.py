"""The node edge battery's results: each node configuration run alone on edge values, and what the battery
did with every node of the model (``compare/edges/battery.py`` runs it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sonnx_check.results.outputs import OutputResult

DIVERGES, NOT_COMPARED = "diverges", "not-compared"
RUN_ALONE, SHARED, NOT_RUN = "run-alone", "shared", "not-run"
OPERATOR_SCOPE = "operator-edges"


@dataclass(frozen=True)
class ConfiguredNode:
    index: int
    name: str

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name}


@dataclass(frozen=True)
class ConfigurationResult:
    """One distinct node configuration run alone: its inputs, the nodes that share it, and its outputs."""

    scope: str  # node-edges (the model's constants held) or operator-edges
    key: str  # the configuration's digest
    op_type: str
    attributes: Mapping[str, Any]  # the node's attributes as plain values (tensors by their shape)
    inputs: tuple[Mapping[str, Any], ...]  # position, dtype, shape, and whether edge values or held
    nodes: tuple[ConfiguredNode, ...]
    status: str  # match, diverges, not-compared
    outputs: tuple[OutputResult, ...] = ()
    reason: str = ""  # why it was not run at all
    skipped: Mapping[str, str] = field(default_factory=dict)  # dataset -> why it did not run it
    crashes: Mapping[str, str] = field(default_factory=dict)  # dataset -> how the runtime ended

    def brief_json(self) -> dict[str, Any]:
        """What a finding says about the configuration (its outputs and outcome are the finding's own)."""
        return {
            "scope": self.scope,
            "key": self.key,
            "op_type": self.op_type,
            "attributes": self.attributes,
            "inputs": [dict(i) for i in self.inputs],
            "nodes": [n.to_json() for n in self.nodes],
        }

    def to_json(self) -> dict[str, Any]:
        out = self.brief_json()
        out["status"] = self.status
        out["outputs"] = [o.to_json() for o in self.outputs]
        if self.reason:
            out["reason"] = self.reason
        if self.skipped:
            out["skipped"] = dict(self.skipped)
        if self.crashes:
            out["crashes"] = dict(self.crashes)
        return out


@dataclass(frozen=True)
class BatterySummary:
    configurations: int
    nodes: int
    diverging: int
    not_run: int

    @classmethod
    def of(cls, configurations: tuple[ConfigurationResult, ...]) -> BatterySummary:
        return cls(
            configurations=len(configurations),
            nodes=sum(len(c.nodes) for c in configurations),
            diverging=sum(c.status == DIVERGES for c in configurations),
            not_run=sum(c.status == NOT_COMPARED for c in configurations),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "configurations": self.configurations,
            "nodes": self.nodes,
            "diverging": self.diverging,
            "not_run": self.not_run,
        }


@dataclass(frozen=True)
class NodeCounts:
    """How many of the model's nodes the battery ran alone, ran through another node's configuration, or
    did not run."""

    run_alone: int
    sharing: int
    not_run: int

    def to_json(self) -> dict[str, int]:
        return {
            "nodes_run_alone": self.run_alone,
            "nodes_sharing": self.sharing,
            "nodes_not_run": self.not_run,
        }


@dataclass(frozen=True)
class NodeAccounting:
    """What the battery did with one node of the model: run alone (the first node of its configuration),
    shared (run as the configuration of an earlier node), or not run and why."""

    index: int
    name: str
    op_type: str
    edges: str  # run-alone, shared, not-run
    configuration: int | None = None  # its configuration's number
    reason: str = ""  # why not run
    shares_with: int | None = None  # the node whose configuration it shares
    operator_configuration: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"index": self.index, "name": self.name, "op_type": self.op_type}
        if self.configuration is not None:
            out["configuration"] = self.configuration
        out["edges"] = self.edges
        if self.edges == NOT_RUN:
            out["reason"] = self.reason
        elif self.edges == SHARED:
            out["shares_with"] = self.shares_with
        if self.operator_configuration is not None:
            out["operator_configuration"] = self.operator_configuration
        return out


@dataclass(frozen=True)
class Battery:
    """The edge battery of one comparison (``enabled`` False: --no-node-edges)."""

    enabled: bool = True
    configurations: tuple[ConfigurationResult, ...] = ()  # the model's constants held: its verdict
    nodes: tuple[NodeAccounting, ...] = ()
    operator_configurations: tuple[ConfigurationResult, ...] = ()  # operator-level evidence, never failing

    @property
    def summary(self) -> BatterySummary:
        return BatterySummary.of(self.configurations)

    @property
    def operator_summary(self) -> BatterySummary:
        return BatterySummary.of(self.operator_configurations)

    def node_counts(self) -> NodeCounts:
        states = [n.edges for n in self.nodes]
        return NodeCounts(states.count(RUN_ALONE), states.count(SHARED), states.count(NOT_RUN))

    def to_json(self) -> dict[str, Any]:
        if not self.enabled:
            return {"enabled": False}
        return {
            "enabled": True,
            "configurations": [c.to_json() for c in self.configurations],
            "summary": {**self.summary.to_json(), **self.node_counts().to_json()},
            "nodes": [n.to_json() for n in self.nodes],
            "operator_edges": {
                "scope": OPERATOR_SCOPE,
                "configurations": [c.to_json() for c in self.operator_configurations],
                "summary": self.operator_summary.to_json(),
            },
        }
