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
    out = {
        "onnxruntime": str(ort.get("version") or "not installed"),
        "maxpool_nan": str(reference.get("maxpool_nan", "")),
        "node_edges": "on" if edges.get("enabled") else "off",
    }
    return {k: v for k, v in out.items() if v}


def readings_text(comparison: Mapping[str, Any] | None) -> str:
    """One line: "MaxPool NaN reading: nan-as-negative-infinity (seed 003: ...); node edges: on"."""
    if not comparison:
        return ""
    readings = comparison_readings(comparison)
    reference = comparison.get("reference") or {}
    parts = []
    if "maxpool_nan" in readings:
        why = reference.get("maxpool_nan_reading")
        parts.append(f"MaxPool NaN reading: {readings['maxpool_nan']}" + (f" ({why})" if why else ""))
    parts.append(f"node edges: {readings.get('node_edges', 'off')}")
    return "; ".join(parts)
