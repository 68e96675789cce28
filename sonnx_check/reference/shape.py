"""Shape reference kernel (SONNX, based on Shape-25), written from ops/shape/shape.md.

Y[i - start'] = dX[i] for i in [start', end') (Informal specification, step 2), int64, empty when
start' >= end'. The clamping of step 1: start < 0 adds the rank, and a start still negative becomes 0;
end < 0 adds the rank, and an end above the rank becomes the rank (an end still negative selects nothing).
An absent start is 0 and an absent end is the rank (ONNX's defaults). X's values are never read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.movement_common import (
    attributes,
    int_attribute,
    require_declared_type,
    required_input,
)


def clamped_bounds(rank: int, start: int, end: int | None) -> tuple[int, int]:
    """(start', end') as the text clamps them."""
    if start < 0:
        start += rank
    start = max(start, 0)
    if end is None:
        end = rank
    if end < 0:
        end += rank
    end = min(end, rank)
    return start, end


def shape(
    x: np.ndarray, *, start: int = 0, end: int | None = None, max_elements: int | None = None
) -> np.ndarray:
    x = np.asarray(x)
    require_declared_type("Shape", "X", x)
    first, last = clamped_bounds(x.ndim, start, end)
    dims = list(x.shape[first:last]) if first < last else []
    ensure_within_budget("Shape output Y", (len(dims),), max_elements)
    return np.array(dims, dtype=np.int64)


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    x = required_input("Shape", inputs, 0, "X")
    attrs = attributes(node)
    start = int_attribute(attrs, "start", 0)
    end = int_attribute(attrs, "end", None)
    return [shape(x, start=start, end=end, max_elements=max_elements)]  # type: ignore[arg-type]
