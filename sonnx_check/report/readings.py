"""The choices a comparison was made under, stated the same way in every report format.

A comparison's verdict depends on readings of the specification the user may choose (the MaxPool NaN
reading) and on what was run (the node edge battery, the onnxruntime version): a report without them could
not be reproduced or reviewed, so every format carries them, from the ``comparison`` dict alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def comparison_readings(comparison: Mapping[str, Any] | None) -> dict[str, str]:
    """Name -> value of every setting a comparison's verdict depends on ({} when nothing was compared)."""
    if not comparison:
        return {}
    reference = comparison.get("reference") or {}
    ort = comparison.get("onnxruntime") or {}
    edges = comparison.get("node_edges") or {}
    runtime = comparison.get("runtime") or {}
    out = {
        "onnxruntime": str(ort.get("version") or "not installed"),
        "runtime": str(runtime.get("name") or "onnxruntime"),
        "providers": ", ".join(runtime.get("providers") or ()),
        "maxpool_nan": str(reference.get("maxpool_nan", "")),
        "node_edges": "on" if edges.get("enabled") else "off",
    }
    return {k: v for k, v in out.items() if v}


COMPARED = ("match", "diverges")  # a node or configuration whose outputs were diffed


def compared_operators(comparison: Mapping[str, Any]) -> set[str]:
    """The operators of the nodes and edge configurations whose outputs were compared."""
    edges = comparison.get("node_edges") or {}
    entries = [
        *(comparison.get("nodes") or ()),
        *(edges.get("configurations") or ()),
        *((edges.get("operator_edges") or {}).get("configurations") or ()),
    ]
    return {str(e.get("op_type")) for e in entries if e.get("status") in COMPARED}


def readings_text(comparison: Mapping[str, Any] | None) -> str:
    """One line: "MaxPool NaN reading: nan-as-negative-infinity (seed 003: ...); node edges: on". A reading
    is printed only when an operator it concerns was compared: a model without MaxPool does not depend on
    MaxPool's NaN reading (the data formats record it in every case)."""
    if not comparison:
        return ""
    readings = comparison_readings(comparison)
    reference = comparison.get("reference") or {}
    parts = []
    if "maxpool_nan" in readings and "MaxPool" in compared_operators(comparison):
        why = reference.get("maxpool_nan_reading")
        parts.append(f"MaxPool NaN reading: {readings['maxpool_nan']}" + (f" ({why})" if why else ""))
    parts.append(f"node edges: {readings.get('node_edges', 'off')}")
    return "; ".join(parts)
