"""What the edge battery reports: whether it compared anything, the configurations that diverge, and its typed
result with every node's accounting (run alone, shared, or not run and why)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import onnx

from sonnx_check.compare.edges.configuration import Configuration, no_dataset_reason
from sonnx_check.compare.judging.known_departures import RuntimeSeen
from sonnx_check.compare.localise import DIVERGES, NOT_COMPARED
from sonnx_check.results.edges import NOT_RUN, RUN_ALONE, SHARED, Battery, NodeAccounting


class Accounting:
    """Reads the battery's configuration tables once they have run."""

    def __init__(
        self,
        nodes: Sequence[onnx.NodeProto],
        configurations: Mapping[bytes, Configuration],
        operator_configurations: Mapping[bytes, Configuration],
    ) -> None:
        self.nodes = nodes
        self.configurations = configurations
        self.operator_configurations = operator_configurations

    def compared(self) -> bool:
        """Whether a configuration of the model's verdict was compared (operator-level evidence is not)."""
        return any(c.records for c in self.configurations.values())

    def diverging(self) -> list[Configuration]:
        """The model's configurations that diverge (NODE_SCOPE)."""
        return [c for c in self.configurations.values() if c.status == DIVERGES]

    def operator_diverging(self) -> list[Configuration]:
        return [c for c in self.operator_configurations.values() if c.status == DIVERGES]

    def result(self, version: RuntimeSeen, in_context: Mapping[int, str]) -> Battery:
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
                    entry = replace(entry, reason=config.reason or no_dataset_reason(config))
                elif config.nodes[0] == index:
                    entry = replace(entry, edges=RUN_ALONE)
                else:
                    entry = replace(entry, edges=SHARED, shares_with=config.nodes[0])
            out.append(entry)
        return out
