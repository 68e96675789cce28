"""Flatten reference kernel (SONNX, based on Flatten-25), written from ops/flatten/flatten.md.

Y[a, b] = X[j_0, ..., j_{r-1}] with a the row-major offset of (j_0 .. j_{axis'-1}) and b that of
(j_{axis'} .. j_{r-1}) (Informal specification): Y has shape (prod dX[:axis'], prod dX[axis':]) (an empty
product is 1, a scalar gives [1, 1]) and holds X's elements in row-major order, bit for bit. axis' is axis,
plus the rank when negative. Exact: no arithmetic on the elements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx

from sonnx_check.reference.budget import ensure_within_budget
from sonnx_check.reference.errors import OutsideProfileError
from sonnx_check.reference.movement_common import (
    attributes,
    fresh,
    int_attribute,
    require_declared_type,
    required_input,
)

ONNX_DEFAULT_AXIS = 1


def flatten(x: np.ndarray, *, axis: int, max_elements: int | None = None) -> np.ndarray:
    x = np.asarray(x)
    require_declared_type("Flatten", "X", x)
    rank = x.ndim
    if not -rank <= axis <= rank:
        raise OutsideProfileError(
            f"Flatten with axis={axis} on X of rank {rank}: axis lies in [-r, r] (Flatten.axis.C1)"
        )
    split = axis + rank if axis < 0 else axis
    shape = (math.prod(x.shape[:split]), math.prod(x.shape[split:]))
    ensure_within_budget("Flatten output Y", shape, max_elements)
    return fresh(x.reshape(shape))


def run(
    node: onnx.NodeProto, inputs: Sequence[np.ndarray | None], max_elements: int | None
) -> list[np.ndarray]:
    x = required_input("Flatten", inputs, 0, "X")
    axis = int_attribute(attributes(node), "axis", ONNX_DEFAULT_AXIS)
    return [flatten(x, axis=axis, max_elements=max_elements)]  # type: ignore[arg-type]
