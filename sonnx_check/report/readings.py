"""The choices a comparison was made under, stated the same way in every report format.

A comparison's verdict depends on readings of the specification the user may choose (the MaxPool NaN
reading) and on what was run (the node edge battery, the onnxruntime version): a report without them could
not be reproduced or reviewed, so every format carries them, from the comparison's record alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sonnx_check.results.deprecated_keys import DEPRECATED_RUNTIME_KEY
from sonnx_check.runtime_names import DEFAULT_RUNTIME

if TYPE_CHECKING:
    from sonnx_check.results.edges import ConfigurationResult
    from sonnx_check.results.models import ComparisonOutcome, NodeResult


def comparison_readings(comparison: ComparisonOutcome | None) -> dict[str, str]:
    """Name -> value of every setting a comparison's verdict depends on ({} when nothing was compared)."""
    if comparison is None:
        return {}
    runtime = str(comparison.runtime.name or DEFAULT_RUNTIME)
    out = {
        # deprecated, kept for one release: onnxruntime's version, only when onnxruntime is the runtime
        # under test (another runtime's version under this name would be false; "runtime_version" has it)
        DEPRECATED_RUNTIME_KEY: str(comparison.session.version or "not installed")
        if runtime == DEFAULT_RUNTIME
        else "",
        "runtime": runtime,
        # the runtime under test by its name and version (for a command: what its runtime.json declares)
        "runtime_label": comparison.runtime.shown,
        "runtime_version": str(comparison.runtime.version or ""),
        "providers": ", ".join(comparison.runtime.providers),
        # where and how it ran: the device, the effective precision (OpenVINO), the options it was handed
        "runtime_device": comparison.runtime.device,
        "runtime_precision": comparison.runtime.precision,
        "runtime_options": _options_text(comparison.runtime.handed_options),
        **comparison.reference.readings.settings_json(),  # each declared reading by its record name
        "node_edges": _node_edges(comparison),
    }
    return {k: v for k, v in out.items() if v}


def _options_text(options: object) -> str:
    """``--runtime-option``s (or a command's declared options) as "KEY=VALUE, ..."."""
    if not isinstance(options, dict):
        return ""
    return ", ".join(f"{key}={value}" for key, value in options.items())


COMPARED = ("match", "diverges")  # a node or configuration whose outputs were diffed


def compared_operators(comparison: ComparisonOutcome) -> set[str]:
    """The operators of the nodes and edge configurations whose outputs were compared."""
    entries: list[NodeResult | ConfigurationResult] = [*comparison.nodes, *comparison.edge_configurations]
    return {str(e.op_type) for e in entries if e.status in COMPARED}


def readings_text(comparison: ComparisonOutcome | None) -> str:
    """One line: "MaxPool NaN reading: nan-as-negative-infinity (seed 003: ...); node edges: on". A reading
    is printed only when an operator it concerns was compared: a model without MaxPool does not depend on
    MaxPool's NaN reading (the data formats record it in every case)."""
    if comparison is None:
        return ""
    parts = []
    compared = compared_operators(comparison)
    for op_type in sorted(compared):
        for reading, value in comparison.reference.readings.of(op_type):
            parts.append(f"{reading.label}: {value} ({reading.words(value)})")
    parts.append(f"node edges: {_node_edges(comparison)}")
    return "; ".join(parts)


def _node_edges(comparison: ComparisonOutcome) -> str:
    edges = comparison.node_edges
    return "on" if edges is not None and edges.enabled else "off"
