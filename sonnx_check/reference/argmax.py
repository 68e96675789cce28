"""ArgMax reference kernel (SONNX, based on ArgMax-13), written from ops/argmax/argmax.md.

For every output position k, Y[k] is the smallest (select_last_index = 0) or the greatest
(select_last_index = 1) index j along the axis where the slice S_k reaches its maximum M_k (real section);
with keepdims = 1 the reduced axis stays with size 1, with keepdims = 0 it is removed; Y is int64.

Float section: a slice holding one or more NaN gives the index of its first NaN (select_last_index = 0) or
its last NaN (1): NaN has priority over every other value. Without NaN, +inf > finite > -inf, and finite
values follow the usual floating-point order, in which -0 = +0: a slice whose maximum is a zero ties its
-0 and +0 entries, and the tie rule picks among them. A slice of -inf only gives its first (or last) index.

Exact: comparisons only. Refused: axis < 0 (R4), axis >= rank (axis.C2), keepdims or select_last_index
other than 0 or 1 (keepdims.C1, select_last_index.C1), an empty reduced axis (R5), and types outside the
float and integer sections (ArgMax.types). Absent attributes take ONNX's defaults (axis 0, keepdims 1,
select_last_index 0); ArgMax.R1-R3 report their absence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError
from sonnx_check.reference.movement_common import (
    attributes,
    int_attribute,
    require_declared_type,
    required_input,
)

ONNX_DEFAULTS = {"axis": 0, "keepdims": 1, "select_last_index": 0}


def argmax(
    x: np.ndarray, *, axis: int, keepdims: int, select_last_index: int, max_elements: int | None = None
) -> np.ndarray:
    x = np.asarray(x)
    require_declared_type("ArgMax", "X", x)
    if axis < 0:
        raise OutsideProfileError(f"ArgMax with axis={axis}: the profile takes axis >= 0 (ArgMax.R4)")
    if axis >= x.ndim:
        raise OutsideProfileError(
            f"ArgMax with axis={axis} on X of rank {x.ndim}: axis < rank (ArgMax.axis.C2)"
        )
    if keepdims not in (0, 1):
        raise OutsideProfileError(f"ArgMax with keepdims={keepdims}: 0 or 1 (ArgMax.keepdims.C1)")
    if select_last_index not in (0, 1):
        raise OutsideProfileError(
            f"ArgMax with select_last_index={select_last_index}: 0 or 1 (ArgMax.select_last_index.C1)"
        )
    size = x.shape[axis]
    if size == 0:
        raise OutsideProfileError(f"ArgMax along axis {axis} of size 0: no maximum exists (ArgMax.R5)")
    out_shape = x.shape[:axis] + ((1,) if keepdims else ()) + x.shape[axis + 1 :]
    ensure_within_budget("ArgMax output Y", out_shape, max_elements)
    ensure_within_budget("ArgMax comparison mask (the size of X)", x.shape, max_elements)
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        has_nan = nan.any(axis=axis, keepdims=True)
        # Without NaN the maximum is the ordinary one; where a slice holds NaN its NaN entries are the
        # candidates and the maximum of the others does not matter.
        maximum = np.max(np.where(nan, x.dtype.type(-np.inf), x), axis=axis, keepdims=True)
        candidates = np.where(has_nan, nan, x == maximum)
    else:
        candidates = x == np.max(x, axis=axis, keepdims=True)
    if select_last_index:
        # argmax of a boolean array is the first True (documented): the last one is the first of the flip.
        index = size - 1 - np.argmax(np.flip(candidates, axis=axis), axis=axis)
    else:
        index = np.argmax(candidates, axis=axis)
    index = index.astype(np.int64)
    return np.expand_dims(index, axis) if keepdims else index


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    x = required_input("ArgMax", inputs, 0, "X")
    attrs = attributes(node)
    values = {name: int_attribute(attrs, name, default) for name, default in ONNX_DEFAULTS.items()}
    return [argmax(x, **values, max_elements=max_elements)]  # type: ignore[arg-type]
